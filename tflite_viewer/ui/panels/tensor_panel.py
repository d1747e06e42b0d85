"""The tensor inspector: description, quantization, sparsity, statistics, histogram, values.

Everything numeric comes from `tensor_stats` (Qt-free, tested against numpy); this module
only lays it out.  Values are read from the mapped file only when a tensor is shown, and
statistics are cached per tensor so flipping between two tensors stays instant (the cache
is dropped whenever the model is replaced by an edit: `forget_values`).

When ``editable``: the name, the shape and the quantization (scale, zero point, quantized
dimension; per-channel scales and zero points in the Channels table) have editors, and the
context menu / buttons expose the tensor as a subgraph output, remove its quantization and
replace a constant's data from a .npy file.  Like the properties panel, this one only emits
``editRequested`` with an EditCommand; the window applies it and shows the panel again.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QPoint, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QComboBox, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QMenu,
                               QMessageBox, QPushButton, QSpinBox, QSplitter, QTableView, QTabWidget,
                               QVBoxLayout, QWidget)

from ...edit import ExposeTensor, RenameTensor, ReplaceTensorData, SetQuantization, SetTensorShape
from ...model import Tensor
from ...quant.ranges import INTEGER_RANGES, QUANTIZABLE_TYPES
from .. import editors as ed
from .. import tensor_stats as ts
from ..histogram_widget import HistogramWidget
from ..values_model import ValuesModel
from . import common
from .common import LinkTree, Row, format_value

log = logging.getLogger(__name__)
WARNING = QColor("#cf222e")
ZERO_POINT_RANGES = {k: INTEGER_RANGES[k] for k in QUANTIZABLE_TYPES}
MAX_CONNECTIONS = 200  # rows of consumers listed (each is a link)
QUANTIZABLE = ("INT8", "UINT8", "INT16", "INT4", "UINT4", "INT2", "UINT16")
#: what `TensorPanel.live_values` returns when no run has a value to show (the stored data
#: is shown, as without a debugger)
NOT_RUNNING = object()


def shape_text(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return "\u2014"
    return "[" + ", ".join(str(d) for d in shape) + "]"


def producers_consumers(tensor: Tensor) -> tuple[list[int], list[int]]:
    """Operators of the tensor's subgraph that write it and that read it."""
    cols = tensor.subgraph.columns
    t = tensor.index

    def owners(values: np.ndarray, offsets: np.ndarray) -> list[int]:
        pos = np.flatnonzero(values == t)
        return sorted(set((np.searchsorted(offsets, pos, side="right") - 1).tolist()))

    return owners(cols.outputs, cols.output_offsets), owners(cols.inputs, cols.input_offsets)


class ChannelsModel(QAbstractTableModel):
    """The per-channel quantization table (one row per channel)."""

    HEADERS = ("channel", "scale", "zero point", "range min", "range max", "values min", "values max")

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list[ts.ChannelRow] = []
        # set by the panel when the model is editable: (channel, column, text) -> accepted
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


