"""The tensor panel's Values tab: a lazy grid over any N-d array, two axes chosen as rows
and columns and a spin box per other axis, cells shown with a chosen number of significant
digits and columns as wide as their numbers.

Constants have values in the file.  Activations have none until something computes them:
the tab says so (and how to get them) instead of showing an empty grid, and
`show_values` is where a run (the debugger) hands over the values it computed.
"""
from __future__ import annotations

import heapq
from typing import Callable

import numpy as np
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QHeaderView, QLabel, QSpinBox, QStyle,
                               QTableView, QVBoxLayout, QWidget)

NO_VALUES = ("{kind} tensor: it has no values in the model file. Its values exist once the model "
             "runs: run it in the debugger (or `tflite-viewer run --dump-all`) and they appear here.")

from ...model import Tensor
from ..values_model import ValuesModel

Values = Callable[[str], "np.ndarray | None"]  # source ("Stored values" / "Real values") -> array


class ValuesPane(QWidget):
    def __init__(self, values: Values, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._values = values
        self.tensor: Tensor | None = None
        self.values = ValuesModel(self)
        self.view = QTableView()
        self.view.setModel(self.values)
        self.view.verticalHeader().setDefaultSectionSize(20)
        self.view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.view.horizontalHeader().setDefaultSectionSize(80)
        # size columns from the rows in view only (Qt's default reads 1,000 rows per column,
        # thousands of cells formatted on every stop of the debugger)
        self.view.horizontalHeader().setResizeContentsPrecision(0)
        self.view.verticalHeader().setResizeContentsPrecision(0)
        self._columns_stale = False
        self._fitted: set[int] = set()  # columns sized since the array or view changed
        self.view.horizontalScrollBar().valueChanged.connect(self._fit_columns_in_view)
        self.source = QComboBox()
        self.source.addItems(["Stored values", "Real values"])
        self.source.currentIndexChanged.connect(self.reset)
        self.row_axis = QComboBox()
        self.col_axis = QComboBox()
        self.row_axis.currentIndexChanged.connect(self._axes_changed)
        self.col_axis.currentIndexChanged.connect(self._axes_changed)
        self.digits = QSpinBox()
        self.digits.setRange(2, 17)
        self.digits.setValue(self.values.digits)
        self.digits.setToolTip("Significant digits of floating-point values")
        self.digits.valueChanged.connect(self._digits_changed)
        self.message = QLabel("")
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color: #57606a; padding: 8px;")
        self.message.hide()
        self.index_row = QHBoxLayout()
        self.index_spins: list[QSpinBox] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        axes = QHBoxLayout()
        axes.addWidget(self.source)
        axes.addWidget(QLabel("rows"))
        axes.addWidget(self.row_axis)
        axes.addWidget(QLabel("columns"))
        axes.addWidget(self.col_axis)
        axes.addStretch(1)
        layout.addLayout(axes)
        # the fixed axes' spin boxes (rebuilt per tensor), then the digits setting
        second = QHBoxLayout()
        second.addLayout(self.index_row, 1)
        second.addWidget(QLabel("digits"))
        second.addWidget(self.digits)
        layout.addLayout(second)
        layout.addWidget(self.message)
        layout.addWidget(self.view, 1)

    def show_tensor(self, tensor: Tensor | None) -> None:
        self.tensor = tensor
        self.reset()

    def reset(self) -> None:
        values = self._values(self.source.currentText()) if self.tensor is not None else None
        self._show_array(values)

    def refresh(self) -> None:
        """The same tensor with new values: an array of the same shape keeps the chosen
        axes and indices (no widgets rebuilt); any other change is a `reset`."""
        old = self.values.array
        values = self._values(self.source.currentText()) if self.tensor is not None else None
        if old is None or values is None or np.shape(values) != old.shape:
            self._show_array(values)
            return
        self.values.replace_values(values)
        self.fit_columns()

    def show_values(self, values: np.ndarray | None) -> None:
        """Show values computed at run time (an activation's, from the debugger)."""
        self._show_array(None if values is None else np.asarray(values))

    def _show_array(self, values: np.ndarray | None) -> None:
        self.values.set_array(values)
        t = self.tensor
        empty = values is None and t is not None and not t.is_constant
        self.message.setText(NO_VALUES.format(kind=t.kind.capitalize()) if empty else "")
        self.message.setVisible(empty)
        self._rebuild_axes()
        self.fit_columns()

    def fit_columns(self) -> None:
        """Columns as wide as the numbers they show, measured on the rows in view.  Only
        the columns in view are measured, the others as they are scrolled to, and nothing
        while the tab is hidden: the debugger replaces the array at every stop, and Qt's
        own resizeColumnsToContents formats every column's cells in view (30 ms for a
        96x32 slice, most of a step's budget)."""
        self._fitted.clear()
        if not self.isVisible():
            self._columns_stale = True
            return
        self._columns_stale = False
        self._fit_columns_in_view()

    def _fit_columns_in_view(self) -> None:
        view = self.view
        if not self.isVisible() or self.values.columnCount() == 0:
            return
        width = view.viewport().width()
        c = max(view.columnAt(0), 0)
        rows = self._rows_in_view()
        while c < self.values.columnCount() and view.columnViewportPosition(c) < width:
            if c not in self._fitted:
                view.setColumnWidth(c, self._column_width(c, rows))
                self._fitted.add(c)
            c += 1

    def _rows_in_view(self) -> range:
        view = self.view
        n = self.values.rowCount()
        first = max(view.rowAt(0), 0)
        last = view.rowAt(view.viewport().height() - 1)
        return range(first, (n - 1 if last < 0 else last) + 1)

    def _column_width(self, column: int, rows: range) -> int:
        """The widest of the column's texts in ``rows`` and its header, plus the cell's
        margins: measured here rather than by Qt's delegate, which asks the model for
        every role of every cell (each a call into Python)."""
        metrics = self.view.fontMetrics()
        text = self.values.text
        # measure the longest few texts only: digits share one width in the UI fonts, so
        # the widest cell is among the longest (a stop measures every column in view)
        longest = heapq.nlargest(3, (text(r, column) for r in rows), key=len)
        widest = max((metrics.horizontalAdvance(t) for t in longest), default=0)
        header = self.view.horizontalHeader()
        margin = 2 * (self.view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self.view) + 1)
        return max(widest + margin + 2, header.sectionSizeFromContents(column).width())

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._fit_columns_in_view()  # wider: more columns in view

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if self._columns_stale:
            self.fit_columns()

    def _digits_changed(self, digits: int) -> None:
        self.values.set_digits(digits)
        self.fit_columns()

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
        for spin in self.index_spins:
            self.index_row.removeWidget(spin)
            spin.deleteLater()
        self.index_spins = []
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
            self.index_spins.append(spin)
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
        self.fit_columns()

    def _index_changed(self) -> None:
        fixed = list(self.values.fixed)
        for spin in self.index_spins:
            fixed[int(spin.property("axis"))] = spin.value()
        self.values.set_view(self.values.row_axis, self.values.col_axis, fixed)
        self.fit_columns()
