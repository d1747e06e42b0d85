"""The Profile dock: per-op time (sortable) and the cumulative time of each op type.

A view of the open workspace's ``ws.debug.profile`` (the op times of the last stop).  Both
tables open sorted by time, slowest first, with the header's arrow on that column; a
column the user sorts by stays the sort column at the next stop.  "Colour the canvas by
time" tints each op by its share of the slowest one: the Op time overlay
(`state.overlays.TimeOverlay`), as the toolbar's selector chooses it.
"""
from __future__ import annotations

from collections import defaultdict

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QLabel, QSplitter, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from ..panels.common import min_rows
from ..state.docks import BOTTOM, DockSpec
from ..state.workspace import DEBUG, MODEL

DOCK = DockSpec("profile", "Profile", BOTTOM, part="debug", overlay="time")

OPS_COLUMNS = ["subgraph", "op", "type", "ms", "%"]
TYPE_COLUMNS = ["type", "ops", "ms", "%"]
EMPTY = "No op times yet: they are measured while the debugger runs (F5, F10)"


class _Number(QTableWidgetItem):
    """A cell that sorts by its number, not its text."""

    def __init__(self, value: float, text: str) -> None:
        super().__init__(text)
        self.value = value
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other) -> bool:
        return self.value < getattr(other, "value", 0.0)


def _table(headers: list[str], sort_column: int) -> QTableWidget:
    t = QTableWidget(0, len(headers))
    t.setHorizontalHeaderLabels(headers)
    t.verticalHeader().hide()
    t.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    t.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
    t.setSortingEnabled(True)
    t.sortItems(sort_column, Qt.SortOrder.DescendingOrder)  # the arrow where the order is
    min_rows(t)
    return t


class ProfileDock(QWidget):
    """Fed with the stop's ``op_times`` ({(subgraph, op): seconds}) and op names."""

    opActivated = Signal(int, int)
    overlayToggled = Signal(bool)

    def __init__(self, hub=None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops = _table(OPS_COLUMNS, OPS_COLUMNS.index("ms"))
        self.types = _table(TYPE_COLUMNS, TYPE_COLUMNS.index("ms"))
        self.ops.cellDoubleClicked.connect(self._activated)
        self.heat = QCheckBox("Colour the canvas by time")
        self.heat.toggled.connect(self.overlayToggled)
        self.empty = QLabel(EMPTY)
        self.empty.setWordWrap(True)  # (a dock's minimum width is its longest line's)
        self.empty.setStyleSheet("color: #57606a;")
        split = QSplitter(Qt.Orientation.Horizontal)  # side by side: each keeps its rows
        split.addWidget(self.ops)
        split.addWidget(self.types)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.heat)
        layout.addWidget(self.empty)
        layout.addWidget(split, 1)
        self.hub = hub
        self._stale = False
        if hub is not None:
            hub.subscribe(self.render, MODEL, DEBUG)

    def show_overlay(self, on: bool) -> None:
        """Whether the canvas shows the op times (the toolbar may have chosen)."""
        self.heat.blockSignals(True)
        self.heat.setChecked(on)
        self.heat.blockSignals(False)

    def render(self, ws, force: bool = False) -> None:
        """The workspace's op times; while the dock is out of sight (behind another tab)
        only noted, and done when it is shown: a step must not pay for a hidden table of
        20,000 rows."""
        if not force and self.visibleRegion().isEmpty() and ws.debug.profile:
            self._stale = True
            return
        self._stale = False
        shown = getattr(self, "_shown", None)
        if shown is not None and shown[0] is ws.debug.profile and shown[1] is ws.model:
            return  # the same times (a command just started)
        self._shown = (ws.debug.profile, ws.model)
        if ws.model is None or not ws.debug.profile:
            self.set_times({}, {})
            return
        names = {}
        for key in ws.debug.profile:
            try:
                names[key] = ws.model.subgraphs[key[0]].operators[key[1]].name
            except IndexError:
                names[key] = "?"
        self.set_times(dict(ws.debug.profile), names)

    def dock_shown(self, shown: bool) -> None:
        """Its dock came into view (``QDockWidget.visibilityChanged``: a tab brought
        forward): render what was only noted while it was out of sight."""
        if shown and self._stale and self.hub is not None:
            self._stale = False
            self.render(self.hub.workspace, force=True)

    def set_times(self, times: dict, names: dict) -> None:
        """``names``: (subgraph, op) -> op type."""
        self.empty.setVisible(not times)
        total = sum(times.values()) or 1.0
        by_type: dict[str, list[float]] = defaultdict(list)
        rows = []
        for (sg, op), sec in times.items():
            name = names.get((sg, op), "?")
            by_type[name].append(sec)
            rows.append([_Number(sg, str(sg)), _Number(op, str(op)), QTableWidgetItem(name),
                         _Number(sec, f"{sec * 1e3:.3f}"), _Number(sec, f"{100 * sec / total:.1f}")])
        self._fill(self.ops, rows)
        rows = []
        for name, secs in by_type.items():
            s = sum(secs)
            rows.append([QTableWidgetItem(name), _Number(len(secs), str(len(secs))),
                         _Number(s, f"{s * 1e3:.3f}"), _Number(s, f"{100 * s / total:.1f}")])
        self._fill(self.types, rows)

    @staticmethod
    def _fill(table: QTableWidget, rows: list[list[QTableWidgetItem]]) -> None:
        """Replace the rows, then sort them by the column (and order) the header shows."""
        header = table.horizontalHeader()
        column, order = header.sortIndicatorSection(), header.sortIndicatorOrder()
        table.setSortingEnabled(False)
        table.setRowCount(len(rows))
        for r, cells in enumerate(rows):
            for c, item in enumerate(cells):
                table.setItem(r, c, item)
        table.setSortingEnabled(True)
        table.sortItems(column, order)

    def sorted_by(self, table: QTableWidget | None = None) -> tuple[str, Qt.SortOrder]:
        """The column the rows are in order of, and the order (what the arrow shows)."""
        table = table or self.ops
        header = table.horizontalHeader()
        return (table.horizontalHeaderItem(header.sortIndicatorSection()).text(),
                header.sortIndicatorOrder())

    def _activated(self, row: int, _column: int) -> None:
        self.opActivated.emit(int(self.ops.item(row, 0).value), int(self.ops.item(row, 1).value))
