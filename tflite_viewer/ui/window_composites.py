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

Composed into `MainWindow` (``window.composites``).
"""
from __future__ import annotations

from PySide6.QtWidgets import QMainWindow


from .state.selection import Selection, producers_consumers
from .state.workspace import SELECTION


SETTING = "view/fold_composites"


class CompositeFolding:
    """The Fold Composites option of `MainWindow` (see the module docstring)."""

    def __init__(self, window: QMainWindow) -> None:
        self.w = window

    @property
    def folded(self) -> bool:
        """Whether composites are drawn folded (one box each): the default."""
        value = self.w.settings.value(SETTING, True)
        return value not in (False, "false", "0", 0)

    @property
    def expand(self) -> bool:
        return not self.folded

    def set_folded(self, on: bool) -> None:
        """Fold (True) or expand every composite; the shown subgraph is drawn again at
        once, the others when next shown."""
        on = bool(on)
        action = self.w.actions.fold
        if action.isChecked() != on:
            action.setChecked(on)
        if on == self.folded:
            return
        self.w.settings.setValue(SETTING, on)
        self.w.debugger.set_inline_composites(not on)
        if self.w.model is None:
            return
        selection = self.w.selection
        self.w.workspace.scenes = {}
        self.w.navigator.show_index(self.w.subgraph, wait=True)
        if selection is not None and selection.subgraph is None:
            self.w.restore_selection(selection)
        self.w.debugger.canvas.paint()

    # -- inlined boxes ---------------------------------------------------------------------
    def selected_op(self) -> tuple[int, int] | None:
        """(subgraph, op) of the selected operator (an inlined one's own subgraph)."""
        sel = self.w.selection
        if sel is None or not sel.is_op:
            return None
        return (self.w.subgraph if sel.subgraph is None else sel.subgraph), sel.index

    def select_inlined(self, subgraph: int, k: int, center: bool = True) -> None:
        """Select operator ``k`` of ``subgraph``, drawn inline in the shown subgraph."""
        if self.w.model is None:
            return
        sg = self.w.model.subgraphs[subgraph]
        op = sg.operators[k]
        base = Selection.op(sg, k)
        self.w.workspace.selection = Selection(base.kind, base.index, base.outputs, subgraph)
        self.w.properties_panel.show_operator(op, f"inlined from {sg.display_name}")
        const = [t for t in op.inputs if 0 <= t < len(sg.tensors) and sg.tensors[t].is_constant]
        const.sort(key=lambda t: -sg.tensors[t].num_elements)
        first = const[0] if const else next((t for t in op.outputs if t >= 0), None)
        self.w.tensor_panel.show_tensor(sg.tensors[first] if first is not None else None)
        self._selection_changed(center)

    def select_inlined_tensor(self, subgraph: int, t: int, center: bool = True) -> None:
        """Select tensor ``t`` of ``subgraph`` (an edge inside an inlined composite)."""
        if self.w.model is None:
            return
        sg = self.w.model.subgraphs[subgraph]
        self.w.workspace.selection = Selection("tensor", int(t), (), subgraph)
        self.w.tensor_panel.show_tensor(sg.tensors[t])
        producers, consumers = producers_consumers(sg.tensors[t])
        if producers:
            self.w.properties_panel.show_operator(sg.operators[producers[0]], f"produces t{t}")
        elif consumers:
            self.w.properties_panel.show_operator(sg.operators[consumers[0]], f"reads t{t}")
        self.w.tensor_dock.raise_()
        self._selection_changed(center)

    def _selection_changed(self, center: bool) -> None:
        self.w.refresh_highlight(center)
        self.w.hub.changed(SELECTION)
        self.w.selectionChanged.emit(self.w.selection)

    def inlined_rows(self, sd) -> tuple[list[int], list[int], list[int]] | None:
        """(boxes, edges, related edges) an inlined selection highlights; None when the
        selection is the shown subgraph's own."""
        sel = self.w.selection
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
        self.w.show_subgraph(subgraph, wait=True)
        self.w.select_op(k)
