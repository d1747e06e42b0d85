"""What a new user trips over in the window (issue 16): focus after an edit, application-wide
Undo/Redo, stale shapes after shape-changing edits, the unsaved-changes prompt on Open, IF
branches, and the wording and display details.  Dialogs are monkeypatched; nothing blocks."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from .conftest import model_path

DW = 2  # DEPTHWISE_CONV_2D in small_cnn_dilated_float


def focus(qtbot, window, widget) -> None:
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    widget.setFocus(Qt.FocusReason.MouseFocusReason)
    qtbot.waitUntil(lambda: QApplication.focusWidget() is not None, timeout=2000)


def type_into(qtbot, spin, text: str) -> None:
    """Select the spin box's text, type ``text`` and press Enter, as a user does."""
    line = spin.lineEdit()
    line.selectAll()
    qtbot.keyClicks(line, text)
    qtbot.keyClick(line, Qt.Key.Key_Return)


def test_focus_stays_in_the_edited_field_and_ctrl_z_undoes_from_there(window, qtbot, private_copy):
    assert window.open_path(private_copy(), wait=True)
    window.select_op(0)
    panel = window.properties_panel
    stride = panel.editor("option:stride_w")
    old = window.model.subgraphs[0].operators[0].builtin_options["stride_w"]
    focus(qtbot, window, stride)
    assert stride.hasFocus() or stride.lineEdit().hasFocus()

    type_into(qtbot, stride, str(old + 1))

    assert window.model.subgraphs[0].operators[0].builtin_options["stride_w"] == old + 1
    fresh = panel.editor("option:stride_w")
    focused = QApplication.focusWidget()
    assert focused in (fresh, fresh.lineEdit()), f"focus went to {focused!r}, not the stride editor"
    assert panel.editor("version").lineEdit().selectedText() == ""
    # Ctrl+Z from the field the user was in undoes the model edit
    qtbot.keyClick(focused, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.model.subgraphs[0].operators[0].builtin_options["stride_w"] == old
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Z,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert window.model.subgraphs[0].operators[0].builtin_options["stride_w"] == old + 1


def test_undo_redo_shortcuts_work_from_the_tensor_panel_and_a_floating_dock(window, qtbot, private_copy):
    assert window.open_path(private_copy(), wait=True)
    window.select_op(DW)
    window.properties_panel.set_option("dilation_w_factor", 2)
    assert window.actions.undo.shortcutContext() == Qt.ShortcutContext.ApplicationShortcut
    assert window.actions.redo.shortcutContext() == Qt.ShortcutContext.ApplicationShortcut
    window.tensor_dock.setFloating(True)
    window.tensor_dock.show()
    focus(qtbot, window.tensor_dock, window.tensor_panel.info)
    qtbot.keyClick(window.tensor_panel.info, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.model.subgraphs[0].operators[DW].builtin_options["dilation_w_factor"] == 1


def test_open_asks_about_unsaved_changes_once(window, qtbot, private_copy, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    assert window.open_path(private_copy(), wait=True)
    window.select_op(DW)
    window.properties_panel.set_option("dilation_w_factor", 2)
    assert window.is_modified
    window.ask_before_discarding = True
    questions = []

    def question(parent, title, *args, **kwargs):
        questions.append(title)
        return QMessageBox.StandardButton.Discard
    monkeypatch.setattr(QMessageBox, "question", staticmethod(question))
    other = model_path("sine_float.tflite")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(other), "")))
    with qtbot.waitSignal(window.modelOpened, timeout=10000):
        window.files.open_dialog()
    assert questions == ["Unsaved changes"]
    assert window.path == other and not window.is_modified


def _if_op(window):
    return next(op for op in window.model.subgraphs[0].operators if op.name == "IF")


def test_if_opens_then_with_else_one_click_beside_the_trail(window, qtbot):
    window.open_path(model_path("control_flow.tflite"), wait=True)
    if_op = _if_op(window)
    calls = if_op.called_subgraphs
    window.open_called(if_op.index, wait=True)  # what a double-click does
    assert window.subgraph == calls["then"]
    names = {role: window.model.subgraphs[i].display_name for role, i in calls.items()}
    buttons = window.nav.sibling_buttons
    # the sibling's role on the button (short: the trail stays whole), its subgraph in the tip
    assert [b.text() for b in buttons] == ["else"]
    assert buttons[0].toolTip().startswith(f"else \u2192 {names['else']}")
    with qtbot.waitSignal(window.subgraphShown, timeout=10_000) as shown:
        qtbot.mouseClick(buttons[0], Qt.MouseButton.LeftButton)
    assert shown.args == [calls["else"]]
    assert [c.label for c in window.trail] == [
        window.model.subgraphs[0].display_name, f"IF #{if_op.index} else \u2192 {names['else']}"]
    assert [b.text() for b in window.nav.sibling_buttons] == ["then"]


