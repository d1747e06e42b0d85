"""What the canvas overlays share (the quantization, memory and comparison overlays each
tint a set of operator boxes): the rectangle around the boxes they paint, and the colour
of a value on a three-colour ramp."""
from __future__ import annotations

from typing import Iterable

from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor


def boxes_bounds(rects, rows: Iterable[int], margin: float) -> QRectF:
    """The rectangle holding the boxes ``rects[rows]`` (x, y, w, h per row) grown by
    ``margin`` on every side: an overlay item's bounding rectangle (empty without rows)."""
    rows = list(rows)
    if not rows:
        return QRectF()
    r = rects[rows]
    x0, y0 = float(r[:, 0].min()), float(r[:, 1].min())
    return QRectF(x0 - margin, y0 - margin,
                  float((r[:, 0] + r[:, 2]).max()) - x0 + 2 * margin,
                  float((r[:, 1] + r[:, 3]).max()) - y0 + 2 * margin)


def ramp(t: float, low: QColor, mid: QColor, high: QColor) -> QColor:
    """``t`` in [0, 1] (clamped) as a colour: ``low`` at 0, ``mid`` at 0.5, ``high`` at 1,
    linear between."""
    t = min(max(float(t), 0.0), 1.0)
    a, b, u = (low, mid, t * 2) if t <= 0.5 else (mid, high, (t - 0.5) * 2)
    return QColor(int(a.red() + (b.red() - a.red()) * u),
                  int(a.green() + (b.green() - a.green()) * u),
                  int(a.blue() + (b.blue() - a.blue()) * u))
