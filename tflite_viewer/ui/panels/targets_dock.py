"""The Targets dock: pick a target (LiteRT CPU at a runtime version, XNNPACK, the GPU
delegate, TFLite Micro) and see which operators do not run there and why, the partitions
a delegate takes, and what to change, with the changes the editor can make as one click.

A view of the open workspace (`ui.state.targets`): the report is computed in a worker for
the workspace it was asked for and dropped if another model is open by then; an edit
drops it with the old model and the dock computes the new model's.  Picking a target also
colours the canvas with its verdicts (`state.overlays.TargetsOverlay`, as the toolbar's
"Targets: X" does) and lists them in Problems, as information under the target's name.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QHeaderView, QLabel,
                               QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from ...targets import analyze
from ...targets import overlay as target_overlay
from ...targets.litert import known_runtimes
from ..state.targets import (CHOICES, REPORT, OpRow, empty_text, fixes_for, needs_report,
                             op_rows, result_of, summary_line, targets_state)
from ..workers import Task
from ..state.docks import BOTTOM, DockSpec
from ..state.workspace import MODEL, Hub, Workspace
from .common import min_rows, panel_layout, split_panes

ROW_ROLE = Qt.ItemDataRole.UserRole + 3
FIX_ROLE = Qt.ItemDataRole.UserRole + 4
#: rows listed at most (a 20,000-operator model with "every operator" on)
MAX_ROWS = 5000
RUNTIME_OWN = "the model's own"
DOCK = DockSpec("targets", "Targets", BOTTOM, part="targets", overlay="targets",
                shortcut="Ctrl+Shift+T", menu_text="&Targets")
#: the verdict column's text (the overlay's amber is too light for text)
TEXT_COLOURS = {"runs": "#1a7f37", "falls back": "#9a6700", "refused": "#cf222e"}


class _Check(QObject):
    """One report of ``ws``'s model, made on a pool thread."""

    def __init__(self, hub: Hub, ws: Workspace, runtime: str | None, parent: QObject) -> None:
        super().__init__(parent)
        self.hub, self.ws, self.model, self.runtime = hub, ws, ws.model, runtime
        state = targets_state(ws)
        state.running, state.error = True, ""
        state.serial += 1
        self.serial = state.serial
        self.task = Task(analyze, ws.model, None, runtime)
        self.task.signals.finished.connect(self._finished)
        self.task.signals.failed.connect(self._failed)
        self.task.start()

    def _done(self, report, error: str) -> None:
        self.deleteLater()
        ws = self.ws
        if ws.model is not self.model or ws.closed:  # edited or closed since
            return
        state = targets_state(ws)
        if state.serial != self.serial:  # a newer request (another runtime) is under way
            return
        state.running = False
        state.report, state.runtime, state.error = report, self.runtime, error
        self.hub.changed(REPORT, ws)

    def _finished(self, _serial: int, report) -> None:
        self._done(report, "")

    def _failed(self, _serial: int, exc: BaseException) -> None:
        self._done(None, str(exc) or type(exc).__name__)


