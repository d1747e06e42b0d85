"""The debugger in the window: Debug menu and toolbar, the session's commands, what comes back.

`DebuggerController(window)` is all the window needs: it adds its menu, toolbar, status
label and docks (built by `menus`).  The run itself happens in a `DebugWorker` on a
QThread; this side only sends commands and receives immutable stops and snapshots, so the
event loop never waits for a kernel.

Everything about the run belongs to the open workspace (`ui.state.workspace`): its inputs, the
session's generation, the last stop, snapshots, outputs and profile (``ws.debug``), the
breakpoints (``ws.breakpoints``, kept while no session runs and copied into each new one)
and the watch list (``ws.watches``).  The controller writes them and tells the hub; the
docks, the canvas marks (`canvas.DebugCanvas`) and the status label are views that render
the workspace they are handed.  A result the worker sends for a session that is no longer
the open workspace's is dropped.  Opening another model closes the workspace and with it
the session (``DebugState.release``); an edit ends it with a notice (`Workspace.replace_model`).
"""
from __future__ import annotations

import itertools
import logging
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import QMenu

from ...interpreter import debugger as dbg
from ...interpreter import kernel_sets
from ...interpreter.session import (ERROR, FINISHED, PAUSED, STOPPED, BreakpointInfo,
                                    DebugStop)
from ..state.crosscheck import crosscheck_state
from ..state.identity import TensorRef
from ..panels.tensor_panel import NOT_RUNNING
from ..state.workspace import (BREAKPOINTS, DEBUG, SESSION_NOTICE, SNAPSHOTS, WATCHES, RunOutputs,
                         Workspace)
from . import menus, worker_thread
from .canvas import DebugCanvas
from .run_progress import ProgressControl
from .state_label import StateLabel
from .menus import FLOAT_SUMS, FLOAT_SUMS_SETTING, KERNELS_SETTING
from .worker import Request

log = logging.getLogger(__name__)
_serials = itertools.count(1)  # session generations, unique for the process
#: how long closing the window waits for the running command to return
SHUTDOWN_WAIT_MS = 3000


