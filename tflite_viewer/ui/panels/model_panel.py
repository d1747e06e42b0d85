"""The model as a whole: sizes, parameters, ops, signatures, and every kind of metadata.

TFLITE_METADATA is shown as the tree it is (normalization options, image properties,
tensor descriptions), and the files packed with the model (labels, vocabularies) can be
read right here: selecting one shows its first lines below the tree.

When ``editable``: the description has a line edit, signature keys and their input/output
names are renamed in place (double-click or F2: a line edit that turns red on an empty or
duplicate name), and metadata entries are added, replaced (from text or a file) and removed
from the context menu or the "add entry" row.  Edits go out as ``editRequested``.
"""
from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (QAbstractItemView, QFileDialog, QInputDialog, QLabel,
                               QLineEdit, QMenu, QPlainTextEdit, QPushButton,
                               QStyledItemDelegate, QTreeWidgetItem, QVBoxLayout, QWidget)

from ...edit import (RemoveMetadata, RenameSignature, RenameSignatureTensor, SetDescription,
                     SetMetadata)
from ...model import Model
from .. import editors as ed
from ..state.summary import ModelSummary, summarize
from . import common
from .common import LinkTree, Row, format_value, panel_layout, split_panes
from .tensor_quantization import WARNING

log = logging.getLogger(__name__)
PREVIEW_LINES = 200
RENAME_ROLE = Qt.ItemDataRole.UserRole + 4  # ("signature", key) | ("inputs"/"outputs", key, name)
META_ROLE = Qt.ItemDataRole.UserRole + 5  # metadata entry name


class RenameDelegate(QStyledItemDelegate):
    """In-place renaming of the key column of rows that carry a RENAME_ROLE spec."""

    def __init__(self, panel: "ModelPanel") -> None:
        super().__init__(panel.tree)
        self.panel = panel

    def createEditor(self, parent, option, index):  # noqa: N802 - Qt API
        spec = index.data(RENAME_ROLE)
        if index.column() != 0 or not spec:
            return None
        edit = QLineEdit(parent)
        taken = self.panel._names_beside(tuple(spec))

        def check(text: str) -> None:
            problem = ed.name_problem(text) or ("already used" if text in taken else None)
            edit.setStyleSheet(ed.INVALID_STYLE if problem else "")
            edit.setToolTip(problem or "")
        edit.textEdited.connect(check)
        return edit

    def setEditorData(self, editor, index) -> None:  # noqa: N802 - Qt API
        spec = index.data(RENAME_ROLE)
        editor.setText(spec[1] if spec[0] == "signature" else spec[2])
        editor.selectAll()

    def setModelData(self, editor, model, index) -> None:  # noqa: N802 - Qt API
        spec = tuple(index.data(RENAME_ROLE))
        text = editor.text()
        # The document decides, then the panel is rebuilt: after the view has closed this
        # editor, not while it is still committing into a row about to disappear.
        QTimer.singleShot(0, self.panel, lambda: self.panel._rename(spec, text))


