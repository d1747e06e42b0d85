"""The window's subgraphs: which one the canvas shows, the trail of the calls that led to it
(main > WHILE #3 body > ...), laying one out on a worker, and how it is fitted when shown.

Composed into `MainWindow` (``window.navigator``): the subgraph shown and the trail are
the open workspace's; a layout that ends after the model was edited or replaced, or after
another subgraph was asked for, is dropped.
"""
from __future__ import annotations


from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMainWindow

from ..graph.build import subgraph_references
from ..model import Model
from ..model.op_metadata import first_call
from . import style
from .graph_view import READABLE_ZOOM
from .state import navigation as nav
from .state.scene_data import SceneData
from .state.workspace import NAVIGATION
from .workers import Task, lay_out



class Navigator(QObject):
    """See the module docstring."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.w = window
        self._layout_serial = 0
        self._layout_models: dict[int, Model] = {}  # running layouts: the model laid out

    def show_subgraph(self, which: int | str, *, wait: bool = False) -> None:
        """Show a subgraph (index, name or signature key); the trail says where it is called
        from (main > WHILE #3 body > ...) when some operator calls it."""
        if self.w.model is None:
            return
        index = self.w.model.subgraph_index(which)
        self.w.workspace.trail = self.trail_to(index)
        self.show_index(index, wait)

    def trail_to(self, index: int) -> list[nav.Crumb]:
        ws = self.w.workspace
        if ws.references is None:
            ws.references = subgraph_references(ws.model)
        return nav.trail_to(ws.model, index, ws.references)

    def show_trail(self) -> None:
        siblings = [(c, nav.sibling_label(self.w.model, c)) for c in nav.sibling_calls(self.w.trail, self.w.model)]
        self.w.nav.set_trail(self.w.trail, siblings)

    def go_back(self) -> None:
        if len(self.w.trail) > 1:
            self.crumb_chosen(len(self.w.trail) - 2)

    def crumb_chosen(self, pos: int) -> None:
        self.w.workspace.trail = self.w.trail[:pos + 1]
        self.show_index(self.w.trail[-1].subgraph, wait=False)

    def show_index(self, index: int, wait: bool) -> None:
        """Show subgraph ``index`` (laid out on a worker unless ``wait``, or already)."""
        expand = self.w.composites.expand
        scene = self.w.workspace.scenes.get(index)
        if scene is not None and scene.expanded == expand:
            self.display(scene)
            return
        if wait:
            self.display(self._layout_now(index))
            return
        self.w.busy(f"Laying out {self.w.model.subgraphs[index].display_name}\u2026")
        task = Task(lay_out, self.w.model, index, self.w.measure, None,
                    self.w.shapes.computed_shapes(index), expand)
        self._layout_serial = task.serial
        self._layout_models[task.serial] = self.w.model
        task.signals.finished.connect(self._layout_done)  # bound methods: see FileFlows
        task.signals.failed.connect(self._layout_failed)
        self.w.tasks[task.serial] = task
        task.start()

    def _layout_now(self, index: int) -> SceneData:
        sd = lay_out(self.w.model, index, self.w.measure, None, self.w.shapes.computed_shapes(index),
                     self.w.composites.expand)
        self.w.workspace.scenes[index] = sd
        return sd

    def _layout_done(self, serial: int, sd: SceneData) -> None:
        self.w.tasks.pop(serial, None)
        model = self._layout_models.pop(serial, None)
        if model is not self.w.model or sd.expanded != self.w.composites.expand:
            self.w.idle()  # the model was edited (or replaced) or Fold Composites changed
            return
        self.w.workspace.scenes[sd.subgraph] = sd
        self.w.idle()
        if serial == self._layout_serial:
            self.display(sd)

    def _layout_failed(self, serial: int, exc: BaseException) -> None:
        self.w.tasks.pop(serial, None)
        self._layout_models.pop(serial, None)
        self.w.idle()
        self.w.errors.unexpected(exc)

    def display(self, sd: SceneData) -> None:
        """Show a laid-out subgraph, nothing selected, fitted (`initial_view`)."""
        self.w.workspace.subgraph = sd.subgraph
        self.w.workspace.selection = None
        self.w.graph_scene.set_data(sd)
        self.w.placeholder.hide()
        self.show_trail()
        self.w.minimap.rebuild()
        self.initial_view()
        self.w.finder.find_again()
        self.w.hub.changed(NAVIGATION)
        self.w.subgraphShown.emit(sd.subgraph)

    def redisplay(self, sd: SceneData) -> None:
        """Show a rebuilt scene of the subgraph on screen, keeping zoom and scroll."""
        transform = self.w.view.transform()
        center = self.w.view.mapToScene(self.w.view.viewport().rect().center())
        self.w.graph_scene.set_data(sd)
        self.w.view.setTransform(transform)
        self.w.view.centerOn(center)
        self.show_trail()
        self.w.minimap.rebuild()
        self.w.finder.find_again()
        self.w.update_zoom_label()

    def fit_graph(self) -> None:
        """View > Fit Graph: the whole graph if its labels stay readable, else the readable
        minimum zoom around the selection (or where the graph starts: its top left, its
        input in view); the overview map beside the canvas shows the rest."""
        nodes, _edges, _ = self.w.selected_rows()
        focus = self.w.graph_scene.node_rect(nodes[0]).center() if nodes else None
        self.w.view.fit_all(min_zoom=READABLE_ZOOM, focus=focus)
        self.w.update_zoom_label()

    def initial_view(self) -> None:
        """Fit the graph when its text stays readable (at most 100%: a graph that fits is
        shown at its size); else fit its width; else show where it starts at a readable
        zoom (a deep network fitted whole is a thin coloured stripe)."""
        self.w.view.fit_all()
        if self.w.view.zoom() < style.LOD_TEXT:
            self.w.view.fit_width()
            if self.w.view.zoom() < style.LOD_TEXT:
                self.w.view.fit_all(min_zoom=0.8)
        self.w.update_zoom_label()

    def open_called(self, op_index: int, role: str | None = None, *, wait: bool = False) -> None:
        """Open a subgraph that operator ``op_index`` of the shown subgraph calls (``role``,
        or the most useful one: the body of a loop, the then-branch); the others stay one
        click away beside the trail and as links in Properties."""
        op = self.w.model.subgraphs[self.w.subgraph].operators[op_index]
        calls = op.called_subgraphs
        if not calls:
            return
        if role is None:
            role = first_call(op.name, calls)
        self.w.select_op(op_index, center=False)
        self.follow_call(nav.Call(self.w.subgraph, op_index, role), wait=wait)
        others = [f"{r}: subgraph {i}" for r, i in calls.items() if r != role]
        if others:
            self.w.statusBar().showMessage(f"{op.name} #{op_index} also calls {', '.join(others)} "
                                         "(beside the trail and in Properties)", 10000)

    def follow_call(self, call: nav.Call, *, wait: bool = False) -> None:
        """Show the subgraph ``call`` leads to; the trail is cut back to the calling subgraph
        first, so a sibling branch replaces the one shown (`navigation.enter_call`)."""
        if self.w.model is None:
            return
        self.w.workspace.trail = nav.enter_call(self.w.trail, self.w.model, call)
        self.show_index(self.w.trail[-1].subgraph, wait)
