"""Colours and fonts of the canvas, in one place so the window, the SVG/PNG renderer and the
screenshots all look the same.

The category palette follows what readers of model graphs already know from Netron and
Model Explorer (convolutions blue, activations red, pooling green, shape ops grey-brown)
but with enough lightness difference that it also reads in greyscale prints.
"""
from __future__ import annotations

import string
from functools import lru_cache

from PySide6.QtGui import QColor, QFont, QFontMetricsF

from .state.scene_data import TextMeasure

# category -> (box fill at readable zoom, strong colour: stripe, far-zoom fill, minimap)
CATEGORY_COLORS: dict[str, tuple[str, str]] = {
    "convolution": ("#dbe8fb", "#3b78d8"),
    "pooling": ("#dcf2df", "#3a9a4a"),
    "activation": ("#fbe0dc", "#d4493b"),
    "elementwise": ("#eee3f7", "#8a55c0"),
    "reduction": ("#fbeed8", "#d98a1c"),
    "normalization": ("#d9f2f0", "#229e93"),
    "recurrent": ("#f9dfee", "#c2387f"),
    "shape/layout": ("#ece9e4", "#857563"),
    "quantization": ("#fbf5cf", "#b79a10"),
    "control flow": ("#ffe3c9", "#e36a12"),
    "custom": ("#e2e4e8", "#4d5563"),
    "other": ("#eaeef2", "#6c7a89"),
    "unknown": ("#f0f0f0", "#999999"),
}
IO_COLORS = {
    "input": ("#e5f6e8", "#1e8a3a"),
    "output": ("#fde8e0", "#c4461b"),
    "variable": ("#fff5d6", "#b3860b"),
    "source": ("#f2f2f2", "#888888"),
}

BACKGROUND = "#fafbfc"
TEXT = "#1f2328"
MUTED_TEXT = "#57606a"
EDGE = "#8c959f"
EDGE_LABEL = "#6e7781"
SELECTION = "#0969da"
FIND_HIGHLIGHT = "#f2c200"
RELATED = "#54aeff"

# Below these levels of detail (device pixels per scene unit) text is not drawn: it would be
# unreadable anyway, and skipping it is what keeps 20,000 boxes smooth to pan and zoom.
LOD_TEXT = 0.45
LOD_EDGE_LABELS = 0.7
LOD_DETAIL = 0.25  # below: boxes become flat rectangles, edges thin lines


def category_colors(category: str) -> tuple[QColor, QColor]:
    fill, strong = CATEGORY_COLORS.get(category) or IO_COLORS.get(category) or CATEGORY_COLORS["other"]
    return QColor(fill), QColor(strong)


@lru_cache(maxsize=None)
def fonts() -> dict[str, QFont]:
    """The canvas fonts by role: title (op name), body (options), small (versions, shapes)."""
    base = QFont("DejaVu Sans")
    base.setStyleHint(QFont.StyleHint.SansSerif)
    title = QFont(base)
    title.setPixelSize(12)
    title.setBold(True)
    body = QFont(base)
    body.setPixelSize(11)
    small = QFont(base)
    small.setPixelSize(10)
    return {"title": title, "body": body, "small": small}


def text_measure() -> TextMeasure:
    """A `TextMeasure` with the canvas fonts' advances; call on the GUI thread."""
    advances: dict[str, dict[str, float]] = {}
    fallback: dict[str, float] = {}
    chars = string.printable + "\u2026\u00d7"
    for role, font in fonts().items():
        fm = QFontMetricsF(font)
        advances[role] = {c: fm.horizontalAdvance(c) for c in chars}
        fallback[role] = fm.averageCharWidth() * 1.1
    return TextMeasure(advances, fallback)
