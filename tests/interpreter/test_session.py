"""The Qt-free debug session the window drives: positions, counters, breakpoints with ids,
snapshots that equal the interpreter's (LiteRT-checked) tensors, Stop from another thread."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter, NonFiniteBreakpoint
from tflite_viewer.interpreter.session import (ERROR, FINISHED, PAUSED, STOPPED, DebugSession)

from .conftest import model_path

F32 = np.float32


def control_flow(n: int) -> DebugSession:
    return DebugSession(model_path("control_flow"), {
        "serving_default_x:0": np.linspace(-1, 1, 4).astype(F32),
        "serving_default_n:0": np.int32(n)})


def test_step_over_walks_every_op_and_counts():
    s = DebugSession(model_path("sine_float"))
    n = len(s.interpreter.entry.nodes)
    stop = s.step_over()
    assert stop.state == PAUSED and stop.position == ((0, 0),) and stop.ops_run == 0
    positions = []
    while stop.state == PAUSED:
        stop = s.step_over()
        positions.append(stop.position)
        assert stop.ops_run == len(positions)
        assert stop.executed[0].sum() == len(positions)
    assert stop.state == FINISHED and len(positions) == n
    assert positions[:-1] == [((0, k),) for k in range(1, n)]
    # the outputs equal a plain invoke on the same inputs
    ref = Interpreter(model_path("sine_float")).invoke(list(s.inputs.values()))
    for k, v in ref.items():
        np.testing.assert_array_equal(stop.outputs[k], v)


def test_stop_is_immutable():
    s = DebugSession(model_path("sine_float"))
    stop = s.step_over()
    stop = s.step_over()
    with pytest.raises(ValueError):
        stop.executed[0][0] = False
    with pytest.raises(Exception):
        stop.state = "finished"  # type: ignore[misc]
    snap = s.snapshot(0, s.interpreter.entry.nodes[0].outputs[0])
    assert snap.computed and not snap.values.flags.writeable


def test_snapshots_follow_execution_and_equal_invoke():
    s = DebugSession(model_path("mobilenet_v2_float"))
    ref = Interpreter(model_path("mobilenet_v2_float"))
    ref.invoke(list(s.inputs.values()))
    node = s.interpreter.entry.nodes[3]
    out = node.outputs[0]
    s.run_to(0, 3)
    assert s.snapshot(0, out).values is None  # not yet computed
    s.step_over()
    np.testing.assert_array_equal(s.snapshot(0, out).values, ref.tensor(0, out))
    weights = s.snapshot(0, node.inputs[1])
    assert weights.constant and weights.values is not None


def test_breakpoints_with_ids_hits_enable_disable():
    s = DebugSession(model_path("mobilenet_v2_float"))
    bid = s.toggle_breakpoint(0, 10)
    stop = s.continue_()
    assert stop.reason == "breakpoint" and stop.position == ((0, 10),) and stop.breakpoint_id == bid
    assert s.breakpoints()[0].hits == 1 and s.breakpoints()[0].op == 10
    s.enable_breakpoint(bid, False)
    assert s.continue_().state == FINISHED
    s.enable_breakpoint(bid, True)
    assert s.continue_().position == ((0, 10),)
    assert s.toggle_breakpoint(0, 10) is None and s.breakpoints() == ()
    assert s.continue_().state == FINISHED


def test_breakpoint_on_first_op_stops_there():
    s = DebugSession(model_path("sine_float"))
    s.toggle_breakpoint(0, 0)
    stop = s.continue_()
    assert stop.reason == "breakpoint" and stop.position == ((0, 0),)


def test_step_into_while_body_and_out():
    s = control_flow(2)
    assert s.step_over().op_names == ("WHILE",)
    stop = s.step_into()
    assert stop.position[0] == (0, 0) and len(stop.position) == 2  # in the cond or body
    while stop.position[-1][0] != 4:
        stop = s.step_into()
    assert stop.op_names[-1] == "ADD"
    stop = s.step_out()
    assert stop.position == ((0, 1),) and stop.op_names == ("SUM",)


def test_nan_breakpoint_fires_after_the_op_that_made_it():
    s = DebugSession(model_path("mobilenet_v2_float"))
    s.add_breakpoint(NonFiniteBreakpoint())
    s.run_to(0, 3)
    x_index = s.interpreter.entry.nodes[3].inputs[0]
    x = np.array(s.snapshot(0, x_index).values)
    x[0, 0, 0, 0] = np.nan
    s.set_tensor(0, x_index, x)
    stop = s.continue_()
    assert stop.reason == "breakpoint" and stop.position == ((0, 4),) and "NaN" in stop.message


def test_request_stop_from_another_thread_interrupts_a_long_while():
    s = control_flow(10_000_000)  # a WHILE that would run for hours
    s.step_over()
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("stop", s.continue_()))
    worker.start()
    while s.ops_run < 200:
        worker.join(0.01)
        assert worker.is_alive()
    s.request_stop()
    worker.join(10)
    assert not worker.is_alive()
    assert result["stop"].state == STOPPED and s.ops_run < 10_000_000
    # the session is usable again
    assert control_flow(1).continue_().state == FINISHED


def test_kernel_error_is_a_state_and_keeps_values():
    s = DebugSession(model_path("sine_float"))
    s.step_over()
    s.step_over()
    first_out = s.interpreter.entry.nodes[0].outputs[0]

    def boom(interp, ev):
        if ev.op == 1:
            raise RuntimeError("boom")
    s.interpreter.add_hook("before", boom)
    stop = s.continue_()
    assert stop.state == ERROR and "boom" in stop.message
    assert s.snapshot(0, first_out).values is not None


def test_inputs_are_checked_and_named():
    s = DebugSession(model_path("sine_float"))
    name = s.specs[0].name
    with pytest.raises(ValueError, match=name):
        s.set_inputs({name: np.zeros((3, 3), F32)})
    s.set_inputs({name: np.full((1, 1), 0.5, F32)})
    stop = s.continue_()
    ref = Interpreter(model_path("sine_float")).invoke([np.full((1, 1), 0.5, F32)])
    np.testing.assert_array_equal(list(stop.outputs.values())[0], list(ref.values())[0])


def test_summarize_quantized_snapshot_saturation_and_real_values():
    from tflite_viewer.interpreter.session import TensorSnapshot, summarize
    values = np.array([[-128, -128, 0, 127], [5, 6, 7, 8]], np.int8)
    snap = TensorSnapshot(0, 1, "t", "INT8", values.shape, values, False, (0.5,), (2,))
    s = summarize(snap)
    real = (values.astype(np.float64) - 2) * 0.5
    assert (s.min, s.max, s.mean) == (real.min(), real.max(), real.mean())
    assert s.std == pytest.approx(real.std())
    assert s.saturation == 3 / 8 and s.nan == 0
    f = np.array([1.0, np.nan, np.inf, -2.0], np.float32)
    s = summarize(TensorSnapshot(0, 2, "f", "FLOAT32", f.shape, f, False))
    assert (s.nan, s.inf, s.min, s.max, s.saturation) == (1, 1, -2.0, 1.0, None)
    assert summarize(TensorSnapshot(0, 3, "n", "FLOAT32", (2,), None, False)) is None
