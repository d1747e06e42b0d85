"""The Outputs dock: each output of a finished run as a classifier's top-k (with the
model's labels), an image (H x W x 1..4 tensors, or a segmentation map), or its values."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from ...interpreter.outputs import top_k, value_summary

#: a qualitative palette for segmentation maps (class index -> colour)
PALETTE = np.array([[0, 0, 0], [230, 25, 75], [60, 180, 75], [255, 225, 25], [0, 130, 200],
                    [245, 130, 48], [145, 30, 180], [70, 240, 240], [240, 50, 230],
                    [210, 245, 60], [250, 190, 212], [0, 128, 128], [220, 190, 255],
                    [170, 110, 40], [255, 250, 200], [128, 0, 0]], np.uint8)


def image_of(arr: np.ndarray) -> np.ndarray | None:
    """An H x W x 3 uint8 picture of an image-shaped output, or None.  1..4 channels are
    shown as grey / RGB (min-max scaled); more channels are taken as class scores of a
    segmentation map (argmax, coloured by class)."""
    a = np.asarray(arr)
    while a.ndim > 3 and a.shape[0] == 1:
        a = a[0]
    if a.ndim == 2:
        a = a[..., None]
    if a.ndim != 3 or a.shape[0] < 4 or a.shape[1] < 4 or a.dtype.kind not in "biuf":
        return None
    a = a.astype(np.float64)
    c = a.shape[2]
    if c > 4:
        cls = np.argmax(a, axis=2)
        return PALETTE[cls % len(PALETTE)]
    if c == 2:
        a = a[..., :1]
    lo, hi = np.nanmin(a), np.nanmax(a)
    scaled = np.zeros_like(a) if hi <= lo else (a - lo) / (hi - lo)
    img = np.nan_to_num(scaled * 255).clip(0, 255).astype(np.uint8)
    if img.shape[2] == 1:
        img = np.repeat(img, 3, axis=2)
    return np.ascontiguousarray(img[..., :3])


class OutputsDock(QWidget):
    """Shows the outputs of the last finished run."""

    def __init__(self, parent: QWidget | None = None) -> None:
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

    def clear(self) -> None:
        while self.rows.count() > 1:
            item = self.rows.takeAt(0)
            if item.widget():
                item.widget().deleteLater()
        self.texts = []

    def show_outputs(self, model, subgraph: int, outputs: list[tuple[str, int, np.ndarray]],
                     producers: dict[int, str]) -> None:
        """``outputs``: (name, tensor index, values) of the entry subgraph."""
        self.clear()
        for name, t, arr in outputs:
            head = QLabel(f"<b>{name}</b> (t{t}) {arr.dtype.name}{list(arr.shape)}")
            self.rows.insertWidget(self.rows.count() - 1, head)
            best = top_k(model, subgraph, t, arr, producers.get(t))
            picture = None if best else image_of(arr)
            if best:
                text = "\n".join(f"{k + 1}. #{i} {label or ''}  {score:.4g}"
                                 for k, (i, label, score) in enumerate(best))
            elif picture is not None:
                h, w, _ = picture.shape
                image = QImage(picture.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()
                view = QLabel()
                view.setPixmap(QPixmap.fromImage(image).scaled(
                    256, 256, Qt.AspectRatioMode.KeepAspectRatio))
                self.rows.insertWidget(self.rows.count() - 1, view)
                text = value_summary(arr)
            else:
                text = value_summary(arr)
            label = QLabel(text)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setWordWrap(True)
            self.rows.insertWidget(self.rows.count() - 1, label)
            self.texts.append(text)