class DebuggerController(QObject):
    """Owns the worker thread and the debugger's actions; the state is the workspace's."""

    request = Signal(object)  # a worker.Request
    stopReceived = Signal(object)                  # DebugStop, after the views updated
    snapshotsReceived = Signal(object)             # {(sg, t): TensorSnapshot}, after the views
    commandFailed = Signal(str, str)               # command, message (after it was reported)
    sessionEnded = Signal(str)                     # why
    crossCheckDone = Signal(object)                # crosscheck_dock.CrossCheck
    sessionInputsChanged = Signal()                # a session started or ended, new inputs

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window = window
        self.hub = window.hub
        self._new_worker()
        menus.build_actions(self)
        menus.build_docks(self)
        self.state_label = StateLabel(self.hub)
        window.statusBar().addPermanentWidget(self.state_label)
        self.state_label.setText("")  # hidden until a session starts
        self.progress = ProgressControl(self)
        self.canvas = DebugCanvas(self)
        self.hub.subscribe(self._workspace_changed, DEBUG, BREAKPOINTS)
        window.selectionChanged.connect(lambda _s: self._update_actions())
        window.installEventFilter(self)
        window.tensor_panel.live_values = self._live_value
        window.tensor_panel.menu_actions.append(
            lambda menu, _t: (menu.addSeparator(), menu.addAction(self.watch_action)))
        self._update_actions()

    # ==========================================================================================
    # the state, as the workspace holds it (the names tests and the window use)
    @property
    def ws(self) -> Workspace:
        return self.hub.workspace

    @property
    def active(self) -> bool:
        return self.ws.debug.active

    @property
    def busy(self) -> bool:
        return self.ws.debug.busy

    @property
    def last_stop(self) -> DebugStop | None:
        return self.ws.debug.last_stop

    @property
    def snapshots(self) -> dict:
        return self.ws.debug.snapshots

    @property
    def last_cross_check(self):
        return crosscheck_state(self.ws).result

    @property
    def breakpoint_infos(self) -> tuple[BreakpointInfo, ...]:
        """The workspace's breakpoints as the Breakpoints dock lists them."""
        return self.ws.breakpoint_infos()

    # ==========================================================================================
    # construction (`menus`)
    def add_menu_actions(self, menu: QMenu) -> None:
        """The canvas's context menu: see `menus.add_menu_actions`."""
        menus.add_menu_actions(self, menu)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt API
        if obj is self.window and event.type() == QEvent.Type.Close:
            self.shutdown()
        return False

    def _new_worker(self, start: bool = True) -> None:
        """A fresh worker on its own thread, its results queued to this object."""
        self.thread, self.worker = worker_thread.make(self, self.request, {
            "stopped": self._stopped, "snapshots": self._snapshots_arrived,
            "breakpoints": self._breakpoints_arrived, "failed": self._failed,
            "opened": self._opened, "result": self._result,
            "progressed": self._progressed}, start)

    def _progressed(self, p, serial) -> None:
        self.progress.progressed(p, serial)

    def shutdown(self) -> None:
        """Stop the worker thread (the window is closing).  A command that does not return
        within `SHUTDOWN_WAIT_MS` is left to end on its own (`worker_thread`), and the
        controller gets a fresh worker in case the close is cancelled."""
        if not worker_thread.stop(self.thread, self.worker, self.request, SHUTDOWN_WAIT_MS):
            self._new_worker(start=False)

    def _workspace_changed(self, _ws) -> None:
        self._update_actions()

    # ==========================================================================================
    # the session
    def _send(self, command: str, args: Any = (), interest: Any = None) -> None:
        if not self.thread.isRunning():  # a close of the window was cancelled
            self.thread.start()
        self.request.emit(Request(command, args, interest, self.ws.debug.serial))

    def ensure_session(self) -> bool:
        """Start a session on the open model (once); False without a model."""
        ws = self.ws
        if ws.model is None:
            return False
        if not ws.debug.active:
            if not self.thread.isRunning():
                self.thread.start()
            serial = next(_serials)
            d = ws.debug
            d.serial, d.active, d.busy = serial, True, False
            d.kernels = kernel_sets.resolve(self.kernels(), ws.model)
            d.snapshots, d.pending, d.last_stop = {}, set(), None
            d.release = lambda: self._release(serial)
            self.request.emit(Request("open", {
                "model": ws.model, "inputs": d.inputs, "signature": d.signature,
                "generation": d.generation, "inline_composites": self.inline_composites(),
                "float_sums": self.float_sums(), "kernels": self.kernels(),
                "breakpoints": [(e.id, e.make()) for e in ws.breakpoints]}, None, serial))
            for dock in (self.callstack_dock, self.breakpoints_dock, self.watch_dock,
                         self.outputs_dock, self.profile_dock):
                dock.show()
            self.callstack_dock.raise_()
            self.window.notice.dismiss(SESSION_NOTICE)  # about the session this one replaces
            self.hub.changed(DEBUG, ws)
            self.sessionInputsChanged.emit()
        return True

    def _release(self, serial: int) -> None:
        """The worker's session ``serial`` is no longer wanted (ended, or its workspace
        was closed): interrupt it and close it there."""
        if self.worker.serial == serial:
            self.worker.request_stop()
        self.request.emit(Request("close", None, None, serial))

    def session_inputs(self) -> tuple[dict[str, np.ndarray], str | None] | None:
        """The inputs the running session computes on, by input name (the chosen ones, the
        rest seeded as the session seeds them), and its signature; in a generation run the
        inputs and signature of the call it is in.  None without a session."""
        ws = self.ws
        if not ws.debug.active or ws.model is None:
            return None
        call = self.current_call()
        if call is not None:
            return dict(call.inputs), call.signature
        from ...interpreter.inputs import complete_inputs
        try:
            arrays, _ = complete_inputs(ws.model, ws.debug.inputs, 0, ws.debug.signature)
        except Exception:  # noqa: BLE001 - inputs the session itself refused
            return None
        return arrays, ws.debug.signature

    def current_call(self):
        """The generation call (`interpreter.generation.Call`) the session's last stop is
        in, or None (no generation run, or none started)."""
        stop = self.ws.debug.last_stop if self.ws.debug.active else None
        return None if stop is None else stop.call

    def run_inputs(self) -> tuple[dict[str, np.ndarray], str | None]:
        """What a cross-check runs on: the current call's inputs and signature in a
        generation run, else the chosen inputs (the rest seeded) and signature."""
        call = self.current_call()
        if call is not None:
            return dict(call.inputs), call.signature
        return dict(self.ws.debug.inputs), self.ws.debug.signature

    def describe_inputs(self) -> str:
        """`run_inputs` in words, for the results computed on them."""
        if self.current_call() is not None:
            return "the inputs of the generation call paused in"
        chosen = sorted(self.ws.debug.inputs)
        if not chosen:
            return "seeded inputs (Debug \u203a Inputs\u2026 chooses others)"
        return f"the debugger's inputs ({', '.join(chosen)}; the rest seeded)"

    def inline_composites(self) -> bool:
        """Whether the canvas draws composites expanded (Step Over then enters them)."""
        return self.window.composites.expand

    def float_sums(self) -> str:
        """How a run adds float32 products (Debug > Float Sums, remembered): ``auto``,
        ``reference`` or ``blas`` (`interpreter.float_sums`)."""
        value = str(self.window.settings.value(FLOAT_SUMS_SETTING, "auto"))
        return value if value in FLOAT_SUMS else "auto"

    def kernels(self) -> str:
        """The LiteRT kernel set a run follows (Debug > Kernels, remembered;
        `interpreter.kernel_sets`): ``auto`` for one not offered on this CPU."""
        action = self.kernels_actions.get(str(self.window.settings.value(KERNELS_SETTING)))
        return action.data() if action is not None and action.isEnabled() else "auto"

    def set_float_sums(self, mode: str) -> None:
        """Remember ``mode``; a session computing otherwise ends, the next run uses it."""
        menus.choose(self, FLOAT_SUMS_SETTING, self.float_sums_actions, mode, "Float sums")

    def set_kernels(self, mode: str) -> None:
        """Remember the kernel set ``mode``; a session following another ends."""
        menus.choose(self, KERNELS_SETTING, self.kernels_actions, mode, "Kernels")

    def set_inline_composites(self, on: bool) -> None:
        if self.ws.debug.active:
            self._send("set_inline_composites", (bool(on),))

    def end_session(self, why: str = "") -> None:
        """End the session (the run is abandoned); ``why`` becomes a notice."""
        ws = self.ws
        if not ws.debug.active:
            return
        ws.debug.end()
        for e in ws.breakpoints:
            e.hits = 0
        if why:
            self.window.notice.show_notice(why, "info", tag=SESSION_NOTICE)
        self.hub.changed(DEBUG, ws)
        self.hub.changed(BREAKPOINTS, ws)
        self._refresh_inspector()
        self.sessionEnded.emit(why)
        self.sessionInputsChanged.emit()

    def _interest(self) -> list[tuple[int, int]]:
        keys = self.ws.watches.keys()
        t = self.window.tensor_panel.tensor
        if t is not None:
            keys.append((t.subgraph.index, t.index))
        return keys

    def _move(self, command: str, args: tuple = ()) -> None:
        if not self.ensure_session():
            return
        self.ws.debug.busy = True
        self.hub.changed(DEBUG, self.ws)
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

    def run_to(self, subgraph: int, op: int, call: int | None = None) -> None:
        """Run to ``op`` of ``subgraph``; in a generation run, ``call`` (0 the prefill, i
        decode step i) names the call to stop in."""
        self._move("run_to", (subgraph, op) if call is None else (subgraph, op, call))

    def run_to_selected(self) -> None:
        at = self.window.selected_op()  # an inlined operator: of its own subgraph
        if at is None:
            self.window.statusBar().showMessage("Select an operator to run to", 5000)
            return
        self.run_to(*at)

    def stop(self) -> None:
        """Interrupt a running command (between two ops) and end the run."""
        if not self.active:
            return
        self.worker.request_stop()
        self._send("stop")

    # -- breakpoints: the workspace's, copied into the session ------------------------------
    def toggle_breakpoint(self, subgraph: int | None = None, op: int | None = None) -> None:
        """F9: a breakpoint before the selected operator (or ``op`` of ``subgraph``), or
        remove the one there.  No session is needed: it is kept with the model."""
        if op is None:
            at = self.window.selected_op()  # an inlined operator: of its own subgraph
            if at is None:
                self.window.statusBar().showMessage("Select an operator for the breakpoint", 5000)
                return
            subgraph, op = at
        ws = self.ws
        if ws.model is None:
            return
        entry = ws.breakpoints.on_op(subgraph, op)
        if entry is not None:
            ws.breakpoints.remove(entry.id)
        else:
            ws.breakpoints.add(dbg.OpBreakpoint(op, subgraph), ws.model)
        self._breakpoints_changed()

    def add_breakpoint(self, bp: dbg.Breakpoint) -> None:
        ws = self.ws
        if ws.model is None:
            return
        ws.breakpoints.add(bp, ws.model)
        self._breakpoints_changed()

    def remove_breakpoint(self, bid: int) -> None:
        if self.ws.breakpoints.remove(bid):
            self._breakpoints_changed()

    def enable_breakpoint(self, bid: int, enabled: bool) -> None:
        entry = self.ws.breakpoints.get(bid)
        if entry is not None and entry.enabled != bool(enabled):
            entry.enabled = bool(enabled)
            self._breakpoints_changed()

    def _breakpoints_changed(self) -> None:
        ws = self.ws
        self.hub.changed(BREAKPOINTS, ws)
        if ws.debug.active:
            self._send("sync_breakpoints", [(e.id, e.make()) for e in ws.breakpoints])

    # -- the watch list -----------------------------------------------------------------------
    def watch(self, subgraph: int, tensor: int) -> None:
        """Pin a tensor of the open model in the Watch dock."""
        ws = self.ws
        if ws.model is None:
            return
        ws.watches.pin(TensorRef.of(ws.model, subgraph, tensor))
        self.hub.changed(WATCHES, ws)
        self.watch_dock.show()
        self.watch_dock.raise_()
        if ws.debug.active:
            self._send("snapshots", [(subgraph, tensor)])

    def unwatch(self, subgraph: int, tensor: int) -> None:
        if self.ws.watches.unpin((subgraph, tensor)):
            self.hub.changed(WATCHES, self.ws)

    def watch_selected(self) -> None:
        t = self.window.tensor_panel.tensor
        if t is not None:
            self.watch(t.subgraph.index, t.index)

    def cross_check(self) -> None:
        from .crosscheck_dock import start_cross_check
        start_cross_check(self)

    def inputs_dialog(self) -> None:
        from .inputs_dialog import InputsDialog
        if self.window.model is None:
            return
        dialog = InputsDialog(self.window.model, self.window.path, self.window.settings,
                              self.window, self.ws.debug.signature, self.ws.debug.generation)
        accepted = dialog.exec()
        self.window.view.setFocus(Qt.FocusReason.OtherFocusReason)  # the canvas, not a dock
        if accepted and dialog.generation is not None:
            self.set_generation(dialog.generation)
        elif accepted:
            self.set_inputs(dialog.arrays(), dialog.signature)
            if dialog.notes:
                self.window.notice.show_notice("; ".join(dialog.notes), "info")

    def set_generation(self, setup) -> None:
        """Run a generation loop (a workspace.GenerationSetup) from the next start: prefill,
        then decode steps, the KV cache carried; the session there is ends (its run has
        other inputs and entries).  None: back to one run of the chosen inputs."""
        d = self.ws.debug
        if setup == d.generation:
            return
        d.generation = setup
        self.end_session()

    def set_inputs(self, arrays: dict[str, np.ndarray], signature: str | None = None) -> None:
        """Use these inputs (of ``signature``, or of subgraph 0) from the next start; another
        signature ends the session (its run has other inputs and another entry)."""
        d = self.ws.debug
        d.inputs = dict(arrays)
        if d.generation is not None:
            d.generation, d.signature = None, signature
            self.end_session()
        elif signature != d.signature:
            d.signature = signature
            self.end_session()
        elif d.active:
            self._send("set_inputs", d.inputs)
            self.sessionInputsChanged.emit()

    def condition_dialog(self) -> None:
        from .condition_dialog import ConditionDialog
        if self.window.model is None:
            return
        at = self.window.selected_op()
        subgraph, op = at if at is not None else (self.window.subgraph, None)
        dialog = ConditionDialog(self.window.model, subgraph, op, self.window)
        if dialog.exec():
            self.add_breakpoint(dialog.breakpoint())
        self.window.view.setFocus(Qt.FocusReason.OtherFocusReason)

    def set_tensor_dialog(self) -> None:
        from .set_tensor import set_tensor_dialog
        set_tensor_dialog(self)

    def set_tensor(self, subgraph: int, tensor: int, values: np.ndarray) -> None:
        if self.active:
            self._send("set_tensor", (subgraph, tensor, values))

    # ==========================================================================================
    # what comes back (each for the open workspace's session, else dropped)
    def _current(self, serial) -> Workspace | None:
        ws = self.ws
        return ws if ws.debug.active and serial == ws.debug.serial else None

    def _opened(self, serial, specs) -> None:
        if (ws := self._current(serial)) is not None:
            ws.debug.specs = specs

    def _stopped(self, stop: DebugStop, snaps: dict, serial) -> None:
        ws = self._current(serial)
        if ws is None:
            return
        d = ws.debug
        before = d.last_stop
        d.busy = False
        d.last_stop = stop
        d.snapshots = dict(snaps)
        d.pending.clear()
        d.profile = dict(stop.op_times)
        if stop.state == FINISHED and stop.outputs is not None:
            d.outputs = self._outputs(ws, stop)
        self._follow(stop, before)
        self.hub.changed(DEBUG, ws)
        self.canvas.scroll_to_current()
        self._refresh_inspector()
        if stop.state == FINISHED and stop.outputs is not None:
            self.outputs_dock.raise_()
        cancelled = self.progress.take_cancelled()
        if cancelled is not None and stop.state == STOPPED:
            self.window.statusBar().showMessage(cancelled, 20000)
        elif stop.message and stop.reason == "breakpoint":
            self.window.statusBar().showMessage(stop.message, 10000)
        else:  # a breakpoint's message from an earlier stop no longer holds
            self.window.statusBar().clearMessage()
        if stop.state == ERROR:
            self.window.errors.report("The run failed", stop.message, parent=self.window)
        self.stopReceived.emit(stop)

    def _snapshots_arrived(self, snaps: dict, serial) -> None:
        ws = self._current(serial)
        if ws is None:
            return
        ws.debug.snapshots.update(snaps)
        ws.debug.pending.difference_update(snaps)
        self.hub.changed(SNAPSHOTS, ws)
        t = self.window.tensor_panel.tensor
        if t is not None and (t.subgraph.index, t.index) in snaps:
            self._refresh_inspector()
        self.snapshotsReceived.emit(snaps)

    def _breakpoints_arrived(self, infos, serial) -> None:
        ws = self._current(serial)
        if ws is None:
            return
        hits = {i.id: i.hits for i in infos}
        if all(e.hits == hits.get(e.id, 0) for e in ws.breakpoints):
            return  # every stop sends them; only a change is worth a repaint
        ws.breakpoints.set_hits(hits)
        self.hub.changed(BREAKPOINTS, ws)

    def _result(self, command: str, value, serial) -> None:
        if self._current(serial) is None:
            return
        if command == "set_inputs":
            self.window.statusBar().showMessage("Inputs set: they apply from the next start "
                                                "(Ctrl+Shift+F5 restarts)", 8000)

    def _failed(self, command: str, message: str, serial) -> None:
        ws = self._current(serial)
        if ws is None:
            return
        ws.debug.busy = False
        if command == "open":
            ws.debug.end()
            self.hub.changed(DEBUG, ws)
            self.state_label.setText("Debug: cannot run")
            self.window.errors.report("Cannot debug this model", message, parent=self.window)
        else:
            self.hub.changed(DEBUG, ws)
            self.window.errors.report("Debugger", message, parent=self.window)
        self.commandFailed.emit(command, message)

    # ==========================================================================================
    # showing a stop
    def _follow(self, stop: DebugStop, before: DebugStop | None) -> None:
        """Show the subgraph the run is paused in (F11 into a body, Shift+F11 back); when the
        run ends inside a called subgraph (Step Out of an IF branch), the entry subgraph."""
        w = self.window
        if stop.state == PAUSED and stop.position:
            sg = stop.position[-1][0]
            inline = getattr(w.graph_scene.data, "inline", None)
            if inline is not None and stop.position[0][0] == w.subgraph and \
                    sg in {s for s, _ in inline.node_of}:
                return  # paused in a composite drawn inline on the subgraph shown
            if sg != w.subgraph:
                w.show_subgraph(sg, wait=True)
            return
        if before is not None and len(before.position) > 1 and \
                w.subgraph in [s for s, _ in before.position[1:]]:
            w.show_subgraph(before.position[0][0], wait=True)

    def _outputs(self, ws: Workspace, stop: DebugStop) -> RunOutputs:
        model = ws.model
        entry = ws.debug.specs[0].subgraph if ws.debug.specs else 0
        signature = ws.debug.signature
        if stop.call is not None:  # a generation run: its last call's
            signature = stop.call.signature
            entry = model.signature(signature).subgraph_index
        sg = model.subgraphs[entry]
        by_name = {sg.tensors[i].name: i for i in sg.outputs}
        if signature is not None:  # outputs named, and ordered, by the signature
            by_name = {m.name: m.tensor_index for m in model.signature(signature).outputs}
        rows = []
        for k, (name, arr) in enumerate(stop.outputs.items()):
            t = by_name.get(name, sg.outputs[k] if k < len(sg.outputs) else -1)
            if arr is not None:
                rows.append((name, t, arr))
        prompt = tuple(ws.debug.generation.prompt) if ws.debug.generation is not None else ()
        return RunOutputs(entry, tuple(rows), tuple(stop.tokens), prompt)

    # -- the inspector -------------------------------------------------------------------------
    def _live_value(self, tensor):
        """The tensor panel's source of values during a session (see TensorPanel)."""
        d = self.ws.debug
        if not d.active or d.last_stop is None or tensor.is_constant:
            return NOT_RUNNING
        key = (tensor.subgraph.index, tensor.index)
        snap = d.snapshots.get(key)
        if snap is None:
            if key not in d.pending and not d.busy:
                d.pending.add(key)
                self._send("snapshots", [key])
            return None
        return snap if snap.computed else None

    def _refresh_inspector(self) -> None:
        panel = self.window.tensor_panel
        if panel.tensor is not None:
            panel.refresh_values()

    def _update_actions(self) -> None:
        menus.update_actions(self)

    # -- for tests and --screenshot ------------------------------------------------------------
    @property
    def state(self) -> str:
        d = self.ws.debug
        if not d.active:
            return "inactive"
        if d.busy:
            return "running"
        return d.last_stop.state if d.last_stop is not None else "ready"