def test_else_link_in_properties_from_the_then_view_builds_the_right_trail(window, qtbot):
    window.open_path(model_path("control_flow.tflite"), wait=True)
    if_op = _if_op(window)
    calls = if_op.called_subgraphs
    window.open_called(if_op.index, "then", wait=True)
    assert window.properties_panel.operator.index == if_op.index  # the IF stays in Properties
    else_row = next(r for r in window.properties_panel.rows() if r.section == "Calls" and r.key == "else")
    with qtbot.waitSignal(window.subgraphShown, timeout=10_000):
        window.properties_panel._follow(else_row.link)  # a click on the link
    main = window.model.subgraphs[0].display_name
    cond_false = window.model.subgraphs[calls["else"]].display_name
    # main > IF #3 else > cond_false, not main > IF #3 then > cond_true > cond_false
    assert [c.subgraph for c in window.trail] == [0, calls["else"]]
    assert [c.label for c in window.trail] == [main, f"IF #{if_op.index} else \u2192 {cond_false}"]


def test_a_stride_edit_shows_computed_shapes_flags_stale_ones_and_updates_them_in_one_step(window):
    assert window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    window.select_op(0)
    out = window.model.subgraphs[0].operators[0].outputs[0]
    assert window.problems_panel.count() == 0 and not window.problems_panel.shapes_bar.isVisibleTo(window)
    window.properties_panel.editor("option:stride_w").setValue(1)  # 96 -> 48 becomes 96 -> 96 wide

    assert window.model.subgraphs[0].operators[0].builtin_options["stride_w"] == 1
    assert tuple(window.model.subgraphs[0].tensors[out].shape) == (1, 48, 48, 16)  # stored: stale
    # the canvas shows the computed shape (SAME padding: ceil(96 / 2) x ceil(96 / 1))
    labels = [text for _, _, text, t in window.graph_scene.data.edge_labels if t == out]
    assert labels == ["?x48x96x16 float32 \u2260 stored ?x48x48x16"]  # ?: the dynamic batch
    # Problems lists every stale tensor and offers the update
    stale = [f for f in window.problems_panel.findings if f.where.endswith(".shape")]
    assert stale and stale[0].tensor == out and "[1, 48, 96, 16]" in stale[0].message
    assert window.problems_panel.shapes_bar.isVisibleTo(window)
    assert window.actions.update_shapes.isEnabled()
    window.select_tensor(out)
    rows = {r.key: r.value for r in window.tensor_panel.rows()}
    assert rows["computed shape"].startswith("[1, 48, 96, 16]")

    steps = window.undo_stack.count()
    window.problems_panel.update_shapes_button.click()
    assert window.undo_stack.count() == steps + 1  # one undoable command
    assert tuple(window.model.subgraphs[0].tensors[out].shape) == (1, 48, 96, 16)
    assert not [f for f in window.problems_panel.findings if f.where.endswith(".shape")]
    assert not window.problems_panel.shapes_bar.isVisibleTo(window)
    labels = [text for _, _, text, t in window.graph_scene.data.edge_labels if t == out]
    assert labels == ["?x48x96x16 float32"]
    window.undo()
    assert tuple(window.model.subgraphs[0].tensors[out].shape) == (1, 48, 48, 16)
    assert window.problems_panel.shapes_bar.isVisibleTo(window)


def test_scalar_shape_reads_as_scalar(window):
    from tflite_viewer.ui.panels.tensor_panel import shape_text

    assert shape_text(()) == "[] (scalar)" and shape_text((1, 2)) == "[1, 2]"
    assert window.open_path(model_path("control_flow.tflite"), wait=True)
    sg = window.model.subgraphs[0]
    scalar = next(t.index for t in sg.tensors if tuple(t.shape) == ())
    window.select_tensor(scalar)
    editor = window.tensor_panel.editor("shape")
    assert editor.text() == "" and editor.placeholderText() == "[] (scalar)"
    window.tensor_panel.editable = False
    window.tensor_panel.show_tensor(sg.tensors[scalar])
    assert {r.key: r.value for r in window.tensor_panel.rows()}["shape"] == "[] (scalar)"


def test_find_bar_mode_whole_name_then_contains_is_remembered(window, settings):
    assert window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    names = [op.name for op in window.model.subgraphs[0].operators]
    window.find_bar.open_bar()
    window.find_bar.edit.setText("CONV_2D")
    assert {window.model.subgraphs[0].operators[m.index].name for m in window.find_bar.matches
            if m.kind == "op"} == {"CONV_2D"}
    window.find_bar.set_mode("contains")
    assert sum(m.kind == "op" for m in window.find_bar.matches) == sum("CONV_2D" in n for n in names)
    assert settings.value("find/mode") == "contains"
    window.find_bar.set_mode("regex")
    window.find_bar.edit.setText("CONV_2D(")
    assert window.find_bar.matches == [] and window.find_bar.status.text() == "bad pattern"


