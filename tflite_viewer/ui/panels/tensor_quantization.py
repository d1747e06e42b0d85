"""The tensor panel's quantization part: the Quantization section of the inspector (scale,
zero point, quantized dimension, with editors when the model is editable) and the Channels
tab (one row per channel, scale and zero point editable in place).

It only emits ``editRequested`` with a `SetQuantization`; the window applies it and the
panel shows the tensor again from the re-read model.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHeaderView, QTableView, QTreeWidgetItem, QWidget

from ...edit import SetQuantization
from ...model import Tensor
from ...quant.ranges import INTEGER_RANGES, QUANTIZABLE_TYPES
from .. import editors as ed
from ..state import tensor_stats as ts
from ..state.block_stats import block_view
from .common import LinkTree, format_value

WARNING = QColor("#cf222e")
ZERO_POINT_RANGES = {k: INTEGER_RANGES[k] for k in QUANTIZABLE_TYPES}
QUANTIZABLE = QUANTIZABLE_TYPES
Put = Callable[[QTreeWidgetItem, str, "QWidget | None"], None]


class ChannelsModel(QAbstractTableModel):
    """The per-channel quantization table (one row per channel)."""

    HEADERS = ("channel", "scale", "zero point", "range min", "range max", "values min", "values max")

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list[ts.ChannelRow] = []
        # set when the model is editable: (channel, column, text) -> accepted
        self.on_edit = None

    def set_rows(self, rows: list[ts.ChannelRow]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.HEADERS)

    def data(self, index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.TextAlignmentRole,
                                               Qt.ItemDataRole.EditRole):
            return None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        r = self.rows[index.row()]
        if role == Qt.ItemDataRole.EditRole:
            return f"{r.scale:.9g}" if index.column() == 1 else str(r.zero_point)
        values = (r.channel, r.scale, r.zero_point, r.real_min, r.real_max, r.value_min, r.value_max)
        return ts.format_number(values[index.column()], 6)

    def flags(self, index) -> Qt.ItemFlag:
        flags = super().flags(index)
        if self.on_edit is not None and index.column() in (1, 2):
            flags |= Qt.ItemFlag.ItemIsEditable
        return flags

    def setData(self, index, value, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        if self.on_edit is None or role != Qt.ItemDataRole.EditRole or index.column() not in (1, 2):
            return False
        return bool(self.on_edit(index.row(), index.column(), str(value)))

    def headerData(self, section: int, orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None


class QuantizationEditor(QObject):
    """Describes (and edits) one tensor's quantization: the inspector section and the
    Channels table (``view``, a tab of the panel)."""

    editRequested = Signal(object)  # a SetQuantization
    editFailed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.tensor: Tensor | None = None
        self.channels = ChannelsModel(self)
        self.view = QTableView()
        self.view.setModel(self.channels)
        self.view.verticalHeader().hide()
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)

    def clear(self) -> None:
        self.tensor = None
        self.channels.set_rows([])
        self.channels.on_edit = None

    # -- edits --------------------------------------------------------------------------
    def set_quantization(self, scale, zero_point=None, quantized_dimension: int | None = None) -> None:
        """Per-tensor (one scale) or per-channel; the fields not given keep their values."""
        t = self.tensor
        if t is None:
            return
        q = t.quantization
        if quantized_dimension is None:
            quantized_dimension = q.quantized_dimension if q is not None else 0
        if zero_point is None:
            zero_point = q.zero_point if q is not None and q.zero_point.size == np.size(scale) else 0
        self.editRequested.emit(SetQuantization(t.subgraph.index, t.index, scale, zero_point,
                                                quantized_dimension))

    def remove_quantization(self) -> None:
        if (t := self.tensor) is not None:
            self.editRequested.emit(SetQuantization(t.subgraph.index, t.index, None))

    def _channel_edit(self, channel: int, column: int, text: str) -> bool:
        q = self.tensor.quantization if self.tensor is not None else None
        if q is None:
            return False
        scale = q.scale.astype(np.float64).copy()
        zp = (q.zero_point.astype(np.int64).copy() if q.zero_point.size == scale.size
              else np.zeros(scale.size, np.int64))
        try:
            if column == 1:
                scale[channel] = float(text)
            else:
                zp[channel] = int(text.strip(), 0)
        except ValueError:
            self.editFailed.emit(f"channel {channel}: {text!r} is not a "
                                 f"{'number' if column == 1 else 'whole number'}")
            return False
        self.set_quantization(scale, zp, q.quantized_dimension)
        return True

    # -- the inspector section ------------------------------------------------------------
    def describe(self, tree: LinkTree, t: Tensor, editable: bool, put: Put) -> None:
        """Add the Quantization section of ``t`` to ``tree``; ``put`` installs an editor."""
        self.tensor = t
        q = t.quantization
        if q is None:
            if editable and t.type_name in QUANTIZABLE:
                sec = tree.section("Quantization")
                item = tree.add(sec, "scale", "none")
                editor = ed.text_editor("", lambda v: self.set_quantization(float(v) if not
                                        ed.float_problem(v) else v, 0, 0), ed.float_problem,
                                        placeholder="none: type a scale to quantize")
                put(item, "scale", editor)
            return
        sec = tree.section("Quantization")
        blockwise = bool(q.details) and q.details.get("type") == "BlockwiseQuantization"
        if blockwise:
            self._blockwise(tree, sec, t)
        elif q.is_per_channel:
            self._per_channel(tree, sec, t, editable, put)
        else:
            self._per_tensor(tree, sec, t, editable, put)
        if q.min.size or q.max.size:
            tree.add(sec, "min", format_value(q.min.tolist()))
            tree.add(sec, "max", format_value(q.max.tolist()))
        if q.details and not blockwise:
            det = tree.add(sec, "details", str(q.details.get("type", "")))
            for k, v in q.details.items():
                if k != "type":
                    tree.add(det, k, format_value(v))
        for problem in q.problems(t.shape):
            item = tree.add(sec, "problem", problem)
            item.setForeground(1, WARNING)

    def _blockwise(self, tree: LinkTree, sec: QTreeWidgetItem, t: Tensor) -> None:
        """Block size, the scale (and zero-point) tensors as links, the scale range; the
        grid, histogram and blocks are in the Blocks tab."""
        d = t.quantization.details
        tensors = t.subgraph.tensors
        size = int(d.get("block_size") or 0)
        view = block_view(t)
        tree.add(sec, "blockwise", f"blocks of {size} along the last axis" + (
            f" ({view.rows} rows x {view.blocks} blocks; Blocks tab)"
            if not isinstance(view, (str, type(None))) else ""))
        for key, label in (("scales", "scale tensor"), ("zero_points", "zero-point tensor")):
            i = d.get(key)
            if i is None or int(i) < 0:
                tree.add(sec, label, "none")
            elif int(i) < len(tensors):
                s = tensors[int(i)]
                tree.add(sec, label, f"t{s.index} {s.type_name}{list(s.shape)} {s.name}",
                         link=f"tensor:{s.index}")
            else:
                tree.add(sec, label, f"tensor {i} (out of range)")
        if isinstance(view, str):
            item = tree.add(sec, "problem", view)
            item.setForeground(1, WARNING)
        elif view is not None:
            tree.add(sec, "scale range", f"{ts.format_number(float(view.scales.min()))} \u2026 "
                                         f"{ts.format_number(float(view.scales.max()))}")

    def _per_channel(self, tree: LinkTree, sec: QTreeWidgetItem, t: Tensor, editable: bool, put: Put) -> None:
        q = t.quantization
        tree.add(sec, "per-channel", f"{q.scale.size} channels along dimension {q.quantized_dimension}")
        if editable:
            item = tree.add(sec, "quantized dimension", str(q.quantized_dimension))
            put(item, "quantized dimension", ed.int_editor(
                q.quantized_dimension, lambda v: self.set_quantization(q.scale, q.zero_point, v),
                0, max(t.rank - 1, 0)))
            self.channels.on_edit = self._channel_edit
        tree.add(sec, "scale range", f"{ts.format_number(float(q.scale.min()))} \u2026 "
                                     f"{ts.format_number(float(q.scale.max()))}")
        zp = np.unique(q.zero_point) if q.zero_point.size else np.zeros(0)
        tree.add(sec, "zero points", format_value(zp.tolist()) if zp.size <= 8 else
                 f"{zp.size} distinct, {int(zp.min())} \u2026 {int(zp.max())}")
        rows = ts.per_channel_rows(t)
        self.channels.set_rows(rows)
        table = tree.add(sec, "channels", f"{len(rows)} rows (Channels tab)")
        for r in rows[:16]:
            tree.add(table, f"channel {r.channel}", f"scale {ts.format_number(r.scale)}, zp {r.zero_point}")

    def _per_tensor(self, tree: LinkTree, sec: QTreeWidgetItem, t: Tensor, editable: bool, put: Put) -> None:
        q = t.quantization
        if q.scale.size:
            item = tree.add(sec, "scale", ts.format_number(float(q.scale[0]), 8))
            if editable:
                put(item, "scale", ed.text_editor(
                    f"{float(q.scale[0]):.9g}", lambda v: self.set_quantization(
                        float(v) if not ed.float_problem(v) else v), ed.float_problem))
        if q.zero_point.size or (editable and q.scale.size):
            zp = int(q.zero_point[0]) if q.zero_point.size else 0
            item = tree.add(sec, "zero point", str(zp))
            lo, hi = ZERO_POINT_RANGES.get(t.type_name, ed.INT32)
            if editable and q.scale.size:
                put(item, "zero point", ed.int_editor(zp, lambda v: self.set_quantization(q.scale[:1], v), lo, hi))
        rng = ts.quantized_range(t.type_name)
        if rng and q.scale.size:
            zp = int(q.zero_point[0]) if q.zero_point.size else 0
            s = float(q.scale[0])
            tree.add(sec, "real range", f"{ts.format_number((rng[0] - zp) * s)} \u2026 "
                                        f"{ts.format_number((rng[1] - zp) * s)}")
        item = tree.add(sec, "quantized dimension", str(q.quantized_dimension))
        if editable and q.scale.size:
            put(item, "quantized dimension", ed.int_editor(
                q.quantized_dimension, lambda v: self.set_quantization(q.scale[:1], None, v),
                0, max(t.rank - 1, 0)))
