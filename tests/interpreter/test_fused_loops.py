"""Keras LSTM WHILE loops run as one compiled step (interpreter/fused_loops.py).

The truth is the op-by-op path over the same body (a stepped run, or fuse_loops=False),
whose every kernel is checked against LiteRT elsewhere (test_models_oracle.py); the
fused loop must give the same numbers bit for bit, and must not be used where someone
watches the body's operators.
"""
from __future__ import annotations

import numpy as np
import pytest

from .conftest import model_path
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.errors import IterationBudgetError
from tflite_viewer.interpreter.fused_loops import KerasLstmLoop, match_keras_lstm


def _inputs(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1, 20, 8)).astype(np.float32) * (1 + seed)]


def _whiles(it: Interpreter) -> list:
    return [n for n in it.subgraphs[0].nodes if n.name == "WHILE"]


def _body_calls(it: Interpreter) -> int:
    return sum(c for (sg, _), c in it.op_calls.items() if sg != 0)


def _op_by_op_calls(it: Interpreter) -> int:
    """Operator calls of both loops run op by op: 20 steps of each body, 21 tests of each
    cond (both models loop over 20 time steps)."""
    s = it.subgraphs
    return 20 * (len(s[2].nodes) + len(s[4].nodes)) + 21 * (len(s[1].nodes) + len(s[3].nodes))


@pytest.mark.parametrize("name", ["lstm_float", "lstm_dynamic"])  # float and int8 weights
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fused_loops_equal_the_op_by_op_body_bit_for_bit(name, seed):
    fused = Interpreter(model_path(name))
    plain = Interpreter(model_path(name))
    plain.fuse_loops = False
    x = _inputs(seed)
    out = fused.invoke(x)
    # both WHILEs were recognised: return_sequences (scatter) and last output
    kinds = sorted(n.user_data.scatter for n in _whiles(fused))
    assert all(isinstance(n.user_data, KerasLstmLoop) for n in _whiles(fused)) and kinds == [False, True]
    assert _body_calls(fused) == 0  # the bodies did not run op by op
    ref = plain.invoke(x)
    assert _body_calls(plain) == _op_by_op_calls(plain)  # ...and here they did
    stepped = Interpreter(model_path(name)).run(x).outputs  # the debugger's path
    for k in ref:
        assert out[k].dtype == ref[k].dtype and np.array_equal(out[k], ref[k])
        assert np.array_equal(out[k], stepped[k])
    # every tensor of the main subgraph (the WHILEs' outputs included) is the same
    for i in range(len(fused.subgraphs[0].tensors)):
        a, b = fused.tensor(0, i), plain.tensor(0, i)
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape and np.array_equal(a, b), i


def test_stepping_into_a_recognised_loop_runs_its_body_op_by_op():
    it = Interpreter(model_path("lstm_float"))
    it.start(_inputs(0))
    stop = it.run_to((2, 5))  # inside the first WHILE's body, before its input product
    assert stop.position == ((0, 1), (2, 5)) and it.current_node().name == "FULLY_CONNECTED"
    stop = it.step()
    assert stop.position == ((0, 1), (2, 6)) and it.current_node().name == "ADD"
    assert it.tensor(2, 22) is not None  # the product just computed, visible to the debugger
    it.run()
    assert _body_calls(it) == _op_by_op_calls(it)


def test_hooks_see_every_body_operator():
    it = Interpreter(model_path("lstm_float"))
    seen = []
    it.add_hook("after", lambda _it, ev: seen.append(ev.subgraph))
    it.invoke(_inputs(0))
    assert seen.count(2) == 20 * 26 and seen.count(4) == 20 * 19


def test_budgets_still_apply_to_a_fused_loop():
    it = Interpreter(model_path("lstm_float"), max_iterations=5)
    with pytest.raises(IterationBudgetError, match="5 iterations"):
        it.invoke(_inputs(0))


def test_other_loops_are_not_recognised():
    it = Interpreter(model_path("control_flow"))
    assert match_keras_lstm(it.subgraphs[3], it.subgraphs[4]) is None  # a WHILE, not an LSTM
    lstm = Interpreter(model_path("lstm_float"))
    subs = lstm.subgraphs
    assert match_keras_lstm(subs[1], subs[2]) is not None
    assert match_keras_lstm(subs[2], subs[1]) is None  # cond and body swapped
    assert match_keras_lstm(subs[1], subs[4]) is not None  # the other body, same cond shape
    assert match_keras_lstm(subs[3], subs[0]) is None  # main is no loop body
