"""An overview of the whole graph beside the canvas, with the visible part framed.

The overview is rendered once per scene into an image (the scene's far-zoom path: flat
rectangles and thin lines, so it is cheap even for 20,000 boxes); after that, following
the view only repaints the frame.  Click or drag in it to move the view.  It is shown
only while part of the graph is out of view, and then in a margin the canvas keeps for it
(at the right of a tall graph, under a wide one): it never covers a node.
"""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

from . import style
from .graph_view import GraphView

MAX_W, MAX_H, MIN_W = 180, 260, 36
GAP = 6  # between the overview and the canvas's edge


class Minimap(QWidget):
    """Sits in a margin of a `GraphView`, outside its viewport (see the module docstring)."""

    def __init__(self, view: GraphView) -> None:
        super().__init__(view)
        self._view = view
        self._image: QImage | None = None
        self._enabled = True
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Overview: click or drag to move the view")
        view.viewChanged.connect(self._follow)
        self.hide()

    def set_enabled_by_user(self, on: bool) -> None:
        self._enabled = on
        self._follow()

    def rebuild(self) -> None:
        """Render the overview of the view's current scene."""
        scene = self._view.graph_scene
        rect = scene.sceneRect()
        if scene.data is None or rect.isEmpty():
            self._image = None
            self.hide()
            return
        max_w, max_h = self._built_for = self._caps()
        aspect = rect.width() / rect.height()
        h = max_h if aspect < max_w / max_h else max(int(max_w / aspect), 40)
        w = int(min(max(h * aspect, MIN_W), max_w))
        size = QSize(w, h)
        image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(QColor(style.BACKGROUND))
        painter = QPainter(image)
        scene.render(painter, QRectF(0, 0, w, h), rect, Qt.AspectRatioMode.IgnoreAspectRatio)
        painter.end()
        self._image = image
        self.resize(size)
        self._follow()

    def _caps(self) -> tuple[int, int]:
        """The largest size: at most a fifth of the canvas's width and two fifths of its
        height (a small window's canvas is the graph's, not the overview's); of the whole
        view, so that the margin it takes does not change it."""
        view = self._view
        step = 20  # in steps, so that dragging the window's edge rebuilds it seldom
        return (max(MIN_W, min(MAX_W, int(view.width() * 0.2) // step * step)),
                max(60, min(MAX_H, int(view.height() * 0.4) // step * step)))

    def _follow(self) -> None:
        view = self._view
        if self._image is None or not self._enabled:
            view.reserve(0, 0)
            self.hide()
            return
        if self._caps() != getattr(self, "_built_for", None):
            self.rebuild()  # the canvas changed size: so does its overview
            return
        visible = view.mapToScene(view.viewport().rect()).boundingRect()
        scene_rect = view.sceneRect()
        # Only worth showing when part of the graph is out of view.
        large = visible.width() < scene_rect.width() * 0.98 or visible.height() < scene_rect.height() * 0.98
        if not large:
            view.reserve(0, 0)
            self.hide()
            return
        tall = scene_rect.height() >= scene_rect.width()
        view.reserve(self.width() + 2 * GAP if tall else 0, 0 if tall else self.height() + 2 * GAP)
        vp = view.viewport().geometry()
        if tall:  # in the column at the right of the canvas, at its bottom
            self.move(vp.right() + 1 + GAP, vp.bottom() + 1 - self.height())
        else:  # in the row under the canvas, at its right
            self.move(vp.right() + 1 - self.width(), vp.bottom() + 1 + GAP)
        self.show()
        self.raise_()
        self.update()

    def _to_scene(self, p: QPointF) -> QPointF:
        r = self._view.sceneRect()
        return QPointF(r.left() + p.x() / self.width() * r.width(),
                       r.top() + p.y() / self.height() * r.height())

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt API
        if self._image is None:
            return
        painter = QPainter(self)
        painter.setOpacity(0.92)
        painter.drawImage(0, 0, self._image)
        painter.setOpacity(1.0)
        painter.setPen(QPen(QColor("#9aa4ae"), 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        r = self._view.sceneRect()
        vis = self._view.mapToScene(self._view.viewport().rect()).boundingRect()
        sx, sy = self.width() / r.width(), self.height() / r.height()
        frame = QRectF((vis.left() - r.left()) * sx, (vis.top() - r.top()) * sy,
                       vis.width() * sx, vis.height() * sy).intersected(QRectF(self.rect()))
        color = QColor(style.SELECTION)
        painter.setPen(QPen(color, 1.5))
        color.setAlpha(40)
        painter.setBrush(color)
        painter.drawRect(frame.adjusted(0.5, 0.5, -0.5, -0.5) if frame.width() > 3 else
                         QRectF(frame.center().x() - 2, frame.top(), 4, max(frame.height(), 4)))

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        self._view.centerOn(self._to_scene(event.position()))
        self._view.viewChanged.emit()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._view.centerOn(self._to_scene(event.position()))
            self._view.viewChanged.emit()
