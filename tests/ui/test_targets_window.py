"""Issue 31 in the window: the Targets dock's picker, the canvas overlay (ops coloured by
verdict, a delegate's partitions as dashed groups with their tags), the verdicts in
Problems (issue 41: as information under the target, only while its overlay is on), the
changes applied as edits, and the window's ``--target`` screenshot.  What
the window shows is compared with `targets.analyze` of the same model (itself checked
against LiteRT and TFLite Micro in tests/targets)."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.targets import cases
from tflite_viewer.model import load_model
from tflite_viewer.targets import analyze
from tflite_viewer.targets import overlay as target_overlay
from tflite_viewer.ui.state.launch import Launch
from tflite_viewer.ui.state.overlays import NONE
from tflite_viewer.ui.state.problems import model_problems
from tflite_viewer.ui.state.targets import op_rows, targets_state

from .conftest import model_path
from .workspace_checks import failing_excepthook  # noqa: F401 - a fixture

DILATED = model_path("small_cnn_dilated_float.tflite")
TIMEOUT = 20_000


def pick(qtbot, window, target: str):
    """Pick ``target`` in the Targets dock (brought forward) and wait for its answer."""
    panel = window.panel("targets")
    window.dock("targets").show()
    window.dock("targets").raise_()
    panel.set_target(target)
    qtbot.waitUntil(lambda: panel.result is not None, timeout=TIMEOUT)
    QApplication.processEvents()
    return panel.result


def target_rows(window) -> list:
    """The target's verdicts Problems lists (apart from the model's problems)."""
    notes = window.problems_panel.notes
    return list(notes.findings) if notes is not None else []


def verdicts(window) -> dict[int, str]:
    """Op -> the verdict its colour on the canvas says."""
    by_colour = {c: v for v, c in target_overlay.VERDICT_COLOURS.items()}
    return {k: by_colour[c] for k, c in window.overlays.marks.colours.items()}


def test_xnnpack_colours_the_canvas_groups_partitions_and_fills_problems(
        qtbot, window, failing_excepthook):
    assert window.open_path(DILATED, wait=True)
    panel, overlay = window.panel("targets"), window.overlays
    assert panel.target == "" and overlay.item is None  # Off until picked: nothing computed
    assert targets_state(window.workspace).report is None
    result = pick(qtbot, window, "xnnpack")
    expected = analyze(load_model(DILATED)).results["xnnpack"]
    assert result.summary() == expected.summary()
    assert [p.ops for p in result.partitions] == [p.ops for p in expected.partitions]
    # the dock lists what falls back, with the reasons; its summary names the partitions
    assert panel.rows() == op_rows(expected)
    assert [r.verdict for r in panel.rows()] == ["falls back"] * 6
    assert "4 partition(s)" in panel.summary.text()
    panel.every.setChecked(True)
    assert len(panel.rows()) == 13
    assert {r.partition_label for r in panel.rows() if r.verdict == "runs"} == \
        {"P0", "P1", "P2", "P3"}
    # the overlay: every op marked by its verdict, partition ops framed in its colour
    data = window.graph_scene.data
    assert window.overlay_selector.currentData() == "targets:xnnpack"  # the toolbar says so
    assert verdicts(window) == {k: m.verdict for k, m in target_overlay.marks(expected, 0).items()}
    assert overlay.item is not None and overlay.item.scene() is window.graph_scene
    assert sorted(overlay.item.tags.values()) == ["P0", "P1", "P2", "P3"]
    for i, p in enumerate(expected.partitions):
        assert overlay.item.tags[data.op_node[p.ops[0]]] == f"P{i}"
        colours = {overlay.item.groups[data.op_node[k]] for k in p.ops}
        assert colours == {target_overlay.GROUP_COLOURS[i]}
    # the legend in its strip under the canvas, never over it
    strip = window.canvas.strip
    assert strip.isVisibleTo(window) and strip.parent() is not window.view
    assert "7 run, 6 fall back" in strip.text()
    # Problems: the verdicts are the target's, not the model's: information, under its
    # name, one per operator left to the CPU with the reason; the model's count is 0
    rows = target_rows(window)
    assert [(f.severity, f.operator) for f in rows] == [("info", o.index) for o in expected.ops
                                                        if o.verdict != "runs"]
    assert "XNNPACK" in window.problems_panel.notes.title
    assert window.problems_panel.problem_count() == len(model_problems(window.workspace))
    assert not window.problems_dock.isHidden()
    # a row selects its operator on the canvas
    panel.every.setChecked(False)
    item = panel.table.topLevelItem(0)
    panel.table.itemClicked.emit(item, 0)
    assert window.selection == ("op", panel.rows()[0].index)
    # Off takes the colouring and the Problems entries away; the report stays computed
    panel.set_target("")
    assert overlay.item is None and not strip.isVisibleTo(window)
    assert target_rows(window) == [] and panel.rows() == []
    assert targets_state(window.workspace).report is not None
    assert window.overlay_selector.currentData() == NONE


def test_closing_the_dock_or_resetting_the_layout_turns_the_verdicts_off(qtbot, window):
    """Issue 41, item 1: the overlay went with its dock's ×, View > Reset Layout never
    took it away, and its verdicts stayed in Problems as errors."""
    assert window.open_path(DILATED, wait=True)
    pick(qtbot, window, "tflm")  # 3 operators it does not run
    assert window.overlays.item is not None and len(target_rows(window)) == 3
    window.dock("targets").close()  # its ×
    qtbot.waitUntil(lambda: window.overlay_choice.key == NONE, timeout=2000)
    assert window.overlays.item is None and not window.canvas.strip.isVisibleTo(window)
    assert target_rows(window) == []
    # chosen again from the toolbar: the dock comes back with that target
    window.overlay_choice.choose("targets:xnnpack")
    assert not window.dock("targets").isHidden() and window.panel("targets").target == "xnnpack"
    qtbot.waitUntil(lambda: window.overlays.item is not None, timeout=TIMEOUT)
    window.reset_layout()
    QApplication.processEvents()
    assert window.overlay_choice.key == NONE and window.overlays.item is None
    assert window.dock("targets").isHidden() and target_rows(window) == []


def test_the_picked_target_is_remembered_and_follows_another_model(qtbot, window, settings,
                                                                   failing_excepthook):
    assert window.open_path(DILATED, wait=True)
    pick(qtbot, window, "tflm")
    assert settings.value("targets/target") == "tflm"
    first = window.panel("targets").result
    assert window.open_path(model_path("sine_float.tflite"), wait=True)
    panel = window.panel("targets")
    qtbot.waitUntil(lambda: panel.result is not None, timeout=TIMEOUT)
    # sine's own answer, never the first model's: its report is of the model now open
    assert panel.result is not first
    assert targets_state(window.workspace).report.facts.model is window.model
    assert set(verdicts(window)) == {0, 1, 2}
    assert panel.rows() == [] and "Every operator runs" in panel.table.topLevelItem(0).text(0)
    # a new window starts with the target the user left picked
    from tflite_viewer.ui.errors import ErrorReporter
    from tflite_viewer.ui.main_window import MainWindow
    second = MainWindow(settings=settings, errors=ErrorReporter(interactive=False))
    qtbot.addWidget(second)
    assert second.panel("targets").target == "tflm"


def test_the_changes_are_edits_tflm_runs_every_operator_after_them_and_undo_restores(
        qtbot, window, private_copy, failing_excepthook):
    assert window.open_path(private_copy(DILATED.name), wait=True)
    panel = window.panel("targets")
    result = pick(qtbot, window, "tflm")
    assert result.summary()["refused"] == 2  # (the Flatten's RESHAPE runs right on TFLM)
    # with no operator selected, the model's changes: both made by the editor
    texts = panel.fix_texts()
    assert [edit for _, edit in texts] == ["Update 2 stored shapes to the computed ones",
                                           "Set shape of subgraphs[0].tensors[0] to [1, 32, 32, 3]"]
    assert panel.apply_button.isEnabled()
    panel.apply_selected()  # the stored shapes
    qtbot.waitUntil(lambda: panel.result is not None and panel.result is not result,
                    timeout=TIMEOUT)
    assert panel.result.summary()["refused"] == 0 and panel.rows() == []
    assert [edit for _, edit in panel.fix_texts()][-1].startswith("Set shape of")
    panel.fixes.setCurrentItem(panel.fixes.topLevelItem(panel.fixes.topLevelItemCount() - 1))
    second = panel.result
    panel.apply_selected()
    qtbot.waitUntil(lambda: panel.result is not None and panel.result is not second,
                    timeout=TIMEOUT)
    assert panel.result.summary()["refused"] == 0
    assert window.undo_group.activeStack().count() == 2
    assert target_rows(window) == []
    assert verdicts(window) and set(verdicts(window).values()) == {"runs"}
    window.undo()
    window.undo()
    qtbot.waitUntil(lambda: panel.result is not None and panel.result.summary()["refused"] == 2,
                    timeout=TIMEOUT)
    assert len(target_rows(window)) == 3  # the model-wide line and the two operators


def test_splitting_a_fused_tanh_from_the_dock_lets_xnnpack_take_both(
        qtbot, window, tmp_path, failing_excepthook):
    path = tmp_path / "conv_tanh.tflite"
    path.write_bytes(cases.case("CONV_2D-f32-TANH"))
    assert window.open_path(path, wait=True)
    panel = window.panel("targets")
    result = pick(qtbot, window, "xnnpack")
    assert result.summary()["falls_back"] == 1 and not result.partitions
    assert panel.select_row(0, 0)
    texts = panel.fix_texts()
    assert texts[0][1].startswith("Split") and "split the fused TANH" in texts[0][0]
    assert texts[1][0].startswith("or clear the fused TANH")
    panel.fixes.setCurrentItem(panel.fixes.topLevelItem(0))
    panel.apply_selected()
    qtbot.waitUntil(lambda: panel.result is not None and panel.result is not result,
                    timeout=TIMEOUT)
    assert [o.op for o in panel.result.ops] == ["CONV_2D", "TANH"]
    assert panel.result.summary()["runs"] == 2 and len(panel.result.partitions) == 1
    assert list(window.overlays.marks.groups.values()) == [target_overlay.GROUP_COLOURS[0]] * 2


def test_litert_at_an_old_runtime_refuses_what_it_lacks(qtbot, window, failing_excepthook):
    assert window.open_path(DILATED, wait=True)
    panel = window.panel("targets")
    result = pick(qtbot, window, "litert")
    assert result.summary()["refused"] == 0 and panel.runtime.isEnabled()
    panel.runtime.setCurrentIndex(panel.runtime.findData("1.5.0"))
    qtbot.waitUntil(lambda: panel.result is not None and panel.result is not result,
                    timeout=TIMEOUT)
    old = analyze(load_model(DILATED), ["litert"], runtime="1.5.0").results["litert"]
    assert panel.result.summary() == old.summary() and old.summary()["refused"] > 0
    assert "at runtime 1.5.0" in panel.summary.text()
    assert [(f.severity, f.operator) for f in target_rows(window)] == [
        ("info", o.index) for o in old.ops if o.verdict == "refused"]
    panel.set_target("gpu")
    assert not panel.runtime.isEnabled()


def test_target_screenshot(tmp_path):
    from tflite_viewer.ui.app import take_screenshot
    out = tmp_path / "xnnpack.png"
    assert take_screenshot(Launch(DILATED, screenshot=out, target="xnnpack")) == 0
    assert out.stat().st_size > 10_000
    with pytest.raises(ValueError, match="--target"):
        take_screenshot(Launch(DILATED, screenshot=tmp_path / "x.png", target="npu"))


def test_view_menu_toggles_the_dock(qtbot, window):
    toggle = window.dock("targets").toggleViewAction()
    assert toggle.text() == "&Targets" and toggle.shortcut().toString() == "Ctrl+Shift+T"
    assert window.dock("targets").isHidden()
    toggle.trigger()
    assert not window.dock("targets").isHidden()
    assert window.dockWidgetArea(window.dock("targets")) == Qt.DockWidgetArea.BottomDockWidgetArea


def test_the_state_is_qt_free_per_workspace_and_dropped_by_an_edit():
    import subprocess
    import sys

    from tflite_viewer.edit import ModelDocument, RenameTensor
    from tflite_viewer.ui.state.problems import target_notes
    from tflite_viewer.ui.state.targets import needs_report, result_of
    from tflite_viewer.ui.state.workspace import Workspace

    code = ("import sys, tflite_viewer.ui.state.targets; "
            "print(sorted(m for m in sys.modules if m.startswith('PySide6')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    model = load_model(DILATED)
    ws = Workspace(model, DILATED)
    state = targets_state(ws)
    assert needs_report(state, None) and result_of(ws, "xnnpack") is None
    state.report, state.runtime = analyze(model), None
    assert not needs_report(state, None) and needs_report(state, "2.3.0")
    assert result_of(ws, "") is None and result_of(ws, "gpu") is state.report.results["gpu"]
    notes = target_notes(ws, "tflm")
    # the model-wide failure first, then each operator; info rows tagged with the target
    assert [f.operator for f in notes.findings] == [None, 1, 2]
    assert all(f.severity == "info" and f.target == "tflm" and not f.message.startswith("tflm")
               for f in notes.findings)
    assert notes.title.startswith("Target TFLite Micro: 2 operators do not run there")
    assert target_notes(ws, "") is None
    doc = ModelDocument(model)
    doc.apply(RenameTensor(0, 0, "renamed"))
    edited = load_model(doc.to_bytes())
    ws.replace_model(edited)
    assert targets_state(ws).report is None and target_notes(ws, "tflm") is None
