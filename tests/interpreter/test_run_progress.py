"""No run without progress (issue 40, item 3): what a run reports while it goes, and Cancel
inside a long op.

The counts are checked against the model file (its operator count) and against a count
made by hand from the model's structure (control_flow: 6 + 5n ops for n loop
iterations); Cancel against a float convolution of several seconds, stopped from another
thread, and against a stop requested from inside the kernel (deterministic), whose run
resumes to the uninterrupted run's bits.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from tests.interpreter.singleop import Input, single_op_model
from tflite_viewer.interpreter import Interpreter, RunCancelled, TimeBudgetError
from tflite_viewer.interpreter.inputs import seeded_inputs
from tflite_viewer.interpreter.session import FINISHED, PAUSED, STOPPED, DebugSession
from tflite_viewer.model import load_model

from .conftest import model_path

F32 = np.float32
EVERY_BOUNDARY = 1e-9  # an interval no op is shorter than: a report at every op boundary


def _control_flow_inputs(n: int) -> dict:
    return {"serving_default_x:0": np.linspace(-1, 1, 4).astype(F32),
            "serving_default_n:0": np.int32(n)}


def _conv_model(size: int, channels: int = 64) -> tuple[bytes, np.ndarray]:
    """One float CONV_2D, 3x3, ``channels`` in and out, over a size x size image, and an
    input for it: at 256 x 256 seconds of work in 1 MiB blocks (`float_conv.ConvPlan`)."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((channels, 3, 3, channels)).astype(F32)
    data = single_op_model("CONV_2D", [Input((1, size, size, channels)), w,
                                       np.zeros(channels, F32)], [F32], "Conv2DOptions",
                           {"padding": "SAME", "stride_w": 1, "stride_h": 1})
    return data, rng.standard_normal((1, size, size, channels)).astype(F32)


def test_progress_counts_the_plan_and_reaches_its_total():
    path = model_path("palm_detection_lite")
    n_ops = len(load_model(path).subgraphs[0].operators)  # from the file, not the runtime
    interp = Interpreter(path)
    seen = []
    interp.set_progress(seen.append, EVERY_BOUNDARY)
    interp.invoke(seeded_inputs(interp.model))
    running, last = seen[:-1], seen[-1]
    assert all(p.total == n_ops for p in seen)
    assert [p.done for p in running] == sorted(p.done for p in running)  # never goes back
    assert {p.done for p in running} == set(range(n_ops))  # a report before every op
    assert all(p.op == (0, p.done) and p.op_name for p in running)  # the op running now
    assert running[0].seconds_left is None and running[-1].seconds_left is not None
    assert last.finished and last.done == n_ops and last.fraction == 1.0
    assert last.ops_run == n_ops and last.seconds_left == 0.0 and last.op is None
    assert last.describe().startswith("done in ")


def test_progress_inside_a_while_names_the_iteration_and_counts_the_body():
    interp = Interpreter(model_path("control_flow"))
    seen = []
    interp.set_progress(seen.append, EVERY_BOUNDARY)
    interp.invoke(_control_flow_inputs(3))
    in_body = [p for p in seen if p.op is not None and p.op[0] == 4]  # the loop's body
    assert {p.op for p in in_body} == {(4, 0), (4, 1), (4, 2), (4, 3)}
    assert all(p.done == 0 and p.total == 4 for p in in_body)  # inside op 0, the WHILE
    assert {p.path.split(" > ")[0] for p in in_body} == {
        f"subgraph 0 op 0 (WHILE, iteration {k})" for k in (1, 2, 3)}
    # every op run: 4 in main, the condition 4 times, the body's 4 ops 3 times, a branch
    assert seen[-1].finished and seen[-1].done == 4 and seen[-1].ops_run == 6 + 5 * 3


def test_a_stepped_run_reports_its_progress_to_the_end():
    s = DebugSession(model_path("control_flow"), _control_flow_inputs(2))
    seen = []
    s.set_progress(seen.append, EVERY_BOUNDARY)
    stop = s.continue_()
    assert stop.state == FINISHED
    assert seen[-1].finished and seen[-1].done == seen[-1].total == 4
    assert seen[-1].ops_run == stop.ops_run == 6 + 5 * 2
    assert any("iteration 2" in p.path for p in seen)
    assert s.progress().done == 4  # from any thread: the same state


