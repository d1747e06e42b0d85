"""The Inputs dialog: one row per input (per signature input with a signature), each from
random values, zeros, a constant, a .npy/.npz file, an image or a WAV file.

The conversions are `interpreter.input_sources` (Qt-free); this module only decodes image
files with QImage and lays the rows out.  The choices (never the values) are remembered
per model file in QSettings, so reopening a model offers the same files again.  A refused
input keeps the dialog open and says which input and why.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFileDialog, QHBoxLayout,
                               QLabel, QLineEdit, QPushButton, QTableWidget, QVBoxLayout,
                               QWidget)

from ...interpreter import input_sources as src
from ...interpreter.inputs import InputError, InputSpec, input_specs

#: the signature choice that runs a generation loop instead of one signature
GENERATE = "\x00generate"
CHOICES = ("random uniform", "random normal", "zeros", "constant", "file (.npy/.npz)",
           "image", "audio (WAV)")
SETTINGS_KEY = "debugger/inputs/"


def load_image(path: str | Path, width: int, height: int, channels: int) -> np.ndarray:
    """An image file as an H x W x C uint8 array at the given size (QImage reads PNG,
    JPEG, BMP ...; grey for one channel, RGB for three, RGBA for four)."""
    image = QImage(str(path))
    if image.isNull():
        raise ValueError(f"{Path(path).name} is not an image QImage can read")
    image = image.scaled(width, height, Qt.AspectRatioMode.IgnoreAspectRatio,
                         Qt.TransformationMode.SmoothTransformation)
    fmt, depth = {1: (QImage.Format.Format_Grayscale8, 1),
                  4: (QImage.Format.Format_RGBA8888, 4)}.get(channels,
                                                            (QImage.Format.Format_RGB888, 3))
    image = image.convertToFormat(fmt)
    stride = image.bytesPerLine()
    raw = np.frombuffer(image.constBits(), np.uint8, count=stride * height)
    arr = raw.reshape(height, stride)[:, :width * depth].reshape(height, width, depth).copy()
    if channels == 2:
        arr = np.repeat(arr[..., :1], 2, axis=2)
    return arr


class InputRow:
    """The widgets of one input."""

    def __init__(self, spec: InputSpec, table: QTableWidget, row: int) -> None:
        self.spec = spec
        self.source = QComboBox()
        self.source.addItems(CHOICES)
        self.value = QLineEdit()
        self.browse = QPushButton("\u2026")
        self.browse.setFixedWidth(32)
        self.norm = QLineEdit()
        self.norm.setPlaceholderText("mean / std")
        self.norm.setToolTip("Image normalization: real = (pixel - mean) / std; "
                             "comma-separate per-channel values")
        cell = QWidget()
        h = QHBoxLayout(cell)
        h.setContentsMargins(0, 0, 0, 0)
        h.addWidget(self.value, 1)
        h.addWidget(self.browse)
        table.setCellWidget(row, 2, self.source)
        table.setCellWidget(row, 3, cell)
        table.setCellWidget(row, 4, self.norm)
        self.source.currentTextChanged.connect(self._changed)
        self._changed(self.source.currentText())

    def _changed(self, choice: str) -> None:
        needs_value = choice in ("constant",) or choice.startswith(("file", "image", "audio"))
        self.value.setEnabled(needs_value)
        self.browse.setEnabled(choice.startswith(("file", "image", "audio")))
        self.norm.setEnabled(choice == "image")
        self.value.setPlaceholderText({"constant": "value"}.get(choice, "path" if needs_value
                                                                else ""))

    def state(self) -> dict:
        return {"source": self.source.currentText(), "value": self.value.text(),
                "norm": self.norm.text()}

    def restore(self, state: dict) -> None:
        if state.get("source") in CHOICES:
            self.source.setCurrentText(state["source"])
        self.value.setText(str(state.get("value", "")))
        if state.get("norm"):
            self.norm.setText(str(state["norm"]))


def _parse_norm(text: str) -> tuple[list[float], list[float]]:
    mean_t, _, std_t = text.partition("/")
    mean = [float(v) for v in mean_t.replace(" ", "").split(",") if v]
    std = [float(v) for v in std_t.replace(" ", "").split(",") if v]
    if not mean or not std:
        raise ValueError(f"normalization {text!r}: write 'mean / std', e.g. '127.5 / 127.5'")
    return mean, std


class InputsDialog(QDialog):
    """Choose the inputs; `arrays()` gives them after ``exec()`` returned true."""

    def __init__(self, model, path: Path | None, settings: QSettings | None = None,
                 parent: QWidget | None = None, signature: str | None = None,
                 generation=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Inputs of the run")
        self.model = model
        self.path = path
        self.settings = settings
        self.signature = signature
        self.notes: list[str] = []
        self._arrays: dict[str, np.ndarray] = {}
        #: the generation loop chosen (a workspace.GenerationSetup), None for one run
        self.generation = None
        self.generation_form = None
        self.signature_combo = QComboBox()
        self.signature_combo.addItem("subgraph 0 (its inputs)", None)
        for sig in model.signature_defs:
            self.signature_combo.addItem(f"signature {sig.key!r} (subgraph "
                                         f"{sig.subgraph_index})", sig.key)
        if len(model.signature_defs) >= 2:  # prefill and decode, as LLM exports have
            from .generation_form import GenerationForm
            self.signature_combo.addItem("generate: prefill, then decode steps (the KV "
                                         "cache carried by name)", GENERATE)
            self.generation_form = GenerationForm(model, generation)
            self.generation_form.hide()
        if generation is not None and self.generation_form is not None:
            signature = GENERATE
        if signature is not None:
            self.signature_combo.setCurrentIndex(max(self.signature_combo.findData(signature), 0))
        self.signature_combo.setVisible(bool(model.signature_defs))
        self.signature_combo.currentIndexChanged.connect(
            lambda _i: self._build_rows(self.signature_combo.currentData()))
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["input", "type", "source", "value / file",
                                              "image mean / std"])
        self.table.verticalHeader().hide()
        self.rows: list[InputRow] = []
        self.specs: list[InputSpec] = []
        self._build_rows(signature)
        self.error = QLabel("")
        self.error.setStyleSheet("color: #cf222e;")
        self.error.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.signature_combo)
        layout.addWidget(self.table, 1)
        if self.generation_form is not None:
            layout.addWidget(self.generation_form, 1)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.resize(900, max(150 + 34 * len(self.specs), 420 if self.generating else 0))

    @property
    def generating(self) -> bool:
        """Whether the generation loop is chosen (its form shown instead of the rows)."""
        return self.signature_combo.currentData() == GENERATE

    def _build_rows(self, signature: str | None) -> None:
        """One row per input of subgraph 0, or of the signature (then named as in it); the
        generation form instead of rows when the loop is chosen."""
        generating = signature == GENERATE
        self.table.setVisible(not generating)
        if self.generation_form is not None:
            self.generation_form.setVisible(generating)
        if generating:
            signature = None
            self.specs = []
            return
        self.signature = signature
        self.specs = input_specs(self.model, signature)
        self.table.setRowCount(0)
        self.table.setRowCount(len(self.specs))
        self.rows = []
        for k, spec in enumerate(self.specs):
            self.table.setCellWidget(k, 0, QLabel(f" {spec.name}"))
            self.table.setCellWidget(k, 1, QLabel(f" {spec.describe()}"))
            row = InputRow(spec, self.table, k)
            row.browse.clicked.connect(lambda _c=False, r=row: self._browse(r))
            mean, std, where = src.normalization(self.model, spec)
            row.norm.setText(f"{', '.join(f'{v:g}' for v in mean)} / "
                             f"{', '.join(f'{v:g}' for v in std)}")
            row.norm.setToolTip(row.norm.toolTip() + f" ({where})")
            self.rows.append(row)
        self.table.resizeColumnsToContents()
        self.table.setColumnWidth(3, 260)
        self._restore()

    # -- remembering -------------------------------------------------------------------------
    def _key(self) -> str | None:
        return None if self.path is None or self.settings is None else \
            SETTINGS_KEY + str(Path(self.path).resolve())

    def _restore(self) -> None:
        key = self._key()
        if key is None:
            return
        try:
            saved = json.loads(str(self.settings.value(key, "{}")))
        except (TypeError, ValueError):
            return
        for row in self.rows:
            if isinstance(saved.get(row.spec.name), dict):
                row.restore(saved[row.spec.name])

    def _remember(self) -> None:
        key = self._key()
        if key is not None:
            self.settings.setValue(key, json.dumps({r.spec.name: r.state() for r in self.rows}))

    # -- values ------------------------------------------------------------------------------
    def _browse(self, row: InputRow) -> None:
        choice = row.source.currentText()
        pattern = {"image": "Images (*.png *.jpg *.jpeg *.bmp)",
                   "audio (WAV)": "WAV audio (*.wav)"}.get(choice, "NumPy (*.npy *.npz)")
        path, _ = QFileDialog.getOpenFileName(self, f"Input {row.spec.name}", "", pattern)
        if path:
            row.value.setText(path)

    def value_of(self, row: InputRow) -> np.ndarray:
        spec, choice, text = row.spec, row.source.currentText(), row.value.text().strip()
        if choice == "random uniform":
            return src.random_input(self.model, spec, "uniform", signature=self.signature)
        if choice == "random normal":
            return src.random_input(self.model, spec, "normal", signature=self.signature)
        if choice == "zeros":
            return src.constant_input(spec, 0)
        if choice == "constant":
            return src.constant_input(spec, text)
        if not text:
            raise InputError(f"input {spec.name!r}: choose a file")
        if choice.startswith("file"):
            return src.load_array(text, spec)
        if choice == "image":
            layout = src.image_layout(spec)
            if layout is None:
                raise InputError(f"input {spec.name!r} is {spec.describe()}: not an image input")
            try:
                pixels = load_image(text, layout.width, layout.height, layout.channels)
                mean, std = _parse_norm(row.norm.text())
            except ValueError as exc:
                raise InputError(f"input {spec.name!r}: {exc}") from None
            return src.image_to_input(self.model, spec, pixels, mean, std)
        arr, notes = src.wav_to_input(text, spec, src.metadata_sample_rate(self.model, spec))
        self.notes.extend(f"input {spec.name!r}: {n}" for n in notes)
        return arr

    def collect(self) -> dict[str, np.ndarray]:
        """Every input's array; an `InputError` naming the first refused one."""
        self.notes = []
        return {row.spec.name: self.value_of(row) for row in self.rows}

    def accept(self) -> None:
        if self.generating:
            try:
                self.generation = self.generation_form.setup()
            except InputError as exc:  # a GenerationError says which piece and why
                self.error.setText(str(exc))
                return
            super().accept()
            return
        self.generation = None
        try:
            self._arrays = self.collect()
        except InputError as exc:
            self.error.setText(str(exc))
            return
        self.error.setText("\n".join(self.notes))
        self._remember()
        super().accept()

    def arrays(self) -> dict[str, np.ndarray]:
        return dict(self._arrays)
