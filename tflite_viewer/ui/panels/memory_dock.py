"""The Memory dock: will the model fit?  The arena TFLite Micro (or LiteRT) plans for the
open model, drawn as a lifetime chart (every tensor and scratch buffer a box from its first
to its last step, at its offset in the arena), the peak marked, the tensors live there
listed largest first.  Clicking a box or a row selects that tensor on the canvas.

A view of the open workspace (`ui.state.workspace`): the plans live in
``ws.part("memory", MemoryState)``, made when the dock is shown (on a pool thread for large
models) and dropped with the model, so another model or an edit never shows a stale plan.
Its overlay (`state.overlays.MemoryOverlay`) colours the operators by the bytes live at
their step; the checkbox here turns it on or off, as the toolbar's selector does.
"""
from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, QSettings, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QMouseEvent, QPainter, QPen
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QLabel, QSplitter,
                               QToolTip, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from ..state.memory import SYNC_OPS, TARGETS, MemoryChart, MemoryState, make_plan
from ..workers import Task
from ..state.docks import BOTTOM, DockSpec
from ..state.workspace import MODEL, NAVIGATION, SELECTION

TOPIC = "memory/plan"
DOCK = DockSpec("memory", "Memory", BOTTOM, part="memory", overlay="memory",
                shortcut="Ctrl+Shift+M")
PALETTE = [QColor(c) for c in ("#54aeff", "#4ac26b", "#d4a72c", "#fb8f44", "#c297ff",
                               "#ff8182", "#6cb6ff", "#2da44e", "#bf8700", "#e16f24")]
SCRATCH = QColor("#8c959f")
PEAK = QColor("#cf222e")
SELECTED = QColor("#0969da")
LEFT, BOTTOM, TOP, RIGHT = 64, 22, 18, 10  # LEFT: the least; the height's label may need more


def _bytes(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):,.2f} GiB"
    return f"{n:,} B" if n < 10_000 else (f"{n / 1024:,.1f} KiB" if n < 10 << 20
                                          else f"{n / (1 << 20):,.2f} MiB")


