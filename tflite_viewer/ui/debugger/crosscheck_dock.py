"""The Cross-check dock: every operator output of a run against LiteRT's.

The comparison is `interpreter.crosscheck.compare_with_litert` (what ``run
--compare-litert`` prints), run on a pool thread with the session's inputs: LiteRT in its
own process (a LiteRT crash is a message), our interpreter fresh on the same inputs.  The
table shows, per op output, the max absolute error, the error relative to the range of
LiteRT's tensor, cosine similarity, SQNR in dB, bit-exactness and the op-isolated error;
the first diverging op is highlighted here and on the canvas, and "Colour by error" tints
every op.  Selecting a row selects the op and shows ours, LiteRT's and the difference,
briefly here and in full in the Tensor inspector's Compare tab (`tensor_comparison`).

A view of the open workspace's ``ws.crosscheck``: the result of the model shown, or what is
said instead (running, failed, the model changed).  A result that arrives after another
model was opened stays with the workspace it was made for, which is gone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QCheckBox, QLabel, QSplitter, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from ...interpreter.crosscheck import (CrossCheckReport, compare_with_litert, litert_available,
                                       real_values)
from ..histogram_widget import HistogramWidget
from ..panels.common import min_rows
from ..state.tensor_stats import histogram
from ..state.workspace import CROSSCHECK, MODEL, CrossCheckState

COLUMNS = ("op", "opcode", "max |error|", "error / range", "cosine", "SQNR dB", "bit-exact",
           "isolated", "status", "tensor")
DIVERGING = QColor("#ffd8d3")
NOT_RUN = "Debug \u203a Cross-check with LiteRT runs LiteRT on the same inputs and compares every op"
NO_ROW = "Select a row: ours, LiteRT's and their difference"


@dataclass
class CrossCheck:
    """A report and the values it compared: ours and LiteRT's, by tensor index."""

    report: CrossCheckReport
    ours: dict[int, np.ndarray]
    model: object = None
    range_errors: dict[int, float] = field(default_factory=dict)


def run_cross_check(model, inputs: dict, signature: str | None,
                    float_sums: str = "auto") -> CrossCheck:
    """Qt-free: our run (with the debugger's float sums) and LiteRT's on ``inputs``,
    compared (runs on a pool thread)."""
    from ...interpreter import Interpreter
    from ...interpreter.inputs import complete_inputs

    arrays, _ = complete_inputs(model, inputs or {}, 0, signature)
    interp = Interpreter(model, float_sums=float_sums)
    interp.invoke(arrays, signature=signature)  # by input name
    from ...edit.expose import expose_op_outputs
    # LiteRT crashing while keeping every tensor: compared on an exposed copy instead
    report = compare_with_litert(model, arrays, signature=signature, interpreter=interp,
                                 expose=expose_op_outputs)
    sg = interp.subgraphs[report.subgraph]
    ours = {r.tensor: np.array(sg.tensors[r.tensor].data) for r in report.rows
            if sg.tensors[r.tensor].data is not None}
    check = CrossCheck(report, ours, model)
    for r in report.rows:
        check.range_errors[r.tensor] = range_error(sg.tensors[r.tensor], ours.get(r.tensor),
                                                   report.litert_tensors.get(r.tensor))
    return check


def range_error(t, ours: np.ndarray | None, ref: np.ndarray | None) -> float:
    """max|ours - LiteRT| / (max - min of LiteRT's), on real (dequantized) values."""
    if ours is None or ref is None or ours.shape != ref.shape or ours.dtype == object:
        return math.nan
    a, b = real_values(t, ours), real_values(t, ref)
    if a.dtype.kind == "c":
        a, b = np.abs(a), np.abs(b)
    with np.errstate(all="ignore"):
        d = np.abs(a - b)
        fb = b[np.isfinite(b)]
        span = float(fb.max() - fb.min()) if fb.size else 0.0
        span = span or (float(np.abs(fb).max()) if fb.size else 0.0)
        err = float(np.nanmax(d)) if d.size else 0.0
    return err / span if span > 0 else (0.0 if err == 0 else math.inf)


def op_errors(check: CrossCheck | None, n_ops: int) -> np.ndarray:
    """A value in [0, 1] per op for the canvas: log-scaled error relative to range (1e-7
    and below: 0, 1e-1 and above: 1); NaN where there is nothing to show."""
    values = np.full(n_ops, np.nan)
    if check is None:
        return values
    for r in check.report.rows:
        e = check.range_errors.get(r.tensor, math.nan)
        if 0 <= r.op < n_ops and not math.isnan(e):
            level = 1.0 if math.isinf(e) else (0.0 if e <= 1e-7 else
                                                min(1.0, (math.log10(e) + 7) / 6))
            values[r.op] = max(level, 0.0 if math.isnan(values[r.op]) else values[r.op])
    return values


