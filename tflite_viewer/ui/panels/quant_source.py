"""Where the Quantization dock's analysis takes its samples from: seeded ones, a folder of
images, an .npz of inputs, or the inputs of the debugger session.

A combo box; choosing the folder or the file asks for it (and a cancelled dialog keeps the
previous choice).  "Inputs of the debugger session" is offered only while a session runs
(the debugger's controller owns those inputs; the window gives this widget a provider of
them), and is otherwise disabled with a tooltip that says why.  `analysis_kwargs` turns
the choice into `tflite_viewer.quant.analyze` arguments.  Choice and paths are remembered.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QHBoxLayout, QWidget

SEEDED, IMAGES, NPZ, DEBUGGER = "seeded", "images", "npz", "debugger"
LABELS = {SEEDED: "Seeded samples", IMAGES: "Folder of images\u2026",
          NPZ: "Inputs file (.npz)\u2026", DEBUGGER: "Inputs of the debugger session"}
NO_SESSION = ("No debug session: start one (Debug > Start / Continue, F5) with the inputs to "
              "analyse, then choose this.")

#: () -> (inputs by name, signature or None) of the running debug session, or None
SessionProvider = Callable[[], "tuple[dict[str, np.ndarray], str | None] | None"]


class SampleSource(QWidget):
    """See the module docstring.  ``changed`` follows every new choice."""

    changed = Signal(str)

    def __init__(self, settings: QSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.images_dir: str = str(settings.value("quant/images_dir", "") or "")
        self.npz_path: str = str(settings.value("quant/npz", "") or "")
        self._provider: SessionProvider | None = None
        self.combo = QComboBox()
        for key in (SEEDED, IMAGES, NPZ, DEBUGGER):
            self.combo.addItem(LABELS[key], key)
        self.combo.setToolTip("Where the samples of the analysis come from")
        self.combo.activated.connect(self._activated)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.combo)
        saved = str(settings.value("quant/source", SEEDED) or SEEDED)
        if saved in (IMAGES, NPZ) and not (self.images_dir if saved == IMAGES else self.npz_path):
            saved = SEEDED
        self._current = SEEDED
        self._select(saved if saved != DEBUGGER else SEEDED)
        self.refresh()

    # -- the debugger session ------------------------------------------------------------------
    def set_session_provider(self, provider: SessionProvider | None) -> None:
        self._provider = provider
        self.refresh()

    def session_inputs(self) -> tuple[dict[str, np.ndarray], str | None] | None:
        return self._provider() if self._provider is not None else None

    def refresh(self) -> None:
        """Enable "Inputs of the debugger session" while a session runs; without one it is
        disabled (tooltip: why), and a choice of it falls back to seeded samples."""
        has = self.session_inputs() is not None
        row = self.combo.findData(DEBUGGER)
        item = self.combo.model().item(row)
        item.setEnabled(has)
        self.combo.setItemData(row, None if has else NO_SESSION, Qt.ItemDataRole.ToolTipRole)
        if not has and self._current == DEBUGGER:
            self._select(SEEDED)

    # -- choosing ------------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        return self._current

    def choose(self, kind: str, path: str | Path | None = None) -> bool:
        """Choose a source (a folder / file for images / npz); False if it is not
        available (no session, or no path)."""
        if kind == DEBUGGER and self.session_inputs() is None:
            return False
        if kind == IMAGES:
            if path is None and not self.images_dir:
                return False
            self.images_dir = str(path) if path is not None else self.images_dir
            self.settings.setValue("quant/images_dir", self.images_dir)
        elif kind == NPZ:
            if path is None and not self.npz_path:
                return False
            self.npz_path = str(path) if path is not None else self.npz_path
            self.settings.setValue("quant/npz", self.npz_path)
        self._select(kind)
        return True

    def _select(self, kind: str) -> None:
        self._current = kind
        self.combo.setCurrentIndex(self.combo.findData(kind))
        for key, path in ((IMAGES, self.images_dir), (NPZ, self.npz_path)):
            row = self.combo.findData(key)
            name = Path(path).name if path else ""
            self.combo.setItemText(row, LABELS[key] if not name else (
                f"Images in {name}/\u2026" if key == IMAGES else f"Inputs {name}\u2026"))
            self.combo.setItemData(row, path or None, Qt.ItemDataRole.ToolTipRole)
        if kind != DEBUGGER:
            self.settings.setValue("quant/source", kind)
        self.changed.emit(kind)

    def _activated(self, row: int) -> None:
        kind = self.combo.itemData(row)
        path = None
        if kind == IMAGES:
            path = QFileDialog.getExistingDirectory(self, "Folder of images (JPEG, PNG, .npy ...)",
                                                    self.images_dir)
        elif kind == NPZ:
            path, _ = QFileDialog.getOpenFileName(self, "Inputs (.npz, keyed by input name)",
                                                  self.npz_path, "NumPy archives (*.npz)")
        if kind in (IMAGES, NPZ) and not path:
            self._select(self._current)  # cancelled: keep the previous choice
            return
        if not self.choose(kind, path):
            self._select(self._current)

    # -- for the analysis ---------------------------------------------------------------------
    def analysis_kwargs(self) -> dict[str, Any]:
        """`quant.analyze` keyword arguments for the choice (raises ValueError when the
        debugger session ended since it was chosen)."""
        if self._current == IMAGES:
            return {"images": self.images_dir}
        if self._current == NPZ:
            return {"inputs": self.npz_path}
        if self._current == DEBUGGER:
            got = self.session_inputs()
            if got is None:
                raise ValueError("the debug session has ended: choose another source")
            inputs, signature = got
            return {"given": [dict(inputs)], "signature": signature}
        return {}

    def describe(self) -> str:
        return {SEEDED: "seeded samples", IMAGES: f"the images in {self.images_dir}",
                NPZ: f"the inputs in {self.npz_path}",
                DEBUGGER: "the inputs of the debugger session"}[self._current]
