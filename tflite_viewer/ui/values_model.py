"""A lazy table over any N-d array: two chosen axes as rows and columns, the rest fixed.

Qt asks only for the cells it shows, so a tensor of any size costs nothing until it is
scrolled to; nothing is copied (the array is usually a view on the mapped file).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from .state.tensor_stats import format_number

_Index = QModelIndex | QPersistentModelIndex
_DISPLAY = Qt.ItemDataRole.DisplayRole
_ALIGNMENT = Qt.ItemDataRole.TextAlignmentRole
_TOOLTIP = Qt.ItemDataRole.ToolTipRole
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


class ValuesModel(QAbstractTableModel):
    """Shows ``array[..., r, ..., c, ...]`` with ``row_axis``/``col_axis`` free and the other
    axes at ``fixed[axis]``."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self._array: np.ndarray | None = None
        self.row_axis = 0
        self.col_axis = 1
        self.fixed: list[int] = []
        self.digits = 7  # significant digits of floating-point cells
        # cell texts formatted since the array, view or digits changed: a stop's repaint and
        # the column fitting ask for the same cells (each a call into Python)
        self._texts: dict[tuple[int, int], str] = {}

    def set_digits(self, digits: int) -> None:
        self.beginResetModel()
        self.digits = int(digits)
        self._texts.clear()
        self.endResetModel()

    @property
    def array(self) -> np.ndarray | None:
        return self._array

    def set_array(self, array: np.ndarray | None, row_axis: int | None = None,
                  col_axis: int | None = None, fixed: list[int] | None = None) -> None:
        self.beginResetModel()
        self._array = None if array is None else np.asarray(array)
        nd = 0 if self._array is None else self._array.ndim
        # Default view: the last two axes (channels across, width down for NHWC).
        self.row_axis = row_axis if row_axis is not None else max(nd - 2, 0)
        self.col_axis = col_axis if col_axis is not None else (nd - 1 if nd >= 2 else -1)
        self.fixed = list(fixed) if fixed is not None else [0] * nd
        self._texts.clear()
        self.endResetModel()

    def replace_values(self, array: np.ndarray) -> None:
        """New values of the same shape (the debugger's next stop): the view keeps its
        axes, indices, scroll position and selection; only the cells change."""
        array = np.asarray(array)
        if self._array is None or array.shape != self._array.shape:
            raise ValueError(f"replace_values needs shape {None if self._array is None else self._array.shape}")
        self._array = array
        self._texts.clear()
        if self.rowCount() and self.columnCount():
            self.dataChanged.emit(self.index(0, 0),
                                  self.index(self.rowCount() - 1, self.columnCount() - 1))

    def set_view(self, row_axis: int, col_axis: int, fixed: list[int]) -> None:
        self.beginResetModel()
        self.row_axis, self.col_axis, self.fixed = row_axis, col_axis, list(fixed)
        self._texts.clear()
        self.endResetModel()

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802, B008 - Qt API
        a = self._array
        if a is None or parent.isValid():
            return 0
        return 1 if a.ndim == 0 else int(a.shape[self.row_axis])

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802, B008 - Qt API
        a = self._array
        if a is None or parent.isValid():
            return 0
        return int(a.shape[self.col_axis]) if a.ndim >= 2 and self.col_axis >= 0 else 1

    def index_of(self, row: int, col: int) -> tuple[int, ...]:
        """The full N-d index of a cell."""
        a = self._array
        if a.ndim == 0:
            return ()
        idx = list(self.fixed)
        idx[self.row_axis] = row
        if a.ndim >= 2 and self.col_axis >= 0:
            idx[self.col_axis] = col
        return tuple(idx)

    def value(self, row: int, col: int) -> Any:
        return self._array[self.index_of(row, col)]

    def text(self, row: int, col: int) -> str:
        """A cell as shown."""
        key = (row, col)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = self._format(self.value(row, col))
        return text

    def _format(self, v: Any) -> str:
        if isinstance(v, bytes):
            return v.decode("utf-8", "replace")
        if isinstance(v, (np.floating, float)):
            return format_number(float(v), self.digits)
        if isinstance(v, np.complexfloating):
            return f"{v.real:.{self.digits}g}{v.imag:+.{self.digits}g}j"
        return str(v)

    def data(self, index: _Index, role: int = _DISPLAY) -> Any:
        # the roles in the order Qt asks most: this runs for every role of every cell shown
        if role == _DISPLAY:
            return self.text(index.row(), index.column()) if self._array is not None else None
        if role == _ALIGNMENT:
            return _RIGHT
        if role == _TOOLTIP and self._array is not None and index.isValid():
            return f"{list(self.index_of(index.row(), index.column()))} = {self.value(index.row(), index.column())!r}"
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802 - Qt API
                   role: int = _DISPLAY) -> Any:
        return str(section) if role == _DISPLAY else None
