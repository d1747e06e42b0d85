"""The debugger's worker: a `DebugSession` living on its own QThread.

The GUI thread sends commands through the queued `DebugWorker.execute` slot and receives
only immutable objects back (`DebugStop`, `TensorSnapshot`, `BreakpointInfo` tuples, a
cross-check report), so the interpreter is never touched from two threads.  The one
exception is `request_stop`, which sets a thread-safe flag the running command checks
before every op and between the blocks of a long convolution.  While a command runs, the
session's progress (`interpreter.progress.RunProgress`, every 0.1 s) goes out as
``progressed``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from ...interpreter import Interpreter
from ...interpreter.session import DebugSession

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class Request:
    """One command for the worker (a tuple would be unpacked by PySide's signals)."""

    command: str
    args: Any = ()
    interest: Any = None
    serial: int = 0


#: commands that move the run and answer with a stop
MOVES = ("start", "continue", "step_over", "step_into", "step_out", "run_to", "restart", "stop")


class DebugWorker(QObject):
    """Runs session commands on the worker thread (see the module docstring)."""

    opened = Signal(object, object)          # serial, tuple of InputSpec
    stopped = Signal(object, object, object)  # DebugStop, {(sg, t): TensorSnapshot}, serial
    snapshots = Signal(object, object)       # {(sg, t): TensorSnapshot}, serial
    breakpoints = Signal(object, object)     # tuple[BreakpointInfo], serial
    result = Signal(str, object, object)     # command, value, serial
    failed = Signal(str, str, object)        # command, message, serial
    progressed = Signal(object, object)      # interpreter.progress.RunProgress, serial

    def __init__(self) -> None:
        super().__init__()
        self.session: DebugSession | None = None
        self.serial = 0  # the session generation the GUI is talking to

    @Slot(object)
    def execute(self, request: "Request") -> None:
        """Run ``(command, args, interest, serial)``: a `DebugSession` method or one of the
        commands below with ``args``; ``interest`` lists the (subgraph, tensor) pairs to
        snapshot at the stop; ``serial`` names the session the GUI means."""
        command, args, interest, serial = (request.command, request.args, request.interest,
                                           request.serial)
        if command == "open":
            self._open(args, serial)
            return
        if command == "close":
            if self.session is not None and serial == self.serial:
                self.session.close()
                self.session = None
            return
        s = self.session
        if s is None or serial != self.serial:
            return  # a command for a session that has ended
        try:
            if command in MOVES:
                method = {"continue": s.continue_}.get(command) or getattr(s, command)
                stop = method(*args)
                # hit counts first: whoever reacts to the stop sees them current
                self.breakpoints.emit(s.breakpoints(), serial)
                self.stopped.emit(stop, s.snapshots(interest or ()), serial)
            elif command == "snapshots":
                self.snapshots.emit(s.snapshots(args), serial)
            elif command == "sync_breakpoints":
                s.sync_breakpoints(args)
                self.breakpoints.emit(s.breakpoints(), serial)
            elif command == "set_tensor":
                snap = s.set_tensor(*args)
                self.snapshots.emit({(snap.subgraph, snap.tensor): snap}, serial)
            elif command == "set_inputs":
                s.set_inputs(args)
                self.result.emit(command, dict(s.inputs), serial)
            else:
                self.result.emit(command, getattr(s, command)(*args), serial)
        except Exception as exc:  # noqa: BLE001 - every failure goes back as a message
            log.debug("debugger command %s failed", command, exc_info=True)
            self.failed.emit(command, str(exc) or type(exc).__name__, serial)

    def _open(self, args: dict, serial: Any) -> None:
        if self.session is not None:
            self.session.close()
        self.session = None
        self.serial = serial
        try:
            # the kernel set and float sums the window chose (Debug > Kernels, Float Sums)
            interpreter = Interpreter(args["model"], kernels=args.get("kernels", "auto"),
                                      float_sums=args.get("float_sums", "auto"))
            generation = args.get("generation")
            if generation is not None:  # prefill, then decode after decode
                from ...interpreter.generation_session import GenerationSession
                self.session = GenerationSession(args["model"], generation.plan,
                                                 generation.prompt, generation.steps,
                                                 interpreter=interpreter)
            else:
                self.session = DebugSession(args["model"], args.get("inputs") or {},
                                            signature=args.get("signature"),
                                            seed=args.get("seed", 0), interpreter=interpreter)
            # every command's progress, as a signal the GUI thread receives queued
            self.session.set_progress(lambda p, s=serial: self.progressed.emit(p, s))
            self.session.set_inline_composites(bool(args.get("inline_composites")))
            for bid, bp in args.get("breakpoints") or ():  # the workspace's, by its ids
                self.session.add_breakpoint(bp, bid)
        except Exception as exc:  # noqa: BLE001
            self.failed.emit("open", str(exc) or type(exc).__name__, serial)
            return
        self.opened.emit(serial, tuple(self.session.specs))
        self.breakpoints.emit(self.session.breakpoints(), serial)

    def request_stop(self) -> None:
        """Thread-safe: make a running command return before its next op."""
        s = self.session
        if s is not None:
            s.request_stop()

