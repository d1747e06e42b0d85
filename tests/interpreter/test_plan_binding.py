"""Kernels bound to their prepared nodes (`Kernel.bind`, `builder.bind_kernels`).

Truth: the same model with ``bind_kernels = False`` (every node through its kernel's
invoke, which the LiteRT tests check), bit for bit on every tensor, over several runs; and
an input of another shape must not be computed by a node bound for the old one.
"""
from __future__ import annotations

import numpy as np
import pytest

from .conftest import model_path
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
    ("movie_review", {"FULLY_CONNECTED"}), ("trained_lstm", {"FULLY_CONNECTED"}),
    ("mobilenet_v2_float", {"FULLY_CONNECTED", "ADD"}),
    ("control_flow", {"ADD", "MUL", "TANH", "LESS", "GREATER"}),
    ("lstm_float", {"ADD", "MUL", "LOGISTIC", "TANH", "LESS"})])
def test_bound_nodes_equal_their_kernels_invoke(name, kinds):
    bound, plain = Interpreter(model_path(name)), Interpreter(model_path(name))
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
