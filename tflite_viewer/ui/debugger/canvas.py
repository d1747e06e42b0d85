"""The debugger's marks on the canvas, a view of the open workspace.

Executed operators, computed edges and the operator about to run come from the session's
last stop (``ws.debug``), the breakpoint dots from ``ws.breakpoints`` (shown with or without
a session), and the heat colours from the last stop's op times or the cross-check's errors
(``ws.crosscheck``), with a legend saying what the colours measure.  All are drawn by one
`debug_overlay.DebugOverlayItem` on the shown subgraph's scene; a stop of another model can
never reach it, because the workspace that held it is gone.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QRectF

from ...interpreter.session import PAUSED
from ..canvas_legend import CanvasLegend
from ..debug_overlay import heat_color
from ..workspace import BREAKPOINTS, CROSSCHECK, DEBUG, MODEL, NAVIGATION


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


class DebugCanvas:
    """Paints `DebugOverlayItem` from the workspace (see the module docstring)."""

    def __init__(self, controller) -> None:
        self.controller = controller
        self.window = controller.window
        self.legend = CanvasLegend(self.window.view, heat_color, slot=1)
        controller.hub.subscribe(lambda _ws: self.paint(), MODEL, NAVIGATION, DEBUG,
                                 BREAKPOINTS, CROSSCHECK)

    def _frame_op(self, stop, subgraph: int) -> int | None:
        """The op about to run in ``subgraph`` if the paused run has a frame there."""
        if stop is None or stop.state != PAUSED:
            return None
        for sg, op in reversed(stop.position):
            if sg == subgraph:
                return op
        return None

    def paint(self) -> None:
        """Mark the shown subgraph: executed ops, computed edges, breakpoints, current op,
        heat; no marks at all when there is nothing to show."""
        w, ctl = self.window, self.controller
        ws = ctl.hub.workspace
        scene = w.graph_scene
        if ws.model is None or scene.data is None or scene.data.subgraph != ws.subgraph:
            self.legend.hide()
            return
        sg = ws.subgraph
        n_ops = len(ws.model.subgraphs[sg].operators)
        marks = ws.breakpoints.op_marks(sg)
        heat = self._heat(ws, sg, n_ops)
        if not (ws.debug.active or marks or heat is not None):
            scene.drop_debug_overlay()
            self.legend.hide()
            return
        overlay = scene.debug_overlay(n_ops)
        if overlay is None:
            return
        stop = ws.debug.last_stop if ws.debug.active else None
        if stop is not None and sg < len(stop.executed) and len(stop.executed[sg]) == n_ops:
            overlay.set_state(executed=stop.executed[sg], computed=stop.computed[sg],
                              current=self._frame_op(stop, sg))
        else:
            overlay.set_state()
        overlay.set_breakpoints(marks)
        overlay.set_heat(heat)

    def _heat(self, ws, sg: int, n_ops: int) -> np.ndarray | None:
        heat = self.controller.heat
        if heat == "time":
            return self._time_heat(ws, sg, n_ops)
        if heat == "error":
            check = ws.crosscheck.result
            if check is not None and sg == check.report.subgraph:
                from .crosscheck_dock import op_errors
                self.legend.set_range("cross-check: error / range of LiteRT's (log)",
                                      "1e-7 or less", "0.1 or more")
                return op_errors(check, n_ops)
        self.legend.hide()
        return None

    def _time_heat(self, ws, sg: int, n_ops: int) -> np.ndarray | None:
        times = ws.debug.profile if ws.debug.active else {}
        values = np.full(n_ops, np.nan)
        for (s, op), sec in times.items():
            if s == sg and 0 <= op < n_ops:
                values[op] = sec
        top = np.nanmax(values) if np.isfinite(values).any() else 0.0
        if not top > 0:
            self.legend.hide()
            return None
        self.legend.set_range("op time of the last stop (red: slowest)", "0 ms", _ms(top))
        return values / top

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

