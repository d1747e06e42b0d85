"""The Memory dock in the window, driven by its shortcut and clicks: TFLite Micro's head of
the open model (the figure TFLM prints), the peak, a click on the chart selecting the tensor
on the canvas, the canvas overlay, and no plan of another model or of the model before an
edit ever shown."""
from __future__ import annotations

from PySide6.QtCore import QPoint, Qt

from tflite_viewer import cli
from tflite_viewer.edit import RenameTensor
from tflite_viewer.ui.state.overlays import LIVE_BYTES, ramp

from .conftest import model_path
from .test_screenshot_render import _has_color, _pixels

PERSON = model_path("person_detect.tflite")


def _open_memory(qtbot, window, path=PERSON):
    assert window.open_path(path, wait=True)
    qtbot.keyClick(window, Qt.Key.Key_M,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: window.dock("memory").isVisible() and
                    window.panel("memory")._chart is not None, timeout=20_000)
    return window.panel("memory")


def _box_center(panel, box: int) -> QPoint:
    c, w = panel._chart, panel.chart
    x = (w._x(c.x0[box]) + w._x(c.x1[box] + 1)) / 2
    y = (w._y(c.y0[box]) + w._y(c.y1[box])) / 2
    return QPoint(round(x), round(y))


def test_the_dock_shows_tflm_head_and_the_peak(qtbot, window):
    panel = _open_memory(qtbot, window)
    # 55,296 bytes: what TFLM's RecordingMicroAllocator prints for person_detect
    assert "Arena head 55,296 bytes" in panel.summary.text()
    assert "peak at step 3: subgraph 0 operator 2 CONV_2D" in panel.summary.text()
    rows = [panel.peak.topLevelItem(i) for i in range(panel.peak.topLevelItemCount())]
    assert [(r.text(0), r.text(1).split()[1]) for r in rows] == [("36,864", "54"), ("18,432", "51")]


def test_a_click_on_a_box_selects_its_tensor_and_the_canvas_selection_is_outlined(qtbot, window):
    panel = _open_memory(qtbot, window)
    box = panel._chart.boxes_of_tensor(0, 54)[0]
    qtbot.mouseClick(panel.chart, Qt.MouseButton.LeftButton, pos=_box_center(panel, box))
    qtbot.waitUntil(lambda: window.selection == ("tensor", 54), timeout=5000)
    assert panel.chart.selected == [box]
    window.select_tensor(51)
    assert panel.chart.selected == panel._chart.boxes_of_tensor(0, 51)
    row = panel.peak.topLevelItem(1)  # the list selects too
    panel.peak.itemClicked.emit(row, 0)
    assert window.selection == ("tensor", 51)


def test_the_overlay_colours_operators_by_live_memory(qtbot, window):
    panel = _open_memory(qtbot, window)
    overlay = window.overlays
    panel.overlay.setChecked(True)  # the dock's checkbox: the toolbar's Colour by Memory
    assert window.overlay_selector.currentData() == "memory"
    assert overlay.item is not None and overlay.item.scene() is window.graph_scene
    # op 2 is the one at the peak: the whole arena live, the ramp's red
    assert overlay.marks.colours[2] == ramp(1.0, LIVE_BYTES)
    assert "TFLite Micro arena live at each operator" in window.canvas.strip.text()
    panel.overlay.setChecked(False)
    assert overlay.item is None and not window.canvas.strip.isVisible()
    panel.overlay.setChecked(True)
    window.dock("memory").close()  # its ×: the colours go with the dock
    qtbot.waitUntil(lambda: overlay.item is None, timeout=2000)
    assert window.overlay_selector.currentData() == ""


def test_another_model_and_an_edit_never_show_an_old_plan(qtbot, window):
    panel = _open_memory(qtbot, window)
    assert window.open_path(model_path("sine_float.tflite"), wait=True)
    qtbot.waitUntil(lambda: "Arena head 128 bytes" in panel.summary.text(), timeout=10_000)
    names = [panel.peak.topLevelItem(i).text(1) for i in range(panel.peak.topLevelItemCount())]
    assert names and not any("Mobilenet" in n for n in names)
    window.apply_edit(RenameTensor(0, 8, "renamed_by_edit"))
    qtbot.waitUntil(lambda: any("renamed_by_edit" in panel.peak.topLevelItem(i).text(1)
                                for i in range(panel.peak.topLevelItemCount())), timeout=10_000)


def test_litert_shows_the_arena_of_the_subgraph_on_the_canvas(qtbot, window):
    panel = _open_memory(qtbot, window, model_path("sine_float.tflite"))
    panel.target.setCurrentIndex(panel.target.findData("litert"))
    qtbot.waitUntil(lambda: "Subgraph arena" in panel.summary.text(), timeout=10_000)
    assert panel._chart.target == "litert" and panel._chart.height == 192


def test_screenshot_with_memory_draws_the_chart_and_the_overlay(tmp_path):
    out = tmp_path / "memory.png"
    assert cli.main([str(PERSON), "--screenshot", str(out), "--memory"]) == 0
    px = _pixels(out)
    assert _has_color(px, "#" + ramp(0.75, LIVE_BYTES)[3:], tolerance=3, at_least=20)  # the ramp
    assert _has_color(px, "#cf222e", tolerance=2, at_least=20)  # the peak line, its label


def test_the_summary_wraps_so_the_window_fits_a_laptop_screen(qtbot, window):
    """The summary names the head, the tail, the peak's step and operator on one line of
    well over 1,000 px: unwrapped, it held the window (Memory dock open) at 1,673 px, wider
    than the screen (seen on the 2.6 GB decoder).  Every dock, and the window, must fit."""
    panel = _open_memory(qtbot, window)
    line = panel.fontMetrics().horizontalAdvance(panel.summary.text())
    assert window.dock("memory").minimumSizeHint().width() < line  # the summary wraps
    from PySide6.QtWidgets import QDockWidget
    for dock in window.findChildren(QDockWidget):
        assert dock.minimumSizeHint().width() <= 600, dock.objectName()
    assert window.minimumSizeHint().width() <= 1280


def test_the_height_label_of_a_big_arena_is_whole(qtbot):
    """The chart's left margin is as wide as the arena height's label: a 1.4 GB arena's
    label was cut to "53.75 MiB" by a fixed margin."""
    import dataclasses

    from tflite_viewer.memory import plan_tflm
    from tflite_viewer.model import load_model
    from tflite_viewer.ui.state.memory import build_chart
    from tflite_viewer.ui.panels.memory_dock import MemoryChartWidget, _bytes

    big = dataclasses.replace(build_chart(plan_tflm(load_model(PERSON))), height=1_419_513_824)
    widget = MemoryChartWidget()
    qtbot.addWidget(widget)
    widget.resize(400, 200)
    widget.set_chart(big)
    label = _bytes(big.height)
    assert label == "1.32 GiB"
    assert widget._x(big.first_step) - 6 >= widget.fontMetrics().horizontalAdvance(label)
