"""Keeping the keyboard focus where the user was while panels are rebuilt after an edit.

Panels show a new model by deleting their editors and making new ones.  Deleting the
focused editor would hand the focus to the next widget in the tab chain (and select its
text: a spin box that then takes the next typed digit as an edit of its own).  So before a
rebuild the window notes which editor of which panel had the focus (by the editor's key,
``"option:stride_w"``) and its text cursor, parks the focus on the panel itself, and after
the rebuild gives it to the new editor of the same key, the cursor where it was.
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QLineEdit, QWidget


@dataclass
class FocusMemo:
    panel: QWidget
    key: str
    cursor: int | None


def _line_edit(widget: QWidget) -> QLineEdit | None:
    if isinstance(widget, QLineEdit):
        return widget
    if isinstance(widget, QAbstractSpinBox):
        return widget.lineEdit()
    return widget.findChild(QLineEdit) if widget is not None else None


def remember_focus(panels) -> FocusMemo | None:
    """Which panel editor has the focus (None when none has); parks the focus on its panel
    so deleting the editor does not move it along the tab chain."""
    focused = QApplication.focusWidget()
    if focused is None:
        return None
    for panel in panels:
        for key, editor in getattr(panel, "editors", {}).items():
            if editor is focused or editor.isAncestorOf(focused):
                line = _line_edit(focused)
                memo = FocusMemo(panel, key, line.cursorPosition() if line is not None else None)
                panel.setFocus(Qt.FocusReason.OtherFocusReason)
                return memo
    return None


def restore_focus(memo: FocusMemo | None) -> None:
    """Give the focus to the rebuilt editor ``memo`` names (its text not selected, the
    cursor where it was); with no such editor any more, the focus stays on the panel."""
    if memo is None:
        return
    editor = memo.panel.editors.get(memo.key)
    if editor is None or not editor.isVisibleTo(memo.panel):
        return
    editor.setFocus(Qt.FocusReason.OtherFocusReason)
    line = _line_edit(editor)
    if line is not None:
        line.deselect()
        if memo.cursor is not None:
            line.setCursorPosition(min(memo.cursor, len(line.text())))


_EDITORS = (QLineEdit, QAbstractSpinBox)
_SHORTCUT_OVERRIDE = QEvent.Type.ShortcutOverride


class UndoKeys(QObject):
    """Lets Ctrl+Z / Ctrl+Shift+Z / Ctrl+Y reach the model's Undo/Redo from a text field.

    A line edit (also inside a spin box) claims the undo keys for its own text undo even
    when it has nothing to undo, which would make the model's Undo dead while an editor
    has the focus (it keeps the focus after an edit).  Installed on the application, this
    filter lets the line edit keep the keys only while it has text to undo or redo.
    """

    def __init__(self, undo: QAction, redo: QAction, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._undo, self._redo = undo, redo

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        # every event of the application passes here: the cheap test first
        if not isinstance(obj, _EDITORS) or event.type() != _SHORTCUT_OVERRIDE:
            return False
        line = obj if isinstance(obj, QLineEdit) else obj.lineEdit()
        combo = QKeySequence(event.keyCombination())
        if combo in self._undo.shortcuts():
            return not line.isUndoAvailable()  # True: the field does not claim the key
        if combo in self._redo.shortcuts():
            return not line.isRedoAvailable()
        return False
