"""The canvas's colourings on screen: the views of the overlay models, the legend strip
under the canvas and the toolbar's selector.

The models are Qt-free (`state.overlays`: one per kind, `Overlay.paint` gives the marks
and the legend of the subgraph shown); here one map, `OVERLAY_VIEWS`, says which item
draws each kind (napari's ``overlay_to_visual``), `LegendStrip` shows the legend in a strip
of its own under the canvas (never over a node), and `CanvasOverlays` keeps the one
overlay that is on in step with the workspace, the subgraph shown and the selector.  The
window hands it the docks that own overlays: closing one turns its overlay off, and
choosing an overlay brings its dock forward (where its data is made and its options are).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable

import numpy as np
from PySide6.QtCore import QObject, QPointF, QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QComboBox, QGraphicsItem, QSizePolicy, QWidget

from . import style
from .state.overlays import NONE, Legend, Marks, OverlayChoice, TargetsOverlay
from .state.workspace import MODEL, NAVIGATION

if TYPE_CHECKING:
    from .dock_host import Hosted
    from .graph_scene import GraphScene

STRIP_HEIGHT = 30


class MarksItem(QGraphicsItem):
    """Tints and frames operator boxes (``rows``: node row -> colour).  Only the boxes in
    view are painted, and zoomed far out they are flat rectangles, one batch per colour:
    a 20,000-operator model repaints as fast as the canvas under it."""

    def __init__(self, rects, rows: dict[int, str], marks: Marks) -> None:
        super().__init__()
        self.rows = rows
        self.fill, self.frame = marks.fill, marks.frame
        self._rows = np.fromiter(rows, dtype=np.int64, count=len(rows))
        self._boxes = np.asarray(rects, np.float64)[self._rows] if len(self._rows) else \
            np.zeros((0, 4))
        colours = list(rows.values())
        self._palette = sorted(set(colours))
        self._colour = np.array([self._palette.index(c) for c in colours], np.int64)
        b, m = self._boxes, self.margin()
        self._bounds = QRectF() if not len(b) else QRectF(
            float(b[:, 0].min()) - m, float(b[:, 1].min()) - m - 24,
            float((b[:, 0] + b[:, 2]).max() - b[:, 0].min()) + 2 * m,
            float((b[:, 1] + b[:, 3]).max() - b[:, 1].min()) + 2 * m + 24)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemUsesExtendedStyleOption, True)
        self.setZValue(4)

    def margin(self) -> float:
        return 6.0

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def visible(self, r: QRectF, pad: float) -> np.ndarray:
        """Indices (into the marked boxes) of those within ``pad`` of ``r``."""
        b = self._boxes
        return np.flatnonzero((b[:, 0] - pad <= r.right()) & (b[:, 0] + b[:, 2] + pad >= r.left())
                              & (b[:, 1] - pad <= r.bottom()) & (b[:, 1] + b[:, 3] + pad >= r.top()))

    def paint(self, painter: QPainter, option, widget=None) -> None:
        shown = self.visible(option.exposedRect, self.margin() + 24) if len(self._boxes) else []
        if not len(shown):
            return
        if option.levelOfDetailFromTransform(painter.worldTransform()) < style.LOD_DETAIL:
            painter.setPen(Qt.PenStyle.NoPen)
            for c, colour in enumerate(self._palette):
                sel = shown[self._colour[shown] == c]
                if sel.size:
                    painter.setBrush(QColor(colour))
                    painter.drawRects([QRectF(x - 3, y - 3, w + 6, h + 6)
                                       for x, y, w, h in self._boxes[sel].tolist()])
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        for k in shown.tolist():
            x, y, w, h = self._boxes[k].tolist()
            c = QColor(self._palette[self._colour[k]])
            fill = QColor(c)
            if c.alpha() == 255:
                fill.setAlpha(self.fill)
            painter.setBrush(fill)
            painter.setPen(QPen(c, self.frame) if self.frame else Qt.PenStyle.NoPen)
            painter.drawRoundedRect(QRectF(x - 3, y - 3, w + 6, h + 6), 7, 7)


class PartitionsItem(MarksItem):
    """`MarksItem` with a dashed frame around each box of a group (a delegate's partition)
    and a tag over the first box of each ("P2")."""

    def __init__(self, rects, rows: dict[int, str], marks: Marks, groups: dict[int, str],
                 tags: dict[int, str]) -> None:
        super().__init__(rects, rows, marks)
        self.groups, self.tags = groups, tags  # node row -> frame colour, tag
        index = {row: k for k, row in enumerate(self._rows.tolist())}
        self._groups = {index[r]: g for r, g in groups.items() if r in index}
        self._tags = {index[r]: t for r, t in tags.items() if r in index}

    def margin(self) -> float:
        return 12.0

    def paint(self, painter: QPainter, option, widget=None) -> None:
        super().paint(painter, option, widget)
        if not len(self._boxes):
            return
        shown = set(self.visible(option.exposedRect, 40).tolist())
        painter.setBrush(Qt.BrushStyle.NoBrush)
        for k, colour in self._groups.items():
            if k in shown:
                x, y, w, h = self._boxes[k].tolist()
                painter.setPen(QPen(QColor(colour), 3, Qt.PenStyle.DashLine))
                painter.drawRoundedRect(QRectF(x - 9, y - 9, w + 18, h + 18), 10, 10)
        font = QFont(painter.font())
        font.setBold(True)
        painter.setFont(font)
        metrics = painter.fontMetrics()
        for k, tag in self._tags.items():
            if k not in shown:
                continue
            x, y, _w, _h = self._boxes[k].tolist()
            box = QRectF(x - 9, y - 13 - metrics.height(), metrics.horizontalAdvance(tag) + 10,
                         metrics.height() + 4)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(self._groups.get(k, "#57606a")))
            painter.drawRoundedRect(box, 4, 4)
            painter.setPen(QColor("white"))
            painter.drawText(box, int(Qt.AlignmentFlag.AlignCenter), tag)


#: the item that draws each kind of overlay model (the others: `MarksItem`)
OVERLAY_VIEWS: dict[type, type[MarksItem]] = {TargetsOverlay: PartitionsItem}


def overlay_item(overlay, data, marks: Marks) -> MarksItem | None:
    """The item drawing ``marks`` of ``overlay`` on a scene of ``data`` (None: nothing to
    draw).  Keys are op indices of the subgraph shown or (subgraph, op) of an operator
    drawn inline; those not on the scene are left out."""
    inline = getattr(data, "inline", None)

    def row(key):
        if isinstance(key, tuple):
            return None if inline is None else inline.node_of.get(key)
        return data.op_node.get(key)

    rows = {r: c for r, c in ((row(k), c) for k, c in marks.colours.items()) if r is not None}
    if not rows:
        return None
    view = OVERLAY_VIEWS.get(type(overlay), MarksItem)
    if view is PartitionsItem:
        groups = {row(k): g for k, g in marks.groups.items() if row(k) is not None}
        tags = {row(k): t for k, t in marks.tags.items() if row(k) is not None}
        return PartitionsItem(data.rects, rows, marks, groups, tags)
    return view(data.rects, rows, marks)


class LegendStrip(QWidget):
    """A legend in a strip of its own under a canvas: the title, the ramp or swatches,
    and the note (the inputs the numbers come from, or what to do to get any).  Hidden
    while no overlay is on."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.legend: Legend | None = None
        self.setFixedHeight(STRIP_HEIGHT)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.hide()

    def show_legend(self, legend: Legend | None) -> None:
        self.legend = legend
        self.setVisible(legend is not None)
        self.setToolTip("" if legend is None else "\n".join(
            x for x in (legend.title, f"{legend.low} \u2026 {legend.high}".strip(" \u2026"),
                        legend.note) if x))
        self.update()

    def text(self) -> str:
        """Everything the strip says, as one line (tests, tooltips)."""
        g = self.legend
        if g is None:
            return ""
        parts = [g.title, g.low, g.high] + [t for _c, t in g.swatches] + [g.note]
        return "  ".join(p for p in parts if p)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(0, STRIP_HEIGHT)

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt API
        g = self.legend
        if g is None:
            return
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("#f6f8fa"))
        p.setPen(QColor("#d0d7de"))
        p.drawLine(0, 0, self.width(), 0)
        metrics = p.fontMetrics()
        base = (self.height() + metrics.ascent() - metrics.descent()) / 2
        # the colours' key has its room first; the title, then the note, are cut to the rest
        key = self._key_width(metrics)
        bold = QFont(p.font())
        bold.setBold(True)
        title = _elided(bold, g.title, max(self.width() - key - 30, 60))
        p.setPen(QColor("#1f2328"))
        x = _text(p, 8.0, base, title, bold=True) + 14
        if g.stops:
            x = _text(p, x, base, g.low) + 6 if g.low else x
            from .state.overlays import ramp
            for i in range(32):
                p.fillRect(QRectF(x + i * 4, self.height() / 2 - 6, 4.5, 12),
                           QColor(ramp(i / 31, g.stops)))
            p.setPen(QColor("#8c959f"))
            p.drawRect(QRectF(x, self.height() / 2 - 6, 128, 12))
            p.setPen(QColor("#1f2328"))
            x = _text(p, x + 134, base, g.high) + 14 if g.high else x + 142
        for colour, text in g.swatches:
            c = QColor(colour)
            p.setPen(QPen(c, 2))
            fill = QColor(c)
            fill.setAlpha(90)
            p.setBrush(fill)
            p.drawRoundedRect(QRectF(x, self.height() / 2 - 6, 20, 12), 3, 3)
            p.setPen(QColor("#1f2328"))
            x = _text(p, x + 26, base, text) + 14
        if g.note:
            p.setPen(QColor("#57606a"))
            p.drawText(QPointF(x, base), metrics.elidedText(
                g.note, Qt.TextElideMode.ElideRight, max(int(self.width() - x - 8), 0)))

    def _key_width(self, metrics) -> int:
        """The width the ramp (with its ends) or the swatches take."""
        g = self.legend
        width = 0
        if g.stops:
            width += 142 + metrics.horizontalAdvance(f"{g.low}  {g.high}") + 20
        for _colour, text in g.swatches:
            width += 26 + metrics.horizontalAdvance(text) + 14
        return width


