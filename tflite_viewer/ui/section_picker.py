"""The section picker: which TFLite model of a .litertlm container to open.

A container (`model.litertlm`) bundles models, weights, a tokenizer and metadata; the
dialog lists every section (type, model type, size) and lets the user choose one of the
TFLiteModel sections; the others are shown greyed, so the user sees what the file holds.
Reading the list maps the file and decodes its header only.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QLabel, QListWidget, QListWidgetItem,
                               QVBoxLayout)

from ..model.litertlm import Container


class SectionPicker(QDialog):
    """Lists a container's sections; `chosen` is the TFLiteModel section picked."""

    def __init__(self, container: Container, current: int | None = None, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("sectionPicker")
        self.setWindowTitle(f"Open a model of {container.name}")
        self.container = container
        layout = QVBoxLayout(self)
        version = ".".join(map(str, container.version))
        layout.addWidget(QLabel(f"{container.name} is a LiteRT-LM container (format {version}) "
                                f"with {len(container.sections)} sections. Choose the TFLite "
                                "model to open:"))
        self.list = QListWidget()
        self.list.setObjectName("sectionList")
        first = None
        for s in container.sections:
            item = QListWidgetItem(f"{s.label}, bytes {s.begin:,}..{s.end:,}")
            item.setData(Qt.ItemDataRole.UserRole, s.index)
            if not s.is_model:
                item.setFlags(item.flags() & ~(Qt.ItemFlag.ItemIsEnabled
                                               | Qt.ItemFlag.ItemIsSelectable))
            elif first is None or s.index == current:
                first = item
            self.list.addItem(item)
        if first is not None:
            self.list.setCurrentItem(first)
        self.list.itemDoubleClicked.connect(lambda _item: self.accept())
        layout.addWidget(self.list)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(first is not None)
        layout.addWidget(self.buttons)
        self.resize(560, 320)

    def chosen(self) -> int | None:
        item = self.list.currentItem()
        return None if item is None else int(item.data(Qt.ItemDataRole.UserRole))


def container_sections(path: str | Path) -> Container:
    """The container's header (a cheap read); ModelFormatError for a bad one."""
    from ..model.litertlm import load_container
    return load_container(path)
