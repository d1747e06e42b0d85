"""The graph canvas's scene: a handful of batch items drawing a laid-out subgraph.

A QGraphicsItem per box costs a Python object, a C++ object and a Python `paint()` call
per frame each; at 20,000 operators that is seconds to build and a sluggish pan.  Here the
boxes, edges and edge labels are cut into spatial chunks (a few hundred each) and every
chunk is one item that draws its share: flat rectangles in one `drawRects` call per colour
when zoomed out, and full boxes with text only for what intersects the exposed rectangle
when zoomed in.  Hit testing is done on the `SceneData` arrays, not with Qt items, and the
selection and find results are drawn by one overlay item on top.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFontMetricsF, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsScene, QStyleOptionGraphicsItem, QWidget

from . import style
from .state.scene_data import LINE_H, PAD_X, PAD_Y, TITLE_H, SceneData, TextMeasure

NODE_CHUNK = 256
EDGE_CHUNK = 384
SCENE_MARGIN = 40.0
ARROW = 5.0
#: Stroking a chunk of edges costs the same however small the exposed area is, and the
#: debugger repaints a few op boxes at every step.  Up to this many chunks (a graph of a
#: few thousand edges) the stroked edges are kept as a pixmap in device coordinates
#: (redrawn on zoom only): a step's repaint on palm_detection goes from 1.3 to 0.3 ms.
#: Beyond it, every chunk in view would hold a pixmap up to the viewport's size (more than
#: Qt's pixmap cache keeps), so big scenes stroke directly; their chunks are local, and a
#: step's small repaint meets few of them.
CACHED_EDGE_CHUNKS = 4


def _lod(painter: QPainter, option: QStyleOptionGraphicsItem) -> float:
    return option.levelOfDetailFromTransform(painter.worldTransform())


def _visible(boxes: np.ndarray, r: QRectF) -> np.ndarray:
    """Rows of (x, y, w, h) boxes that intersect ``r``."""
    x0, y0, x1, y1 = r.left(), r.top(), r.right(), r.bottom()
    return np.flatnonzero((boxes[:, 0] <= x1) & (boxes[:, 0] + boxes[:, 2] >= x0)
                          & (boxes[:, 1] <= y1) & (boxes[:, 1] + boxes[:, 3] >= y0))


def _bounds(boxes: np.ndarray, pad: float = 2.0) -> QRectF:
    if not len(boxes):
        return QRectF()
    x0, y0 = boxes[:, 0].min(), boxes[:, 1].min()
    x1, y1 = (boxes[:, 0] + boxes[:, 2]).max(), (boxes[:, 1] + boxes[:, 3]).max()
    return QRectF(x0 - pad, y0 - pad, x1 - x0 + 2 * pad, y1 - y0 + 2 * pad)


@dataclass
class NodeChunk:
    rows: np.ndarray
    boxes: np.ndarray
    flat: list[tuple[str, list[QRectF]]]  # colour category -> its boxes, for far zoom
    bounds: QRectF


@dataclass
class EdgeChunk:
    path: QPainterPath
    arrows: QPainterPath
    bounds: QRectF


@dataclass
class LabelChunk:
    labels: list[tuple[float, float, str, int]]
    boxes: np.ndarray
    bounds: QRectF


@dataclass
class ScenePlan:
    nodes: list[NodeChunk]
    edges: list[EdgeChunk]
    labels: list[LabelChunk]


def plan_scene(data: SceneData, measure: TextMeasure | None = None) -> ScenePlan:
    """Cut a scene into chunks and build their paths and rectangle lists.

    Only reentrant value types (QPainterPath, QRectF) are made here, so this runs in the
    worker thread; what is left for the GUI thread is creating a few hundred items.
    """
    measure = measure or TextMeasure()
    nodes: list[NodeChunk] = []
    n = len(data.rects)
    if n:
        order = np.lexsort((data.rects[:, 0], data.rects[:, 1]))
        for start in range(0, n, NODE_CHUNK):
            rows = order[start:start + NODE_CHUNK]
            boxes = data.rects[rows]
            by_color: dict[str, list[QRectF]] = {}
            for row, (x, y, w, h) in zip(rows.tolist(), boxes.tolist()):
                lab = data.labels[row]
                by_color.setdefault(lab.category if lab.kind == "op" else lab.kind, []).append(QRectF(x, y, w, h))
            nodes.append(NodeChunk(rows, boxes, list(by_color.items()), _bounds(boxes)))
    edges = _edge_chunks(data)
    labels: list[LabelChunk] = []
    ordered = sorted(data.edge_labels, key=lambda item: (item[1], item[0]))
    for start in range(0, len(ordered), NODE_CHUNK):
        chunk = ordered[start:start + NODE_CHUNK]
        boxes = np.array([(x, y, measure.width("small", text), 13.0) for x, y, text, _ in chunk],
                         dtype=np.float64).reshape(-1, 4)
        labels.append(LabelChunk(chunk, boxes, _bounds(boxes)))
    return ScenePlan(nodes, edges, labels)


def _edge_chunks(data: SceneData) -> list[EdgeChunk]:
    """Edges sorted by their top, cut into chunks of one path (plus arrow heads) each.

    Works on the flat point arrays of `edge_routes.Polylines`: the only per-point Python
    work left is the QPainterPath calls themselves.
    """
    lines = data.edge_points
    if not len(lines):
        return []
    xs, ys, start = _flat_points(lines)
    count = np.diff(start)
    drawn = count >= 2
    top = np.zeros(len(count))
    nonempty = count > 0
    if nonempty.any():
        top[nonempty] = np.minimum.reduceat(ys, start[:-1][nonempty])
    heads = _arrow_heads(xs, ys, start, drawn)
    order = np.argsort(top, kind="stable")
    x_list, y_list, bounds = xs.tolist(), ys.tolist(), start.tolist()
    chunks: list[EdgeChunk] = []
    for first in range(0, len(order), EDGE_CHUNK):
        path, arrows = QPainterPath(), QPainterPath()
        move, line = path.moveTo, path.lineTo
        for e in order[first:first + EDGE_CHUNK].tolist():
            a, b = bounds[e], bounds[e + 1]
            if b - a < 2:
                continue
            move(x_list[a], y_list[a])
            for i in range(a + 1, b):
                line(x_list[i], y_list[i])
            x1, y1, lx, ly, rx, ry = heads[e]
            arrows.moveTo(x1, y1)
            arrows.lineTo(lx, ly)
            arrows.lineTo(rx, ry)
            arrows.closeSubpath()
        chunks.append(EdgeChunk(path, arrows, path.boundingRect().adjusted(-ARROW, -ARROW, ARROW, ARROW)))
    return chunks


def _flat_points(lines) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(xs, ys, start offsets) of polylines given as arrays or as lists of points."""
    if all(hasattr(lines, f) for f in ("xs", "ys", "start")):
        return np.asarray(lines.xs, float), np.asarray(lines.ys, float), np.asarray(lines.start, np.int64)
    count = np.array([len(p) for p in lines], dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(count)]).astype(np.int64)
    pts = np.array([xy for p in lines for xy in p], dtype=np.float64).reshape(-1, 2)
    return pts[:, 0].copy(), pts[:, 1].copy(), start


