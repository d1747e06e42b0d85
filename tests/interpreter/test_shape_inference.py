"""Shape inference with the kernels' prepare (issue 16 item 2), checked against the shapes
LiteRT computes when it allocates the same bytes."""
from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tflite_viewer.edit import ModelDocument, SetOption, SetTensorShape, UpdateStoredShapes
from tflite_viewer.interpreter.shape_inference import infer_shapes
from tflite_viewer.model import load_model

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
# Models LiteRT's builtin kernels load (no MediaPipe custom ops), small enough to be quick.
ORACLE_MODELS = ["mobilenet_v2_float.tflite", "small_cnn_dilated_float.tflite", "sine_float.tflite",
                 "control_flow.tflite", "mobilenet_v1_0.25_224_quant.tflite", "ssd_mobilenet_v1.tflite"]


def litert_shapes(data: bytes) -> dict[int, tuple[int, ...]]:
    """Subgraph 0's tensor shapes after LiteRT's AllocateTensors."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

    interp = LiteRT(model_content=data,
                    experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interp.allocate_tensors()
    return {d["index"]: tuple(int(x) for x in d["shape"]) for d in interp.get_tensor_details()}


@pytest.mark.parametrize("name", ORACLE_MODELS)
def test_inferred_shapes_are_litert_shapes(name):
    data = (MODELS / name).read_bytes()
    result = infer_shapes(load_model(data))
    assert result.unavailable is None and not result.failures
    truth = litert_shapes(data)
    ours = {t: s for (sg, t), s in result.shapes.items() if sg == 0}
    assert ours, "the producers' prepare computed shapes"
    assert {t: truth[t] for t in ours} == ours
    # what is flagged is exactly where the file disagrees with LiteRT
    stored = load_model(data).subgraphs[0].tensors
    flagged = {m.tensor for m in result.mismatches if m.subgraph == 0}
    assert flagged == {t for t in ours if tuple(stored[t].shape) not in ((), truth[t])}


def test_a_stride_edit_is_propagated_and_update_stored_shapes_fixes_it_in_one_undo_step():
    doc = ModelDocument(load_model(MODELS / "mobilenet_v2_float.tflite"))
    assert not infer_shapes(doc.model).mismatches
    doc.apply(SetOption(0, 0, "stride_w", 1))  # the first CONV_2D: 96 -> 48 becomes 96 -> 96
    result = infer_shapes(doc.model)
    truth = litert_shapes(doc.to_bytes())
    first = doc.model.subgraphs[0].operators[0].outputs[0]
    assert result.inferred(0, first) == truth[first] == (1, 48, 96, 16)  # SAME: ceil(96/2), ceil(96/1)
    assert tuple(doc.model.subgraphs[0].tensors[first].shape) == (1, 48, 48, 16)  # stale
    assert result.mismatches and all(truth[m.tensor] == m.inferred for m in result.mismatches)
    assert {m.tensor for m in result.mismatches} == {
        t for (s, t), shape in result.shapes.items()
        if tuple(doc.model.subgraphs[0].tensors[t].shape) != shape}
    before = doc.to_bytes()
    doc.apply(UpdateStoredShapes({(m.subgraph, m.tensor): m.inferred for m in result.mismatches}))
    assert not infer_shapes(doc.model).mismatches
    stored = {t.index: tuple(t.shape) for t in doc.model.subgraphs[0].tensors}
    assert all(stored[t] == truth[t] for t in stored)  # (LiteRT adds temporaries past them)
    assert doc.history_index == 2
    doc.undo()
    assert doc.to_bytes() == before


def test_inference_allocates_no_activations_even_for_a_huge_input():
    doc = ModelDocument(load_model(MODELS / "mobilenet_v2_float.tflite"))
    x = doc.model.subgraphs[0].inputs[0]
    doc.apply(SetTensorShape(0, x, [8, 3840, 3840, 3]))  # activations of several GB
    tracemalloc.start()
    try:
        result = infer_shapes(doc.model)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out = doc.model.subgraphs[0].outputs[0]
    classes = doc.model.subgraphs[0].tensors[out].shape[-1]
    assert result.inferred(0, out) == (8, classes)
    first = doc.model.subgraphs[0].operators[0].outputs[0]
    assert result.inferred(0, first) == (8, 1920, 1920, 16)
    activations = sum(int(np.prod(s)) * 4 for s in result.shapes.values())
    assert activations > 10 * 2**30
    assert peak < 64 * 2**20, f"inference used {peak:,} bytes"


def test_a_prepare_failure_is_reported_and_the_rest_still_inferred():
    doc = ModelDocument(load_model(MODELS / "mobilenet_v2_float.tflite"))
    sg = doc.model.subgraphs[0]
    add = next(k for k, op in enumerate(sg.operators) if op.name == "ADD")
    # the residual branch's last operator (the skip connection comes from earlier)
    producer = max(k for k, op in enumerate(sg.operators[:add]) if set(op.outputs) & set(sg.operators[add].inputs))
    assert sg.operators[producer].name == "CONV_2D"  # the residual block's 1x1 projection
    doc.apply(SetOption(0, producer, "stride_w", 2))  # half as wide: the ADD cannot broadcast
    result = infer_shapes(doc.model)
    assert result.unavailable is None
    assert [(s, op) for s, op, _ in result.failures] == [(0, add)]
    assert "ADD" in result.failures[0][2]
    last = doc.model.subgraphs[0].operators[-1].outputs[0]
    assert result.inferred(0, last) is None  # unknown after the failure, not a guess
    assert result.inferred(0, doc.model.subgraphs[0].operators[0].outputs[0]) == (1, 48, 48, 16)
