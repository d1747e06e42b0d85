"""A histogram drawn with QPainter: bars, axis labels, linear or log counts.

Small and dependency-free on purpose (no plotting library in a desktop app's closure).
The figures come from `tensor_stats.histogram`; this widget only draws them, and tells
under the mouse which range a bar covers and how many values fall in it.
"""
from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from .state.tensor_stats import Histogram, format_number

BAR = QColor("#3b78d8")
ZERO = QColor("#d4493b")


class HistogramWidget(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.histogram: Histogram | None = None
        self.log_scale = False
        self.caption = ""
        self.message = "No values"
        self.marker: tuple[float, str] | None = None  # (x value, label), e.g. the zero point
        self.setMinimumHeight(120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMouseTracking(True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(320, 180)

    def set_histogram(self, hist: Histogram | None, *, log_scale: bool = False, caption: str = "",
                      message: str = "No values", marker: tuple[float, str] | None = None) -> None:
        self.histogram = hist
        self.marker = marker
        self.log_scale = log_scale
        self.caption = caption
        self.message = message
        self.update()

    def _plot_rect(self) -> QRectF:
        return QRectF(46, 18, max(self.width() - 58, 10), max(self.height() - 40, 10))

    def _heights(self) -> np.ndarray:
        counts = self.histogram.counts.astype(np.float64)
        return np.log10(counts + 1) if self.log_scale else counts

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.fillRect(self.rect(), QColor("#ffffff"))
        font = QFont(self.font())
        font.setPixelSize(10)
        p.setFont(font)
        fm = QFontMetricsF(font)
        hist = self.histogram
        if hist is None or hist.counts.size == 0:
            p.setPen(QColor("#6e7781"))
            p.drawText(QRectF(self.rect()).adjusted(8, 4, -8, -4),  # wrapped: never clipped
                       int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap), self.message)
            return
        plot = self._plot_rect()
        heights = self._heights()
        top = heights.max() or 1.0
        n = hist.counts.size
        bw = plot.width() / n
        lo, hi = float(hist.edges[0]), float(hist.edges[-1])
        for i, hgt in enumerate(heights.tolist()):
            if hgt <= 0:
                continue
            bh = hgt / top * plot.height()
            contains_zero = hist.edges[i] <= 0 < hist.edges[i + 1] if not hist.integer_bins else \
                hist.edges[i] + 0.5 == 0
            p.fillRect(QRectF(plot.left() + i * bw, plot.bottom() - bh, max(bw - (1 if bw > 3 else 0), 1), bh),
                       ZERO if contains_zero else BAR)
        if self.marker is not None and lo <= self.marker[0] <= hi:
            mx = plot.left() + (self.marker[0] - lo) / (hi - lo) * plot.width()
            p.setPen(QPen(QColor("#cf222e"), 1, Qt.PenStyle.DashLine))
            p.drawLine(QPointF(mx, plot.top()), QPointF(mx, plot.bottom()))
            p.drawText(QPointF(min(mx + 3, plot.right() - fm.horizontalAdvance(self.marker[1])), plot.top() + 10),
                       self.marker[1])
        p.setPen(QPen(QColor("#57606a"), 1))
        p.drawLine(QPointF(plot.left(), plot.bottom()), QPointF(plot.right(), plot.bottom()))
        p.drawLine(QPointF(plot.left(), plot.top()), QPointF(plot.left(), plot.bottom()))
        # x labels: range ends and zero
        lo_text = format_number(lo + 0.5 if hist.integer_bins else lo, 4)
        hi_text = format_number(hi - 0.5 if hist.integer_bins else hi, 4)
        y_text = plot.bottom() + fm.ascent() + 3
        p.drawText(QPointF(plot.left(), y_text), lo_text)
        p.drawText(QPointF(plot.right() - fm.horizontalAdvance(hi_text), y_text), hi_text)
        # y labels
        max_count = int(hist.counts.max())
        p.drawText(QRectF(0, plot.top() - 6, plot.left() - 4, 12),
                   Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, f"{max_count}")
        p.drawText(QRectF(0, plot.bottom() - 6, plot.left() - 4, 12),
                   Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, "0")
        cap = self.caption + ("  (log count)" if self.log_scale else "")
        p.setPen(QColor("#1f2328"))
        p.drawText(QPointF(plot.left(), 12), cap)

    def bin_at(self, x: float) -> int | None:
        if self.histogram is None or not self.histogram.counts.size:
            return None
        plot = self._plot_rect()
        i = math.floor((x - plot.left()) / plot.width() * self.histogram.counts.size)
        return i if 0 <= i < self.histogram.counts.size else None

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        i = self.bin_at(event.position().x())
        if i is None:
            QToolTip.hideText()
            return
        h = self.histogram
        if h.integer_bins:
            text = f"value {int(h.edges[i] + 0.5)}: {int(h.counts[i])}"
        else:
            text = f"[{format_number(h.edges[i], 5)}, {format_number(h.edges[i + 1], 5)}): {int(h.counts[i])}"
        QToolTip.showText(event.globalPosition().toPoint(), text, self)
