"""View > Fold Composites: each STABLEHLO_COMPOSITE drawn as one box (its name and
attributes; double-click opens its decomposition) or every composite expanded inline
(`scene_inline`), remembered in QSettings.

Expanded, a box can be an operator of another subgraph (a decomposition's).  Clicking it
selects it as what it is, an operator of that subgraph (``Selection.subgraph``): Properties
and the Tensor panel show it, F9 puts the breakpoint on it, Run To runs to it; a
double-click opens its decomposition with it selected.  Edits are made where an operator
lives, so the edit actions ask to open the decomposition first.  The debugger is told
(`DebuggerController.set_inline_composites`): Step Over then enters a composite, whose ops
are the next ones on screen.

A mixin of `MainWindow`.
"""
from __future__ import annotations

from .state.selection import Selection, producers_consumers

SETTING = "view/fold_composites"


class CompositeFolding:
    """The Fold Composites option of `MainWindow` (see the module docstring)."""

    @property
    def fold_composites(self) -> bool:
        """Whether composites are drawn folded (one box each): the default."""
        value = self.settings.value(SETTING, True)
        return value not in (False, "false", "0", 0)

    @property
    def expand_composites(self) -> bool:
        return not self.fold_composites

    def set_fold_composites(self, on: bool) -> None:
        """Fold (True) or expand every composite; the shown subgraph is drawn again at
        once, the others when next shown."""
        on = bool(on)
        action = getattr(self, "fold_action", None)
        if action is not None and action.isChecked() != on:
            action.setChecked(on)
        if on == self.fold_composites:
            return
        self.settings.setValue(SETTING, on)
        self.debugger.set_inline_composites(not on)
        if self.model is None:
            return
        selection = self.selection
        self.scenes = {}
        self._show(self.subgraph, wait=True)
        if selection is not None and selection.subgraph is None:
            self._restore_selection(selection)
        self.debugger.canvas.paint()

    # -- inlined boxes ---------------------------------------------------------------------
    def inline_origin(self, row: int) -> tuple[int, int] | None:
        """(subgraph, op) of an inlined operator box, None for the shown subgraph's own."""
        sd = self.graph_scene.data
        lab = sd.labels[row] if sd is not None and 0 <= row < len(sd.labels) else None
        return lab.origin if lab is not None and lab.kind == "op" else None

    def selected_op(self) -> tuple[int, int] | None:
        """(subgraph, op) of the selected operator (an inlined one's own subgraph)."""
        sel = self.selection
        if sel is None or not sel.is_op:
            return None
        return (self.subgraph if sel.subgraph is None else sel.subgraph), sel.index

    def select_inlined(self, subgraph: int, k: int, center: bool = True) -> None:
        """Select operator ``k`` of ``subgraph``, drawn inline in the shown subgraph."""
        if self.model is None:
            return
        sg = self.model.subgraphs[subgraph]
        op = sg.operators[k]
        base = Selection.op(sg, k)
        self.selection = Selection(base.kind, base.index, base.outputs, subgraph)
        self.properties_panel.show_operator(op, f"inlined from {sg.display_name}")
        const = [t for t in op.inputs if 0 <= t < len(sg.tensors) and sg.tensors[t].is_constant]
        const.sort(key=lambda t: -sg.tensors[t].num_elements)
        first = const[0] if const else next((t for t in op.outputs if t >= 0), None)
        self.tensor_panel.show_tensor(sg.tensors[first] if first is not None else None)
        self._selection_changed(center)

    def select_inlined_tensor(self, subgraph: int, t: int, center: bool = True) -> None:
        """Select tensor ``t`` of ``subgraph`` (an edge inside an inlined composite)."""
        if self.model is None:
            return
        sg = self.model.subgraphs[subgraph]
        self.selection = Selection("tensor", int(t), (), subgraph)
        self.tensor_panel.show_tensor(sg.tensors[t])
        producers, consumers = producers_consumers(sg.tensors[t])
        if producers:
            self.properties_panel.show_operator(sg.operators[producers[0]], f"produces t{t}")
        elif consumers:
            self.properties_panel.show_operator(sg.operators[consumers[0]], f"reads t{t}")
        self.tensor_dock.raise_()
        self._selection_changed(center)

    def _selection_changed(self, center: bool) -> None:
        from .state.workspace import SELECTION
        self._refresh_highlight(center)
        self.hub.changed(SELECTION)
        self.selectionChanged.emit(self.selection)

    def inlined_rows(self, sd) -> tuple[list[int], list[int], list[int]] | None:
        """(boxes, edges, related edges) an inlined selection highlights; None when the
        selection is the shown subgraph's own."""
        sel = self.selection
        if sel is None or sel.subgraph is None:
            return None
        index = getattr(sd, "inline", None)
        if index is None:
            return [], [], []
        key = (sel.subgraph, sel.index)
        if sel.is_op:
            row = index.node_of.get(key)
            if row is None:
                return [], [], []
            node = sd.node_ids[row]
            related = [e for e, (u, v) in enumerate(zip(sd.edge_source, sd.edge_target))
                       if u == node or v == node]
            return [row], [], related
        return [], list(index.tensor_edges.get(key, [])), []

    def open_inlined(self, subgraph: int, k: int) -> None:
        """Show the decomposition an inlined operator belongs to, with it selected."""
        self.show_subgraph(subgraph, wait=True)
        self.select_op(k)
