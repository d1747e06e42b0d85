"""Issue 25, the debugger's items one by one (the walk over every dock is test_workspace.py):
the session-ended notice, focus after the Inputs dialog, the segmentation map, the Profile
dock's sort and legend, the status after a finished run and after Stop, Step Out of an IF
branch, and --screenshot --run-to's wait."""
from __future__ import annotations

import time

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tflite_viewer.edit import RenameTensor
from tflite_viewer.interpreter.outputs import label_colours, segmentation
from tflite_viewer.model import load_model

from .conftest import model_path
from .workspace_checks import failing_excepthook  # noqa: F401 - a fixture
from .workspace_checks import key, wait_stop

F32 = np.float32


def _step(qtbot, window, k=Qt.Key.Key_F10, modifier=Qt.KeyboardModifier.NoModifier):
    dbg = window.debugger
    before = dbg.last_stop.serial if dbg.last_stop is not None else 0
    key(qtbot, window, k, modifier)
    return wait_stop(qtbot, dbg, before)


def test_item5_the_notice_floats_over_the_canvas_and_the_next_session_takes_it_away(
        qtbot, window, failing_excepthook):
    assert window.open_path(model_path("sine_float.tflite"), wait=True)
    _step(qtbot, window)
    view_geometry = window.view.geometry()
    viewport = window.view.viewport().geometry()
    window.apply_edit(RenameTensor(0, 0, "x_renamed"))
    QApplication.processEvents()
    assert window.notice.isVisible() and "debug session ended" in window.notice.text()
    # over the canvas: shown, it moves nothing (the canvas jumped 25 px when it hid)
    assert window.notice.parent() is window.view
    assert window.view.geometry() == view_geometry and window.view.viewport().geometry() == viewport
    _step(qtbot, window)  # the next run: the notice about the last one goes
    assert not window.notice.isVisible()
    assert window.view.geometry() == view_geometry
    # a notice of another kind stays when a session starts
    window.debugger.end_session()
    window.notice.show_notice("something else", "info")
    _step(qtbot, window)
    assert window.notice.isVisible()


def test_item7_closing_the_inputs_dialog_gives_the_focus_back_to_the_canvas(
        qtbot, window, monkeypatch):
    from tflite_viewer.ui.debugger import inputs_dialog
    assert window.open_path(model_path("sine_float.tflite"), wait=True)
    window.activateWindow()
    window.model_panel.tree.setFocus()
    monkeypatch.setattr(inputs_dialog.InputsDialog, "exec", lambda self: 0)  # Cancel at once
    window.debugger.inputs_dialog()
    assert QApplication.focusWidget() is window.view


def test_item6_escape_in_find_gives_the_focus_to_the_canvas(qtbot, window):
    assert window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    window.activateWindow()
    window.find_bar.open_bar()
    qtbot.keyClicks(window.find_bar.edit, "conv")
    assert QApplication.focusWidget() is window.find_bar.edit
    description = window.model_panel.editors.get("description")
    qtbot.keyClick(window.find_bar.edit, Qt.Key.Key_Escape)
    assert not window.find_bar.isVisible()
    assert QApplication.focusWidget() is window.view
    if description is not None:  # never given the focus, never scrolled to its end
        line = description if hasattr(description, "cursorPosition") else None
        assert line is None or not line.hasFocus()


