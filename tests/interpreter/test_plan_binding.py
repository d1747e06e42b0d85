"""Kernels bound to their prepared nodes (`Kernel.bind`, `builder.bind_kernels`).

Truth: the same model with ``bind_kernels = False`` (every node through its kernel's
invoke, which the LiteRT tests check), bit for bit on every tensor, over several runs; an
input of another shape must not be computed by a node bound for the old one; and single-op
models run bound against LiteRT's reference kernels.
"""
from __future__ import annotations

import numpy as np
import pytest

from .conftest import model_path
from .singleop import Input, rel_error, run_litert, single_op_model
from tflite_viewer.interpreter import Interpreter


def _inputs(it: Interpreter, seed: int, shapes=None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for k, i in enumerate(it.entry.inputs):
        t = it.entry.tensors[i]
        shape = t.shape if shapes is None else shapes[k]
        if t.dtype == np.int32:  # movie_review's word ids
            out.append(rng.integers(0, 10000, shape).astype(np.int32))
        else:
            out.append((rng.standard_normal(shape) * 3).astype(t.dtype))
    return out


def _bound(it: Interpreter) -> list[str]:
    return [node.name for sg in it.subgraphs for node, fn, _ in sg.plan_steps
            if fn is not None and fn != node.kernel.invoke and not hasattr(fn, "nodes")
            and not node.calls_subgraphs]


def _same_tensors(a: Interpreter, b: Interpreter) -> None:
    for sg in range(len(a.subgraphs)):
        for i in range(len(a.subgraphs[sg].tensors)):
            x, y = a.tensor(sg, i), b.tensor(sg, i)
            assert (x is None) == (y is None), (sg, i)
            if x is not None:
                assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), (sg, i)


@pytest.mark.parametrize("name,kinds", [
    ("sine_float", {"FULLY_CONNECTED"}), ("multi_signature", {"FULLY_CONNECTED", "LOGISTIC"}),
    ("movie_review", {"GATHER", "MEAN", "FULLY_CONNECTED", "SOFTMAX"}),
    ("trained_lstm", {"FULLY_CONNECTED", "SOFTMAX"}),
    ("mobilenet_v2_float", {"FULLY_CONNECTED", "ADD", "CONV_2D", "DEPTHWISE_CONV_2D"}),
    # filters that are DEQUANTIZE outputs (cached arrays); a dilated depthwise
    ("face_detection_short_range", {"CONV_2D", "DEPTHWISE_CONV_2D"}),
    # a FULLY_CONNECTED whose weights are a DEQUANTIZE's kept output
    ("mobilenet_v2_fp16", {"FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D"}),
    ("small_cnn_dilated_float", {"CONV_2D", "DEPTHWISE_CONV_2D"}),
    ("control_flow", {"ADD", "MUL", "TANH", "LESS", "GREATER", "SUM"}),
    ("lstm_float", {"ADD", "MUL", "LOGISTIC", "TANH", "LESS"})])
@pytest.mark.parametrize("sums", ["auto", "reference"])
def test_bound_nodes_equal_their_kernels_invoke(name, kinds, sums):
    bound, plain = Interpreter(model_path(name), float_sums=sums), \
        Interpreter(model_path(name), float_sums=sums)
    plain.bind_kernels = False
    bound.fuse_loops = plain.fuse_loops = False  # lstm_float: its WHILE bodies op by op
    for seed in range(3):  # a run with no re-preparation binds, the next ones use it
        x = _inputs(bound, seed)
        out, ref = bound.invoke(x), plain.invoke(x)
        for k in ref:
            assert np.array_equal(out[k], ref[k], equal_nan=True)
        _same_tensors(bound, plain)
        assert bound.op_calls == plain.op_calls
    assert kinds <= set(_bound(bound)) and not _bound(plain)


def test_a_bound_node_given_another_shape_runs_its_kernel():
    """mobilenet's FULLY_CONNECTED is bound for a batch of 1; a batch of 2 must still be
    computed (the bound call defers to invoke, then the plan is bound again)."""
    bound, plain = Interpreter(model_path("mobilenet_v2_float")), \
        Interpreter(model_path("mobilenet_v2_float"))
    plain.bind_kernels = False
    for _ in range(2):
        bound.invoke(_inputs(bound, 0))
    assert "FULLY_CONNECTED" in _bound(bound)
    shape = (2,) + bound.entry.tensors[bound.entry.inputs[0]].shape[1:]
    for it in (bound, plain):
        it.resize_input(0, shape)
    for seed in range(2):
        x = _inputs(bound, seed, [shape])
        out, ref = bound.invoke(x), plain.invoke(x)
        for k in ref:
            assert out[k].shape[0] == 2 and np.array_equal(out[k], ref[k])


# -- single ops, bound, against LiteRT's reference kernels ---------------------------------
F32, I32 = np.float32, np.int32
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (1, 3, 1)), ((3,), ()),
          ((), ())]


