"""The graph canvas's view: zoom (wheel, keys), pan (drag), fit, click and double-click.

Clicks are resolved against the scene's arrays (`GraphScene.node_at/edge_at`) rather than
Qt's item hit testing, because the items are batches; a press that moves more than a few
pixels is a pan, not a click.
"""
from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (QContextMenuEvent, QKeyEvent, QMouseEvent, QPainter, QResizeEvent,
                           QWheelEvent)
from PySide6.QtWidgets import QFrame, QGraphicsView, QToolTip, QWidget

from . import style
from .graph_scene import GraphScene

MIN_ZOOM, MAX_ZOOM = 0.0001, 6.0
ZOOM_STEP = 1.2
CLICK_SLOP = 4  # pixels a press may move and still be a click
# the smallest zoom Fit Graph goes to: comfortably above style.LOD_TEXT (0.45), where the
# boxes' titles and options are drawn
READABLE_ZOOM = 0.5


class GraphView(QGraphicsView):
    """Shows a `GraphScene`; emits what the user clicked in scene terms (node row, edge)."""

    nodeClicked = Signal(int)
    nodeDoubleClicked = Signal(int)
    edgeClicked = Signal(int)
    backgroundClicked = Signal()
    # right-click: ("node", row) or ("edge", edge) and the global position for a menu
    contextRequested = Signal(str, int, QPoint)
    viewChanged = Signal()  # scrolled or zoomed: the minimap follows

    def __init__(self, scene: GraphScene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setOptimizationFlags(QGraphicsView.OptimizationFlag.DontAdjustForAntialiasing)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setMouseTracking(True)
        self._press: QPoint | None = None
        self.horizontalScrollBar().valueChanged.connect(self.viewChanged)
        self.verticalScrollBar().valueChanged.connect(self.viewChanged)

    def reserve(self, right: int, bottom: int) -> None:
        """Keep a margin of the canvas free of the graph at its right and bottom (the
        overview map sits there)."""
        m = self.viewportMargins()
        if (m.right(), m.bottom()) != (right, bottom):
            self.setViewportMargins(0, 0, right, bottom)

    @property
    def graph_scene(self) -> GraphScene:
        return self.scene()  # type: ignore[return-value]

    # -- zoom -------------------------------------------------------------------------------
    def zoom(self) -> float:
        return self.transform().m11()

    def set_zoom(self, factor: float, anchor_under_mouse: bool = False) -> None:
        factor = min(max(factor, MIN_ZOOM), MAX_ZOOM)
        old = self.transformationAnchor()
        if not anchor_under_mouse:
            self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        s = factor / self.zoom()
        self.scale(s, s)
        self.setTransformationAnchor(old)
        self.viewChanged.emit()

    def zoom_in(self) -> None:
        self.set_zoom(self.zoom() * ZOOM_STEP)

    def zoom_out(self) -> None:
        self.set_zoom(self.zoom() / ZOOM_STEP)

    def fit_all(self, min_zoom: float = MIN_ZOOM, focus: QPointF | None = None) -> None:
        """The whole graph in view, but never blown up past 100% for tiny graphs.

        With ``min_zoom`` it is never shrunk below that either (a long chain fitted whole is
        a stripe of unlabeled bars): the view then shows ``focus`` (default: the top of the
        graph) at that zoom, and the overview map shows the rest.
        """
        rect = self.sceneRect()
        if rect.isEmpty():
            return
        self.fitInView(rect, Qt.AspectRatioMode.KeepAspectRatio)
        if self.zoom() > 1.0:
            self.set_zoom(1.0)
        if self.zoom() < min_zoom:
            self.set_zoom(min_zoom)
            self.centerOn(focus if focus is not None else self.start_point())
        else:
            self.centerOn(rect.center())
        self.viewChanged.emit()

    def start_point(self) -> QPointF:
        """Where a graph larger than the view is read from: its top-left corner, unless
        the graph's input (its first input box; else its topmost box) would then be out
        of view, in which case around the input, from the top."""
        rect = self.sceneRect()
        zoom = max(self.zoom(), 1e-9)
        half_w = self.viewport().width() / 2 / zoom
        half_h = self.viewport().height() / 2 / zoom
        x, y = rect.left() + half_w, rect.top() + half_h
        first = self.graph_scene.first_box()
        if first is not None:
            if abs(first.center().x() - x) > half_w - first.width() / 2 - 8 / zoom:
                x = first.center().x()
            if first.bottom() > rect.top() + 2 * half_h - 8 / zoom:
                y = first.top() - 24 / zoom + half_h
        return QPointF(min(x, rect.center().x()) if rect.width() < 2 * half_w else x,
                       min(y, rect.center().y()) if rect.height() < 2 * half_h else y)

    def fit_width(self) -> None:
        """Fit the graph's width and show its top: how a deep, narrow graph is best read."""
        rect = self.sceneRect()
        if rect.isEmpty():
            return
        vw = max(self.viewport().width() - 4, 1)
        self.set_zoom(min(vw / rect.width(), 1.0))
        self.centerOn(rect.center().x(), rect.top() + self.viewport().height() / 2 / self.zoom())
        self.viewChanged.emit()

    def show_rect(self, rect: QRectF, min_zoom: float = 0.75) -> None:
        """Bring a box into view at a readable zoom."""
        if self.zoom() < min_zoom:
            self.set_zoom(min_zoom)
        self.centerOn(rect.center())
        self.viewChanged.emit()

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt API
        if event.modifiers() & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.AltModifier):
            super().wheelEvent(event)  # scroll
            return
        delta = event.angleDelta().y() or event.pixelDelta().y()
        if not delta:
            return
        self.set_zoom(self.zoom() * ZOOM_STEP ** (delta / 120.0), anchor_under_mouse=True)
        event.accept()

    # -- clicks -----------------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        if event.button() == Qt.MouseButton.LeftButton:
            self._press = event.position().toPoint()
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        super().mouseReleaseEvent(event)
        press, self._press = self._press, None
        if press is None or event.button() != Qt.MouseButton.LeftButton:
            return
        if (event.position().toPoint() - press).manhattanLength() > CLICK_SLOP:
            return
        self.click_at(self.mapToScene(event.position().toPoint()))

    def _edge_at(self, pos: QPointF) -> int | None:
        """The edge under ``pos``: its line, or its shape label where labels are drawn."""
        edge = self.graph_scene.edge_at(pos, 6.0 / max(self.zoom(), 1e-6))
        if edge is None and self.zoom() >= style.LOD_EDGE_LABELS:
            edge = self.graph_scene.label_edge_at(pos)
        return edge

    def click_at(self, pos: QPointF) -> None:
        """Select what is at scene position ``pos`` (a box, else an edge or its label, else
        nothing)."""
        row = self.graph_scene.node_at(pos)
        if row is not None:
            self.nodeClicked.emit(row)
            return
        edge = self._edge_at(pos)
        if edge is not None:
            self.edgeClicked.emit(edge)
        else:
            self.backgroundClicked.emit()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        """Escape on the canvas selects nothing, as a click on empty canvas does."""
        if event.key() == Qt.Key.Key_Escape and event.modifiers() == Qt.KeyboardModifier.NoModifier:
            self.backgroundClicked.emit()
            event.accept()
            return
        super().keyPressEvent(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        row = self.graph_scene.node_at(self.mapToScene(event.position().toPoint()))
        if row is not None:
            self.nodeDoubleClicked.emit(row)
            event.accept()
            return
        super().mouseDoubleClickEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:  # noqa: N802 - Qt API
        pos = self.mapToScene(event.pos())
        row = self.graph_scene.node_at(pos)
        if row is not None:
            self.contextRequested.emit("node", row, event.globalPos())
            return
        edge = self._edge_at(pos)
        if edge is not None:
            self.contextRequested.emit("edge", edge, event.globalPos())

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        super().mouseMoveEvent(event)
        if event.buttons() != Qt.MouseButton.NoButton:
            return
        data = self.graph_scene.data
        if data is None:
            return
        pos = self.mapToScene(event.position().toPoint())
        row = data.node_at(pos.x(), pos.y())
        if row is None:
            QToolTip.hideText()
            return
        lab = data.labels[row]
        if lab.kind == "op" and lab.origin is not None:
            text = (f"subgraph {lab.origin[0]} #{lab.origin[1]} {lab.title}, inlined from "
                    f"{lab.group}\n{lab.options}\n(double-click to open its decomposition)")
        elif lab.kind == "op":
            text = f"#{lab.op_index} {lab.title} {lab.version}\n{data.options_text(row)}"
            if lab.constants:
                text += f"\n{lab.constants}"
            if lab.calls:
                text += "\ncalls " + ", ".join(f"{k}: subgraph {v}" for k, v in lab.calls.items())
                text += "\n(double-click to open)"
        else:
            text = f"{lab.kind} tensor {lab.tensor}: {lab.title}\n{lab.options}"
        QToolTip.showText(event.globalPosition().toPoint(), text, self)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self.viewChanged.emit()
