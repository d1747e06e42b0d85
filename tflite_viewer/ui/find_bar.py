"""The Find bar under the canvas (Ctrl+F; F3 / Shift+F3 for next / previous).

It only edits the query and steps through matches; `search.find` decides what matches and
the window decides how a match is selected and highlighted.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (QApplication, QComboBox, QHBoxLayout, QLabel, QLineEdit,
                               QToolButton, QWidget)

from .state.search import CONTAINS, REGEX, WORD, Match

MODE_LABELS = {WORD: "Whole name", CONTAINS: "Contains", REGEX: "Regex"}


class FindBar(QWidget):
    queryChanged = Signal(str)
    modeChanged = Signal(str)  # WORD, CONTAINS or REGEX
    currentChanged = Signal(object)  # the Match to select
    closed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.edit = QLineEdit()
        self.edit.setPlaceholderText("Find: op type (CONV_2D), #op index, t:tensor index, or tensor name")
        self.edit.setClearButtonEnabled(True)
        self.edit.textChanged.connect(self.queryChanged)
        self.edit.returnPressed.connect(self.next)
        self.mode_combo = QComboBox()
        for mode, label in MODE_LABELS.items():
            self.mode_combo.addItem(label, mode)
        self.mode_combo.setToolTip("Whole name: CONV_2D finds CONV_2D, not DEPTHWISE_CONV_2D; "
                                   "Contains: any part of a name; Regex: a regular expression")
        self.mode_combo.currentIndexChanged.connect(lambda _i: self.modeChanged.emit(self.mode))
        self.status = QLabel("")
        self.status.setMinimumWidth(90)
        prev_b, next_b, close_b = QToolButton(), QToolButton(), QToolButton()
        prev_b.setText("\u25b2")
        prev_b.setToolTip("Previous match (Shift+F3)")
        next_b.setText("\u25bc")
        next_b.setToolTip("Next match (F3)")
        close_b.setText("\u2715")
        close_b.setToolTip("Close (Esc)")
        prev_b.clicked.connect(self.previous)
        next_b.clicked.connect(self.next)
        close_b.clicked.connect(self.close_bar)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        layout.addWidget(QLabel("Find"))
        layout.addWidget(self.edit, 1)
        layout.addWidget(self.mode_combo)
        layout.addWidget(self.status)
        layout.addWidget(prev_b)
        layout.addWidget(next_b)
        layout.addWidget(close_b)
        self.matches: list[Match] = []
        self.current = -1
        #: the widget that gets the keyboard focus back when the bar closes (the canvas):
        #: hiding the focused bar would otherwise hand it to the next widget of the tab
        #: chain, an editor in a dock that then scrolls to its cursor
        self.return_focus: QWidget | None = None

    @property
    def mode(self) -> str:
        return self.mode_combo.currentData()

    def set_mode(self, mode: str) -> None:
        i = self.mode_combo.findData(mode)
        if i >= 0:
            self.mode_combo.setCurrentIndex(i)

    def set_problem(self, message: str) -> None:
        """The query cannot be searched (a bad regex): say why instead of a count."""
        self.matches, self.current = [], -1
        self.status.setText(message)
        self.status.setToolTip(message)

    def open_bar(self) -> None:
        self.show()
        self.edit.setFocus()
        self.edit.selectAll()

    def close_bar(self) -> None:
        if self.return_focus is not None and self.isAncestorOf(QApplication.focusWidget()):
            self.return_focus.setFocus(Qt.FocusReason.OtherFocusReason)
        self.hide()
        self.closed.emit()

    def set_matches(self, matches: list[Match]) -> None:
        self.matches = matches
        self.current = -1
        self._show_status()

    def next(self) -> None:
        self._step(+1)

    def previous(self) -> None:
        self._step(-1)

    def _step(self, d: int) -> None:
        if not self.matches:
            self._show_status()
            return
        self.current = (self.current + d) % len(self.matches) if self.current >= 0 else (0 if d > 0 else len(self.matches) - 1)
        self._show_status()
        self.currentChanged.emit(self.matches[self.current])

    def _show_status(self) -> None:
        if not self.edit.text().strip():
            self.status.setText("")
        elif not self.matches:
            self.status.setText("no matches")
        elif self.current < 0:
            self.status.setText(f"{len(self.matches)} matches")
        else:
            self.status.setText(f"{self.current + 1} of {len(self.matches)}")

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        if event.key() == Qt.Key.Key_Escape:
            self.close_bar()
            return
        super().keyPressEvent(event)
