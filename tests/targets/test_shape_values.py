"""Shapes computed at run time, on TFLite Micro: TFLM computes into the stored shape, so it is
right exactly where the values give the stored shape.

* Models as converters write them with a dynamic batch (Keras's Flatten and
  Conv2DTranspose: the shape is SHAPE -> STRIDED_SLICE -> PACK of the input's static shape)
  run on TFLM with LiteRT's outputs, and our verdict says they run, with no warning (it used
  to call them "Silently wrong", as it did the resnetish and cnn16x8 hold-out models).
* A shape that a model input gives is a warning, not a refusal: TFLM is right for the
  values that give the stored shape and wrong for others.
* Values that give another shape than the stored one are "Silently wrong", and TFLM's output
  has another shape than LiteRT's.
* The values and shapes `targets.shape_values` computes equal LiteRT's, op by op.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.interpreter.singleop import Op, graph_model, random_strided_slice
from tests.litert_oracle import litert
from tests.targets import shape_models
from tests.targets.oracles import (litert_outputs, micro_inputs, tflm_run_isolated,
                                   tflm_run_many)
from tflite_viewer.model import load_model
from tflite_viewer.targets import analyze
from tflite_viewer.delegation.facts import ModelFacts
from tflite_viewer.targets.shape_values import ShapeValues
from tflite_viewer.targets.tflm import SILENT

F32, I32 = np.float32, np.int32
LSTM = Path(__file__).resolve().parents[1] / "data" / "models" / "lstm_float.tflite"


def tflm_verdicts(model: bytes):
    return analyze(load_model(model), ["tflm"]).results["tflm"].ops


@pytest.fixture(scope="module")
def micro() -> dict:
    models = {name: make() for name, make in shape_models.RUN_RIGHT.items()}
    models["wrong"] = shape_models.reshape_stored_wrong()
    return tflm_run_many(models)


@pytest.mark.parametrize("name", sorted(shape_models.RUN_RIGHT))
def test_shapes_computed_from_a_static_input_shape_run_right_on_tflm(name, micro):
    model = shape_models.RUN_RIGHT[name]()
    ops = tflm_verdicts(model)
    assert all(o.verdict == "runs" and not o.warning for o in ops), \
        [(o.op, o.reason, o.warning) for o in ops if o.verdict != "runs" or o.warning]
    theirs = micro[name]
    assert theirs.ok, theirs.log[-300:]
    ref = litert_outputs(model, micro_inputs(model))
    assert theirs.outputs[0].shape == ref[0].shape
    np.testing.assert_allclose(theirs.outputs[0].astype(np.float64), ref[0], atol=1e-5)


def test_a_shape_a_model_input_gives_is_a_warning_and_tflm_depends_on_it(tmp_path):
    """RESHAPE to a shape the model's input says: TFLM computes into the stored [1, 48]
    whatever the values, which is right for [1, 48] and wrong for [2, 24]."""
    model = shape_models.reshape_from_input()
    (op,) = tflm_verdicts(model)
    assert op.verdict == "runs" and op.warning.startswith("depends on the input's values")
    path = tmp_path / "reshape.tflite"
    path.write_bytes(model)
    x = micro_inputs(model)[0]
    for shape, right in (([1, 48], True), ([2, 24], False)):
        inputs = [x, np.array(shape, I32)]
        theirs = tflm_run_isolated(str(path), inputs)
        assert theirs.ok and theirs.outputs[0].shape == (1, 48)
        ref = litert_outputs(model, inputs)
        assert ref[0].shape == tuple(shape)
        assert (theirs.outputs[0].shape == ref[0].shape) == right


def test_values_giving_another_shape_are_silently_wrong(micro):
    model = shape_models.reshape_stored_wrong()
    wrong = [o for o in tflm_verdicts(model) if o.verdict == "refused"]
    assert [o.op for o in wrong] == ["RESHAPE"] and wrong[0].reason.startswith(SILENT)
    assert "[1, 48]" in wrong[0].reason and "[2, 24]" in wrong[0].reason
    theirs = micro["wrong"]
    assert theirs.ok
    ref = litert_outputs(model, micro_inputs(model))
    assert theirs.outputs[0].shape == (2, 24) and ref[0].shape == (1, 48)


# -- the evaluator against LiteRT -------------------------------------------------------------
def _computed(values: list[np.ndarray], start: int) -> tuple[list, list[Op]]:
    """Each array as a computed tensor (constant + a zero constant: ADD), from index
    ``start``; the computed tensors are start + 3i + 2."""
    tensors, ops = [], []
    for i, v in enumerate(values):
        a = start + 3 * i
        tensors += [(np.asarray(v),), (np.zeros_like(np.asarray(v)),), (np.shape(v), v.dtype)]
        ops.append(Op("ADD", [a, a + 1], [a + 2], "AddOptions", {}))
    return tensors, ops


SHAPE_CASES = [
    ("RESHAPE", (2, 3, 4), [np.array([2, -1, 3], I32)], None, {}),
    ("SLICE", (4, 5, 6), [np.array([1, 0, 2], I32), np.array([2, -1, 3], I32)], None, {}),
    ("PAD", (2, 3), [np.array([[1, 2], [0, 3]], I32)], None, {}),
    ("MIRROR_PAD", (3, 4), [np.array([[1, 1], [2, 0]], I32)], "MirrorPadOptions",
     {"mode": "REFLECT"}),
    ("TRANSPOSE", (2, 3, 4), [np.array([2, 0, 1], I32)], None, {}),
    ("EXPAND_DIMS", (2, 3), [np.array([-1], I32)], None, {}),
    ("MEAN", (2, 3, 4), [np.array([1, -1], I32)], "ReducerOptions", {"keep_dims": True}),
    ("SUM", (2, 3, 4), [np.array([0], I32)], "ReducerOptions", {"keep_dims": False}),
    ("ARG_MAX", (2, 3, 4), [np.array([1], I32)], "ArgMaxOptions", {"output_type": "INT32"}),
    ("RESIZE_BILINEAR", (1, 4, 4, 3), [np.array([7, 5], I32)], "ResizeBilinearOptions", {}),
    ("SPACE_TO_BATCH_ND", (1, 5, 6, 2), [np.array([2, 3], I32),
                                         np.array([[1, 0], [0, 0]], I32)], None, {}),
    ("BATCH_TO_SPACE_ND", (6, 2, 3, 1), [np.array([2, 3], I32),
                                         np.array([[0, 1], [1, 0]], I32)], None, {}),
    ("BROADCAST_TO", (1, 3), [np.array([2, 3], I32)], None, {}),
]


#: the output's rank where it is not the input's (LiteRT's SLICE wants it stored right)
RANKS = {"EXPAND_DIMS": 3, "SUM": 2, "ARG_MAX": 2}


def _shape_case(op: str, shape, values, options_type, options) -> tuple[bytes, int]:
    """x (a model input) and the computed value inputs into ``op``; the output's index (its
    stored shape all ones, its signature all -1: LiteRT trusts a stored shape without -1)."""
    tensors, ops = _computed(values, 1)
    out = 1 + len(tensors)
    inputs = [0] + [3 * i + 3 for i in range(len(values))]
    rank = RANKS.get(op, len(shape) - bin(options.get("shrink_axis_mask", 0)).count("1"))
    all_tensors = [(shape, F32)] + tensors + [((1,) * rank, I32 if op == "ARG_MAX" else F32)]
    ops.append(Op(op, inputs, [out], options_type, options,
                  version=2 if op == "BROADCAST_TO" else 1))
    model = shape_models.with_signatures(graph_model(all_tensors, ops, [0], [out]),
                                         {out: (-1,) * rank})
    return model, out


def _strided_cases(n: int):
    rng = np.random.default_rng(5)
    for _ in range(n):
        begin, end, strides, opts = random_strided_slice(rng, (5, 6, 7))
        yield ("STRIDED_SLICE", (5, 6, 7), [np.array(begin, I32), np.array(end, I32),
                                            np.array(strides, I32)],
               "StridedSliceOptions", opts)


@pytest.mark.parametrize("case", SHAPE_CASES + list(_strided_cases(24)),
                         ids=lambda c: c[0])
def test_output_shapes_from_computed_values_equal_litert(case):
    model, out = _shape_case(*case)
    li = litert(model, preserve=False)
    li.allocate_tensors()
    li.set_tensor(li.get_input_details()[0]["index"], np.ones(case[1], F32))
    li.invoke()
    shape = tuple(int(d) for d in li.get_output_details()[0]["shape"])  # (empty: no data)
    sv = ShapeValues(ModelFacts(load_model(model))[0])
    assert sv.shape(out) == shape


def _value_model() -> tuple[bytes, list[int]]:
    """Shape arithmetic on SHAPE(x) for x [3, 5, 7]: each op's result is a model output."""
    t = [((3, 5, 7), F32), ((3,), I32),                                     # 0 x, 1 shape
         (np.array([2, 0], I32),), ((2,), I32),                             # 2, 3 gather
         (np.array([-1, 4], I32),), ((5,), I32),                            # 4, 5 concat
         (np.array([0], I32),), ((), I32),                                  # 6, 7 prod
         (np.array([-2], I32),), ((3,), I32),                               # 8, 9 floor_div
         ((3,), I32),                                                       # 10 floor_mod
         ((3,), F32), (np.array([1.5], F32),), ((3,), F32), ((3,), I32),    # 11-14 cast chain
         (np.array([1], I32),), (np.array([2], I32),), ((2,), I32),         # 15-17 slice
         ((3,), I32), ((2, 3), I32),                                        # 18 max, 19 pack
         (np.array([-1], I32),), (np.array([-4], I32),), (np.array([-1], I32),),
         ((3,), I32)]                                                       # 20-23 reversed
    ops = [Op("SHAPE", [0], [1], "ShapeOptions", {"out_type": "INT32"}),
           Op("GATHER", [1, 2], [3], "GatherOptions", {"axis": 0}),
           Op("CONCATENATION", [1, 4], [5], "ConcatenationOptions", {"axis": 0}),
           Op("REDUCE_PROD", [1, 6], [7], "ReducerOptions", {"keep_dims": False}),
           Op("FLOOR_DIV", [1, 8], [9]),
           Op("FLOOR_MOD", [1, 8], [10]),
           Op("CAST", [1], [11]),
           Op("MUL", [11, 12], [13], "MulOptions", {}),
           Op("CAST", [13], [14]),
           Op("SLICE", [1, 15, 16], [17]),
           Op("MAXIMUM", [9, 10], [18]),
           Op("PACK", [1, 14], [19], "PackOptions", {"values_count": 2, "axis": 0}),
           Op("STRIDED_SLICE", [1, 20, 21, 22], [23], "StridedSliceOptions", {})]
    outs = [3, 5, 7, 9, 10, 14, 17, 18, 19, 23]
    return graph_model(t, ops, [0], outs), outs


