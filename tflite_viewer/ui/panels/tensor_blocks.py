"""The tensor panel's Blocks tab: a blockwise-quantized tensor's block scales as a grid
(rows x blocks, shaded by scale) with their histogram, and the selected block's stored
integers beside their dequantized values.  The figures come from `block_stats` (Qt-free).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QHeaderView, QLabel, QPushButton, QSplitter, QTableView,
                               QVBoxLayout, QHBoxLayout, QWidget)

from ..state import tensor_stats as ts
from ..state.block_stats import BlockView
from ..histogram_widget import HistogramWidget

LOW, HIGH = QColor("#f7fbff"), QColor("#2b6cb0")  # the grid's shading, smallest to largest


def _shade(t: float) -> QColor:
    t = min(max(t, 0.0), 1.0)
    return QColor(int(LOW.red() + (HIGH.red() - LOW.red()) * t),
                  int(LOW.green() + (HIGH.green() - LOW.green()) * t),
                  int(LOW.blue() + (HIGH.blue() - LOW.blue()) * t))


class BlockScalesModel(QAbstractTableModel):
    """One cell per block: its scale, shaded from the smallest scale to the largest."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.view: BlockView | None = None
        self._lo, self._span = 0.0, 1.0

    def set_view(self, view: BlockView | None) -> None:
        self.beginResetModel()
        self.view = view
        if view is not None and view.scales.size:
            finite = view.scales[np.isfinite(view.scales)]
            lo = float(finite.min()) if finite.size else 0.0
            hi = float(finite.max()) if finite.size else 1.0
            self._lo, self._span = lo, (hi - lo) or 1.0
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() or self.view is None else self.view.rows

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() or self.view is None else self.view.blocks

    def data(self, index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or self.view is None:
            return None
        s = float(self.view.scales[index.row(), index.column()])
        if role == Qt.ItemDataRole.DisplayRole:
            return ts.format_number(s, 4)
        if role == Qt.ItemDataRole.BackgroundRole:
            return _shade((s - self._lo) / self._span) if np.isfinite(s) else QColor("#f4c7c3")
        if role == Qt.ItemDataRole.ForegroundRole:
            return QColor("#ffffff") if (s - self._lo) / self._span > 0.6 else None
        if role == Qt.ItemDataRole.ToolTipRole:
            cols = self.view.columns(index.column())
            return (f"row {index.row()}, block {index.column()} (columns {cols.start}.."
                    f"{cols.stop - 1}): scale {s:.6g}")
        return None

    def headerData(self, section: int, orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if role != Qt.ItemDataRole.DisplayRole or self.view is None:
            return None
        if orientation == Qt.Orientation.Horizontal:
            cols = self.view.columns(section)
            return f"{section} [{cols.start}:{cols.stop}]"
        return str(section)


class BlockValuesModel(QAbstractTableModel):
    """The selected block: column index, stored integer, dequantized value."""

    HEADERS = ("column", "stored", "dequantized")

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list[tuple[int, int, float]] = []

    def set_block(self, view: BlockView | None, row: int, block: int) -> None:
        self.beginResetModel()
        if view is None:
            self.rows = []
        else:
            q, deq = view.block_values(row, block), view.dequantized(row, block)
            self.rows = [(c, int(a), float(b)) for c, a, b in zip(view.columns(block), q, deq)]
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else 3

    def data(self, index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.DisplayRole:
            value = self.rows[index.row()][index.column()]
            return ts.format_number(value, 7) if index.column() == 2 else str(value)
        return None

    def headerData(self, section: int, orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:  # noqa: N802
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None


class BlocksPane(QWidget):
    """See the module docstring.  ``tensorActivated`` follows the scale tensor's link."""

    tensorActivated = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view: BlockView | None = None
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.scales_link = QPushButton("")
        self.scales_link.setFlat(True)
        self.scales_link.setStyleSheet("color: #0969da; text-decoration: underline;")
        self.scales_link.clicked.connect(
            lambda: self.view is not None and self.tensorActivated.emit(self.view.scales_tensor))
        self.grid_model = BlockScalesModel(self)
        self.grid = QTableView()
        self.grid.setModel(self.grid_model)
        self.grid.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.grid.verticalHeader().setDefaultSectionSize(20)
        self.grid.selectionModel().currentChanged.connect(self._cell_changed)
        self.histogram = HistogramWidget()
        self.block_label = QLabel("")
        self.block_model = BlockValuesModel(self)
        self.block_table = QTableView()
        self.block_table.setModel(self.block_model)
        self.block_table.verticalHeader().hide()
        self.block_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.block_table.verticalHeader().setDefaultSectionSize(20)
        block = QWidget()
        bl = QVBoxLayout(block)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.block_label)
        bl.addWidget(self.block_table, 1)
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(self.histogram)
        lower.addWidget(block)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.grid)
        split.addWidget(lower)
        head = QHBoxLayout()
        head.addWidget(self.summary, 1)
        head.addWidget(self.scales_link)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(head)
        layout.addWidget(split, 1)

    def show_view(self, view: BlockView | str | None) -> None:
        """Show a tensor's blocks; a string says why they cannot be shown."""
        self.view = view if isinstance(view, BlockView) else None
        self.grid_model.set_view(self.view)
        self.scales_link.setVisible(self.view is not None)
        if self.view is None:
            self.summary.setText(view if isinstance(view, str) else "Not blockwise-quantized")
            self.histogram.set_histogram(None)
            self.block_model.set_block(None, 0, 0)
            self.block_label.setText("")
            return
        v = self.view
        zp = "no zero points" if v.zero_points_tensor is None else \
            f"zero points in tensor {v.zero_points_tensor}"
        self.summary.setText(
            f"Blockwise: blocks of {v.block_size} along the last axis; {v.rows} rows x "
            f"{v.blocks} blocks; scales {ts.format_number(float(v.scales.min()))} \u2026 "
            f"{ts.format_number(float(v.scales.max()))}; {zp}")
        self.scales_link.setText(f"scales: tensor {v.scales_tensor}")
        self.histogram.set_histogram(ts.histogram(v.scales), caption="block scales")
        self.select_block(0, 0)

    def select_block(self, row: int, block: int) -> None:
        """Show block ``block`` of row ``row`` (and select its cell in the grid)."""
        v = self.view
        if v is None or not (0 <= row < v.rows and 0 <= block < v.blocks):
            return
        index = self.grid_model.index(row, block)
        if self.grid.currentIndex() != index:
            self.grid.setCurrentIndex(index)  # -> _cell_changed
            return
        self._show_block(row, block)

    def _cell_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self._show_block(current.row(), current.column())

    def _show_block(self, row: int, block: int) -> None:
        v = self.view
        cols = v.columns(block)
        zp = "" if v.zero_points is None else f", zero point {int(v.zero_points[row, block])}"
        where = ", ".join(str(i) for i in v.row_index(row))
        self.block_label.setText(
            f"Row {where or row}, block {block} (columns {cols.start}..{cols.stop - 1}): "
            f"scale {float(v.scales[row, block]):.6g}{zp}")
        self.block_model.set_block(v, row, block)
