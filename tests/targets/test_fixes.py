"""What to change: the offered edits do what they say, checked by the targets themselves."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.interpreter.singleop import run_litert
from tests.litert_oracle import litert
from tests.targets import cases
from tests.targets.oracles import micro_inputs, tflm_run_many, xnnpack_partitions
from tflite_viewer.edit.commands import SplitFusedActivation
from tflite_viewer.edit.document import ModelDocument
from tflite_viewer.model import EditError, load_model
from tflite_viewer.targets import analyze

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"


def xnnpack_fixes(data: bytes):
    v = analyze(load_model(data), ["xnnpack"]).results["xnnpack"].ops[0]
    assert v.verdict == "falls back"
    return v.fixes


@pytest.mark.parametrize("case", ["CONV_2D-f32-TANH", "DEPTHWISE_CONV_2D-f32-TANH",
                                  "ADD-f32-TANH", "MUL-f32-TANH"])
def test_splitting_a_fused_tanh_lets_xnnpack_take_both(case):
    data = cases.all_cases()[case]
    split, clear = xnnpack_fixes(data)
    assert isinstance(split.edits[0], SplitFusedActivation)
    assert not xnnpack_partitions(data)  # LiteRT's delegate refuses the fused TANH
    doc = ModelDocument(data)
    doc.apply(split.edits[0])
    new = doc.to_bytes()
    assert [o.name for o in load_model(new).subgraphs[0].operators][1] == "TANH"
    # LiteRT's delegate now takes both operators, in one partition, as we say
    assert len(xnnpack_partitions(new)) == 1
    result = analyze(load_model(new), ["xnnpack"]).results["xnnpack"]
    assert [o.verdict for o in result.ops] == ["runs", "runs"]
    # the split computes tanh of what LiteRT's kernels give for the operator (they skip a
    # fused TANH: so does the cleared variant)
    sg = load_model(data).subgraphs[0]
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(sg.tensors[i].shape).astype(np.float32) for i in sg.inputs]
    before = run_litert(data, xs)[0]
    np.testing.assert_allclose(run_litert(new, xs)[0], np.tanh(before), rtol=1e-5, atol=1e-6)
    doc.undo()
    assert doc.to_bytes() == data


def test_clearing_the_fused_tanh_keeps_litert_numbers():
    data = cases.all_cases()["CONV_2D-f32-TANH"]
    _, clear = xnnpack_fixes(data)
    doc = ModelDocument(data)
    doc.apply(clear.edits[0])
    new = doc.to_bytes()
    assert xnnpack_partitions(new)
    x = np.random.default_rng(1).standard_normal((1, 6, 6, 4)).astype(np.float32)
    np.testing.assert_array_equal(run_litert(new, [x])[0], run_litert(data, [x])[0])


def test_split_refuses_what_it_cannot_split():
    doc = ModelDocument(cases.all_cases()["CONV_2D-f32"])  # no fused activation
    with pytest.raises(EditError, match="has no operator of its own|no fused"):
        doc.apply(SplitFusedActivation(0, 0))
    doc = ModelDocument(cases.all_cases()["CONV_2D-q8"])
    with pytest.raises(EditError):
        doc.apply(SplitFusedActivation(0, 0))


def test_stored_shape_and_dynamic_input_fixes_make_tflm_compute_what_litert_computes():
    """small_cnn_dilated_float: TFLM runs it into placeholder shapes (a dynamic batch); the
    two offered edits (write the computed shapes, fix the input) make TFLM's outputs
    LiteRT's, and our verdict turns to "runs"."""
    data = (MODELS / "small_cnn_dilated_float.tflite").read_bytes()
    tflm_result = analyze(load_model(data), ["tflm"]).results["tflm"]
    assert any(o.verdict == "refused" for o in tflm_result.ops)
    doc = ModelDocument(data)
    for fix in tflm_result.fixes:
        assert fix.edits
        for edit in fix.edits:
            doc.apply(edit)
    new = doc.to_bytes()
    after = analyze(load_model(new), ["tflm"]).results["tflm"]
    assert all(o.verdict == "runs" for o in after.ops), [o.reason for o in after.ops]

    def outputs(model: bytes) -> tuple[np.ndarray, np.ndarray]:
        theirs = tflm_run_many({"m": model})["m"]
        x = micro_inputs(model)
        li = litert(model, preserve=False)
        li.allocate_tensors()
        li.set_tensor(li.get_input_details()[0]["index"], x[0])
        li.invoke()
        return theirs.outputs[0], li.get_tensor(li.get_output_details()[0]["index"])

    tflm_before, litert_before = outputs(data)
    assert not np.allclose(tflm_before, litert_before, atol=1e-4)
    tflm_after, litert_after = outputs(new)
    np.testing.assert_allclose(tflm_after, litert_after, atol=1e-5)


def test_rank_fix_suggests_the_lower_rank():
    v = analyze(load_model(cases.all_cases()["RELU-f32-rank7"]), ["xnnpack"]).results[
        "xnnpack"].ops[0]
    assert v.verdict == "falls back"
    assert any("[1, 2, 2, 2]" in f.summary or "6-D" in f.summary for f in v.fixes), v.fixes
