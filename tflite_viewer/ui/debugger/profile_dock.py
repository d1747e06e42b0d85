"""The Profile dock: per-op time (sortable) and the cumulative time of each op type."""
from __future__ import annotations

from collections import defaultdict

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QSplitter, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)


class _Number(QTableWidgetItem):
    """A cell that sorts by its number, not its text."""

    def __init__(self, value: float, text: str) -> None:
        super().__init__(text)
        self.value = value
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other) -> bool:
        return self.value < getattr(other, "value", 0.0)


def _table(headers: list[str]) -> QTableWidget:
    t = QTableWidget(0, len(headers))
    t.setHorizontalHeaderLabels(headers)
    t.verticalHeader().hide()
    t.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    t.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
    return t


class ProfileDock(QWidget):
    """Fed with the stop's ``op_times`` ({(subgraph, op): seconds}) and op names."""

    opActivated = Signal(int, int)
    heatToggled = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops = _table(["subgraph", "op", "type", "ms", "%"])
        self.types = _table(["type", "ops", "ms", "%"])
        self.ops.cellDoubleClicked.connect(self._activated)
        self.heat = QCheckBox("Colour the canvas by time")
        self.heat.toggled.connect(self.heatToggled)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.ops)
        split.addWidget(self.types)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.heat)
        layout.addWidget(split, 1)

    def set_times(self, times: dict, names: dict) -> None:
        """``names``: (subgraph, op) -> op type."""
        total = sum(times.values()) or 1.0
        self.ops.setSortingEnabled(False)
        self.ops.setRowCount(len(times))
        by_type: dict[str, list[float]] = defaultdict(list)
        for row, ((sg, op), sec) in enumerate(sorted(times.items(), key=lambda kv: -kv[1])):
            name = names.get((sg, op), "?")
            by_type[name].append(sec)
            cells = [_Number(sg, str(sg)), _Number(op, str(op)), QTableWidgetItem(name),
                     _Number(sec, f"{sec * 1e3:.3f}"), _Number(sec, f"{100 * sec / total:.1f}")]
            for c, item in enumerate(cells):
                self.ops.setItem(row, c, item)
        self.ops.setSortingEnabled(True)
        self.types.setSortingEnabled(False)
        self.types.setRowCount(len(by_type))
        for row, (name, secs) in enumerate(sorted(by_type.items(), key=lambda kv: -sum(kv[1]))):
            s = sum(secs)
            for c, item in enumerate([QTableWidgetItem(name), _Number(len(secs), str(len(secs))),
                                      _Number(s, f"{s * 1e3:.3f}"),
                                      _Number(s, f"{100 * s / total:.1f}")]):
                self.types.setItem(row, c, item)
        self.types.setSortingEnabled(True)

    def _activated(self, row: int, _column: int) -> None:
        self.opActivated.emit(int(self.ops.item(row, 0).value), int(self.ops.item(row, 1).value))
