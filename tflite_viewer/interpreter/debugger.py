"""What the debugger API talks in: positions, stops, breakpoints and hook events.

A position is the call stack of ``(subgraph, op)`` pairs, outermost first; ``op`` is the
index of the operator about to run (equal to the subgraph's op count when all its ops ran
and it is about to return).  Op breakpoints fire before their op runs; conditional
breakpoints (non-finite values, values out of a range, saturated quantized values, any
predicate) are checked after an op runs and pause before the next one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:
    from .interpreter import Interpreter
    from .node import Node
    from .subgraph import Subgraph

Position = tuple[tuple[int, int], ...]


@dataclass
class Frame:
    """One level of the call stack: a subgraph and the op about to run in it."""

    subgraph: int
    op: int


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

    reason: str  # "finished", "step", "breakpoint", "run_to"
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
