"""File > Compare With: the open model (A) beside another (B), on two canvases.

`CompareController` hosts a second canvas for B to the right of A's (hidden until a
comparison is open) and the Differences dock, and runs File > Compare With / Stop
Comparing.  The colours are the Diff overlay (`state.overlays.DiffOverlay`): removed ops
red on A, added ops green on B, changed amber on both, each canvas with its legend strip;
a comparison that opens turns A's overlay to Diff, and B's canvas shows nothing else.
Navigation is synchronized: selecting an op or tensor on either canvas selects its match
on the other, the subgraph shown on B follows A's, and scrolling A moves B to the match of
the op in the middle of A's view; Properties says which side it shows (a click on B shows
B's operator, read-only).  For a matched tensor pair the Tensor panel's Compare tab shows
both values (constants; activations once both models ran: the dock's Run Both, on the
window's choice of samples, the Quantization dock's) and their difference.

Everything about the comparison is the open workspace's (`state.diff.diff_state`): these
widgets render it.  The diff (and B's layout) is computed on a worker; an edit of A, a
reload of A, or B's file changing on disk computes it again.
"""
from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QPointF, QTimer, Signal
from PySide6.QtWidgets import QFileDialog, QLabel, QMainWindow, QWidget

from ..diff import diff_models
from ..model import load_model
from .canvas import canvas_column
from .graph_scene import GraphScene
from .graph_view import GraphView
from .overlays import CanvasOverlays, LegendStrip
from .panels.differences_panel import DOCK, DifferencesPanel
from .state import diff as cmp
from .state.overlays import NONE, DiffOverlay, OverlayChoice
from .state.samples import run_both_kwargs
from .state.workspace import MODEL, NAVIGATION, SELECTION
from .workers import Task, lay_out


log = logging.getLogger(__name__)


class ComparePane(QObject):
    """B's canvas with a header naming the file and what the comparison found, and a
    legend strip under it (``widget`` is what the window's canvas holds)."""

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self.header = QLabel("")
        self.header.setWordWrap(True)
        self.header.setStyleSheet("padding: 4px 8px; background: #f6f8fa; color: #1f2328;")
        self.scene = GraphScene(self)
        self.view = GraphView(self.scene)
        self.strip = LegendStrip()
        self.widget: QWidget = canvas_column(self.view, self.strip, self.header)


def _compute(a_model, path: Path, other, measure, subgraph_a: int):
    """On a worker: B (read again when ``other`` is None), the diff, and B's layout of the
    subgraph matched with the one A shows."""
    b = other if other is not None else load_model(path)
    diff = diff_models(a_model, b)
    diff.b_label = str(path)
    sb = diff.match.subgraphs.get(subgraph_a, 0 if b.subgraphs else None)
    scene = lay_out(b, sb, measure) if sb is not None else None
    return b, diff, sb, scene


