"""The Generation view's two pictures: the logits' SQNR by decode step (a line chart) and
the steps x layers heat map of each layer's worst op output SQNR (`state.generation.heat_image`).

Both show the chosen step (`set_step`) and say which step a click chose (`stepClicked`);
a heat-map cell also names its op (`cellClicked(step, column)`), which the view turns
into the op to select on the canvas.  Plain painted widgets: a few dozen steps and a few
hundred ops need no charting library.
"""
from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from ..state.generation import heat_image
from ..state.quant import number_text

MARGIN_LEFT, MARGIN = 52, 6
LINE = QColor("#0969da")
GRID = QColor("#d0d7de")
CHOSEN = QColor("#1f2328")
PART = QColor("#cf222e")


class _Chart(QWidget):
    """What both pictures share: a step under the mouse, the chosen step, the empty text."""

    stepClicked = Signal(int)

    def __init__(self, empty: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.empty = empty
        self.step = 0
        self.setMinimumHeight(45)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMouseTracking(True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(260, 110)

    def set_step(self, step: int) -> None:
        self.step = step
        self.update()

    def plot_rect(self) -> QRectF:
        return QRectF(MARGIN_LEFT, MARGIN + 12, max(self.width() - MARGIN_LEFT - MARGIN, 1),
                      max(self.height() - 2 * MARGIN - 24, 1))

    def _empty(self, p: QPainter) -> None:
        p.setPen(QColor("#656d76"))
        p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap,
                   self.empty)


class LogitsChart(_Chart):
    """The logits' SQNR (dB) of each decode step; steps whose top-1 differs are red dots,
    the chosen step a vertical line."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Logits SQNR by step: run the generation", parent)
        self.values = np.zeros(0)
        self.agree: list[bool] = []

    def set_values(self, values: np.ndarray, agree: list[bool]) -> None:
        self.values, self.agree = np.asarray(values, np.float64), list(agree)
        self.update()

    def _range(self) -> tuple[float, float]:
        finite = self.values[np.isfinite(self.values)]
        if not finite.size:
            return 0.0, 1.0
        lo, hi = float(finite.min()), float(finite.max())
        if hi - lo < 1e-6:
            lo, hi = lo - 1, hi + 1
        return lo, hi

    def _x(self, r: QRectF, step: int) -> float:
        n = len(self.values)
        return r.left() + (r.width() * step / (n - 1) if n > 1 else r.width() / 2)

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        if not len(self.values):
            self._empty(p)
            return
        r, (lo, hi) = self.plot_rect(), self._range()

        def y(v: float) -> float:
            return r.bottom() - (v - lo) / (hi - lo) * r.height()
        p.setPen(QPen(GRID, 1))
        p.drawRect(r)
        p.setPen(QColor("#656d76"))
        for v in (lo, hi):
            p.drawText(QRectF(0, y(v) - 8, MARGIN_LEFT - 4, 16),
                       Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, f"{v:.1f}")
        p.drawText(QRectF(MARGIN_LEFT, 0, r.width(), 14), Qt.AlignmentFlag.AlignLeft,
                   "logits SQNR (dB) by decode step")
        p.drawText(QRectF(MARGIN_LEFT, r.bottom() + 2, r.width(), 14),
                   Qt.AlignmentFlag.AlignRight, f"step 0 .. {len(self.values) - 1}")
        p.setPen(QPen(CHOSEN, 1, Qt.PenStyle.DashLine))
        p.drawLine(QPointF(self._x(r, self.step), r.top()), QPointF(self._x(r, self.step), r.bottom()))
        path = QPainterPath()
        points = [(self._x(r, k), y(v)) for k, v in enumerate(self.values) if math.isfinite(v)]
        for k, (px, py) in enumerate(points):
            path.moveTo(px, py) if k == 0 else path.lineTo(px, py)
        p.setPen(QPen(LINE, 2))
        p.drawPath(path)
        for k, v in enumerate(self.values):
            if math.isfinite(v):
                bad = k < len(self.agree) and not self.agree[k]
                p.setBrush(PART if bad else LINE)
                p.setPen(Qt.PenStyle.NoPen)
                p.drawEllipse(QPointF(self._x(r, k), y(v)), 3.5 if bad else 2.5, 3.5 if bad else 2.5)

    def step_at(self, x: float) -> int | None:
        n = len(self.values)
        if not n:
            return None
        r = self.plot_rect()
        k = round((x - r.left()) / r.width() * (n - 1)) if n > 1 else 0
        return min(max(k, 0), n - 1)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        k = self.step_at(event.position().x())
        if k is not None:
            self.stepClicked.emit(k)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        k = self.step_at(event.position().x())
        if k is not None:
            agree = "" if k >= len(self.agree) or self.agree[k] else ", top-1 differs"
            QToolTip.showText(event.globalPosition().toPoint(),
                              f"step {k}: {number_text(float(self.values[k]))} dB{agree}", self)


class HeatMap(_Chart):
    """Steps (rows) x layers (columns; `state.generation.by_layer`) of the worst output
    SQNR of each layer's ops, red to green; the chosen step's row is outlined.
    ``cellClicked(step, column)``."""

    cellClicked = Signal(int, int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Steps x layers heat map of each layer's worst op output SQNR", parent)
        self.matrix = np.zeros((0, 0))
        self.labels: list[str] = []

    def set_matrix(self, matrix: np.ndarray, labels: list[str]) -> None:
        self.matrix, self.labels = np.asarray(matrix, np.float64), list(labels)
        if self.matrix.size:
            pixels = np.ascontiguousarray(heat_image(self.matrix))
            rows, cols = self.matrix.shape
            self._image = QImage(pixels.data, cols, rows, 3 * cols,
                                 QImage.Format.Format_RGB888).copy()
        self.update()

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        if not self.matrix.size:
            self._empty(p)
            return
        r = self.plot_rect()
        rows, cols = self.matrix.shape
        h = r.height() / rows
        p.drawImage(r, self._image)  # one pixel per cell, scaled without smoothing
        p.setPen(QColor("#656d76"))
        p.drawText(QRectF(MARGIN_LEFT, 0, r.width(), 14), Qt.AlignmentFlag.AlignLeft,
                   f"worst op output SQNR: {rows} steps x {cols} layers (red 0 dB, green 40 dB)")
        for s in {0, rows - 1}:
            p.drawText(QRectF(0, r.top() + s * h, MARGIN_LEFT - 4, max(h, 12)),
                       Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, f"step {s}")
        p.setPen(QPen(CHOSEN, 2))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawRect(QRectF(r.left(), r.top() + self.step * h, r.width(), h))

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        if not self.matrix.size:
            return None
        r = self.plot_rect()
        if not r.contains(QPointF(x, y)):
            return None
        rows, cols = self.matrix.shape
        return (min(int((y - r.top()) / r.height() * rows), rows - 1),
                min(int((x - r.left()) / r.width() * cols), cols - 1))

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        cell = self.cell_at(event.position().x(), event.position().y())
        if cell is not None:
            self.stepClicked.emit(cell[0])
            self.cellClicked.emit(*cell)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        cell = self.cell_at(event.position().x(), event.position().y())
        if cell is not None:
            s, c = cell
            QToolTip.showText(event.globalPosition().toPoint(),
                              f"step {s}, {self.labels[c]}: "
                              f"{number_text(float(self.matrix[s, c]))} dB", self)
