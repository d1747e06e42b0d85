"""The Quantization dock: spec findings, "Compare with float model...", the per-tensor
table, and float vs dequantized for the selected row.

The samples come from the source chosen in `quant_source.SampleSource` (seeded, a folder
of images, an .npz, or the inputs of the debugger session).  Rows, findings and the
signals that select on the canvas carry the subgraph: loop bodies are analysed too.

The analysis (`tflite_viewer.quant.analyze`) runs in a worker `Task` with a progress bar
and Cancel; the table is a sortable model over `quant.report.rows`; clicking a row asks
the window to select the tensor and shows, below the table, the float and dequantized
histograms overlaid and the histogram of their difference (first sample).
"""
from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any

from PySide6.QtCore import (QAbstractTableModel, QModelIndex, QObject, QSettings,
                            QSortFilterProxyModel, Qt, Signal)
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFileDialog, QHBoxLayout, QHeaderView,
                               QLabel, QProgressBar, QPushButton, QSpinBox,
                               QSplitter, QTableView, QTreeWidget, QTreeWidgetItem, QVBoxLayout,
                               QWidget)

from ...model import Model, load_model
from ...quant import analysis, report as qreport
from ...quant.spec import Finding, check_spec
from .. import tensor_stats as ts
from ..histogram_widget import HistogramWidget
from ..workers import Task
from .quant_source import DEBUGGER, SampleSource
from .common import panel_layout, split_panes
from .tensor_comparison import OverlayHistogram

COLUMNS = (("subgraph", "Subgraph"), ("tensor", "Tensor"), ("op", "Op"), ("opcode", "Type"),
           ("name", "Name"),
           ("sqnr_db", "SQNR dB"), ("cosine", "Cosine"), ("rmse_scale", "RMSE/scale"),
           ("max_abs_error", "Max abs err"), ("mean_error", "Mean err"),
           ("mean_squared_error", "MSE"), ("stddev", "Std dev"),
           ("median_diff_ratio", "Median diff ratio"), ("at_min_fraction", "At min"),
           ("at_max_fraction", "At max"), ("unused_fraction", "Unused range"),
           ("layer_sqnr_db", "Layer SQNR dB"), ("fallback_gain_db", "Fallback gain dB"))
SORT_ROLE = Qt.ItemDataRole.UserRole + 11
SEVERITY_COLOURS = {"error": QColor("#cf222e"), "warning": QColor("#9a6700")}


