"""`float_sums`: which way float32 CONV_2D / FULLY_CONNECTED add their products.

``auto`` keeps LiteRT's reference order (to the bit) unless a model's float32 filters take
`BLAS_FROM_BYTES`, where it takes BLAS.  The corpus stays in reference order; the
threshold is lowered here to put a real litert-torch decoder over it.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tflite_viewer.cli import main
from tflite_viewer.interpreter import Interpreter, float_sums
from tflite_viewer.interpreter.session import DebugSession
from tflite_viewer.model import load_model

DECODER = MODELS_DIR / "llm" / "tiny_llama_f32.tflite"


def _filter_buffers(model) -> dict[int, int]:
    """buffer -> bytes of every float32 CONV_2D / FULLY_CONNECTED filter, read as arrays."""
    found = {}
    for sg in model.subgraphs:
        for op in sg.operators:
            if op.name in ("CONV_2D", "FULLY_CONNECTED"):
                t = sg.tensors[op.inputs[1]]
                if t.type_name == "FLOAT32" and t.data() is not None:
                    found[t.buffer] = t.data().nbytes
    return found


def test_filter_bytes_count_each_shared_weight_once():
    model = load_model(DECODER)
    buffers = _filter_buffers(model)
    per_op = sum(model.subgraphs[s].tensors[op.inputs[1]].data().nbytes
                 for s in range(len(model.subgraphs)) for op in model.subgraphs[s].operators
                 if op.name == "FULLY_CONNECTED")
    assert buffers and float_sums.float_filter_bytes(model) == sum(buffers.values())
    assert per_op > sum(buffers.values())  # prefill and decode share their weights


@pytest.mark.parametrize("name", ["mobilenet_v2_float", "small_cnn_dilated_float",
                                  "palm_detection_lite"])
def test_classic_float_models_keep_the_reference_order(name):
    interp = Interpreter(MODELS_DIR / f"{name}.tflite")
    assert interp.float_sums == "reference" and interp.reference_float_sums


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


def test_auto_takes_blas_over_the_threshold(monkeypatch):
    model = load_model(DECODER)
    size = float_sums.float_filter_bytes(model)
    monkeypatch.setattr(float_sums, "BLAS_FROM_BYTES", size + 1)
    assert Interpreter(model).float_sums == "reference"
    monkeypatch.setattr(float_sums, "BLAS_FROM_BYTES", size)
    auto = Interpreter(model)
    assert auto.float_sums == "blas" and not auto.reference_float_sums
    forced = Interpreter(model, float_sums="reference")
    assert forced.float_sums == "reference"
    blas = Interpreter(model, float_sums="blas")
    inputs = _decode_inputs(model, np.random.default_rng(4))
    got = auto.invoke(dict(inputs), signature="decode")
    same = blas.invoke(dict(inputs), signature="decode")
    exact = forced.invoke(dict(inputs), signature="decode")
    differ = 0
    for name, value in got.items():
        assert np.array_equal(value, same[name]), name  # auto's sums are the BLAS ones
        if value.dtype == np.float32:
            scale = max(1.0, float(np.max(np.abs(exact[name]))))
            assert float(np.max(np.abs(value - exact[name]))) <= 1e-4 * scale, name
            differ += int(np.sum(value != exact[name]))
    assert differ  # not the reference's bits: another order of sums


def test_a_mode_outside_the_three_is_refused():
    with pytest.raises(ValueError, match="auto, reference, blas"):
        Interpreter(DECODER, float_sums="fast")


def test_run_says_what_auto_chose(monkeypatch, capsys, tmp_path):
    model = load_model(DECODER)
    np.savez(tmp_path / "in.npz", **_decode_inputs(model, np.random.default_rng(5)))
    args = ["run", str(DECODER), "--signature", "decode", "--inputs", str(tmp_path / "in.npz")]
    assert main(args + ["--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["float_sums"], doc["float_sums_asked"]) == ("reference", "auto")
    monkeypatch.setattr(float_sums, "BLAS_FROM_BYTES", float_sums.float_filter_bytes(model))
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "float sums blas (auto: at least 0 MiB of float32 filters)" in text
    assert main(args + ["--json", "--float-sums", "reference"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["float_sums"], doc["float_sums_asked"]) == ("reference", "reference")


def test_a_debug_stop_says_which_sums(monkeypatch):
    model = load_model(DECODER)
    monkeypatch.setattr(float_sums, "BLAS_FROM_BYTES", float_sums.float_filter_bytes(model))
    stop = DebugSession(model, signature="decode").start()
    assert stop.float_sums == "blas"
    stop = DebugSession(model, signature="decode", interpreter=Interpreter(
        model, float_sums="reference")).start()
    assert stop.float_sums == "reference"


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


def test_blas_depthwise_model_outputs_close_to_reference():
    model = MODELS_DIR / "mobilenet_v2_float.tflite"
    x = np.random.default_rng(5).standard_normal(
        load_model(model).subgraphs[0].tensors[load_model(model).subgraphs[0].inputs[0]].shape
    ).astype(np.float32)
    ref = Interpreter(load_model(model), float_sums="reference").invoke([x])
    fast = Interpreter(load_model(model), float_sums="blas").invoke([x])
    for k in ref:
        np.testing.assert_allclose(fast[k], ref[k], rtol=1e-4, atol=1e-6)