def _elided(font: QFont, text: str, width: int) -> str:
    from PySide6.QtGui import QFontMetrics
    return QFontMetrics(font).elidedText(text, Qt.TextElideMode.ElideRight, width)


def _text(p: QPainter, x: float, base: float, text: str, bold: bool = False) -> float:
    """Draw ``text`` at ``x``; the x after it."""
    font = QFont(p.font())
    font.setBold(bold)
    p.setFont(font)
    p.drawText(QPointF(x, base), text)
    end = x + p.fontMetrics().horizontalAdvance(text)
    font.setBold(False)
    p.setFont(font)
    return end


class CanvasOverlays(QObject):
    """The overlay that is on, painted on one canvas (see the module docstring):
    ``scene`` and ``strip`` are the canvas's, ``subgraph()`` the subgraph it shows (B's
    canvas in a comparison shows another model's subgraph), ``choice`` what is on."""

    def __init__(self, hub, choice: OverlayChoice, scene: "GraphScene", strip: LegendStrip,
                 subgraph: Callable[[], int | None], parent: QObject) -> None:
        super().__init__(parent)
        self.hub, self.choice, self.scene, self.strip = hub, choice, scene, strip
        self.subgraph = subgraph
        self.item: MarksItem | None = None
        self.marks = Marks()
        topics = {t for o in choice.overlays.values() for t in o.topics}
        hub.subscribe(lambda _ws: self.refresh(), MODEL, NAVIGATION, *sorted(topics))
        choice.subscribe(lambda _key: self.refresh())

    def refresh(self) -> None:
        """Paint the overlay that is on over the subgraph shown (or nothing)."""
        if self.item is not None:
            try:
                if self.item.scene() is not None:
                    self.item.scene().removeItem(self.item)
            except RuntimeError:  # the scene was cleared (another subgraph, an edit)
                pass
        self.item, self.marks = None, Marks()
        overlay, data, sg = self.choice.current, self.scene.data, self.subgraph()
        ws = self.hub.workspace
        if overlay is None or data is None or sg is None or ws.model is None:
            self.strip.show_legend(None)
            return
        inline = getattr(data, "inline", None)
        self.marks, legend = overlay.paint(ws, sg, inline.slots() if inline is not None else ())
        self.item = overlay_item(overlay, data, self.marks)
        if self.item is not None:
            self.scene.addItem(self.item)
        self.strip.show_legend(legend)


