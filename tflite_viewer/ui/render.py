"""Drawing a subgraph to SVG or PNG without a window: the same scene the canvas shows.

Used by File > Export Image and by `tflite-viewer render`.  PNGs are scaled down to stay
within a sane pixel budget (a 20,000-op graph is hundreds of thousands of units tall); SVGs
are vector and keep full detail.
"""
from __future__ import annotations

import math
import os
import sys
from pathlib import Path

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication

MAX_SIDE = 16_000
MAX_PIXELS = 80_000_000
FORMATS = (".svg", ".png")


def ensure_app() -> QApplication:
    """The running QApplication, or a new one (offscreen when there is no display)."""
    app = QApplication.instance()
    if app is None:
        if (sys.platform.startswith("linux") and not os.environ.get("DISPLAY")
                and not os.environ.get("WAYLAND_DISPLAY")):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QApplication([sys.argv[0] if sys.argv else "tflite-viewer"])
    return app  # type: ignore[return-value]


def png_scale(width: float, height: float, scale: float = 1.0) -> float:
    """The largest scale <= ``scale`` that keeps the image within the pixel budget."""
    w, h = max(width, 1.0), max(height, 1.0)
    return min(scale, MAX_SIDE / w, MAX_SIDE / h, math.sqrt(MAX_PIXELS / (w * h)))


def render_scene(scene, path: str | Path, scale: float = 1.0) -> Path:
    """Write the whole of ``scene`` (a `GraphScene`) to ``path`` (.svg or .png)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"{path.name}: the output must end in .svg or .png")
    source = scene.sceneRect()
    if suffix == ".svg":
        gen = QSvgGenerator()
        gen.setFileName(str(path))
        size = QSize(math.ceil(source.width()), math.ceil(source.height()))
        gen.setSize(size)
        gen.setViewBox(QRectF(0, 0, size.width(), size.height()))
        gen.setTitle(scene.data.title if scene.data else "graph")
        gen.setDescription("Drawn by tflite-viewer")
        painter = QPainter(gen)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        scene.render(painter, QRectF(0, 0, size.width(), size.height()), source,
                     Qt.AspectRatioMode.IgnoreAspectRatio)
        painter.end()
    else:
        s = png_scale(source.width(), source.height(), scale)
        size = QSize(max(1, math.ceil(source.width() * s)), max(1, math.ceil(source.height() * s)))
        image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(QColor("#ffffff"))
        painter = QPainter(image)
        painter.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        scene.render(painter, QRectF(0, 0, size.width(), size.height()), source,
                     Qt.AspectRatioMode.IgnoreAspectRatio)
        painter.end()
        save_png(image, path)
    return path


def save_png(image: QImage, path: str | Path) -> Path:
    """Write ``image`` to ``path`` as PNG (the canvas export, ``--screenshot`` and the
    README's screenshot scripts): an OSError naming the path when it cannot, a null image
    (a window never shown) included."""
    path = Path(path)
    if image.isNull() or not image.save(str(path), "PNG"):
        raise OSError(f"cannot write {path}")
    return path


def render_to_file(model_path: str | Path, out: str | Path, subgraph: int | str | None = None,
                   scale: float = 1.0) -> Path:
    """Load a model, lay out one subgraph and draw it to ``out`` (.svg or .png)."""
    out = Path(out)
    if out.suffix.lower() not in FORMATS:
        raise ValueError(f"{out.name}: the output must end in .svg or .png")
    ensure_app()
    from ..model import load_model
    from . import style
    from .graph_scene import GraphScene
    from .state.scene_data import build_scene_data

    model = load_model(model_path)
    index = model.subgraph_index(subgraph)
    scene = GraphScene()
    scene.set_data(build_scene_data(model, index, style.text_measure()))
    return render_scene(scene, out, scale)
