"""The debugger in the window: Debug menu and toolbar, status, canvas marks, inspector.

`DebuggerController(window)` is all the window needs: it adds its menu, toolbar, status
label and docks (built by `menus`), and talks to the window only through its public methods and signals
(``model``, ``subgraph``, ``show_subgraph``, ``select_op``, ``model_replaced``, ...).
The run itself happens in a `DebugWorker` on a QThread; this side only sends commands and
receives immutable stops and snapshots, so the event loop never waits for a kernel.

An edit (``model_replaced``) ends the session with a notice: continuing a run of the old
model on the new one would show values that no longer exist.
"""
from __future__ import annotations

import logging
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QObject, QRectF, Qt, QThread, Signal
from PySide6.QtWidgets import QDockWidget, QMenu

from ...interpreter import debugger as dbg
from ...interpreter.session import ERROR, FINISHED, PAUSED, DebugStop
from ..panels.tensor_panel import NOT_RUNNING
from . import menus
from .state_label import StateLabel
from .worker import DebugWorker, Request

log = logging.getLogger(__name__)

def in_view(dock: QDockWidget) -> bool:
    """Whether ``dock`` can be seen: a dock behind another one's tab stays "visible" to
    Qt (isVisible) but has nothing of it on screen."""
    return dock.isVisible() and not dock.visibleRegion().isEmpty()