class MemoryChartWidget(QWidget):
    """Steps across, arena offsets up; emits `boxClicked` with the box's index."""

    boxClicked = Signal(int)

    def __init__(self) -> None:
        super().__init__()
        self.chart: MemoryChart | None = None
        self.selected: list[int] = []
        self._left_edge = LEFT
        self.setMouseTracking(True)
        self.setMinimumSize(320, 160)

    def set_chart(self, chart: MemoryChart | None) -> None:
        self.chart, self.selected = chart, []
        self._left_edge = self._label_room()
        self.update()

    def select(self, boxes: list[int]) -> None:
        self.selected = boxes
        self.update()

    # geometry: step s spans [x(s), x(s + 1)); byte b sits at y(b), 0 at the bottom
    def _label_room(self) -> int:
        """The plot's left edge: room for the arena height's label, whatever its width
        (a fixed margin cut "1,353.75 MiB" to "53.75 MiB"); set with each chart."""
        label = _bytes(self.chart.height) if self.chart is not None else ""
        return max(LEFT, self.fontMetrics().horizontalAdvance(label) + 12)

    def _left(self) -> int:
        return self._left_edge

    def _scale(self) -> tuple[float, float, float]:
        c = self.chart
        steps = max(len(c.steps) - c.first_step, 1)
        w = max(self.width() - self._left() - RIGHT, 1)
        h = max(self.height() - TOP - BOTTOM, 1)
        return w / steps, h / max(c.height, 1), float(c.first_step)

    def _x(self, step: float) -> float:
        sx, _sy, first = self._scale()
        return self._left() + (step - first) * sx

    def _y(self, byte: float) -> float:
        _sx, sy, _first = self._scale()
        return self.height() - BOTTOM - byte * sy

    def box_at(self, pos: QPointF) -> int | None:
        if self.chart is None or not len(self.chart):
            return None
        sx, sy, first = self._scale()
        step = (pos.x() - self._left()) / sx + first
        byte = (self.height() - BOTTOM - pos.y()) / sy
        return self.chart.hit(step, byte)

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("#ffffff"))
        c = self.chart
        if c is None or not len(c):
            p.setPen(QColor("#57606a"))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter,
                       "no arena: nothing to plan" if c is not None else "")
            return
        top, bottom, left = self._y(c.height), self._y(0), self._left()
        p.setPen(QPen(QColor("#d0d7de"), 1))
        p.drawRect(QRectF(left, top, self._x(len(c.steps)) - left, bottom - top))
        groups: dict[int, list[QRectF]] = {}
        for i in range(len(c)):
            rect = QRectF(QPointF(self._x(c.x0[i]), self._y(c.y1[i])),
                          QPointF(self._x(c.x1[i] + 1), self._y(c.y0[i])))
            groups.setdefault(-1 if c.tensor[i] < 0 else int(c.tensor[i]) % len(PALETTE),
                              []).append(rect)
        for key, rects in groups.items():
            colour = SCRATCH if key < 0 else PALETTE[key]
            p.setBrush(QBrush(colour))
            p.setPen(QPen(colour.darker(130), 0.6))
            p.drawRects(rects)
        for i in self.selected:
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.setPen(QPen(SELECTED, 2.5))
            p.drawRect(QRectF(QPointF(self._x(c.x0[i]), self._y(c.y1[i])),
                              QPointF(self._x(c.x1[i] + 1), self._y(c.y0[i]))))
        metrics = p.fontMetrics()
        if c.peak_step is not None:
            x = self._x(c.peak_step + 0.5)
            p.setPen(QPen(PEAK, 1.5, Qt.PenStyle.DashLine))
            p.drawLine(QPointF(x, top - 4), QPointF(x, bottom))
            label = f"peak: step {c.peak_step}"
            p.drawText(QPointF(min(x + 4, self.width() - metrics.horizontalAdvance(label) - 4),
                               top - 5), label)
        p.setPen(QColor("#57606a"))
        p.drawText(QRectF(0, top - 8, left - 6, 16), Qt.AlignmentFlag.AlignRight, _bytes(c.height))
        p.drawText(QRectF(0, bottom - 8, left - 6, 16), Qt.AlignmentFlag.AlignRight, "0")
        p.drawText(QRectF(left, bottom + 3, 200, 16), Qt.AlignmentFlag.AlignLeft,
                   f"step {c.first_step}")
        last = f"step {len(c.steps) - 1}"
        p.drawText(QRectF(self.width() - RIGHT - 200, bottom + 3, 200, 16),
                   Qt.AlignmentFlag.AlignRight, last)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        i = self.box_at(event.position())
        if i is None:
            QToolTip.hideText()
        else:
            QToolTip.showText(event.globalPosition().toPoint(), self.chart.label(i), self)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt API
        i = self.box_at(event.position())
        if i is not None and event.button() == Qt.MouseButton.LeftButton:
            self.boxClicked.emit(i)


