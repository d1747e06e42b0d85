"""The Quantization dock's Generation view: the open quantized decoder and its float
original generate K tokens from a prompt, both measured at every step
(`quant.generation.analyze_generation`, on a pool thread with progress and Cancel).

A view of the open workspace's `state.generation` part: per decode step each model's
token, the logits' SQNR and KL, whether the top-1 agrees and the worst op (a table), a
chart of logits SQNR by step, a steps x layers heat map of each layer's worst op output SQNR and the
chosen step's ops worst first.  The step slider, a table row, a chart point or a heat-map
row choose the step; a heat-map cell or a worst op selects that op on the canvas
(``opActivated``).  The float model is the one the dock compares with.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QObject, QSize, Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QHBoxLayout, QHeaderView, QLabel,
                               QLineEdit, QListWidget, QListWidgetItem, QProgressBar,
                               QPushButton, QSlider, QSpinBox, QTableWidget, QTableWidgetItem,
                               QVBoxLayout, QWidget)

from ...quant import generation as qgen
from ..state.generation import (COLUMNS, TOPIC, GenerationState, Layers, by_layer,
                                generation_state, op_label, step_rows, summary)
from ..state.quant import quant_state
from ..state.workspace import MODEL, Hub, Workspace
from .common import ElidedLabel, min_rows, split_panes
from .quant_charts import HeatMap, LogitsChart
from .quant_fix import PROGRESS_EVERY
from .quant_runs import QuantRun

NO_FLOAT = ("Choose the float model first (Compare with float model\u2026): the "
            "generation runs both")
#: the view's least height: what the Tensors tab beside it needs (5 rows and a header)
MIN_HEIGHT = 150



def _output_name(model: Any, subgraph: int, op: int) -> str:
    """The name of an op's first output tensor (where litert-torch writes its layer)."""
    sg = model.subgraphs[subgraph]
    outs = [t for t in sg.operators[op].outputs if t >= 0]
    return sg.tensors[outs[0]].name if outs else ""

class GenerationRun(QuantRun):
    """One generation analysis of ``ws``'s model against ``float_path``; writes its result
    into that workspace's part and tells the hub (dropped when another model is open)."""

    part_of = staticmethod(generation_state)
    topic = TOPIC
    failed_status = "The generation analysis failed"

    def __init__(self, hub: Hub, ws: Workspace, float_path: Path, prompt: str, steps: int,
                 teacher_forcing: bool, on_failed: Callable[[str], None], parent: QObject) -> None:
        super().__init__(hub, ws, lambda *_: hub.changed(TOPIC, ws), on_failed, parent)
        g = generation_state(ws)
        g.analysis = None
        g.status = f"Generating {steps} steps with both models\u2026"
        ticks = _Ticks(self.progressed.emit)
        model, cancel = ws.model, self.cancel

        def work():
            # no time limit per call: a large decoder's prefill takes minutes, and the
            # user has Cancel
            return qgen.analyze_generation(model, float_path, prompt, steps,
                                           teacher_forcing=teacher_forcing, timeout=None,
                                           progress=ticks.call, op_progress=ticks.op,
                                           cancel=cancel.is_set)
        self._start(work)

    def _succeeded(self, g: GenerationState, analysis) -> None:
        g.analysis, g.step, g.status = analysis, 0, summary(analysis)
        self.hub.changed(TOPIC, self.ws)


