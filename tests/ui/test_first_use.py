"""What a new user trips over in the window (issue 16): focus after an edit, application-wide
Undo/Redo, stale shapes after shape-changing edits, the unsaved-changes prompt on Open, IF
branches, and the wording and display details.  Dialogs are monkeypatched; nothing blocks."""
from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from .conftest import model_path

DILATED = "small_cnn_dilated_float.tflite"
DW = 2  # DEPTHWISE_CONV_2D in small_cnn_dilated_float


@pytest.fixture
def private_copy(tmp_path):
    def make(name: str = DILATED):
        out = tmp_path / name
        shutil.copyfile(model_path(name), out)
        return out
    return make


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
    assert window.undo_action.shortcutContext() == Qt.ShortcutContext.ApplicationShortcut
    assert window.redo_action.shortcutContext() == Qt.ShortcutContext.ApplicationShortcut
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
        window.open_dialog()
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
    assert [b.text() for b in buttons] == [f"else \u2192 {names['else']}"]
    with qtbot.waitSignal(window.subgraphShown, timeout=10_000) as shown:
        qtbot.mouseClick(buttons[0], Qt.MouseButton.LeftButton)
    assert shown.args == [calls["else"]]
    assert [c.label for c in window.trail] == [
        window.model.subgraphs[0].display_name, f"IF #{if_op.index} else \u2192 {names['else']}"]
    assert [b.text() for b in window.nav.sibling_buttons] == [f"then \u2192 {names['then']}"]


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
