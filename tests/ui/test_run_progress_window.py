"""A long run in the window shows its progress and can be cancelled (issue 40 items 3 and
5, issue 41 item 13: "F5 on a slow model shows only Debug: running...").

The slow model is one float CONV_2D of seconds (`_conv_model` of
tests/interpreter/test_run_progress.py, whose progress and Cancel the interpreter's tests
check against the model's structure); here the window's side: the bar and the label follow
the worker's reports, Esc and the Cancel button end the run within the op (no op completed:
the session's own count), and what the user set up (breakpoints, inputs) stays for the next
run, which starts from the first op.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from tests.interpreter.test_run_progress import _conv_model
from tflite_viewer.interpreter.session import PAUSED, STOPPED
from tflite_viewer.ui.debugger.run_progress import STEPS, running_text

from .conftest import model_path
from .test_debugger import press

TIMEOUT = 60_000


def _start_slow_run(qtbot, window, settings, tmp_path, size: int = 384):
    data, x = _conv_model(size)
    path = tmp_path / "slow_conv.tflite"
    path.write_bytes(data)
    settings.setValue("debug/float_sums", "reference")  # several seconds, in blocks
    assert window.open_path(path, wait=True)
    dbg = window.debugger
    dbg.set_inputs({dbg_input(window): x})
    dbg.toggle_breakpoint(0, 0)  # kept through the cancelled run
    dbg.enable_breakpoint(dbg.ws.breakpoints.on_op(0, 0).id, False)
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_F5)
    view = dbg.progress.view
    # the bar shows once the run has gone 0.5 s, and moves within the one op
    qtbot.waitUntil(lambda: view.isVisible() and view.bar.value() > 0, timeout=TIMEOUT)
    return dbg, view


def dbg_input(window) -> str:
    return window.model.subgraphs[0].tensors[window.model.subgraphs[0].inputs[0]].name


def test_esc_cancels_a_slow_run_within_its_op_and_the_next_starts_anew(
        qtbot, window, settings, tmp_path):
    dbg, view = _start_slow_run(qtbot, window, settings, tmp_path)
    p = dbg.progress.last
    assert p is not None and p.total == 1 and p.op == (0, 0) and p.op_name == "CONV_2D"
    assert p.elapsed >= 0.5
    assert dbg.state_label.text() == running_text(p)
    assert dbg.state_label.text().startswith("Debug: running subgraph 0 op 0 (CONV_2D)")
    assert " left \u2014 0 of 1 ops" in dbg.state_label.text()
    assert view.bar.value() == round(p.fraction * STEPS) and 0 < p.fraction < 1
    assert dbg.progress.action.isEnabled()
    qtbot.keyClick(window.view, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not dbg.busy, timeout=TIMEOUT)
    stop = dbg.last_stop
    assert stop.state == STOPPED and stop.message == "stopped by the user"
    assert dbg.worker.session.ops_run == 0  # it returned within the CONV_2D
    assert not view.isVisible() and not dbg.progress.action.isEnabled()
    assert dbg.state_label.text().startswith("Debug: cancelled, the run ended")
    message = window.statusBar().currentMessage()
    assert message.startswith("Run cancelled after ") and "subgraph 0 op 0 (CONV_2D)" in message
    # nothing the user set up is lost: the inputs, the breakpoint; the run starts anew
    assert dbg.ws.debug.active and dbg_input(window) in dbg.ws.debug.inputs
    assert dbg.ws.breakpoints.on_op(0, 0) is not None
    stop = press(qtbot, window, Qt.Key.Key_F10)  # (F10 after the end starts the run)
    assert stop.state == PAUSED and stop.position == ((0, 0),) and stop.ops_run == 0


def test_the_cancel_button_ends_a_long_loop_and_the_label_names_its_iteration(
        qtbot, window, monkeypatch):
    import functools

    from tflite_viewer.ui.debugger import worker
    # the budget of the interpreter the debugger's worker builds, lifted: a fast machine
    # reaches the default 100,000 iterations before the progress shows
    monkeypatch.setattr(worker, "Interpreter",
                        functools.partial(worker.Interpreter, max_iterations=10**9))
    assert window.open_path(model_path("control_flow.tflite"), wait=True)
    dbg = window.debugger
    dbg.set_inputs({"serving_default_x:0": np.linspace(-1, 1, 4).astype(np.float32),
                    "serving_default_n:0": np.int32(50_000_000)})
    dbg.continue_()
    view = dbg.progress.view
    qtbot.waitUntil(lambda: view.isVisible() and "iteration" in dbg.state_label.text(),
                    timeout=TIMEOUT)
    assert "(WHILE, iteration " in dbg.state_label.text()
    qtbot.mouseClick(view.cancel, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dbg.busy, timeout=TIMEOUT)
    assert dbg.last_stop.state == STOPPED and not view.isVisible()
    assert dbg.worker.session.ops_run < 50_000_000


def test_a_quick_step_shows_no_progress_and_esc_stays_the_canvas_s(qtbot, window):
    assert window.open_path(model_path("sine_float.tflite"), wait=True)
    dbg = window.debugger
    shown = []
    dbg.worker.progressed.connect(lambda p, _s: shown.append(dbg.progress.view.isVisible()))
    stop = press(qtbot, window, Qt.Key.Key_F10)
    assert stop.state == PAUSED and not any(shown) and not dbg.progress.view.isVisible()
    assert not dbg.progress.action.isEnabled()  # Esc is not taken while nothing runs
    window.select_op(0)
    qtbot.keyClick(window.view, Qt.Key.Key_Escape)
    assert window.selection is None  # the canvas's Esc: nothing selected


def test_a_long_cross_check_shows_our_run_s_progress_and_cancel_ends_it(
        qtbot, window, settings, tmp_path):
    data, x = _conv_model(384)
    path = tmp_path / "slow_conv.tflite"
    path.write_bytes(data)
    # REF-exact sums: our run takes seconds, in blocks (with BLAS's a third of a second,
    # under the half second after which the bar shows)
    settings.setValue("debug/float_sums", "reference")
    assert window.open_path(path, wait=True)
    dbg = window.debugger
    dbg.set_inputs({dbg_input(window): x})
    dbg.crosscheck_action.trigger()
    panel = dbg.crosscheck_panel
    qtbot.waitUntil(lambda: panel.bar.isVisible() and panel.bar.value() > 0, timeout=TIMEOUT)
    assert panel.header.text().startswith("Running the interpreter on the debugger's inputs")
    assert "subgraph 0 op 0 (CONV_2D)" in panel.header.text() and " left" in panel.header.text()
    qtbot.mouseClick(panel.cancel, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not panel.bar.isVisible(), timeout=TIMEOUT)
    assert panel.header.text().startswith("Cross-check cancelled")
    assert dbg.last_cross_check is None and panel.table.rowCount() == 0
    assert window.reported == []  # a cancel is no error