def human_bytes(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return str(n)


class ModelPanel(QWidget):
    """Shows one model.  ``subgraphActivated`` follows a signature's subgraph link."""

    subgraphActivated = Signal(int)
    editRequested = Signal(object)  # an EditCommand
    editFailed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = LinkTree(self)
        self.tree.linkActivated.connect(self._follow)
        self.tree.setItemDelegate(RenameDelegate(self))
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                  | QAbstractItemView.EditTrigger.EditKeyPressed)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._context_menu)
        # cut in the middle where cut: "DEPTHWI…D/v1" and "…D/v2" stay two op kinds
        # (cut at the end both read "DEPTHWISE_C…" in a narrow dock)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.editable = False
        self.editors: dict[str, QWidget] = {}
        self.tree.itemSelectionChanged.connect(self._preview_selected)
        self.preview_title = QLabel("")
        self.preview = QPlainTextEdit()
        self.preview.setReadOnly(True)
        mono = QFont("DejaVu Sans Mono")
        mono.setPixelSize(11)
        self.preview.setFont(mono)
        box = QWidget()
        bl = QVBoxLayout(box)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.preview_title)
        bl.addWidget(self.preview)
        self.preview_box = box
        panel_layout(self).addWidget(split_panes(Qt.Orientation.Vertical, (self.tree, 4), (box, 1)))
        self.model: Model | None = None

    def rows(self) -> list[Row]:
        return self.tree.rows()

    def shown_op_kinds(self) -> list[str]:
        """The op kinds of the Operators section as the tree draws them (cut to the key
        column's width as Qt cuts them)."""
        tree = self.tree
        section = next((tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
                        if tree.topLevelItem(i).text(0).startswith("Operators")), None)
        if section is None:
            return []
        metrics = tree.fontMetrics()
        out = []
        for k in range(section.childCount()):
            item = section.child(k)
            width = tree.visualRect(tree.indexFromItem(item, 0)).width() - 8
            out.append(metrics.elidedText(item.text(0), tree.textElideMode(), width))
        return out

    # -- edits -------------------------------------------------------------------------------
    def set_description(self, text: str) -> None:
        self.editRequested.emit(SetDescription(text))

    def rename_signature(self, key: str, new: str) -> None:
        self.editRequested.emit(RenameSignature(key, new))

    def rename_signature_tensor(self, key: str, kind: str, old: str, new: str) -> None:
        self.editRequested.emit(RenameSignatureTensor(key, kind, old, new))

    def set_metadata(self, name: str, value: bytes | str) -> None:
        self.editRequested.emit(SetMetadata(name, value))

    def remove_metadata(self, name: str) -> None:
        self.editRequested.emit(RemoveMetadata(name))

    def _rename(self, spec: tuple, new: str) -> None:
        if spec[0] == "signature":
            if new != spec[1]:
                self.rename_signature(spec[1], new)
        elif new != spec[2]:
            self.rename_signature_tensor(spec[1], spec[0], spec[2], new)

    def _names_beside(self, spec: tuple) -> set[str]:
        """The names a renamed key must not collide with."""
        if self.model is None:
            return set()
        if spec[0] == "signature":
            return {s.key for s in self.model.signature_defs} - {spec[1]}
        for sig in self.model.signature_defs:
            if sig.key == spec[1]:
                maps = sig.inputs if spec[0] == "inputs" else sig.outputs
                return {m.name for m in maps} - {spec[2]}
        return set()

    def _context_menu(self, pos: QPoint) -> None:
        if self.model is None or not self.editable:
            return
        item = self.tree.itemAt(pos)
        menu = QMenu(self)
        if item is not None and item.data(0, RENAME_ROLE):
            menu.addAction("Rename\u2026", lambda: self.tree.editItem(item, 0))
        name = item.data(0, META_ROLE) if item is not None else None
        if name:
            menu.addAction(f"Set \u201c{name}\u201d from text\u2026", lambda: self._metadata_text_dialog(name))
            menu.addAction(f"Set \u201c{name}\u201d from file\u2026", lambda: self._metadata_file_dialog(name))
            menu.addAction(f"Remove metadata \u201c{name}\u201d", lambda: self.remove_metadata(name))
        menu.addAction("Add metadata entry\u2026", lambda: self._metadata_text_dialog(None))
        common.exec_menu(menu, self.tree.viewport().mapToGlobal(pos))

    def _metadata_text_dialog(self, name: str | None) -> None:
        if name is None:
            name, ok = QInputDialog.getText(self, "Add metadata entry", "Name:")
            if not ok or not name:
                return
        text, ok = QInputDialog.getMultiLineText(self, f"Metadata {name}", "Value (stored as UTF-8):")
        if ok:
            self.set_metadata(name, text)

    def _metadata_file_dialog(self, name: str) -> None:
        path, _ = QFileDialog.getOpenFileName(self, f"Metadata {name} from file")
        if not path:
            return
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            self.editFailed.emit(f"cannot read {path}: {exc.strerror or exc}")
            return
        self.set_metadata(name, data)

    def _add_metadata_row(self, sec: QTreeWidgetItem) -> None:
        item = QTreeWidgetItem(sec, ["add entry", ""])
        add = QPushButton("Add metadata\u2026")
        add.setFixedHeight(ed.EDITOR_HEIGHT)
        add.setToolTip("Add a metadata entry (a name and a text value)")
        add.clicked.connect(lambda: self._metadata_text_dialog(None))
        self.editors["metadata+"] = self.tree.set_editor(item, add)

    def _follow(self, link: str) -> None:
        kind, _, value = link.partition(":")
        if kind == "subgraph":
            self.subgraphActivated.emit(int(value))
        elif kind == "file":
            self.show_associated_file(value)

    def _preview_selected(self) -> None:
        items = self.tree.selectedItems()
        if items:
            link = items[0].data(1, Qt.ItemDataRole.UserRole + 1)
            if link and str(link).startswith("file:"):
                self.show_associated_file(str(link)[5:])

    def show_associated_file(self, name: str) -> str:
        """Show the first lines of a packed file; returns the text shown."""
        if self.model is None:
            return ""
        try:
            raw = self.model.read_associated_file(name)
        except (KeyError, OSError, ValueError) as exc:
            text = f"cannot read {name}: {exc}"
        else:
            try:
                lines = raw.decode("utf-8").splitlines()
                text = "\n".join(lines[:PREVIEW_LINES])
                if len(lines) > PREVIEW_LINES:
                    text += f"\n\u2026 ({len(lines) - PREVIEW_LINES} more lines)"
            except UnicodeDecodeError:
                text = format_value(raw[:256]) + f"\n({len(raw):,} bytes, binary)"
        self.preview_title.setText(f"<b>{name}</b>")
        self.preview.setPlainText(text)
        return text

    def show_model(self, model: Model | None, summary: ModelSummary | None = None,
                   keep_scroll: bool = False, path=None) -> None:
        """Show ``model``; pass the worker's ``summary`` to keep big models instant.  ``path``
        names the file when the model was read from bytes (an edited model)."""
        scroll = self.tree.scroll_position()
        self._path = path
        self._show_model(model, summary)
        if keep_scroll:
            self.tree.restore_scroll(scroll)

    def _show_model(self, model: Model | None, summary: ModelSummary | None) -> None:
        self.model = model
        self.editors = {}
        tree = self.tree
        tree.clear_rows()
        self.preview.clear()
        self.preview_title.setText("")
        self.preview_box.hide()
        if model is None:
            return
        sec = tree.section("Model")
        path = model.path or getattr(self, "_path", None)
        if model.origin is not None:  # a section of a .litertlm container
            tree.add(sec, "file", str(model.origin), tooltip=str(model.origin.path or ""))
        else:
            tree.add(sec, "file", path.name if path else "(bytes)", tooltip=str(path) if path else None)
        if model.description or self.editable:
            item = tree.add(sec, "description", model.description)
            if self.editable:
                self.editors["description"] = tree.set_editor(
                    item, ed.text_editor(model.description, self.set_description,
                                         placeholder="(no description)"))
        tree.add(sec, "schema version", str(model.version))
        tree.add(sec, "file size", human_bytes(model.file_size))
        summary = summary or summarize(model)
        weights = summary.weights_nbytes
        tree.add(sec, "weights", f"{human_bytes(weights)} ({weights / max(model.file_size, 1) * 100:.1f} %)")
        tree.add(sec, "graph and metadata", human_bytes(max(model.file_size - weights, 0)))
        tree.add(sec, "parameters", f"{summary.parameter_count:,}")
        tree.add(sec, "operators", f"{summary.n_ops:,}")
        tree.add(sec, "subgraphs", str(len(model.subgraphs)))
        if model.min_runtime_version:
            tree.add(sec, "min runtime version", model.min_runtime_version)
        for g in model.external_buffer_groups:  # side files of external buffers
            size = model.weights.size(g.name) if g.name else None
            state = human_bytes(size) if size is not None else "MISSING"
            item = tree.add(sec, f"side file {g.index}", f"{g.name} ({state})",
                            tooltip=model.weights.describe(g.name))
            if size is None:
                item.setForeground(1, WARNING)
        if model.findings:
            tree.add(sec, "problems", f"{len(model.findings)} (see Problems)")

        sec = tree.section("Subgraphs")
        for sg in model.subgraphs:
            tree.add(sec, str(sg.index), f"{sg.display_name}: {len(sg.operators)} ops, "
                     f"{len(sg.tensors)} tensors", link=f"subgraph:{sg.index}")

        hist = summary.op_histogram
        sec = tree.section(f"Operators ({len(hist)} kinds)")
        for key, count in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])):
            tree.add(sec, key, str(count))

        if model.signature_defs:
            sec = tree.section("Signatures")
            for sig in model.signature_defs:
                item = tree.add(sec, sig.key or "(no key)", f"subgraph {sig.subgraph_index}",
                                link=f"subgraph:{sig.subgraph_index}")
                self._renamable(item, ("signature", sig.key))
                for m in sig.inputs:
                    self._renamable(tree.add(item, f"input {m.name}", f"tensor {m.tensor_index}"),
                                    ("inputs", sig.key, m.name))
                for m in sig.outputs:
                    self._renamable(tree.add(item, f"output {m.name}", f"tensor {m.tensor_index}"),
                                    ("outputs", sig.key, m.name))

        if model.metadata or self.editable:
            sec = tree.section("Metadata entries")
            for m in model.metadata:
                item = tree.add(sec, m.name, f"buffer {m.buffer}, {m.data.size:,} bytes")
                item.setData(0, META_ROLE, m.name)
            if self.editable:
                self._add_metadata_row(sec)
        self._decoded("Conversion metadata", lambda: model.conversion_metadata)
        self._decoded("TFLite metadata", lambda: model.tflite_metadata)

        try:
            files = model.associated_files()
        except Exception as exc:  # noqa: BLE001 - a broken zip must not hide the rest
            log.warning("associated files: %s", exc)
            files = []
        if files:
            sec = tree.section("Associated files")
            for name in files:
                tree.add(sec, name, "show contents", link=f"file:{name}")
            self.preview_box.show()
            self.show_associated_file(files[0])
        tree.fit_key_column(110, None)

    def _renamable(self, item: QTreeWidgetItem, spec: tuple) -> None:
        if self.editable:
            item.setData(0, RENAME_ROLE, list(spec))
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
            item.setToolTip(0, "Double-click or F2 to rename")

    def _decoded(self, title: str, get) -> None:
        try:
            value = get()
        except Exception as exc:  # noqa: BLE001 - broken metadata: show why, keep the rest
            self.tree.add(self.tree.section(title), "error", str(exc))
            return
        if not value:
            return
        sec = self.tree.section(title)
        self._tree(sec, value)

    def _tree(self, parent: QTreeWidgetItem, value: Any) -> None:
        """A decoded flatbuffer dict as nested rows; None fields are left out."""
        if isinstance(value, dict):
            for k, v in value.items():
                if v is None or v == [] or v == {}:
                    continue
                self._child(parent, str(k), v)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self._child(parent, f"[{i}]", v)

    def _child(self, parent: QTreeWidgetItem, key: str, v: Any) -> None:
        if isinstance(v, dict):
            summary = str(v.get("type") or v.get("name") or "")
            item = self.tree.add(parent, key, summary)
            self._tree(item, v)
            item.setExpanded(True)
        elif isinstance(v, list) and v and isinstance(v[0], (dict, list)):
            item = self.tree.add(parent, key, f"{len(v)} items")
            self._tree(item, v)
            item.setExpanded(True)
        else:
            self.tree.add(parent, key, format_value(v, limit=400))
