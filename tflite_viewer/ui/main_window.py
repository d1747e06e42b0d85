"""The main window: canvas in the middle, panels in docks, menus, and the open/select flow.

State lives here and only here: the open model, the subgraph shown (with the trail of
subgraphs the user walked into), the laid-out scenes already computed, and the selection.
Panels are told what to show; they never reach into each other.  Opening and laying out
run in worker tasks; a result is applied only if it answers the newest request, so a slow
open can never overwrite a later one, and a failure leaves the open model untouched.

Editing (DESIGN "Data flow", Edit path): panels and context menus emit EditCommands; the
window applies them through its `EditSession` (a `ModelDocument` made on the first edit,
plus the QUndoStack mirroring its history).  After every apply/undo/redo the document's
freshly serialized and re-read model replaces ``self.model``: the shown subgraph's scene is
rebuilt (keeping the layout when the graph's structure did not change), the panels show the
same objects again, the selection and the view stay, and ``model_replaced`` tells anyone
holding state derived from the old model (a debugger) to reset.  Nothing is written to the
opened file unless the user confirms it.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

from PySide6.QtCore import QPoint, QRectF, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import (QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence,
                           QUndoGroup)
from PySide6.QtWidgets import (QDockWidget, QFileDialog, QLabel, QMainWindow, QMenu, QMessageBox,
                               QProgressBar, QUndoView, QVBoxLayout, QWidget)

from ..edit import EditResult, ExposeTensor, ModelDocument, RemoveOperator
from ..graph.build import subgraph_references
from ..model import EditError, Model, ModelFormatError
from . import quant_overlay, style
from .breadcrumbs import Crumb, NavigationBar
from .editing import EditSession, change_notes, human_size
from .errors import ErrorReporter, reporter
from .find_bar import FindBar
from .graph_scene import GraphScene
from .graph_view import GraphView
from .minimap import Minimap
from .notice import NoticeBar
from .panels import common as panel_common
from .panels.changes_panel import ChangesPanel
from .panels.model_panel import ModelPanel
from .panels.problems_panel import ProblemsPanel
from .panels.properties_panel import PropertiesPanel
from .panels.tensor_panel import TensorPanel, producers_consumers
from .recent import add_recent, clear_recent, recent_files
from .render import render_scene
from .scene_data import SceneData
from .search import Match, find
from .workers import Opened, Task, lay_out, open_model

log = logging.getLogger(__name__)
APP_NAME = "tflite-viewer"
# Calls to open first on double-click, when an operator calls several subgraphs.
PREFERRED_ROLES = ("body", "then", "init", "subgraph", "decomposition")


class MainWindow(QMainWindow):
    modelOpened = Signal(object)  # Model
    openFailed = Signal(str)  # the message shown
    subgraphShown = Signal(int)
    selectionChanged = Signal(object)  # ("op", k) | ("tensor", t) | None
    # The open model was replaced by an edit, undo or redo (or another file was opened):
    # whoever derived state from the old Model (a debugger, a running interpreter) resets.
    model_replaced = Signal(object)  # Model
    edited = Signal(object)  # EditResult, after the window has refreshed
    editFailed = Signal(str)  # the EditError message of a refused edit

    def __init__(self, settings: QSettings | None = None, errors: ErrorReporter | None = None) -> None:
        super().__init__()
        self.settings = settings or QSettings(APP_NAME, APP_NAME)
        self.errors = errors or reporter()
        self.measure = style.text_measure()
        self.model: Model | None = None
        self.path: Path | None = None
        self.subgraph = 0
        self.scenes: dict[int, SceneData] = {}
        self.selection: tuple[str, int] | None = None
        self.trail: list[Crumb] = []
        self._open_serial = 0
        self._layout_serial = 0
        self._tasks: dict[int, Task] = {}  # keep running tasks' signal objects alive
        self._find_matches: list[Match] = []
        self._find_current: Match | None = None
        self._pending_select: str | None = None
        self._references: dict | None = None  # subgraph -> calls it makes, computed on demand
        self._session: EditSession | None = None
        self.undo_group = QUndoGroup(self)
        self.save_target: Path | None = None  # where Save writes (the opened file until Save As)
        # Ask before discarding unsaved edits (closing, opening another file).  Tests that
        # leave edits behind turn it off so closing the window cannot block on a dialog.
        self.ask_before_discarding = True
        self.last_edit_message = ""

        self.setWindowTitle(APP_NAME)
        self.setAcceptDrops(True)
        self.resize(1440, 900)
        self._build_canvas()
        self._build_docks()
        self._build_actions()
        self._build_status()
        quant_overlay.install(self)  # the Quantization dock, its overlay, Problems entries

    # ==========================================================================================
    # construction
    def _build_canvas(self) -> None:
        self.graph_scene = GraphScene(self)
        self.view = GraphView(self.graph_scene)
        self.minimap = Minimap(self.view)
        self.nav = NavigationBar()
        self.find_bar = FindBar()
        self.find_bar.hide()
        self.placeholder = QLabel("Open a model: File \u203a Open (Ctrl+O), or drop a .tflite file here",
                                  self.view)
        self.placeholder.setStyleSheet("color: #6e7781; font-size: 15px;")
        self.placeholder.adjustSize()
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.notice = NoticeBar()
        layout.addWidget(self.nav)
        layout.addWidget(self.notice)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.find_bar)
        self.setCentralWidget(central)

        self.view.nodeClicked.connect(self._node_clicked)
        self.view.nodeDoubleClicked.connect(self._node_double_clicked)
        self.view.edgeClicked.connect(self._edge_clicked)
        self.view.backgroundClicked.connect(self.clear_selection)
        self.view.contextRequested.connect(self._canvas_menu)
        self.view.viewChanged.connect(self._update_zoom_label)
        self.nav.subgraphChosen.connect(lambda i: self.show_subgraph(i))
        self.nav.crumbChosen.connect(self._crumb_chosen)
        self.find_bar.queryChanged.connect(self.find)
        self.find_bar.currentChanged.connect(self._goto_match)
        self.find_bar.closed.connect(self._clear_find)

    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea, name: str) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _build_docks(self) -> None:
        self.model_panel = ModelPanel()
        self.properties_panel = PropertiesPanel()
        self.tensor_panel = TensorPanel()
        self.problems_panel = ProblemsPanel()
        self.model_dock = self._dock("Model", self.model_panel, Qt.DockWidgetArea.LeftDockWidgetArea, "model")
        self.properties_dock = self._dock("Properties", self.properties_panel,
                                          Qt.DockWidgetArea.RightDockWidgetArea, "properties")
        self.tensor_dock = self._dock("Tensor", self.tensor_panel, Qt.DockWidgetArea.RightDockWidgetArea, "tensor")
        self.problems_dock = self._dock("Problems", self.problems_panel,
                                        Qt.DockWidgetArea.BottomDockWidgetArea, "problems")
        self.history_view = QUndoView(self.undo_group)
        self.history_view.setEmptyLabel("<opened file>")
        self.changes_panel = ChangesPanel()
        self.history_dock = self._dock("History", self.history_view, Qt.DockWidgetArea.LeftDockWidgetArea,
                                       "history")
        self.changes_dock = self._dock("Changes", self.changes_panel, Qt.DockWidgetArea.LeftDockWidgetArea,
                                       "changes")
        # History and Changes share a place under Model (tabs); hidden until asked for or
        # until the first edit.
        self.splitDockWidget(self.model_dock, self.history_dock, Qt.Orientation.Vertical)
        self.tabifyDockWidget(self.history_dock, self.changes_dock)
        self.history_dock.hide()
        self.changes_dock.hide()
        self._edit_docks_shown = False
        self._changes_stale = False
        # changes() compares the whole model with the opened file: only while it is seen
        self.changes_dock.visibilityChanged.connect(lambda _v: self._refresh_changes())
        # Side docks run the full height; Problems sits under the canvas only.
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self._size_docks()
        self.properties_panel.tensorActivated.connect(self.select_tensor)
        self.properties_panel.subgraphActivated.connect(lambda i: self.enter_subgraph(i))
        self.tensor_panel.opActivated.connect(self.select_op)
        self.model_panel.subgraphActivated.connect(lambda i: self.show_subgraph(i))
        self.problems_panel.findingActivated.connect(self._finding_activated)
        for panel in (self.properties_panel, self.tensor_panel, self.model_panel):
            panel.editRequested.connect(self.apply_edit)
        self.tensor_panel.editFailed.connect(self._edit_failed)
        self.model_panel.editFailed.connect(self._edit_failed)

    def _size_docks(self) -> None:
        self.resizeDocks([self.model_dock, self.properties_dock], [300, 440], Qt.Orientation.Horizontal)
        self.resizeDocks([self.problems_dock], [100], Qt.Orientation.Vertical)
        self.resizeDocks([self.properties_dock, self.tensor_dock],
                         [int(self.height() * 0.36), int(self.height() * 0.64)], Qt.Orientation.Vertical)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if not getattr(self, "_docks_sized", False):
            self._docks_sized = True
            self._size_docks()

    def _action(self, menu: QMenu, text: str, slot, shortcut=None, tip: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            if isinstance(shortcut, (list, tuple)):
                action.setShortcuts([QKeySequence(s) for s in shortcut])
            else:
                action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setStatusTip(tip)
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _build_actions(self) -> None:
        bar = self.menuBar()
        m = bar.addMenu("&File")
        self._action(m, "&Open\u2026", self.open_dialog, QKeySequence.StandardKey.Open)
        self.recent_menu = m.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent)
        self.reload_action = self._action(m, "&Reload", self.reload, "Ctrl+R")
        m.addSeparator()
        self.save_action = self._action(m, "&Save", self.save, QKeySequence.StandardKey.Save,
                                        "Save the edited model (asks before replacing the opened file)")
        self.save_as_action = self._action(m, "Save &As / Export\u2026", self.save_as, "Ctrl+Shift+S",
                                           "Write the edited model to a new file")
        m.addSeparator()
        self._action(m, "&Export Image\u2026", self.export_dialog, "Ctrl+E",
                     "Save the shown subgraph as SVG or PNG")
        m.addSeparator()
        self._action(m, "&Quit", self.close, QKeySequence.StandardKey.Quit)

        m = bar.addMenu("&Edit")
        self.edit_menu = m
        self.undo_action = self.undo_group.createUndoAction(self, "&Undo")
        self.undo_action.setShortcut(QKeySequence.StandardKey.Undo)
        self.redo_action = self.undo_group.createRedoAction(self, "&Redo")
        self.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        m.addAction(self.undo_action)
        m.addAction(self.redo_action)
        history = self.history_dock.toggleViewAction()
        history.setText("&History")
        changes = self.changes_dock.toggleViewAction()
        changes.setText("&Changes")
        m.addAction(history)
        m.addAction(changes)
        m.addSeparator()
        self.expose_action = self._action(m, "E&xpose Tensor as Subgraph Output", self._expose_selected,
                                          tip="Make the selected tensor an output of its subgraph")
        self.remove_op_action = self._action(m, "Remove &Operator", self._remove_selected,
                                             tip="Remove the selected operator (input and output must match)")
        m.aboutToShow.connect(self._update_edit_actions)
        m.addSeparator()
        self._action(m, "&Find\u2026", self.find_bar.open_bar, QKeySequence.StandardKey.Find)
        self._action(m, "Find &Next", self.find_bar.next, "F3")
        self._action(m, "Find &Previous", self.find_bar.previous, "Shift+F3")

        m = bar.addMenu("&View")
        self._action(m, "Zoom &In", self.view.zoom_in, ["Ctrl+=", "Ctrl++"])
        self._action(m, "Zoom &Out", self.view.zoom_out, "Ctrl+-")
        self._action(m, "&Fit Graph", self.view.fit_all, "Ctrl+0")
        self._action(m, "Fit &Width", self.view.fit_width, "Ctrl+9")
        self.minimap_action = self._action(m, "&Overview Map", self.minimap.set_enabled_by_user)
        self.minimap_action.setCheckable(True)
        self.minimap_action.setChecked(True)
        m.addSeparator()
        for dock in (self.model_dock, self.properties_dock, self.tensor_dock, self.problems_dock,
                     self.history_dock, self.changes_dock):
            m.addAction(dock.toggleViewAction())

        m = bar.addMenu("&Go")
        self._action(m, "&Back", self.go_back, "Alt+Left", "Back to the calling subgraph")
        m = bar.addMenu("&Help")
        self._action(m, "&About", self._about)

    def _build_status(self) -> None:
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)  # busy indicator: parsing has no meaningful percentage
        self.progress.setMaximumWidth(160)
        self.progress.setTextVisible(False)
        self.progress.hide()
        self.zoom_label = QLabel("")
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.zoom_label)

    # ==========================================================================================
    # opening
    def open_dialog(self) -> None:
        if not self.maybe_save():
            return
        start = str(self.path.parent) if self.path else ""
        path, _ = QFileDialog.getOpenFileName(self, "Open model", start,
                                              "TFLite models (*.tflite *.lite *.tfl);;All files (*)")
        if path:
            self.open_path(path)

    def reload(self) -> None:
        if self.path is not None:
            self.open_path(self.path, subgraph=self.subgraph, keep_selection=True)

    def open_path(self, path: str | Path, *, subgraph: int | str | None = None, wait: bool = False,
                  keep_selection: bool = False) -> bool:
        """Open ``path``; in a worker unless ``wait``.  Returns False when a synchronous open
        failed or the user kept unsaved edits (the open model, if any, stays)."""
        if not self.maybe_save():
            return False
        path = Path(path)
        selection = self.selection if keep_selection else None
        self._busy(f"Opening {path.name}\u2026")
        if wait:
            try:
                opened = open_model(path, subgraph, self.measure)
            except BaseException as exc:  # noqa: BLE001 - reported, never raised to Qt
                self._open_failed(path, exc)
                return False
            self._opened(opened, selection)
            return True
        task = Task(open_model, path, subgraph, self.measure)
        self._open_serial = task.serial
        task.signals.finished.connect(lambda serial, result: self._task_done(serial, result, selection))
        task.signals.failed.connect(lambda serial, exc: self._task_failed(serial, exc, path))
        self._tasks[task.serial] = task
        task.start()
        return True

    def _task_done(self, serial: int, result: Opened, selection) -> None:
        self._tasks.pop(serial, None)
        if serial == self._open_serial:
            self._opened(result, selection)

    def _task_failed(self, serial: int, exc: BaseException, path: Path) -> None:
        self._tasks.pop(serial, None)
        if serial == self._open_serial:
            self._open_failed(path, exc)

    def _open_failed(self, path: Path, exc: BaseException) -> None:
        self._idle()
        if isinstance(exc, ModelFormatError):
            title, message = "Cannot open model", f"{path.name} is not a valid TFLite model:\n\n{exc}"
        elif isinstance(exc, OSError):
            title, message = "Cannot open model", f"{path.name} cannot be read:\n\n{exc.strerror or exc}"
        elif isinstance(exc, KeyError):
            title, message = "Cannot open model", f"{path.name}: {exc.args[0] if exc.args else exc}"
        else:
            self.errors.unexpected(exc)
            self.openFailed.emit(str(exc))
            return
        if self.model is not None:
            message += f"\n\n{self.path.name if self.path else 'The open model'} stays open."
        self.errors.report(title, message, parent=self)
        self.openFailed.emit(message)

    def _opened(self, opened: Opened, selection=None) -> None:
        self._idle()
        self._close_session()
        self.model = opened.model
        self.path = opened.path
        self.save_target = opened.path
        self.scenes = {opened.scene.subgraph: opened.scene}
        self._references = None
        self.selection = None
        self._clear_find()
        self.notice.dismiss()
        for panel in (self.properties_panel, self.tensor_panel, self.model_panel):
            panel.editable = True
        self.tensor_panel.forget_values()
        self.changes_panel.show_changes(None)
        self._changes_stale = False
        title = opened.path.name if opened.path else "model"
        self._update_title()
        if opened.path is not None:
            add_recent(self.settings, opened.path)
        self.nav.set_model(self.model)
        self.model_panel.show_model(self.model, opened.summary)
        self.problems_panel.show_model(self.model)
        self.problems_dock.setWindowTitle(f"Problems ({len(self.model.findings)})")
        self.properties_panel.show_operator(None)
        self.tensor_panel.show_tensor(None)
        self.trail = self._trail_to(opened.scene.subgraph)
        self._display(opened.scene)
        n_ops = opened.summary.n_ops
        self.statusBar().showMessage(f"Opened {title}: {n_ops:,} operators in {opened.seconds:.2f} s", 8000)
        self.modelOpened.emit(self.model)
        self.model_replaced.emit(self.model)
        if selection is not None:
            self._restore_selection(selection)
        if self._pending_select:
            spec, self._pending_select = self._pending_select, None
            self.select_spec(spec)

    def _busy(self, text: str) -> None:
        self.progress.show()
        self.statusBar().showMessage(text)

    def _idle(self) -> None:
        if not self._tasks:
            self.progress.hide()
        self.statusBar().clearMessage()

    # ==========================================================================================
    # subgraphs
    def _crumb_label(self, index: int, via: str = "") -> str:
        name = self.model.subgraphs[index].display_name
        return f"{via} \u2192 {name}" if via else name

    def show_subgraph(self, which: int | str, *, wait: bool = False) -> None:
        """Show a subgraph (index, name or signature key); the trail says where it is called
        from (main > WHILE #3 body > ...) when some operator calls it."""
        if self.model is None:
            return
        index = self.model.subgraph_index(which)
        self.trail = self._trail_to(index)
        self._show(index, wait)

    def _trail_to(self, index: int) -> list[Crumb]:
        """The shortest chain of calls from a subgraph nobody calls down to ``index``."""
        model = self.model
        if len(model.subgraphs) == 1:
            return [Crumb(index, self._crumb_label(index))]
        if self._references is None:
            self._references = subgraph_references(model)
        callers: dict[int, tuple[int, int, str]] = {}
        for sg, refs in self._references.items():
            for op, role, target in refs:
                callers.setdefault(target, (sg, op, role))
        chain: list[Crumb] = []
        current, seen = index, set()
        while current in callers and current not in seen:
            seen.add(current)
            sg, op, role = callers[current]
            name = model.subgraphs[sg].operators[op].name
            chain.append(Crumb(current, self._crumb_label(current, f"{name} #{op} {role}")))
            current = sg
        chain.append(Crumb(current, self._crumb_label(current)))
        return chain[::-1]

    def enter_subgraph(self, index: int, via: str = "", *, wait: bool = False) -> None:
        """Show a subgraph called from the current one, extending the trail."""
        if self.model is None or not 0 <= index < len(self.model.subgraphs):
            return
        self.trail.append(Crumb(index, self._crumb_label(index, via)))
        self._show(index, wait)

    def go_back(self) -> None:
        if len(self.trail) > 1:
            self._crumb_chosen(len(self.trail) - 2)

    def _crumb_chosen(self, pos: int) -> None:
        self.trail = self.trail[:pos + 1]
        self._show(self.trail[-1].subgraph, wait=False)

    def _show(self, index: int, wait: bool) -> None:
        scene = self.scenes.get(index)
        if scene is not None:
            self._display(scene)
            return
        if wait:
            self._display(self._layout_now(index))
            return
        self._busy(f"Laying out {self.model.subgraphs[index].display_name}\u2026")
        task = Task(lay_out, self.model, index, self.measure)
        self._layout_serial = task.serial
        model = self.model
        task.signals.finished.connect(lambda serial, sd: self._layout_done(serial, sd, model))
        task.signals.failed.connect(lambda serial, exc: self._layout_failed(serial, exc))
        self._tasks[task.serial] = task
        task.start()

    def _layout_now(self, index: int) -> SceneData:
        sd = lay_out(self.model, index, self.measure)
        self.scenes[index] = sd
        return sd

    def _layout_done(self, serial: int, sd: SceneData, model: Model) -> None:
        self._tasks.pop(serial, None)
        if model is not self.model:  # the model was edited (or replaced) meanwhile
            self._idle()
            return
        self.scenes[sd.subgraph] = sd
        self._idle()
        if serial == self._layout_serial:
            self._display(sd)

    def _layout_failed(self, serial: int, exc: BaseException) -> None:
        self._tasks.pop(serial, None)
        self._idle()
        self.errors.unexpected(exc)

    def _display(self, sd: SceneData) -> None:
        self.subgraph = sd.subgraph
        self.selection = None
        self.graph_scene.set_data(sd)
        self.placeholder.hide()
        self.nav.set_trail(self.trail)
        self.minimap.rebuild()
        self.initial_view()
        if self.find_bar.isVisible() and self.find_bar.edit.text():
            self.find(self.find_bar.edit.text())
        self.subgraphShown.emit(sd.subgraph)

    def initial_view(self) -> None:
        """Fit the graph when its text stays readable; else fit its width and show the top
        (a deep network fitted whole is a thin coloured stripe)."""
        self.view.fit_all()
        if self.view.zoom() < style.LOD_TEXT:
            self.view.fit_width()
            if self.view.zoom() < style.LOD_TEXT:
                self.view.set_zoom(0.8)
                rect = self.view.sceneRect()
                self.view.centerOn(rect.center().x(), rect.top() + self.view.viewport().height() / 1.6)
        self._update_zoom_label()

    # ==========================================================================================
    # selection
    def _node_clicked(self, row: int) -> None:
        lab = self.graph_scene.data.labels[row]
        if lab.kind == "op":
            self.select_op(lab.op_index, center=False)
        elif lab.tensor is not None:
            self.select_tensor(lab.tensor, center=False)

    def _edge_clicked(self, edge: int) -> None:
        t = int(self.graph_scene.data.edge_tensor[edge])
        if t >= 0:
            self.select_tensor(t, center=False)

    def _node_double_clicked(self, row: int) -> None:
        lab = self.graph_scene.data.labels[row]
        if lab.kind == "op" and lab.calls:
            self.open_called(lab.op_index)

    def open_called(self, op_index: int, role: str | None = None, *, wait: bool = False) -> None:
        """Open a subgraph that operator ``op_index`` calls (``role``, or the most useful
        one: the body of a loop, the then-branch); the others stay as links in Properties."""
        op = self.model.subgraphs[self.subgraph].operators[op_index]
        calls = op.called_subgraphs
        if not calls:
            return
        if role is None:
            role = next((r for r in PREFERRED_ROLES if r in calls), next(iter(calls)))
        self.select_op(op_index, center=False)
        others = [f"{r}: subgraph {i}" for r, i in calls.items() if r != role]
        self.enter_subgraph(calls[role], f"{op.name} #{op_index} {role}", wait=wait)
        if others:
            self.statusBar().showMessage(f"{op.name} #{op_index} also calls {', '.join(others)} "
                                         "(links in Properties)", 10000)

    def select_spec(self, spec: str) -> None:
        """``op:N`` or ``tensor:N`` (the --select argument)."""
        kind, _, value = spec.partition(":")
        if kind not in ("op", "tensor") or not value.strip().isdigit():
            raise ValueError(f"--select {spec!r}: use op:N or tensor:N")
        n = int(value)
        sg = self.model.subgraphs[self.subgraph]
        limit = len(sg.operators) if kind == "op" else len(sg.tensors)
        if n >= limit:
            raise ValueError(f"--select {spec}: the subgraph has {limit} {'operators' if kind == 'op' else 'tensors'}")
        (self.select_op if kind == "op" else self.select_tensor)(n)

    def select_later(self, spec: str) -> None:
        """Select ``spec`` once the model being opened is shown."""
        self._pending_select = spec

    def select_op(self, k: int, center: bool = True) -> None:
        if self.model is None:
            return
        sg = self.model.subgraphs[self.subgraph]
        op = sg.operators[k]
        self.selection = ("op", k)
        self.properties_panel.show_operator(op)
        # The weights (the largest constant input) are usually what one wants to see next.
        const = [t for t in op.inputs if 0 <= t < len(sg.tensors) and sg.tensors[t].is_constant]
        const.sort(key=lambda t: -sg.tensors[t].num_elements)
        first = const[0] if const else next((t for t in op.outputs if t >= 0), None)
        self.tensor_panel.show_tensor(sg.tensors[first] if first is not None else None)
        self._refresh_highlight(center)
        self.selectionChanged.emit(self.selection)

    def select_tensor(self, t: int, center: bool = True) -> None:
        if self.model is None:
            return
        sg = self.model.subgraphs[self.subgraph]
        self.selection = ("tensor", t)
        self.tensor_panel.show_tensor(sg.tensors[t])
        # Properties shows the operator that gives the tensor its meaning: its producer, or
        # for constants and subgraph inputs the first operator reading it.
        producers, consumers = producers_consumers(sg.tensors[t])
        if producers:
            self.properties_panel.show_operator(sg.operators[producers[0]], f"produces t{t}")
        elif consumers:
            self.properties_panel.show_operator(sg.operators[consumers[0]], f"reads t{t}")
        self.tensor_dock.raise_()
        self._refresh_highlight(center)
        self.selectionChanged.emit(self.selection)

    def clear_selection(self) -> None:
        self.selection = None
        self._refresh_highlight(False)
        self.selectionChanged.emit(None)

    def _restore_selection(self, selection: tuple[str, int]) -> None:
        kind, n = selection
        try:
            (self.select_op if kind == "op" else self.select_tensor)(n)
        except (IndexError, KeyError):
            pass

    def selected_rows(self) -> tuple[list[int], list[int], list[int]]:
        """(boxes, edges, related edges) the current selection highlights."""
        sd = self.graph_scene.data
        if sd is None or self.selection is None:
            return [], [], []
        kind, n = self.selection
        if kind == "op":
            row = sd.op_node.get(n)
            if row is None:
                return [], [], []
            node = sd.node_ids[row]
            related = [e for e, (u, v) in enumerate(zip(sd.edge_source, sd.edge_target)) if u == node or v == node]
            return [row], [], related
        return list(sd.tensor_nodes.get(n, [])), list(sd.tensor_edges.get(n, [])), []

    def _refresh_highlight(self, center: bool) -> None:
        hl = self.graph_scene.highlight
        if hl is None:
            return
        nodes, edges, related = self.selected_rows()
        found_nodes, found_edges = self._match_rows(self._find_matches)
        current = self._find_current
        hl.set_highlight(nodes=nodes, edges=edges, related=related, found_nodes=found_nodes,
                         found_edges=found_edges,
                         current=(current.kind, current.index) if current else None)
        if center:
            target = None
            if nodes:
                target = self.graph_scene.node_rect(nodes[0])
            elif edges:
                pts = self.graph_scene.data.edge_points[edges[0]]
                if pts:
                    target = QRectF(pts[0][0] - 40, pts[0][1] - 10, 80, 40)
            if target is not None and not self.view.mapToScene(self.view.viewport().rect()).boundingRect().contains(target):
                self.view.show_rect(target)

    def _finding_activated(self, finding) -> None:
        if self.model is None:
            return
        if finding.subgraph is not None and finding.subgraph != self.subgraph:
            self.show_subgraph(finding.subgraph, wait=True)
        if finding.operator is not None:
            self.select_op(finding.operator)
        elif finding.tensor is not None:
            self.select_tensor(finding.tensor)

    # ==========================================================================================
    # editing
    @property
    def session(self) -> EditSession | None:
        """The edit session of the open model, made on first use (opening stays fast)."""
        if self._session is None and self.model is not None:
            session = EditSession(ModelDocument(self.model), self)
            session.changed.connect(self._document_changed)
            session.failed.connect(self._edit_failed)
            session.stack.cleanChanged.connect(self._clean_changed)  # a method: Qt disconnects it
            self.undo_group.addStack(session.stack)
            self.undo_group.setActiveStack(session.stack)
            self._session = session
        return self._session

    @property
    def document(self) -> ModelDocument | None:
        session = self.session
        return session.document if session is not None else None

    @property
    def undo_stack(self):
        session = self.session
        return session.stack if session is not None else None

    @property
    def is_modified(self) -> bool:
        return self._session is not None and self._session.is_modified

    def _close_session(self) -> None:
        if self._session is not None:
            self.undo_group.removeStack(self._session.stack)
            self._session.close()
            self._session.deleteLater()
            self._session = None
        self.setWindowModified(False)

    def apply_edit(self, command) -> EditResult | None:
        """Apply one EditCommand as one undoable step.  A refused edit shows its message,
        puts the editors back and changes nothing; returns None then."""
        if self.model is None:
            return None
        try:
            session = self.session
        except Exception as exc:  # noqa: BLE001 - a model the edit layer cannot unpack
            log.exception("making the edit document")
            self._edit_failed(f"this model cannot be edited: {exc}")
            return None
        return session.apply(command)

    def remove_operator(self, k: int) -> EditResult | None:
        return self.apply_edit(RemoveOperator(self.subgraph, k))

    def expose_tensor(self, t: int) -> EditResult | None:
        return self.apply_edit(ExposeTensor(self.subgraph, t))

    def undo(self) -> None:
        if self.undo_group.canUndo():
            self.undo_group.undo()

    def redo(self) -> None:
        if self.undo_group.canRedo():
            self.undo_group.redo()

    def _edit_failed(self, message: str) -> None:
        self.last_edit_message = f"Edit refused: {message}"
        self.statusBar().showMessage(self.last_edit_message, 20000)
        self.notice.show_notice(f"Not changed: {message}", "error")
        self._refresh_panels()  # the editors show the model's values again
        self.editFailed.emit(message)

    def _document_changed(self, model: Model, result: EditResult, seconds: float) -> None:
        """The document has a new model (apply, undo or redo): show it in place."""
        old = self.model
        keys = self._panel_keys()
        selection = self._selection_key()
        self.model = model
        self._references = None
        self.tensor_panel.forget_values()
        if not 0 <= self.subgraph < len(model.subgraphs):
            self.subgraph = 0
        current = self.graph_scene.data
        reuse = None
        if current is not None and current.subgraph == self.subgraph and not result.scope.structural:
            reuse = current.layout
        sd = lay_out(model, self.subgraph, self.measure, reuse)
        self.scenes = {self.subgraph: sd}  # the other subgraphs are laid out again when shown
        self.nav.set_model(model)
        self._redisplay(sd)
        self.selection = self._resolve_selection(selection)
        self._refresh_panels(keys)
        self._refresh_highlight(False)
        self.model_panel.show_model(model, keep_scroll=True, path=self.path)
        self.problems_panel.show_model(model)
        self.problems_dock.setWindowTitle(f"Problems ({len(model.findings)})")
        self._changes_stale = True
        self._refresh_changes()
        self._update_title()
        self._report_change(old, model, result, seconds)
        self._show_edit_docks_once()
        self.model_replaced.emit(model)
        self.selectionChanged.emit(self.selection)
        self.edited.emit(result)

    def _report_change(self, old: Model | None, model: Model, result: EditResult, seconds: float) -> None:
        size = len(self._session.document.to_bytes()) if self._session else model.file_size
        message = (f"{result.description} \u2014 {human_size(size)}, "
                   f"re-serialized in {seconds * 1000:.0f} ms")
        notes = change_notes(old, model)
        lines = []
        if notes:
            message += f"; {notes.text()}"
            lines.append(notes.text())
        for w in result.warnings:
            lines.append(f"Warning: {w}")
        if result.warnings:
            message += f"; warning: {result.warnings[0]}" + (
                f" (+{len(result.warnings) - 1} more)" if len(result.warnings) > 1 else "")
        self.last_edit_message = message
        self.statusBar().showMessage(message, 20000)
        if lines:
            self.notice.show_notice("\n".join(lines), "warning" if result.warnings else "info")
        elif self.notice.isVisible() and self.notice.level == "error":
            self.notice.dismiss()

    def _refresh_changes(self) -> None:
        if self._changes_stale and self.changes_dock.isVisible():
            self._changes_stale = False
            self.changes_panel.show_changes(self._session.document if self._session else None)

    def _show_edit_docks_once(self) -> None:
        """The first edit in a window opens History and Changes (once: closed, they stay so)."""
        if self._edit_docks_shown:
            return
        self._edit_docks_shown = True
        if self.history_dock.isHidden() and self.changes_dock.isHidden():
            self.history_dock.show()
            self.changes_dock.show()
            self.changes_dock.raise_()

    def _redisplay(self, sd: SceneData) -> None:
        """Show a rebuilt scene of the subgraph on screen, keeping zoom and scroll."""
        transform = self.view.transform()
        center = self.view.mapToScene(self.view.viewport().rect().center())
        self.graph_scene.set_data(sd)
        self.view.setTransform(transform)
        self.view.centerOn(center)
        self.nav.set_trail(self.trail)
        self.minimap.rebuild()
        if self.find_bar.isVisible() and self.find_bar.edit.text():
            self.find(self.find_bar.edit.text())
        self._update_zoom_label()

    # Operators are identified across edits by the tensors they produce: indices shift when
    # an operator is removed (or put back by undo); tensor indices never do.
    def _selection_key(self) -> tuple | None:
        if self.selection is None or self.model is None:
            return None
        kind, n = self.selection
        if kind == "op":
            ops = self.model.subgraphs[self.subgraph].operators
            return ("op", n, tuple(ops[n].outputs) if n < len(ops) else ())
        return ("tensor", n, ())

    def _resolve_selection(self, key: tuple | None) -> tuple[str, int] | None:
        if key is None:
            return None
        kind, n, outs = key
        sg = self.model.subgraphs[self.subgraph]
        if kind == "tensor":
            return ("tensor", n) if n < len(sg.tensors) else None
        k = _find_op(sg, n, outs)
        return None if k is None else ("op", k)

    def _panel_keys(self) -> tuple:
        op = self.properties_panel.operator
        t = self.tensor_panel.tensor
        return ((op.subgraph.index, op.index, tuple(op.outputs)) if op is not None else None,
                (t.subgraph.index, t.index) if t is not None else None)

    def _refresh_panels(self, keys: tuple | None = None) -> None:
        """Show the objects the panels showed again, from the current model."""
        if self.model is None:
            return
        op_key, t_key = keys if keys is not None else self._panel_keys()
        subs = self.model.subgraphs
        if op_key is not None:
            s, n, outs = op_key
            k = _find_op(subs[s], n, outs) if s < len(subs) else None
            self.properties_panel.show_operator(subs[s].operators[k] if k is not None else None,
                                                self.properties_panel.context, keep_scroll=True)
        if t_key is not None:
            s, t = t_key
            tensor = subs[s].tensors[t] if s < len(subs) and t < len(subs[s].tensors) else None
            self.tensor_panel.show_tensor(tensor, keep_view=True)

    def _canvas_menu(self, kind: str, index: int, pos: QPoint) -> None:
        sd = self.graph_scene.data
        if sd is None or self.model is None:
            return
        menu = QMenu(self)
        if kind == "node" and sd.labels[index].kind == "op":
            k = int(sd.labels[index].op_index)
            self.select_op(k, center=False)
            menu.addAction(f"Remove operator #{k} {sd.labels[index].title}", lambda: self.remove_operator(k))
        else:
            t = sd.labels[index].tensor if kind == "node" else int(sd.edge_tensor[index])
            if t is None or t < 0:
                return
            self.select_tensor(int(t), center=False)
            action = menu.addAction("Expose as subgraph output", lambda: self.expose_tensor(int(t)))
            action.setEnabled(int(t) not in self.model.subgraphs[self.subgraph].outputs)
            if self.model.subgraphs[self.subgraph].tensors[int(t)].is_constant:
                menu.addAction("Replace data from .npy\u2026", self.tensor_panel.replace_dialog)
        panel_common.exec_menu(menu, pos)

    def _update_edit_actions(self) -> None:
        kind = self.selection[0] if self.selection else None
        self.expose_action.setEnabled(kind == "tensor" and self.selection[1] not in
                                      self.model.subgraphs[self.subgraph].outputs)
        self.remove_op_action.setEnabled(kind == "op")

    def _expose_selected(self) -> None:
        if self.selection and self.selection[0] == "tensor":
            self.expose_tensor(self.selection[1])

    def _remove_selected(self) -> None:
        if self.selection and self.selection[0] == "op":
            self.remove_operator(self.selection[1])

    # -- saving --------------------------------------------------------------------------------
    def _clean_changed(self, _clean: bool) -> None:
        self._update_title()

    def _update_title(self) -> None:
        target = self.save_target or self.path
        name = target.name if target is not None else ("model" if self.model is not None else "")
        self.setWindowTitle(f"{name}[*] \u2014 {APP_NAME}" if name else APP_NAME)
        self.setWindowModified(self.is_modified)

    def _is_original(self, target: Path) -> bool:
        """Whether ``target`` is the file the model was opened from."""
        original = self._session.document.path if self._session is not None else self.path
        if original is None or not target.exists():
            return False
        try:
            return os.path.samefile(target, original)
        except OSError:
            return False

    def save(self) -> bool:
        """Save the edits where the model came from (or was last saved as).  Replacing the
        opened file needs the user's confirmation; without it nothing is written."""
        if self.model is None:
            return False
        if not self.is_modified:
            self.statusBar().showMessage("No changes to save", 5000)
            return True
        if self.save_target is None:
            return self.save_as()
        return self.save_to(self.save_target)

    def save_as(self) -> bool:
        """Write the edited model to a file the user picks (Save As / Export)."""
        if self.model is None:
            return False
        base = self.save_target or self.path
        suggestion = str(base.with_name(f"{base.stem}_edited{base.suffix or '.tflite'}")) if base else "model.tflite"
        path, _ = QFileDialog.getSaveFileName(self, "Save model as", suggestion,
                                              "TFLite models (*.tflite);;All files (*)")
        if not path:
            return False
        target = Path(path)
        if not target.suffix:
            target = target.with_suffix(".tflite")
        return self.save_to(target)

    def save_to(self, target: str | Path) -> bool:
        target = Path(target)
        session = self.session
        if session is None:
            return False
        overwrite = self._is_original(target)
        if overwrite:
            answer = QMessageBox.question(
                self, "Replace the opened model?",
                f"Save the changes into {target.name}, replacing the model you opened?\n\n{target}"
                "\n\nChoose No and use Save As to keep the original.",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
            if answer != QMessageBox.StandardButton.Yes:
                self.statusBar().showMessage(f"Not saved: {target.name} was left unchanged", 10000)
                return False
        try:
            out = session.document.save(target, overwrite_original=overwrite)
        except (EditError, OSError) as exc:
            self.errors.report("Cannot save model", f"{target}: {getattr(exc, 'strerror', None) or exc}",
                               parent=self)
            return False
        session.mark_saved()
        self.save_target = out
        self.path = out
        add_recent(self.settings, out)
        self._update_title()
        self.statusBar().showMessage(f"Saved {out.name} ({human_size(out.stat().st_size)})", 10000)
        return True

    def maybe_save(self) -> bool:
        """Before discarding unsaved edits (close, open another file): Save / Discard / Cancel.
        True when it is fine to go on."""
        if not self.is_modified or not self.ask_before_discarding:
            return True
        target = self.save_target or self.path
        name = target.name if target is not None else "The model"
        answer = QMessageBox.question(
            self, "Unsaved changes", f"{name} has unsaved changes.\n\nSave them before going on?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Save)
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    # ==========================================================================================
    # find
    def find(self, query: str) -> list[Match]:
        """Highlight every match of ``query`` in the shown subgraph."""
        if self.model is None:
            return []
        self._find_matches = find(self.model, self.subgraph, query)
        self._find_current = None
        self.find_bar.set_matches(self._find_matches)
        self._refresh_highlight(False)
        return self._find_matches

    def _match_rows(self, matches: list[Match]) -> tuple[list[int], list[int]]:
        sd = self.graph_scene.data
        if sd is None:
            return [], []
        nodes: list[int] = []
        edges: list[int] = []
        for m in matches[:5000]:
            if m.kind == "op":
                if m.index in sd.op_node:
                    nodes.append(sd.op_node[m.index])
            else:
                nodes.extend(sd.tensor_nodes.get(m.index, []))
                edges.extend(sd.tensor_edges.get(m.index, []))
        return list(dict.fromkeys(nodes)), list(dict.fromkeys(edges))

    def _goto_match(self, match: Match) -> None:
        self._find_current = match
        if match.kind == "op":
            self.select_op(match.index)
        else:
            self.select_tensor(match.index)

    def _clear_find(self) -> None:
        self._find_matches = []
        self._find_current = None
        self._refresh_highlight(False)

    # ==========================================================================================
    # export, recent, drag and drop
    def export_dialog(self) -> None:
        if self.graph_scene.data is None:
            return
        stem = self.path.stem if self.path else "graph"
        path, _ = QFileDialog.getSaveFileName(self, "Export image", f"{stem}_{self.subgraph}.svg",
                                              "SVG image (*.svg);;PNG image (*.png)")
        if path:
            self.export_image(path)

    def export_image(self, path: str | Path) -> Path:
        out = render_scene(self.graph_scene, path)
        self.statusBar().showMessage(f"Saved {out}", 5000)
        return out

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        files = recent_files(self.settings)
        for f in files:
            action = self.recent_menu.addAction(f)
            action.triggered.connect(lambda _=False, p=f: self.open_path(p))
        if not files:
            self.recent_menu.addAction("(none)").setEnabled(False)
        else:
            self.recent_menu.addSeparator()
            self.recent_menu.addAction("Clear", lambda: clear_recent(self.settings))

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt API
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt API
        files = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if files:
            event.acceptProposedAction()
            self.open_path(files[0])

    # ==========================================================================================
    # misc
    def _update_zoom_label(self) -> None:
        self.zoom_label.setText(f"{self.view.zoom() * 100:.0f} %")
        self.placeholder.move(max((self.view.width() - self.placeholder.width()) // 2, 0),
                              max((self.view.height() - self.placeholder.height()) // 2, 0))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        QTimer.singleShot(0, self._update_zoom_label)

    def _about(self) -> None:
        from PySide6.QtWidgets import QMessageBox
        QMessageBox.about(self, "About tflite-viewer",
                          "tflite-viewer: explore, run, quantization-inspect and edit TFLite models.")

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        if not self.maybe_save():
            event.ignore()
            return
        self.settings.sync()
        super().closeEvent(event)


def _find_op(sg, n: int, outs: tuple) -> int | None:
    """The operator of ``sg`` that produces exactly ``outs`` (the one at ``n`` when it has
    no outputs to go by)."""
    ops = sg.operators
    real = [t for t in outs if t >= 0]
    if not real:
        return n if n < len(ops) else None
    if n < len(ops) and tuple(ops[n].outputs) == tuple(outs):
        return n
    producers, _ = producers_consumers(sg.tensors[real[0]]) if real[0] < len(sg.tensors) else ([], [])
    for k in producers:
        if tuple(ops[k].outputs) == tuple(outs):
            return k
    return None