def test_item9_segmentation_map_is_argmax_classes_with_a_legend_of_the_labels():
    model = load_model(model_path("mobilenet_v1_0.25_224_quant.tflite"))
    sg = model.subgraphs[0]
    out = sg.outputs[0]
    labels = model.read_associated_file("labels.txt").decode().splitlines()
    n = len(labels)
    scores = np.zeros((1, 6, 8, n), F32)
    scores[0, :, :, 0] = 1.0            # background everywhere ...
    scores[0, :2, :4, 17] = 2.0         # ... but a block of class 17 (8 pixels)
    scores[0, 5, :, 243] = 3.0          # and a row of class 243 (8 pixels)
    seg = segmentation(model, 0, out, scores)
    assert seg is not None and seg.n_classes == n
    assert seg.classes[0, 0] == 17 and seg.classes[5, 7] == 243 and seg.classes[3, 3] == 0
    assert seg.present == ((0, labels[0].strip(), 32 / 48), (17, labels[17].strip(), 8 / 48),
                           (243, labels[243].strip(), 8 / 48))
    colours = label_colours(n)
    assert len({tuple(c) for c in colours.tolist()}) == n  # every class its own colour
    assert colours[0].tolist() == [0, 0, 0] and colours[1].tolist() == [128, 0, 0]
    assert segmentation(model, 0, out, np.zeros((1, 10), F32)) is None  # not an image
    assert segmentation(model, 0, out, np.zeros((1, 8, 8, 3), F32)) is None  # an RGB image


