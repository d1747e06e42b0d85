"""The Watch dock: pinned tensors with shape, min, max, mean, std, NaN/Inf and saturation,
updated at every stop (from the stop's snapshots; numbers from `session.summarize`)."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from ...interpreter.session import summarize

COLUMNS = ("tensor", "shape", "min", "max", "mean", "std", "NaN/Inf", "saturated")


def _num(x: float) -> str:
    return f"{x:.6g}"


class WatchDock(QWidget):
    """One row per pinned (subgraph, tensor); ``unpinRequested`` on Delete."""

    tensorActivated = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.pinned: list[tuple[int, int]] = []
        self.names: dict[tuple[int, int], str] = {}
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setRootIsDecorated(False)
        self.tree.setColumnWidth(0, 180)
        self.tree.itemDoubleClicked.connect(self._activated)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.tree)

    def pin(self, subgraph: int, tensor: int, name: str) -> None:
        key = (subgraph, tensor)
        if key not in self.pinned:
            self.pinned.append(key)
            self.names[key] = name
            self.show_snapshots({})

    def unpin(self, subgraph: int, tensor: int) -> None:
        key = (subgraph, tensor)
        if key in self.pinned:
            self.pinned.remove(key)
            self.show_snapshots({})

    def show_snapshots(self, snaps: dict) -> None:
        """Refresh every row from ``snaps`` ({(sg, t): TensorSnapshot}); rows without one
        say "not computed"."""
        self.tree.clear()
        for key in self.pinned:
            sg, t = key
            label = f"s{sg} t{t} {self.names.get(key, '')}".strip()
            snap = snaps.get(key)
            row = [label] + [""] * (len(COLUMNS) - 1)
            if snap is None or not snap.computed:
                row[1] = "not computed"
            else:
                s = summarize(snap)
                row[1] = "x".join(map(str, snap.shape or ())) or "scalar"
                if s is not None:
                    row[2:7] = [_num(s.min), _num(s.max), _num(s.mean), _num(s.std),
                                f"{s.nan}/{s.inf}"]
                    row[7] = "" if s.saturation is None else f"{s.saturation:.2%}"
            item = QTreeWidgetItem(row)
            item.setData(0, Qt.ItemDataRole.UserRole, key)
            self.tree.addTopLevelItem(item)

    def row_texts(self) -> list[list[str]]:
        return [[self.tree.topLevelItem(i).text(c) for c in range(len(COLUMNS))]
                for i in range(self.tree.topLevelItemCount())]

    def _activated(self, item: QTreeWidgetItem, _column: int) -> None:
        sg, t = item.data(0, Qt.ItemDataRole.UserRole)
        self.tensorActivated.emit(int(sg), int(t))
