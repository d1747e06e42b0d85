"""How far a run is: ops done out of the execution plan, the op running now, the time left.

A run reports its progress through a callback (`Interpreter.set_progress`) with immutable
`RunProgress` objects, at most every ``interval`` seconds, from the thread that runs it:
at the start of a command, at op boundaries (inside loop bodies too), at WHILE iterations
(fused loops included), at the checkpoints long kernels make between their blocks
(`Subgraph.checkpoint`), and once more when the run finishes.  `ProgressMeter.snapshot`
answers the same question from any thread at any time, for a window that polls.

What is counted: ``done`` and ``total`` are ops of the entry subgraph's execution plan,
the ops a user sees in the main graph.  A WHILE, IF or CALL_ONCE is one op of that plan;
while it runs, ``path`` names its iteration and the op of the called subgraph running
now, and ``ops_run`` counts every op run, the loop bodies' included.  A kernel that
reports how far it is through its blocks (float CONV_2D) moves the fraction within its
op.  The time left is the command's elapsed time per op done (the fraction within the
running op counted) times the ops left: None until something was done.

Reporting costs the executor's loops nothing while no callback is set: the moment of the
next report is folded into the time-budget deadline they compare the clock with already
(`RunState.due`).
"""
from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .run_state import Frame, RunState

_INF = float("inf")
#: seconds between two reports, unless `Interpreter.set_progress` says otherwise
DEFAULT_INTERVAL = 0.1


@dataclass(frozen=True)
class RunProgress:
    """Where a run is, for a progress bar (see the module docstring): immutable, safe to
    hand to another thread."""

    done: int                       # ops of the entry subgraph's plan finished
    total: int                      # ops in that plan
    ops_run: int                    # every op run, those of called subgraphs included
    op: tuple[int, int] | None      # (subgraph, op) running now, the innermost one
    op_name: str                    # its type ("" when no op runs)
    path: str                       # the call path (`RunState.call_path`)
    elapsed: float                  # seconds this command has run
    seconds_left: float | None      # the estimate; None until an op was done
    finished: bool = False          # the run reached the end of its plan
    fraction: float = 0.0           # done out of total, the running op's share counted

    def describe(self, width: int | None = None) -> str:
        """One line: ``subgraph 0 op 12 (CONV_2D), 3.2 s left``; ``done in 1.20 s`` at
        the end.  Within ``width`` characters, the call path loses its outer frames."""
        if self.finished:
            return f"done in {self.elapsed:.2f} s"
        where = self.path if self.op is not None else "starting"
        tail = "" if self.seconds_left is None else f", {_seconds(self.seconds_left)} left"
        if width is not None and len(where) + len(tail) > width:
            keep = max(width - len(tail) - 3, 0)
            where = "..." + where[len(where) - keep:]
        return where + tail


def _seconds(s: float) -> str:
    if s < 10:
        return f"{s:.1f} s"
    if s < 120:
        return f"{s:.0f} s"
    return f"{s / 60:.0f} min"


class ProgressMeter:
    """The progress of one interpreter's runs (see the module docstring)."""

    __slots__ = ("state", "callback", "interval", "next_at", "started", "start_done",
                 "within")

    def __init__(self, state: "RunState") -> None:
        self.state = state
        self.callback: Callable[[RunProgress], object] | None = None
        self.interval = DEFAULT_INTERVAL
        #: when the next report is due (inf: no callback)
        self.next_at = _INF
        self.started = perf_counter()
        self.start_done = 0.0  # ops done when the command began (a resumed stepped run)
        #: (frame, op, fraction) a kernel reported from its checkpoint
        self.within: tuple["Frame", int, float] | None = None

    def watch(self, callback: Callable[[RunProgress], object] | None,
              interval: float = DEFAULT_INTERVAL) -> None:
        """Report to ``callback`` every ``interval`` seconds of a run (None: stop)."""
        if not interval > 0:
            raise ValueError(f"the progress interval must be > 0 seconds, not {interval}")
        self.callback = callback
        self.interval = float(interval)
        self.next_at = _INF

    def begin(self) -> None:
        """A command (invoke, or a stepped run's run/step ...) starts: the clock, and a
        report at its first op boundary."""
        self.started = perf_counter()
        self.within = None
        if self.callback is None:  # (a poll then estimates from the run's first op)
            self.start_done, self.next_at = 0.0, _INF
        else:
            self.start_done, self.next_at = self._done(), self.started

    def tick(self, now: float) -> None:
        """Report (the clock passed `next_at`) and set the next report's time."""
        callback = self.callback
        if callback is None:
            self.next_at = _INF
            return
        self.next_at = now + self.interval
        callback(self.snapshot(now))

    def finish(self) -> None:
        """The run reached its end: the last report, whatever the interval."""
        if self.callback is not None:
            self.next_at = _INF
            self.callback(self.snapshot(finished=True))

    def report_within(self, fraction: float) -> None:
        """A kernel's share of its op done (0..1), from its checkpoint."""
        stack = self.state.stack
        if stack:
            frame = stack[-1]
            self.within = (frame, frame.op, min(max(float(fraction), 0.0), 1.0))

    def _done(self) -> float:
        """Ops of the entry plan done, the running top-level op's reported share added."""
        stack = list(self.state.stack)  # (a copy: another thread may be polling)
        if not stack:
            return 0.0
        top = stack[0]  # its op index is the ops done: plans run nodes in index order
        done = float(min(top.op, self._total()))
        within = self.within
        if within is not None and len(stack) == 1 and within[0] is top and within[1] == top.op:
            done += within[2]
        return done

    def _total(self) -> int:
        state = self.state
        if not 0 <= state.entry < len(state.subgraphs):
            return 0
        return len(state.subgraphs[state.entry].execution_plan)

    def snapshot(self, now: float | None = None, finished: bool = False) -> RunProgress:
        """The progress now; callable from any thread."""
        state = self.state
        now = perf_counter() if now is None else now
        total = self._total()
        done = float(total) if finished else self._done()
        elapsed = max(now - self.started, 0.0)
        advanced = done - self.start_done
        left = None
        if finished:
            left = 0.0
        elif advanced > 0:
            left = elapsed / advanced * max(total - done, 0.0)
        op, name = None, ""
        stack = list(state.stack)
        if stack and not finished:
            frame = stack[-1]
            nodes = state.subgraphs[frame.subgraph].nodes
            if frame.op < len(nodes):
                op, name = (frame.subgraph, frame.op), nodes[frame.op].name
        return RunProgress(int(done), total, state.ops_run(), op, name,
                           state.call_path() if op is not None else "", elapsed, left,
                           finished, done / total if total else 1.0)