def _arrow_heads(xs: np.ndarray, ys: np.ndarray, start: np.ndarray, drawn: np.ndarray) -> list:
    """Per edge the tip and two base corners of its arrow head (a small triangle pointing along its last segment)."""
    out = np.zeros((len(drawn), 6))
    e = np.flatnonzero(drawn)
    if len(e):
        last = start[e + 1] - 1
        x0, y0, x1, y1 = xs[last - 1], ys[last - 1], xs[last], ys[last]
        dx, dy = x1 - x0, y1 - y0
        n = np.maximum(np.hypot(dx, dy), 1e-6)
        ux, uy = dx / n, dy / n
        bx, by = x1 - ux * ARROW * 1.6, y1 - uy * ARROW * 1.6
        out[e] = np.stack([x1, y1, bx - uy * ARROW, by + ux * ARROW, bx + uy * ARROW, by - ux * ARROW], axis=1)
    return out.tolist()


class NodeBatchItem(QGraphicsItem):
    """Up to NODE_CHUNK boxes of one scene, drawn with level of detail."""

    def __init__(self, data: SceneData, chunk: NodeChunk) -> None:
        super().__init__()
        self._data = data
        self._rows = chunk.rows
        self._boxes = chunk.boxes
        self._bounds = chunk.bounds
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self._flat = [(QBrush(style.category_colors(cat)[1]), rects) for cat, rects in chunk.flat]

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        lod = _lod(painter, option)
        if lod < style.LOD_DETAIL:
            painter.setPen(Qt.PenStyle.NoPen)
            for brush, rects in self._flat:
                painter.setBrush(brush)
                painter.drawRects(rects)
            return
        show_text = lod >= style.LOD_TEXT
        for i in _visible(self._boxes, option.exposedRect).tolist():
            draw_node(painter, self._data, int(self._rows[i]), show_text)