def _fmt(x: float | None, spec: str = ".3g") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return format(x, spec)


class CrossCheckDock(QWidget):
    """The table and the selected row's comparison."""

    opActivated = Signal(int, int)       # subgraph, op
    #: subgraph, tensor, ours, LiteRT's, title: a row's output for the tensor inspector
    tensorCompared = Signal(int, int, object, object, str)
    colourToggled = Signal(bool)

    def __init__(self, hub=None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.check: CrossCheck | None = None
        self.header = QLabel(NOT_RUN)
        self.header.setWordWrap(True)
        self.colour = QCheckBox("Colour by error")
        self.colour.toggled.connect(self.colourToggled)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.currentCellChanged.connect(lambda row, *_: self.select_row(row))
        min_rows(self.table, 8)
        self.detail = QLabel(NO_ROW)
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.diff_histogram = HistogramWidget()
        self.diff_histogram.setMinimumHeight(80)
        side = QWidget()
        bl = QVBoxLayout(side)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.detail)
        bl.addWidget(self.diff_histogram, 1)
        # side by side: the table keeps its height (a detail pane below it left one row)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.table)
        split.addWidget(side)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.header)
        layout.addWidget(self.colour)
        layout.addWidget(split, 1)
        if hub is not None:
            hub.subscribe(self.render, MODEL, CROSSCHECK)

    def render(self, ws) -> None:
        """The workspace's cross-check: its table, or the message saying why there is none
        (and no table or detail of another model's)."""
        state = ws.crosscheck
        if state.result is not None and not state.running:
            if state.result is not self.check:
                self.show_check(state.result)
            return
        self.clear()
        self.header.setText(state.message or NOT_RUN)

    def clear(self) -> None:
        self.check = None
        self.table.setRowCount(0)
        self._clear_detail()

    def _clear_detail(self) -> None:
        self.detail.setText(NO_ROW)
        self.diff_histogram.set_histogram(None, message="No row selected")

    def show_message(self, text: str) -> None:
        self.header.setText(text)

    def show_check(self, check: CrossCheck) -> None:
        self.check = check
        self._clear_detail()  # it described a row of the previous result
        rep = check.report
        summary = rep.summary()
        self.header.setText(summary[:1].upper() + summary[1:])
        self.table.setRowCount(len(rep.rows))
        first = rep.first_divergence
        for k, r in enumerate(rep.rows):
            cells = [str(r.op), r.opcode, _fmt(r.max_abs),
                     _fmt(check.range_errors.get(r.tensor)), _fmt(r.cosine, ".6f"),
                     _fmt(r.sqnr_db, ".1f"), "-" if r.exact is None else ("yes" if r.exact else "no"),
                     r.isolated_text(), ("ok" if r.ok else "DIVERGES") + (f" ({r.note})" if r.note else ""),
                     f"t{r.tensor} {r.name}"]
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c in (0, 2, 3, 4, 5):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if r is first:
                    item.setBackground(DIVERGING)
                self.table.setItem(k, c, item)
        self.table.resizeColumnsToContents()

    def cell(self, row: int, column: str) -> str:
        return self.table.item(row, COLUMNS.index(column)).text()

    def op_errors(self, n_ops: int) -> np.ndarray:
        """`op_errors` of the result shown."""
        return op_errors(self.check, n_ops)

    def select_row(self, row: int) -> None:
        if self.check is None or not 0 <= row < len(self.check.report.rows):
            return
        r = self.check.report.rows[row]
        ours = self.check.ours.get(r.tensor)
        ref = self.check.report.litert_tensors.get(r.tensor)
        lines = [f"op {r.op} {r.opcode}, output {r.output}: t{r.tensor} {r.name}"]
        for label, a in (("ours", ours), ("LiteRT", ref)):
            lines.append(f"{label}: " + ("no value" if a is None else
                                         f"{a.dtype.name}{list(a.shape)} min {_fmt(float(np.min(a)))} "
                                         f"max {_fmt(float(np.max(a)))} mean {_fmt(float(np.mean(a)))}"
                                         if a.size and a.dtype.kind in "biuf" else f"{a.dtype}"))
        if ours is not None and ref is not None and ours.shape == ref.shape \
                and ours.dtype.kind in "biuf" and ref.dtype.kind in "biuf":
            diff = ours.astype(np.float64) - ref.astype(np.float64)
            lines.append(f"ours \u2212 LiteRT (stored values): min {_fmt(float(diff.min()))} "
                         f"max {_fmt(float(diff.max()))}, {int(np.count_nonzero(diff)):,} of "
                         f"{diff.size:,} differ")
            self.diff_histogram.set_histogram(histogram(diff), caption="ours \u2212 LiteRT")
        else:
            self.diff_histogram.set_histogram(None, message="No difference to show")
        self.detail.setText("\n".join(lines))
        self.opActivated.emit(r.subgraph, r.op)
        if ours is not None and ref is not None and ours.dtype.kind in "biufc" \
                and ref.dtype.kind in "biufc":
            self.tensorCompared.emit(r.subgraph, r.tensor, ours, ref,
                                     f"Ours vs LiteRT (stored values): output {r.output} of "
                                     f"op {r.op} {r.opcode}, cross-check run")


