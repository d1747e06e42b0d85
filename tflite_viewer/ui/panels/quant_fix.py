"""Fixing it from the Quantization dock: the worst-first table's "Keep selected ops in
float" and "Quantize selected with..." quantize the float model again with LiteRT's
quantizer (`state.requantize`), the dialog choosing the recipes and where the model (and
the recipe, the quantizer's JSON) go.

`RequantizeRun` runs `state.requantize.run` on a pool thread as the dock's run of its
workspace (`state.quant.quant_state`: the dock's progress bar and Cancel drive it, as
they drive a comparison) and calls ``done(output, float_path)`` when the model is
written; the window then opens it beside the float model with the new analysis.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, QSettings, QTimer
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout,
                               QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget)

from ...quant import recipes
from ..state import requantize as rq
from ..state.quant import TOPIC, QuantState, quant_state
from ..state.workspace import Hub, Workspace
from .quant_runs import QuantRun

KEEP_TEXT = "Keep selected ops in float\u2026"
OVERRIDE_TEXT = "Quantize selected with\u2026"
#: the least time between two progress updates from a worker (the quantizer and the
#: generation analysis report every op)
PROGRESS_EVERY = 0.1


def quantizer_missing() -> str | None:
    """The one line saying how to install LiteRT's quantizer, or None when it is there."""
    try:
        recipes.quantizer()
    except recipes.QuantizerMissing as exc:
        return str(exc)
    return None


class RequantizeDialog(QDialog):
    """The recipes and the files of one requantization (see the module docstring)."""

    def __init__(self, action: str, ops: int, names: list[str], base: str, output: Path,
                 settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.action, self.settings = action, settings
        self.setWindowTitle(KEEP_TEXT.rstrip("\u2026") if action == rq.KEEP_FLOAT
                            else OVERRIDE_TEXT.rstrip("\u2026"))
        form = QFormLayout(self)
        what = "kept in float" if action == rq.KEEP_FLOAT else "quantized with the recipe below"
        note = QLabel(f"The float model is quantized again with LiteRT's quantizer: {ops} "
                      f"selected op{'s' if ops != 1 else ''} {what}, the others with the "
                      f"base recipe. The result opens beside the float model, analysed "
                      f"against it. Ops of a type the quantizer does not quantize stay float.")
        note.setWordWrap(True)
        form.addRow(note)
        self.base = self._combo(names, base)
        form.addRow("Base recipe", self.base)
        self.recipe = self._combo(names, str(settings.value("quant/override_recipe",
                                                            "dynamic_wi8_afp32")))
        if action == rq.OVERRIDE:
            form.addRow("Selected ops with", self.recipe)
        self.output = QLineEdit(str(Path(output).absolute()))
        form.addRow("Write the model to", self._with_browse(self.output, "Quantized model",
                                                            "TFLite models (*.tflite)"))
        self.recipe_path = QLineEdit()
        self.recipe_path.setPlaceholderText("optional: the recipe as the quantizer's JSON")
        form.addRow("Save the recipe to", self._with_browse(self.recipe_path, "Recipe",
                                                            "JSON (*.json)"))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Quantize")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.setMinimumWidth(520)

    @staticmethod
    def _combo(names: list[str], current: str) -> QComboBox:
        combo = QComboBox()
        combo.addItems(names)
        combo.setCurrentIndex(max(combo.findText(current), 0))
        return combo

    def _with_browse(self, edit: QLineEdit, title: str, filters: str) -> QWidget:
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(edit, 1)
        browse = QPushButton("Browse\u2026")

        def pick() -> None:
            path, _ = QFileDialog.getSaveFileName(self, title, edit.text(), filters)
            if path:
                edit.setText(path)
        browse.clicked.connect(pick)
        row.addWidget(browse)
        return box

    def request(self, float_path: Path, tensors, samples: int, sample_kwargs: dict) -> rq.Request:
        """What the dialog says, as a `state.requantize.Request` (ValueError: why not)."""
        output = self.output.text().strip()
        if not output:
            raise ValueError("give the file to write the quantized model to")
        if Path(output).resolve() == Path(float_path).resolve():
            raise ValueError("the quantized model would overwrite the float model")
        self.settings.setValue("quant/base_recipe", self.base.currentText())
        if self.action == rq.OVERRIDE:
            self.settings.setValue("quant/override_recipe", self.recipe.currentText())
        recipe_path = self.recipe_path.text().strip()
        return rq.Request(Path(float_path), self.base.currentText(), self.action,
                          tuple(tensors), Path(output),
                          self.recipe.currentText() if self.action == rq.OVERRIDE else None,
                          Path(recipe_path) if recipe_path else None, samples,
                          dict(sample_kwargs))


def _throttled(emit: Callable[[int, int, str], None]) -> Callable[[int, int, str], None]:
    """``emit`` at most every `PROGRESS_EVERY` seconds, and at the end: the quantizer
    reports every op (thousands on a decoder), more than a progress bar can show."""
    last = [0.0]

    def progress(done: int, total: int, message: str) -> None:
        now = time.monotonic()
        if done >= total or now - last[0] >= PROGRESS_EVERY:
            last[0] = now
            emit(done, total, message)
    return progress


class RequantizeRun(QuantRun):
    """One requantization for ``ws`` as its quantization run (see the module docstring)."""

    cancelled_status = "Quantizing cancelled: nothing was written."
    failed_status = "Quantizing failed"

    def __init__(self, hub: Hub, ws: Workspace, request: rq.Request,
                 on_progress: Callable[[int, int, str], None],
                 on_failed: Callable[[str], None], done: Callable[[str, str], None],
                 parent: QObject) -> None:
        super().__init__(hub, ws, on_progress, on_failed, parent)
        self.request, self.done = request, done
        quant_state(ws).status = (f"Quantizing {request.float_path.name} "
                                  f"({request.describe()})\u2026")
        self._start(rq.run, request, _throttled(self.progressed.emit), self.cancel.is_set)

    def _succeeded(self, q: QuantState, result: rq.Result) -> None:
        q.status = result.summary()
        if self.hub.changed(TOPIC, self.ws):
            # opened once this slot has returned: the open replaces this run's workspace
            done, paths = self.done, (str(result.request.output), str(result.request.float_path))
            QTimer.singleShot(0, lambda: done(*paths))
