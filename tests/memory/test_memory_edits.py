"""The memory edits against the runtimes: a reordered model computes the same outputs in
LiteRT bit for bit and TFLM's head shrinks by the amount claimed; an offline plan written
by the editor is accepted and used by TFLM, whose head equals ours."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.litert_oracle import litert
from tests.memory.models import BUILT
from tests.micro_oracle import tflm_arenas
from tflite_viewer.edit import ModelDocument, ReorderOperators, SetOfflineMemoryPlan
from tflite_viewer.memory import plan_tflm, read_offline
from tflite_viewer.memory.reorder import best_order
from tflite_viewer.model import EditError, load_model

DATA = Path(__file__).resolve().parents[1] / "data" / "models"


def _outputs(model: bytes, seed: int = 0) -> list[np.ndarray]:
    interp = litert(model, preserve=False)
    interp.allocate_tensors()
    rng = np.random.default_rng(seed)
    for d in interp.get_input_details():
        if np.issubdtype(d["dtype"], np.floating):
            x = rng.standard_normal(d["shape"]).astype(d["dtype"])
        else:
            info = np.iinfo(d["dtype"])
            x = rng.integers(info.min, info.max, d["shape"], endpoint=True).astype(d["dtype"])
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return [interp.get_tensor(d["index"]) for d in interp.get_output_details()]


REORDERED = {  # model -> does TFLM run it
    "branches": True,
    "lstm_float.tflite": True,          # the WHILE body (subgraph 2) is reordered
    "mobilenet_v2_fp16.tflite": False,  # TFLM has no float16 DEQUANTIZE; LiteRT checks it
}


def _source(name: str) -> bytes:
    return (DATA / name).read_bytes() if name.endswith(".tflite") else BUILT[name]()


@pytest.mark.parametrize("name", sorted(REORDERED))
def test_reorder_keeps_outputs_and_shrinks_tflm_head_as_claimed(name):
    data = _source(name)
    found = best_order(load_model(data), pointer_bytes=8)
    assert found is not None and found.saved > 0
    doc = ModelDocument(data)
    doc.apply(ReorderOperators(found.subgraph, found.order))
    reordered = doc.to_bytes()
    assert [op.name for op in load_model(reordered).subgraphs[found.subgraph].operators] == [
        load_model(data).subgraphs[found.subgraph].operators[k].name for k in found.order]
    for a, b in zip(_outputs(data), _outputs(reordered)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)  # bit for bit (NaNs compared as equal)
    assert plan_tflm(load_model(reordered), 8).head_bytes == found.head_after  # memory confirms
    if REORDERED[name]:
        before, after = tflm_arenas([data, reordered])
        assert before["head"] == found.head_before
        assert before["head"] - after["head"] == found.saved


def test_reorder_memory_is_the_search_applied_by_the_editor():
    data = BUILT["branches"]()
    found = best_order(load_model(data), pointer_bytes=4)
    doc = ModelDocument(data)
    result = doc.apply(ReorderOperators(0, "memory"))
    assert f"{found.head_after:,}" in result.description
    assert plan_tflm(doc.model).head_bytes == found.head_after
    doc.undo()
    assert doc.to_bytes() == data


def test_reorder_refuses_an_order_that_breaks_a_dependency():
    data = BUILT["branches"]()
    doc = ModelDocument(data)
    with pytest.raises(EditError, match="depends on"):
        doc.apply(ReorderOperators(0, [2, 0, 1, 3, 4, 5, 6, 7, 8]))  # RELU before its PAD
    with pytest.raises(EditError, match="each of the 9 operators once"):
        doc.apply(ReorderOperators(0, [0, 1, 2]))
    assert not doc.can_undo


def test_reorder_keeps_effects_in_order():
    """keyword_scrambled's SVDFs update variable state: swapping two is refused even when
    no tensor connects them."""
    data = (DATA / "keyword_scrambled_8bit.tflite").read_bytes()
    sg = load_model(data).subgraphs[0]
    svdf = [op.index for op in sg.operators if op.name == "SVDF"]
    order = list(range(len(sg.operators)))
    a, b = svdf[0], svdf[1]
    order[a], order[b] = order[b], order[a]
    with pytest.raises(EditError):
        ModelDocument(data).apply(ReorderOperators(0, order))


OFFLINE = ["person_detect.tflite", "keyword_scrambled_8bit.tflite", "control_flow.tflite",
           "detection_postprocess", "transpose_conv_int8", "add_n_float", "if_branches"]


@pytest.fixture(scope="module")
def offline_models() -> dict[str, tuple[bytes, bytes]]:
    out = {}
    for name in OFFLINE:
        doc = ModelDocument(_source(name))
        doc.apply(SetOfflineMemoryPlan(pointer_bytes=8))
        out[name] = (_source(name), doc.to_bytes())
    return out


@pytest.mark.parametrize("name", OFFLINE)
def test_offline_plan_written_by_the_editor_is_used_by_tflm(offline_models, name):
    original, planned = offline_models[name]
    offsets, errors = read_offline(load_model(planned))
    assert errors == [] and offsets is not None
    ours = plan_tflm(load_model(planned), pointer_bytes=8)
    assert ours.offline is not None and ours.offline.valid, ours.offline
    # shift every planned tensor up by 4 KiB: if TFLM uses the plan, its head grows by as much
    shifted = [o + 4096 if o >= 0 else o for o in offsets]
    doc = ModelDocument(planned)
    doc.apply(SetOfflineMemoryPlan(shifted))
    moved = doc.to_bytes()
    as_written, after_shift = tflm_arenas([planned, moved])
    assert as_written["head"] == ours.head_bytes
    assert after_shift["head"] == plan_tflm(load_model(moved), pointer_bytes=8).head_bytes
    assert after_shift["head"] > as_written["head"]  # TFLM placed the tensors where we said


def test_offline_plan_with_the_wrong_count_is_refused_by_tflm_and_reported():
    data = BUILT["add_n_float"]()
    n = sum(len(sg.tensors) for sg in load_model(data).subgraphs)
    with pytest.raises(EditError, match="one per tensor"):
        ModelDocument(data).apply(SetOfflineMemoryPlan([-1] * (n - 1)))
    # write a short plan anyway (as metadata) and let TFLM judge it
    from tflite_viewer.edit import SetMetadata
    from tflite_viewer.memory import METADATA_NAME, encode_offline
    doc = ModelDocument(data)
    doc.apply(SetMetadata(METADATA_NAME, encode_offline([-1] * (n - 1), 1)))
    report = tflm_arenas([doc.to_bytes()])[0]
    assert "Nbr of offline buffer offsets" in report["error"]
    plan = plan_tflm(doc.model, 8)
    assert plan.offline is not None and plan.offline.errors
    assert any("offline plan" in p for p in plan.problems)


def test_overlapping_offline_plan_is_flagged():
    data = BUILT["branches"]()
    n = len(load_model(data).subgraphs[0].tensors)
    doc = ModelDocument(data)
    doc.apply(SetOfflineMemoryPlan([0] * n))  # every tensor at offset 0
    plan = plan_tflm(doc.model)
    assert plan.offline is not None and not plan.offline.valid
    assert any("overlap" in w for w in plan.offline.warnings)


def test_best_offline_plan_is_used_by_tflm_and_shrinks_its_head_as_claimed():
    """mobilenet_v1 0.25 (float): TFLM's largest-first placement leaves a 400 KB hole; the
    plan stored with SetOfflineMemoryPlan("best") does not, and TFLM's head shows it."""
    from tflite_viewer.memory.offline_search import best_offline_plan
    data = (DATA / "mobilenet_v1_0.25_224_1_default_1.tflite").read_bytes()
    found = best_offline_plan(load_model(data), pointer_bytes=8)
    assert found is not None and found.saved > 0
    doc = ModelDocument(data)
    doc.apply(SetOfflineMemoryPlan("best", pointer_bytes=8))
    planned = doc.to_bytes()
    ours = plan_tflm(load_model(planned), pointer_bytes=8)
    assert ours.offline is not None and ours.offline.valid
    assert ours.head_bytes == found.head_after
    before, after = tflm_arenas([data, planned])
    assert before["head"] == found.head_before
    assert after["head"] == found.head_after < before["head"]