class CompareController(QObject):
    """The window's comparison views and flows (module docstring)."""

    computed = Signal()   # a comparison (or B's layout) arrived: tests and --screenshot wait

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.window = w = window
        self.pane = ComparePane(self)
        w.canvas.add_pane(self.pane.widget)
        self.b_subgraph: int | None = None
        self.b_scenes: dict[int, object] = {}   # B subgraph -> SceneData (this comparison)
        # B's canvas shows the diff, always
        self.b_overlays = CanvasOverlays(w.hub, OverlayChoice([DiffOverlay("b")]), self.pane.scene,
                                         self.pane.strip, lambda: self.b_subgraph, self)
        self.b_overlays.choice.choose("diff")
        self._tasks: dict[int, Task] = {}
        self._b_click: tuple[str, int] | None = None  # a click on B being synchronized
        self.panel = DifferencesPanel(w.hub, w.samples)
        self.dock = w.add_dock(DOCK, self.panel)
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(self._other_changed)
        self._scroll_timer = QTimer(self)
        self._scroll_timer.setSingleShot(True)
        self._scroll_timer.setInterval(60)
        self._scroll_timer.timeout.connect(self._follow_scroll)
        w.hub.subscribe(self._workspace_changed, MODEL)
        w.hub.subscribe(self._render, NAVIGATION, cmp.TOPIC)
        w.hub.subscribe(self._sync_selection, SELECTION)
        w.view.viewChanged.connect(self._scroll_timer.start)
        self.pane.view.nodeClicked.connect(self._b_node_clicked)
        self.pane.view.edgeClicked.connect(self._b_edge_clicked)
        self.panel.targetActivated.connect(self.go_to)
        self.panel.compareRequested.connect(self.choose)
        self.panel.numbersRequested.connect(self.run_numbers)

    @property
    def state(self) -> cmp.DiffState:
        return cmp.diff_state(self.window.workspace)

    # -- starting and stopping -----------------------------------------------------------
    def choose(self) -> None:
        w = self.window
        if w.model is None:
            return
        start = str(self.state.other_path or (w.workspace.path or Path(".")).parent)
        path, _ = QFileDialog.getOpenFileName(w, "Compare With", start,
                                              "TFLite models (*.tflite);;All files (*)")
        if path:
            self.compare_with(path)

    def compare_with(self, path: str | Path) -> None:
        """Compare the open model with the model at ``path`` (read on a worker); the
        canvas shows the differences first."""
        ws = self.window.workspace
        ws.set_part(cmp.KEY, cmp.DiffState(Path(path),
                                           status=f"Comparing with {Path(path).name} \u2026"))
        self._watch(Path(path))
        self.dock.show()
        self.dock.raise_()
        self.window.overlay_choice.choose("diff")
        self._start(ws, reread=True)

    def stop(self) -> None:
        ws = self.window.workspace
        ws.set_part(cmp.KEY, cmp.DiffState())
        self._watch(None)
        if self.window.overlay_choice.key == "diff":
            self.window.overlay_choice.choose(NONE)
        self.window.hub.changed(cmp.TOPIC, ws)

    def _watch(self, path: Path | None) -> None:
        if self.watcher.files():
            self.watcher.removePaths(self.watcher.files())
        if path is not None and path.exists():
            self.watcher.addPath(str(path))

    def _other_changed(self, _path: str) -> None:
        ws = self.window.workspace
        state = self.state
        if state.active:
            state.status = "B changed on disk: comparing again \u2026"
            self._start(ws, reread=True)
            self._watch(state.other_path)

    def _workspace_changed(self, ws) -> None:
        """Another model opened (a new workspace), reloaded (the comparison carried over) or
        A edited (compared again with the new model)."""
        state = cmp.diff_state(ws)
        self.b_scenes = {}
        if not state.active:
            self._watch(None)
            self._render(ws)
            return
        if state.diff is None and not state.running:
            self._start(ws, reread=False)
        self._render(ws)

    def _start(self, ws, reread: bool) -> None:
        state = cmp.diff_state(ws)
        state.serial += 1
        state.running = True
        serial = state.serial
        self.b_scenes = {}
        task = Task(_compute, ws.model, state.other_path, None if reread else state.other,
                    self.window.measure, self.window.subgraph)
        task.signals.finished.connect(lambda _s, res: self._done(ws, serial, res))
        task.signals.failed.connect(lambda _s, exc: self._failed(ws, serial, exc))
        self._tasks[task.serial] = task
        task.start()
        self.window.hub.changed(cmp.TOPIC, ws)

    def _done(self, ws, serial: int, result) -> None:
        state = cmp.diff_state(ws)
        if ws.closed or state.serial != serial:
            return
        b, diff, sb, scene = result
        state.other, state.diff, state.running = b, diff, False
        state.status = ""
        if sb is not None and scene is not None:
            self.b_scenes[sb] = scene
        self.window.hub.changed(cmp.TOPIC, ws)
        self.computed.emit()

    def _failed(self, ws, serial: int, exc: BaseException) -> None:
        state = cmp.diff_state(ws)
        if ws.closed or state.serial != serial:
            return
        state.running = False
        state.status = f"Cannot compare: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
        self.window.hub.changed(cmp.TOPIC, ws)
        self.window.errors.report("Compare With", state.status, parent=self.window)
        self.computed.emit()

    # -- the views -----------------------------------------------------------------------
    def _render(self, ws) -> None:
        w = self.window
        state = cmp.diff_state(ws)
        w.actions.stop_compare.setEnabled(state.active)  # only while there is a comparison
        w.canvas.show_pane(self.pane.widget, state.active)
        if not state.active:
            return
        diff = state.diff
        name = state.other_path.name if state.other_path else ""
        if diff is None:
            self.pane.header.setText(f"B: {name} \u2014 {state.status or 'comparing'}")
            self.b_subgraph = None
            self.pane.scene.set_data(None)
            self.b_overlays.refresh()
            return
        # one line over B's canvas (the Differences dock has the whole summary)
        self.pane.header.setText(f"B: {name} \u2014 {len(diff.differences)} differences")
        self.pane.header.setToolTip(cmp.summary(diff))
        self._show_b(cmp.subgraph_partner(diff, "a", w.subgraph))
        self._sync_selection(ws)

    def _show_b(self, sb: int | None) -> None:
        state = self.state
        if sb is None or state.other is None:
            self.b_subgraph = None
            self.pane.scene.set_data(None)
            self.b_overlays.refresh()
            return
        scene = self.b_scenes.get(sb)
        if scene is None:
            scene = lay_out(state.other, sb, self.window.measure)
            self.b_scenes[sb] = scene
        if self.b_subgraph != sb or self.pane.scene.data is not scene:
            self.pane.scene.set_data(scene)
            self.b_subgraph = sb
            self.pane.view.fit_all()
        self.b_overlays.refresh()

    # -- synchronized navigation ---------------------------------------------------------
    def _highlight_b(self, kind: str | None, index: int | None, center: bool) -> None:
        scene = self.pane.scene
        data, hl = scene.data, scene.highlight
        if data is None or hl is None:
            return
        nodes: list[int] = []
        edges: list[int] = []
        if kind == "op" and index in data.op_node:
            nodes = [data.op_node[index]]
        elif kind == "tensor" and index is not None:
            nodes = list(data.tensor_nodes.get(index, []))
            edges = list(data.tensor_edges.get(index, []))
        hl.set_highlight(nodes=nodes, edges=edges)
        if center and nodes:
            self.pane.view.centerOn(scene.node_rect(nodes[0]).center())
        elif center and edges:
            pts = data.edge_points[edges[0]]
            if pts:
                self.pane.view.centerOn(QPointF(*pts[0]))

    def _sync_selection(self, ws) -> None:
        """A's selection: its match is selected on B, Properties says which side it shows,
        and a matched tensor pair's values are compared in the Tensor panel."""
        state = cmp.diff_state(ws)
        sel = self.window.selection
        clicked_b, self._b_click = self._b_click, None
        if not state.active or state.diff is None:
            return
        if sel is None:
            self._highlight_b(None, None, False)
            return
        kind, index = sel
        hit = cmp.partner(state.diff, "a", kind, self.window.subgraph, index)
        self._label_properties(state, "b" if clicked_b is not None else "a", hit)
        if hit is None or hit[0] != self.b_subgraph:
            self._highlight_b(None, None, False)
            return
        self._highlight_b(kind, hit[1], True)
        if kind == "tensor":
            self._compare_values(ws, (self.window.subgraph, index), hit)

    def _label_properties(self, state: cmp.DiffState, side: str, hit) -> None:
        """Properties names the side it shows: A's operator, or B's (read-only: edits are
        made to A) when the click was on B's canvas."""
        panel = self.window.properties_panel
        op = panel.operator
        if op is None:
            return
        if side == "b" and hit is not None and self.window.selection.kind == "op":
            op = state.other.subgraphs[hit[0]].operators[hit[1]]
            editable, panel.editable = panel.editable, False
            panel.show_operator(op, f"B: {state.other_path.name} (read-only)")
            panel.editable = editable
            return
        context = panel.context
        panel.show_operator(op, "A" + (f" \u00b7 {context}" if context else ""))

    def _compare_values(self, ws, a_key: tuple[int, int], b_key: tuple[int, int]) -> None:
        state = cmp.diff_state(ws)
        va = cmp.tensor_values(ws.model, *a_key)
        vb = cmp.tensor_values(state.other, *b_key)
        origin = "constants"
        if (va is None or vb is None) and state.numeric is not None:
            row = next((t for t in state.numeric.tensors if t.a == a_key and t.b == b_key), None)
            if row is not None and row.sample_values is not None:
                va, vb = row.sample_values
                origin = f"values of the first sample of Run Both ({state.inputs})"
        if va is None or vb is None or va.shape != vb.shape:
            return
        self.window.tensor_panel.show_comparison(
            va, vb, ("A", "B"), f"A tensor {a_key[1]} vs B tensor {b_key[1]} ({origin})",
            tensor=a_key)

    def _b_item_selected(self, kind: str, index: int) -> None:
        """A click on B: select the match on A (or only mark it on B when it has none)."""
        w = self.window
        diff = self.state.diff
        if diff is None or self.b_subgraph is None:
            return
        hit = cmp.partner(diff, "b", kind, self.b_subgraph, index)
        if hit is None:
            self._highlight_b(kind, index, False)
            w.statusBar().showMessage(f"B's {kind} {index} is only in B", 6000)
            return
        if hit[0] != w.subgraph:
            w.show_subgraph(hit[0], wait=True)
        self._b_click = (kind, index)
        (w.select_op if kind == "op" else w.select_tensor)(hit[1], center=True)

    def _b_node_clicked(self, row: int) -> None:
        lab = self.pane.scene.data.labels[row]
        if lab.kind == "op":
            self._b_item_selected("op", lab.op_index)
        elif lab.tensor is not None:
            self._b_item_selected("tensor", lab.tensor)

    def _b_edge_clicked(self, edge: int) -> None:
        t = int(self.pane.scene.data.edge_tensor[edge])
        if t >= 0:
            self._b_item_selected("tensor", t)

    def _follow_scroll(self) -> None:
        """B keeps the match of the op nearest the middle of A's view in its middle."""
        w = self.window
        diff = self.state.diff
        data = w.graph_scene.data
        if diff is None or data is None or self.pane.scene.data is None or \
                not self.pane.widget.isVisible():
            return
        c = w.view.mapToScene(w.view.viewport().rect().center())
        rects = data.rects
        if not len(rects) or not data.op_node:
            return
        ops = list(data.op_node.items())
        best = min(ops, key=lambda kv: abs(rects[kv[1]][0] + rects[kv[1]][2] / 2 - c.x()) +
                   abs(rects[kv[1]][1] + rects[kv[1]][3] / 2 - c.y()))
        hit = cmp.partner(diff, "a", "op", w.subgraph, best[0])
        b = self.pane.scene.data
        if hit is not None and hit[0] == self.b_subgraph and hit[1] in b.op_node:
            if abs(self.pane.view.zoom() - w.view.zoom()) > 1e-3:
                self.pane.view.set_zoom(w.view.zoom())
            self.pane.view.centerOn(self.pane.scene.node_rect(b.op_node[hit[1]]).center())

    def go_to(self, target: cmp.Target) -> None:
        """A difference clicked in the dock: show its item (on B when only B has it)."""
        w = self.window
        diff = self.state.diff
        if diff is None:
            return
        if target.side == "a":
            if target.kind == "op":
                w.show_op(target.subgraph, target.index)
            elif target.kind == "tensor":
                w.show_tensor(target.subgraph, target.index)
            elif target.subgraph != w.subgraph:
                w.show_subgraph(target.subgraph, wait=True)
            return
        sa = cmp.subgraph_partner(diff, "b", target.subgraph)
        if sa is not None and sa != w.subgraph:
            w.show_subgraph(sa, wait=True)
        if self.b_subgraph != target.subgraph:
            self._show_b(target.subgraph)
        if target.kind in ("op", "tensor"):
            self._highlight_b(target.kind, target.index, True)

    # -- numbers -------------------------------------------------------------------------
    def run_numbers(self) -> None:
        """Run both models on the window's samples (the Quantization dock's choice) on a
        worker and keep the numbers, with the inputs they ran on."""
        ws = self.window.workspace
        state = self.state
        if state.diff is None or state.running:
            return
        from ..diff.numeric import compare_numbers
        choice = self.window.samples
        try:
            kwargs = run_both_kwargs(choice, state.diff.match.a, state.diff.match.b,
                                     self.window.debugger.session_inputs())
        except ValueError as exc:
            state.status = f"Cannot run both: {exc}"
            self.window.hub.changed(cmp.TOPIC, ws)
            return
        state.running = True
        state.status = f"Running both models on {choice.describe()} \u2026"
        serial = state.serial
        self.window.hub.changed(cmp.TOPIC, ws)
        task = Task(lambda m: compare_numbers(m, keep_values=True, **kwargs), state.diff.match)
        source = choice.source_text()

        def done(_s, result) -> None:
            if ws.closed or state is not cmp.diff_state(ws) or state.serial != serial:
                return
            state.running = False
            state.numeric = state.diff.numeric = result
            state.inputs = f"{result.samples} sample{'s' if result.samples != 1 else ''}, {source}"
            state.status = f"Both models ran on {state.inputs}."
            self.window.hub.changed(cmp.TOPIC, ws)
            self.computed.emit()

        def failed(_s, exc) -> None:
            if ws.closed or state is not cmp.diff_state(ws):
                return
            state.running = False
            state.status = f"Cannot run both: {str(exc).splitlines()[0] if str(exc) else exc!r}"
            self.window.hub.changed(cmp.TOPIC, ws)
            self.computed.emit()

        task.signals.finished.connect(done)
        task.signals.failed.connect(failed)
        self._tasks[task.serial] = task
        task.start()