def test_values_of_shape_arithmetic_equal_litert():
    model, outs = _value_model()
    ref = litert_outputs(model, [np.ones((3, 5, 7), F32)])
    sv = ShapeValues(ModelFacts(load_model(model))[0])
    for t, r in zip(outs, ref):
        v = sv.value(t)
        assert v is not None and v.full, t
        assert v.values.shape == r.shape and v.ints() == r.reshape(-1).tolist(), t


def test_values_known_in_part_keep_the_rest():
    """SHAPE of an input whose batch a WHILE body does not fix: PACK keeps the known
    constant beside the unknown element."""
    sv = ShapeValues(ModelFacts(load_model(LSTM))[2])
    assert sv.value(39).flat() == [None, -1, -1]   # CONCATENATION(RESHAPE(counter), [-1, -1])
    assert sv.shape(40) == (None, 1, 16)           # SLICE(x [20, 1, 16], 0, size)


def test_storing_the_shape_the_values_give_makes_tflm_right(tmp_path):
    """The offered edit writes [1, 48]: then TFLM's output is LiteRT's."""
    from tflite_viewer.edit.document import ModelDocument

    model = shape_models.reshape_stored_wrong()
    (op,) = [o for o in tflm_verdicts(model) if o.verdict == "refused"]
    (fix,) = [f for f in op.fixes if f.edits]
    doc = ModelDocument(model)
    doc.apply(fix.edits[0])
    fixed = doc.to_bytes()
    assert all(o.verdict == "runs" for o in tflm_verdicts(fixed))
    path = tmp_path / "fixed.tflite"
    path.write_bytes(fixed)
    inputs = micro_inputs(fixed)
    theirs = tflm_run_isolated(str(path), inputs)
    assert theirs.ok
    np.testing.assert_array_equal(theirs.outputs[0], litert_outputs(fixed, inputs)[0])


def test_a_shape_a_loop_counter_sets_offers_advice_not_an_edit():
    ops = analyze(load_model(LSTM), ["tflm"]).results["tflm"].ops
    (op,) = [o for o in ops if o.verdict == "refused"]
    assert (op.subgraph, op.index) == (2, 20) and "[?, 1, 16]" in op.reason
    assert [f.edits for f in op.fixes] == [[]] and "only a run knows" in op.fixes[0].summary
