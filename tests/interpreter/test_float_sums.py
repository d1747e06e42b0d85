"""`float_sums`: which way float32 CONV_2D / FULLY_CONNECTED add their products.

``auto`` (the default) takes BLAS products, within a float32 rounding or so of LiteRT's
reference kernels; ``reference`` adds in their order, to the bit; a cross-check against
LiteRT's reference kernels adds an ``auto`` interpreter's sums in their order.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tflite_viewer.cli import main
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.crosscheck import compare_steps, compare_with_litert, run_litert_steps
from tflite_viewer.interpreter.inputs import complete_inputs
from tflite_viewer.interpreter.session import DebugSession
from tflite_viewer.model import load_model

DECODER = MODELS_DIR / "llm" / "tiny_llama_f32.tflite"
CNN = MODELS_DIR / "small_cnn_dilated_float.tflite"


@pytest.mark.parametrize("name", ["mobilenet_v2_float", "small_cnn_dilated_float",
                                  "palm_detection_lite"])
def test_auto_takes_blas_and_reference_is_asked_for(name):
    auto = Interpreter(MODELS_DIR / f"{name}.tflite")
    assert (auto.float_sums, auto.float_sums_asked) == ("blas", "auto")
    assert not auto.reference_float_sums
    ref = Interpreter(MODELS_DIR / f"{name}.tflite", float_sums="reference")
    assert ref.float_sums == "reference" and ref.reference_float_sums


def _decode_inputs(model, rng):
    sig = model.signature("decode")
    sg = model.subgraphs[sig.subgraph_index]
    out = {}
    for i in sig.inputs:
        t = sg.tensors[i.tensor_index]
        if t.type_name == "INT32":  # token 17 at position 3 (token 0's embedding is 0)
            out[i.name] = np.full(t.shape, 17 if i.name == "tokens" else 3, np.int32)
        else:
            out[i.name] = (rng.standard_normal(t.shape) * 0.1).astype(np.float32)
    return out


def test_auto_is_blas_on_a_decoder_and_close_to_the_reference_order():
    model = load_model(DECODER)
    auto, blas = Interpreter(model), Interpreter(model, float_sums="blas")
    exact = Interpreter(model, float_sums="reference")
    inputs = _decode_inputs(model, np.random.default_rng(4))
    got = auto.invoke(dict(inputs), signature="decode")
    same = blas.invoke(dict(inputs), signature="decode")
    ref = exact.invoke(dict(inputs), signature="decode")
    differ = 0
    for name, value in got.items():
        assert np.array_equal(value, same[name]), name  # auto's sums are the BLAS ones
        if value.dtype == np.float32:
            scale = max(1.0, float(np.max(np.abs(ref[name]))))
            assert float(np.max(np.abs(value - ref[name]))) <= 1e-4 * scale, name
            differ += int(np.sum(value != ref[name]))
    assert differ  # not the reference's bits: another order of sums


def test_a_mode_outside_the_three_is_refused():
    with pytest.raises(ValueError, match="auto, reference, blas"):
        Interpreter(DECODER, float_sums="fast")


def test_run_says_what_auto_chose(capsys, tmp_path):
    model = load_model(DECODER)
    np.savez(tmp_path / "in.npz", **_decode_inputs(model, np.random.default_rng(5)))
    args = ["run", str(DECODER), "--signature", "decode", "--inputs", str(tmp_path / "in.npz")]
    assert main(args + ["--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["float_sums"], doc["float_sums_asked"]) == ("blas", "auto")
    assert main(args) == 0
    assert "float sums blas (auto)" in capsys.readouterr().out
    assert main(args + ["--json", "--float-sums", "reference"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["float_sums"], doc["float_sums_asked"]) == ("reference", "reference")


def test_a_debug_stop_says_which_sums():
    model = load_model(DECODER)
    assert DebugSession(model, signature="decode").start().float_sums == "blas"
    stop = DebugSession(model, signature="decode", interpreter=Interpreter(
        model, float_sums="reference")).start()
    assert stop.float_sums == "reference"


def _conv_outputs(model) -> list[int]:
    return [op.outputs[0] for op in model.subgraphs[0].operators if op.name == "CONV_2D"]


@pytest.mark.parametrize("asked, exact", [("auto", True), ("reference", True),
                                          ("blas", False)])
def test_the_cross_check_against_ref_adds_auto_sums_in_the_reference_order(asked, exact):
    """An ``auto`` interpreter is compared with REF in the reference order (every CONV_2D
    output REF's bits) and computes with BLAS again afterwards; an explicit ``blas`` is
    compared as it computes (some outputs a rounding off)."""
    model = load_model(CNN)
    interp = Interpreter(model, float_sums=asked)
    arrays = complete_inputs(model, {}, 3, None)[0]
    interp.invoke(arrays)  # as the window and `run --compare-litert` do: a run first
    runs = run_litert_steps(CNN, [arrays], None, "BUILTIN_REF")
    report = compare_steps(interp, model, [arrays], runs, first_ran=True)
    assert report.ok and report.resolver == "BUILTIN_REF"
    rows = {r.tensor: r for r in report.rows}
    assert all(rows[t].exact for t in _conv_outputs(model)) == exact
    assert interp.reference_float_sums == (asked == "reference")  # back as it was
    sg = interp.subgraphs[0]
    convs = _conv_outputs(model)
    ours = {t: np.array(sg.tensors[t].data) for t in convs}
    assert all(np.array_equal(ours[t], report.litert_tensors[t]) for t in convs) == exact


def test_a_fresh_cross_check_is_exact_on_float_convolutions():
    report = compare_with_litert(CNN, seed=1)
    rows = [r for r in report.rows if r.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D")]
    assert report.ok and rows and all(r.exact for r in rows)


@pytest.mark.parametrize("stride,dilation,mult,padding", [
    (1, 1, 1, "SAME"), (2, 1, 1, "SAME"), (1, 2, 1, "VALID"), (2, 1, 2, "VALID"),
    (1, 1, 3, "SAME")])
def test_blas_depthwise_taps_are_the_reference_sums_within_rounding(stride, dilation, mult,
                                                                     padding):
    """Under ``blas`` DEPTHWISE_CONV_2D adds its taps in one einsum: each output within a
    few float32 roundings of the reference order's (bounded by the sum of |terms|), with
    the same bias and activation; ``reference`` keeps the tap-by-tap order."""
    from tflite_viewer.interpreter.kernels.conv import depthwise_conv2d

    rng = np.random.default_rng(stride * 10 + dilation + mult)
    x = rng.standard_normal((2, 9, 11, 4)).astype(np.float32)
    w = rng.standard_normal((1, 3, 3, 4 * mult)).astype(np.float32)
    b = rng.standard_normal(4 * mult).astype(np.float32)
    args = (x, w, b, (stride, stride), (dilation, dilation), padding, "RELU6")
    ref = depthwise_conv2d(*args)
    fast = depthwise_conv2d(*args, reference_sums=False)
    bound = depthwise_conv2d(np.abs(x), np.abs(w), np.abs(b), (stride, stride),
                             (dilation, dilation), padding, None)
    assert fast.shape == ref.shape and fast.dtype == np.float32
    assert np.all(np.abs(fast - ref) <= 16 * np.finfo(np.float32).eps * bound)
    assert fast.min() >= 0 and fast.max() <= 6  # RELU6 applied
