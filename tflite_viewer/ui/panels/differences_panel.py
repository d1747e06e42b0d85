"""The Differences dock: every difference between the open model (A) and the one it is
compared with (B), a summary over them, and a click that goes to the item.

A view of the open workspace's comparison (`state.diff.diff_state`): it keeps no rows of
its own beyond what it shows, and renders again when the hub says the comparison changed,
the model was edited or another model was opened.  Run Both runs the two models on the
window's choice of samples (the Quantization dock's, `state.samples`), which the dock
names before and after it runs.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
                               QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from ..state import diff as cmp
from ..state.docks import BOTTOM, DockSpec
from ..state.samples import SampleChoice

DOCK = DockSpec("differences", "Differences", BOTTOM, part="diff", overlay="diff")
COLOURS = {"+": QColor("#1a7f37"), "-": QColor("#cf222e"), "~": QColor("#9a6700")}
COLUMNS = ("", "where", "field", "change", "detail")


class DifferencesPanel(QWidget):
    """``targetActivated(Target)`` when a row is clicked; ``compareRequested`` asks for File >
    Compare With; ``numbersRequested`` for running both models."""

    targetActivated = Signal(object)
    compareRequested = Signal()
    numbersRequested = Signal()

    def __init__(self, hub=None, samples: SampleChoice | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: list[cmp.Row] = []
        self.samples = samples if samples is not None else SampleChoice()
        self.summary = QLabel("Compare the open model with another: File \u203a Compare With\u2026")
        self.summary.setWordWrap(True)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter differences")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._apply_filter)
        self.compare_button = QPushButton("Compare With\u2026")
        self.compare_button.clicked.connect(self.compareRequested)
        self.numbers_button = QPushButton("Run Both")
        self._numbers_tip()
        self.numbers_button.clicked.connect(self.numbersRequested)
        self.numbers_button.setEnabled(False)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setWordWrap(False)
        head = self.table.horizontalHeader()
        head.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        head.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        for c, w in ((1, 260), (2, 150), (3, 220)):
            self.table.setColumnWidth(c, w)
        self.table.itemSelectionChanged.connect(self._activated)
        self.table.cellClicked.connect(lambda r, _c: self._activate_row(r))
        top = QHBoxLayout()
        top.addWidget(self.filter, 1)
        top.addWidget(self.numbers_button)
        top.addWidget(self.compare_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        if hub is not None:
            from ..state.workspace import MODEL
            hub.subscribe(self.render, MODEL, cmp.TOPIC)

    # -- rendering -----------------------------------------------------------------------
    def _numbers_tip(self) -> str:
        """Run Both's inputs, on its tooltip (and returned for the summary)."""
        on = self.samples.describe()
        self.numbers_button.setToolTip(
            f"Run both models on {on}, the samples the Quantization dock analyses (chosen "
            "there), and compare every matched tensor; name the first op where they part")
        return on

    def render(self, ws) -> None:
        state = cmp.diff_state(ws)
        diff = state.diff
        self.numbers_button.setEnabled(diff is not None and not state.running)
        if not state.active:
            self._set_rows([])
            self.summary.setText("Compare the open model with another: File \u203a Compare "
                                 "With\u2026 (the float model and its quantized twin, two "
                                 "conversions, a model before and after an edit)")
            return
        if diff is None:
            self._set_rows([])
            self.summary.setText(state.status or "Comparing \u2026")
            return
        text = f"A: {diff.a_label}\nB: {diff.b_label}\n{cmp.summary(diff)}"
        if state.status:
            text += f"\n{state.status}"
        elif state.numeric is None:
            text += f"\nRun Both runs them on {self._numbers_tip()}."
        self.summary.setText(text)
        self._set_rows(cmp.rows(diff))

    def _set_rows(self, rows: list[cmp.Row]) -> None:
        self._rows = rows
        self.table.blockSignals(True)
        self.table.setRowCount(0)
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            cells = (row.sign, row.where, row.field, row.change, row.detail)
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c == 0:
                    item.setForeground(COLOURS[row.sign])
                    item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                item.setToolTip(row.difference.line())
                self.table.setItem(r, c, item)
        self.table.blockSignals(False)
        self._apply_filter(self.filter.text())

    def _apply_filter(self, text: str) -> None:
        words = text.lower().split()
        for r, row in enumerate(self._rows):
            line = row.difference.line().lower()
            self.table.setRowHidden(r, bool(words) and not all(w in line for w in words))

    # -- clicks --------------------------------------------------------------------------
    def _activated(self) -> None:
        sel = self.table.selectionModel().selectedRows()
        if sel:
            self._activate_row(sel[0].row())

    def _activate_row(self, r: int) -> None:
        if 0 <= r < len(self._rows) and self._rows[r].target is not None:
            self.targetActivated.emit(self._rows[r].target)

    def row_count(self) -> int:
        return len(self._rows)