def test_a_fused_loop_reports_at_its_iterations():
    interp = Interpreter(model_path("lstm_float"))
    assert any(n.user_data is not None for n in interp.entry.nodes if n.name == "WHILE")
    seen = []
    interp.set_progress(seen.append, EVERY_BOUNDARY)
    interp.invoke(seeded_inputs(interp.model))
    assert any("(WHILE, iteration 2)" in p.path for p in seen)
    assert seen[-1].finished


def test_a_convolution_reports_its_share_done():
    data, x = _conv_model(64)  # 4,096 output positions in 9 blocks
    interp = Interpreter(data)
    seen = []
    interp.set_progress(seen.append, EVERY_BOUNDARY)
    interp.invoke([x])
    inside = [p.fraction for p in seen[:-1]]
    assert inside[0] == 0.0 and 0.0 < max(inside) < 1.0
    assert inside == sorted(inside)


def test_cancel_stops_a_long_convolution_within_half_a_second():
    """A float CONV_2D of seconds, cancelled from another thread once the convolution is
    under way (its first report from inside the op): the session returns within 0.5 s of
    the request, its run ended (STOPPED, nothing computed), and it can start again.  The
    request waits for the op, not for a clock, so a fast or a busy machine tests the same."""
    data, x = _conv_model(256)
    s = DebugSession(data, float_sums="reference")  # seconds, in blocks
    s.set_inputs({s.specs[0].name: x})
    inside, asked = threading.Event(), []
    s.set_progress(lambda p: inside.set() if 0.0 < p.fraction < 1.0 else None, EVERY_BOUNDARY)

    def cancel_inside() -> None:
        if inside.wait(60):
            asked.append(time.perf_counter())
            s.request_stop()
    canceller = threading.Thread(target=cancel_inside)
    canceller.start()
    stop = s.continue_()
    returned = time.perf_counter()
    inside.set()
    canceller.join()
    assert stop.state == STOPPED and stop.reason == "stopped"
    assert stop.message == "stopped by the user" and s.state == STOPPED
    assert returned - asked[0] < 0.5
    out = s.interpreter.entry.outputs[0]
    assert not s.snapshot(0, out).computed and stop.ops_run == 0
    s.set_progress(None)
    assert s.step_over().state == PAUSED  # usable again: paused before the convolution


def test_cancel_inside_a_kernel_ends_invoke_and_pauses_a_stepped_run_before_the_op():
    """The stop is requested from inside the convolution (its progress report within the
    op), so it lands between two of its blocks, every time."""
    data, x = _conv_model(64)
    interp = Interpreter(data)
    expected = Interpreter(data).invoke([x])

    def stop_inside(p):
        if 0.0 < p.fraction < 1.0:
            interp.request_stop()
    interp.set_progress(stop_inside, EVERY_BOUNDARY)
    with pytest.raises(RunCancelled, match=r"^subgraph 0 op 0 \(CONV_2D\): the run was stopped"):
        interp.invoke([x])
    assert interp.state == "ready"
    stop = interp.run([x])
    assert stop.reason == "interrupted" and stop.position == ((0, 0),)
    assert interp.state == "paused" and interp.current_op == (0, 0)
    interp.set_progress(None)
    stop = interp.run()  # the convolution runs anew, whole
    assert stop.finished
    for name, value in expected.items():
        np.testing.assert_array_equal(stop.outputs[name], value)


def test_the_time_budget_ends_a_convolution_between_its_blocks():
    """The deadline passes while the convolution runs (set from inside it, so between two
    of its blocks): the run ends there with the time budget's error naming the op."""
    data, x = _conv_model(64)
    interp = Interpreter(data, timeout=60)
    blocks = []

    def deadline_passes(p):
        if 0.0 < p.fraction < 1.0:
            blocks.append(p.fraction)
            interp.budget.deadline = 0.0  # as if the 60 s had gone by
    interp.set_progress(deadline_passes, EVERY_BOUNDARY)
    with pytest.raises(TimeBudgetError, match=r"^subgraph 0 op 0 \(CONV_2D\): the run is "
                                              r"still going after the time budget of 60 s"):
        interp.invoke([x])
    assert len(blocks) == 1  # the next block's checkpoint raised
