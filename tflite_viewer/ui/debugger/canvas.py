"""The debugger's marks on the canvas, a view of the open workspace.

Executed operators, computed edges and the operator about to run come from the session's
last stop (``ws.debug``), the breakpoint dots from ``ws.breakpoints`` (shown with or without
a session).  All are drawn by one `debug_overlay.DebugOverlayItem` on the shown subgraph's
scene; a stop of another model can never reach it, because the workspace that held it is
gone.  Colouring the operators by op time or by the cross-check's errors is an overlay of
the canvas (`state.overlays.TimeOverlay`, `ErrorOverlay`), one at a time with the others.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF

from ...interpreter.session import PAUSED
from ..state.workspace import BREAKPOINTS, DEBUG, MODEL, NAVIGATION

class DebugCanvas:
    """Paints `DebugOverlayItem` from the workspace (see the module docstring)."""

    def __init__(self, controller) -> None:
        self.controller = controller
        self.window = controller.window
        controller.hub.subscribe(lambda _ws: self.paint(), MODEL, NAVIGATION, DEBUG,
                                 BREAKPOINTS)

    def _frame_op(self, stop, subgraph: int) -> int | None:
        """The op about to run in ``subgraph`` if the paused run has a frame there; with
        composites drawn inline, the slot of an inlined op (``n_ops + slot``) when the run
        is paused in a decomposition, or the first inlined op of the composite about to
        run."""
        if stop is None or stop.state != PAUSED:
            return None
        data = self.window.graph_scene.data
        inline = getattr(data, "inline", None) if data is not None else None
        slot_of = {} if inline is None else {o: k for k, o in enumerate(inline.slots())}
        n_ops = len(self.controller.hub.workspace.model.subgraphs[subgraph].operators)
        for sg, op in reversed(stop.position):
            if (sg, op) in slot_of:
                return n_ops + slot_of[(sg, op)]
            if sg == subgraph:
                slots = inline.expanded.composite_slots.get((sg, op)) if inline else None
                return n_ops + slots[0] if slots else op
        return None

    def paint(self) -> None:
        """Mark the shown subgraph: executed ops, computed edges, breakpoints, current op;
        no marks at all when there is nothing to show."""
        w, ctl = self.window, self.controller
        ws = ctl.hub.workspace
        scene = w.graph_scene
        if ws.model is None or scene.data is None or scene.data.subgraph != ws.subgraph:
            return
        sg = ws.subgraph
        n_ops = len(ws.model.subgraphs[sg].operators)
        marks = ws.breakpoints.op_marks(sg)
        inline = getattr(scene.data, "inline", None)
        slots = inline.slots() if inline is not None else []
        by_subgraph: dict[int, dict[int, bool]] = {}
        for k, (s, op) in enumerate(slots):  # breakpoints on inlined operators
            theirs = by_subgraph.setdefault(s, ws.breakpoints.op_marks(s))
            if op in theirs:
                marks[n_ops + k] = theirs[op]
        if not (ws.debug.active or marks):
            scene.drop_debug_overlay()
            return
        overlay = scene.debug_overlay(n_ops)
        if overlay is None:
            return
        stop = ws.debug.last_stop if ws.debug.active else None
        if stop is not None and sg < len(stop.executed) and len(stop.executed[sg]) == n_ops:
            executed, edges = stop.executed[sg], None
            if slots:
                executed = np.concatenate([executed, np.array(
                    [bool(stop.executed[s][op]) for s, op in slots], bool)])
                edges = self._computed_edges(stop, sg, scene.data)
            overlay.set_state(executed=executed, computed=stop.computed[sg],
                              current=self._frame_op(stop, sg), edges=edges)
        else:
            overlay.set_state()
        overlay.set_breakpoints(marks)

    @staticmethod
    def _computed_edges(stop, sg: int, data) -> np.ndarray:
        """Per edge of an expanded scene: its tensor computed (the shown subgraph's own, or
        a decomposition's)."""
        t = data.edge_tensor
        out = np.zeros(len(t), bool)
        own = (t >= 0) & (t < len(stop.computed[sg]))
        out[own] = stop.computed[sg][t[own]]
        for e, (s, k) in data.inline.edge_origin.items():
            out[e] = bool(stop.computed[s][k])
        return out

    def scroll_to_current(self) -> None:
        """Bring the operator about to run into view (after a step)."""
        w = self.window
        ws = self.controller.hub.workspace
        overlay = w.graph_scene._debug_overlay
        stop = ws.debug.last_stop
        current = self._frame_op(stop, ws.subgraph)
        if overlay is None or current is None:
            return
        rect = overlay.op_rect(current)
        if rect is not None:
            visible = w.view.mapToScene(w.view.viewport().rect()).boundingRect()
            if not visible.contains(rect):
                w.view.show_rect(QRectF(rect))