def test_best_offline_plan_is_refused_when_nothing_beats_tflm():
    doc = ModelDocument((DATA / "person_detect.tflite").read_bytes())
    with pytest.raises(EditError, match="no offline plan"):
        doc.apply(SetOfflineMemoryPlan("best"))


@pytest.mark.slow
def test_best_offline_plan_on_a_20000_op_model_is_used_by_tflm():
    """The synthetic residual model of the benchmarks: TFLM confirms the smaller head (the
    unmarked sample is mobilenet_v1 above)."""
    from benchmarks.synthetic_models import residual_model
    from tflite_viewer.memory.offline_search import best_offline_plan
    data = residual_model(20000)
    found = best_offline_plan(load_model(data), pointer_bytes=8)
    assert found is not None
    doc = ModelDocument(data)
    doc.apply(SetOfflineMemoryPlan(found.offsets))
    before, after = tflm_arenas([data, doc.to_bytes()], timeout=900)
    assert (before["head"], after["head"]) == (found.head_before, found.head_after)


def _tflm_outputs(model: bytes, invocations: int = 1) -> list[np.ndarray]:
    from tflite_micro.python.tflite_micro import runtime
    interp = runtime.Interpreter.from_bytes(model, arena_size=16 << 20)
    rng = np.random.default_rng(0)
    out = []
    for _ in range(invocations):
        for i in range(len(load_model(model).subgraphs[0].inputs)):
            d = interp.get_input_details(i)
            if np.issubdtype(d["dtype"], np.floating):
                x = rng.standard_normal(d["shape"]).astype(d["dtype"])
            else:
                x = rng.integers(-128, 128, d["shape"]).astype(d["dtype"])
            interp.set_input(x, i)
        interp.invoke()
        out.append(interp.get_output(0).copy())
    return out


@pytest.mark.parametrize("name, invocations, heads", [
    ("mobilenet_v1_0.25_224_1_default_1.tflite", 1, (1_605_632, 1_204_224)),
    # streaming: resource variables carry state from one invocation to the next
    ("microwakeword_alexa.tflite", 6, (3_648, 3_200)),
])
def test_tflm_computes_the_same_outputs_with_the_best_offline_plan(name, invocations, heads):
    data = (DATA / name).read_bytes()
    doc = ModelDocument(data)
    doc.apply(SetOfflineMemoryPlan("best", pointer_bytes=8))
    planned = doc.to_bytes()
    assert tuple(r["head"] for r in tflm_arenas([data, planned])) == heads
    for a, b in zip(_tflm_outputs(data, invocations), _tflm_outputs(planned, invocations)):
        np.testing.assert_array_equal(a, b)