class _Ticks:
    """The analysis's two progress hooks as one bar in thousandths: a call's share, and
    how far its ops went; at most one update per `PROGRESS_EVERY` seconds from the ops."""

    def __init__(self, emit: Callable[[int, int, str], None]) -> None:
        self.emit, self.calls, self.done, self.label, self.last = emit, 1, 0, "", 0.0

    def call(self, done: int, total: int, message: str) -> None:
        self.calls, self.done, self.label = max(total, 1), done, message
        self.emit(1000 * done // self.calls, 1000, message)

    def op(self, done: int, total: int, message: str) -> None:
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY:
            return
        self.last = now
        share = (self.done + done / max(total, 1)) / self.calls
        self.emit(int(1000 * share), 1000, f"{self.label}; {message}")


class GenerationView(QWidget):
    """See the module docstring."""

    opActivated = Signal(int, int)
    failed = Signal(str)

    def __init__(self, hub: Hub, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self._shown = None
        self._settings_of: Workspace | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self._controls())
        layout.addWidget(self._panes(), 1)
        self.hub.subscribe(self.render, MODEL, TOPIC, "quant/report")
        self.render(self.hub.workspace)

    def _controls(self) -> QVBoxLayout:
        self.prompt = QLineEdit()
        self.prompt.setPlaceholderText("prompt token ids: 5 17 42")
        self.prompt.setToolTip("The prompt's token ids, separated by spaces or commas")
        self.steps = QSpinBox()
        self.steps.setRange(1, 4096)
        self.steps.setPrefix("steps: ")
        self.teacher = QCheckBox("Teacher forcing")
        self.teacher.setToolTip("Feed both models the float model's tokens, so the steps "
                                "stay comparable after the first divergence")
        self.run_button = QPushButton("Generate")
        self.run_button.clicked.connect(lambda: self.start())  # not its `checked`
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(120)
        self.status = ElidedLabel(NO_FLOAT)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.valueChanged.connect(self.choose_step)
        self.step_label = QLabel("")
        top, bottom = QHBoxLayout(), QHBoxLayout()
        top.addWidget(QLabel("Prompt"))
        for w, stretch in ((self.prompt, 1), (self.steps, 0), (self.teacher, 0),
                           (self.run_button, 0)):
            top.addWidget(w, stretch)
        # one row for the status and the step (the dock is short at 1024x700)
        for w, stretch in ((self.status, 4), (self.progress, 0), (self.cancel_button, 0),
                           (self.step_label, 0), (self.slider, 1)):
            bottom.addWidget(w, stretch)
        box = QVBoxLayout()
        for row in (top, bottom):
            box.addLayout(row)
        return box

    def _panes(self) -> QWidget:
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.currentCellChanged.connect(lambda row, *_: row >= 0 and self.choose_step(row))
        min_rows(self.table, 3)
        self.chart = LogitsChart()
        self.chart.stepClicked.connect(self.choose_step)
        self.heat = HeatMap()
        self.layers: Layers | None = None  # the heat map's columns
        self.heat.stepClicked.connect(self.choose_step)
        self.heat.cellClicked.connect(self._cell_clicked)
        pictures = QWidget()
        pl = QVBoxLayout(pictures)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.addWidget(self.chart, 1)
        pl.addWidget(self.heat, 1)
        self.worst = QListWidget()
        self.worst.setToolTip("The chosen step's ops, worst output SQNR first: click one to "
                              "select it on the canvas")
        self.worst.itemClicked.connect(self._worst_clicked)
        return split_panes(Qt.Orientation.Horizontal, (self.table, 3), (pictures, 3),
                           (self.worst, 2))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        """No taller than the Tensors tab asks: a tab of the dock must not take the
        canvas's room at 1024x700 (its panes shrink instead)."""
        hint = super().minimumSizeHint()
        return QSize(hint.width(), min(hint.height(), MIN_HEIGHT))

    # -- rendering -------------------------------------------------------------------------
    @property
    def ws(self) -> Workspace:
        return self.hub.workspace

    def render(self, ws: Workspace) -> None:
        g, q = generation_state(ws), quant_state(ws)
        if ws is not self._settings_of:  # another model: its own prompt and settings
            self._settings_of = ws
            self.prompt.setText(g.prompt)
            self.steps.setValue(g.steps)
            self.teacher.setChecked(g.teacher_forcing)
        can = ws.model is not None and q.float_path is not None and not g.running
        self.run_button.setEnabled(can)
        self.run_button.setToolTip("" if q.float_path is None else
                                   f"Both models generate: this one and {q.float_path.name}")
        self.progress.setVisible(g.running)
        self.cancel_button.setVisible(g.running)
        if g.running:
            done, total, message = g.progress or (0, 0, "")
            self.progress.setRange(0, total)
            self.progress.setValue(done)
            self.progress.setToolTip(message)
        if q.float_path is None and not g.running:
            self.status.setText(NO_FLOAT)
        elif g.running and g.progress:
            self.status.setText(f"{g.status} {g.progress[2]}")
        elif g.status:
            self.status.setText(g.status)
        else:
            self.status.setText(f"Generate from a prompt with this model and "
                                f"{q.float_path.name}, both measured at every step")
        if g.analysis is not self._shown:
            self._shown = g.analysis
            self._show(g.analysis)
        if g.analysis is not None:
            self._show_step(g.step)

    def _show(self, analysis) -> None:
        rows = step_rows(analysis) if analysis is not None else []
        self.table.setRowCount(len(rows))
        for r, cells in enumerate(rows):
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c < 6:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if c == 3 and text != "yes":
                    item.setForeground(Qt.GlobalColor.red)
                self.table.setItem(r, c, item)
        self.slider.setRange(0, max(len(rows) - 1, 0))
        self.slider.setVisible(bool(rows))
        if analysis is None:
            self.chart.set_values([], [])
            self.heat.set_matrix([[]], [])
            self.worst.clear()
            self.step_label.setText("")
            return
        self.chart.set_values(analysis.logits_sqnr, [s.top1_agrees for s in analysis.steps])
        self.layers = by_layer(analysis.sqnr, [_output_name(self.ws.model, s, o)
                                               for s, o in analysis.ops],
                               [f"{s}/{o} {name}" for (s, o), name
                                in zip(analysis.ops, analysis.opcodes)])
        self.heat.set_matrix(self.layers.matrix, self.layers.labels)

    def _show_step(self, step: int) -> None:
        analysis = generation_state(self.ws).analysis
        if analysis is None or not analysis.steps:
            return
        step = min(max(step, 0), len(analysis.steps) - 1)
        s = analysis.steps[step]
        for w in (self.slider, self.table):
            w.blockSignals(True)
        self.slider.setValue(step)
        self.table.selectRow(step)
        for w in (self.slider, self.table):
            w.blockSignals(False)
        self.chart.set_step(step)
        self.heat.set_step(step)
        agree = "agree" if s.top1_agrees else "DIFFER"
        self.step_label.setText(f"step {step}: {s.float_token} / {s.quantized_token} ({agree})")
        self.step_label.setToolTip(f"Decode step {step}: the float model's token "
                                   f"{s.float_token}, the quantized model's {s.quantized_token}")
        self.worst.clear()
        for op in s.worst_ops:
            item = QListWidgetItem(op_label(op))
            item.setToolTip(op.tensor)
            item.setData(Qt.ItemDataRole.UserRole, (op.subgraph, op.op))
            self.worst.addItem(item)

    # -- actions ---------------------------------------------------------------------------
    def choose_step(self, step: int) -> None:
        g = generation_state(self.ws)
        if g.analysis is None:
            return
        g.step = min(max(int(step), 0), max(len(g.analysis.steps) - 1, 0))
        self._show_step(g.step)

    def _cell_clicked(self, step: int, column: int) -> None:
        """A cell selects the op that makes its layer worst at its step."""
        analysis, layers = generation_state(self.ws).analysis, self.layers
        if analysis is None or layers is None or column >= layers.worst.shape[1]:
            return
        op = int(layers.worst[step, column])
        if 0 <= op < len(analysis.ops):
            self.opActivated.emit(*analysis.ops[op])

    def _worst_clicked(self, item: QListWidgetItem) -> None:
        key = item.data(Qt.ItemDataRole.UserRole)
        if key is not None:
            self.opActivated.emit(*key)

    def start(self, prompt: str | None = None, steps: int | None = None,
              teacher_forcing: bool | None = None) -> None:
        """Run the generation analysis of the open model against the dock's float model
        (arguments: as typed in the view when left out)."""
        ws, g, q = self.ws, generation_state(self.ws), quant_state(self.ws)
        if ws.model is None or g.running:
            return
        if q.float_path is None:
            g.status = NO_FLOAT
            self.hub.changed(TOPIC, ws)
            return
        g.prompt = self.prompt.text() if prompt is None else prompt
        g.steps = self.steps.value() if steps is None else steps
        g.teacher_forcing = self.teacher.isChecked() if teacher_forcing is None else teacher_forcing
        self.prompt.setText(g.prompt)  # what runs is what the view says
        self.steps.setValue(g.steps)
        self.teacher.setChecked(g.teacher_forcing)
        GenerationRun(self.hub, ws, q.float_path, g.prompt, g.steps, g.teacher_forcing,
                      self.failed.emit, self)
        self.hub.changed(TOPIC, ws)

    def cancel(self) -> None:
        GenerationRun.cancel_run(self.hub, self.ws)
