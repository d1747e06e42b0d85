"""A legend over the canvas for a colouring of the operators: what is measured, the colour
ramp, and what its two ends mean ("op time: 0 ms ... 9.3 ms").

Legends sit in the canvas's bottom-left corner (the overview map has the bottom-right, the
notice bar the top), stacked upwards in the order of their ``slot`` when several colourings
are on at once (quantization error and op time).  They take no mouse events.
"""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QEvent, QObject, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QAbstractScrollArea, QWidget

MARGIN = 12
WIDTH, HEIGHT = 250, 46


class CanvasLegend(QWidget):
    """``colour(t)`` for t in [0, 1] paints the ramp; `set_range` shows it, `hide` hides it."""

    def __init__(self, view: QAbstractScrollArea, colour: Callable[[float], QColor],
                 slot: int = 0) -> None:
        super().__init__(view)  # the view, not its viewport: scrolling moves a viewport's children
        self.view, self.colour, self.slot = view, colour, slot
        self.metric_name = ""
        self.low_text = self.high_text = ""
        self.setFixedSize(WIDTH, HEIGHT)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self._follower = _Follower(self)
        view.installEventFilter(self._follower)
        self.hide()

    def set_range(self, title: str, low: str, high: str) -> None:
        """Show ``title`` over the ramp, ``low`` under its left end and ``high`` its right."""
        self.metric_name, self.low_text, self.high_text = title, low, high
        metrics = self.fontMetrics()
        self.setFixedWidth(max(WIDTH, metrics.horizontalAdvance(title) + 20,
                               metrics.horizontalAdvance(f"{low}  {high}") + 24))
        self.place()
        self.show()
        self.raise_()
        self.update()

    def place(self) -> None:
        vp = self.view.viewport().geometry()
        y = vp.y() + vp.height() - MARGIN - (self.slot + 1) * (HEIGHT + 6)
        self.move(vp.x() + MARGIN, max(vp.y() + MARGIN, y))

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(255, 255, 255, 235))
        p.setPen(QColor("#57606a"))
        p.drawRect(self.rect().adjusted(0, 0, -1, -1))
        p.setPen(QColor("#1f2328"))
        metrics = p.fontMetrics()
        p.drawText(QPointF(8, 14), metrics.elidedText(self.metric_name, Qt.TextElideMode.ElideRight,
                                                      self.width() - 16))
        steps = 32
        width = (self.width() - 16) / steps
        for i in range(steps):
            p.fillRect(QRectF(8 + i * width, 19, width + 1, 10), self.colour(i / (steps - 1)))
        p.drawText(QPointF(8, 41), self.low_text)
        p.drawText(QPointF(self.width() - 8 - metrics.horizontalAdvance(self.high_text), 41),
                   self.high_text)


class _Follower(QObject):
    """Keeps a legend in its corner when the view is resized."""

    def __init__(self, legend: CanvasLegend) -> None:
        super().__init__(legend)
        self.legend = legend

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.Resize and self.legend.isVisible():
            self.legend.place()
        return False
