"""The Cross-check dock: every operator output of a run against LiteRT's.

The comparison is `interpreter.crosscheck.compare_with_litert` (what ``run
--compare-litert`` prints), run on a pool thread with the session's inputs: LiteRT in its
own process (a LiteRT crash is a message), our interpreter fresh on the same inputs.  The
table shows, per op output, the max absolute error, the error relative to the range of
LiteRT's tensor, cosine similarity, SQNR in dB, bit-exactness and the op-isolated error;
the first diverging op is highlighted here and on the canvas, and "Colour by error" tints
every op.  Selecting a row selects the op and shows ours, LiteRT's and the difference,
briefly here and in full in the Tensor inspector's Compare tab (`tensor_comparison`).

A view of the open workspace's cross-check part (`state.crosscheck`): the result of the
model shown and the inputs it ran on, or what is said instead (running, failed, the model
changed).  A result that arrives after another model was opened stays with the workspace
it was made for, which is gone.  "Colour by error" is the LiteRT error overlay
(`state.overlays.ErrorOverlay`), as the toolbar's selector chooses it.
"""
from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QCheckBox, QLabel, QSplitter, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from ...interpreter.crosscheck import litert_available
from ..histogram_widget import HistogramWidget
from ..panels.common import min_rows
from ..state.crosscheck import (TOPIC, CrossCheck, CrossCheckState, crosscheck_state,
                                run_cross_check)
from ..state.docks import BOTTOM, DockSpec
from ..state.tensor_stats import histogram
from ..state.workspace import MODEL

DOCK = DockSpec("crosscheck", "Cross-check", BOTTOM, part="crosscheck", overlay="error")
#: the columns: where, then the measures read first (in view without scrolling), the tensor
COLUMNS = ("op", "opcode", "SQNR dB", "cosine", "max |error|", "error / range", "bit-exact",
           "isolated", "status", "tensor")
DIVERGING = QColor("#ffd8d3")
NOT_RUN = "Debug \u203a Cross-check with LiteRT runs LiteRT on the same inputs and compares every op"
NO_ROW = "Select a row: ours, LiteRT's and their difference"


def _fmt(x: float | None, spec: str = ".3g") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return format(x, spec)