def _text(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if not math.isfinite(v):
            return "inf" if v > 0 else "-inf" if v < 0 else "nan"
        return ts.format_number(v, 5)
    return str(v)


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
            return _text(v)
        if role == SORT_ROLE:
            if v is None:
                return -math.inf if isinstance(self.rows[0].get(key, 0.0), (int, float)) else ""
            return v if not isinstance(v, float) or not math.isnan(v) else -math.inf
        if role == Qt.ItemDataRole.TextAlignmentRole and key not in ("name", "opcode"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class _Progress(QObject):
    changed = Signal(int, int, str)


class QuantDock(QWidget):
    """See the module docstring.  ``tensorActivated`` / ``opActivated`` (subgraph, index)
    ask the window to select; ``reportReady`` carries a finished `QuantReport`;
    ``findingsChanged`` the spec findings of the model shown."""

    tensorActivated = Signal(int, int)
    opActivated = Signal(int, int)
    reportReady = Signal(object)
    findingsChanged = Signal(list)
    failed = Signal(str)
    #: subgraph, tensor, dequantized, float (first sample): a row for the tensor inspector
    comparisonRequested = Signal(int, int, object, object, str)

    def __init__(self, settings: QSettings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.settings = settings or QSettings()
        self.model: Model | None = None
        self.path: Path | None = None
        self.findings: list[Finding] = []
        self.report: analysis.QuantReport | None = None
        self._task: Task | None = None
        self._cancel = threading.Event()
        self._serial = 0
        self._progress = _Progress()
        self._progress.changed.connect(self._on_progress)

        self.findings_tree = QTreeWidget()
        self.findings_tree.setHeaderLabels(["Severity", "Rule", "Object", "Message"])
        self.findings_tree.setRootIsDecorated(False)
        self.findings_tree.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.findings_tree.itemClicked.connect(self._finding_clicked)
        self.compare_button = QPushButton("Compare with float model\u2026")
        self.compare_button.clicked.connect(self.compare_dialog)
        self.samples = QSpinBox()
        self.samples.setRange(1, 1000)
        self.samples.setValue(int(self.settings.value("quant/samples", 10)))
        self.samples.setPrefix("samples: ")
        self.source = SampleSource(self.settings)
        self.source.changed.connect(self._source_changed)
        self.fallback = QCheckBox("Per-layer fallback")
        self.fallback.setChecked(self.settings.value("quant/fallback", "true") in (True, "true"))
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        self.progress = QProgressBar()
        self.progress.hide()
        self.export_button = QPushButton("Export CSV\u2026")
        self.export_button.clicked.connect(self.export_dialog)
        self.export_button.setEnabled(False)
        self.overlay_metric = QComboBox()
        self.overlay_metric.addItem("Overlay: off", None)
        for m in qreport.OVERLAY_METRICS:
            self.overlay_metric.addItem(f"Overlay: {m}", m)
        self.overlay_metric.setCurrentIndex(max(self.overlay_metric.findData(
            self.settings.value("quant/overlay", None)), 0))
        self.overlay_metric.currentIndexChanged.connect(
            lambda _i: self.settings.setValue("quant/overlay", self.overlay_metric.currentData() or ""))
        self.status = QLabel("")
        self.status.setWordWrap(True)
        # two short rows: the dock must not widen the window (it shares the bottom area)
        bar = QVBoxLayout()
        for widgets in ((self.compare_button, self.samples, self.fallback, self.cancel_button),
                        (self.source, self.overlay_metric, self.export_button, self.progress)):
            row = QHBoxLayout()
            for w in widgets:
                row.addWidget(w)
            row.addStretch(1)
            bar.addLayout(row)
        self.progress.setMinimumWidth(60)
        self._source_changed(self.source.kind)
        self.table_model = QuantTableModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.table_model)
        self.proxy.setSortRole(SORT_ROLE)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.clicked.connect(self._row_clicked)
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._row_clicked(cur))
        self.overlay_hist = OverlayHistogram()
        self.overlay_hist.message = "Select a compared tensor"
        self.error_hist = HistogramWidget()
        self.error_hist.setMinimumHeight(60)
        self.detail = QLabel("")
        left = QSplitter(Qt.Orientation.Vertical)
        left.addWidget(self.findings_tree)
        left.addWidget(self.table)
        left.setSizes([70, 300])
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.detail)
        rl.addWidget(self.overlay_hist, 1)
        rl.addWidget(self.error_hist, 1)
        layout = panel_layout(self)
        layout.addLayout(bar)
        layout.addWidget(self.status)
        layout.addWidget(split_panes(Qt.Orientation.Horizontal, (left, 3), (right, 2)), 1)

    # -- the model -----------------------------------------------------------------------
    def set_model(self, model: Model | None, path: Path | None = None) -> None:
        """A new or edited model: its spec findings (checked in a worker: the first check
        loads the interpreter's kernels); a comparison made on the old one is dropped (its
        numbers describe another model)."""
        self.cancel()
        self.model, self.path = model, path
        self.report = None
        self.table_model.set_rows([])
        self.overlay_hist.set_histograms(None, message="Select a compared tensor")
        self.error_hist.set_histogram(None)
        self.export_button.setEnabled(False)
        self._show_findings([])
        self.reportReady.emit(None)
        if model is None:
            return
        task = Task(check_spec, model)
        self._spec_serial = task.serial
        task.signals.finished.connect(self._spec_done)
        task.signals.failed.connect(self._spec_failed)  # bound: dropped once the dock is gone
        self._spec_task = task  # keep its signal object alive
        task.start()

    def _spec_failed(self, serial: int, _exc: BaseException) -> None:
        self._spec_done(serial, [])

    def _spec_done(self, serial: int, findings: list) -> None:
        if serial != getattr(self, "_spec_serial", None):
            return  # another model was shown since
        self._spec_task = None
        self._show_findings(findings)
        if self.model is not None and not self.running and self.report is None:
            self.status.setText(f"{len(findings)} spec finding(s). Compare with the float "
                                "original to measure the error of every tensor.")
        self.findingsChanged.emit(findings)

    def _show_findings(self, findings: list) -> None:
        self.findings = list(findings)
        self.findings_tree.clear()
        for f in self.findings:
            obj = f"op #{f.op}" if f.op is not None else f"tensor {f.tensor}"
            if f.subgraph:
                obj = f"subgraph {f.subgraph} {obj}"
            item = QTreeWidgetItem(self.findings_tree, [f.severity, f.rule, obj, f.message])
            item.setForeground(0, SEVERITY_COLOURS.get(f.severity, QColor("#1f2328")))
            item.setToolTip(3, f.message)
            item.setData(0, Qt.ItemDataRole.UserRole, f)
        self.findings_tree.setVisible(bool(self.findings))

    def _finding_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        f = item.data(0, Qt.ItemDataRole.UserRole)
        if f is None:
            return
        if f.op is not None:
            self.opActivated.emit(f.subgraph, f.op)
        elif f.tensor is not None:
            self.tensorActivated.emit(f.subgraph, f.tensor)

    # -- running -------------------------------------------------------------------------
    def compare_dialog(self) -> None:
        start = self.settings.value("quant/float_dir", str(self.path.parent) if self.path else "")
        path, _ = QFileDialog.getOpenFileName(self, "Float model to compare with", str(start),
                                              "TFLite models (*.tflite *.lite *.tfl);;All files (*)")
        if path:
            self.settings.setValue("quant/float_dir", str(Path(path).parent))
            self.compare(path)

    @property
    def running(self) -> bool:
        return self._task is not None

    def _source_changed(self, kind: str) -> None:
        one = kind == DEBUGGER
        self.samples.setEnabled(not one)
        self.samples.setToolTip("The debugger session's inputs are one sample" if one else
                                "How many samples (seeded, or the first of the folder / file)")

    def compare(self, float_path: str | Path, samples: int | None = None,
                fallback: bool | None = None) -> None:
        """Start the comparison with ``float_path`` in a worker (progress, Cancel), on the
        samples of the chosen source."""
        if self.model is None:
            return
        self.cancel()
        try:
            source = self.source.analysis_kwargs()
        except ValueError as exc:
            self.source.refresh()
            self._idle(f"The comparison cannot start: {exc}")
            self.failed.emit(f"The comparison cannot start: {exc}")
            return
        samples = self.samples.value() if samples is None else samples
        fallback = self.fallback.isChecked() if fallback is None else fallback
        self.settings.setValue("quant/samples", samples)
        self.settings.setValue("quant/fallback", bool(fallback))
        self._cancel = threading.Event()
        cancel, progress, model = self._cancel, self._progress, self.model

        def work():
            fm = load_model(float_path)
            return analysis.analyze(model, fm, samples=samples, per_layer_fallback=fallback,
                                    keep_values=True, cancel=cancel.is_set, **source,
                                    progress=lambda d, t, m: progress.changed.emit(d, t, m))

        task = Task(work)
        self._serial = task.serial
        task.signals.finished.connect(self._finished)
        task.signals.failed.connect(self._failed)
        self._task = task
        self.progress.setRange(0, 0)
        self.progress.show()
        self.cancel_button.show()
        self.compare_button.setEnabled(False)
        self.status.setText(f"Comparing with {Path(float_path).name} on "
                            f"{self.source.describe()}\u2026")
        task.start()

    def cancel(self) -> None:
        if self._task is not None:
            self._cancel.set()
            self._serial = -1  # whatever it returns now is dropped
            self._task = None
            self._idle("Cancelled.")

    def _idle(self, message: str) -> None:
        self.progress.hide()
        self.cancel_button.hide()
        self.compare_button.setEnabled(True)
        self.status.setText(message)

    def _on_progress(self, done: int, total: int, message: str) -> None:
        if self._task is None:
            return
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"%p%  {message}")

    def _finished(self, serial: int, report) -> None:
        if serial != self._serial:
            return
        self._task = None
        self.show_report(report)

    def _failed(self, serial: int, exc: BaseException) -> None:
        if serial != self._serial:
            return
        self._task = None
        if isinstance(exc, analysis.Cancelled):
            self._idle("Cancelled.")
            return
        message = f"The comparison failed: {exc}"
        self._idle(message)
        self.failed.emit(message)

    def show_report(self, report) -> None:
        self.report = report
        rows = qreport.rows(report)
        self.table_model.set_rows(rows)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # the report's order: worst first
        self.table.resizeColumnsToContents()
        self.table.setColumnWidth([k for k, _ in COLUMNS].index("name"), 220)
        self.export_button.setEnabled(True)
        out = report.outputs
        summary = (f"{len(report.compared())} tensors compared on {report.samples} "
                   f"sample{'s' if report.samples != 1 else ''}")
        subgraphs = {t.subgraph for t in report.compared()}
        if len(subgraphs) > 1:
            summary += f" in {len(subgraphs)} subgraphs"
        if out:
            summary += (f"; model outputs SQNR {_text(out['sqnr_db'])} dB, "
                        f"cosine {_text(out['cosine'])}")
        if report.unpaired_quantized or report.unpaired_float:
            summary += (f"; unpaired: {len(report.unpaired_quantized)} quantized, "
                        f"{len(report.unpaired_float)} float")
        self._idle(summary)
        self.reportReady.emit(report)

    # -- the selected row ------------------------------------------------------------------
    def row_at(self, proxy_index: QModelIndex) -> dict[str, Any] | None:
        if not proxy_index.isValid():
            return None
        return self.table_model.rows[self.proxy.mapToSource(proxy_index).row()]

    def _row_clicked(self, index: QModelIndex) -> None:
        row = self.row_at(index)
        if row is None or self.report is None:
            return
        self.tensorActivated.emit(int(row["subgraph"]), int(row["tensor"]))
        t = self.report.tensor(int(row["tensor"]), int(row["subgraph"]))
        if t is None or t.sample_values is None:
            self.overlay_hist.set_histograms(None, message="Select a compared tensor")
            self.error_hist.set_histogram(None, message="Not compared")
            self.detail.setText(f"tensor {row['tensor']}: not paired with a float tensor")
            return
        (edges, fc, qc), (eedges, ec) = qreport.comparison_histograms(*t.sample_values)
        where = f"s{t.subgraph} " if t.subgraph else ""
        self.overlay_hist.set_histograms(
            (ts.Histogram(qc, edges, False), ts.Histogram(fc, edges, False)),
            (f"{where}t{t.tensor} dequantized", "float"))
        self.error_hist.set_histogram(ts.Histogram(ec, eedges, False),
                                      caption="error (dequantized - float)")
        which = "first sample" + (", all its invocations" if t.subgraph else "")
        self.detail.setText(f"{where}t{t.tensor} ({t.opcode}) vs float t{t.float_tensor}, paired "
                            f"by {t.paired_by}; {which}")
        self.detail.setToolTip(t.name)
        deq, flt = t.sample_values[1], t.sample_values[0]
        self.comparisonRequested.emit(int(row.get("subgraph", 0)), int(row["tensor"]), deq, flt,
                                      f"Dequantized vs float: {which} of the comparison")

    def export_dialog(self) -> None:
        if self.report is None:
            return
        start = self.settings.value("quant/csv_dir", "")
        path, _ = QFileDialog.getSaveFileName(self, "Export CSV", str(Path(str(start)) / "quant.csv"),
                                              "CSV (*.csv)")
        if path:
            self.settings.setValue("quant/csv_dir", str(Path(path).parent))
            self.export_csv(path)

    def export_csv(self, path: str | Path) -> None:
        try:
            Path(path).write_text(qreport.to_csv(self.report))
        except OSError as exc:
            self.failed.emit(f"Cannot write {path}: {exc}")
            return
        self.status.setText(f"Wrote {path}")
