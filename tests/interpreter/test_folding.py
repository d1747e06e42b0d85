"""Folded shape arithmetic (interpreter/folding.py): replays in invoke() equal the kernels.

Truth: the same interpreter with ``fold_shape_ops = False`` (every kernel runs; those are
checked against LiteRT elsewhere) bit for bit, on every tensor, and LiteRT itself after a
resize, which must make the recorded shape values stale.
"""
from __future__ import annotations

import numpy as np
import pytest

from .conftest import model_path
from tests.litert_oracle import litert
from tflite_viewer.interpreter import Interpreter


def _pair(name: str) -> tuple[Interpreter, Interpreter]:
    folded, plain = Interpreter(model_path(name)), Interpreter(model_path(name))
    plain.fold_shape_ops = False
    return folded, plain


def _inputs(it: Interpreter, seed: int, shape=None) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    t = it.entry.tensors[it.entry.inputs[0]]
    shape = t.shape if shape is None else shape
    if t.dtype == np.int8:
        return [rng.integers(-128, 128, shape).astype(np.int8)]
    return [rng.standard_normal(shape).astype(np.float32)]


def _same_tensors(a: Interpreter, b: Interpreter) -> None:
    for i in range(len(a.entry.tensors)):
        x, y = a.tensor(0, i), b.tensor(0, i)
        assert (x is None) == (y is None), i
        if x is not None:
            assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), i


@pytest.mark.parametrize("name", ["dilated_conv", "small_cnn_dilated_float",
                                  "small_cnn_dilated_int8", "mobilenet_v2_fp16"])
def test_replayed_shape_ops_equal_the_kernels(name):
    folded, plain = _pair(name)
    for seed in range(3):  # a run with no re-preparation records, the next ones replay
        x = _inputs(folded, seed)
        out, ref = folded.invoke(x), plain.invoke(x)
        for k in ref:
            assert np.array_equal(out[k], ref[k])
        _same_tensors(folded, plain)
        assert folded.op_calls == plain.op_calls  # a replayed node still counts as run
    assert folded.entry.folded and not plain.entry.folded


def test_a_resize_makes_the_replays_stale_and_they_are_recorded_again():
    folded, plain = _pair("dilated_conv")
    folded.invoke(_inputs(folded, 0))
    folded.invoke(_inputs(folded, 1))
    assert folded.entry.folded
    for shape in [(2, 9, 7, 3), (1, 4, 6, 3), (2, 9, 7, 3)]:
        x = _inputs(folded, 5, shape)
        for it in (folded, plain):
            it.resize_input(0, shape)
        for _ in range(2):  # after the resize: the kernels, then replays of the new values
            out, ref = folded.invoke(x), plain.invoke(x)
            _same_tensors(folded, plain)
        li = litert(model_path("dilated_conv"), "BUILTIN_REF")
        li.resize_tensor_input(li.get_input_details()[0]["index"], shape)
        li.allocate_tensors()
        li.set_tensor(li.get_input_details()[0]["index"], x[0])
        li.invoke()
        want = li.get_tensor(li.get_output_details()[0]["index"])
        (got,) = out.values()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_stepping_runs_every_kernel_after_folding():
    it = Interpreter(model_path("dilated_conv"))
    x = _inputs(it, 0)
    it.invoke(x)
    it.invoke(x)
    assert it.entry.folded
    seen = []
    it.add_hook("before", lambda _it, ev: seen.append(ev.op))
    ref = it.invoke(x)  # a hook watches: every kernel runs
    assert seen == list(range(len(it.entry.nodes)))
    stop = it.start(x)
    while not stop.finished:
        stop = it.step()
    for k in ref:
        assert np.array_equal(stop.outputs[k], ref[k])


def test_a_stale_replay_runs_the_kernels_of_its_nodes():
    """A re-preparation in the middle of a run (a callee's input changing shape) makes a
    replay bound earlier in that run stale: it must compute, not replay."""
    it = Interpreter(model_path("dilated_conv"))
    x = _inputs(it, 0)
    for _ in range(3):  # the first run prepares dynamic tensors, the second records
        it.invoke(x)
    sg = it.entry
    node, step, _ = sg.plan_steps[0]
    nodes = step.nodes
    assert len(nodes) > 1 and [n.name for n in nodes][:2] == ["SHAPE", "STRIDED_SLICE"]
    outs = [sg.tensors[o] for n in nodes for o in n.outputs]
    want = [t.data for t in outs]
    for t in outs:
        t.data = None
    sg.fold_epoch += 1  # as a re-preparation would
    sg.clear_op_stats()
    with np.errstate(all="ignore"):
        step(sg, node)
    for t, w in zip(outs, want):
        assert t.data is not None and t.data is not w and np.array_equal(t.data, w)
    assert [sg.op_counts[n.index] for n in nodes[1:]] == [1] * (len(nodes) - 1)


def test_kept_dequantized_weights_are_one_replayed_step():
    """mobilenet_v2_fp16 dequantizes its 65 float16 filters and biases at the head of its
    plan: once bound, the DEQUANTIZE nodes' kept values are stored by one step."""
    folded, _ = _pair("mobilenet_v2_fp16")
    for seed in range(2):
        folded.invoke(_inputs(folded, seed))
    steps = folded.entry.plan_steps
    dequantizes = [n for n in folded.entry.plan_nodes if n.name == "DEQUANTIZE"]
    assert len(dequantizes) == 65
    assert [n.index for n in steps[0][1].nodes] == [n.index for n in dequantizes]
    assert len(steps) == len(folded.entry.plan_nodes) - 64
