"""The Watch dock: pinned tensors with shape, min, max, mean, std, NaN/Inf and saturation,
updated at every stop (from the stop's snapshots; numbers from `session.summarize`).

A view of the open workspace: the pins are ``ws.watches`` (tensor references that follow
edits, `identity.TensorRef`), the values ``ws.debug.snapshots``.  Delete (or the context
menu) unpins; a double-click shows the tensor.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QMenu, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from ...interpreter.session import summarize
from ..panels.common import min_rows
from ..state.docks import BOTTOM, DockSpec
from ..state.workspace import DEBUG, MODEL, SNAPSHOTS, WATCHES

DOCK = DockSpec("watch", "Watch", BOTTOM, part="watches")
COLUMNS = ("tensor", "shape", "min", "max", "mean", "std", "NaN/Inf", "saturated")
EMPTY = "Nothing watched: select a tensor and use Debug \u203a Watch Selected Tensor"


def _num(x: float) -> str:
    return f"{x:.6g}"


class WatchDock(QWidget):
    """One row per pinned (subgraph, tensor); ``unpinRequested`` on Delete."""

    tensorActivated = Signal(int, int)
    unpinRequested = Signal(int, int)

    def __init__(self, hub, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(list(COLUMNS))
        self.tree.setRootIsDecorated(False)
        self.tree.setColumnWidth(0, 200)
        self.tree.itemDoubleClicked.connect(self._activated)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._menu)
        min_rows(self.tree)
        QShortcut(QKeySequence.StandardKey.Delete, self.tree, self._unpin_current,
                  context=Qt.ShortcutContext.WidgetShortcut)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.tree)
        hub.subscribe(self.render, MODEL, WATCHES, SNAPSHOTS, DEBUG)

    @property
    def pinned(self) -> list[tuple[int, int]]:
        """The (subgraph, tensor) keys pinned in the open workspace."""
        return self.hub.workspace.watches.keys()

    def render(self, ws) -> None:
        """Every pin of ``ws`` with its values at the paused run's stop ("not computed"
        without them); the empty state says how to pin."""
        snaps = ws.debug.snapshots if ws.debug.active else {}
        pins = tuple(ws.watches.pins)
        values = [snaps.get(p.key) for p in pins]
        shown = getattr(self, "_shown", None)
        if shown is not None and shown[0] == pins and len(shown[1]) == len(values) and \
                all(a is b for a, b in zip(shown[1], values)):
            return  # a stop that changed none of the pinned values: nothing to redo
        self._shown = (pins, values)  # (the snapshots are kept: identity stays meaningful)
        self.tree.clear()
        if not ws.watches.pins:
            item = QTreeWidgetItem([EMPTY])
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.tree.addTopLevelItem(item)
            item.setFirstColumnSpanned(True)  # the empty state across the columns
            item.setFirstColumnSpanned(True)
            return
        for pin in ws.watches.pins:
            snap = snaps.get(pin.key)
            row = [pin.label] + [""] * (len(COLUMNS) - 1)
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
            item.setData(0, Qt.ItemDataRole.UserRole, pin.key)
            item.setToolTip(0, pin.label)
            self.tree.addTopLevelItem(item)

    def row_texts(self) -> list[list[str]]:
        items = [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]
        return [[it.text(c) for c in range(len(COLUMNS))] for it in items
                if it.data(0, Qt.ItemDataRole.UserRole) is not None]

    def _activated(self, item: QTreeWidgetItem, _column: int) -> None:
        key = item.data(0, Qt.ItemDataRole.UserRole)
        if key is not None:
            self.tensorActivated.emit(int(key[0]), int(key[1]))

    def _unpin_current(self) -> None:
        item = self.tree.currentItem()
        key = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        if key is not None:
            self.unpinRequested.emit(int(key[0]), int(key[1]))

    def _menu(self, pos) -> None:
        item = self.tree.itemAt(pos)
        key = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        if key is None:
            return
        menu = QMenu(self)
        menu.addAction("Show tensor", lambda: self.tensorActivated.emit(int(key[0]), int(key[1])))
        menu.addAction("Unpin", lambda: self.unpinRequested.emit(int(key[0]), int(key[1])))
        menu.exec(self.tree.viewport().mapToGlobal(pos))
