"""The Outputs dock: each output of the last finished run as a classifier's top-k (with the
model's labels), a segmentation map (the argmax class of every pixel, coloured, with a
legend of the classes present), an image (H x W x 1..4 tensors), or its values.

A view of the open workspace's ``ws.debug.outputs``: another model, or an edit, empties it.
"""
from __future__ import annotations

import html

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from ...interpreter.outputs import label_colours, segmentation, top_k, value_summary
from ..state.docks import BOTTOM, DockSpec
from ..state.workspace import DEBUG, MODEL

DOCK = DockSpec("outputs", "Outputs", BOTTOM, part="debug")
EMPTY = "No finished run: the outputs of a run show here when it ends (F5)"
PICTURE = 256  # pixels of the longer side
#: the colours of the first classes of a segmentation map (class index -> RGB)
PALETTE = label_colours(256)


def image_of(arr: np.ndarray) -> np.ndarray | None:
    """An H x W x 3 uint8 picture of an image-shaped output, or None.  1..4 channels are
    shown as grey / RGB (min-max scaled); more channels are taken as class scores of a
    segmentation map (argmax, coloured by class)."""
    seg = segmentation(None, 0, 0, arr)
    if seg is not None:
        return label_colours(seg.n_classes)[seg.classes]
    a = np.asarray(arr)
    while a.ndim > 3 and a.shape[0] == 1:
        a = a[0]
    if a.ndim == 2:
        a = a[..., None]
    if a.ndim != 3 or a.shape[0] < 4 or a.shape[1] < 4 or a.dtype.kind not in "biuf":
        return None
    a = a.astype(np.float64)
    if a.shape[2] == 2:
        a = a[..., :1]
    lo, hi = np.nanmin(a), np.nanmax(a)
    scaled = np.zeros_like(a) if hi <= lo else (a - lo) / (hi - lo)
    img = np.nan_to_num(scaled * 255).clip(0, 255).astype(np.uint8)
    if img.shape[2] == 1:
        img = np.repeat(img, 3, axis=2)
    return np.ascontiguousarray(img[..., :3])


def legend_html(seg, limit: int = 12) -> str:
    """The classes present in a segmentation map: a colour square, the label, the share."""
    colours = label_colours(seg.n_classes)
    parts = []
    for c, label, share in seg.present[:limit]:
        r, g, b = colours[c].tolist()
        name = html.escape(label or f"class {c}")
        parts.append(f"<span style='color: rgb({r},{g},{b}); font-size: 14px'>\u25a0</span> "
                     f"{name} <span style='color:#57606a'>#{c} {share:.1%}</span>")
    more = len(seg.present) - limit
    if more > 0:
        parts.append(f"\u2026 {more} more classes")
    return "&nbsp;&nbsp; ".join(parts)


class OutputsDock(QWidget):
    """Shows the outputs of the open workspace's last finished run."""

    def __init__(self, hub=None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.body = QWidget()
        self.rows = QVBoxLayout(self.body)
        self.rows.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.body)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(scroll)
        self.texts: list[str] = []
        self.legends: list[str] = []
        self.empty = QLabel(EMPTY)
        self.empty.setStyleSheet("color: #57606a;")
        self.rows.insertWidget(0, self.empty)
        if hub is not None:
            hub.subscribe(self.render, MODEL, DEBUG)

    def render(self, ws) -> None:
        out = ws.debug.outputs
        if out is None:
            if getattr(self, "_shown", None) is not None or self.texts:
                self.clear()  # (already empty: left as it is, no layout to redo)
            return
        if getattr(self, "_shown", None) is out:
            return  # the same run's outputs (a step of another run does not change them)
        producers = {}
        sg = ws.model.subgraphs[out.subgraph]
        for op in sg.operators:
            for o in op.outputs:
                if o >= 0:
                    producers[o] = op.name
        self.show_outputs(ws.model, out.subgraph, list(out.rows), producers)
        if out.tokens:
            self.show_tokens(out.prompt, out.tokens)
        self._shown = out

    def clear(self) -> None:
        while self.rows.count() > 1:
            item = self.rows.takeAt(0)
            if item.widget() and item.widget() is not self.empty:
                item.widget().deleteLater()
        self.rows.insertWidget(0, self.empty)
        self.empty.show()
        self.texts, self.legends = [], []
        self._shown = None

    def _add(self, widget: QWidget) -> None:
        self.rows.insertWidget(self.rows.count() - 1, widget)

    def show_outputs(self, model, subgraph: int, outputs: list[tuple[str, int, np.ndarray]],
                     producers: dict[int, str]) -> None:
        """``outputs``: (name, tensor index, values) of the entry subgraph."""
        self.clear()
        self.empty.hide()
        for name, t, arr in outputs:
            head = QLabel(f"<b>{html.escape(name)}</b> (t{t}) {arr.dtype.name}{list(arr.shape)}")
            self._add(head)
            best = top_k(model, subgraph, t, arr, producers.get(t))
            seg = None if best else segmentation(model, subgraph, t, arr)
            picture = None
            if seg is not None:
                picture = label_colours(seg.n_classes)[seg.classes]
            elif not best:
                picture = image_of(arr)
            if best:
                text = "\n".join(f"{k + 1}. #{i} {label or ''}  {score:.4g}"
                                 for k, (i, label, score) in enumerate(best))
            else:
                text = value_summary(arr)
            if picture is not None:
                self._add(self._picture(picture))
            if seg is not None:
                legend = QLabel(legend_html(seg))
                legend.setWordWrap(True)
                legend.setTextFormat(Qt.TextFormat.RichText)
                self._add(legend)
                self.legends.append(legend.text())
                text = (f"segmentation map: the class of each pixel is its highest of "
                        f"{seg.n_classes} scores; {len(seg.present)} classes present.  " + text)
            label = QLabel(text)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setWordWrap(True)
            self._add(label)
            self.texts.append(text)

    def show_tokens(self, prompt, tokens) -> None:
        """A generation run's ids, first: the prompt and what was generated."""
        text = (f"prompt: {' '.join(map(str, prompt))}\n"
                f"generated ({len(tokens)}): {' '.join(map(str, tokens))}")
        label = QLabel(text)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        label.setWordWrap(True)
        self.rows.insertWidget(0, label)
        self.rows.insertWidget(0, QLabel("<b>tokens</b> (the argmax of each decode step)"))
        self.texts.insert(0, text)

    @staticmethod
    def _picture(rgb: np.ndarray) -> QLabel:
        rgb = np.ascontiguousarray(rgb, np.uint8)
        h, w, _ = rgb.shape
        image = QImage(rgb.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()
        view = QLabel()
        view.setPixmap(QPixmap.fromImage(image).scaled(
            PICTURE, PICTURE, Qt.AspectRatioMode.KeepAspectRatio,
            Qt.TransformationMode.FastTransformation))  # class borders stay sharp
        return view
