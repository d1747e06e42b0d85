"""The Quantization dock's table: the analysis report's rows (`quant.report.rows`) as a Qt
model, sorted through a proxy on SORT_ROLE so numbers sort as numbers."""
from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, Qt
from PySide6.QtGui import QColor

from ..state.quant import number_text

#: the table's columns: where the tensor is, then the metrics read first (in a dock a
#: few hundred pixels wide SQNR and cosine are in view without scrolling), the name last
COLUMNS = (("subgraph", "Subgraph"), ("tensor", "Tensor"), ("op", "Op"), ("sqnr_db", "SQNR dB"),
           ("cosine", "Cosine"), ("opcode", "Type"), ("fallback_gain_db", "Fallback gain dB"),
           ("layer_sqnr_db", "Layer SQNR dB"), ("rmse_scale", "RMSE/scale"),
           ("max_abs_error", "Max abs err"), ("mean_error", "Mean err"),
           ("mean_squared_error", "MSE"), ("stddev", "Std dev"),
           ("median_diff_ratio", "Median diff ratio"), ("at_min_fraction", "At min"),
           ("at_max_fraction", "At max"), ("unused_fraction", "Unused range"), ("name", "Name"))
COLUMN_KEYS = [k for k, _ in COLUMNS]
SORT_ROLE = Qt.ItemDataRole.UserRole + 11
SEVERITY_COLOURS = {"error": QColor("#cf222e"), "warning": QColor("#9a6700")}


class QuantTableModel(QAbstractTableModel):
    """The report's rows; sorting goes through a proxy on SORT_ROLE (numbers as numbers)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[dict[str, Any]] = []

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt API
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt API
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section][1]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        key = COLUMNS[index.column()][0]
        v = self.rows[index.row()].get(key)
        if role == Qt.ItemDataRole.DisplayRole:
            return number_text(v)
        if role == SORT_ROLE:
            if v is None:
                return -math.inf if isinstance(self.rows[0].get(key, 0.0), (int, float)) else ""
            return v if not isinstance(v, float) or not math.isnan(v) else -math.inf
        if role == Qt.ItemDataRole.TextAlignmentRole and key not in ("name", "opcode"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None