class DebuggerController(QObject):
    """Owns the worker thread, the debugger's actions, docks and canvas marks."""

    request = Signal(object)  # a worker.Request
    stopReceived = Signal(object)                  # DebugStop, after the window updated
    sessionEnded = Signal(str)                     # why
    crossCheckDone = Signal(object)                # crosscheck_dock.CrossCheck
    sessionInputsChanged = Signal()                # a session started or ended, new inputs

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.serial = 0
        self.active = False
        self.busy = False
        self.last_stop: DebugStop | None = None
        self.snapshots: dict[tuple[int, int], Any] = {}
        self._pending: set[tuple[int, int]] = set()
        self.breakpoint_infos: tuple = ()
        self.inputs: dict[str, np.ndarray] = {}
        self.signature: str | None = None  # the signature the run uses (None: subgraph 0)
        self.specs: tuple = ()
        self.heat: str | None = None  # what colours the ops: "time", "error" or nothing
        self.crosscheck_dock = None  # made by the first cross-check
        self.last_cross_check = None
        self.thread = QThread(self)
        self.thread.setObjectName("tflite-viewer debugger")
        self.worker = DebugWorker()
        self.worker.moveToThread(self.thread)
        self.request.connect(self.worker.execute, Qt.ConnectionType.QueuedConnection)
        self.worker.stopped.connect(self._stopped)
        self.worker.snapshots.connect(self._snapshots_arrived)
        self.worker.breakpoints.connect(self._breakpoints_arrived)
        self.worker.failed.connect(self._failed)
        self.worker.opened.connect(self._opened)
        self.worker.result.connect(self._result)
        self.thread.start()
        menus.build_docks(self)
        menus.build_actions(self)
        self.state_label = StateLabel()
        window.statusBar().addPermanentWidget(self.state_label)
        window.model_replaced.connect(self._model_replaced)
        window.subgraphShown.connect(lambda _i: self._paint_canvas(scroll=False))
        window.selectionChanged.connect(lambda _s: self._update_actions())
        window.installEventFilter(self)
        window.tensor_panel.live_values = self._live_value
        window.tensor_panel.menu_actions.append(
            lambda menu, _t: (menu.addSeparator(), menu.addAction(self.watch_action)))
        self._update_actions()

    # ==========================================================================================
    # construction (`menus`)
    def _dock(self, title: str, widget, name: str) -> QDockWidget:
        return menus.make_dock(self, title, widget, name)

    def add_menu_actions(self, menu: QMenu) -> None:
        """The canvas's context menu: see `menus.add_menu_actions`."""
        menus.add_menu_actions(self, menu)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt API
        if obj is self.window and event.type() == QEvent.Type.Close:
            self.shutdown()
        return False

    def shutdown(self) -> None:
        """Stop the worker thread (the window is closing)."""
        if self.thread.isRunning():
            self.worker.request_stop()
            self.thread.quit()
            self.thread.wait(10000)

    # ==========================================================================================
    # the session
    def _send(self, command: str, args: Any = (), interest: Any = None) -> None:
        if not self.thread.isRunning():  # a close of the window was cancelled
            self.thread.start()
        self.request.emit(Request(command, args, interest, self.serial))

    def ensure_session(self) -> bool:
        """Start a session on the window's model (once); False without a model."""
        if self.window.model is None:
            return False
        if not self.active:
            if not self.thread.isRunning():
                self.thread.start()
            self.serial += 1
            self.active = True
            self.snapshots = {}
            self.last_stop = None
            self.request.emit(Request("open", {"model": self.window.model,
                                               "inputs": self.inputs,
                                               "signature": self.signature}, None, self.serial))
            for dock in (self.callstack_dock, self.breakpoints_dock, self.watch_dock,
                         self.outputs_dock, self.profile_dock):
                dock.show()
            self.callstack_dock.raise_()
            self.sessionInputsChanged.emit()
        return True

    def session_inputs(self) -> tuple[dict[str, np.ndarray], str | None] | None:
        """The inputs the running session computes on, by input name (the chosen ones, the
        rest seeded as the session seeds them), and its signature; None without a session."""
        if not self.active or self.window.model is None:
            return None
        from ...interpreter.inputs import complete_inputs
        try:
            arrays, _ = complete_inputs(self.window.model, self.inputs, 0, self.signature)
        except Exception:  # noqa: BLE001 - inputs the session itself refused
            return None
        return arrays, self.signature

    def end_session(self, why: str = "") -> None:
        """End the session (the run is abandoned); ``why`` becomes a notice."""
        if not self.active:
            return
        self.worker.request_stop()
        self.request.emit(Request("close", None, None, self.serial))
        self.serial += 1
        self.active = False
        self.busy = False
        self.last_stop = None
        self.snapshots = {}
        self._pending.clear()
        self.breakpoint_infos = ()
        self.breakpoints_panel.set_breakpoints(())
        self.callstack_panel.set_stop(None, [])
        self.window.graph_scene.drop_debug_overlay()
        self.state_label.setText("")
        self._refresh_inspector()
        self._update_actions()
        if why:
            self.window.notice.show_notice(why, "info")
        self.sessionEnded.emit(why)
        self.sessionInputsChanged.emit()

    def _model_replaced(self, _model) -> None:
        if self.active:
            self.end_session("The debug session ended: the model changed. Start it again "
                             "(F5 / F10) to run the new model.")
        self.inputs = {}
        self.signature = None
        self.last_cross_check = None
        if self.heat == "error":
            self.heat = None
        if self.crosscheck_dock is not None:
            self.crosscheck_panel.show_message("The model changed: run the cross-check again.")
        self._update_actions()

    def _interest(self) -> list[tuple[int, int]]:
        keys = list(self.watch_panel.pinned)
        t = self.window.tensor_panel.tensor
        if t is not None:
            keys.append((t.subgraph.index, t.index))
        return keys

    def _move(self, command: str, args: tuple = ()) -> None:
        if not self.ensure_session():
            return
        self.busy = True
        self._update_actions()
        self.state_label.setText("Debug: running\u2026")
        self._send(command, args, self._interest())

    # -- commands (the actions) ----------------------------------------------------------------
    def continue_(self) -> None:
        self._move("continue")

    def step_over(self) -> None:
        self._move("step_over")

    def step_into(self) -> None:
        self._move("step_into")

    def step_out(self) -> None:
        self._move("step_out")

    def restart(self) -> None:
        self._move("restart")

    def run_to(self, subgraph: int, op: int) -> None:
        self._move("run_to", (subgraph, op))

    def run_to_selected(self) -> None:
        sel = self.window.selection
        if sel is None or sel[0] != "op":
            self.window.statusBar().showMessage("Select an operator to run to", 5000)
            return
        self.run_to(self.window.subgraph, sel[1])

    def stop(self) -> None:
        """Interrupt a running command (between two ops) and end the run."""
        if not self.active:
            return
        self.worker.request_stop()
        self._send("stop")

    def toggle_breakpoint(self, subgraph: int | None = None, op: int | None = None) -> None:
        if op is None:
            sel = self.window.selection
            if sel is None or sel[0] != "op":
                self.window.statusBar().showMessage("Select an operator for the breakpoint", 5000)
                return
            subgraph, op = self.window.subgraph, sel[1]
        if self.ensure_session():
            self._send("toggle_breakpoint", (subgraph, op))

    def add_breakpoint(self, bp: dbg.Breakpoint) -> None:
        if self.ensure_session():
            self._send("add_breakpoint", (bp,))

    def watch_selected(self) -> None:
        t = self.window.tensor_panel.tensor
        if t is None:
            return
        self.watch_panel.pin(t.subgraph.index, t.index, t.name)
        self.watch_dock.show()
        self.watch_dock.raise_()
        if self.active:
            self._send("snapshots", [(t.subgraph.index, t.index)])

    def cross_check(self) -> None:
        from .crosscheck_dock import start_cross_check
        start_cross_check(self)

    def inputs_dialog(self) -> None:
        from .inputs_dialog import InputsDialog
        if self.window.model is None:
            return
        dialog = InputsDialog(self.window.model, self.window.path, self.window.settings,
                              self.window, self.signature)
        if dialog.exec():
            self.set_inputs(dialog.arrays(), dialog.signature)
            if dialog.notes:
                self.window.notice.show_notice("; ".join(dialog.notes), "info")

    def set_inputs(self, arrays: dict[str, np.ndarray], signature: str | None = None) -> None:
        """Use these inputs (of ``signature``, or of subgraph 0) from the next start; another
        signature ends the session (its run has other inputs and another entry)."""
        self.inputs = dict(arrays)
        if signature != self.signature:
            self.signature = signature
            self.end_session()
        elif self.active:
            self._send("set_inputs", self.inputs)
            self.sessionInputsChanged.emit()

    def condition_dialog(self) -> None:
        from .condition_dialog import ConditionDialog
        if self.window.model is None:
            return
        sel = self.window.selection
        op = sel[1] if sel is not None and sel[0] == "op" else None
        dialog = ConditionDialog(self.window.model, self.window.subgraph, op, self.window)
        if dialog.exec():
            self.add_breakpoint(dialog.breakpoint())

    def set_tensor_dialog(self) -> None:
        from .set_tensor import set_tensor_dialog
        set_tensor_dialog(self)

    def set_tensor(self, subgraph: int, tensor: int, values: np.ndarray) -> None:
        if self.active:
            self._send("set_tensor", (subgraph, tensor, values))

    # ==========================================================================================
    # what comes back
    def _opened(self, serial, specs) -> None:
        if serial == self.serial:
            self.specs = specs

    def _stopped(self, stop: DebugStop, snaps: dict, serial) -> None:
        if serial != self.serial:
            return
        self.busy = False
        self.last_stop = stop
        self.snapshots = dict(snaps)
        self._pending.clear()
        self._follow(stop)
        self._paint_canvas(scroll=True)
        self._refresh_inspector()
        self.watch_panel.show_snapshots(self.snapshots)
        self.callstack_panel.set_stop(stop, self._subgraph_names())
        if in_view(self.profile_dock) or stop.state != PAUSED:
            self._update_profile(stop)  # else when the dock is shown
        if stop.state == FINISHED and stop.outputs is not None:
            self._show_outputs(stop)
            self.outputs_dock.raise_()
        self._show_state(stop)
        self._update_actions()
        if stop.state == ERROR:
            self.window.errors.report("The run failed", stop.message, parent=self.window)
        self.stopReceived.emit(stop)

    def _snapshots_arrived(self, snaps: dict, serial) -> None:
        if serial != self.serial:
            return
        self.snapshots.update(snaps)
        self._pending.difference_update(snaps)
        self.watch_panel.show_snapshots(self.snapshots)
        t = self.window.tensor_panel.tensor
        if t is not None and (t.subgraph.index, t.index) in snaps:
            self._refresh_inspector()

    def _breakpoints_arrived(self, infos, serial) -> None:
        if serial != self.serial or tuple(infos) == self.breakpoint_infos:
            return  # every stop sends them; only a change is worth a repaint
        self.breakpoint_infos = tuple(infos)
        self.breakpoints_panel.set_breakpoints(infos)
        self._paint_canvas(scroll=False)

    def _result(self, command: str, value, serial) -> None:
        if serial != self.serial:
            return
        if command == "set_inputs":
            self.window.statusBar().showMessage("Inputs set: they apply from the next start "
                                                "(Ctrl+Shift+F5 restarts)", 8000)

    def _failed(self, command: str, message: str, serial) -> None:
        if serial != self.serial:
            return
        self.busy = False
        self._update_actions()
        if command == "open":
            self.active = False
            self.state_label.setText("Debug: cannot run")
            self.window.errors.report("Cannot debug this model", message, parent=self.window)
            return
        self.window.errors.report("Debugger", message, parent=self.window)

    # ==========================================================================================
    # showing a stop
    def _subgraph_names(self) -> list[str]:
        model = self.window.model
        return [] if model is None else [sg.display_name for sg in model.subgraphs]

    def _show_state(self, stop: DebugStop) -> None:
        ops = f"{stop.ops_run:,} op{'' if stop.ops_run == 1 else 's'} run"
        text = f"Debug: {stop.describe(self._subgraph_names())} \u2014 {ops}"
        self.state_label.setText(text)
        if stop.message and stop.reason == "breakpoint":
            self.window.statusBar().showMessage(stop.message, 10000)

    def _follow(self, stop: DebugStop) -> None:
        """Show the subgraph the run is paused in (F11 into a body, Shift+F11 back)."""
        if stop.state != PAUSED or not stop.position:
            return
        sg = stop.position[-1][0]
        if sg != self.window.subgraph:
            self.window.show_subgraph(sg, wait=True)

    def _frame_op(self, subgraph: int) -> int | None:
        """The op about to run in ``subgraph`` if the paused run has a frame there."""
        stop = self.last_stop
        if stop is None or stop.state != PAUSED:
            return None
        for sg, op in reversed(stop.position):
            if sg == subgraph:
                return op
        return None

    def _paint_canvas(self, scroll: bool) -> None:
        """Mark the shown subgraph: executed ops, computed edges, breakpoints, current op."""
        w = self.window
        if w.model is None or w.graph_scene.data is None or \
                not (self.active or self.heat == "error"):
            return
        sg = w.subgraph
        n_ops = len(w.model.subgraphs[sg].operators)
        overlay = w.graph_scene.debug_overlay(n_ops)
        if overlay is None:
            return
        stop = self.last_stop if self.active else None
        current = self._frame_op(sg)
        if stop is not None and sg < len(stop.executed):
            overlay.set_state(executed=stop.executed[sg], computed=stop.computed[sg],
                              current=current)
        overlay.set_breakpoints({i.op: i.enabled for i in self.breakpoint_infos
                                 if i.op is not None and (i.subgraph or 0) == sg})
        if self.heat == "time":
            overlay.set_heat(self._heat_values(sg, n_ops))
        elif self.heat == "error" and self.last_cross_check is not None and \
                sg == self.last_cross_check.report.subgraph:
            overlay.set_heat(self.crosscheck_panel.op_errors(n_ops))
        else:
            overlay.set_heat(None)
        if scroll and current is not None:
            rect = overlay.op_rect(current)
            if rect is not None:
                visible = w.view.mapToScene(w.view.viewport().rect()).boundingRect()
                if not visible.contains(rect):
                    w.view.show_rect(QRectF(rect))

    def _heat_values(self, sg: int, n_ops: int) -> np.ndarray | None:
        stop = self.last_stop
        if stop is None or not stop.op_times:
            return None
        values = np.full(n_ops, np.nan)
        for (s, op), sec in stop.op_times.items():
            if s == sg and op < n_ops:
                values[op] = sec
        top = np.nanmax(values) if np.isfinite(values).any() else 0.0
        return values / top if top > 0 else None

    def _set_heat(self, on: bool) -> None:
        self.heat = "time" if on else (None if self.heat == "time" else self.heat)
        self._paint_canvas(scroll=False)

    def _set_error_colours(self, on: bool) -> None:
        self.heat = "error" if on else (None if self.heat == "error" else self.heat)
        self._paint_canvas(scroll=False)

    def _update_profile(self, stop: DebugStop) -> None:
        model = self.window.model
        names = {}
        for key in stop.op_times:
            try:
                names[key] = model.subgraphs[key[0]].operators[key[1]].name
            except (IndexError, AttributeError):
                names[key] = "?"
        self.profile_panel.set_times(dict(stop.op_times), names)

    def _show_outputs(self, stop: DebugStop) -> None:
        model = self.window.model
        entry = 0
        if self.specs:
            entry = self.specs[0].subgraph
        sg = model.subgraphs[entry]
        by_name = {sg.tensors[i].name: i for i in sg.outputs}
        if self.signature is not None:  # outputs named, and ordered, by the signature
            by_name = {m.name: m.tensor_index for m in model.signature(self.signature).outputs}
        producers = {}
        for op in sg.operators:
            for o in op.outputs:
                if o >= 0:
                    producers[o] = op.name
        rows = []
        for k, (name, arr) in enumerate(stop.outputs.items()):
            t = by_name.get(name, sg.outputs[k] if k < len(sg.outputs) else -1)
            if arr is not None:
                rows.append((name, t, arr))
        self.outputs_panel.show_outputs(model, entry, rows, producers)

    # -- the inspector -------------------------------------------------------------------------
    def _live_value(self, tensor):
        """The tensor panel's source of values during a session (see TensorPanel)."""
        if not self.active or self.last_stop is None or tensor.is_constant:
            return NOT_RUNNING
        key = (tensor.subgraph.index, tensor.index)
        snap = self.snapshots.get(key)
        if snap is None:
            if key not in self._pending and not self.busy:
                self._pending.add(key)
                self._send("snapshots", [key])
            return None
        return snap if snap.computed else None

    def _refresh_inspector(self) -> None:
        panel = self.window.tensor_panel
        if panel.tensor is not None:
            panel.refresh_values()

    def _show_tensor(self, subgraph: int, tensor: int) -> None:
        if subgraph != self.window.subgraph:
            self.window.show_subgraph(subgraph, wait=True)
        self.window.select_tensor(tensor)

    def show_op(self, subgraph: int, op: int) -> None:
        """Show ``subgraph`` and select ``op`` (a call-stack frame, a profile row ...)."""
        w = self.window
        if w.model is None:
            return
        if subgraph != w.subgraph:
            w.show_subgraph(subgraph, wait=True)
        if 0 <= op < len(w.model.subgraphs[subgraph].operators):
            w.select_op(op)

    def _update_actions(self) -> None:
        menus.update_actions(self)

    # -- for tests and --screenshot ------------------------------------------------------------
    @property
    def state(self) -> str:
        if not self.active:
            return "inactive"
        if self.busy:
            return "running"
        return self.last_stop.state if self.last_stop is not None else "ready"