class TensorPanel(QWidget):
    """Shows one tensor.  ``opActivated`` follows a producer/consumer link."""

    opActivated = Signal(int)
    editRequested = Signal(object)  # an EditCommand
    editFailed = Signal(str)  # a problem found before any command (an unreadable .npy)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tensor: Tensor | None = None
        self.editable = False
        self.editors: dict[str, QWidget] = {}
        self._stats_cache: dict[tuple[int, int, str], ts.Stats] = {}
        #: set by the debugger: tensor -> its snapshot in the paused run (``.values``,
        #: ``.real_values()``), None while not computed, or NOT_RUNNING (stored data)
        self.live_values = None

        self.title = QLabel("No tensor selected")
        self.title.setStyleSheet("font-weight: bold; padding: 4px;")
        self.title.setWordWrap(True)
        self.save_button = QPushButton("Save .npy\u2026")
        self.save_button.setToolTip("Save the tensor's values (dense, in its own dtype) as a NumPy file")
        self.save_button.clicked.connect(self._save_dialog)
        self.replace_button = QPushButton("Replace .npy\u2026")
        self.replace_button.setToolTip("Replace the constant's values from a NumPy file")
        self.replace_button.clicked.connect(self.replace_dialog)
        self.replace_button.hide()
        head = QHBoxLayout()
        head.addWidget(self.title, 1)
        head.addWidget(self.replace_button)
        head.addWidget(self.save_button)

        self.info = LinkTree(self)
        self.info.linkActivated.connect(self._follow)
        self.info.setColumnWidth(0, 140)
        self.info.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.info.customContextMenuRequested.connect(self._context_menu)

        # histogram with its controls
        self.source_combo = QComboBox()
        self.source_combo.addItems(["Stored values", "Real values"])
        self.source_combo.setToolTip("Stored (raw integer) values, or dequantized real values")
        self.scale_combo = QComboBox()
        self.scale_combo.addItems(["Linear", "Log"])
        self.channel_combo = QComboBox()
        self.channel_combo.setToolTip("Per-channel tensors: one channel or all")
        for w in (self.source_combo, self.scale_combo, self.channel_combo):
            w.currentIndexChanged.connect(self._update_histogram)
        self.histogram = HistogramWidget()
        hist_box = QWidget()
        hl = QVBoxLayout(hist_box)
        hl.setContentsMargins(0, 0, 0, 0)
        controls = QHBoxLayout()
        controls.addWidget(self.source_combo)
        controls.addWidget(self.scale_combo)
        controls.addWidget(self.channel_combo)
        controls.addStretch(1)
        hl.addLayout(controls)
        hl.addWidget(self.histogram, 1)

        overview = QSplitter(Qt.Orientation.Vertical)
        overview.addWidget(self.info)
        overview.addWidget(hist_box)
        overview.setStretchFactor(0, 3)
        overview.setStretchFactor(1, 2)

        self.channels = ChannelsModel(self)
        self.channels_view = QTableView()
        self.channels_view.setModel(self.channels)
        self.channels_view.verticalHeader().hide()
        self.channels_view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)

        self.values = ValuesModel(self)
        self.values_view = QTableView()
        self.values_view.setModel(self.values)
        self.values_view.verticalHeader().setDefaultSectionSize(20)
        self.values_view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.values_view.horizontalHeader().setDefaultSectionSize(80)
        self.values_source = QComboBox()
        self.values_source.addItems(["Stored values", "Real values"])
        self.values_source.currentIndexChanged.connect(self._reset_values)
        self.row_axis = QComboBox()
        self.col_axis = QComboBox()
        self.row_axis.currentIndexChanged.connect(self._axes_changed)
        self.col_axis.currentIndexChanged.connect(self._axes_changed)
        self.index_row = QHBoxLayout()
        self._index_spins: list[QSpinBox] = []
        values_page = QWidget()
        vl = QVBoxLayout(values_page)
        vl.setContentsMargins(2, 2, 2, 2)
        axes = QHBoxLayout()
        axes.addWidget(self.values_source)
        axes.addWidget(QLabel("rows"))
        axes.addWidget(self.row_axis)
        axes.addWidget(QLabel("columns"))
        axes.addWidget(self.col_axis)
        axes.addStretch(1)
        vl.addLayout(axes)
        vl.addLayout(self.index_row)
        vl.addWidget(self.values_view, 1)

        self.tabs = QTabWidget()
        self.tabs.addTab(overview, "Overview")
        self.tabs.addTab(self.channels_view, "Channels")
        self.tabs.addTab(values_page, "Values")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(head)
        layout.addWidget(self.tabs, 1)
        self.show_tensor(None)

    # -- public -------------------------------------------------------------------------------
    def rows(self) -> list[Row]:
        return self.info.rows()

    def show_tensor(self, tensor: Tensor | None, keep_view: bool = False) -> None:
        """Show ``tensor``; ``keep_view`` keeps the scroll position, tab and histogram
        choices (the same tensor shown again after an edit)."""
        if not keep_view:
            self._show_tensor(tensor)
            return
        scroll = self.info.scroll_position()
        tab = self.tabs.currentIndex()
        self._show_tensor(tensor)
        self.info.restore_scroll(scroll)
        self.tabs.setCurrentIndex(tab)

    def forget_values(self) -> None:
        """Drop cached statistics: the model was replaced (an edit may have changed data)."""
        self._stats_cache.clear()

    def _show_tensor(self, tensor: Tensor | None) -> None:
        self.tensor = tensor
        self.editors = {}
        self.info.clear_rows()
        self.channels.set_rows([])
        self.channels.on_edit = None
        self.save_button.setEnabled(False)
        replaceable = self.editable and tensor is not None and tensor.is_constant
        if self.replace_button.isVisibleTo(self) != replaceable:
            self.replace_button.setVisible(replaceable)
        if tensor is None:
            self.title.setText("No tensor selected")
            self._fill_channel_combo()
            self._update_histogram()
            self.values.set_array(None)
            self._rebuild_axes()
            return
        self.title.setText(f"t{tensor.index}  {tensor.name or '(unnamed)'}")
        try:
            self._describe(tensor)
        except Exception as exc:  # noqa: BLE001 - a malformed tensor still shows what it can
            log.exception("describing tensor %s", tensor.index)
            self.info.add(self.info.section("Error"), "error", str(exc))
        self.save_button.setEnabled(self._values("Stored values") is not None)
        self._fill_channel_combo()
        self._update_histogram()
        self._reset_values()

    def save_npy(self, path: str | Path) -> Path:
        """Save the dense values in the tensor's own dtype (what `Tensor.values()` gives)."""
        values = self._values("Stored values")
        if values is None:
            raise ValueError("the tensor has no values in the model")
        path = Path(path)
        np.save(path, values, allow_pickle=values.dtype == object)
        return path

    # -- edits ------------------------------------------------------------------------------
    def editor(self, key: str) -> QWidget | None:
        """The editor of ``name``, ``shape``, ``scale``, ``zero point`` or ``quantized dimension``."""
        return self.editors.get(key)

    def _where(self) -> tuple[int, int] | None:
        t = self.tensor
        return None if t is None else (t.subgraph.index, t.index)

    def rename(self, name: str) -> None:
        if (w := self._where()) is not None:
            self.editRequested.emit(RenameTensor(w[0], w[1], name))

    def set_shape(self, text: str) -> None:
        if (w := self._where()) is not None:
            self.editRequested.emit(SetTensorShape(w[0], w[1], text))

    def set_quantization(self, scale, zero_point=None, quantized_dimension: int | None = None) -> None:
        """Per-tensor (one scale) or per-channel; the fields not given keep their values."""
        w = self._where()
        if w is None:
            return
        q = self.tensor.quantization
        if quantized_dimension is None:
            quantized_dimension = q.quantized_dimension if q is not None else 0
        if zero_point is None:
            zero_point = q.zero_point if q is not None and q.zero_point.size == np.size(scale) else 0
        self.editRequested.emit(SetQuantization(w[0], w[1], scale, zero_point, quantized_dimension))

    def remove_quantization(self) -> None:
        if (w := self._where()) is not None:
            self.editRequested.emit(SetQuantization(w[0], w[1], None))

    def expose(self) -> None:
        if (w := self._where()) is not None:
            self.editRequested.emit(ExposeTensor(w[0], w[1]))

    def replace_from_npy(self, path: str | Path, requantize: bool | None = None) -> None:
        """Replace the constant's data with a .npy array; ``requantize`` None asks whether
        float values should be quantized with the tensor's scale and zero point."""
        w = self._where()
        if w is None:
            return
        try:
            values = np.load(Path(path), allow_pickle=False)
        except (OSError, ValueError) as exc:
            self.editFailed.emit(f"cannot read {Path(path).name}: {exc}")
            return
        t = self.tensor
        quantized = t.quantization is not None and t.quantization.has_scale
        if requantize is None:
            requantize = False
            if quantized and values.dtype.kind == "f" and t.type_name in ZERO_POINT_RANGES:
                answer = QMessageBox.question(
                    self, "Requantize from float?",
                    f"{Path(path).name} holds {values.dtype} values and {t.name!r} is "
                    f"{t.type_name}.\n\nQuantize the values with the tensor's scale and zero point?",
                    QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No
                    | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Yes)
                if answer == QMessageBox.StandardButton.Cancel:
                    return
                requantize = answer == QMessageBox.StandardButton.Yes
        self.editRequested.emit(ReplaceTensorData(w[0], w[1], values, requantize=requantize))

    def replace_dialog(self) -> None:
        if self.tensor is None:
            return
        path, _ = QFileDialog.getOpenFileName(self, "Replace tensor values", "", "NumPy array (*.npy)")
        if path:
            self.replace_from_npy(path)

    def _context_menu(self, pos: QPoint) -> None:
        t = self.tensor
        if t is None or not self.editable:
            return
        menu = QMenu(self)
        expose = menu.addAction("Expose as subgraph output", self.expose)
        expose.setEnabled(t.index not in t.subgraph.outputs)
        if t.quantization is not None:
            menu.addAction("Remove quantization", self.remove_quantization)
        if t.is_constant:
            menu.addAction("Replace data from .npy\u2026", self.replace_dialog)
        common.exec_menu(menu, self.info.viewport().mapToGlobal(pos))

    def _put(self, item, key: str, editor: QWidget | None) -> None:
        if editor is not None:
            self.editors[key] = self.info.set_editor(item, editor)

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

    # -- internals ----------------------------------------------------------------------------
    def _follow(self, link: str) -> None:
        kind, _, value = link.partition(":")
        if kind == "op":
            self.opActivated.emit(int(value))

    def _save_dialog(self) -> None:
        if self.tensor is None:
            return
        name = (self.tensor.name or f"tensor_{self.tensor.index}").replace("/", "_").replace(":", "_")
        path, _ = QFileDialog.getSaveFileName(self, "Save tensor values", f"{name}.npy", "NumPy array (*.npy)")
        if path:
            self.save_npy(path)

    def _live(self):
        t = self.tensor
        if t is None or self.live_values is None:
            return NOT_RUNNING
        return self.live_values(t)

    def _has_values(self, t: Tensor) -> bool:
        live = self._live()
        return t.raw_bytes() is not None if live is NOT_RUNNING else live is not None

    def _values(self, source: str) -> np.ndarray | None:
        t = self.tensor
        if t is None:
            return None
        live = self._live()
        if live is not NOT_RUNNING:
            if live is None:
                return None
            return live.real_values() if source == "Real values" else live.values
        try:
            if source == "Real values":
                return t.dequantized()
            return t.values()
        except (ValueError, TypeError) as exc:
            log.warning("tensor %s values: %s", t.index, exc)
            return None

    def _stats(self, source: str) -> ts.Stats | None:
        t = self.tensor
        live = self._live()
        key = (t.subgraph.index, t.index, source,
               None if live is NOT_RUNNING else getattr(live, "serial", id(live)))
        if key not in self._stats_cache:
            values = self._values(source)
            if values is None or values.dtype == object:
                return None
            if len(self._stats_cache) > 64:
                self._stats_cache.clear()
            self._stats_cache[key] = ts.statistics(values)
        return self._stats_cache[key]

    def _describe(self, t: Tensor) -> None:
        tree = self.info
        sec = tree.section("Tensor")
        item = tree.add(sec, "name", t.name)
        if self.editable:
            self._put(item, "name", ed.text_editor(t.name, self.rename, ed.name_problem))
        tree.add(sec, "index", str(t.index))
        tree.add(sec, "type", t.type_name)
        item = tree.add(sec, "shape", shape_text(t.shape))
        if self.editable:
            self._put(item, "shape", ed.text_editor(ed.shape_text(t.shape), self.set_shape, ed.shape_problem))
        tree.add(sec, "shape signature", shape_text(t.shape_signature))
        tree.add(sec, "kind", t.kind)
        tree.add(sec, "buffer", str(t.buffer))
        tree.add(sec, "bytes", f"{t.buffer_nbytes:,}")
        tree.add(sec, "elements", f"{t.num_elements:,}")
        if t.is_variable:
            tree.add(sec, "variable", "true")
        producers, consumers = producers_consumers(t)
        if producers or consumers:
            sec = tree.section("Connections")
            for k in producers:
                tree.add(sec, "produced by", f"#{k} {t.subgraph.operators[k].name}", link=f"op:{k}")
            for k in consumers[:MAX_CONNECTIONS]:
                tree.add(sec, "consumed by", f"#{k} {t.subgraph.operators[k].name}", link=f"op:{k}")
            if len(consumers) > MAX_CONNECTIONS:  # a weight shared by thousands of operators
                tree.add(sec, "consumed by", f"\u2026 {len(consumers) - MAX_CONNECTIONS:,} more operators")
        self._quantization(t)
        self._sparsity(t)
        if self._live() is None:
            tree.add(tree.section("Run"), "values", "not yet computed in this run")
        if self._has_values(t):
            quantized = t.quantization is not None and t.quantization.has_scale
            for source, label in (("Stored values", "Statistics (stored values)"),
                                  ("Real values", "Statistics (real values)")):
                if source == "Real values" and not quantized:
                    continue
                stats = self._stats(source)
                if stats is None:
                    continue
                sec = tree.section(label)
                tree.add(sec, "count", f"{stats.count:,}")
                tree.add(sec, "min", ts.format_number(stats.min))
                tree.add(sec, "max", ts.format_number(stats.max))
                tree.add(sec, "mean", ts.format_number(stats.mean))
                tree.add(sec, "std", ts.format_number(stats.std))
                tree.add(sec, "zeros", f"{stats.zeros_percent:.2f} %")
                tree.add(sec, "distinct", "\u2014" if stats.distinct is None else f"{stats.distinct:,}")
                if stats.nan or stats.inf:
                    tree.add(sec, "nan / inf", f"{stats.nan} / {stats.inf}")

    def _quantization(self, t: Tensor) -> None:
        q = t.quantization
        tree = self.info
        edit = self.editable
        if q is None:
            if edit and t.type_name in QUANTIZABLE:
                sec = tree.section("Quantization")
                item = tree.add(sec, "scale", "none")
                editor = ed.text_editor("", lambda v: self.set_quantization(float(v) if not
                                        ed.float_problem(v) else v, 0, 0), ed.float_problem,
                                        placeholder="none: type a scale to quantize")
                self._put(item, "scale", editor)
            return
        sec = tree.section("Quantization")
        rank_hi = max(t.rank - 1, 0)
        if q.is_per_channel:
            tree.add(sec, "per-channel", f"{q.scale.size} channels along dimension {q.quantized_dimension}")
            if edit:
                item = tree.add(sec, "quantized dimension", str(q.quantized_dimension))
                self._put(item, "quantized dimension", ed.int_editor(
                    q.quantized_dimension, lambda v: self.set_quantization(q.scale, q.zero_point, v), 0, rank_hi))
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
        else:
            if q.scale.size:
                item = tree.add(sec, "scale", ts.format_number(float(q.scale[0]), 8))
                if edit:
                    self._put(item, "scale", ed.text_editor(
                        f"{float(q.scale[0]):.9g}", lambda v: self.set_quantization(
                            float(v) if not ed.float_problem(v) else v), ed.float_problem))
            if q.zero_point.size or (edit and q.scale.size):
                zp = int(q.zero_point[0]) if q.zero_point.size else 0
                item = tree.add(sec, "zero point", str(zp))
                lo, hi = ZERO_POINT_RANGES.get(t.type_name, ed.INT32)
                if edit and q.scale.size:
                    self._put(item, "zero point", ed.int_editor(
                        zp, lambda v: self.set_quantization(q.scale[:1], v), lo, hi))
            rng = ts.quantized_range(t.type_name)
            if rng and q.scale.size:
                zp = int(q.zero_point[0]) if q.zero_point.size else 0
                s = float(q.scale[0])
                tree.add(sec, "real range", f"{ts.format_number((rng[0] - zp) * s)} \u2026 "
                                            f"{ts.format_number((rng[1] - zp) * s)}")
            item = tree.add(sec, "quantized dimension", str(q.quantized_dimension))
            if edit and q.scale.size:
                self._put(item, "quantized dimension", ed.int_editor(
                    q.quantized_dimension, lambda v: self.set_quantization(q.scale[:1], None, v), 0, rank_hi))
        if q.min.size or q.max.size:
            tree.add(sec, "min", format_value(q.min.tolist()))
            tree.add(sec, "max", format_value(q.max.tolist()))
        if q.details:
            det = tree.add(sec, "details", str(q.details.get("type", "")))
            for k, v in q.details.items():
                if k != "type":
                    tree.add(det, k, format_value(v))
        for problem in q.problems(t.shape):
            item = tree.add(sec, "problem", problem)
            item.setForeground(1, WARNING)

    def _sparsity(self, t: Tensor) -> None:
        sp = t.sparsity
        if sp is None:
            return
        tree = self.info
        sec = tree.section("Sparsity")
        tree.add(sec, "traversal order", format_value(list(sp.traversal_order)))
        tree.add(sec, "block map", format_value(list(sp.block_map)))
        for i, dim in enumerate(sp.dim_metadata):
            if dim.format_name == "DENSE":
                tree.add(sec, f"dim {i}", f"DENSE, dense size {dim.dense_size}")
            else:
                nseg = 0 if dim.array_segments is None else dim.array_segments.size
                nidx = 0 if dim.array_indices is None else dim.array_indices.size
                item = tree.add(sec, f"dim {i}", f"{dim.format_name}, {nseg} segments, {nidx} indices")
                if dim.array_segments is not None:
                    tree.add(item, "segments", format_value(dim.array_segments.tolist()))
                if dim.array_indices is not None:
                    tree.add(item, "indices", format_value(dim.array_indices.tolist()))
        d = ts.density(t)
        if d is not None:
            tree.add(sec, "density", f"{d * 100:.2f} % ({t.data().size:,} of {t.num_elements:,} stored)")

    # -- histogram ----------------------------------------------------------------------------
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

    def current_histogram_input(self) -> np.ndarray | None:
        """The values the histogram shows (after the source and channel choices)."""
        source = self.source_combo.currentText()
        values = self._values(source)
        if values is None or values.dtype == object:
            return None
        ch = self.channel_combo.currentIndex() - 1
        if ch >= 0:
            values = ts.channel_values(values, self.tensor.quantization.quantized_dimension, ch)
        return values

    def _update_histogram(self) -> None:
        t = self.tensor
        if t is None:
            self.histogram.set_histogram(None, message="No tensor selected")
            return
        if self._live() is None:
            self.histogram.set_histogram(None, message="Not yet computed in this run")
            return
        if not self._has_values(t):
            self.histogram.set_histogram(None, message=f"{t.kind.capitalize()} tensor: its values "
                                         "exist only when the model runs")
            return
        values = self.current_histogram_input()
        if values is None:
            self.histogram.set_histogram(None, message="No numeric values")
            return
        hist = ts.histogram(values)
        caption = f"{self.source_combo.currentText().lower()}, {values.size:,} values"
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

    # -- values grid --------------------------------------------------------------------------
    def _reset_values(self) -> None:
        t = self.tensor
        values = self._values(self.values_source.currentText()) if t is not None else None
        self.values.set_array(values)
        self._rebuild_axes()

    def _rebuild_axes(self) -> None:
        a = self.values.array
        nd = 0 if a is None else a.ndim
        for combo, axis in ((self.row_axis, self.values.row_axis), (self.col_axis, self.values.col_axis)):
            combo.blockSignals(True)
            combo.clear()
            for i in range(nd):
                combo.addItem(f"axis {i} ({a.shape[i]})")
            if 0 <= axis < nd:
                combo.setCurrentIndex(axis)
            combo.setEnabled(nd >= 2)
            combo.blockSignals(False)
        self._rebuild_spins()

    def _rebuild_spins(self) -> None:
        for spin in self._index_spins:
            self.index_row.removeWidget(spin)
            spin.deleteLater()
        self._index_spins = []
        while self.index_row.count():
            item = self.index_row.takeAt(0)
            if item.widget():
                item.widget().deleteLater()
        a = self.values.array
        if a is None:
            return
        free = {self.values.row_axis, self.values.col_axis}
        for axis in range(a.ndim):
            if axis in free:
                continue
            self.index_row.addWidget(QLabel(f"axis {axis}"))
            spin = QSpinBox()
            spin.setRange(0, max(a.shape[axis] - 1, 0))
            spin.setValue(self.values.fixed[axis] if axis < len(self.values.fixed) else 0)
            spin.setProperty("axis", axis)
            spin.valueChanged.connect(self._index_changed)
            self.index_row.addWidget(spin)
            self._index_spins.append(spin)
        self.index_row.addStretch(1)

    def _axes_changed(self) -> None:
        a = self.values.array
        if a is None or a.ndim < 2:
            return
        r, c = self.row_axis.currentIndex(), self.col_axis.currentIndex()
        if r == c:  # keep two distinct axes: swap the other one out
            c = self.values.row_axis if c != self.values.row_axis else self.values.col_axis
            if c == r:
                c = (r + 1) % a.ndim
            self.col_axis.blockSignals(True)
            self.col_axis.setCurrentIndex(c)
            self.col_axis.blockSignals(False)
        self.values.set_view(r, c, self.values.fixed)
        self._rebuild_spins()

    def _index_changed(self) -> None:
        fixed = list(self.values.fixed)
        for spin in self._index_spins:
            fixed[int(spin.property("axis"))] = spin.value()
        self.values.set_view(self.values.row_axis, self.values.col_axis, fixed)