def start_cross_check(controller) -> None:
    """Debug > Cross-check with LiteRT: run it on a pool thread for the open workspace,
    show the dock."""
    from ..workers import Task

    ws = controller.hub.workspace
    dock = ensure_dock(controller)
    dock.show()
    dock.raise_()
    if ws.model is None:
        return
    if not litert_available():
        ws.crosscheck = CrossCheckState(message=(
            "LiteRT is not installed: the cross-check needs the ai-edge-litert package "
            "(pip install 'tflite-viewer[litert]')."))
        controller.hub.changed(CROSSCHECK, ws)
        return
    ws.crosscheck = CrossCheckState(message="Running LiteRT and the interpreter on the same "
                                            "inputs\u2026", running=True)
    controller.hub.changed(CROSSCHECK, ws)
    inputs, signature = controller.run_inputs()  # a generation run: the call paused in
    task = Task(run_cross_check, ws.model, inputs, signature, controller.float_sums())
    run = _Run(controller, ws, ws.model, dock)
    task.signals.finished.connect(run.done)
    task.signals.failed.connect(run.failed)
    controller._cross_task = task  # keep its signal object alive
    task.start()


class _Run(QObject):
    """One cross-check's receiver, a child of the dock: a result that arrives after the
    window is gone is dropped by Qt (a lambda holding the controller would run on deleted
    widgets)."""

    def __init__(self, controller, ws, model, parent: QObject) -> None:
        super().__init__(parent)
        self.controller, self.ws, self.model = controller, ws, model

    def done(self, _serial: int, check: CrossCheck) -> None:
        self.deleteLater()
        if self.ws.model is not self.model:  # edited meanwhile: the result is of another model
            self.ws.crosscheck = CrossCheckState(
                message="The model changed during the cross-check: run it again.")
            self.controller.hub.changed(CROSSCHECK, self.ws)
            return
        show_cross_check(self.controller, check, self.ws)

    def failed(self, _serial: int, exc: BaseException) -> None:
        self.deleteLater()
        self.ws.crosscheck = CrossCheckState(message=f"Cross-check failed: {exc}")
        if self.controller.hub.changed(CROSSCHECK, self.ws):
            w = self.controller.window
            w.errors.report("Cross-check with LiteRT", str(exc), parent=w)


def show_cross_check(controller, check: CrossCheck, ws=None) -> None:
    """Keep ``check`` in its workspace (the open one by default) and, if that is still the
    open one, show it and select the first diverging op."""
    ensure_dock(controller)
    ws = ws or controller.hub.workspace
    ws.crosscheck = CrossCheckState(result=check)
    if not controller.hub.changed(CROSSCHECK, ws):
        return
    controller.crossCheckDone.emit(check)
    first = check.report.first_divergence
    if first is not None:
        controller.show_op(first.subgraph, first.op)


def ensure_dock(controller):
    """The dock, made on first use."""
    if getattr(controller, "crosscheck_dock", None) is None:
        panel = CrossCheckDock(controller.hub)
        controller.crosscheck_panel = panel
        controller.crosscheck_dock = controller._dock("Cross-check", panel, "crosscheck")
        controller.window.tabifyDockWidget(controller.profile_dock, controller.crosscheck_dock)
        panel.opActivated.connect(controller.show_op)
        panel.tensorCompared.connect(lambda *args: show_in_inspector(controller, *args))
        panel.colourToggled.connect(controller._set_error_colours)
        panel.render(controller.hub.workspace)
    return controller.crosscheck_dock


def show_in_inspector(controller, subgraph: int, tensor: int, ours: np.ndarray,
                      ref: np.ndarray, title: str) -> None:
    """The Tensor inspector shows the row's output tensor and, in its Compare tab, ours
    against LiteRT's with their difference (the op is selected on the canvas already)."""
    w = controller.window
    if w.model is None or subgraph != w.subgraph:
        return
    panel = w.tensor_panel
    panel.show_tensor(w.model.subgraphs[subgraph].tensors[tensor])
    panel.show_comparison(ours, ref, ("ours", "LiteRT"), title, tensor=(subgraph, tensor))
    w.tensor_dock.raise_()