def draw_node(painter: QPainter, data: SceneData, row: int, show_text: bool) -> None:
    """One box: an operator (category stripe, name, version, options, constants) or a
    subgraph input/output/variable (a pill with the tensor name and its shape)."""
    lab = data.labels[row]
    x, y, w, h = data.rects[row].tolist()
    rect = QRectF(x, y, w, h)
    f = style.fonts()
    if lab.kind == "op":
        fill, strong = style.category_colors(lab.category)
        painter.setPen(QPen(strong.darker(115), 1.0))
        painter.setBrush(strong)
        painter.drawRoundedRect(rect, 5, 5)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(fill)
        painter.drawRoundedRect(rect.adjusted(5, 1, -1, -1), 4, 4)
        if lab.calls:  # a caller of subgraphs: a double frame says "double-click to open"
            painter.setPen(QPen(strong, 1.0, Qt.PenStyle.DashLine))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(rect.adjusted(-3, -3, 3, 3), 7, 7)
        if lab.origin is not None:  # inlined from a composite: the composite's colour around
            painter.setPen(QPen(style.category_colors("control flow")[1], 1.4,
                                Qt.PenStyle.DotLine))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(rect.adjusted(-4, -4, 4, 4), 8, 8)
        if not show_text:
            return
        left = x + PAD_X + 2
        width = w - PAD_X - 8
        painter.setPen(QColor(style.TEXT))
        painter.setFont(f["title"])
        fm_t = QFontMetricsF(f["title"])
        title = fm_t.elidedText(lab.title, Qt.TextElideMode.ElideRight, width - 22)
        base = y + PAD_Y + fm_t.ascent()
        painter.drawText(QPointF(left, base), title)
        painter.setFont(f["small"])
        painter.setPen(QColor(style.MUTED_TEXT))
        painter.drawText(QPointF(left + fm_t.horizontalAdvance(title) + 5, base), lab.version)
        line_y = y + PAD_Y + TITLE_H
        options = data.options_text(row) if lab.options is None else lab.options
        if options:
            painter.setFont(f["body"])
            painter.setPen(QColor(style.TEXT))
            fm = QFontMetricsF(f["body"])
            painter.drawText(QPointF(left, line_y + fm.ascent() - 1),
                             fm.elidedText(options, Qt.TextElideMode.ElideRight, width))
            line_y += LINE_H
        elif lab.options is None or (lab.constants and h > PAD_Y * 2 + TITLE_H + LINE_H * 1.5):
            line_y += LINE_H  # room reserved for an options line computed late
        if lab.constants:
            painter.setFont(f["small"])
            painter.setPen(QColor(style.MUTED_TEXT))
            fm = QFontMetricsF(f["small"])
            painter.drawText(QPointF(left, line_y + fm.ascent() - 1),
                             fm.elidedText(lab.constants, Qt.TextElideMode.ElideRight, width))
        return
    fill, strong = style.category_colors(lab.kind)
    pen = QPen(strong, 1.6)
    if lab.kind in ("variable", "source"):
        pen.setStyle(Qt.PenStyle.DashLine)
    painter.setPen(pen)
    painter.setBrush(fill)
    painter.drawRoundedRect(rect, h / 2, h / 2)
    if not show_text:
        return
    tag = {"input": "\u25b6 ", "output": "\u25a0 "}.get(lab.kind, "")
    painter.setFont(f["body"])
    painter.setPen(QColor(style.TEXT))
    fm = QFontMetricsF(f["body"])
    painter.drawText(QPointF(x + 12, y + 5 + fm.ascent()),
                     fm.elidedText(tag + lab.title, Qt.TextElideMode.ElideMiddle, w - 22))
    painter.setFont(f["small"])
    painter.setPen(QColor(style.MUTED_TEXT))
    fm = QFontMetricsF(f["small"])
    painter.drawText(QPointF(x + 12, y + 18 + fm.ascent()),
                     fm.elidedText(lab.options or "", Qt.TextElideMode.ElideRight, w - 22))


def edge_path(points: Iterable[tuple[float, float]]) -> QPainterPath:
    path = QPainterPath()
    it = iter(points)
    x, y = next(it)
    path.moveTo(x, y)
    for x, y in it:
        path.lineTo(x, y)
    return path