class OverlaySelector(QComboBox):
    """The toolbar's selector: which overlay colours the canvas (a view of the choice)."""

    def __init__(self, choice: OverlayChoice, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.choice = choice
        for key, label in choice.entries():
            self.addItem(label, key)
        self.setToolTip("What colours the operators on the canvas (one at a time)")
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.activated.connect(lambda row: choice.choose(self.itemData(row)))
        choice.subscribe(self._show)

    def _show(self, key: str) -> None:
        self.setCurrentIndex(max(self.findData(key), 0))


def follow_docks(choice: OverlayChoice, hosted: Iterable["Hosted"],
                 show: Callable[[str], None]) -> None:
    """Tie each overlay to the dock that owns it (``hosted``: the docks whose spec names an
    overlay): the dock closed (its ×, View > Reset Layout, its menu entry) turns its
    overlay off; its widget's ``overlayToggled(bool)`` turns it on or off and its
    ``show_overlay(bool)`` is told; an overlay chosen shows its dock via ``show``."""
    for h in hosted:
        dock, name, key = h.dock, h.spec.id, h.spec.overlay

        def closed(visible: bool, d=dock, name=name) -> None:
            # behind another tab a dock is not visible either, but not hidden: only a
            # closed one turns its overlay off (checked once the change is done)
            if not visible:
                QTimer.singleShot(0, d, lambda: d.isHidden() and choice.release(name))
        dock.visibilityChanged.connect(closed)
        toggled = getattr(h.widget, "overlayToggled", None)
        if toggled is not None:
            toggled.connect(lambda on, k=key: choice.choose(k) if on else
                            (choice.key == k and choice.choose(NONE)))
        told = getattr(h.widget, "show_overlay", None)
        if told is not None:
            choice.subscribe(lambda current, k=key, f=told: f(current == k))
    choice.subscribe(lambda key: key != NONE and show(choice.overlays[key].dock))
