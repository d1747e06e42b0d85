"""The Quantization dock: spec findings, "Compare with float model...", the per-tensor
table, and float vs dequantized for the selected row.

The samples come from the window's one choice of inputs (`state.samples.SampleChoice`,
edited here by `quant_source.SampleSource`: seeded, a folder of images, an .npz, or the
inputs of the debugger session), which Run Both uses too; the status line says which
inputs the numbers come from.  Rows, findings and the signals that select on the canvas
carry the subgraph: loop bodies are analysed too.

A view of the open workspace's quantization part (`state.quant.quant_state`): the spec
findings, the comparison's report, its status line and progress belong to the model they
were computed on (`quant_runs` writes them there); another model shows its own, or the
dock's empty state, never a caption or a table left from the last one.  The analysis (`tflite_viewer.quant.analyze`) runs in a
worker with a progress bar and Cancel; the table is a sortable model over
`quant.report.rows`; clicking a row asks the window to select the tensor and shows, beside
the table, the float and dequantized histograms overlaid and the histogram of their
difference (first sample).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QModelIndex, QObject, QSettings, QSortFilterProxyModel, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFileDialog, QHBoxLayout, QHeaderView,
                               QLabel, QMenu, QProgressBar, QPushButton, QSpinBox,
                               QTableView, QTabWidget, QToolButton, QTreeWidget, QTreeWidgetItem,
                               QVBoxLayout, QWidget)

from ...model import Model
from ...quant import recipes
from ...quant import report as qreport
from ..state import tensor_stats as ts
from ..histogram_widget import HistogramWidget
from ..state.docks import BOTTOM, DockSpec
from ..state import requantize as rq
from ..state.quant import TOPIC, quant_state
from ..state.samples import DEBUGGER, SampleChoice
from ..state.workspace import MODEL, Hub, Workspace
from .common import ElidedLabel, min_rows, panel_layout, split_panes
from .quant_fix import KEEP_TEXT, OVERRIDE_TEXT, RequantizeDialog, RequantizeRun, quantizer_missing
from .quant_generation import GenerationView
from .quant_runs import FloatComparison, QuantRun, SpecCheck
from .quant_source import SampleSource
from .quant_table import COLUMN_KEYS, SEVERITY_COLOURS, SORT_ROLE, QuantTableModel
from .tensor_comparison import OverlayHistogram

NO_MODEL = "Open a quantized model to check it against the quantization spec."
NO_ROW = "Select a compared tensor: float and dequantized values, and their difference"

DOCK = DockSpec("quantization", "Quantization", BOTTOM, part="quant", overlay="quant",
                shortcut="Ctrl+Shift+Q")


class _Progress(QObject):
    changed = Signal(int, int, str)


class QuantDock(QWidget):
    """See the module docstring.  ``tensorActivated`` / ``opActivated`` (subgraph, index)
    ask the window to select; ``reportReady`` carries the report shown (None: none);
    ``findingsChanged`` the spec findings of the model shown; ``metricChosen`` the metric
    the canvas is to be coloured by; ``valuesCompared`` a row's values for the Tensor
    panel's Compare tab."""

    tensorActivated = Signal(int, int)
    opActivated = Signal(int, int)
    reportReady = Signal(object)
    findingsChanged = Signal(list)
    failed = Signal(str)
    metricChosen = Signal(str)
    #: subgraph, tensor, dequantized, float (first sample), labels, caption
    valuesCompared = Signal(int, int, object, object, object, str)
    #: a model quantized again from the table: its path, the float model's path
    requantized = Signal(str, str)

    def __init__(self, settings: QSettings | None = None, parent: QWidget | None = None,
                 hub: Hub | None = None, samples: SampleChoice | None = None) -> None:
        super().__init__(parent)
        self.settings = settings or QSettings()
        self.hub = hub or Hub()  # a dock on its own (tests) keeps its own workspace
        self._progress = _Progress()  # every comparison's progress, for listeners
        self._shown_report: Any = None
        self._shown_findings: Any = None
        self._spec_for: tuple[int, int] | None = None  # (id, version) of the workspace checked
        self.source = SampleSource(self.settings, samples)
        bar = self._controls()
        self.lists = self._lists()
        right = self._detail()
        layout = panel_layout(self)
        layout.addLayout(bar)
        layout.addWidget(split_panes(Qt.Orientation.Horizontal, (self.lists, 3), (right, 2)), 1)
        # the Generation view needs the whole width: the histograms are the table's
        self.lists.currentChanged.connect(lambda i: right.setVisible(i != self.generation_tab))
        self.hub.subscribe(self.render, MODEL, TOPIC)
        self.render(self.hub.workspace)

    def _controls(self) -> QVBoxLayout:
        """Two short rows of controls (the dock must not widen the window: it shares the
        bottom area), then the status line with the progress bar beside it."""
        self.compare_button = QPushButton("Compare with float model\u2026")
        self.compare_button.clicked.connect(self.compare_dialog)
        self.samples = QSpinBox()
        self.samples.setRange(1, 1000)
        self.samples.setValue(self.source.choice.count)
        self.samples.setPrefix("samples: ")
        self.samples.valueChanged.connect(self.source.set_count)
        self.source.changed.connect(self._source_changed)
        self.fallback = QCheckBox("Per-layer fallback")
        self.fallback.setChecked(self.settings.value("quant/fallback", "true") in (True, "true"))
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        self.progress = QProgressBar()
        self.progress.setMinimumWidth(220)  # its text on one line ("37%  op 12 of 64")
        self.progress.hide()
        self.export_button = QPushButton("Export CSV\u2026")
        self.export_button.clicked.connect(self.export_dialog)
        self.export_button.setEnabled(False)
        self.overlay_metric = QComboBox()
        for m in qreport.OVERLAY_METRICS:
            self.overlay_metric.addItem(f"Colour by {m}", m)
        self.overlay_metric.setToolTip("The metric the canvas is coloured by (the toolbar's "
                                       "Colour by \u203a Quantization)")
        saved = self.settings.value("quant/overlay", None) or qreport.OVERLAY_METRICS[0]
        self.overlay_metric.setCurrentIndex(max(self.overlay_metric.findData(saved), 0))
        self.overlay_metric.activated.connect(lambda _i: self._metric_chosen())
        # the combos may shrink (their lists show all): the dock must not widen the window
        for combo in (self.overlay_metric, self.source.combo):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(16)
        # one line, cut in the middle (the tooltip has all of it): a wrapped status line
        # needs more height as the dock narrows, which made the window grow
        self.status = ElidedLabel(NO_MODEL)
        bar = QVBoxLayout()
        self.fix_button = self._fix_button()
        for widgets in ((self.compare_button, self.samples, self.fallback, self.fix_button),
                        (self.source, self.overlay_metric, self.export_button)):
            row = QHBoxLayout()
            for w in widgets:
                row.addWidget(w)
            row.addStretch(1)
            bar.addLayout(row)
        status_row = QHBoxLayout()
        status_row.addWidget(self.status, 1)
        status_row.addWidget(self.progress)
        status_row.addWidget(self.cancel_button)  # beside its progress, not widening a row
        bar.addLayout(status_row)
        self._source_changed(self.source.kind)
        return bar

    def _lists(self) -> QTabWidget:
        """The findings and the tensors as two tabs: each keeps the dock's whole height
        (one above the other, person_detect's findings got two and a half rows)."""
        self.findings_tree = QTreeWidget()
        self.findings_tree.setHeaderLabels(["Severity", "Rule", "Object", "Message"])
        self.findings_tree.setRootIsDecorated(False)
        self.findings_tree.setWordWrap(True)
        header = self.findings_tree.header()
        for c in range(3):
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)  # the message wraps
        self.findings_tree.itemClicked.connect(self._finding_clicked)
        min_rows(self.findings_tree)
        self.table_model = QuantTableModel(self)
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.table_model)
        self.proxy.setSortRole(SORT_ROLE)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().hide()
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.table.addActions([self.keep_float_action, self.override_action])
        self.table.clicked.connect(self._row_clicked)
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._row_clicked(cur))
        min_rows(self.table)
        lists = QTabWidget()
        lists.setDocumentMode(True)
        self.findings_tab = lists.addTab(self.findings_tree, "Spec findings")
        self.tensors_tab = lists.addTab(self.table, "Tensors")
        self.generation = GenerationView(self.hub)
        self.generation.opActivated.connect(self.opActivated)
        self.generation.failed.connect(self.failed)
        self.generation_tab = lists.addTab(self.generation, "Generation")
        lists.setTabToolTip(self.generation_tab, "An LLM pair generating K tokens: where "
                            "the tokens part, the logits' error by step, the ops behind it")
        return lists

    def _fix_button(self) -> QToolButton:
        """"Fix selected" with the table's two actions (also its context menu)."""
        self.keep_float_action = QAction(KEEP_TEXT, self)
        self.keep_float_action.triggered.connect(lambda: self.fix_selected(rq.KEEP_FLOAT))
        self.override_action = QAction(OVERRIDE_TEXT, self)
        self.override_action.triggered.connect(lambda: self.fix_selected(rq.OVERRIDE))
        button = QToolButton()
        button.setText("Fix selected")
        button.setToolTip("Quantize the float model again with LiteRT's quantizer, the ops "
                          "selected in the table kept in float or quantized otherwise")
        button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(button)
        menu.addActions([self.keep_float_action, self.override_action])
        button.setMenu(menu)
        return button

    def _detail(self) -> QWidget:
        """The selected row: float and dequantized histograms overlaid, their difference."""
        self.overlay_hist = OverlayHistogram()
        self.overlay_hist.message = "Select a compared tensor"
        self.error_hist = HistogramWidget()
        self.error_hist.setMinimumHeight(60)
        self.detail = QLabel(NO_ROW)
        self.detail.setWordWrap(True)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.detail)
        rl.addWidget(self.overlay_hist, 1)
        rl.addWidget(self.error_hist, 1)
        return right

    @property
    def metric(self) -> str:
        """The metric the canvas's quantization colours show."""
        return self.overlay_metric.currentData()

    def choose_metric(self, metric: str) -> None:
        """Colour the canvas by ``metric`` (as picked in the combo)."""
        index = self.overlay_metric.findData(metric)
        if index < 0:
            raise ValueError(f"no metric {metric!r} (one of {', '.join(qreport.OVERLAY_METRICS)})")
        self.overlay_metric.setCurrentIndex(index)
        self._metric_chosen()

    def _metric_chosen(self) -> None:
        self.settings.setValue("quant/overlay", self.metric)
        self.metricChosen.emit(self.metric)

    # -- the workspace's state, under the names the dock always had ---------------------
    @property
    def ws(self) -> Workspace:
        return self.hub.workspace

    @property
    def model(self) -> Model | None:
        return self.ws.model

    @model.setter
    def model(self, model: Model | None) -> None:
        self.set_model(model)

    @property
    def path(self) -> Path | None:
        return self.ws.path

    @property
    def findings(self) -> list:
        return list(quant_state(self.ws).findings or [])

    @property
    def report(self):
        return quant_state(self.ws).report

    @property
    def running(self) -> bool:
        return quant_state(self.ws).running

    def set_model(self, model: Model | None, path: Path | None = None) -> None:
        """A dock on its own: show ``model`` in a workspace of its own (in the window, the
        window's hub hands the dock each workspace)."""
        self.hub.replace(Workspace(model, path))

    # -- rendering ----------------------------------------------------------------------
    def render(self, ws: Workspace) -> None:
        """Show ``ws``'s analysis: findings, the report's table, status and progress; start the
        spec check of a model not checked yet."""
        q = quant_state(ws)
        if ws.model is not None and q.findings is None and self._spec_for != (id(ws), ws.version):
            self._spec_for = (id(ws), ws.version)
            SpecCheck(self.hub, ws, lambda w: self.findingsChanged.emit(list(quant_state(w).findings)), self)
        if q.findings is not self._shown_findings:
            self._shown_findings = q.findings
            self._show_findings(q.findings or [])
        if q.report is not self._shown_report:
            self._shown_report = q.report
            self._show_table(q.report)
            self.lists.setCurrentIndex(self.tensors_tab if q.report is not None else self.findings_tab)
            self.reportReady.emit(q.report)
        if ws.model is None:
            self.status.setText(NO_MODEL)
        elif q.status:
            self.status.setText(q.status)
        elif q.findings is None:
            self.status.setText("Checking the quantization spec\u2026")
        self.progress.setVisible(q.running)
        if q.running and q.progress is None:
            self.progress.setRange(0, 0)
        self.cancel_button.setVisible(q.running)
        self.compare_button.setEnabled(ws.model is not None and not q.running)
        can_fix = q.report is not None and not q.running
        for w in (self.fix_button, self.keep_float_action, self.override_action):
            w.setEnabled(can_fix)
        self.export_button.setEnabled(q.report is not None)

    def _show_table(self, report) -> None:
        self.table_model.set_rows(qreport.rows(report) if report is not None else [])
        self.lists.setTabText(self.tensors_tab, f"Tensors ({self.table_model.rowCount()})"
                              if report is not None else "Tensors")
        self.overlay_hist.set_histograms(None, message="Select a compared tensor")
        self.error_hist.set_histogram(None)
        self.detail.setText(NO_ROW)
        self.detail.setToolTip("")
        if report is None:
            return
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # the report's order: worst first
        # the subgraph column only where loop bodies were compared too
        self.table.setColumnHidden(COLUMN_KEYS.index("subgraph"),
                                   all(r.get("subgraph", 0) == 0 for r in self.table_model.rows))
        self.table.resizeColumnsToContents()
        self.table.setColumnWidth(COLUMN_KEYS.index("name"), 220)

    def _show_findings(self, findings: list) -> None:
        self.findings_tree.clear()
        for f in findings:
            obj = f"op #{f.op}" if f.op is not None else f"tensor {f.tensor}"
            if f.subgraph:
                obj = f"subgraph {f.subgraph} {obj}"
            item = QTreeWidgetItem(self.findings_tree, [f.severity, f.rule, obj, f.message])
            item.setForeground(0, SEVERITY_COLOURS.get(f.severity, QColor("#1f2328")))
            item.setToolTip(3, f.message)
            item.setData(0, Qt.ItemDataRole.UserRole, f)
        if not findings:  # the empty state, across the columns
            item = QTreeWidgetItem(self.findings_tree, [
                "No spec findings" if quant_state(self.ws).findings is not None
                else "Checking the quantization spec\u2026"])
            item.setFlags(Qt.ItemFlag.NoItemFlags)
            item.setFirstColumnSpanned(True)
        self.lists.setTabText(self.findings_tab, f"Spec findings ({len(findings)})")

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

    def _source_changed(self, kind: str) -> None:
        one = kind == DEBUGGER
        self.samples.setEnabled(not one)
        self.samples.setToolTip("The debugger session's inputs are one sample" if one else
                                "How many samples (seeded, or the first of the folder / file)")

    def compare(self, float_path: str | Path, samples: int | None = None,
                fallback: bool | None = None) -> None:
        """Compare the open model with ``float_path`` in a worker (progress, Cancel), on
        the samples of the chosen source."""
        ws = self.ws
        if ws.model is None:
            return
        self.cancel()
        q = quant_state(ws)
        if samples is not None:
            self.samples.setValue(samples)  # as typed in the dock: the choice Run Both shares
        try:
            source = self.source.analysis_kwargs()
        except ValueError as exc:
            self.source.refresh()
            q.status = f"The comparison cannot start: {exc}"
            self.hub.changed(TOPIC, ws)
            self.failed.emit(q.status)
            return
        fallback = self.fallback.isChecked() if fallback is None else fallback
        self.settings.setValue("quant/fallback", bool(fallback))
        choice = self.source.choice
        FloatComparison(self.hub, ws, float_path,
                        dict(samples=choice.samples, per_layer_fallback=fallback, **source),
                        choice.source_text(), self._on_progress, self.failed.emit, self)
        q.status = f"Comparing with {Path(float_path).name} on {choice.describe()}\u2026"
        self.hub.changed(TOPIC, ws)

    def selected_rows(self) -> list[dict[str, Any]]:
        """The table's selected rows, in the table's order."""
        indexes = sorted(self.table.selectionModel().selectedRows(), key=lambda i: i.row())
        return [r for r in (self.row_at(i) for i in indexes) if r is not None]

    def fix_selected(self, action: str, ask: Callable[..., rq.Request | None] | None = None) -> bool:
        """Quantize the float model again, the selected rows' ops kept in float
        (``action`` `rq.KEEP_FLOAT`) or quantized with another recipe (`rq.OVERRIDE`), in
        a worker; ``ask(action, tensors, names, base, output)`` gives the request (default:
        the dialog; None: not now).  False, with the reason in the status line, when it
        cannot start (no quantizer, no comparison, no op selected)."""
        ws, q = self.ws, quant_state(self.ws)
        why = "A run is under way: wait for it or cancel it" if q.running else quantizer_missing()
        tensors = ()
        if why is None and (q.report is None or q.float_path is None):
            why = "Compare with the float model first: the table's ops are fixed in it"
        if why is None:
            try:
                tensors = rq.float_tensors(q.report, self.selected_rows())
            except ValueError as exc:
                why = f"Select op outputs in the table: {exc}"
        request = None
        if why is None:
            names = recipes.recipe_names()
            base = rq.guess_base(q.report, names) or str(
                self.settings.value("quant/base_recipe", rq.DEFAULT_BASE))
            suffix = "float_ops" if action == rq.KEEP_FLOAT else "override"
            output = q.float_path.with_name(f"{q.float_path.stem}_{base}_{suffix}.tflite")
            try:
                request = (ask or self._ask)(action, tensors, names, base, output)
            except ValueError as exc:
                why = f"Cannot quantize: {exc}"
        if why is not None:
            q.status = why
            self.hub.changed(TOPIC, ws)
            self.failed.emit(why)
            return False
        if request is None:
            return False
        RequantizeRun(self.hub, ws, request, self._on_progress, self.failed.emit,
                      self.requantized.emit, self)
        self.hub.changed(TOPIC, ws)
        return True

    def _ask(self, action: str, tensors, names: list[str], base: str, output: Path):
        dialog = RequantizeDialog(action, len(tensors), names, base, output, self.settings, self)
        if dialog.exec() != RequantizeDialog.DialogCode.Accepted:
            return None
        choice = self.source.choice
        return dialog.request(quant_state(self.ws).float_path, tensors, choice.samples,
                              self.source.analysis_kwargs())

    def cancel(self) -> None:
        QuantRun.cancel_run(self.hub, self.ws)

    def _on_progress(self, done: int, total: int, message: str) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"%p%  {message}")
        self.progress.setToolTip(message)
        self._progress.changed.emit(done, total, message)

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
        inputs = quant_state(self.ws).inputs
        self.valuesCompared.emit(int(row.get("subgraph", 0)), int(row["tensor"]), deq, flt,
                                 ("dequantized", "float"),
                                 f"Dequantized vs float: {which} of the comparison"
                                 + (f" ({inputs})" if inputs else ""))

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
