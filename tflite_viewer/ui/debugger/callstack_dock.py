"""The Call Stack dock: the subgraph frames of the paused run, innermost first; in a
generation run the call last ("decode #3 (signature 'decode')", what it was fed).

A view of the open workspace's last stop (``ws.debug.last_stop``): without a paused run it
says so instead of keeping another run's frames.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from ...interpreter.session import PAUSED
from ..panels.common import min_rows
from ..state.docks import BOTTOM, DockSpec
from ..state.workspace import DEBUG, MODEL

DOCK = DockSpec("callstack", "Call Stack", BOTTOM, part="debug")
EMPTY = "No paused run: F10 steps to the first operator, F5 runs to a breakpoint"


class CallStackDock(QWidget):
    """Clicking a frame emits ``frameActivated(subgraph, op)``."""

    frameActivated = Signal(int, int)

    def __init__(self, hub, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["frame", "op"])
        self.tree.setRootIsDecorated(False)
        self.tree.setColumnWidth(0, 240)
        self.tree.itemClicked.connect(self._clicked)
        min_rows(self.tree)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.tree)
        hub.subscribe(self.render, MODEL, DEBUG)

    def render(self, ws) -> None:
        stop = ws.debug.last_stop if ws.debug.active else None
        shown = getattr(self, "_shown", None)
        if stop is not None and shown is not None and shown[0] is stop and shown[1] is ws.model:
            return  # the same stop (a command just started): nothing to redo
        self._shown = (stop, ws.model)
        names = [] if ws.model is None else [sg.display_name for sg in ws.model.subgraphs]
        self.set_stop(stop, names)

    def set_stop(self, stop, subgraph_names: list[str]) -> None:
        self.tree.clear()
        if stop is None or stop.state != PAUSED or not stop.position:
            state = "" if stop is None else f"The run is {stop.state}. "
            item = QTreeWidgetItem([state + EMPTY, ""])
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            self.tree.addTopLevelItem(item)
            item.setFirstColumnSpanned(True)  # the empty state across the columns
            return
        frames = list(zip(stop.position, stop.op_names))
        for (sg, op), name in reversed(frames):
            label = subgraph_names[sg] if sg < len(subgraph_names) else f"subgraph {sg}"
            item = QTreeWidgetItem([f"{label} (subgraph {sg})",
                                    f"#{op} {name}" if name else "returning"])
            item.setData(0, Qt.ItemDataRole.UserRole, (sg, op))
            self.tree.addTopLevelItem(item)
        call = stop.call
        if call is not None:  # a generation run: the call is the outermost frame
            fed = "the prompt" if call.index == 0 else \
                f"token {call.token} at position {call.position}"
            item = QTreeWidgetItem([f"{call.label} (signature {call.signature!r})", fed])
            item.setToolTip(0, call.describe())
            item.setToolTip(1, "generated so far: " + (" ".join(map(str, stop.tokens))
                                                       or "nothing yet"))
            self.tree.addTopLevelItem(item)

    def rows(self) -> list[tuple[str, str]]:
        """The two columns of every row, top to bottom (what a user reads)."""
        items = [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]
        return [(it.text(0), it.text(1)) for it in items]

    def frames(self) -> list[tuple[int, int]]:
        items = [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]
        return [it.data(0, Qt.ItemDataRole.UserRole) for it in items
                if it.data(0, Qt.ItemDataRole.UserRole) is not None]

    def _clicked(self, item: QTreeWidgetItem, _column: int) -> None:
        key = item.data(0, Qt.ItemDataRole.UserRole)
        if key is not None:
            sg, op = key
            self.frameActivated.emit(int(sg), int(op))
