"""The Breakpoints dock: every breakpoint with its hit count; enable, disable, delete."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QHBoxLayout, QPushButton, QTreeWidget, QTreeWidgetItem,
                               QVBoxLayout, QWidget)


class BreakpointsDock(QWidget):
    """Lists `BreakpointInfo` rows; the check box enables, Delete removes."""

    enableRequested = Signal(int, bool)   # id, enabled
    removeRequested = Signal(int)
    addRequested = Signal()               # the conditional breakpoint dialog
    activated = Signal(int, int)          # subgraph, op (double-click)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["breakpoint", "hits"])
        self.tree.setRootIsDecorated(False)
        self.tree.setColumnWidth(0, 300)
        self.tree.itemChanged.connect(self._changed)
        self.tree.itemDoubleClicked.connect(self._double_clicked)
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

    def set_breakpoints(self, infos) -> None:
        self.infos = tuple(infos)
        self.tree.blockSignals(True)
        self.tree.clear()
        for info in self.infos:
            item = QTreeWidgetItem([info.description, str(info.hits)])
            item.setData(0, Qt.ItemDataRole.UserRole, info.id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(0, Qt.CheckState.Checked if info.enabled else Qt.CheckState.Unchecked)
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight)
            self.tree.addTopLevelItem(item)
        self.tree.blockSignals(False)

    def _changed(self, item: QTreeWidgetItem, column: int) -> None:
        if column == 0:
            self.enableRequested.emit(int(item.data(0, Qt.ItemDataRole.UserRole)),
                                      item.checkState(0) == Qt.CheckState.Checked)

    def _delete(self) -> None:
        item = self.tree.currentItem()
        if item is not None:
            self.removeRequested.emit(int(item.data(0, Qt.ItemDataRole.UserRole)))

    def _double_clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        bid = int(item.data(0, Qt.ItemDataRole.UserRole))
        info = next((i for i in self.infos if i.id == bid), None)
        if info is not None and info.op is not None:
            self.activated.emit(info.subgraph or 0, info.op)