class MemoryDock(QWidget):
    """The dock's widget (see the module docstring)."""

    tensorActivated = Signal(int, int)  # subgraph, tensor
    opActivated = Signal(int, int)      # subgraph, operator
    overlayToggled = Signal(bool)

    def __init__(self, settings: QSettings, hub) -> None:
        super().__init__()
        self.settings, self.hub = settings, hub
        self.target = QComboBox()
        for key, name in TARGETS.items():
            self.target.addItem(name, key)
        self.target.setCurrentIndex(max(0, self.target.findData(
            str(settings.value("memory/target", "tflm")))))
        self.target.setToolTip("TFLite Micro: GreedyMemoryPlanner, reference kernels, 32-bit "
                               "pointers (the head RecordingMicroAllocator prints).  LiteRT: "
                               "ArenaPlanner, builtin kernels without delegates.")
        self.overlay = QCheckBox("Colour operators by live memory")
        self.summary = QLabel("")
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # wrapped: on one line a 1.4 GB arena's summary held the window over 1,600 px wide
        self.summary.setWordWrap(True)
        self.chart = MemoryChartWidget()
        self.peak = QTreeWidget()
        self.peak.setHeaderLabels(["bytes", "live at the peak", "offset", "steps"])
        self.peak.setRootIsDecorated(False)
        self.peak.setAlternatingRowColors(True)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Runtime"))
        bar.addWidget(self.target)
        bar.addWidget(self.overlay)
        bar.addStretch(1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.chart)
        split.addWidget(self.peak)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([600, 400])
        self.peak.setColumnWidth(1, 260)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(bar)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        self._chart: MemoryChart | None = None
        self._tasks: dict[int, tuple] = {}  # serial -> (workspace, state, target, task)
        self.target.currentIndexChanged.connect(self._target_changed)
        self.overlay.toggled.connect(self._overlay_toggled)
        self.chart.boxClicked.connect(self._box_clicked)
        self.peak.itemActivated.connect(self._row_activated)
        self.peak.itemClicked.connect(self._row_activated)
        hub.subscribe(self.render, MODEL, NAVIGATION, SELECTION, TOPIC)

    # -- state ------------------------------------------------------------------------------
    @property
    def target_key(self) -> str:
        return str(self.target.currentData())

    def plan(self, ws=None):
        """The open model's plan for the chosen runtime (None: not made yet, or failed)."""
        ws = ws or self.hub.workspace
        if ws.model is None:
            return None
        return ws.part("memory", MemoryState).plans.get(self.target_key)

    def ensure_plan(self, ws=None) -> None:
        """Make the plan if it is missing: at once for small models, else on a pool thread
        (the result is dropped if another model was opened meanwhile)."""
        ws = ws or self.hub.workspace
        if ws.model is None:
            return
        state = ws.part("memory", MemoryState)
        key = self.target_key
        if key in state.plans or key in state.errors or key in state.running:
            return
        n_ops = sum(len(sg.operators) for sg in ws.model.subgraphs)
        if n_ops <= SYNC_OPS:
            self._store(ws, state, key, *self._attempt(ws.model, key))
            return
        state.running.add(key)
        task = Task(self._attempt, ws.model, key)
        task.signals.finished.connect(self._task_done)  # a bound method: gone with the dock
        self._tasks[task.serial] = (ws, state, key, task)
        task.start()

    def _task_done(self, serial: int, result) -> None:
        entry = self._tasks.pop(serial, None)
        if entry is not None:
            ws, state, key, _task = entry
            self._store(ws, state, key, *result)

    @staticmethod
    def _attempt(model, key: str):
        try:
            return make_plan(model, key), ""
        except Exception as exc:  # noqa: BLE001 - shown in the dock, not a crash
            return None, f"{type(exc).__name__}: {exc}"

    def _store(self, ws, state: MemoryState, key: str, plan, error: str) -> None:
        state.running.discard(key)
        if plan is not None:
            state.plans[key] = plan
        else:
            state.errors[key] = error
        self.hub.changed(TOPIC, ws)

    # -- rendering --------------------------------------------------------------------------
    def render(self, ws) -> None:
        """Show the open workspace's plan (made first if the dock is seen)."""
        if self.isVisible():
            self.ensure_plan(ws)
        plan = self.plan(ws) if ws.model is not None else None
        state = ws.part("memory", MemoryState) if ws.model is not None else None
        if plan is None:
            self._chart = None
            self.chart.set_chart(None)
            self.peak.clear()
            if state is not None and self.target_key in state.errors:
                self.summary.setText(f"No plan: {state.errors[self.target_key]}")
            elif state is not None and self.target_key in state.running:
                self.summary.setText("Planning the arena\u2026")
            else:
                self.summary.setText("" if ws.model is None else "Show the dock to plan the arena.")
            return
        index = None
        if plan.target == "litert" and ws.subgraph < len(plan.arenas):
            index = ws.subgraph  # LiteRT: one arena per subgraph, that of the canvas
        chart = state.chart(self.target_key, index)
        if chart is not self._chart:
            self._chart = chart
            self.chart.set_chart(chart)
            self._fill_peak(ws, plan, chart)
        self.summary.setText(self._summary(ws, plan, chart))
        self._show_selection(ws)

    def _summary(self, ws, plan, chart: MemoryChart) -> str:
        where = ""
        step = chart.steps[chart.peak_step] if chart.peak_step is not None and \
            0 <= chart.peak_step < len(chart.steps) else None
        if step is not None:
            s, k = step
            where = (f", peak at step {chart.peak_step}: subgraph {s} "
                     + (f"operator {k} {ws.model.subgraphs[s].operators[k].name}" if k >= 0
                        else "entry"))
        if plan.target == "tflm":
            text = (f"Arena head {plan.head_bytes:,} bytes (tail at least "
                    f"{plan.tail_bytes:,}){where}")
        else:
            text = (f"Subgraph arena {chart.height:,} bytes (all subgraphs "
                    f"{plan.head_bytes:,}; persistent {plan.tail_bytes:,}){where}")
        if plan.problems:
            text += f" \u2014 {len(plan.problems)} problem(s): {plan.problems[0]}"
        return text

    def _fill_peak(self, ws, plan, chart: MemoryChart) -> None:
        self.peak.clear()
        if chart.peak_step is None:
            return
        arena = plan.arena if plan.target == "tflm" else plan.arenas[ws.subgraph]
        for b in arena.live_at(chart.peak_step)[:200]:
            what = (f"tensor {b.tensor} {b.name}" if b.tensor >= 0
                    else f"operator {b.op}: {b.name}")
            if b.subgraph != ws.subgraph or len(plan.arenas) > 1:
                what = f"subgraph {b.subgraph} {what}"
            item = QTreeWidgetItem([f"{b.size:,}", what, f"{b.offset:,}",
                                    f"{b.first}..{b.last}"])
            item.setData(0, Qt.ItemDataRole.UserRole, (b.subgraph, b.tensor, b.op))
            item.setTextAlignment(0, Qt.AlignmentFlag.AlignRight)
            self.peak.addTopLevelItem(item)
        self.peak.resizeColumnToContents(0)

    def _show_selection(self, ws) -> None:
        chart = self._chart
        sel = ws.selection
        if chart is None or sel is None or sel.kind != "tensor":
            self.chart.select([])
            return
        self.chart.select(chart.boxes_of_tensor(ws.subgraph, sel.index))

    # -- user actions -----------------------------------------------------------------------
    def _target_changed(self, _index: int) -> None:
        self.settings.setValue("memory/target", self.target_key)
        self._chart = None
        self.render(self.hub.workspace)
        self.hub.changed(TOPIC, self.hub.workspace)

    def _overlay_toggled(self, on: bool) -> None:
        self.render(self.hub.workspace)
        self.overlayToggled.emit(on)

    def show_overlay(self, on: bool) -> None:
        """Whether the canvas shows this dock's colours (the toolbar may have chosen)."""
        self.overlay.blockSignals(True)
        self.overlay.setChecked(on)
        self.overlay.blockSignals(False)

    def _box_clicked(self, i: int) -> None:
        c = self._chart
        if c is None:
            return
        if c.tensor[i] >= 0:
            self.tensorActivated.emit(int(c.subgraph[i]), int(c.tensor[i]))
        elif c.op[i] >= 0:
            self.opActivated.emit(int(c.subgraph[i]), int(c.op[i]))

    def _row_activated(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        s, t, op = item.data(0, Qt.ItemDataRole.UserRole)
        if t >= 0:
            self.tensorActivated.emit(s, t)
        elif op >= 0:
            self.opActivated.emit(s, op)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        self.render(self.hub.workspace)
