"""The main window: the canvas in the middle, the panels in docks around it, and the
select / navigate flow.

`MainWindow` is a QMainWindow that composes its parts; nothing else sets anything on it.
Everything shown about the open model lives in its `state.workspace.Workspace`, owned by
``window.hub`` (the window's ``model``, ``subgraph``, ``selection`` ... read it).  The
parts: the canvas (`canvas.Canvas`), the docks (`dock_host.DockHost`: a panel is hosted
with `add_dock` from the `state.docks.DockSpec` it declares), the canvas's overlays
(`overlays.CanvasOverlays`, one at a time, chosen on the toolbar), the menus
(`menus.Actions`), and the flows: ``files`` (open, save, recent, export), ``editing``
(edits, undo, redo, refreshing in place), ``shapes`` (stored vs computed shapes),
``composites`` (Fold Composites), ``finder`` (Find), ``debugger`` and ``compare`` (File >
Compare With).  Docks and overlays subscribe to the hub and render the workspace they are
handed; they never reach into each other or into the window.
"""
from __future__ import annotations

import logging

from PySide6.QtCore import QRectF, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QDragEnterEvent, QDropEvent, QUndoGroup
from PySide6.QtWidgets import (QDockWidget, QLabel, QMainWindow, QMessageBox, QProgressBar,
                               QToolBar, QUndoView, QWidget)

from . import style
from .canvas import Canvas
from .dock_host import DockHost
from .errors import ErrorReporter, reporter
from .menus import build_menus
from .overlays import CanvasOverlays, OverlaySelector, follow_docks
from .panels.changes_panel import ChangesPanel
from .panels.model_panel import ModelPanel
from .panels.problems_panel import ProblemsPanel
from .panels.properties_panel import PropertiesPanel
from .panels.tensor_panel import TensorPanel
from .shortcuts import ShortcutsDialog, shortcut_rows
from .state import navigation as nav
from .state.docks import BOTTOM, RIGHT, DockSpec
from .state.overlays import OverlayChoice, default_overlays
from .state.problems import model_problems, target_notes
from .state.samples import SampleChoice
from .state.selection import Selection, parse_spec, producers_consumers
from .state.workspace import MODEL, PROBLEMS, SELECTION, Hub, Workspace
from .window_composites import CompositeFolding
from .window_editing import EditFlow
from .window_files import APP_NAME, FileFlows
from .window_find import FindFlow
from .window_navigation import Navigator
from .window_shapes import ShapeCheck
from .workers import Task

log = logging.getLogger(__name__)

MODEL_DOCK = DockSpec("model", "Model", RIGHT, shown=True, shortcut="Ctrl+Shift+1")
PROPERTIES_DOCK = DockSpec("properties", "Properties", RIGHT, shown=True, shortcut="Ctrl+Shift+2")
TENSOR_DOCK = DockSpec("tensor", "Tensor", RIGHT, shown=True, shortcut="Ctrl+Shift+3")
HISTORY_DOCK = DockSpec("history", "History", RIGHT, menu_text="&History")
CHANGES_DOCK = DockSpec("changes", "Changes", RIGHT, menu_text="&Changes")
PROBLEMS_DOCK = DockSpec("problems", "Problems", BOTTOM, part="problems")


