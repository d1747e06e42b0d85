"""Seeded inputs are valid for the model; supplied inputs are checked with clear errors."""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tests.interpreter.singleop import Input, Op, graph_model, single_op_model
from tflite_viewer.interpreter.inputs import (InputError, check_input, complete_inputs,
                                              input_specs, match_inputs, positional,
                                              seeded_inputs)
from tflite_viewer.model import load_model


def _m(name: str):
    return load_model(MODELS_DIR / f"{name}.tflite")


def test_ids_feeding_gather_are_inside_the_vocabulary():
    model = _m("movie_review")
    for seed in range(5):
        ids = seeded_inputs(model, seed)["input_3"]
        assert ids.dtype == np.int32 and ids.shape == (1, 256)
        assert ids.min() >= 0 and ids.max() < 10003
    assert seeded_inputs(model, 0)["input_3"].max() > 5000  # the whole vocabulary is used


def test_ids_through_reshape_into_gather_axis_1():
    data = graph_model(
        [((2, 3), np.int32), (np.array([6], np.int32),), ((6,), np.int32),
         (np.zeros((4, 9), np.float32),), ((4, 6), np.float32)],
        [Op("RESHAPE", [0, 1], [2]),
         Op("GATHER", [3, 2], [4], "GatherOptions", {"axis": 1})],
        inputs=[0], outputs=[4])
    ids = seeded_inputs(load_model(data), 3)["t0"]
    assert ids.min() >= 0 and ids.max() < 9 and ids.max() > 4


def test_ids_feeding_embedding_lookup():
    data = single_op_model("EMBEDDING_LOOKUP", [Input((50,), np.int32),
                                                np.ones((7, 2), np.float32)],
                           [np.float32], output_shapes=[(50, 2)])
    ids = seeded_inputs(load_model(data), 0)["in0"]
    assert ids.min() >= 0 and ids.max() == 6


def test_small_integers_for_loop_counts_and_signature_naming():
    model = _m("control_flow")
    plain = seeded_inputs(model, 0)
    sig = seeded_inputs(model, 0, signature="serving_default")
    assert list(plain) == ["serving_default_x:0", "serving_default_n:0"]
    assert list(sig) == ["n", "x"]  # the signature's order and names
    assert 0 <= int(plain["serving_default_n:0"]) < 8
    # the same tensor gets the same values whatever it is called
    np.testing.assert_array_equal(plain["serving_default_x:0"], sig["x"])
    assert int(plain["serving_default_n:0"]) == int(sig["n"])


@pytest.mark.parametrize("name,lo,hi", [
    ("face_detection_short_range", -1.0, 1.0),   # metadata stats
    ("hand_landmark_lite", 0.0, 1.0),            # metadata stats, per channel
    ("dilated_conv", 0.0, 255.0),                # metadata stats of an unnormalized image
    ("mobilenet_v2_float", -1.0, 1.0),           # no metadata
])
def test_float_ranges(name, lo, hi):
    x = next(iter(seeded_inputs(_m(name), 0).values()))
    assert x.dtype == np.float32
    assert x.min() >= lo and x.max() <= hi
    span = hi - lo
    if x.size < 100:  # dilated_conv's input is one pixel
        assert x.max() > 1.0 or hi <= 1.0
        return
    assert x.min() < lo + 0.1 * span and x.max() > hi - 0.1 * span


def test_normalization_options_without_stats(monkeypatch):
    model = _m("mobilenet_v1_0.25_224_1_default_1")
    spec = input_specs(model)[0]
    meta = {"subgraph_metadata": [{"input_tensor_metadata": [{
        "process_units": [{"options": {"type": "NormalizationOptions",
                                       "mean": [127.5], "std": [127.5]}}]}]}]}
    monkeypatch.setattr(type(model), "tflite_metadata", property(lambda self: meta))
    x = seeded_inputs(model, 0)[spec.name]
    assert -1.0 <= x.min() < -0.9 and 0.9 < x.max() <= 1.0