def test_item9_outputs_dock_draws_the_classes_and_their_legend(qtbot):
    from tflite_viewer.ui.debugger.outputs_dock import OutputsDock
    model = load_model(model_path("mobilenet_v1_0.25_224_quant.tflite"))
    out = model.subgraphs[0].outputs[0]
    labels = model.read_associated_file("labels.txt").decode().splitlines()
    scores = np.zeros((1, 16, 16, len(labels)), F32)
    scores[0, :, :8, 3] = 1.0
    scores[0, :, 8:, 0] = 1.0
    dock = OutputsDock()
    qtbot.addWidget(dock)
    dock.show_outputs(model, 0, [("segmentation", out, scores)], {})
    assert "segmentation map" in dock.texts[0] and "2 classes present" in dock.texts[0]
    legend = dock.legends[0]
    for c in (0, 3):
        r, g, b = label_colours(len(labels))[c].tolist()
        assert f"rgb({r},{g},{b})" in legend and labels[c].strip() in legend
    assert "50.0%" in legend
    pictures = [w for w in dock.body.findChildren(type(dock.empty)) if w.pixmap() and
                not w.pixmap().isNull()]
    image = pictures[0].pixmap().toImage()
    left = image.pixelColor(10, image.height() // 2)
    right = image.pixelColor(image.width() - 10, image.height() // 2)
    assert (left.red(), left.green(), left.blue()) == tuple(label_colours(len(labels))[3].tolist())
    assert (right.red(), right.green(), right.blue()) == (0, 0, 0)


def test_item12_profile_sorts_where_its_arrow_is_and_colour_by_time_has_a_legend(
        qtbot, window, failing_excepthook):
    assert window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    dbg = window.debugger
    _step(qtbot, window)
    dbg.profile_dock.show()
    dbg.profile_dock.raise_()
    stop = _step(qtbot, window, Qt.Key.Key_F5)
    assert stop.state == "finished"
    panel = dbg.profile_panel
    assert panel.sorted_by() == ("ms", Qt.SortOrder.DescendingOrder)
    ms = [float(panel.ops.item(r, 3).text()) for r in range(panel.ops.rowCount())]
    assert ms == sorted(ms, reverse=True) and len(ms) == 65
    # the user's column stays the sort column at the next stop
    panel.ops.horizontalHeader().setSortIndicator(1, Qt.SortOrder.AscendingOrder)
    _step(qtbot, window, Qt.Key.Key_F5)
    assert panel.sorted_by() == ("op", Qt.SortOrder.AscendingOrder)
    ops = [int(panel.ops.item(r, 1).text()) for r in range(panel.ops.rowCount())]
    assert ops == sorted(ops)
    # colour by time: the canvas says what the colours mean, up to the slowest op's time
    panel.heat.setChecked(True)
    strip = window.canvas.strip  # the legend, in its strip under the canvas
    assert strip.isVisible() and "Op time" in strip.legend.title
    slowest = max(dbg.last_stop.op_times.values())
    assert strip.legend.high == f"{slowest * 1e3:.3g} ms" and strip.legend.low == "0 ms"
    assert window.overlay_selector.currentData() == "time" and len(window.overlays.marks.colours)
    panel.heat.setChecked(False)
    assert not strip.isVisible() and window.overlays.item is None


def test_item13_the_status_after_a_finished_run_and_after_stop(qtbot, window, failing_excepthook):
    assert window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    dbg = window.debugger
    dbg.toggle_breakpoint(0, 9)
    stop = _step(qtbot, window, Qt.Key.Key_F5)
    assert stop.reason == "breakpoint"
    assert "breakpoint at subgraph 0 op 9 (ADD)" in window.statusBar().currentMessage()
    stop = _step(qtbot, window, Qt.Key.Key_F5)
    assert stop.state == "finished"
    assert "breakpoint" not in window.statusBar().currentMessage()  # it no longer holds
    assert dbg.state_label.text().startswith("Debug: finished")
    _step(qtbot, window, Qt.Key.Key_F5)  # paused at the breakpoint again
    stop = _step(qtbot, window, Qt.Key.Key_F5, Qt.KeyboardModifier.ShiftModifier)  # Stop
    assert stop.state == "stopped"
    assert dbg.state_label.text() == "Debug: stopped"  # not "stopped - 0 ops run"


def test_item13_step_out_of_an_if_branch_that_ends_the_run_shows_the_calling_graph(
        qtbot, window, failing_excepthook):
    assert window.open_path(model_path("control_flow.tflite"), wait=True)
    dbg = window.debugger
    dbg.set_inputs({"serving_default_x:0": np.linspace(-1, 1, 4).astype(F32),
                    "serving_default_n:0": np.int32(2)})
    if_op = next(k for k, op in enumerate(window.model.subgraphs[0].operators) if op.name == "IF")
    assert if_op == len(window.model.subgraphs[0].operators) - 1  # the run ends with it
    dbg.run_to(0, if_op)
    wait_stop(qtbot, dbg, 0)
    stop = _step(qtbot, window, Qt.Key.Key_F11)  # into the branch the IF takes
    branch = stop.position[-1][0]
    assert branch != 0 and window.subgraph == branch
    stop = _step(qtbot, window, Qt.Key.Key_F11, Qt.KeyboardModifier.ShiftModifier)
    assert stop.state == "finished" or stop.position[-1][0] == 0
    assert window.subgraph == 0 and window.graph_scene.data.subgraph == 0


def test_item15_waiting_for_a_snapshot_that_already_came_returns_at_once(qtbot, window):
    from tflite_viewer.ui.debugger.screenshot import wait_for_snapshot, wait_until
    assert window.open_path(model_path("sine_float.tflite"), wait=True)
    dbg = window.debugger
    stop = _step(qtbot, window)
    _step(qtbot, window)
    key = (0, window.model.subgraphs[0].operators[0].outputs[0])
    dbg.ws.debug.snapshots.pop(key, None)
    dbg._send("snapshots", [key])
    time.sleep(0.5)  # the worker answers now, before any wait begins (the lost quit)
    started = time.monotonic()
    assert wait_for_snapshot(window, *key, timeout_ms=30_000)
    assert time.monotonic() - started < 10  # returned on the answer, not the timeout
    assert key in dbg.snapshots and stop.state == "paused"
    assert not wait_until(lambda: False, (dbg.snapshotsReceived,), 50)  # a timeout says so


@pytest.mark.parametrize("name", ["sine_float.tflite"])
def test_item15_screenshot_run_to_still_pauses_and_selects(tmp_path, name):
    from tflite_viewer import cli
    out = tmp_path / "paused.png"
    started = time.monotonic()
    assert cli.main([str(model_path(name)), "--screenshot", str(out), "--run-to", "2",
                     "--select", "op:2"]) == 0
    assert out.stat().st_size > 10_000
    assert time.monotonic() - started < 60  # a hang guard, not a timing