def _third_run_bound(model: bytes, inputs) -> list[np.ndarray]:
    """The outputs of a third invoke, which runs the bound plan (the first two run the
    kernels' invoke: the same outputs, bit for bit)."""
    it = Interpreter(model)
    runs = [list(it.invoke(list(inputs)).values()) for _ in range(3)]
    assert _bound(it), "the op was not bound"
    for a, b in zip(runs[0], runs[2]):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    return runs[2]


def _check(model: bytes, inputs) -> None:
    ours, ref = _third_run_bound(model, inputs), run_litert(model, inputs)
    for a, b in zip(ours, ref):
        assert a.shape == b.shape and a.dtype == b.dtype
        if b.dtype.kind == "f":
            assert rel_error(a, b) <= 1e-5
        else:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("op,options,act", [
    ("ADD", "AddOptions", "RELU6"), ("ADD", "AddOptions", "NONE"), ("SUB", "SubOptions", "RELU"),
    ("MUL", "MulOptions", "RELU_N1_TO_1"), ("MAXIMUM", None, None), ("MINIMUM", None, None)])
@pytest.mark.parametrize("shapes", SHAPES)
def test_bound_binary_float_matches_litert(op, options, act, shapes):
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal(s).astype(F32) * 4 for s in shapes)
    model = single_op_model(op, [Input(a.shape), Input(b.shape)], [F32], options,
                            {"fused_activation_function": act} if options else None)
    _check(model, [a, b])


@pytest.mark.parametrize("op,options", [("ADD", "AddOptions"), ("SUB", "SubOptions"),
                                        ("MUL", "MulOptions"), ("MAXIMUM", None)])
def test_bound_binary_int32_matches_litert(op, options):
    rng = np.random.default_rng(6)
    a, b = rng.integers(-50, 50, (3, 4)).astype(I32), rng.integers(-9, 9, (4,)).astype(I32)
    model = single_op_model(op, [Input(a.shape, I32), Input(b.shape, I32)], [I32], options,
                            {} if options else None)
    _check(model, [a, b])


@pytest.mark.parametrize("op", ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER",
                                "GREATER_EQUAL"])
def test_bound_comparisons_match_litert(op):
    rng = np.random.default_rng(3)
    a, b = rng.integers(-3, 3, (2, 5)).astype(F32), rng.integers(-3, 3, (5,)).astype(F32)
    _check(single_op_model(op, [Input(a.shape), Input(b.shape)], [np.bool_]), [a, b])


@pytest.mark.parametrize("op", ["LOGISTIC", "TANH"])
def test_bound_unary_matches_litert(op):
    x = (np.random.default_rng(4).standard_normal((2, 7)) * 5).astype(F32)
    _check(single_op_model(op, [Input(x.shape)], [F32]), [x])


@pytest.mark.parametrize("act", ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"])
@pytest.mark.parametrize("bias", [True, False])
def test_bound_fully_connected_matches_litert(act, bias):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 9)).astype(F32)
    w = rng.standard_normal((5, 9)).astype(F32)
    b = rng.standard_normal(5).astype(F32) if bias else None
    model = single_op_model("FULLY_CONNECTED", [Input(x.shape), w, b], [F32],
                            "FullyConnectedOptions", {"fused_activation_function": act})
    _check(model, [x])


@pytest.mark.parametrize("op,options", [("MEAN", {"keep_dims": False}), ("SUM", {"keep_dims": True}),
                                        ("REDUCE_MAX", {"keep_dims": False}),
                                        ("REDUCE_MIN", {"keep_dims": True})])
@pytest.mark.parametrize("axes", [[1], [0, 2], [-1]])
def test_bound_reductions_match_litert(op, options, axes):
    x = (np.random.default_rng(8).standard_normal((3, 5, 4)) * 3).astype(F32)
    model = single_op_model(op, [Input(x.shape), np.array(axes, I32)], [F32], "ReducerOptions",
                            options)
    _check(model, [x])


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_bound_softmax_matches_litert(beta):
    x = (np.random.default_rng(9).standard_normal((2, 6)) * 4).astype(F32)
    _check(single_op_model("SOFTMAX", [Input(x.shape)], [F32], "SoftmaxOptions", {"beta": beta}),
           [x])


def test_bound_gather_matches_litert_and_still_refuses_a_bad_index():
    """GATHER bound on its prepared shapes reads the indices at every run: an index out of
    range after binding is the documented ExecutionError, not numpy's wrap-around."""
    from tflite_viewer.interpreter.errors import ExecutionError
    table = np.random.default_rng(10).standard_normal((7, 3)).astype(F32)
    idx = np.array([[6, 0, 2]], I32)
    model = single_op_model("GATHER", [table, Input(idx.shape, I32)], [F32], "GatherOptions",
                            {"axis": 0})
    _check(model, [idx])
    it = Interpreter(model)
    for _ in range(3):
        it.invoke([idx])
    assert "GATHER" in _bound(it)
    with pytest.raises(ExecutionError, match=r"GATHER: index -1 out of range \[0, 7\)"):
        it.invoke([np.array([[1, -1, 2]], I32)])