@pytest.mark.parametrize("name,dtype", [("mobilenet_v2_int8", np.int8),
                                        ("mobilenet_v1_0.25_224_quant", np.uint8),
                                        ("keyword_scrambled_8bit", np.int16)])
def test_quantized_inputs_span_their_type(name, dtype):
    x = next(iter(seeded_inputs(_m(name), 0).values()))
    info = np.iinfo(dtype)
    assert x.dtype == dtype
    assert x.min() < info.min + (info.max - info.min) * 0.05
    assert x.max() > info.max - (info.max - info.min) * 0.05


def test_empty_tensor_names_become_keys_and_bools_are_random():
    assert list(seeded_inputs(_m("keyword_scrambled_8bit"), 0)) == ["s0_t52"]
    data = single_op_model("LOGICAL_NOT", [Input((64,), np.bool_)], [np.bool_],
                           output_shapes=[(64,)])
    b = seeded_inputs(load_model(data), 1)["in0"]
    assert b.dtype == np.bool_ and 0 < b.sum() < 64


def test_seeds_reproduce_and_differ():
    model = _m("mobilenet_v2_float")
    a, b, c = (next(iter(seeded_inputs(model, s).values())) for s in (5, 5, 6))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


# ------------------------------------------------------------------------------------------
# supplied inputs
# ------------------------------------------------------------------------------------------
def test_match_inputs_accepts_every_alias():
    model = _m("control_flow")
    x = np.zeros(4, np.float32)
    for key in ("serving_default_x:0", "s0_t0", "x"):
        got = match_inputs(model, {key: x})
        assert list(got) == ["serving_default_x:0"]
    got = match_inputs(model, {"serving_default_x:0": x, "s0_t1": np.int64(3)},
                       signature="serving_default")
    assert set(got) == {"x", "n"} and got["n"].dtype == np.int32


@pytest.mark.parametrize("given,signature,expected", [
    ({"nope": np.zeros(4, np.float32)}, None, "unknown input 'nope'"),
    ({"s0_t0": np.zeros(5, np.float32)}, None, "got shape [5]; expected shape [4]"),
    ({"x": np.zeros(4, np.float32), "s0_t0": np.zeros(4, np.float32)}, "serving_default",
     "given twice"),
    ({"n": np.float64(1.5)}, "serving_default", "got float64 values; expected INT32[]"),
    ({"n": np.int64(1 << 40)}, "serving_default", "do not fit INT32"),
    ({"x": np.array(["a"] * 4)}, "serving_default", "got <U1 values"),
])
def test_match_inputs_errors_name_the_input(given, signature, expected):
    with pytest.raises(InputError, match=None) as info:
        match_inputs(_m("control_flow"), given, signature)
    assert expected in str(info.value)
    assert isinstance(info.value, ValueError)


def test_shape_signature_allows_a_batch():
    spec = input_specs(_m("mobilenet_v2_float"))[0]
    assert check_input(spec, np.zeros((3, 96, 96, 3))).dtype == np.float32
    with pytest.raises(InputError, match=r"shape signature \[-1, 96, 96, 3\]"):
        check_input(spec, np.zeros((3, 64, 64, 3)))


def test_complete_inputs_and_positional_order():
    model = _m("control_flow")
    arrays, generated = complete_inputs(model, {"x": np.ones(4, np.float32)}, seed=2,
                                        signature="serving_default")
    assert generated == ["n"]
    assert list(arrays) == ["n", "x"]
    plain, _ = complete_inputs(model, {"x": np.ones(4, np.float32)}, seed=2)
    seq = positional(model, plain)  # subgraph 0's order: x, n
    assert seq[0].shape == (4,) and seq[1].shape == ()
    # a signature has no positions: its order ("n", "x") is not its subgraph's
    with pytest.raises(InputError, match="by name"):
        positional(model, arrays, "serving_default")
