"""The main window: canvas in the middle, panels in docks, and the select/navigate flow.

Everything shown about the open model lives in its `workspace.Workspace` (the model, the
subgraph shown with the `navigation` trail, the laid-out scenes, the `selection.Selection`,
the debug session, ...), owned by ``self.hub``; the window's ``model``, ``subgraph``,
``selection`` ... read and write it (`window_workspace`).  Docks and overlays subscribe to
the hub and render the workspace they are handed; they never reach into each other.  The
flows live beside it: `window_files` (open, save, recent, export), `window_editing`
(edits, undo, redo, refreshing in place), `window_shapes` (stored vs computed shapes),
`window_layout` (dock sizes, saved layout, Reset Layout) and `menus` (the actions); the
state that needs no Qt (`workspace`, `selection`, `navigation`, `search`) is plain Python
tests drive without a window.
"""
from __future__ import annotations

import logging

from PySide6.QtCore import QRectF, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QUndoGroup
from PySide6.QtWidgets import (QDockWidget, QLabel, QMainWindow, QMessageBox, QProgressBar,
                               QSplitter, QUndoView, QVBoxLayout, QWidget)

from ..graph.build import subgraph_references
from ..model import Model
from ..model.op_metadata import first_call
from .state import navigation as nav
from . import memory_overlay, quant_overlay, style, targets_overlay
from .breadcrumbs import NavigationBar
from .errors import ErrorReporter, reporter
from .find_bar import FindBar
from .graph_scene import GraphScene
from .graph_view import READABLE_ZOOM, GraphView
from .menus import build_menus
from .minimap import Minimap
from .state.navigation import Crumb
from .notice import NoticeBar
from .panels.changes_panel import ChangesPanel
from .panels.model_panel import ModelPanel
from .panels.problems_panel import ProblemsPanel
from .panels.properties_panel import PropertiesPanel
from .panels.tensor_panel import TensorPanel
from .state.scene_data import SceneData
from .state.search import Match, find
from .state.selection import Selection, parse_spec, producers_consumers
from .window_composites import CompositeFolding
from .window_editing import EditFlow
from .window_files import APP_NAME, FileFlows
from .window_layout import LayoutFlow
from .window_shapes import ShapeCheck
from .window_workspace import WorkspaceState
from .workers import Task, lay_out
from .state.workspace import MODEL, NAVIGATION, PROBLEMS, QUANT, SELECTION, Hub

log = logging.getLogger(__name__)


