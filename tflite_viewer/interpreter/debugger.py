"""What the debugger API talks in, and the debugger that pauses and resumes runs.

A position is the call stack of ``(subgraph, op)`` pairs, outermost first; ``op`` is the
index of the operator about to run (equal to the subgraph's op count when all its ops ran
and it is about to return).  Op breakpoints fire before their op runs; conditional
breakpoints (non-finite values, values out of a range, saturated quantized values, any
predicate) are checked after an op runs and pause before the next one.

`Debugger` is the stepping API's engine: given the interpreter's `RunState` and its
`Executor`, it pulls on the executor's pausable walk (`Executor.walk`) until a stop
condition holds: the next op (step), the end of a subgraph (step out), an op (run to), a
breakpoint, a stop request, or the end of the run.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generator

import numpy as np

from .run_state import Frame, Position, RunState

if TYPE_CHECKING:
    from .executor import Executor
    from .interpreter import Interpreter
    from .node import Node
    from .subgraph import Subgraph

__all__ = ["Breakpoint", "ConditionBreakpoint", "Debugger", "Frame", "NonFiniteBreakpoint",
           "OpBreakpoint", "OpEvent", "OpTypeBreakpoint", "Position", "RangeBreakpoint",
           "SaturationBreakpoint", "Stop"]


@dataclass(frozen=True)
class OpEvent:
    """What before/after hooks receive."""

    subgraph: int
    op: int
    name: str
    node: "Node"
    depth: int
    seconds: float | None = None  # the op's wall time (after hooks only)


@dataclass
class Stop:
    """Why `run`/`step`/`run_to` returned, and where execution is now."""

    reason: str  # "finished", "step", "breakpoint", "run_to", "interrupted"
    position: Position
    breakpoint: "Breakpoint | None" = None
    op: tuple[int, int] | None = None  # (subgraph, op) the stop is about
    message: str = ""
    outputs: dict[str, np.ndarray] | None = None  # named outputs, once finished

    @property
    def finished(self) -> bool:
        return self.reason == "finished"


@dataclass(eq=False)
class Breakpoint:
    """Base: a stop condition, optionally restricted to a subgraph, an op or an op type."""

    subgraph: int | None = None
    op: int | None = None
    op_type: str | None = None
    enabled: bool = True
    hits: int = field(default=0, init=False)

    #: "before" breakpoints are checked before the op runs, "after" ones after it
    when = "before"

    def applies(self, subgraph: int, node: "Node") -> bool:
        return ((self.subgraph is None or self.subgraph == subgraph)
                and (self.op is None or self.op == node.index)
                and (self.op_type is None or self.op_type == node.name))

    def check(self, interp: "Interpreter", ctx: "Subgraph", node: "Node") -> str | None:
        """A message when the breakpoint fires for this node, else None."""
        return f"breakpoint at subgraph {ctx.index} op {node.index} ({node.name})"


class OpBreakpoint(Breakpoint):
    """Pause before one operator (`op`, in `subgraph`, default 0)."""

    def __init__(self, op: int, subgraph: int = 0) -> None:
        super().__init__(subgraph=subgraph, op=op)


class OpTypeBreakpoint(Breakpoint):
    """Pause before every operator of a type (``"CONV_2D"``, or a custom op's name)."""

    def __init__(self, op_type: str, subgraph: int | None = None) -> None:
        super().__init__(subgraph=subgraph, op_type=op_type)


def _outputs(ctx: "Subgraph", node: "Node"):
    """(where, tensor) for each computed output: ``where`` names it for a breakpoint's
    reason ("output 0 (tensor 7 'conv') of subgraph 0 op 3 (CONV_2D)")."""
    for k, i in enumerate(node.outputs):
        if i >= 0 and ctx.tensors[i].data is not None:
            t = ctx.tensors[i]
            yield (f"output {k} (tensor {t.index} {t.name!r}) of subgraph {ctx.index} op "
                   f"{node.index} ({node.name})"), t


@dataclass(eq=False)
class NonFiniteBreakpoint(Breakpoint):
    """Pause after an op that writes NaN or Inf into a float output."""

    when = "after"

    def check(self, interp, ctx, node):
        for where, t in _outputs(ctx, node):
            d = t.data
            if d.dtype.kind in "fc" and d.size and not np.isfinite(d).all():
                kinds = ("NaN" if np.isnan(d).any() else "") + \
                        ("Inf" if np.isinf(d).any() else "")
                return f"{kinds} in {where}"
        return None


@dataclass(eq=False)
class RangeBreakpoint(Breakpoint):
    """Pause after an op whose output has a value outside [low, high] (real values for
    quantized outputs)."""

    low: float = -np.inf
    high: float = np.inf
    when = "after"

    def check(self, interp, ctx, node):
        for where, t in _outputs(ctx, node):
            d = t.data
            if d.dtype.kind not in "biuf" or not d.size:
                continue
            if t.quantization is not None and t.quantization.has_scale and d.dtype.kind in "iu":
                d = t.quantization.dequantize(d)
            lo, hi = float(np.min(d)), float(np.max(d))
            if lo < self.low or hi > self.high:
                return f"{where} spans [{lo:g}, {hi:g}], outside [{self.low:g}, {self.high:g}]"
        return None


@dataclass(eq=False)
class SaturationBreakpoint(Breakpoint):
    """Pause after an op whose quantized integer output sits at its type's limits in more
    than `fraction` of its elements (0: any element)."""

    fraction: float = 0.0
    when = "after"

    def check(self, interp, ctx, node):
        for where, t in _outputs(ctx, node):
            d = t.data
            if not t.is_quantized_int or d.dtype.kind not in "iu" or not d.size:
                continue
            info = np.iinfo(d.dtype)
            saturated = np.count_nonzero((d == info.min) | (d == info.max)) / d.size
            if saturated > self.fraction:
                return (f"{where}: {saturated:.1%} of values at the {t.type_name} limits "
                        f"[{info.min}, {info.max}]")
        return None


@dataclass(eq=False)
class ConditionBreakpoint(Breakpoint):
    """Pause after an op when ``predicate(interpreter, subgraph, node)`` is true."""

    predicate: Callable[["Interpreter", "Subgraph", "Node"], Any] | None = None
    when = "after"

    def check(self, interp, ctx, node):
        if self.predicate is not None and self.predicate(interp, ctx, node):
            return f"condition true after subgraph {ctx.index} op {node.index} ({node.name})"
        return None


class Debugger:
    """Pauses and resumes the runs of one interpreter (see the module docstring).

    ``outputs`` gives the entry's named outputs for a finished stop; breakpoint
    conditions receive the executor's ``interpreter``.
    """

    def __init__(self, state: RunState, executor: "Executor",
                 outputs: Callable[[], dict[str, np.ndarray | None]]) -> None:
        self.state = state
        self.executor = executor
        self.outputs = outputs
        self.breakpoints: list[Breakpoint] = []
        self._gen: Generator | None = None
        #: after-breakpoints that fired during the op just run: (breakpoint, message, op)
        self._pending: list[tuple[Breakpoint, str, tuple[int, int]]] = []

    def abort(self) -> None:
        """Abandon the run in progress (its generator closed): back to ``ready``."""
        if self._gen is not None:
            self._gen.close()
        self._gen = None
        state = self.state
        state.stack.clear()
        state.active.clear()
        self._pending.clear()
        state.status = "ready"
        state.paused_since = None

    def start(self, entry: "Subgraph") -> Stop:
        """A run of ``entry`` (its inputs set), paused before its first op."""
        self._gen = self.executor.walk(entry)
        self.state.status = "paused"
        with np.errstate(all="ignore"):
            self._advance()  # to the first op boundary
        if self.state.status == "finished":
            return self._finished_stop()
        return Stop("step", self.state.position)

    def resume(self, mode: str, target: tuple[int, Any] | None = None) -> Stop:
        """Go on until the stop ``mode`` asks for: ``continue`` (a breakpoint or the end),
        ``step``, ``step_into``, ``step_out`` or ``run_to`` (``target``: (subgraph, op
        index or op type name))."""
        state = self.state
        state.begin_command()
        with np.errstate(all="ignore"):  # float kernels follow IEEE (inf, nan), silently
            stop = self._resume_loop(mode, target)
        if state.status == "finished":
            state.progress.finish()
        return stop

    # -- the driver ----------------------------------------------------------------------
    def _advance(self) -> bool:
        """Run to the next op boundary; False when the run finished."""
        state = self.state
        if state.paused_since is not None:
            state.paused_total += time.perf_counter() - state.paused_since
            state.paused_since = None
        try:
            next(self._gen)
        except StopIteration:
            self._gen = None
            state.status = "finished"
            return False
        except BaseException:
            self._failed()
            raise
        state.paused_since = time.perf_counter()
        return True

    def _failed(self) -> None:
        """The run raised: it cannot go on."""
        self._gen = None
        self.state.status = "ready"
        self.state.active.clear()

    def _interrupted(self) -> Stop:
        """A stop request seen at a pause point of a stepped run: pause there."""
        self.state.budget.stop_requested = False
        return Stop("interrupted", self.state.position, message="stopped on request")

    def _finished_stop(self) -> Stop:
        return Stop("finished", self.state.position, outputs=self.outputs())

    def _drain(self) -> Stop:
        """Continue with nothing that can stop the run but a stop request: the executor's
        walk without per-op checks."""
        state = self.state
        if state.paused_since is not None:
            state.paused_total += time.perf_counter() - state.paused_since
            state.paused_since = None
        budget = state.budget
        try:
            for _ in self._gen:
                if budget.stop_requested:
                    state.paused_since = time.perf_counter()
                    return self._interrupted()
        except BaseException:
            self._failed()
            raise
        self._gen = None
        state.status = "finished"
        return self._finished_stop()

    def _resume_loop(self, mode: str, target: tuple[int, Any] | None) -> Stop:
        state = self.state
        depth0 = len(state.stack)
        befores = [b for b in self.breakpoints if b.enabled and b.when == "before"]
        collect = any(b.enabled and b.when == "after" for b in self.breakpoints)
        self.executor.after_check = self._collect if collect else None
        self._pending.clear()
        if mode == "continue" and not befores and not collect:
            return self._drain()
        budget = state.budget
        while True:
            if budget.stop_requested:
                return self._interrupted()
            if not self._advance():
                if self._pending:  # the last op of the run tripped a breakpoint
                    return self._pending_stop(outputs=self.outputs())
                return self._finished_stop()
            if budget.stop_requested:
                return self._interrupted()
            if self._pending:
                return self._pending_stop()
            depth = len(state.stack)
            if mode == "step_into" or (mode == "step" and depth <= depth0) or \
                    (mode == "step_out" and depth < depth0):
                return Stop("step", state.position)
            stop = self._before_op(mode, target, befores)
            if stop is not None:
                return stop

    def _pending_stop(self, outputs: dict[str, np.ndarray | None] | None = None) -> Stop:
        """The stop of the after-breakpoint the last op tripped."""
        bp, msg, where = self._pending[0]
        self._pending.clear()
        bp.hits += 1
        return Stop("breakpoint", self.state.position, bp, where, msg, outputs=outputs)

    def _before_op(self, mode: str, target: tuple[int, Any] | None,
                   befores: list[Breakpoint]) -> Stop | None:
        """The stop before the op about to run (a run-to target, a before-breakpoint),
        or None."""
        state = self.state
        frame = state.stack[-1]
        sg = state.subgraphs[frame.subgraph]
        if frame.op >= len(sg.nodes):
            return None
        node = sg.nodes[frame.op]
        if mode == "run_to":
            tsg, top = target
            if (isinstance(top, str) and node.name == top) or \
                    (frame.subgraph == tsg and frame.op == top):
                return Stop("run_to", state.position, None, (frame.subgraph, frame.op))
        for bp in befores:
            if bp.applies(frame.subgraph, node):
                bp.hits += 1
                return Stop("breakpoint", state.position, bp, (frame.subgraph, frame.op),
                            bp.check(self.executor.interpreter, sg, node) or "")
        return None

    def _collect(self, sg: "Subgraph", node: "Node") -> None:
        """After an op: the first enabled after-breakpoint whose condition holds."""
        for bp in self.breakpoints:
            if bp.enabled and bp.when == "after" and bp.applies(sg.index, node):
                msg = bp.check(self.executor.interpreter, sg, node)
                if msg:
                    self._pending.append((bp, msg, node.key))
                    break
