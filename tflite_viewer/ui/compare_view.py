"""File > Compare With: the open model (A) beside another (B), on two canvases.

`install` adds to the window a second canvas for B to the right of A's (hidden until a
comparison is open), the Differences dock, the File menu's Compare With / Stop Comparing,
and the canvas colours with their legend: removed ops red on A, added ops green on B,
changed amber on both.  Navigation is synchronized: selecting an op or tensor on either
canvas selects its match on the other, the subgraph shown on B follows A's, and scrolling
A moves B to the match of the op in the middle of A's view.  For a matched tensor pair the
Tensor panel's Compare tab shows both values (constants; activations once both models ran:
the dock's Run Both) and their difference.

Everything about the comparison is the open workspace's (``ws.comparison``,
`ui.state.diff`): these widgets render it.  The diff (and B's layout) is computed on a
worker; an edit of A, a reload of A, or B's file changing on disk computes it again.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QFileSystemWatcher, QObject, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import (QFileDialog, QGraphicsItem, QLabel, QVBoxLayout,
                               QWidget)

from ..diff import diff_models
from ..model import load_model
from .state import diff as cmp
from .graph_scene import GraphScene
from .graph_view import GraphView
from .panels.differences_panel import DifferencesPanel
from .overlay_paint import boxes_bounds
from .workers import Task, lay_out
from .state.workspace import MODEL, NAVIGATION, SELECTION

if TYPE_CHECKING:
    from .main_window import MainWindow

log = logging.getLogger(__name__)
COLOURS = {cmp.ADDED: QColor("#2da44e"), cmp.REMOVED: QColor("#cf222e"),
           cmp.CHANGED: QColor("#d4a72c")}


class DiffOverlayItem(QGraphicsItem):
    """A coloured frame and tint on every op box that differs (``marks``: row -> kind)."""

    def __init__(self, rects, marks: dict[int, str]) -> None:
        super().__init__()
        self._rects, self.marks = rects, marks
        self._bounds = boxes_bounds(rects, marks, 6)
        self.setZValue(4)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        return self._bounds

    def paint(self, painter: QPainter, option, widget=None) -> None:
        for row, kind in self.marks.items():
            x, y, w, h = self._rects[row].tolist()
            c = COLOURS[kind]
            fill = QColor(c)
            fill.setAlpha(60)
            painter.setBrush(fill)
            painter.setPen(QPen(c, 4))
            painter.drawRoundedRect(QRectF(x - 3, y - 3, w + 6, h + 6), 7, 7)


class DiffLegend(QWidget):
    """What the colours mean, in the bottom-left corner of a canvas."""

    def __init__(self, view: GraphView, kinds: tuple[str, ...], counts: dict | None = None) -> None:
        super().__init__(view)
        self.view, self.kinds = view, kinds
        self.counts: dict[str, int] = counts or {}
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setFixedSize(190, 18 * len(kinds) + 10)
        self.hide()

    def set_counts(self, counts: dict[str, int]) -> None:
        self.counts = counts
        vp = self.view.viewport().geometry()
        self.move(vp.x() + 12, vp.y() + vp.height() - self.height() - 12)
        self.show()
        self.raise_()
        self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(255, 255, 255, 235))
        p.setPen(QColor("#57606a"))
        p.drawRect(self.rect().adjusted(0, 0, -1, -1))
        for i, kind in enumerate(self.kinds):
            y = 6 + 18 * i
            c = COLOURS[kind]
            fill = QColor(c)
            fill.setAlpha(90)
            p.setBrush(fill)
            p.setPen(QPen(c, 2))
            p.drawRoundedRect(QRectF(8, y + 2, 22, 11), 3, 3)
            p.setPen(QColor("#1f2328"))
            p.drawText(QPointF(38, y + 12), f"{kind}: {self.counts.get(kind, 0)} ops")


class ComparePane(QWidget):
    """B's canvas with a header naming the file and what the comparison found."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.header = QLabel("")
        self.header.setWordWrap(True)
        self.header.setStyleSheet("padding: 4px 8px; background: #f6f8fa; color: #1f2328;")
        self.scene = GraphScene(self)
        self.view = GraphView(self.scene)
        self.legend = DiffLegend(self.view, (cmp.ADDED, cmp.CHANGED))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.header)
        layout.addWidget(self.view, 1)


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

    def __init__(self, window: "MainWindow") -> None:
        super().__init__(window)
        self.window = w = window
        self.pane = ComparePane()
        w.canvas_split.addWidget(self.pane)
        self.pane.hide()
        self.a_legend = DiffLegend(w.view, (cmp.REMOVED, cmp.CHANGED))
        self.a_item: DiffOverlayItem | None = None
        self.b_item: DiffOverlayItem | None = None
        self.b_subgraph: int | None = None
        self.b_scenes: dict[int, object] = {}   # B subgraph -> SceneData (this comparison)
        self._tasks: dict[int, Task] = {}
        self.panel = DifferencesPanel(w.hub)
        w.differences_panel = self.panel
        w.differences_dock = w._dock("Differences", self.panel,
                                     Qt.DockWidgetArea.BottomDockWidgetArea, "differences")
        w.tabifyDockWidget(w.problems_dock, w.differences_dock)
        w.differences_dock.hide()
        self.watcher = QFileSystemWatcher(self)
        self.watcher.fileChanged.connect(self._other_changed)
        self._scroll_timer = QTimer(self)
        self._scroll_timer.setSingleShot(True)
        self._scroll_timer.setInterval(60)
        self._scroll_timer.timeout.connect(self._follow_scroll)
        self._syncing = False
        w.hub.subscribe(self._workspace_changed, MODEL)
        w.hub.subscribe(self._render, NAVIGATION, cmp.TOPIC)
        w.hub.subscribe(self._sync_selection, SELECTION)
        w.view.viewChanged.connect(lambda: self._scroll_timer.start())
        self.pane.view.nodeClicked.connect(self._b_node_clicked)
        self.pane.view.edgeClicked.connect(self._b_edge_clicked)
        self.panel.targetActivated.connect(self.go_to)
        self.panel.compareRequested.connect(self.choose)
        self.panel.numbersRequested.connect(self.run_numbers)

    # -- starting and stopping -----------------------------------------------------------
    def choose(self) -> None:
        w = self.window
        if w.model is None:
            return
        start = str(w.workspace.comparison.other_path or (w.workspace.path or Path(".")).parent)
        path, _ = QFileDialog.getOpenFileName(w, "Compare With", start,
                                              "TFLite models (*.tflite);;All files (*)")
        if path:
            self.compare_with(path)

    def compare_with(self, path: str | Path) -> None:
        """Compare the open model with the model at ``path`` (read on a worker)."""
        w = self.window
        ws = w.workspace
        ws.comparison = cmp.ComparisonState(Path(path), status=f"Comparing with {Path(path).name} \u2026")
        self._watch(Path(path))
        w.differences_dock.show()
        w.differences_dock.raise_()
        self._start(ws, reread=True)

    def stop(self) -> None:
        ws = self.window.workspace
        ws.comparison = cmp.ComparisonState()
        self._watch(None)
        self.window.hub.changed(cmp.TOPIC, ws)

    def _watch(self, path: Path | None) -> None:
        if self.watcher.files():
            self.watcher.removePaths(self.watcher.files())
        if path is not None and path.exists():
            self.watcher.addPath(str(path))

    def _other_changed(self, _path: str) -> None:
        ws = self.window.workspace
        if ws.comparison.active:
            ws.comparison.status = "B changed on disk: comparing again \u2026"
            self._start(ws, reread=True)
            self._watch(ws.comparison.other_path)

    def _workspace_changed(self, ws) -> None:
        """Another model opened (a new workspace), reloaded (the comparison carried over) or
        A edited (compared again with the new model)."""
        state = ws.comparison
        self.b_scenes = {}
        if not state.active:
            self._watch(None)
            self._render(ws)
            return
        if state.diff is None and not state.running:
            self._start(ws, reread=False)
        self._render(ws)

    def _start(self, ws, reread: bool) -> None:
        state = ws.comparison
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
        state = ws.comparison
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
        state = ws.comparison
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
        state = ws.comparison
        self._clear_items()
        stop = getattr(w, "stop_compare_action", None)
        if stop is not None:  # File > Stop Comparing only while there is a comparison
            stop.setEnabled(state.active)
        if not state.active:
            self.pane.hide()
            self.a_legend.hide()
            return
        if self.pane.isHidden():  # the two canvases share the width
            self.pane.show()
            split = w.canvas_split
            half = max(split.width() // 2, 1)
            split.setSizes([half, split.width() - half])
        diff = state.diff
        name = state.other_path.name if state.other_path else ""
        if diff is None:
            self.pane.header.setText(f"B: {name} \u2014 {state.status or 'comparing'}")
            self.pane.scene.set_data(None)
            return
        self.pane.header.setText(f"B: {name} \u2014 {cmp.summary(diff)}")
        sb = cmp.subgraph_partner(diff, "a", w.subgraph)
        self._show_b(sb)
        marks_a = cmp.marks(diff, "a", w.subgraph)
        data = w.graph_scene.data
        if data is not None:
            rows = {data.op_node[k]: v for k, v in marks_a.items() if k in data.op_node}
            self.a_item = DiffOverlayItem(data.rects, rows)
            w.graph_scene.addItem(self.a_item)
        self.a_legend.set_counts(_count(marks_a))
        self._sync_selection(ws)

    def _show_b(self, sb: int | None) -> None:
        ws = self.window.workspace
        diff = ws.comparison.diff
        if sb is None or ws.comparison.other is None:
            self.b_subgraph = None
            self.pane.scene.set_data(None)
            self.pane.legend.hide()
            return
        scene = self.b_scenes.get(sb)
        if scene is None:
            scene = lay_out(ws.comparison.other, sb, self.window.measure)
            self.b_scenes[sb] = scene
        if self.b_subgraph != sb or self.pane.scene.data is not scene:
            self.pane.scene.set_data(scene)
            self.b_subgraph = sb
            self.pane.view.fit_all()
        marks_b = cmp.marks(diff, "b", sb)
        rows = {scene.op_node[k]: v for k, v in marks_b.items() if k in scene.op_node}
        self.b_item = DiffOverlayItem(scene.rects, rows)
        self.pane.scene.addItem(self.b_item)
        self.pane.legend.set_counts(_count(marks_b))

    def _clear_items(self) -> None:
        for item in (self.a_item, self.b_item):
            if item is None:
                continue
            try:
                if item.scene() is not None:
                    item.scene().removeItem(item)
            except RuntimeError:  # the scene was cleared (another subgraph, an edit)
                pass
        self.a_item = self.b_item = None

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
        """A's selection: its match is selected on B, and a matched tensor pair's values
        are compared in the Tensor panel."""
        state = ws.comparison
        sel = self.window.selection
        if not state.active or state.diff is None or self._syncing:
            return
        if sel is None:
            self._highlight_b(None, None, False)
            return
        kind, index = sel
        hit = cmp.partner(state.diff, "a", kind, self.window.subgraph, index)
        if hit is None or hit[0] != self.b_subgraph:
            self._highlight_b(None, None, False)
            return
        self._highlight_b(kind, hit[1], True)
        if kind == "tensor":
            self._compare_values(ws, (self.window.subgraph, index), hit)

    def _compare_values(self, ws, a_key: tuple[int, int], b_key: tuple[int, int]) -> None:
        state = ws.comparison
        va = cmp.tensor_values(ws.model, *a_key)
        vb = cmp.tensor_values(state.other, *b_key)
        origin = "constants"
        if (va is None or vb is None) and state.numeric is not None:
            row = next((t for t in state.numeric.tensors if t.a == a_key and t.b == b_key), None)
            if row is not None and row.sample_values is not None:
                va, vb = row.sample_values
                origin = "values of the first sample"
        if va is None or vb is None or va.shape != vb.shape:
            return
        self.window.tensor_panel.show_comparison(
            va, vb, ("A", "B"), f"A tensor {a_key[1]} vs B tensor {b_key[1]} ({origin})",
            tensor=a_key)

    def _b_item_selected(self, kind: str, index: int) -> None:
        """A click on B: select the match on A (or only mark it on B when it has none)."""
        w = self.window
        ws = w.workspace
        diff = ws.comparison.diff
        if diff is None or self.b_subgraph is None:
            return
        hit = cmp.partner(diff, "b", kind, self.b_subgraph, index)
        if hit is None:
            self._highlight_b(kind, index, False)
            w.statusBar().showMessage(f"B's {kind} {index} is only in B", 6000)
            return
        if hit[0] != w.subgraph:
            w.show_subgraph(hit[0], wait=True)
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
        diff = w.workspace.comparison.diff
        data = w.graph_scene.data
        if diff is None or data is None or self.pane.scene.data is None or not self.pane.isVisible():
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
        diff = w.workspace.comparison.diff
        if diff is None:
            return
        if target.side == "a":
            if target.subgraph != w.subgraph:
                w.show_subgraph(target.subgraph, wait=True)
            if target.kind == "op":
                w.select_op(target.index)
            elif target.kind == "tensor":
                w.select_tensor(target.index)
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
        """Run both models on the same seeded inputs (a worker) and keep the numbers."""
        ws = self.window.workspace
        state = ws.comparison
        if state.diff is None or state.running:
            return
        from ..diff.numeric import compare_numbers
        state.running = True
        state.status = "Running both models \u2026"
        serial = state.serial
        self.window.hub.changed(cmp.TOPIC, ws)
        task = Task(lambda m: compare_numbers(m, samples=1, keep_values=True), state.diff.match)

        def done(_s, result) -> None:
            if ws.closed or state is not ws.comparison or state.serial != serial:
                return
            state.running = False
            state.numeric = state.diff.numeric = result
            state.status = result.summary_lines()[-1]
            self.window.hub.changed(cmp.TOPIC, ws)
            self.computed.emit()

        def failed(_s, exc) -> None:
            if ws.closed or state is not ws.comparison:
                return
            state.running = False
            state.status = f"Cannot run both: {str(exc).splitlines()[0] if str(exc) else exc!r}"
            self.window.hub.changed(cmp.TOPIC, ws)
            self.computed.emit()

        task.signals.finished.connect(done)
        task.signals.failed.connect(failed)
        self._tasks[task.serial] = task
        task.start()


def _count(marks: dict[int, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in marks.values():
        out[v] = out.get(v, 0) + 1
    return out


def install(window: "MainWindow") -> CompareController:
    """The comparison's canvas, dock and File menu entries on ``window``."""
    ctl = CompareController(window)
    window.compare = ctl
    file_menu = next((a.menu() for a in window.menuBar().actions() if a.text() == "&File"), None)
    if file_menu is not None:
        from .menus import add_action
        before = next((a for a in file_menu.actions() if a.isSeparator()), None)
        window.compare_action = add_action(window, file_menu, "&Compare With\u2026", ctl.choose,
                                           "Ctrl+Shift+D", "Compare the open model with another")
        window.stop_compare_action = add_action(window, file_menu, "Stop Comparing", ctl.stop,
                                                tip="Close the comparison")
        window.stop_compare_action.setEnabled(False)  # until a comparison opens
        if before is not None:  # beside Open and Reload
            file_menu.removeAction(window.compare_action)
            file_menu.removeAction(window.stop_compare_action)
            file_menu.insertAction(before, window.compare_action)
            file_menu.insertAction(before, window.stop_compare_action)
    view_menu = next((a.menu() for a in window.menuBar().actions() if a.text() == "&View"), None)
    if view_menu is not None:
        view_menu.addAction(window.differences_dock.toggleViewAction())
    return ctl