class MainWindow(WorkspaceState, FileFlows, EditFlow, ShapeCheck, LayoutFlow, CompositeFolding,
                 QMainWindow):
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
        # the open model and everything shown about it (model, subgraph, selection, ...)
        self.hub = Hub()
        self._open_serial = 0
        self._layout_serial = 0
        self._tasks: dict[int, Task] = {}  # keep running tasks' signal objects alive
        self._shape_tasks: dict[int, tuple] = {}  # background shape checks: (task, model)
        self._open_requests: dict[int, tuple] = {}  # running opens: (path, selection)
        self._layout_models: dict[int, Model] = {}  # running layouts: the model laid out
        self._pending_select: str | None = None
        self.undo_group = QUndoGroup(self)
        # Ask before discarding unsaved edits (closing, opening another file).  Tests that
        # leave edits behind turn it off so closing the window cannot block on a dialog.
        self.ask_before_discarding = True
        self.last_edit_message = ""

        self.setWindowTitle(APP_NAME)
        self.setAcceptDrops(True)
        self.resize(1440, 900)
        self._build_canvas()
        self._build_docks()
        build_menus(self)
        self._build_status()
        from .debugger import DebuggerController  # the Debug menu, its docks and canvas marks
        self.debugger = DebuggerController(self)
        quant_overlay.install(self)  # the Quantization dock, its overlay, Problems entries
        memory_overlay.install(self)  # the Memory dock and its overlay
        targets_overlay.install(self)  # the Targets dock, its overlay, Problems entries
        from . import compare_view
        compare_view.install(self)  # File > Compare With: B's canvas, Differences, colours
        self._init_layout()

    # ==========================================================================================
    # construction
    def _build_canvas(self) -> None:
        self.graph_scene = GraphScene(self)
        self.view = GraphView(self.graph_scene)
        self.minimap = Minimap(self.view)
        self.nav = NavigationBar()
        self.find_bar = FindBar()
        self.find_bar.hide()
        self.find_bar.return_focus = self.view
        self.placeholder = QLabel("Open a model: File \u203a Open (Ctrl+O), or drop a .tflite file here",
                                  self.view)
        self.placeholder.setStyleSheet("color: #6e7781; font-size: 15px;")
        self.placeholder.adjustSize()
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        self.notice = NoticeBar()
        self.notice.attach(self.view)  # over the canvas: showing it never moves the graph
        layout.addWidget(self.nav)
        # A's canvas, and B's beside it while a comparison is open (compare_view)
        self.canvas_split = QSplitter(Qt.Orientation.Horizontal)
        self.canvas_split.setChildrenCollapsible(False)
        self.canvas_split.addWidget(self.view)
        layout.addWidget(self.canvas_split, 1)
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
        self.nav.callChosen.connect(self.follow_call)
        self.find_bar.queryChanged.connect(self.find)
        self.find_bar.currentChanged.connect(self._goto_match)
        self.find_bar.closed.connect(self._clear_find)
        self.find_bar.set_mode(str(self.settings.value("find/mode", "word")))
        self.find_bar.modeChanged.connect(self._find_mode_changed)

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
        self.properties_panel.callActivated.connect(self.follow_call)
        self.tensor_panel.opActivated.connect(self.select_op)
        self.tensor_panel.tensorActivated.connect(self.select_tensor)
        self.model_panel.subgraphActivated.connect(lambda i: self.show_subgraph(i))
        self.problems_panel.findingActivated.connect(self._finding_activated)
        self.problems_panel.updateShapesRequested.connect(self.update_stored_shapes)
        digits = self.tensor_panel.values_pane.digits
        digits.setValue(int(self.settings.value("values/digits", digits.value())))
        digits.valueChanged.connect(lambda d: self.settings.setValue("values/digits", d))
        for panel in (self.properties_panel, self.tensor_panel, self.model_panel):
            panel.editRequested.connect(self.apply_edit)
        self.tensor_panel.editFailed.connect(self._edit_failed)
        self.model_panel.editFailed.connect(self._edit_failed)
        # the panels are views of the open workspace: a new one clears them (an edit
        # refreshes them in place: `window_editing`)
        self.hub.subscribe(self._show_workspace)
        self.hub.subscribe(self._show_problems, MODEL, PROBLEMS, QUANT)

    def _show_workspace(self, ws) -> None:
        """Another workspace: the panels show its model and nothing selected in it."""
        for panel in (self.properties_panel, self.tensor_panel, self.model_panel):
            panel.editable = ws.model is not None
        self.tensor_panel.forget_values()
        self.properties_panel.show_operator(None)
        self.tensor_panel.show_tensor(None)
        self.model_panel.show_model(ws.model, ws.summary)
        self.changes_panel.show_changes(None)
        self._changes_stale = False
        self._refresh_highlight(False)

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
    # ==========================================================================================
    # subgraphs
    def show_subgraph(self, which: int | str, *, wait: bool = False) -> None:
        """Show a subgraph (index, name or signature key); the trail says where it is called
        from (main > WHILE #3 body > ...) when some operator calls it."""
        if self.model is None:
            return
        index = self.model.subgraph_index(which)
        self.trail = self._trail_to(index)
        self._show(index, wait)

    def _trail_to(self, index: int) -> list[Crumb]:
        if self._references is None:
            self._references = subgraph_references(self.model)
        return nav.trail_to(self.model, index, self._references)

    def enter_subgraph(self, index: int, via: str = "", *, wait: bool = False) -> None:
        """Show a subgraph called from the current one, extending the trail."""
        if self.model is None or not 0 <= index < len(self.model.subgraphs):
            return
        self.trail = nav.enter(self.trail, self.model, index, via)
        self._show(index, wait)

    def _show_trail(self) -> None:
        siblings = [(c, nav.sibling_label(self.model, c)) for c in nav.sibling_calls(self.trail, self.model)]
        self.nav.set_trail(self.trail, siblings)

    def go_back(self) -> None:
        if len(self.trail) > 1:
            self._crumb_chosen(len(self.trail) - 2)

    def _crumb_chosen(self, pos: int) -> None:
        self.trail = self.trail[:pos + 1]
        self._show(self.trail[-1].subgraph, wait=False)

    def _show(self, index: int, wait: bool) -> None:
        scene = self.scenes.get(index)
        if scene is not None and scene.expanded == self.expand_composites:
            self._display(scene)
            return
        if wait:
            self._display(self._layout_now(index))
            return
        self._busy(f"Laying out {self.model.subgraphs[index].display_name}\u2026")
        task = Task(lay_out, self.model, index, self.measure, None, self.computed_shapes(index),
                    self.expand_composites)
        self._layout_serial = task.serial
        self._layout_models[task.serial] = self.model
        task.signals.finished.connect(self._layout_done)  # bound methods: see _open_requests
        task.signals.failed.connect(self._layout_failed)
        self._tasks[task.serial] = task
        task.start()

    def _layout_now(self, index: int) -> SceneData:
        sd = lay_out(self.model, index, self.measure, None, self.computed_shapes(index),
                     self.expand_composites)
        self.scenes[index] = sd
        return sd

    def _layout_done(self, serial: int, sd: SceneData) -> None:
        self._tasks.pop(serial, None)
        model = self._layout_models.pop(serial, None)
        if model is not self.model or sd.expanded != self.expand_composites:
            self._idle()  # the model was edited (or replaced) or Fold Composites changed
            return
        self.scenes[sd.subgraph] = sd
        self._idle()
        if serial == self._layout_serial:
            self._display(sd)

    def _layout_failed(self, serial: int, exc: BaseException) -> None:
        self._tasks.pop(serial, None)
        self._layout_models.pop(serial, None)
        self._idle()
        self.errors.unexpected(exc)

    def _display(self, sd: SceneData) -> None:
        self.subgraph = sd.subgraph
        self.selection = None
        self.graph_scene.set_data(sd)
        self.placeholder.hide()
        self._show_trail()
        self.minimap.rebuild()
        self.initial_view()
        if self.find_bar.isVisible() and self.find_bar.edit.text():
            self.find(self.find_bar.edit.text())
        self.hub.changed(NAVIGATION)
        self.subgraphShown.emit(sd.subgraph)

    def fit_graph(self) -> None:
        """View > Fit Graph: the whole graph if its labels stay readable, else the readable
        minimum zoom around the selection (or the graph's top); the overview map shows
        the rest."""
        nodes, edges, _ = self.selected_rows()
        focus = self.graph_scene.node_rect(nodes[0]).center() if nodes else None
        self.view.fit_all(min_zoom=READABLE_ZOOM, focus=focus)
        self._update_zoom_label()

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
        if lab.origin is not None:  # inlined from a composite's decomposition
            if lab.kind == "op":
                self.select_inlined(*lab.origin, center=False)
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
            self.select_inlined_tensor(*sd.inline.edge_origin[edge], center=False)

    def _node_double_clicked(self, row: int) -> None:
        lab = self.graph_scene.data.labels[row]
        if lab.kind == "op" and lab.origin is not None:
            self.open_inlined(*lab.origin)
        elif lab.kind == "op" and lab.calls:
            self.open_called(lab.op_index)

    def open_called(self, op_index: int, role: str | None = None, *, wait: bool = False) -> None:
        """Open a subgraph that operator ``op_index`` of the shown subgraph calls (``role``,
        or the most useful one: the body of a loop, the then-branch); the others stay one
        click away beside the trail and as links in Properties."""
        op = self.model.subgraphs[self.subgraph].operators[op_index]
        calls = op.called_subgraphs
        if not calls:
            return
        if role is None:
            role = first_call(op.name, calls)
        self.select_op(op_index, center=False)
        self.follow_call(nav.Call(self.subgraph, op_index, role), wait=wait)
        others = [f"{r}: subgraph {i}" for r, i in calls.items() if r != role]
        if others:
            self.statusBar().showMessage(f"{op.name} #{op_index} also calls {', '.join(others)} "
                                         "(beside the trail and in Properties)", 10000)

    def follow_call(self, call: nav.Call, *, wait: bool = False) -> None:
        """Show the subgraph ``call`` leads to; the trail is cut back to the calling subgraph
        first, so a sibling branch replaces the one shown (`navigation.enter_call`)."""
        if self.model is None:
            return
        self.trail = nav.enter_call(self.trail, self.model, call)
        self._show(self.trail[-1].subgraph, wait)

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
        self._pending_select = spec

    def select_op(self, k: int, center: bool = True) -> None:
        if self.model is None:
            return
        sg = self.model.subgraphs[self.subgraph]
        op = sg.operators[k]
        self.selection = Selection.op(sg, k)
        self.properties_panel.show_operator(op)
        # The weights (the largest constant input) are usually what one wants to see next.
        const = [t for t in op.inputs if 0 <= t < len(sg.tensors) and sg.tensors[t].is_constant]
        const.sort(key=lambda t: -sg.tensors[t].num_elements)
        first = const[0] if const else next((t for t in op.outputs if t >= 0), None)
        self.tensor_panel.show_tensor(sg.tensors[first] if first is not None else None)
        self._refresh_highlight(center)
        self.hub.changed(SELECTION)
        self.selectionChanged.emit(self.selection)

    def select_tensor(self, t: int, center: bool = True) -> None:
        if self.model is None:
            return
        sg = self.model.subgraphs[self.subgraph]
        self.selection = Selection.tensor(t)
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
        self.hub.changed(SELECTION)
        self.selectionChanged.emit(self.selection)

    def clear_selection(self) -> None:
        """Nothing selected (a click on empty canvas, Escape): the highlight goes, and so do
        the Properties and Tensor panels' contents, which described the old selection."""
        self.selection = None
        self.properties_panel.show_operator(None)
        self.tensor_panel.show_tensor(None)
        self._refresh_highlight(False)
        self.hub.changed(SELECTION)
        self.selectionChanged.emit(None)

    def _restore_selection(self, selection: Selection) -> None:
        try:
            self.select(selection)
        except (IndexError, KeyError):
            pass

    def selected_rows(self) -> tuple[list[int], list[int], list[int]]:
        """(boxes, edges, related edges) the current selection highlights."""
        sd = self.graph_scene.data
        if sd is None or self.selection is None:
            return [], [], []
        inlined = self.inlined_rows(sd)
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
    # find
    def find(self, query: str) -> list[Match]:
        """Highlight every match of ``query`` in the shown subgraph (in the Find bar's mode)."""
        if self.model is None:
            return []
        try:
            self._find_matches = find(self.model, self.subgraph, query, mode=self.find_bar.mode)
        except ValueError as exc:  # a regex that does not compile
            self._find_matches = []
            self.find_bar.set_problem("bad pattern")
            self.find_bar.status.setToolTip(str(exc))
        else:
            self.find_bar.set_matches(self._find_matches)
        self._find_current = None
        self._refresh_highlight(False)
        return self._find_matches

    def _find_mode_changed(self, mode: str) -> None:
        self.settings.setValue("find/mode", mode)
        if self.find_bar.edit.text():
            self.find(self.find_bar.edit.text())

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
    # misc
    def _update_zoom_label(self) -> None:
        self.zoom_label.setText(f"{self.view.zoom() * 100:.0f} %")
        self.placeholder.move(max((self.view.width() - self.placeholder.width()) // 2, 0),
                              max((self.view.height() - self.placeholder.height()) // 2, 0))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        QTimer.singleShot(0, self._update_zoom_label)
        if event.oldSize().width() > event.size().width() > 0:
            QTimer.singleShot(0, self.keep_canvas_room)

    def about(self) -> None:
        QMessageBox.about(self, "About tflite-viewer",
                          "tflite-viewer: explore, run, quantization-inspect and edit TFLite models.")
