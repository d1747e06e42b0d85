"""The tensor panel's histogram: stored or real values, linear or log counts, all channels
or one (per-channel tensors), with the zero point marked.  During a debug run the values
are the run's, and the caption says so ("values at this stop"), with their count (a
dynamic shape makes it another than the stored shape's)."""
from __future__ import annotations

from typing import Callable

import numpy as np
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QVBoxLayout, QWidget

from ...model import Tensor
from ..state import tensor_stats as ts
from ..histogram_widget import HistogramWidget

Values = Callable[[str], "np.ndarray | None"]  # source ("Stored values" / "Real values") -> array


class HistogramPane(QWidget):
    def __init__(self, values: Values, no_values: Callable[[], "str | None"],
                 parent: QWidget | None = None, live: Callable[[], bool] | None = None) -> None:
        super().__init__(parent)
        self._values = values
        self._live = live or (lambda: False)  # whether the values are a run's
        self._no_values = no_values  # why there is nothing to show (None: there is)
        self.tensor: Tensor | None = None
        self.source_combo = QComboBox()
        self.source_combo.addItems(["Stored values", "Real values"])
        self.source_combo.setToolTip("Stored (raw integer) values, or dequantized real values")
        self.scale_combo = QComboBox()
        self.scale_combo.addItems(["Linear", "Log"])
        self.channel_combo = QComboBox()
        self.channel_combo.setToolTip("Per-channel tensors: one channel or all")
        for w in (self.source_combo, self.scale_combo, self.channel_combo):
            w.currentIndexChanged.connect(self.update_histogram)
        self.histogram = HistogramWidget()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        controls = QHBoxLayout()
        controls.addWidget(self.source_combo)
        controls.addWidget(self.scale_combo)
        controls.addWidget(self.channel_combo)
        controls.addStretch(1)
        layout.addLayout(controls)
        layout.addWidget(self.histogram, 1)

    def show_tensor(self, tensor: Tensor | None) -> None:
        self.tensor = tensor
        self._fill_channel_combo()
        self.update_histogram()

    def _fill_channel_combo(self) -> None:
        self.channel_combo.blockSignals(True)
        self.channel_combo.clear()
        self.channel_combo.addItem("All channels")
        q = self.tensor.quantization if self.tensor is not None else None
        per_channel = q is not None and q.is_per_channel and 0 <= q.quantized_dimension < self.tensor.rank
        if per_channel:
            for c in range(q.scale.size):
                self.channel_combo.addItem(f"Channel {c}")
        self.channel_combo.setVisible(per_channel)
        self.channel_combo.blockSignals(False)

    def current_input(self) -> np.ndarray | None:
        """The values the histogram shows (after the source and channel choices)."""
        values = self._values(self.source_combo.currentText())
        if values is None or values.dtype == object:
            return None
        ch = self.channel_combo.currentIndex() - 1
        if ch >= 0:
            values = ts.channel_values(values, self.tensor.quantization.quantized_dimension, ch)
        return values

    def update_histogram(self) -> None:
        message = self._no_values()
        if message is not None:
            self.histogram.set_histogram(None, message=message)
            return
        values = self.current_input()
        if values is None:
            self.histogram.set_histogram(None, message="No numeric values")
            return
        hist = ts.histogram(values)
        source = self.source_combo.currentText()
        if self._live():
            source = {"Stored values": "Values at this stop",
                      "Real values": "Real values at this stop"}.get(source, source)
        caption = f"{source.lower()}, {values.size:,} values"
        if self.channel_combo.currentIndex() > 0:
            caption += f", {self.channel_combo.currentText().lower()}"
        self.histogram.set_histogram(hist, log_scale=self.scale_combo.currentText() == "Log", caption=caption,
                                     marker=self._zero_marker())

    def _zero_marker(self) -> tuple[float, str] | None:
        """Where real zero falls: the zero point for stored values, 0.0 for real ones."""
        q = self.tensor.quantization
        if self.source_combo.currentText() == "Real values":
            return (0.0, "0")
        if q is None or not q.has_scale or not q.zero_point.size:
            return None
        ch = max(self.channel_combo.currentIndex() - 1, 0) if q.is_per_channel else 0
        zp = int(q.zero_point[min(ch, q.zero_point.size - 1)])
        return (float(zp), f"zero point {zp}")
