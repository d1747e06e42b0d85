"""The targets overlay on the canvas, its legend, and the Targets dock's hookup to the main
window (`install`).

With a target picked, every operator of the subgraph shown is tinted by its verdict
(green runs, amber falls back to the CPU, red refused) and, for a delegate, the operators
of one partition share a coloured dashed frame and the partition's tag on its first
operator ("P2": numbered from 0, as the JSON and the reasons number them): the groups the
delegate replaces by one DELEGATE node each.  The marks are
`targets.overlay.marks` (Qt-free); this module only paints them.  Problems lists the
reasons (`ui.state.targets.findings`).  All are views of the open workspace's report.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QKeySequence, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem

from ..targets import overlay as target_overlay
from ..targets.verdict import FALLS_BACK, REFUSED, RUNS
from . import style
from .canvas_legend import CanvasLegend
from .panels.targets_dock import TargetsDock
from .state.targets import REPORT
from .state.workspace import MODEL, NAVIGATION

if TYPE_CHECKING:
    from .main_window import MainWindow

def _free_slot(window) -> int:
    """The lowest legend slot no other shown colouring takes (quantization, op time and
    memory keep theirs; this one stacks where there is room)."""
    others = [getattr(getattr(window, "quant_overlay", None), "legend", None),
              getattr(getattr(getattr(window, "debugger", None), "canvas", None), "legend", None),
              getattr(getattr(window, "memory_overlay", None), "legend", None)]
    used = {legend.slot for legend in others if legend is not None and legend.isVisibleTo(window)}
    return next(k for k in range(len(used) + 1) if k not in used)


def verdict_colour(t: float) -> QColor:
    """The legend's three steps: runs, falls back, refused."""
    verdict = RUNS if t < 1 / 3 else FALLS_BACK if t < 2 / 3 else REFUSED
    return QColor(target_overlay.VERDICT_COLOURS[verdict])


class TargetsOverlayItem(QGraphicsItem):
    """Paints ``marks`` (node row -> targets.overlay.OpMark) over the op boxes; ``tags``
    (node row -> "P2") label each partition's first operator.  Only the boxes in view are
    painted, and zoomed far out they are flat rectangles, one batch per colour (a
    20,000-operator model repaints as fast as the canvas under it)."""

    def __init__(self, rects, marks: dict, tags: dict[int, str]) -> None:
        super().__init__()
        self.marks = marks
        self.tags = tags
        self._rows = np.fromiter(marks, dtype=np.int64, count=len(marks))
        self._boxes = np.asarray(rects, np.float64)[self._rows] if len(self._rows) else \
            np.zeros((0, 4))
        colours = [m.colour for m in marks.values()]
        groups = [m.group_colour or "" for m in marks.values()]
        self._palette = sorted(set(colours))
        self._colour = np.array([self._palette.index(c) for c in colours], np.int64)
        self._groups = sorted(set(groups) - {""})
        self._group = np.array([self._groups.index(g) if g else -1 for g in groups], np.int64)
        self._tag_rows = {row: k for k, row in enumerate(self._rows.tolist()) if row in tags}
        b = self._boxes
        if len(b):
            self._bounds = QRectF(float(b[:, 0].min()) - 12, float(b[:, 1].min()) - 30,
                                  float((b[:, 0] + b[:, 2]).max() - b[:, 0].min()) + 24,
                                  float((b[:, 1] + b[:, 3]).max() - b[:, 1].min()) + 42)
        else:
            self._bounds = QRectF()
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(6)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def _visible(self, r: QRectF, pad: float) -> np.ndarray:
        b = self._boxes
        return np.flatnonzero((b[:, 0] - pad <= r.right()) & (b[:, 0] + b[:, 2] + pad >= r.left())
                              & (b[:, 1] - pad <= r.bottom()) & (b[:, 1] + b[:, 3] + pad >= r.top()))

    def paint(self, painter: QPainter, option, widget=None) -> None:
        if not len(self._boxes):
            return
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        shown = self._visible(option.exposedRect, 30)
        if not shown.size:
            return
        b = self._boxes
        if lod < style.LOD_DETAIL:  # far out: flat rectangles, a batch per colour
            painter.setPen(Qt.PenStyle.NoPen)
            for g, colour in enumerate(self._groups):
                sel = shown[self._group[shown] == g]
                if sel.size:
                    painter.setBrush(QColor(colour))
                    painter.drawRects([QRectF(x - 9, y - 9, w + 18, h + 18)
                                       for x, y, w, h in b[sel].tolist()])
            for c, colour in enumerate(self._palette):
                sel = shown[self._colour[shown] == c]
                if sel.size:
                    painter.setBrush(QColor(colour))
                    painter.drawRects([QRectF(x - 3, y - 3, w + 6, h + 6)
                                       for x, y, w, h in b[sel].tolist()])
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        for k in shown.tolist():
            x, y, w, h = b[k].tolist()
            c = QColor(self._palette[self._colour[k]])
            fill = QColor(c)
            fill.setAlpha(60)
            painter.setBrush(fill)
            painter.setPen(QPen(c, 3))
            painter.drawRoundedRect(QRectF(x - 3, y - 3, w + 6, h + 6), 7, 7)
            g = self._group[k]
            if g >= 0:
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.setPen(QPen(QColor(self._groups[g]), 3, Qt.PenStyle.DashLine))
                painter.drawRoundedRect(QRectF(x - 9, y - 9, w + 18, h + 18), 10, 10)
        font = QFont(painter.font())
        font.setBold(True)
        painter.setFont(font)
        metrics = painter.fontMetrics()
        visible = set(shown.tolist())
        for row, k in self._tag_rows.items():
            if k not in visible:
                continue
            tag = self.tags[row]
            x, y, _w, _h = b[k].tolist()
            g = self._group[k]
            colour = QColor(self._groups[g] if g >= 0 else "#57606a")
            box = QRectF(x - 9, y - 9 - metrics.height() - 4, metrics.horizontalAdvance(tag) + 10,
                         metrics.height() + 4)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(colour)
            painter.drawRoundedRect(box, 4, 4)
            painter.setPen(QColor("white"))
            painter.drawText(box, int(Qt.AlignmentFlag.AlignCenter), tag)


