"""Two versions of one tensor side by side: the tensor inspector's Compare tab.

Generic on purpose: it takes two arrays and their labels.  The debugger's cross-check
shows ours against LiteRT's; the Quantization dock shows dequantized against float.  The
numbers come from `tensor_stats.compare` (Qt-free, tested against numpy):

* statistics of both and of the difference ``a - b``, in one table;
* both histograms on shared bins, drawn over each other;
* the histogram of the difference (the error);
* a values grid with both values and the difference per element, in element order or
  largest difference first (lazy: Qt asks only for the rows in view).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QHeaderView, QLabel, QSizePolicy,
                               QSplitter, QTableView, QTableWidget, QTableWidgetItem,
                               QTabWidget, QVBoxLayout, QWidget)

from ..state import tensor_stats as ts
from ..histogram_widget import HistogramWidget

#: a (the values checked) orange, b (the reference: LiteRT's, float) blue, as the
#: Quantization dock draws dequantized against float
COLOURS = (QColor(230, 126, 34, 150), QColor(59, 120, 216, 150))
STAT_ROWS = ("shape", "dtype", "count", "min", "max", "mean", "std", "zeros", "NaN / Inf",
             "max |difference|", "elements differing")
ELEMENT_ORDER, LARGEST_FIRST = "Element order", "Largest |difference| first"


def header_text(label: str) -> str:
    """A column title on two lines where it is a difference ("dequantized" over "− float"):
    narrow docks showed "uantized − f"."""
    return label.replace(" \u2212 ", "\n\u2212 ").replace(" - ", "\n- ")


def _whole_headers(header: QHeaderView) -> None:
    """Columns as wide as their titles and values (a scroll bar when the dock is narrower),
    the last one taking what is left: no title is clipped."""
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setStretchLastSection(True)
    header.setTextElideMode(Qt.TextElideMode.ElideNone)


def _num(v: float | None) -> str:
    return ts.format_number(v)


def stat_cells(c: ts.Comparison) -> list[list[str]]:
    """The statistics table as text: one row per `STAT_ROWS` entry, columns a, b, a - b."""
    rows: list[list[str]] = []
    sa, sb = c.stats
    sd = c.diff_stats
    shapes = ["[" + ", ".join(map(str, x.shape)) + "]" for x in (c.a, c.b)]
    rows.append(shapes + [shapes[0] if c.diff is not None else "(shapes differ)"])
    rows.append([c.a.dtype.name, c.b.dtype.name, "float64" if c.diff is not None else ""])
    for key in ("count", "min", "max", "mean", "std", "zeros", "nan"):
        cells = []
        for s in (sa, sb, sd):
            if s is None:
                cells.append("")
            elif key == "count":
                cells.append(f"{s.count:,}")
            elif key == "zeros":
                cells.append(f"{s.zeros_percent:.2f} %")
            elif key == "nan":
                cells.append(f"{s.nan} / {s.inf}")
            else:
                cells.append(_num(getattr(s, key)))
        rows.append(cells)
    rows.append(["", "", "" if c.max_abs is None else _num(c.max_abs)])
    rows.append(["", "", "" if c.differing is None else f"{c.differing:,} of {c.a.size:,}"])
    return rows


class OverlayHistogram(QWidget):
    """Two histograms on the same bins drawn over each other, with a legend of their
    labels (see `tensor_stats.shared_histograms`)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.histograms: tuple[ts.Histogram, ts.Histogram] | None = None
        self.labels = ("a", "b")
        self.message = "No values"
        self.setMinimumHeight(100)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(320, 160)

    def set_histograms(self, histograms: tuple[ts.Histogram, ts.Histogram] | None,
                       labels: tuple[str, str] = ("a", "b"), message: str = "No values") -> None:
        self.histograms, self.labels, self.message = histograms, tuple(labels), message
        self.update()

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("#ffffff"))
        font = QFont(self.font())
        font.setPixelSize(10)
        p.setFont(font)
        if self.histograms is None:
            p.setPen(QColor("#6e7781"))
            p.drawText(QRectF(self.rect()).adjusted(8, 4, -8, -4),  # wrapped: never clipped
                       int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap), self.message)
            return
        plot = QRectF(46, 20, max(self.width() - 58, 10), max(self.height() - 42, 10))
        top = max(int(max(h.counts.max(initial=0) for h in self.histograms)), 1)
        edges = self.histograms[0].edges
        bw = plot.width() / max(self.histograms[0].counts.size, 1)
        for hist, colour in zip(self.histograms, COLOURS):
            for i, count in enumerate(hist.counts.tolist()):
                if count:
                    h = count / top * plot.height()
                    p.fillRect(QRectF(plot.left() + i * bw, plot.bottom() - h, max(bw - 1, 1), h), colour)
        p.setPen(QPen(QColor("#57606a"), 1))
        p.drawLine(QPointF(plot.left(), plot.bottom()), QPointF(plot.right(), plot.bottom()))
        p.drawLine(QPointF(plot.left(), plot.top()), QPointF(plot.left(), plot.bottom()))
        lo, hi = ts.format_number(float(edges[0]), 4), ts.format_number(float(edges[-1]), 4)
        y = plot.bottom() + 14
        p.drawText(QPointF(plot.left(), y), lo)
        p.drawText(QPointF(plot.right() - p.fontMetrics().horizontalAdvance(hi), y), hi)
        p.drawText(QRectF(0, plot.top() - 6, plot.left() - 4, 12),
                   Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, str(top))
        x = plot.left()
        for label, colour in zip(self.labels, COLOURS):
            p.fillRect(QRectF(x, 5, 10, 10), colour)
            x += 13
            p.setPen(QColor("#1f2328"))
            p.drawText(QPointF(x, 14), label)
            x += p.fontMetrics().horizontalAdvance(label) + 14