def test_values_tab_explains_activations_and_sizes_columns_to_their_numbers(window, settings):
    assert window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    sg = window.model.subgraphs[0]
    pane = window.tensor_panel.values_pane
    window.select_tensor(sg.operators[0].outputs[0])  # an activation
    assert pane.message.isVisibleTo(pane) and "no values in the model file" in pane.message.text()
    assert "debugger" in pane.message.text()
    weights = next(t for t in sg.operators[0].inputs if sg.tensors[t].is_constant and sg.tensors[t].rank == 4)
    window.select_tensor(weights)
    assert not pane.message.isVisibleTo(pane)
    view, model = pane.view, pane.values
    # columns are measured when the tab is shown (and the ones scrolled into view)
    window.tensor_panel.tabs.setCurrentWidget(pane)
    metrics = view.fontMetrics()
    for c in range(min(model.columnCount(), 4)):
        widest = max(metrics.horizontalAdvance(model.data(model.index(r, c))) for r in range(min(model.rowCount(), 20)))
        assert view.columnWidth(c) >= widest, "no number is cut off"
    value = float(model.value(0, 0))
    pane.digits.setValue(3)
    text = model.data(model.index(0, 0))
    significant = text.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    assert float(text) == pytest.approx(value, rel=5e-3) and len(significant) <= 3
    assert int(settings.value("values/digits")) == 3
    # run-time values handed over (what the debugger does) replace the explanation
    window.select_tensor(sg.operators[0].outputs[0])
    import numpy as np
    window.tensor_panel.show_values(np.ones((1, 2, 2, 3), np.float32))
    assert not pane.message.isVisibleTo(pane) and model.rowCount() == 2


def test_fit_graph_keeps_labels_readable_on_a_long_chain(window):
    from tflite_viewer.ui import style
    from tflite_viewer.ui.graph_view import READABLE_ZOOM

    assert window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    window.view.fit_all()
    assert window.view.zoom() < style.LOD_TEXT  # fitted whole: unlabeled bars
    window.fit_graph()
    assert window.view.zoom() == pytest.approx(READABLE_ZOOM) and window.view.zoom() > style.LOD_TEXT
    window.minimap._follow()
    assert window.minimap.isVisible(), "the overview map shows the rest"
    # a small graph still fits whole
    assert window.open_path(model_path("sine_float.tflite"), wait=True)
    window.fit_graph()
    visible = window.view.mapToScene(window.view.viewport().rect()).boundingRect()
    assert visible.contains(window.graph_scene.sceneRect().adjusted(1, 1, -1, -1))


def test_a_file_with_stale_shapes_is_flagged_on_open_in_the_background(window, qtbot, tmp_path):
    from tflite_viewer.edit import ModelDocument, SetOption

    doc = ModelDocument(model_path("mobilenet_v2_float.tflite"))
    doc.apply(SetOption(0, 0, "stride_w", 1))  # what `tflite-viewer edit --set 0:0.stride_w=1` writes
    stale = doc.save(tmp_path / "stride.tflite")
    with qtbot.waitSignal(window.modelOpened, timeout=20_000):
        window.open_path(stale)
    out = window.model.subgraphs[0].operators[0].outputs[0]
    qtbot.waitUntil(lambda: window.problems_panel.shapes_bar.isVisibleTo(window), timeout=20_000)
    assert not window.progress.isVisibleTo(window)  # the check never shows as "busy"
    labels = [text for _, _, text, t in window.graph_scene.data.edge_labels if t == out]
    assert labels == ["?x48x96x16 float32 \u2260 stored ?x48x48x16"]
    assert not window.is_modified
    window.shapes.update_stored_shapes()
    assert tuple(window.model.subgraphs[0].tensors[out].shape) == (1, 48, 96, 16)


def test_a_large_model_is_shape_checked_in_the_background_after_an_edit(window, qtbot, monkeypatch):
    from tflite_viewer.ui import window_shapes

    monkeypatch.setattr(window_shapes, "CHECK_AT_ONCE_MAX_OPS", 10)  # mobilenet_v2 counts as large
    assert window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    out = window.model.subgraphs[0].operators[0].outputs[0]
    window.select_op(0)
    window.properties_panel.set_option("stride_w", 1)
    edited = window.model
    assert window.shape_check is None  # the edit is shown at once, checked in a worker
    qtbot.waitUntil(lambda: window.shape_check is not None, timeout=20_000)
    assert window.model is edited
    labels = [text for _, _, text, t in window.graph_scene.data.edge_labels if t == out]
    assert labels == ["?x48x96x16 float32 \u2260 stored ?x48x48x16"]
    assert window.problems_panel.shapes_bar.isVisibleTo(window)
    assert window.selection == ("op", 0)
