"""XNNPACK's delegate takes an operator, then cannot define one of its tensors: LiteRT's
interpreter with its default delegate fails on the model, and `targets --target xnnpack`
must say so ("LiteRT's default CPU path fails on this model").

The oracle is LiteRT 2.3.0 itself: with its default delegate (AUTO) the model fails to
prepare exactly where we say it does, naming the tensor we name, and without it
(BUILTIN_WITHOUT_DEFAULT_DELEGATES) it runs.  The fix we offer (a positive scale and zero
weights for the zero-scale blocks) makes the default path run and changes no output of the
CPU kernels.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.litert_oracle import litert
from tests.targets import quant_param_models as qp
from tests.targets.oracles import default_path_error, litert_outputs
from tflite_viewer.cli import main
from tflite_viewer.edit.commands import ReplaceTensorData
from tflite_viewer.edit.document import ModelDocument
from tflite_viewer.model import load_model
from tflite_viewer.targets import analyze

LLM = Path(__file__).resolve().parents[1] / "data" / "models" / "llm"
CASES = qp.cases()
# LiteRT's log names the tensor: "... for INT4 tensor 1 in XNNPACK delegate" / "of INT8
# tensor 1" / "for t1 tensor 1"
_TENSOR = re.compile(r"(?:for|of) \S+ tensor (\d+) in XNNPACK delegate")


def xnnpack(model: bytes):
    return analyze(load_model(model), ["xnnpack"]).results["xnnpack"]


def inputs_for(name: str, model: bytes) -> list[np.ndarray]:
    x = np.random.default_rng(0).standard_normal(qp.input_shape(name))
    if load_model(model).subgraphs[0].tensors[0].type_name == "INT8":
        return [np.clip(np.round(x * 20), -128, 127).astype(np.int8)]
    return [x.astype(np.float32)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_verdict_agrees_with_litert_default_delegate(name):
    model = CASES[name]
    result = xnnpack(model)
    refused = [o for o in result.ops if o.verdict == "refused"]
    error = default_path_error(model)
    assert bool(refused) == (error is not None), (name, error, [o.reason for o in refused])
    if "zero-point-8" not in name:  # (LiteRT's CPU kernel refuses an INT4 zero point of 8)
        assert litert_outputs(model, inputs_for(name, model))  # the CPU kernels run it
    assert name.endswith("-ok") == (error is None)
    if error is None:
        assert result.failure == ""
        return
    assert "XNNPACK" in error and "failed to prepare" in error
    (op,) = refused
    theirs = int(_TENSOR.search(error).group(1))
    assert f"cannot define tensor {theirs} (" in op.reason
    assert result.failure.startswith("LiteRT's default CPU path fails on this model")
    assert "FULLY_CONNECTED (subgraph 0, operator 0)" in result.failure
    assert f"its tensor {theirs} " in result.failure


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if "zero-scale" in n
                                  and not n.startswith("int8")])
def test_the_offered_fix_lets_the_default_path_run_with_the_same_numbers(name):
    model = CASES[name]
    (op,) = [o for o in xnnpack(model).ops if o.verdict == "refused"]
    (fix,) = [f for f in op.fixes if f.edits]
    doc = ModelDocument(model)
    for edit in fix.edits:
        doc.apply(edit)
    fixed = doc.to_bytes()
    assert default_path_error(fixed) is None
    assert xnnpack(fixed).failure == ""
    x = inputs_for(name, model)
    for before, after in zip(litert_outputs(model, x), litert_outputs(fixed, x)):
        assert np.array_equal(before, after)  # the CPU kernels compute the same values


def test_static_int8_with_a_zero_scale_offers_no_edit():
    """An int8 operator's bias scale is tied to its weights': no safe edit, only advice."""
    (op,) = [o for o in xnnpack(CASES["int8-per-channel-zero-scale"]).ops
             if o.verdict == "refused"]
    assert op.fixes and not any(f.edits for f in op.fixes)


@pytest.fixture(scope="module")
def decoder_with_a_zero_block() -> tuple[bytes, int]:
    """tiny_llama_q4_block32 (int4 blockwise, as a Qwen3 export) with one block of the
    prefill's q/k/v projection zeroed, its FLOAT16 block scale 0 as a quantizer writes it."""
    path = LLM / "tiny_llama_q4_block32.tflite"
    model = load_model(path)
    sg = model.subgraphs[0]
    t = next(i for i, x in enumerate(sg.tensors) if x.quantization is not None
             and (x.quantization.details or {}).get("type") == "BlockwiseQuantization")
    details = sg.tensors[t].quantization.details
    scales = sg.tensors[details["scales"]].values().copy()
    weights = sg.tensors[t].values().copy()
    scales[2, 1] = 0
    weights[2, details["block_size"]:2 * details["block_size"]] = 0
    doc = ModelDocument(path.read_bytes())
    doc.apply(ReplaceTensorData(0, t, weights))
    doc.apply(ReplaceTensorData(0, details["scales"], scales))
    return doc.to_bytes(), t


def test_a_decoder_with_a_zero_block_fails_on_the_default_path(decoder_with_a_zero_block,
                                                                tmp_path, capsys):
    model, t = decoder_with_a_zero_block
    error = default_path_error(model)
    assert error is not None and "unsupported scale value (0.000000)" in error
    assert int(_TENSOR.search(error).group(1)) == t
    path = tmp_path / "decoder.tflite"
    path.write_bytes(model)
    assert main(["targets", str(path), "--target", "xnnpack"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("xnnpack: "))
    assert "LiteRT's default CPU path fails on this model" in line
    assert "FULLY_CONNECTED (subgraph 0, operator" in line and f"its tensor {t} " in line
    assert "block scale 0" in line
    # the same model, the block left as it was: the default path runs it
    assert default_path_error((LLM / "tiny_llama_q4_block32.tflite").read_bytes()) is None


def test_the_decoder_fix_runs_on_the_default_path_with_the_same_numbers(
        decoder_with_a_zero_block):
    model, t = decoder_with_a_zero_block
    (op,) = [o for o in xnnpack(model).ops if o.verdict == "refused"]
    (fix,) = [f for f in op.fixes if f.edits]
    assert "1 block(s)" in fix.summary
    doc = ModelDocument(model)
    for edit in fix.edits:
        doc.apply(edit)
    fixed = doc.to_bytes()
    assert default_path_error(fixed) is None
    li = litert(model, preserve=False)
    inputs = [np.ones(d["shape"], d["dtype"]) for d in li.get_input_details()]
    for before, after in zip(litert_outputs(model, inputs), litert_outputs(fixed, inputs)):
        assert np.array_equal(before, after)
