"""The picker of where the numbers' samples come from: seeded ones, a folder of images, an
.npz of inputs, or the inputs of the debugger session.

A view of the window's one `state.samples.SampleChoice` (the Quantization dock shows it;
Run Both runs on the same choice).  Choosing the folder or the file asks for it (a
cancelled dialog keeps the previous choice).  "Inputs of the debugger session" is offered
only while a session runs (the debugger's controller owns those inputs; the window gives
this widget a provider of them), and is otherwise disabled with a tooltip that says why.
The choice, its paths and the count are remembered in the settings.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import QComboBox, QFileDialog, QHBoxLayout, QWidget

from ..state.samples import DEBUGGER, IMAGES, NPZ, SEEDED, SampleChoice

__all__ = ["DEBUGGER", "IMAGES", "NO_SESSION", "NPZ", "SEEDED", "SampleSource"]

LABELS = {SEEDED: "Seeded samples", IMAGES: "Folder of images\u2026",
          NPZ: "Inputs file (.npz)\u2026", DEBUGGER: "Inputs of the debugger session"}
NO_SESSION = ("No debug session: start one (Debug > Start / Continue, F5) with the inputs to "
              "analyse, then choose this.")

#: () -> (inputs by name, signature or None) of the running debug session, or None
SessionProvider = Callable[[], "tuple[dict[str, np.ndarray], str | None] | None"]


def load_choice(settings: QSettings, choice: SampleChoice | None = None) -> SampleChoice:
    """``choice`` (a new one by default) as the settings remember it."""
    choice = choice if choice is not None else SampleChoice()
    choice.images_dir = str(settings.value("quant/images_dir", "") or "")
    choice.npz_path = str(settings.value("quant/npz", "") or "")
    choice.count = int(settings.value("quant/samples", choice.count))
    saved = str(settings.value("quant/source", SEEDED) or SEEDED)
    if saved in (IMAGES, NPZ) and not (choice.images_dir if saved == IMAGES else choice.npz_path):
        saved = SEEDED
    choice.kind = saved if saved in LABELS and saved != DEBUGGER else SEEDED
    return choice


class SampleSource(QWidget):
    """See the module docstring.  ``changed`` follows every new choice."""

    changed = Signal(str)

    def __init__(self, settings: QSettings, choice: SampleChoice | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.choice = load_choice(settings, choice)
        self._provider: SessionProvider | None = None
        self.combo = QComboBox()
        for key in (SEEDED, IMAGES, NPZ, DEBUGGER):
            self.combo.addItem(LABELS[key], key)
        self.combo.setToolTip("Where the samples of the analysis (and of Run Both) come from")
        self.combo.activated.connect(self._activated)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.combo)
        self._select(self.choice.kind)
        self.refresh()

    @property
    def images_dir(self) -> str:
        return self.choice.images_dir

    @property
    def npz_path(self) -> str:
        return self.choice.npz_path

    def set_count(self, count: int) -> None:
        self.choice.count = int(count)
        self.settings.setValue("quant/samples", int(count))
        self.changed.emit(self.kind)

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
        if not has and self.choice.kind == DEBUGGER:
            self._select(SEEDED)

    # -- choosing ------------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        return self.choice.kind

    def choose(self, kind: str, path: str | Path | None = None) -> bool:
        """Choose a source (a folder / file for images / npz); False if it is not
        available (no session, or no path)."""
        c = self.choice
        if kind == DEBUGGER and self.session_inputs() is None:
            return False
        if kind == IMAGES:
            if path is None and not c.images_dir:
                return False
            c.images_dir = str(path) if path is not None else c.images_dir
            self.settings.setValue("quant/images_dir", c.images_dir)
        elif kind == NPZ:
            if path is None and not c.npz_path:
                return False
            c.npz_path = str(path) if path is not None else c.npz_path
            self.settings.setValue("quant/npz", c.npz_path)
        self._select(kind)
        return True

    def _select(self, kind: str) -> None:
        self.choice.kind = kind
        self.combo.setCurrentIndex(self.combo.findData(kind))
        for key, path in ((IMAGES, self.choice.images_dir), (NPZ, self.choice.npz_path)):
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
                                                    self.choice.images_dir)
        elif kind == NPZ:
            path, _ = QFileDialog.getOpenFileName(self, "Inputs (.npz, keyed by input name)",
                                                  self.choice.npz_path, "NumPy archives (*.npz)")
        if kind in (IMAGES, NPZ) and not path:
            self._select(self.choice.kind)  # cancelled: keep the previous choice
            return
        if not self.choose(kind, path):
            self._select(self.choice.kind)

    # -- for the analysis ---------------------------------------------------------------------
    def analysis_kwargs(self) -> dict[str, Any]:
        """`quant.analyze` keyword arguments for the choice (raises ValueError when the
        debugger session ended since it was chosen)."""
        return self.choice.analysis_kwargs(self.session_inputs())

    def describe(self) -> str:
        return self.choice.describe()
