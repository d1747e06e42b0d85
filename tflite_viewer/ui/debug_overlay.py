"""What the debugger draws over the graph canvas: one item for the whole scene.

A step changes a few booleans, so the overlay keeps numpy masks (executed operators,
computed edges, breakpoints, a per-op heat value) and paints only what intersects the
exposed rectangle, selected with vectorized masks: a step costs a mask copy and one
``update()``, never a rebuild of the scene's batch items, at 20,000 operators as at 20.

Drawn, bottom to top: a tint on executed operators, computed edges in a stronger colour,
breakpoint dots, and the operator about to run (a thick frame and an arrow at its left).
The colours by op time or by the error against LiteRT are overlays (`state.overlays`).
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPainterPath, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from . import style
from .state.scene_data import SceneData

EXECUTED_TINT = QColor(31, 136, 61, 46)
COMPUTED_EDGE = QColor("#1f883d")
CURRENT = QColor("#d4760a")
BREAKPOINT = QColor("#cf222e")
#: how far around an op box the overlay draws (frame, arrow, breakpoint dot, at any zoom)
MARGIN = 60.0


def _lod(painter: QPainter, option: QStyleOptionGraphicsItem) -> float:
    return option.levelOfDetailFromTransform(painter.worldTransform())


class DebugOverlayItem(QGraphicsItem):
    """The debugger's marks on one `SceneData` (see the module docstring)."""

    def __init__(self, data: SceneData, n_ops: int) -> None:
        super().__init__()
        self._data = data
        # composites drawn expanded: the inlined operators are "ops" n_ops + slot
        inline = getattr(data, "inline", None)
        slots = inline.slots() if inline is not None else []
        self._op_rows = np.full(n_ops + len(slots), -1, np.int64)
        for op, row in data.op_node.items():
            if 0 <= op < n_ops:
                self._op_rows[op] = row
        for k, origin in enumerate(slots):
            self._op_rows[n_ops + k] = inline.node_of.get(origin, -1)
        self._edge_boxes: np.ndarray | None = None
        self._executed = np.zeros(len(self._op_rows), bool)
        self._computed_edges = np.zeros(len(data.edge_points), bool)
        self._breakpoints: dict[int, bool] = {}
        self._current: int | None = None
        m = 40.0
        self._bounds = QRectF(-m, -m, max(data.width, 1.0) + 2 * m, max(data.height, 1.0) + 2 * m)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(5)

    # -- state ------------------------------------------------------------------------------
    def set_state(self, *, executed: np.ndarray | None = None, computed: np.ndarray | None = None,
                  current: int | None = None, edges: np.ndarray | None = None) -> None:
        """Executed ops (mask over op indices, then the inlined ops' slots), computed
        tensors (mask over tensor indices; ``edges``: a mask over the edges, given instead
        when composites are inlined), the op about to run.  Only what changed is repainted
        (a step: two op boxes and the edges that became computed), so a step costs the same
        at 20,000 ops as at 20."""
        n = len(self._op_rows)
        new_exec = np.zeros(n, bool)
        if executed is not None:  # masks of another length would be another subgraph's
            executed = np.asarray(executed, bool)[:n]
            new_exec[:len(executed)] = executed
        t = self._data.edge_tensor
        new_edges = np.zeros(len(t), bool)
        if edges is not None:
            new_edges[:] = np.asarray(edges, bool)[:len(t)]
        elif computed is not None and len(t):
            ok = (t >= 0) & (t < len(computed))
            new_edges[ok] = np.asarray(computed, bool)[t[ok]]
        changed_ops = np.flatnonzero(new_exec != self._executed).tolist()
        changed_edges = np.flatnonzero(new_edges != self._computed_edges)
        old_current = self._current
        self._executed, self._computed_edges, self._current = new_exec, new_edges, current
        if len(changed_ops) + len(changed_edges) > 64:
            self.update()
            return
        m = self._margin()
        dirty = QRectF()
        moved = [old_current, current] if old_current != current else []
        for op in changed_ops + moved:
            r = self.op_rect(op) if op is not None else None
            if r is not None:
                dirty = dirty.united(r.adjusted(-m, -m, m, m))
        if changed_edges.size:
            b = self._boxes_of_edges()[changed_edges]
            box = QRectF(QPointF(b[:, 0].min(), b[:, 1].min()),
                         QPointF(b[:, 2].max(), b[:, 3].max()))
            dirty = dirty.united(box.adjusted(-4, -4, 4, 4))
        if not dirty.isEmpty():
            self.update(dirty)

    def _margin(self) -> float:
        """Scene units the marks reach past a box: they keep a minimum size on screen, so
        they grow when zoomed out."""
        scene = self.scene()
        views = scene.views() if scene is not None else []
        zoom = views[0].transform().m11() if views else 1.0
        return MARGIN / min(max(zoom, 0.02), 1.0)

    def set_breakpoints(self, ops: dict[int, bool]) -> None:
        """Op index -> enabled, for the dots (repainted only when they changed: the
        debugger sets them at every stop, and a whole-scene update costs a step)."""
        ops = dict(ops)
        if ops == self._breakpoints:
            return
        self._breakpoints = ops
        self.update()

    @property
    def current(self) -> int | None:
        return self._current

    @property
    def executed(self) -> np.ndarray:
        return self._executed

    def op_rect(self, op: int) -> QRectF | None:
        if not 0 <= op < len(self._op_rows) or self._op_rows[op] < 0:
            return None
        x, y, w, h = self._data.rects[self._op_rows[op]].tolist()
        return QRectF(x, y, w, h)

    # -- painting ---------------------------------------------------------------------------
    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def _visible_ops(self, mask: np.ndarray, r: QRectF) -> np.ndarray:
        """Op indices in ``mask`` whose box intersects ``r``."""
        ops = np.flatnonzero(mask & (self._op_rows >= 0))
        if not ops.size:
            return ops
        b = self._data.rects[self._op_rows[ops]]
        hit = ((b[:, 0] <= r.right()) & (b[:, 0] + b[:, 2] >= r.left())
               & (b[:, 1] <= r.bottom()) & (b[:, 1] + b[:, 3] >= r.top()))
        return ops[hit]

    def _boxes_of_edges(self) -> np.ndarray:
        if self._edge_boxes is None:
            boxes = np.zeros((len(self._data.edge_points), 4))
            for e, pts in enumerate(self._data.edge_points):
                if pts:
                    a = np.asarray(pts, np.float64)
                    lo, hi = a.min(axis=0), a.max(axis=0)
                    boxes[e] = (lo[0], lo[1], hi[0], hi[1])
            self._edge_boxes = boxes
        return self._edge_boxes

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        r = option.exposedRect
        lod = _lod(painter, option)
        rects = self._data.rects
        painter.setPen(Qt.PenStyle.NoPen)
        done = self._visible_ops(self._executed, r)
        if done.size:
            painter.setBrush(QBrush(EXECUTED_TINT))
            painter.drawRects([QRectF(*rects[self._op_rows[op]].tolist()) for op in done.tolist()])
        if self._computed_edges.any():
            boxes = self._boxes_of_edges()
            sel = np.flatnonzero(self._computed_edges & (boxes[:, 0] <= r.right())
                                 & (boxes[:, 2] >= r.left()) & (boxes[:, 1] <= r.bottom())
                                 & (boxes[:, 3] >= r.top()))
            if sel.size:
                pen = QPen(COMPUTED_EDGE, 2.2)
                if lod < style.LOD_DETAIL:
                    pen = QPen(COMPUTED_EDGE, 2)
                    pen.setCosmetic(True)
                painter.setPen(pen)
                painter.setBrush(Qt.BrushStyle.NoBrush)
                path = QPainterPath()
                for e in sel.tolist():
                    pts = self._data.edge_points[e]
                    if len(pts) >= 2:
                        path.moveTo(*pts[0])
                        for p in pts[1:]:
                            path.lineTo(*p)
                painter.drawPath(path)
        grow = 3.0 / max(lod, 0.05) if lod < 1 else 3.0
        if self._breakpoints:
            mask = np.zeros(len(self._op_rows), bool)
            mask[[op for op in self._breakpoints if 0 <= op < len(mask)]] = True
            radius = max(6.0, 6.0 / max(lod, 0.05)) if lod < 1 else 6.0
            for op in self._visible_ops(mask, r).tolist():
                x, y, _w, h = rects[self._op_rows[op]].tolist()
                on = self._breakpoints[op]
                painter.setPen(QPen(BREAKPOINT, 1.5))
                painter.setBrush(BREAKPOINT if on else Qt.BrushStyle.NoBrush)
                painter.drawEllipse(QPointF(x - radius - 4, y + h / 2), radius, radius)
        cur = self._current
        if cur is not None and 0 <= cur < len(self._op_rows) and self._op_rows[cur] >= 0:
            x, y, w, h = rects[self._op_rows[cur]].tolist()
            pen = QPen(CURRENT, 4.0)
            if lod < style.LOD_DETAIL:
                pen.setCosmetic(True)
            painter.setPen(pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(QRectF(x - grow - 2, y - grow - 2, w + 2 * grow + 4,
                                           h + 2 * grow + 4), 8, 8)
            size = max(8.0, 8.0 / max(lod, 0.05)) if lod < 1 else 8.0
            cx, cy = x - grow - 6, y + h / 2
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(CURRENT)
            painter.drawPolygon(QPolygonF([QPointF(cx, cy), QPointF(cx - size * 1.4, cy - size),
                                           QPointF(cx - size * 1.4, cy + size)]))
