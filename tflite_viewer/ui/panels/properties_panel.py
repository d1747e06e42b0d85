"""Properties of the selected operator: what it is, every option, its tensors as links.

Unlike a tooltip this shows *every* builtin option (enums by name, as the reader gives
them), custom options decoded from FlexBuffers (or their bytes in hex when they are a packed
struct), and links to each input/output tensor and each called subgraph.

When ``editable``, the op version, every builtin option and every FlexBuffer custom option
get a typed editor (see `editors`), custom options can be added and removed, and the
context menu removes the operator.  The panel never edits anything itself: it emits
``editRequested`` with an EditCommand, the window applies it, and the panel is shown again
from the document's new model (or, if the edit was refused, from the unchanged one).
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QLineEdit, QMenu, QPushButton, QTreeWidgetItem,
                               QVBoxLayout, QWidget)

from ...edit import RemoveCustomOption, RemoveOperator, SetCustomOption, SetOption, SetOpVersion
from ...model import Operator
from ...model.op_metadata import input_roles
from .. import editors as ed
from ..editing import parse_value
from ..state.navigation import Call
from . import common
from .common import LinkTree, Row, format_value

CUSTOM_KEY_ROLE = Qt.ItemDataRole.UserRole + 3


def tensor_summary(op: Operator, t: int) -> str:
    tensor = op.subgraph.tensors[t]
    shape = "x".join("?" if d < 0 else str(d) for d in (tensor.shape_signature or tensor.shape)) or "scalar"
    kind = "" if tensor.kind == "activation" else f" ({tensor.kind})"
    return f"t{t} {tensor.name or '(unnamed)'}  [{shape} {tensor.type_name.lower()}]{kind}"


class PropertiesPanel(QWidget):
    """Shows one operator; emits links the window follows."""

    tensorActivated = Signal(int)
    callActivated = Signal(object)  # navigation.Call: follow a call of the shown operator
    editRequested = Signal(object)  # an EditCommand

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel("No operator selected")
        self.title.setWordWrap(True)
        self.title.setStyleSheet("font-weight: bold; padding: 4px;")
        self.tree = LinkTree(self)
        self.tree.linkActivated.connect(self._follow)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._context_menu)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.title)
        layout.addWidget(self.tree)
        self.operator: Operator | None = None
        self.context = ""
        self.editable = False
        self.editors: dict[str, QWidget] = {}

    # -- edits -------------------------------------------------------------------------------
    def editor(self, key: str) -> QWidget | None:
        """The editor of ``version``, ``option:NAME`` or ``custom:KEY`` (None: not editable)."""
        return self.editors.get(key)

    def _where(self) -> tuple[int, int] | None:
        op = self.operator
        return None if op is None else (op.subgraph.index, op.index)

    def _request(self, command) -> None:
        self.editRequested.emit(command)

    def set_option(self, name: str, value: Any, table: str | None = None) -> None:
        if (w := self._where()) is not None:
            self._request(SetOption(w[0], w[1], name, value, table=table))

    def set_version(self, version: int) -> None:
        if (w := self._where()) is not None:
            self._request(SetOpVersion(w[0], w[1], version))

    def set_custom_option(self, key: str, value: Any) -> None:
        if (w := self._where()) is not None:
            self._request(SetCustomOption(w[0], w[1], key, value))

    def remove_custom_option(self, key: str) -> None:
        if (w := self._where()) is not None:
            self._request(RemoveCustomOption(w[0], w[1], key))

    def remove_operator(self) -> None:
        if (w := self._where()) is not None:
            self._request(RemoveOperator(w[0], w[1]))

    def _context_menu(self, pos: QPoint) -> None:
        if self.operator is None or not self.editable:
            return
        menu = QMenu(self)
        item = self.tree.itemAt(pos)
        key = item.data(0, CUSTOM_KEY_ROLE) if item is not None else None
        if key is not None:
            menu.addAction(f"Remove custom option \u201c{key}\u201d",
                           lambda k=key: self.remove_custom_option(k))
            menu.addSeparator()
        menu.addAction(f"Remove operator #{self.operator.index} {self.operator.name}", self.remove_operator)
        common.exec_menu(menu, self.tree.viewport().mapToGlobal(pos))

    def _put(self, item: QTreeWidgetItem, key: str, editor: QWidget | None) -> None:
        if editor is not None:
            self.editors[key] = self.tree.set_editor(item, editor)

    def rows(self) -> list[Row]:
        return self.tree.rows()

    def _follow(self, link: str) -> None:
        kind, _, value = link.partition(":")
        if kind == "tensor":
            self.tensorActivated.emit(int(value))
        elif kind == "subgraph" and self.operator is not None:
            # a call of the shown operator: the window cuts the trail back to its subgraph
            op, target = self.operator, int(value)
            role = next((r for r, i in op.called_subgraphs.items() if i == target), None)
            if role is not None:
                self.callActivated.emit(Call(op.subgraph.index, op.index, role))

    def show_operator(self, op: Operator | None, context: str = "", keep_scroll: bool = False) -> None:
        """Show ``op``; ``context`` says why when it is shown for a selected tensor."""
        scroll = self.tree.scroll_position() if keep_scroll else 0
        self._show_operator(op, context)
        # option names whole ("fused_activation_function") in a dock a fifth of 1024 px wide
        self.tree.fit_key_column(150, None, share=0.75)
        if keep_scroll:
            self.tree.restore_scroll(scroll)

    def _show_operator(self, op: Operator | None, context: str) -> None:
        self.operator = op
        self.context = context
        self.editors = {}
        tree = self.tree
        tree.clear_rows()
        if op is None:
            self.title.setText("No operator selected")
            return
        self.title.setText(f"#{op.index}  {op.name}  v{op.version}" + (f"   <span style='font-weight: normal; "
                           f"color: #57606a'>{context}</span>" if context else ""))
        sec = tree.section("Operator")
        tree.add(sec, "index", str(op.index))
        tree.add(sec, "name", op.name)
        code = op.opcode
        tree.add(sec, "builtin code", f"{code.builtin_code} ({code.builtin_name})")
        if code.deprecated_builtin_code != code.builtin_code:
            tree.add(sec, "deprecated code", str(code.deprecated_builtin_code))
        if code.is_custom:
            tree.add(sec, "custom code", code.custom_code or "")
        item = tree.add(sec, "version", str(op.version))
        if self.editable:
            self._put(item, "version", ed.int_editor(op.version, self.set_version, 1, 1000))
        tree.add(sec, "category", op.category)
        tree.add(sec, "subgraph", f"{op.subgraph.index} {op.subgraph.display_name}")
        self._options(op)
        self._tensors(op)
        calls = op.called_subgraphs
        if calls:
            sec = tree.section("Calls")
            model = op.model
            for role, target in calls.items():
                name = model.subgraphs[target].display_name if 0 <= target < len(model.subgraphs) else "?"
                tree.add(sec, role, f"subgraph {target}: {name}", link=f"subgraph:{target}")

    def _options(self, op: Operator) -> None:
        tree = self.tree
        for label, kind, opts in (("Options", op.builtin_options_type, op.builtin_options),
                                  ("Options 2", op.builtin_options_2_type, op.builtin_options_2)):
            if kind is None and not opts:
                continue
            sec = tree.section(f"{label} ({kind})" if kind else label)
            if not opts:
                tree.add(sec, "(none)", "")
            table = "builtin_options" if label == "Options" else "builtin_options_2"
            fields = ed.option_fields(kind) if isinstance(kind, str) else {}
            for key, value in opts.items():
                item = tree.add(sec, key, format_value(value))
                field = fields.get(key)
                if self.editable and field is not None:
                    self._put(item, f"option:{key}", ed.field_editor(
                        field, value, lambda v, k=key, t=table: self.set_option(k, v, t)))
        attrs = op.composite_attributes
        if attrs is not None:  # a composite's attributes, decoded from their FlexBuffer
            sec = tree.section(f"Composite {op.composite_name or ''} attributes")
            if isinstance(attrs, (bytes, bytearray)):
                tree.add(sec, "bytes", format_value(attrs))
            else:
                self._nested(sec, attrs)
        raw = op.custom_options_bytes
        if raw is not None:
            sec = tree.section(f"Custom options ({op.custom_options_format}, {len(raw)} bytes)")
            decoded = op.custom_options
            if isinstance(decoded, (bytes, bytearray)):
                tree.add(sec, "bytes", format_value(decoded))
            else:
                self._nested(sec, decoded)
            if self.editable and op.custom_options_format == "FLEXBUFFERS" and isinstance(decoded, dict):
                for i in range(sec.childCount()):
                    item = sec.child(i)
                    key = item.text(0)
                    if key in decoded and not isinstance(decoded[key], dict):
                        item.setData(0, CUSTOM_KEY_ROLE, key)
                        self._put(item, f"custom:{key}", self._custom_editor(key, decoded[key]))
                self._add_custom_row(sec)

    def _custom_editor(self, key: str, value: Any) -> QWidget | None:
        commit = (lambda v, k=key: self.set_custom_option(k, v))
        if isinstance(value, bool):
            return ed.bool_editor(value, commit)
        if isinstance(value, int) and ed.INT32[0] <= value <= ed.INT32[1]:
            return ed.int_editor(value, commit)
        if isinstance(value, float):
            return ed.float_editor(value, commit)
        if isinstance(value, (str, int)):
            return ed.text_editor(str(value), commit)
        return None

    def _add_custom_row(self, sec: QTreeWidgetItem) -> None:
        """A last row to add a key: name, value (typed: int, float, true/false, else text)."""
        item = QTreeWidgetItem(sec, ["add option", ""])
        box = QWidget()
        row = QHBoxLayout(box)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(3)
        key = QLineEdit()
        key.setPlaceholderText("key")
        value = QLineEdit()
        value.setPlaceholderText("value")
        add = QPushButton("Add")
        for w in (key, value, add):
            w.setFixedHeight(ed.EDITOR_HEIGHT)
        row.addWidget(key, 2)
        row.addWidget(value, 2)
        row.addWidget(add)

        def commit() -> None:
            if key.text().strip():
                self.set_custom_option(key.text().strip(), parse_value(value.text()))
        add.clicked.connect(commit)
        value.returnPressed.connect(commit)
        self.editors["custom+"] = self.tree.set_editor(item, box)
        self.editors["custom+key"], self.editors["custom+value"] = key, value

    def _nested(self, parent: QTreeWidgetItem, value: Any, key: str = "value") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, dict):
                    child = self.tree.add(parent, str(k), "{\u2026}")
                    self._nested(child, v)
                else:
                    self.tree.add(parent, str(k), format_value(v))
        else:
            self.tree.add(parent, key, format_value(value))

    def _tensors(self, op: Operator) -> None:
        tree = self.tree
        roles = input_roles(op.name)
        n_tensors = len(op.subgraph.tensors)
        for label, indices in (("Inputs", op.inputs), ("Outputs", op.outputs),
                               ("Intermediates", op.intermediates)):
            if not indices and label == "Intermediates":
                continue
            sec = tree.section(label)
            for pos, t in enumerate(indices):
                key = f"{pos}" + (f" {roles[pos]}" if label == "Inputs" and pos in roles else "")
                if t < 0:
                    tree.add(sec, key, "(omitted)")
                elif t >= n_tensors:
                    tree.add(sec, key, f"t{t} (out of range)")
                else:
                    tree.add(sec, key, tensor_summary(op, t), link=f"tensor:{t}")