class ComparisonValuesModel(QAbstractTableModel):
    """One row per element: its index, a's value, b's value and a - b; in element order or
    largest |a - b| first."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.comparison: ts.Comparison | None = None
        self.order: np.ndarray | None = None  # flat indices, None: element order
        self.digits = 7

    def set_comparison(self, c: ts.Comparison | None, largest_first: bool = False) -> None:
        self.beginResetModel()
        self.comparison = c
        self.order = None
        if c is not None and largest_first and c.diff is not None:
            d = np.abs(c.diff.reshape(-1))
            d = np.where(np.isnan(d), np.inf, d)  # a NaN on one side is the largest difference
            self.order = np.argsort(-d, kind="stable")
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802, B008 - Qt API
        c = self.comparison
        return 0 if c is None or parent.isValid() else int(max(c.a.size, c.b.size))

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802, B008 - Qt API
        return 0 if parent.isValid() else 4

    def flat_index(self, row: int) -> int:
        return int(self.order[row]) if self.order is not None else row

    def row_values(self, row: int) -> tuple[tuple[int, ...], Any, Any, float | None]:
        """(N-d index, a's value, b's value, a - b) of a row (None where a side has none)."""
        c = self.comparison
        k = self.flat_index(row)
        shape = c.a.shape if k < c.a.size else c.b.shape
        index = tuple(int(i) for i in np.unravel_index(k, shape)) if shape else ()
        va = c.a.reshape(-1)[k] if k < c.a.size else None
        vb = c.b.reshape(-1)[k] if k < c.b.size else None
        vd = float(c.diff.reshape(-1)[k]) if c.diff is not None else None
        return index, va, vb, vd

    def _text(self, v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, (float, np.floating)):
            return ts.format_number(float(v), self.digits)
        return str(v)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or self.comparison is None:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            values = self.row_values(index.row())
            if index.column() == 0:
                return str(list(values[0]))
            return self._text(values[index.column()])
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() > 0:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if role != Qt.ItemDataRole.DisplayRole or self.comparison is None:
            return None
        if orientation == Qt.Orientation.Horizontal:
            c = self.comparison
            return ("index", c.labels[0], c.labels[1], header_text(c.diff_label))[section]
        return str(section)


class TensorComparison(QWidget):
    """See the module docstring; `set_arrays` shows two arrays, `clear` nothing."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.comparison: ts.Comparison | None = None
        self.title = QLabel("Nothing compared")
        self.title.setWordWrap(True)
        self.title.setStyleSheet("font-weight: bold; padding: 2px;")
        self.stats = QTableWidget(len(STAT_ROWS), 3)
        self.stats.setVerticalHeaderLabels(list(STAT_ROWS))
        self.stats.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        _whole_headers(self.stats.horizontalHeader())
        self.stats.verticalHeader().setDefaultSectionSize(18)
        self.overlay = OverlayHistogram()
        self.error = HistogramWidget()
        self.order = QComboBox()
        self.order.addItems([ELEMENT_ORDER, LARGEST_FIRST])
        self.order.currentIndexChanged.connect(self._order_changed)
        self.values = ComparisonValuesModel(self)
        self.values_view = QTableView()
        self.values_view.setModel(self.values)
        self.values_view.verticalHeader().hide()
        self.values_view.verticalHeader().setDefaultSectionSize(20)
        _whole_headers(self.values_view.horizontalHeader())

        histograms = QSplitter(Qt.Orientation.Vertical)
        histograms.addWidget(self.overlay)
        histograms.addWidget(self.error)
        overview = QSplitter(Qt.Orientation.Vertical)
        overview.addWidget(self.stats)
        overview.addWidget(histograms)
        overview.setStretchFactor(0, 1)
        overview.setStretchFactor(1, 1)
        overview.setSizes([260, 260])  # the table's rows all in view, the histograms below
        grid = QWidget()
        gl = QVBoxLayout(grid)
        gl.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(QLabel("rows"))
        row.addWidget(self.order)
        row.addStretch(1)
        gl.addLayout(row)
        gl.addWidget(self.values_view, 1)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(overview, "Statistics")
        self.tabs.addTab(grid, "Values")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.title)
        layout.addWidget(self.tabs, 1)
        self.clear()

    def set_arrays(self, a: np.ndarray, b: np.ndarray, labels: tuple[str, str],
                   title: str = "") -> ts.Comparison:
        """Compare ``a`` with ``b`` (``labels`` name them; the difference is a - b)."""
        c = ts.compare(a, b, labels)
        self.comparison = c
        self.title.setText(title or f"{labels[0]} vs {labels[1]}")
        self.stats.setHorizontalHeaderLabels([labels[0], labels[1], header_text(c.diff_label)])
        for col, tip in enumerate((labels[0], labels[1], f"the difference {c.diff_label}")):
            self.stats.horizontalHeaderItem(col).setToolTip(tip)
        for r, cells in enumerate(stat_cells(c)):
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.stats.setItem(r, col, item)
        self.overlay.set_histograms(c.overlay, labels)
        if c.error is not None:
            self.error.set_histogram(c.error, caption=f"{c.diff_label} ({c.a.size:,} values)",
                                     marker=(0.0, "0"))
        else:
            self.error.set_histogram(None, message="Different shapes: no element-wise difference")
        self.values.set_comparison(c, self.order.currentText() == LARGEST_FIRST)
        return c

    def clear(self) -> None:
        self.comparison = None
        self.title.setText("Nothing compared")
        self.stats.clearContents()
        self.overlay.set_histograms(None)
        self.error.set_histogram(None, message="No difference")
        self.values.set_comparison(None)

    def stat(self, row: str, column: int) -> str:
        """The statistics table's text at ``row`` (a `STAT_ROWS` name) and ``column``
        (0: a, 1: b, 2: a - b)."""
        item = self.stats.item(STAT_ROWS.index(row), column)
        return "" if item is None else item.text()

    def _order_changed(self) -> None:
        self.values.set_comparison(self.comparison, self.order.currentText() == LARGEST_FIRST)
