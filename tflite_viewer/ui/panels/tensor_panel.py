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

import numpy as np
from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QMenu, QMessageBox, QPushButton,
                               QSplitter, QTabWidget, QVBoxLayout, QWidget)

from ...edit import ExposeTensor, RenameTensor, ReplaceTensorData, SetTensorShape
from ...model import Tensor
from .. import editors as ed
from ..state import tensor_stats as ts
from ..state.selection import producers_consumers
from . import common
from .common import ElidedLabel, LinkTree, Row, format_value
from ..state.block_stats import block_view
from .tensor_blocks import BlocksPane
from .tensor_comparison import TensorComparison
from .tensor_histogram import HistogramPane
from .tensor_quantization import WARNING, ZERO_POINT_RANGES, QuantizationEditor
from .tensor_values import ValuesPane

__all__ = ["TensorPanel", "producers_consumers", "shape_text"]
log = logging.getLogger(__name__)
MAX_CONNECTIONS = 200  # rows of consumers listed (each is a link)
#: what `TensorPanel.live_values` returns when no run has a value to show (the stored data
#: is shown, as without a debugger)
NOT_RUNNING = object()
SCALAR = "[] (scalar)"


def shape_text(shape: tuple[int, ...] | None) -> str:
    """``[1, 96, 96, 3]``; a scalar says so (``[] (scalar)``), an unknown shape is a dash."""
    if shape is None:
        return "\u2014"
    if len(shape) == 0:
        return SCALAR
    return "[" + ", ".join(str(d) for d in shape) + "]"