class EdgeBatchItem(QGraphicsItem):
    """Up to EDGE_CHUNK edges as one path (plus one path of arrow heads)."""

    def __init__(self, chunk: EdgeChunk) -> None:
        super().__init__()
        self._path = chunk.path
        self._arrows = chunk.arrows
        self._bounds = chunk.bounds
        self._pen = QPen(QColor(style.EDGE), 1.3)
        self._thin = QPen(QColor(style.EDGE), 0)  # cosmetic: one pixel at any zoom
        self.setZValue(-1)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        lod = _lod(painter, option)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        if lod < style.LOD_DETAIL:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
            painter.setPen(self._thin)
            painter.drawPath(self._path)
            return
        painter.setPen(self._pen)
        painter.drawPath(self._path)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(style.EDGE))
        painter.drawPath(self._arrows)


class EdgeLabelBatchItem(QGraphicsItem):
    """Edge labels ("1x112x112x32 float32") of one chunk, drawn only when readable."""

    def __init__(self, chunk: LabelChunk) -> None:
        super().__init__()
        self._labels = chunk.labels
        self._boxes = chunk.boxes
        self._ascent = QFontMetricsF(style.fonts()["small"]).ascent()
        self._bounds = chunk.bounds
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(1)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        if _lod(painter, option) < style.LOD_EDGE_LABELS:
            return
        painter.setFont(style.fonts()["small"])
        painter.setPen(QColor(style.EDGE_LABEL))
        for i in _visible(self._boxes, option.exposedRect).tolist():
            x, y, text, _ = self._labels[i]
            painter.drawText(QPointF(x, y + self._ascent), text)


class HighlightItem(QGraphicsItem):
    """Selection, its neighbourhood and find results, drawn over everything else."""

    def __init__(self, data: SceneData) -> None:
        super().__init__()
        self._data = data
        self._selected_nodes: list[int] = []
        self._selected_edges: list[int] = []
        self._related_edges: list[int] = []
        self._found_nodes: list[int] = []
        self._found_edges: list[int] = []
        self._current_found: tuple[str, int] | None = None
        self._bounds = QRectF()
        self.setZValue(10)

    def set_highlight(self, *, nodes: Iterable[int] = (), edges: Iterable[int] = (),
                      related: Iterable[int] = (), found_nodes: Iterable[int] = (),
                      found_edges: Iterable[int] = (),
                      current: tuple[str, int] | None = None) -> None:
        self.prepareGeometryChange()
        self._selected_nodes = list(nodes)
        self._selected_edges = list(edges)
        self._related_edges = list(related)
        self._found_nodes = list(found_nodes)
        self._found_edges = list(found_edges)
        self._current_found = current
        rects = [self._data.rects[r] for r in self._selected_nodes + self._found_nodes]
        for e in self._selected_edges + self._related_edges + self._found_edges:
            pts = np.asarray(self._data.edge_points[e], dtype=np.float64)
            if len(pts):
                lo, hi = pts.min(axis=0), pts.max(axis=0)
                rects.append(np.array([lo[0], lo[1], hi[0] - lo[0], hi[1] - lo[1]]))
        self._bounds = _bounds(np.array(rects).reshape(-1, 4), pad=8.0) if rects else QRectF()
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        lod = _lod(painter, option)
        grow = 3.0 / max(lod, 0.05) if lod < 1 else 3.0  # stay visible when zoomed out
        painter.setBrush(Qt.BrushStyle.NoBrush)
        d = self._data
        for edges, color, width in ((self._found_edges, style.FIND_HIGHLIGHT, 5.0),
                                    (self._related_edges, style.RELATED, 2.2),
                                    (self._selected_edges, style.SELECTION, 3.0)):
            if not edges:
                continue
            pen = QPen(QColor(color), width if lod >= style.LOD_DETAIL else 0)
            if lod < style.LOD_DETAIL:
                pen.setWidthF(3)
                pen.setCosmetic(True)
            painter.setPen(pen)
            for e in edges:
                if len(d.edge_points[e]) >= 2:
                    painter.drawPath(edge_path(d.edge_points[e]))
        for rows, color, width in ((self._found_nodes, style.FIND_HIGHLIGHT, 4.0),
                                   (self._selected_nodes, style.SELECTION, 3.0)):
            pen = QPen(QColor(color), width)
            if lod < style.LOD_DETAIL:
                pen.setCosmetic(True)
            painter.setPen(pen)
            for r in rows:
                x, y, w, h = d.rects[r].tolist()
                painter.drawRoundedRect(QRectF(x - grow, y - grow, w + 2 * grow, h + 2 * grow), 7, 7)


