"""The Memory dock's hookup to the main window (`install`) and its canvas overlay: every
operator of the subgraph shown tinted by the arena bytes live at its step, white (none) to
red (the arena's size), with a legend.  Both are views of the open workspace's plan
(``ws.part("memory", MemoryState)``): another model, or an edit, takes them away.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QKeySequence, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem

from .canvas_legend import CanvasLegend
from .state.memory import MemoryState
from .overlay_paint import boxes_bounds, ramp
from .panels.memory_dock import TOPIC, MemoryDock
from .state.workspace import MODEL, NAVIGATION

if TYPE_CHECKING:
    from .main_window import MainWindow

LOW, MID, HIGH = QColor("#ffffff"), QColor("#f2cc60"), QColor("#cf222e")


def colour(t: float) -> QColor:
    """0 -> white, 0.5 -> amber, 1 -> red."""
    return ramp(t, LOW, MID, HIGH)


class MemoryOverlayItem(QGraphicsItem):
    """Tints op boxes: ``heat`` maps node rows to [0, 1] (1: the whole arena live)."""

    def __init__(self, rects, heat: dict[int, float]) -> None:
        super().__init__()
        self._rects = rects
        self.heat = heat
        self._bounds = boxes_bounds(rects, heat, 4)
        self.setZValue(4)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def paint(self, painter: QPainter, option, widget=None) -> None:
        exposed = option.exposedRect
        for row, t in self.heat.items():
            x, y, w, h = self._rects[row].tolist()
            box = QRectF(x - 2, y - 2, w + 4, h + 4)
            if not exposed.intersects(box):
                continue
            c = colour(t)
            fill = QColor(c)
            fill.setAlpha(110)
            painter.setBrush(fill)
            painter.setPen(QPen(c.darker(115), 2))
            painter.drawRoundedRect(box, 6, 6)


class MemoryCanvasOverlay:
    """Keeps the overlay item and its legend in step with the plan, the subgraph shown and
    the dock's checkbox."""

    def __init__(self, window: "MainWindow", dock: MemoryDock) -> None:
        self.window, self.dock = window, dock
        self.item: MemoryOverlayItem | None = None
        self.legend = CanvasLegend(window.view, colour, slot=2)
        self.heat: dict[int, float] = {}  # op index -> [0, 1]

    def refresh(self, shown: bool | None = None) -> None:
        """Redraw; ``shown`` is the dock's visibility when it is changing (Qt reports the
        old one until the change is done)."""
        w = self.window
        if self.item is not None:
            try:
                if self.item.scene() is not None:
                    self.item.scene().removeItem(self.item)
            except RuntimeError:  # the scene was cleared (another subgraph, an edit)
                pass
        self.item = None
        self.legend.hide()
        self.heat = {}
        ws = w.workspace
        data = w.graph_scene.data
        visible = w.memory_dock.isVisible() if shown is None else shown
        if not self.dock.overlay.isChecked() or not visible or ws.model is None or data is None:
            return  # shown with the dock only: the canvas keeps its colours otherwise
        self.dock.ensure_plan(ws)
        state = ws.part("memory", MemoryState)
        plan = state.plans.get(self.dock.target_key)
        if plan is None or w.subgraph >= len(ws.model.subgraphs):
            return
        index = w.subgraph if plan.target == "litert" and w.subgraph < len(plan.arenas) else None
        chart = state.chart(self.dock.target_key, index)
        if chart is None or chart.height <= 0:
            return
        n_ops = len(ws.model.subgraphs[w.subgraph].operators)
        values = chart.op_heat(w.subgraph, n_ops).tolist()
        planned = {op for s, op in chart.steps if s == w.subgraph and op >= 0}
        self.heat = {k: values[k] for k in sorted(planned) if k < n_ops}
        rows = {data.op_node[op]: t for op, t in self.heat.items() if op in data.op_node}
        self.item = MemoryOverlayItem(data.rects, rows)
        w.graph_scene.addItem(self.item)
        runtime = "TFLite Micro" if plan.target == "tflm" else "LiteRT"
        self.legend.set_range(f"{runtime} arena live at each operator", "0",
                              f"{chart.height:,} bytes")


def _show(window: "MainWindow", subgraph: int, select, index: int) -> None:
    """Show ``subgraph`` when another is on the canvas, then select there."""
    if window.model is None or not 0 <= subgraph < len(window.model.subgraphs):
        return
    if subgraph != window.subgraph:
        window.show_subgraph(subgraph, wait=True)
    select(index)


def install(window: "MainWindow") -> MemoryDock:
    """Add the Memory dock (tabbed with Problems, shown from View > Memory, Ctrl+Shift+M),
    and its canvas overlay; both are views of the open workspace."""
    dock = MemoryDock(window.settings, hub=window.hub)
    window.memory_panel = dock
    window.memory_dock = window._dock("Memory", dock, Qt.DockWidgetArea.BottomDockWidgetArea,
                                      "memory")
    window.tabifyDockWidget(window.problems_dock, window.memory_dock)
    window.memory_dock.hide()  # the graph gets the room until the user asks for it
    window.memory_dock.visibilityChanged.connect(
        lambda shown: shown and window.resizeDocks([window.memory_dock], [max(
            window.memory_dock.height(), window.height() // 3)], Qt.Orientation.Vertical))
    view_menu = next((a.menu() for a in window.menuBar().actions() if a.text() == "&View"), None)
    if view_menu is not None:
        toggle = window.memory_dock.toggleViewAction()
        toggle.setShortcut(QKeySequence("Ctrl+Shift+M"))
        toggle.triggered.connect(lambda on: on and window.memory_dock.raise_())
        view_menu.addAction(toggle)
    overlay = MemoryCanvasOverlay(window, dock)
    window.memory_overlay = overlay
    dock.tensorActivated.connect(lambda sg, t: _show(window, sg, window.select_tensor, t))
    dock.opActivated.connect(lambda sg, k: _show(window, sg, window.select_op, k))
    dock.overlayToggled.connect(lambda _on: overlay.refresh())
    window.memory_dock.visibilityChanged.connect(lambda shown: overlay.refresh(shown))
    window.hub.subscribe(lambda _ws: overlay.refresh(), MODEL, NAVIGATION, TOPIC)
    return dock
