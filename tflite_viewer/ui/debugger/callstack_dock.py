"""The Call Stack dock: the subgraph frames of the paused run, innermost first."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget


class CallStackDock(QWidget):
    """Clicking a frame emits ``frameActivated(subgraph, op)``."""

    frameActivated = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["frame", "op"])
        self.tree.setRootIsDecorated(False)
        self.tree.setColumnWidth(0, 220)
        self.tree.itemClicked.connect(self._clicked)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.tree)

    def set_stop(self, stop, subgraph_names: list[str]) -> None:
        self.tree.clear()
        if stop is None:
            return
        frames = list(zip(stop.position, stop.op_names))
        for (sg, op), name in reversed(frames):
            label = subgraph_names[sg] if sg < len(subgraph_names) else f"subgraph {sg}"
            item = QTreeWidgetItem([f"{label} (subgraph {sg})",
                                    f"#{op} {name}" if name else "returning"])
            item.setData(0, Qt.ItemDataRole.UserRole, (sg, op))
            self.tree.addTopLevelItem(item)

    def frames(self) -> list[tuple[int, int]]:
        return [self.tree.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole)
                for i in range(self.tree.topLevelItemCount())]

    def _clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        sg, op = item.data(0, Qt.ItemDataRole.UserRole)
        self.frameActivated.emit(int(sg), int(op))