class CrossCheckDock(QWidget):
    """The table and the selected row's comparison."""

    opActivated = Signal(int, int)       # subgraph, op
    #: subgraph, tensor, ours, LiteRT's, labels, title: a row's output for the Tensor panel
    valuesCompared = Signal(int, int, object, object, object, str)
    overlayToggled = Signal(bool)

    def __init__(self, hub=None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.check: CrossCheck | None = None
        self.header = QLabel(NOT_RUN)
        self.header.setWordWrap(True)
        self.colour = QCheckBox("Colour by error")
        self.colour.toggled.connect(self.overlayToggled)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.currentCellChanged.connect(lambda row, *_: self.select_row(row))
        min_rows(self.table)
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
            hub.subscribe(self.render, MODEL, TOPIC)

    def render(self, ws) -> None:
        """The workspace's cross-check: its table, or the message saying why there is none
        (and no table or detail of another model's)."""
        state = crosscheck_state(ws)
        if state.result is not None and not state.running:
            if state.result is not self.check:
                self.show_check(state.result, state.inputs)
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

    def show_overlay(self, on: bool) -> None:
        """Whether the canvas shows the errors (the toolbar may have chosen)."""
        self.colour.blockSignals(True)
        self.colour.setChecked(on)
        self.colour.blockSignals(False)

    def show_check(self, check: CrossCheck, inputs: str = "") -> None:
        self.check = check
        self._clear_detail()  # it described a row of the previous result
        rep = check.report
        summary = rep.summary()
        self.header.setText(summary[:1].upper() + summary[1:]
                            + (f" \u2014 on {inputs}" if inputs else ""))
        self.table.setRowCount(len(rep.rows))
        first = rep.first_divergence
        for k, r in enumerate(rep.rows):
            cells = [str(r.op), r.opcode, _fmt(r.sqnr_db, ".1f"), _fmt(r.cosine, ".6f"),
                     _fmt(r.max_abs), _fmt(check.range_errors.get(r.tensor)),
                     "-" if r.exact is None else ("yes" if r.exact else "no"),
                     r.isolated_text(), ("ok" if r.ok else "DIVERGES") + (f" ({r.note})" if r.note else ""),
                     f"t{r.tensor} {r.name}"]
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c in (0, 2, 3, 4, 5):  # the numbers
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if r is first:
                    item.setBackground(DIVERGING)
                self.table.setItem(k, c, item)
        self.table.resizeColumnsToContents()

    def cell(self, row: int, column: str) -> str:
        return self.table.item(row, COLUMNS.index(column)).text()

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
            self.valuesCompared.emit(r.subgraph, r.tensor, ours, ref, ("ours", "LiteRT"),
                                     f"Ours vs LiteRT (stored values): output {r.output} of "
                                     f"op {r.op} {r.opcode}, cross-check run")


def start_cross_check(controller) -> None:
    """Debug > Cross-check with LiteRT: run it on a pool thread for the open workspace, on
    the debugger's inputs (the chosen ones, the rest seeded), and show the dock."""
    from ..workers import Task

    ws = controller.hub.workspace
    controller.window.docks.bring_forward(DOCK.id)
    if ws.model is None:
        return
    if not litert_available():
        ws.set_part("crosscheck", CrossCheckState(message=(
            "LiteRT is not installed: the cross-check needs the ai-edge-litert package "
            "(pip install 'tflite-viewer[litert]').")))
        controller.hub.changed(TOPIC, ws)
        return
    inputs, signature = controller.run_inputs()  # a generation run: the call paused in
    described = controller.describe_inputs()
    ws.set_part("crosscheck", CrossCheckState(
        message=f"Running LiteRT and the interpreter on {described}\u2026", running=True,
        inputs=described))
    controller.hub.changed(TOPIC, ws)
    task = Task(run_cross_check, ws.model, inputs, signature, controller.float_sums())
    run = _Run(controller, ws, ws.model, controller.window.panel(DOCK.id))
    task.signals.finished.connect(run.done)
    task.signals.failed.connect(run.failed)
    controller.cross_task = task  # keep its signal object alive
    task.start()


class _Run(QObject):
    """One cross-check's receiver, a child of the dock: a result that arrives after the
    window is gone is dropped by Qt (a lambda holding the controller would run on deleted
    widgets)."""

    def __init__(self, controller, ws, model, parent: QObject) -> None:
        super().__init__(parent)
        self.controller, self.ws, self.model = controller, ws, model
        self.inputs = crosscheck_state(ws).inputs

    def done(self, _serial: int, check: CrossCheck) -> None:
        self.deleteLater()
        if self.ws.model is not self.model:  # edited meanwhile: the result is of another model
            self.ws.set_part("crosscheck", CrossCheckState(
                message="The model changed during the cross-check: run it again."))
            self.controller.hub.changed(TOPIC, self.ws)
            return
        show_cross_check(self.controller, check, self.ws, self.inputs)

    def failed(self, _serial: int, exc: BaseException) -> None:
        self.deleteLater()
        self.ws.set_part("crosscheck", CrossCheckState(message=f"Cross-check failed: {exc}"))
        if self.controller.hub.changed(TOPIC, self.ws):
            w = self.controller.window
            w.errors.report("Cross-check with LiteRT", str(exc), parent=w)


def show_cross_check(controller, check: CrossCheck, ws=None, inputs: str = "") -> None:
    """Keep ``check`` in its workspace (the open one by default) and, if that is still the
    open one, show it and select the first diverging op."""
    ws = ws or controller.hub.workspace
    ws.set_part("crosscheck", CrossCheckState(result=check, inputs=inputs))
    if not controller.hub.changed(TOPIC, ws):
        return
    controller.crossCheckDone.emit(check)
    first = check.report.first_divergence
    if first is not None:
        controller.window.show_op(first.subgraph, first.op)
