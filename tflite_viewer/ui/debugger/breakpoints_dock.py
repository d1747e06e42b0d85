"""The Breakpoints dock: every breakpoint with its hit count; enable, disable, delete.

A view of the open workspace's ``ws.breakpoints`` (kept with the model, with or without a
session, following their operators through edits); the hit counts are the current
session's.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (QHBoxLayout, QPushButton, QTreeWidget, QTreeWidgetItem,
                               QVBoxLayout, QWidget)

from ..panels.common import min_rows
from ..state.docks import BOTTOM, DockSpec
from ..state.workspace import BREAKPOINTS, MODEL

DOCK = DockSpec("breakpoints", "Breakpoints", BOTTOM, part="breakpoints")
EMPTY = "No breakpoints: select an operator and press F9, or Add\u2026 a condition"


class BreakpointsDock(QWidget):
    """Lists the workspace's breakpoints; the check box enables, Delete removes."""

    enableRequested = Signal(int, bool)   # id, enabled
    removeRequested = Signal(int)
    addRequested = Signal()               # the conditional breakpoint dialog
    activated = Signal(int, int)          # subgraph, op (double-click)

    def __init__(self, hub, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["breakpoint", "hits"])
        self.tree.setRootIsDecorated(False)
        self.tree.setColumnWidth(0, 340)
        self.tree.itemChanged.connect(self._changed)
        self.tree.itemDoubleClicked.connect(self._double_clicked)
        min_rows(self.tree)
        add = QPushButton("Add\u2026")
        add.setToolTip("A conditional breakpoint: NaN/Inf, a range, saturation, an op type")
        add.clicked.connect(self.addRequested)
        delete = QPushButton("Delete")
        delete.clicked.connect(self._delete)
        buttons = QHBoxLayout()
        buttons.addWidget(add)
        buttons.addWidget(delete)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.tree, 1)
        layout.addLayout(buttons)
        self.infos: tuple = ()
        hub.subscribe(self.render, MODEL, BREAKPOINTS)

    def render(self, ws) -> None:
        self.set_breakpoints(ws.breakpoint_infos())

    def set_breakpoints(self, infos) -> None:
        self.infos = tuple(infos)
        self.tree.blockSignals(True)
        try:
            if [self._id(self.tree.topLevelItem(i))
                    for i in range(self.tree.topLevelItemCount())] == [i.id for i in self.infos] \
                    and self.infos:
                for row, info in enumerate(self.infos):  # the same breakpoints: in place,
                    self._fill(self.tree.topLevelItem(row), info)  # the selection kept
            else:
                self._rebuild()
        finally:
            self.tree.blockSignals(False)

    def _rebuild(self) -> None:
        self.tree.clear()
        for info in self.infos:
            item = QTreeWidgetItem()
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight)
            self._fill(item, info)
            self.tree.addTopLevelItem(item)
        if not self.infos:
            item = QTreeWidgetItem([EMPTY, ""])
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.tree.addTopLevelItem(item)
            item.setFirstColumnSpanned(True)  # the empty state across the columns

    @staticmethod
    def _fill(item: QTreeWidgetItem, info) -> None:
        item.setText(0, info.description)
        item.setText(1, str(info.hits))
        item.setData(0, Qt.ItemDataRole.UserRole, info.id)
        item.setCheckState(0, Qt.CheckState.Checked if info.enabled else Qt.CheckState.Unchecked)
        item.setToolTip(0, info.description)

    def _id(self, item: QTreeWidgetItem | None) -> int | None:
        bid = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        return None if bid is None else int(bid)

    def _changed(self, item: QTreeWidgetItem, column: int) -> None:
        bid = self._id(item)
        if column == 0 and bid is not None:
            enabled = item.checkState(0) == Qt.CheckState.Checked
            # after the check box's own change has returned: the request re-renders this
            # tree, and an item deleted inside its own setData crashes Qt
            QTimer.singleShot(0, self, lambda: self.enableRequested.emit(bid, enabled))

    def _delete(self) -> None:
        bid = self._id(self.tree.currentItem())
        if bid is not None:
            self.removeRequested.emit(bid)

    def _double_clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        bid = self._id(item)
        info = next((i for i in self.infos if i.id == bid), None)
        if info is not None and info.op is not None:
            self.activated.emit(info.subgraph or 0, info.op)