class TargetsDock(QWidget):
    """``opActivated(subgraph, op)``: a row was clicked; ``editRequested(command)``: a
    change was applied; ``targetChanged(key)``: the picker moved ('' for Off)."""

    opActivated = Signal(int, int)
    editRequested = Signal(object)
    targetChanged = Signal(str)
    reportShown = Signal(object)   # the TargetResult now shown (None: none)

    def __init__(self, settings: QSettings | None = None, parent: QWidget | None = None,
                 hub: Hub | None = None) -> None:
        super().__init__(parent)
        self.settings = settings or QSettings()
        self.hub = hub or Hub()
        self.picker = QComboBox()
        for key, text in CHOICES:
            self.picker.addItem(text, key)
        self.picker.setToolTip("The target whose verdicts colour the canvas and fill Problems")
        self.runtime = QComboBox()
        self.runtime.addItem(RUNTIME_OWN, None)
        for v in known_runtimes():
            self.runtime.addItem(v, v)
        self.runtime.setToolTip("LiteRT CPU: the runtime version the app ships (the model's "
                                "own: what its operators need)")
        self.every = QCheckBox("Every operator")
        self.every.setToolTip("List the operators that run too (with their partition)")
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Target"))
        bar.addWidget(self.picker)
        self.runtime_label = QLabel("Runtime")
        bar.addWidget(self.runtime_label)
        bar.addWidget(self.runtime)
        bar.addWidget(self.every)
        bar.addStretch(1)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)  # whole: the counts and the notes after them
        self.table = QTreeWidget()
        self.table.setColumnCount(4)
        self.table.setHeaderLabels(["Operator", "Verdict", "Partition", "Reason"])
        self.table.setRootIsDecorated(False)
        self.table.setAlternatingRowColors(True)
        self.table.setUniformRowHeights(True)
        header = self.table.header()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        min_rows(self.table)
        self.fixes = QTreeWidget()
        self.fixes.setColumnCount(2)
        self.fixes.setHeaderLabels(["What to change", "Edit"])
        self.fixes.setRootIsDecorated(False)
        self.fixes.setUniformRowHeights(True)
        self.fixes.header().setStretchLastSection(False)
        self.fixes.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.fixes.header().setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        self.fixes.setColumnWidth(1, 150)
        self.apply_button = QPushButton("Apply")
        self.apply_button.setToolTip("Make this change to the model (one undoable edit)")
        self.apply_button.setEnabled(False)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        self.detail = QLabel("")
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fix_detail = QLabel("")
        self.fix_detail.setWordWrap(True)
        self.fix_detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        rl.addWidget(self.detail)
        rl.addWidget(self.fixes, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.fix_detail, 1)
        buttons.addWidget(self.apply_button, 0, Qt.AlignmentFlag.AlignTop)
        rl.addLayout(buttons)
        layout = panel_layout(self)
        layout.addLayout(bar)
        layout.addWidget(self.summary)
        layout.addWidget(split_panes(Qt.Orientation.Horizontal, (self.table, 1), (right, 1)), 1)

        target = str(self.settings.value("targets/target", ""))
        self.picker.setCurrentIndex(max(0, self.picker.findData(target)))
        runtime = self.settings.value("targets/runtime", None) or None
        self.runtime.setCurrentIndex(max(0, self.runtime.findData(runtime)))
        self._shown = None  # (result, every) on the table
        self.picker.currentIndexChanged.connect(self._picked)
        self.runtime.currentIndexChanged.connect(self._runtime_picked)
        self.every.toggled.connect(lambda _on: self.render(self.hub.workspace))
        self.table.currentItemChanged.connect(lambda _item, _prev: self._show_fixes())
        self.table.itemClicked.connect(self._row_clicked)
        self.table.itemActivated.connect(self._row_clicked)
        self.fixes.currentItemChanged.connect(lambda _item, _prev: self._fix_selected())
        self.fixes.itemDoubleClicked.connect(lambda _item, _col: self.apply_selected())
        self.apply_button.clicked.connect(self.apply_selected)
        self.hub.subscribe(self.render, MODEL, REPORT)
        self.render(self.hub.workspace)

    # -- choices ------------------------------------------------------------------------
    @property
    def target(self) -> str:
        return self.picker.currentData() or ""

    def set_target(self, key: str) -> None:
        index = self.picker.findData(key or "")
        if index < 0:
            raise ValueError(f"unknown target {key!r} (one of "
                             f"{', '.join(k for k, _ in CHOICES if k)})")
        self.picker.setCurrentIndex(index)

    @property
    def runtime_version(self) -> str | None:
        return self.runtime.currentData() or None

    def _picked(self, _index: int) -> None:
        self.settings.setValue("targets/target", self.target)
        self.render(self.hub.workspace)
        self.targetChanged.emit(self.target)

    def _runtime_picked(self, _index: int) -> None:
        self.settings.setValue("targets/runtime", self.runtime_version or "")
        self.render(self.hub.workspace)

    @property
    def result(self):
        """The picked target's answer for the open model (None: none picked or not yet)."""
        return result_of(self.hub.workspace, self.target)

    # -- rendering ------------------------------------------------------------------------
    def render(self, ws: Workspace) -> None:
        """Show the picked target's answer for ``ws``'s model; start the check of a model
        not checked yet (only while a target is picked: nothing is computed for Off)."""
        target = self.target
        self.runtime.setEnabled(target == "litert")
        self.runtime_label.setEnabled(target == "litert")
        state = targets_state(ws) if ws.model is not None else None
        if state is not None and target and needs_report(state, self.runtime_version):
            _Check(self.hub, ws, self.runtime_version, self)
        result = result_of(ws, target) if state is not None and not state.running else None
        key = (result, self.every.isChecked())
        if result is None:
            self.summary.setText(empty_text(ws, target, state))
        else:
            self.summary.setText(summary_line(result))
        if key == self._shown:
            return
        self._shown = key
        self._fill(result)
        self.reportShown.emit(result)

    def _fill(self, result) -> None:
        self.table.clear()
        if result is None:
            self._show_fixes()
            return
        rows = op_rows(result, self.every.isChecked())
        # a delegate's groups, when the operators in them are listed
        self.table.setColumnHidden(2, not (result.partitions and self.every.isChecked()))
        items = []
        for row in rows[:MAX_ROWS]:
            item = QTreeWidgetItem([row.label, row.verdict, row.partition_label, row.reason])
            item.setForeground(1, QColor(TEXT_COLOURS[row.verdict]))
            if row.partition is not None:
                item.setForeground(2, QColor(target_overlay.GROUP_COLOURS[
                    row.partition % len(target_overlay.GROUP_COLOURS)]))
            item.setToolTip(3, row.reason)
            item.setData(0, ROW_ROLE, row)
            items.append(item)
        if len(rows) > MAX_ROWS:
            more = QTreeWidgetItem([f"\u2026 {len(rows) - MAX_ROWS} more (the JSON report "
                                    "has every one: tflite-viewer targets MODEL --json)"])
            more.setFlags(Qt.ItemFlag.NoItemFlags)
            items.append(more)
        if not rows:
            what = "Every operator runs here"
            if result.partitions:
                what += f" ({len(result.partitions)} partition(s): tick Every operator)"
            empty = QTreeWidgetItem([what])
            empty.setFlags(Qt.ItemFlag.NoItemFlags)
            items.append(empty)
        self.table.addTopLevelItems(items)
        if rows:
            for column, width in ((0, 180), (1, 75), (2, 60)):
                self.table.setColumnWidth(column, width)
        else:
            items[0].setFirstColumnSpanned(True)
        self._show_fixes()

    def rows(self) -> list[OpRow]:
        """The table's operators as data (tests)."""
        out = []
        for i in range(self.table.topLevelItemCount()):
            row = self.table.topLevelItem(i).data(0, ROW_ROLE)
            if row is not None:
                out.append(row)
        return out

    def select_row(self, subgraph: int, index: int) -> bool:
        for i in range(self.table.topLevelItemCount()):
            item = self.table.topLevelItem(i)
            row = item.data(0, ROW_ROLE)
            if row is not None and (row.subgraph, row.index) == (subgraph, index):
                self.table.setCurrentItem(item)
                return True
        return False

    def _current_row(self) -> OpRow | None:
        item = self.table.currentItem()
        return None if item is None else item.data(0, ROW_ROLE)

    def _row_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        row = item.data(0, ROW_ROLE)
        if row is not None:
            self.opActivated.emit(row.subgraph, row.index)

    # -- what to change -------------------------------------------------------------------
    def _show_fixes(self) -> None:
        self.fixes.clear()
        result = self.result
        if result is None:
            self.detail.setText("")
            self._fix_selected()
            return
        row = self._current_row()
        self.detail.setText("" if row is None else f"{row.label} {row.verdict}: {row.reason}")
        listed = fixes_for(result, row)
        for fix in listed:
            edit = "; ".join(getattr(e, "description", type(e).__name__) for e in fix.edits)
            item = QTreeWidgetItem([fix.summary, edit or "by hand"])
            item.setToolTip(0, fix.summary)
            item.setToolTip(1, edit or "The editor cannot make this change: the text says how")
            item.setData(0, FIX_ROLE, fix)
            if not fix.edits:
                item.setForeground(1, QColor("#6e7781"))
            self.fixes.addTopLevelItem(item)
        if not listed:
            text = ("Nothing to change for this operator" if row is not None
                    else "Select an operator to see what to change")
            empty = QTreeWidgetItem([text])
            empty.setFlags(Qt.ItemFlag.NoItemFlags)
            self.fixes.addTopLevelItem(empty)
            empty.setFirstColumnSpanned(True)
        else:  # the first change the editor can make, else the first
            first = next((k for k, fix in enumerate(listed) if fix.edits), 0)
            self.fixes.setCurrentItem(self.fixes.topLevelItem(first))
        self._fix_selected()

    def fix_texts(self) -> list[tuple[str, str]]:
        return [(self.fixes.topLevelItem(i).text(0), self.fixes.topLevelItem(i).text(1))
                for i in range(self.fixes.topLevelItemCount())]

    def _selected_fix(self):
        item = self.fixes.currentItem()
        return None if item is None else item.data(0, FIX_ROLE)

    def _fix_selected(self) -> None:
        fix = self._selected_fix()
        self.apply_button.setEnabled(fix is not None and bool(fix.edits))
        if fix is None:
            self.fix_detail.setText("")
        elif fix.edits:
            self.fix_detail.setText(f"{fix.summary}. Apply: "
                                    + "; ".join(e.description for e in fix.edits))
        else:
            self.fix_detail.setText(f"{fix.summary} (by hand: the editor cannot make it)")

    def apply_selected(self) -> None:
        """Apply the selected change: each of its edits, one undoable step each (a change
        offered here has one)."""
        fix = self._selected_fix()
        if fix is None or not fix.edits:
            return
        for command in fix.edits:
            self.editRequested.emit(command)