class TensorPanel(QWidget):
    """Shows one tensor.  ``opActivated`` follows a producer/consumer link."""

    opActivated = Signal(int)
    tensorActivated = Signal(int)  # a tensor link (a blockwise tensor's scale tensor)
    editRequested = Signal(object)  # an EditCommand
    editFailed = Signal(str)  # a problem found before any command (an unreadable .npy)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tensor: Tensor | None = None
        self.editable = False
        self.editors: dict[str, QWidget] = {}
        self._stats_cache: dict[tuple, ts.Stats] = {}
        #: set by the debugger: tensor -> its snapshot in the paused run (``.values``,
        #: ``.real_values()``), None while not computed, or NOT_RUNNING (stored data)
        self.live_values = None
        #: (menu, tensor) -> None: each adds its actions to the context menu (the debugger)
        self.menu_actions: list = []
        self.shape_check = None  # the window's ShapeInference after an edit (computed shapes)
        self._values_mark: tuple[int, int] | None = None  # where the value sections begin

        self.title = ElidedLabel("No tensor selected")
        self.title.setStyleSheet("font-weight: bold; padding: 4px;")
        self.save_button = QPushButton("Save\u2026")
        self.save_button.setToolTip("Save the tensor's values (dense, in its own dtype) as a NumPy file")
        self.save_button.clicked.connect(self._save_dialog)
        self.replace_button = QPushButton("Replace\u2026")
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

        self.histogram_pane = HistogramPane(self._values, self.no_values_message,
                                            live=lambda: self._live() is not NOT_RUNNING)
        overview = QSplitter(Qt.Orientation.Vertical)
        overview.addWidget(self.info)
        overview.addWidget(self.histogram_pane)
        overview.setStretchFactor(0, 3)
        overview.setStretchFactor(1, 2)
        self.quantization_editor = QuantizationEditor(self)
        self.quantization_editor.editRequested.connect(self.editRequested)
        self.quantization_editor.editFailed.connect(self.editFailed)
        self.values_pane = ValuesPane(self._values)
        # the sub-widgets' parts under the names the panel always had
        hp, vp = self.histogram_pane, self.values_pane
        self.source_combo, self.scale_combo = hp.source_combo, hp.scale_combo
        self.channel_combo, self.histogram = hp.channel_combo, hp.histogram
        self.channels, self.channels_view = self.quantization_editor.channels, self.quantization_editor.view
        self.values, self.values_view, self.values_source = vp.values, vp.view, vp.source
        self.row_axis, self.col_axis = vp.row_axis, vp.col_axis

        self.tabs = QTabWidget()
        # compact tabs, all in sight in a dock a fifth of 1024 px wide (no scroll arrows)
        self.tabs.setDocumentMode(True)
        self.tabs.tabBar().setUsesScrollButtons(False)
        self.tabs.tabBar().setElideMode(Qt.TextElideMode.ElideRight)
        self.tabs.addTab(overview, "Overview")
        self.tabs.addTab(self.channels_view, "Channels")
        self.tabs.addTab(self.values_pane, "Values")
        # a blockwise-quantized tensor's block scales and blocks
        self.blocks_pane = BlocksPane()
        self.blocks_pane.tensorActivated.connect(self.tensorActivated)
        self.blocks_tab = self.tabs.addTab(self.blocks_pane, "Blocks")
        self.tabs.setTabVisible(self.blocks_tab, False)
        # two versions of the shown tensor's values (cross-check, float vs dequantized)
        self.comparison = TensorComparison()
        self._comparison_of: tuple[int, int] | None = None  # (subgraph, tensor) compared
        self.compare_tab = self.tabs.addTab(self.comparison, "Compare")
        self.tabs.setTabVisible(self.compare_tab, False)
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

    def refresh_values(self) -> None:
        """The shown tensor has new values (the debugger stopped again): redo only what
        depends on them (statistics, histogram, values grid), keeping the description, its
        editors, the scroll position and the view choices.  Rebuilding the whole panel at
        every step would cost a good part of a step's budget."""
        t = self.tensor
        if t is None or self._values_mark is None:
            self.show_tensor(t, keep_view=True)
            return
        scroll = self.info.scroll_position()
        self.info.truncate(self._values_mark)
        self._describe_values(t)
        self.info.restore_scroll(scroll)
        self.save_button.setEnabled(self._values("Stored values") is not None)
        self.histogram_pane.update_histogram()
        self.values_pane.refresh()

    def forget_values(self) -> None:
        """Drop cached statistics and any comparison: the model was replaced (an edit may
        have changed data)."""
        self._stats_cache.clear()
        self.clear_comparison()

    def show_comparison(self, a: np.ndarray, b: np.ndarray, labels: tuple[str, str],
                        title: str = "", tensor: tuple[int, int] | None = None) -> bool:
        """Compare two versions of the shown tensor's values in the Compare tab (brought
        forward): ours and LiteRT's, dequantized and float.  ``tensor`` (subgraph, index)
        names the tensor they belong to: when the panel shows another one nothing is shown
        (False).  The comparison stays while this tensor is shown and goes with it."""
        where = self._where()
        if where is None or (tensor is not None and tuple(tensor) != where):
            return False
        self.comparison.set_arrays(a, b, labels, title)
        self._comparison_of = where
        self.tabs.setTabVisible(self.compare_tab, True)
        self.tabs.setCurrentIndex(self.compare_tab)
        return True

    def clear_comparison(self) -> None:
        if self._comparison_of is None:
            return
        self._comparison_of = None
        self.comparison.clear()
        if self.tabs.currentIndex() == self.compare_tab:
            self.tabs.setCurrentIndex(0)
        self.tabs.setTabVisible(self.compare_tab, False)

    def _show_tensor(self, tensor: Tensor | None) -> None:
        self.tensor = tensor
        if self._comparison_of is not None and self._where() != self._comparison_of:
            self.clear_comparison()  # it compared another tensor's values
        self.editors = {}
        self._values_mark = None  # set once the description is complete
        self.info.clear_rows()
        self.quantization_editor.clear()
        self.save_button.setEnabled(False)
        replaceable = self.editable and tensor is not None and tensor.is_constant
        if self.replace_button.isVisibleTo(self) != replaceable:
            self.replace_button.setVisible(replaceable)
        if tensor is None:
            self._show_blocks(None)
            self.title.setText("No tensor selected")
            self.histogram_pane.show_tensor(None)
            self.values_pane.show_tensor(None)
            return
        self.title.setText(f"t{tensor.index}  {tensor.name or '(unnamed)'}")
        self._show_blocks(tensor)
        try:
            self._describe(tensor)
        except Exception as exc:  # noqa: BLE001 - a malformed tensor still shows what it can
            log.exception("describing tensor %s", tensor.index)
            self.info.add(self.info.section("Error"), "error", str(exc))
        self.save_button.setEnabled(self._values("Stored values") is not None)
        self.info.fit_key_column(140, None)
        self.histogram_pane.show_tensor(tensor)
        self.values_pane.show_tensor(tensor)

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
        self.quantization_editor.tensor = self.tensor
        self.quantization_editor.set_quantization(scale, zero_point, quantized_dimension)

    def remove_quantization(self) -> None:
        self.quantization_editor.tensor = self.tensor
        self.quantization_editor.remove_quantization()

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
        q = t.quantization
        details = (q.details or {}) if q is not None else {}
        blockwise = details.get("type") == "BlockwiseQuantization"
        quantized = q is not None and (q.has_scale or blockwise)
        if requantize is None:
            requantize = False
            if quantized and values.dtype.kind == "f" and t.type_name in ZERO_POINT_RANGES:
                how = (f"block by block (blocks of {details.get('block_size')}) with the block "
                       f"scales of tensor {details.get('scales')}, which are kept"
                       if blockwise else "with the tensor's scale and zero point")
                answer = QMessageBox.question(
                    self, "Requantize from float?",
                    f"{Path(path).name} holds {values.dtype} values and {t.name!r} is "
                    f"{t.type_name}.\n\nQuantize the values {how}?",
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

    def context_menu(self) -> QMenu | None:
        """The menu for the shown tensor: the edits (when editable), then what others
        added through `menu_actions` (the debugger's Watch); None when it would be empty."""
        t = self.tensor
        if t is None:
            return None
        menu = QMenu(self)
        if self.editable:
            expose = menu.addAction("Expose as subgraph output", self.expose)
            expose.setEnabled(t.index not in t.subgraph.outputs)
            if t.quantization is not None:
                menu.addAction("Remove quantization", self.remove_quantization)
            if t.is_constant:
                menu.addAction("Replace data from .npy\u2026", self.replace_dialog)
        for add in self.menu_actions:
            add(menu, t)
        return menu if menu.actions() else None

    def _context_menu(self, pos: QPoint) -> None:
        menu = self.context_menu()
        if menu is not None:
            common.exec_menu(menu, self.info.viewport().mapToGlobal(pos))

    def _put(self, item, key: str, editor: QWidget | None) -> None:
        if editor is not None:
            self.editors[key] = self.info.set_editor(item, editor)

    # -- internals ----------------------------------------------------------------------------
    def _follow(self, link: str) -> None:
        kind, _, value = link.partition(":")
        if kind == "op":
            self.opActivated.emit(int(value))
        elif kind == "tensor":
            self.tensorActivated.emit(int(value))

    def _show_blocks(self, tensor: Tensor | None) -> None:
        """The Blocks tab: shown for a blockwise-quantized tensor only."""
        view = None
        if tensor is not None:
            try:
                view = block_view(tensor)
            except Exception as exc:  # noqa: BLE001 - a malformed tensor still shows the rest
                view = f"cannot lay out the blocks: {exc}"
        if view is None and not self.tabs.isTabVisible(self.blocks_tab):
            return
        if view is None and self.tabs.currentIndex() == self.blocks_tab:
            self.tabs.setCurrentIndex(0)
        self.tabs.setTabVisible(self.blocks_tab, view is not None)
        self.blocks_pane.show_view(view)

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
        return t.is_constant if live is NOT_RUNNING else live is not None

    def no_values_message(self) -> str | None:
        """Why the selected tensor has no values to show, or None when it has some."""
        t = self.tensor
        if t is None:
            return "No tensor selected"
        if self._live() is None:
            return "Not yet computed in this run"
        if not self._has_values(t):
            return (f"{t.kind.capitalize()} tensor: its values exist only when the model runs "
                    "(Debug > Start computes them)")
        return None

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
            limit = ts.DISTINCT_LIMIT if live is NOT_RUNNING else ts.LIVE_DISTINCT_LIMIT
            self._stats_cache[key] = ts.statistics(values, distinct_limit=limit)
        return self._stats_cache[key]

    def _computed_shape(self, t: Tensor) -> tuple[int, ...] | None:
        """The shape the producer computes when the stored one differs (after an edit)."""
        check = self.shape_check
        if check is None:
            return None
        computed = check.inferred(t.subgraph.index, t.index)
        return computed if computed is not None and computed != tuple(t.shape) and tuple(t.shape) else None

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
            self._put(item, "shape", ed.text_editor(ed.shape_text(t.shape), self.set_shape, ed.shape_problem,
                                                    placeholder=SCALAR))
        computed = self._computed_shape(t)
        if computed is not None:
            item = tree.add(sec, "computed shape", f"{shape_text(computed)}: the stored shape is stale "
                            "(Edit \u203a Update Stored Shapes)")
            item.setForeground(1, WARNING)
        tree.add(sec, "shape signature", shape_text(t.shape_signature))
        tree.add(sec, "kind", t.kind)
        if t.external_buffer:  # the data lives in a side file (or a container section)
            self._external_rows(tree, sec, t)
        else:
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
        self.quantization_editor.describe(tree, t, self.editable, self._put)
        self._sparsity(t)
        self._values_mark = tree.mark()
        self._describe_values(t)

    def _describe_values(self, t: Tensor) -> None:
        """The sections that change while a run is paused: "not yet computed", statistics."""
        tree = self.info
        live = self._live()
        if live is None:
            tree.add(tree.section("Run"), "values", "not yet computed in this run")
        elif live is not NOT_RUNNING and live.shape is not None \
                and tuple(live.shape) != tuple(t.shape or ()):
            # a dynamic shape: the run computes another one than the file stores
            sec = tree.section("Run")
            tree.add(sec, "shape at this stop", shape_text(tuple(live.shape)))
            tree.add(sec, "elements at this stop", f"{int(np.prod(live.shape)):,}")
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

    @staticmethod
    def _external_rows(tree, sec, t: Tensor) -> None:
        """Where an external tensor's bytes are: the side file (full path in the tooltip)
        and the byte range; red when the reader found the file missing or short."""
        model = t.model
        entry = model.external_buffers_by_id.get(t.external_buffer)
        groups = model.external_buffer_groups
        name = groups[entry.group].name if entry is not None and 0 <= entry.group < len(groups) \
            else f"external buffer {t.external_buffer:#x}"
        bad = any(f.tensor == t.index and f.subgraph == t.subgraph.index for f in model.findings)
        item = tree.add(sec, "data in", name, tooltip=t.data_location)
        if entry is not None:
            tree.add(sec, "bytes", f"{entry.offset:,}..{entry.offset + entry.length:,} "
                     f"({entry.length:,} bytes, id {t.external_buffer:#x})",
                     tooltip=t.data_location)
        if bad:
            item.setForeground(1, WARNING)

    def show_values(self, values: np.ndarray | None) -> None:
        """Values computed at run time for the shown tensor (an activation): the Values tab."""
        self.values_pane.show_values(values)

    # -- the sub-widgets' entry points under their old names ------------------------------
    def current_histogram_input(self) -> np.ndarray | None:
        """The values the histogram shows (after the source and channel choices)."""
        return self.histogram_pane.current_input()

    @property
    def _index_spins(self) -> list:
        return self.values_pane.index_spins