class MainWindow(QMainWindow):
    modelOpened = Signal(object)  # Model
    openFailed = Signal(str)  # the message shown
    subgraphShown = Signal(int)
    selectionChanged = Signal(object)  # Selection | None (compares equal to ("op", k))
    # The open model was replaced by an edit, undo or redo (or another file was opened):
    # whoever derived state from the old Model (a debugger, a running interpreter) resets.
    model_replaced = Signal(object)  # Model
    edited = Signal(object)  # EditResult, after the window has refreshed
    editFailed = Signal(str)  # the EditError message of a refused edit

    def __init__(self, settings: QSettings | None = None, errors: ErrorReporter | None = None,
                 remember_layout: bool = True) -> None:
        super().__init__()
        self.settings = settings or QSettings(APP_NAME, APP_NAME)
        # restore the docks as the user left them (and save them on close); screenshots
        # use the default layout
        self.remember_layout = remember_layout
        self.errors = errors or reporter()
        self.measure = style.text_measure()
        self.hub = Hub()  # the open model and everything shown about it
        self.undo_group = QUndoGroup(self)
        self.samples = SampleChoice()  # the inputs every view that computes numbers runs on
        self.tasks: dict[int, Task] = {}  # running tasks, their signal objects kept alive
        # Ask before discarding unsaved edits (closing, opening another file).  Tests that
        # leave edits behind turn it off so closing the window cannot block on a dialog.
        self.ask_before_discarding = True
        self.setWindowTitle(APP_NAME)
        self.setAcceptDrops(True)
        self.resize(1440, 900)
        self.canvas = Canvas(self)
        self.setCentralWidget(self.canvas)
        self.view, self.graph_scene = self.canvas.view, self.canvas.scene
        self.minimap, self.nav, self.find_bar = self.canvas.minimap, self.canvas.nav, self.canvas.find_bar
        self.notice, self.placeholder = self.canvas.notice, self.canvas.placeholder
        self.files, self.editing = FileFlows(self), EditFlow(self)
        self.shapes, self.composites = ShapeCheck(self), CompositeFolding(self)
        self.finder, self.navigator = FindFlow(self), Navigator(self)
        self.actions = build_menus(self)
        self.docks = DockHost(self, self.actions.view)
        self._build_panels()
        self._build_status()
        self.overlay_choice = OverlayChoice(default_overlays())
        self.overlays = CanvasOverlays(self.hub, self.overlay_choice, self.graph_scene,
                                       self.canvas.strip, self._shown_subgraph, self)
        from .debugger import DebuggerController  # the Debug menu, its docks and canvas marks
        self.debugger = DebuggerController(self)
        from .compare_view import CompareController
        self.compare = CompareController(self)  # B's canvas, Differences, Run Both
        from .window_docks import add_feature_docks
        add_feature_docks(self)  # Quantization, Memory, Targets
        self._build_toolbar()
        follow_docks(self.overlay_choice, self.docks.overlay_docks(), self.docks.bring_forward)
        self._connect_canvas()
        self.docks.finish(remember_layout)
        self._sized = False

    # ==========================================================================================
    # construction
    def _connect_canvas(self) -> None:
        v, n = self.view, self.nav
        v.nodeClicked.connect(self._node_clicked)
        v.nodeDoubleClicked.connect(self._node_double_clicked)
        v.edgeClicked.connect(self._edge_clicked)
        v.backgroundClicked.connect(self.clear_selection)
        v.contextRequested.connect(self.editing.canvas_menu)
        v.viewChanged.connect(self.update_zoom_label)
        n.subgraphChosen.connect(lambda i: self.show_subgraph(i))
        n.crumbChosen.connect(self.navigator.crumb_chosen)
        n.callChosen.connect(self.follow_call)

    def _build_panels(self) -> None:
        """The window's own docks: Model, Properties and Tensor tabbed at the right (with
        History and Changes when asked for), Problems under the canvas."""
        self.model_panel, self.properties_panel = ModelPanel(), PropertiesPanel()
        self.tensor_panel, self.problems_panel = TensorPanel(), ProblemsPanel()
        self.history_view = QUndoView(self.undo_group)
        self.history_view.setEmptyLabel("<opened file>")
        self.changes_panel = ChangesPanel()
        add = self.add_dock
        self.model_dock = add(MODEL_DOCK, self.model_panel)
        self.properties_dock = add(PROPERTIES_DOCK, self.properties_panel)
        self.tensor_dock = add(TENSOR_DOCK, self.tensor_panel)
        self.history_dock = add(HISTORY_DOCK, self.history_view, self.actions.edit)
        self.changes_dock = add(CHANGES_DOCK, self.changes_panel, self.actions.edit)
        self.problems_dock = add(PROBLEMS_DOCK, self.problems_panel)
        self.model_dock.raise_()
        # changes() compares the whole model with the opened file: only while it is seen
        self.changes_dock.visibilityChanged.connect(lambda _v: self.editing.refresh_changes())
        self.properties_panel.tensorActivated.connect(self.select_tensor)
        self.properties_panel.callActivated.connect(self.follow_call)
        self.tensor_panel.opActivated.connect(self.select_op)
        self.tensor_panel.tensorActivated.connect(self.select_tensor)
        self.model_panel.subgraphActivated.connect(lambda i: self.show_subgraph(i))
        self.problems_panel.findingActivated.connect(self._finding_activated)
        self.problems_panel.updateShapesRequested.connect(self.shapes.update_stored_shapes)
        digits = self.tensor_panel.values_pane.digits
        digits.setValue(int(self.settings.value("values/digits", digits.value())))
        digits.valueChanged.connect(lambda d: self.settings.setValue("values/digits", d))
        for panel in (self.tensor_panel, self.model_panel):
            panel.editFailed.connect(self.editing.edit_failed)
        # the panels are views of the open workspace: a new one clears them (an edit
        # refreshes them in place: `window_editing`)
        self.hub.subscribe(self._show_workspace)
        self.hub.subscribe(lambda _ws: self.show_problems(), MODEL, PROBLEMS, "quant/report",
                           "targets/report")

    def _build_status(self) -> None:
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)  # busy indicator: parsing has no meaningful percentage
        self.progress.setMaximumWidth(160)
        self.progress.setTextVisible(False)
        self.progress.hide()
        self.zoom_label = QLabel("")
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.zoom_label)

    def _build_toolbar(self) -> None:
        """The canvas's toolbar: the overlay selector (None, Quantization, Memory, Targets:
        X, Diff, Op time, LiteRT error), beside the debugger's."""
        bar = QToolBar("Canvas", self)
        bar.setObjectName("canvas-toolbar")
        bar.addWidget(QLabel(" Colour by "))
        self.overlay_selector = OverlaySelector(self.overlay_choice)
        bar.addWidget(self.overlay_selector)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self.overlay_choice.subscribe(lambda _key: self.show_problems())

    def _show_workspace(self, ws: Workspace) -> None:
        """Another workspace: the panels show its model and nothing selected in it."""
        for panel in (self.properties_panel, self.tensor_panel, self.model_panel):
            panel.editable = ws.model is not None
        self.tensor_panel.forget_values()
        self.properties_panel.show_operator(None)
        self.tensor_panel.show_tensor(None)
        self.model_panel.show_model(ws.model, ws.summary)
        self.changes_panel.show_changes(None)
        self.refresh_highlight(False)

    # ==========================================================================================
    # hosting
    def add_dock(self, spec: DockSpec, widget: QWidget, menu=None) -> QDockWidget:
        """Host ``widget`` in a dock as ``spec`` declares it (`dock_host.DockHost.add`)."""
        return self.docks.add(spec, widget, menu)

    def dock(self, dock_id: str) -> QDockWidget:
        return self.docks.dock(dock_id)

    def panel(self, dock_id: str) -> QWidget:
        """The widget of the dock ``dock_id`` ("quantization", "memory", "targets" ...)."""
        return self.docks.widget(dock_id)

    def show_problems(self) -> None:
        """Problems lists the model's problems and, apart and as information, the verdicts
        of the target whose overlay is on.  It is shown while it lists something and
        folded away while it is empty (the canvas gets the room)."""
        ws = self.workspace
        stale = len(ws.shape_check.mismatches) if ws.shape_check else 0
        notes = target_notes(ws, self.overlay_choice.target) if ws.model is not None else None
        self.problems_panel.show_findings(model_problems(ws), stale, notes)
        count = self.problems_panel.problem_count()
        self.problems_dock.setWindowTitle(f"Problems ({count})")
        self.docks.fold("problems", self.problems_panel.count() == 0)

    def show_op(self, subgraph: int, op: int) -> None:
        """Show ``subgraph`` (when another is on the canvas) and select operator ``op``."""
        if self.model is None or not 0 <= subgraph < len(self.model.subgraphs):
            return
        if subgraph != self.subgraph:
            self.show_subgraph(subgraph, wait=True)
        if 0 <= op < len(self.model.subgraphs[subgraph].operators):
            self.select_op(op)

    def show_tensor(self, subgraph: int, tensor: int) -> None:
        """Show ``subgraph`` (when another is on the canvas) and select ``tensor``."""
        if self.model is None or not 0 <= subgraph < len(self.model.subgraphs):
            return
        if subgraph != self.subgraph:
            self.show_subgraph(subgraph, wait=True)
        self.select_tensor(tensor)

    def compare_values(self, subgraph: int, tensor: int, a, b, labels, caption: str) -> None:
        """The Tensor panel's Compare tab: two versions of tensor ``tensor``'s values (ours
        and LiteRT's, dequantized and float), the tensor shown first."""
        if self.model is None or subgraph != self.subgraph:
            return
        shown = self.tensor_panel.tensor
        if shown is None or (shown.subgraph.index, shown.index) != (subgraph, tensor):
            self.tensor_panel.show_tensor(self.model.subgraphs[subgraph].tensors[tensor])
        if self.tensor_panel.show_comparison(a, b, tuple(labels), caption,
                                             tensor=(subgraph, tensor)):
            self.tensor_dock.raise_()

    # ==========================================================================================
    # the open workspace, and the flows' verbs
    @property
    def workspace(self) -> Workspace:
        """The open model's workspace (an empty one before the first open)."""
        return self.hub.workspace

    model = property(lambda self: self.hub.workspace.model, doc="The open model (or None).")
    path = property(lambda self: self.hub.workspace.path, doc="The file it was opened from.")
    save_target = property(lambda self: self.hub.workspace.save_target, doc="Where Save writes.")
    subgraph = property(lambda self: self.hub.workspace.subgraph, doc="The subgraph shown.")
    trail = property(lambda self: self.hub.workspace.trail, doc="The trail to the subgraph shown.")
    selection = property(lambda self: self.hub.workspace.selection, doc="The selection.")
    shape_check = property(lambda self: self.hub.workspace.shape_check,
                           doc="Computed vs stored shapes (ShapeInference), when checked.")

    def open_path(self, path, **kwargs) -> bool:
        """Open a model (`window_files.FileFlows.open_path`)."""
        return self.files.open_path(path, **kwargs)

    def reload(self, *, wait: bool = False) -> bool:
        return self.files.reload(wait=wait)

    def export_image(self, path):
        return self.files.export_image(path)

    def apply_edit(self, command):
        """Apply one EditCommand as one undoable step (`window_editing.EditFlow`)."""
        return self.editing.apply_edit(command)

    def undo(self) -> None:
        self.editing.undo()

    def redo(self) -> None:
        self.editing.redo()

    document = property(lambda self: self.editing.document, doc="The edit document.")
    undo_stack = property(lambda self: self.editing.undo_stack, doc="Its undo stack.")
    is_modified = property(lambda self: self.editing.is_modified, doc="Unsaved edits?")

    def busy(self, text: str) -> None:
        self.progress.show()
        self.statusBar().showMessage(text)

    def idle(self) -> None:
        if not self.tasks:
            self.progress.hide()
        self.statusBar().clearMessage()

    # ==========================================================================================
    # subgraphs (`window_navigation.Navigator`)
    def _shown_subgraph(self) -> int | None:
        data = self.graph_scene.data
        return None if data is None or self.model is None else self.subgraph

    def show_subgraph(self, which: int | str, *, wait: bool = False) -> None:
        """Show a subgraph (index, name or signature key), with the trail of its calls."""
        self.navigator.show_subgraph(which, wait=wait)

    def open_called(self, op_index: int, role: str | None = None, *, wait: bool = False) -> None:
        """Open a subgraph that operator ``op_index`` of the shown subgraph calls."""
        self.navigator.open_called(op_index, role, wait=wait)

    def follow_call(self, call: nav.Call, *, wait: bool = False) -> None:
        self.navigator.follow_call(call, wait=wait)

    def go_back(self) -> None:
        self.navigator.go_back()

    def fit_graph(self) -> None:
        """View > Fit Graph (`window_navigation.Navigator.fit_graph`)."""
        self.navigator.fit_graph()

    # ==========================================================================================
    # selection
    def _node_clicked(self, row: int) -> None:
        lab = self.graph_scene.data.labels[row]
        if lab.origin is not None:  # inlined from a composite's decomposition
            if lab.kind == "op":
                self.composites.select_inlined(*lab.origin, center=False)
            return
        if lab.kind == "op":
            self.select_op(lab.op_index, center=False)
        elif lab.tensor is not None:
            self.select_tensor(lab.tensor, center=False)

    def _edge_clicked(self, edge: int) -> None:
        sd = self.graph_scene.data
        t = int(sd.edge_tensor[edge])
        if t >= 0:
            self.select_tensor(t, center=False)
        elif sd.inline is not None and edge in sd.inline.edge_origin:
            self.composites.select_inlined_tensor(*sd.inline.edge_origin[edge], center=False)

    def _node_double_clicked(self, row: int) -> None:
        lab = self.graph_scene.data.labels[row]
        if lab.kind == "op" and lab.origin is not None:
            self.composites.open_inlined(*lab.origin)
        elif lab.kind == "op" and lab.calls:
            self.open_called(lab.op_index)

    def select_spec(self, spec: str) -> None:
        """``op:N`` or ``tensor:N`` (the --select argument); ValueError when it names nothing."""
        self.select(parse_spec(self.model, self.subgraph, spec))

    def select(self, selection: Selection | None, center: bool = True) -> None:
        """Select an operator or a tensor of the shown subgraph (None clears)."""
        if selection is None:
            self.clear_selection()
        elif selection.is_op:
            self.select_op(selection.index, center)
        else:
            self.select_tensor(selection.index, center)

    def select_later(self, spec: str) -> None:
        """Select ``spec`` once the model being opened is shown."""
        self.files.pending_select = spec

    def select_op(self, k: int, center: bool = True) -> None:
        if self.model is None:
            return
        sg = self.model.subgraphs[self.subgraph]
        op = sg.operators[k]
        self.workspace.selection = Selection.op(sg, k)
        self.properties_panel.show_operator(op)
        # The weights (the largest constant input) are usually what one wants to see next.
        const = [t for t in op.inputs if 0 <= t < len(sg.tensors) and sg.tensors[t].is_constant]
        const.sort(key=lambda t: -sg.tensors[t].num_elements)
        first = const[0] if const else next((t for t in op.outputs if t >= 0), None)
        self.tensor_panel.show_tensor(sg.tensors[first] if first is not None else None)
        self.properties_dock.raise_()
        self.selection_changed(center)

    def select_tensor(self, t: int, center: bool = True) -> None:
        if self.model is None:
            return
        sg = self.model.subgraphs[self.subgraph]
        self.workspace.selection = Selection.tensor(t)
        self.tensor_panel.show_tensor(sg.tensors[t])
        # Properties shows the operator that gives the tensor its meaning: its producer, or
        # for constants and subgraph inputs the first operator reading it.
        producers, consumers = producers_consumers(sg.tensors[t])
        if producers:
            self.properties_panel.show_operator(sg.operators[producers[0]], f"produces t{t}")
        elif consumers:
            self.properties_panel.show_operator(sg.operators[consumers[0]], f"reads t{t}")
        self.tensor_dock.raise_()
        self.selection_changed(center)

    def selection_changed(self, center: bool) -> None:
        """The selection was set: highlight it and tell the views."""
        self.refresh_highlight(center)
        self.hub.changed(SELECTION)
        self.selectionChanged.emit(self.selection)

    def clear_selection(self) -> None:
        """Nothing selected (a click on empty canvas, Escape): the highlight goes, and so do
        the Properties and Tensor panels' contents, which described the old selection."""
        self.workspace.selection = None
        self.properties_panel.show_operator(None)
        self.tensor_panel.show_tensor(None)
        self.selection_changed(False)

    def restore_selection(self, selection: Selection) -> None:
        try:
            self.select(selection)
        except (IndexError, KeyError):
            pass

    def selected_op(self) -> tuple[int, int] | None:
        """(subgraph, op) of the selected operator (an inlined one's own subgraph)."""
        return self.composites.selected_op()

    def selected_rows(self) -> tuple[list[int], list[int], list[int]]:
        """(boxes, edges, related edges) the current selection highlights."""
        sd = self.graph_scene.data
        if sd is None or self.selection is None:
            return [], [], []
        inlined = self.composites.inlined_rows(sd)
        if inlined is not None:
            return inlined
        kind, n = self.selection
        if kind == "op":
            row = sd.op_node.get(n)
            if row is None:
                return [], [], []
            node = sd.node_ids[row]
            related = [e for e, (u, v) in enumerate(zip(sd.edge_source, sd.edge_target)) if u == node or v == node]
            return [row], [], related
        return list(sd.tensor_nodes.get(n, [])), list(sd.tensor_edges.get(n, [])), []

    def refresh_highlight(self, center: bool) -> None:
        """Highlight the selection and the Find matches; ``center``: bring the selection
        into view."""
        hl = self.graph_scene.highlight
        if hl is None:
            return
        nodes, edges, related = self.selected_rows()
        found_nodes, found_edges = self.finder.rows()
        current = self.workspace.find_current
        hl.set_highlight(nodes=nodes, edges=edges, related=related, found_nodes=found_nodes,
                         found_edges=found_edges,
                         current=(current.kind, current.index) if current else None)
        if not center:
            return
        target = None
        if nodes:
            target = self.graph_scene.node_rect(nodes[0])
        elif edges:
            pts = self.graph_scene.data.edge_points[edges[0]]
            if pts:
                target = QRectF(pts[0][0] - 40, pts[0][1] - 10, 80, 40)
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        if target is not None and not visible.contains(target):
            self.view.show_rect(target)

    def _finding_activated(self, finding) -> None:
        if finding.operator is not None:
            self.show_op(self.subgraph if finding.subgraph is None else finding.subgraph,
                         finding.operator)
        elif finding.tensor is not None:
            self.show_tensor(self.subgraph if finding.subgraph is None else finding.subgraph,
                             finding.tensor)

    # ==========================================================================================
    # the window
    def reset_layout(self) -> None:
        """View > Reset Layout: the docks where they start (a dock's overlay goes off with
        it), sized for the window."""
        self.overlay_choice.choose("")
        self.docks.reset(self.remember_layout)
        self.show_problems()
        self.statusBar().showMessage("The default layout is back", 5000)

    def show_shortcuts(self) -> ShortcutsDialog:
        dialog = ShortcutsDialog(self)
        dialog.show()
        return dialog

    def shortcut_rows(self) -> list[tuple[str, str, str]]:
        return shortcut_rows(self)

    def update_zoom_label(self) -> None:
        self.zoom_label.setText(f"{self.view.zoom() * 100:.0f} %")
        self.canvas.centre_placeholder()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if not self._sized:
            self._sized = True
            if not self.docks.restored:
                self.docks.size_docks()

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        QTimer.singleShot(0, self, self.update_zoom_label)
        if event.oldSize().width() > event.size().width() > 0:
            QTimer.singleShot(0, self, self.docks.keep_canvas_room)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt API
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt API
        files = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if files:
            event.acceptProposedAction()
            self.files.open_dropped(files)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        if not self.files.maybe_save():
            event.ignore()
            return
        self.editing.window_closed()  # saved or given up: its recovery journal goes
        if self.remember_layout:
            self.docks.save()
        self.settings.sync()
        super().closeEvent(event)

    def about(self) -> None:
        QMessageBox.about(self, "About tflite-viewer",
                          "tflite-viewer: explore, run, quantization-inspect and edit TFLite models.")
