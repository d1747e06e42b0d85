"""The quantization overlay on the canvas, its legend, and the Quantization dock's hookup
to the main window (`install`).

The overlay is its own QGraphicsItem added to the window's scene: every op measured by the
chosen metric gets a coloured frame and tint, green (best) to red (worst), from
`quant.report.badness_fractions`; the legend names the metric and its range.  It covers
the subgraph being viewed (the analysis measures every subgraph).  Both are views of the
open workspace's report (``ws.quant.report``): another model, or an edit, takes them away.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QKeySequence, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem

from ..quant import report as qreport
from .state import tensor_stats as ts
from .canvas_legend import CanvasLegend
from .overlay_paint import boxes_bounds, ramp
from .panels.quant_dock import QuantDock
from .state.workspace import MODEL, NAVIGATION, QUANT

if TYPE_CHECKING:
    from .main_window import MainWindow

BEST, MID, WORST = QColor("#2da44e"), QColor("#e3b341"), QColor("#cf222e")


def colour(t: float) -> QColor:
    """0 -> green, 0.5 -> yellow, 1 -> red."""
    return ramp(t, BEST, MID, WORST)


class QuantOverlayItem(QGraphicsItem):
    """Tints and frames op boxes: ``fractions`` maps node rows to [0, 1] (1 worst)."""

    def __init__(self, rects, fractions: dict[int, float]) -> None:
        super().__init__()
        self._rects = rects
        self.fractions = fractions
        self._bounds = boxes_bounds(rects, fractions, 6)
        self.setZValue(5)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def paint(self, painter: QPainter, option, widget=None) -> None:
        for row, t in self.fractions.items():
            x, y, w, h = self._rects[row].tolist()
            c = colour(t)
            fill = QColor(c)
            fill.setAlpha(70)
            painter.setBrush(fill)
            painter.setPen(QPen(c, 4))
            painter.drawRoundedRect(QRectF(x - 3, y - 3, w + 6, h + 6), 7, 7)


class QuantCanvasOverlay:
    """Keeps the overlay item on the window's scene in step with the report and metric."""

    def __init__(self, window: "MainWindow", dock: QuantDock) -> None:
        self.window, self.dock = window, dock
        self.item: QuantOverlayItem | None = None
        self.legend = CanvasLegend(window.view, colour, slot=0)
        self.fractions: dict[int, float] = {}  # op index -> [0, 1], 1 worst

    def refresh(self) -> None:
        w = self.window
        if self.item is not None:
            try:
                if self.item.scene() is not None:
                    self.item.scene().removeItem(self.item)
            except RuntimeError:  # the scene was cleared (another subgraph, an edit)
                pass
        self.item = None
        self.legend.hide()
        metric = self.dock.overlay_metric.currentData()
        report = w.workspace.quant.report
        data = w.graph_scene.data
        if metric is None or report is None or data is None:
            self.fractions = {}
            return
        values = qreport.op_values(report, metric, subgraph=w.subgraph)
        self.fractions = qreport.badness_fractions(values, metric)
        rows = {data.op_node[op]: t for op, t in self.fractions.items() if op in data.op_node}
        self.item = QuantOverlayItem(data.rects, rows)
        w.graph_scene.addItem(self.item)
        if values:
            worst = max(self.fractions, key=self.fractions.get)
            best = min(self.fractions, key=self.fractions.get)
            self.legend.set_range(f"{metric}  (worst red)", f"best {ts.format_number(values[best], 4)}",
                                  f"worst {ts.format_number(values[worst], 4)}")


def _show(window: "MainWindow", subgraph: int, select, index: int) -> None:
    """Show ``subgraph`` when another is on the canvas, then select there."""
    if window.model is None or not 0 <= subgraph < len(window.model.subgraphs):
        return
    if subgraph != window.subgraph:
        window.show_subgraph(subgraph, wait=True)
    select(index)


def install(window: "MainWindow") -> QuantDock:
    """Add the Quantization dock (tabbed with Problems, shown from View > Quantization),
    its View menu entry and overlay; all are views of the open workspace."""
    dock = QuantDock(window.settings, hub=window.hub)
    window.quant_panel = dock
    window.quant_dock = window._dock("Quantization", dock, Qt.DockWidgetArea.BottomDockWidgetArea,
                                     "quantization")
    window.tabifyDockWidget(window.problems_dock, window.quant_dock)
    window.quant_dock.hide()  # the graph gets the room until the user asks for it
    # a comparison needs room: the bottom area grows when the dock is brought forward
    window.quant_dock.visibilityChanged.connect(
        lambda shown: shown and window.resizeDocks([window.quant_dock], [max(
            window.quant_dock.height(), window.height() // 3)], Qt.Orientation.Vertical))
    view_menu = next((a.menu() for a in window.menuBar().actions() if a.text() == "&View"), None)
    if view_menu is not None:
        toggle = window.quant_dock.toggleViewAction()
        toggle.setShortcut(QKeySequence("Ctrl+Shift+Q"))
        toggle.triggered.connect(lambda on: on and window.quant_dock.raise_())  # in front of its tabs
        view_menu.addAction(toggle)
    overlay = QuantCanvasOverlay(window, dock)
    window.quant_overlay = overlay
    dock.tensorActivated.connect(lambda sg, t: _show(window, sg, window.select_tensor, t))
    dock.opActivated.connect(lambda sg, k: _show(window, sg, window.select_op, k))
    debugger = getattr(window, "debugger", None)
    if debugger is not None:  # "Inputs of the debugger session" while one runs
        dock.source.set_session_provider(debugger.session_inputs)
        debugger.sessionInputsChanged.connect(dock.source.refresh)
    window.hub.subscribe(lambda _ws: overlay.refresh(), MODEL, NAVIGATION, QUANT)
    dock.overlay_metric.currentIndexChanged.connect(lambda _i: overlay.refresh())
    dock.failed.connect(lambda msg: window.errors.report("Quantization analysis", msg, parent=window))
    dock.comparisonRequested.connect(
        lambda sg, t, deq, flt, caption: window.tensor_panel.show_comparison(
            deq, flt, ("dequantized", "float"), caption, tensor=(sg, t)))
    return dock