class VerdictLegend(CanvasLegend):
    """The target and its counts over three swatches (runs, falls back, refused)."""

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(255, 255, 255, 235))
        p.setPen(QColor("#57606a"))
        p.drawRect(self.rect().adjusted(0, 0, -1, -1))
        p.setPen(QColor("#1f2328"))
        metrics = p.fontMetrics()
        p.drawText(QPointF(8, 14), metrics.elidedText(self.metric_name, Qt.TextElideMode.ElideRight,
                                                      self.width() - 16))
        x = 8.0
        for verdict in (RUNS, FALLS_BACK, REFUSED):
            p.fillRect(QRectF(x, 22, 14, 14), QColor(target_overlay.VERDICT_COLOURS[verdict]))
            p.drawText(QPointF(x + 19, 34), verdict)
            x += 19 + metrics.horizontalAdvance(verdict) + 14
        if self.low_text:
            p.setPen(QColor("#1f6feb"))
            p.drawText(QPointF(x, 34), self.low_text)


class TargetsCanvasOverlay:
    """Keeps the overlay item on the window's scene in step with the dock's target and the
    workspace's report."""

    def __init__(self, window: "MainWindow", dock: TargetsDock) -> None:
        self.window, self.dock = window, dock
        self.item: TargetsOverlayItem | None = None
        self.legend = VerdictLegend(window.view, verdict_colour, slot=0)
        self.marks: dict = {}  # op index -> OpMark, of the subgraph shown

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
        result = self.dock.result
        data = w.graph_scene.data
        if result is None or data is None or w.model is None:
            self.marks = {}
            return
        self.marks = target_overlay.marks(result, w.subgraph)
        rows = {data.op_node[k]: m for k, m in self.marks.items() if k in data.op_node}
        tags = {}
        for i, p in enumerate(result.partitions):
            if p.subgraph == w.subgraph and p.ops and p.ops[0] in data.op_node:
                tags[data.op_node[p.ops[0]]] = f"P{i}"
        self.item = TargetsOverlayItem(data.rects, rows, tags)
        w.graph_scene.addItem(self.item)
        ours = [p for p in result.partitions if p.subgraph == w.subgraph]
        groups = f"dashed frames: {len(ours)} partition(s)" if ours else ""
        self.legend.slot = _free_slot(w)
        self.legend.set_range(target_overlay.legend(result), groups, "")
        # room for the swatches and the partition note
        metrics = self.legend.fontMetrics()
        need = sum(19 + metrics.horizontalAdvance(v) + 14 for v in (RUNS, FALLS_BACK, REFUSED))
        self.legend.setFixedWidth(max(self.legend.width(), need + metrics.horizontalAdvance(groups) + 16))
        self.legend.place()


def _show(window: "MainWindow", subgraph: int, index: int) -> None:
    if window.model is None or not 0 <= subgraph < len(window.model.subgraphs):
        return
    if subgraph != window.subgraph:
        window.show_subgraph(subgraph, wait=True)
    window.select_op(index)


def install(window: "MainWindow") -> TargetsDock:
    """Add the Targets dock (tabbed with Problems, shown from View > Targets), its overlay
    and its Problems entries; all are views of the open workspace."""
    dock = TargetsDock(window.settings, hub=window.hub)
    window.targets_panel = dock
    window.targets_dock = window._dock("Targets", dock, Qt.DockWidgetArea.BottomDockWidgetArea,
                                       "targets")
    window.tabifyDockWidget(window.problems_dock, window.targets_dock)
    window.targets_dock.hide()
    view_menu = next((a.menu() for a in window.menuBar().actions() if a.text() == "&View"), None)
    if view_menu is not None:
        toggle = window.targets_dock.toggleViewAction()
        toggle.setText("&Targets")
        toggle.setShortcut(QKeySequence("Ctrl+Shift+T"))
        toggle.triggered.connect(lambda on: on and window.targets_dock.raise_())
        view_menu.addAction(toggle)
    overlay = TargetsCanvasOverlay(window, dock)
    window.targets_overlay = overlay
    dock.opActivated.connect(lambda sg, k: _show(window, sg, k))
    dock.editRequested.connect(window.apply_edit)
    dock.reportShown.connect(lambda _result: (overlay.refresh(), window._show_problems()))
    window.hub.subscribe(lambda _ws: overlay.refresh(), MODEL, NAVIGATION, REPORT)
    return dock