class GraphScene(QGraphicsScene):
    """The scene of one `SceneData` (replaced wholesale when another subgraph is shown)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.data: SceneData | None = None
        self.highlight: HighlightItem | None = None
        self._debug_overlay = None  # made on demand by debug_overlay()
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        self.setBackgroundBrush(QColor(style.BACKGROUND))

    def set_data(self, data: SceneData | None) -> None:
        """Replace everything drawn by the boxes and edges of ``data``."""
        self.clear()
        self.data = data
        self.highlight = None
        self._debug_overlay = None  # clear() deleted it
        if data is None:
            self.setSceneRect(QRectF(0, 0, 1, 1))
            return
        plan = data.plan if isinstance(data.plan, ScenePlan) else plan_scene(data, style.text_measure())
        data.plan = plan
        for chunk in plan.nodes:
            self.addItem(NodeBatchItem(data, chunk))
        cached = len(plan.edges) <= CACHED_EDGE_CHUNKS
        for edge_chunk in plan.edges:
            item = EdgeBatchItem(edge_chunk)
            if cached:
                item.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            self.addItem(item)
        for label_chunk in plan.labels:
            self.addItem(EdgeLabelBatchItem(label_chunk))
        self.highlight = HighlightItem(data)
        self.addItem(self.highlight)
        m = SCENE_MARGIN
        self.setSceneRect(QRectF(-m, -m, max(data.width, 1.0) + 2 * m, max(data.height, 1.0) + 2 * m))

    # -- hit testing (on the arrays, not on Qt items) ------------------------------------------
    def node_at(self, pos: QPointF) -> int | None:
        return self.data.node_at(pos.x(), pos.y()) if self.data else None

    def edge_at(self, pos: QPointF, tolerance: float) -> int | None:
        return self.data.edge_at(pos.x(), pos.y(), tolerance) if self.data else None

    def label_edge_at(self, pos: QPointF, margin: float = 2.0) -> int | None:
        """The edge whose shape label ("1x56x56x24 float32") is under ``pos``: a label is
        a much bigger target than its one-pixel line."""
        data = self.data
        plan = getattr(data, "plan", None) if data is not None else None
        if plan is None:
            return None
        x, y = pos.x(), pos.y()
        for chunk in plan.labels:
            if not chunk.bounds.adjusted(-margin, -margin, margin, margin).contains(pos):
                continue
            b = chunk.boxes
            hit = np.flatnonzero((b[:, 0] - margin <= x) & (x <= b[:, 0] + b[:, 2] + margin)
                                 & (b[:, 1] - margin <= y) & (y <= b[:, 1] + b[:, 3] + margin))
            for i in hit.tolist():
                edges = data.tensor_edges.get(int(chunk.labels[i][3]), [])
                if edges:
                    return int(edges[0])
        return None

    def first_box(self) -> QRectF | None:
        """Where the graph starts: its first input's box (else its topmost box, the
        leftmost of them)."""
        data = self.data
        if data is None or not len(data.rects):
            return None
        inputs = [k for k, lab in enumerate(data.labels) if lab.kind == "input"]
        r = data.rects
        rows = inputs or range(len(r))
        first = min(rows, key=lambda k: (round(float(r[k][1])), float(r[k][0])))
        return self.node_rect(first)

    def node_rect(self, row: int) -> QRectF:
        x, y, w, h = self.data.rects[row].tolist()
        return QRectF(x, y, w, h)

    # -- the debugger's marks (ui/debug_overlay.py) -------------------------------------------
    def debug_overlay(self, n_ops: int):
        """The overlay item of the shown subgraph (``n_ops`` operators), made on first use."""
        from .debug_overlay import DebugOverlayItem

        if self.data is None:
            return None
        if self._debug_overlay is None:
            self._debug_overlay = DebugOverlayItem(self.data, n_ops)
            self.addItem(self._debug_overlay)
        return self._debug_overlay

    def drop_debug_overlay(self) -> None:
        """Remove the debugger's marks (the session ended)."""
        if self._debug_overlay is not None:
            self.removeItem(self._debug_overlay)
            self._debug_overlay = None
