"""What the Memory dock draws, without Qt: the arena plan as rectangles (a tensor or scratch
buffer from its first to its last step, from its offset to its end), the peak, and the
live memory at each operator's step for the canvas overlay.

Built from a `memory.MemoryPlan`; hit testing and lookups are vectorized so the chart of a
20,000-operator model answers a click in microseconds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

from ...memory import MemoryPlan, plan_litert, plan_tflm

TARGETS = {"tflm": "TFLite Micro", "litert": "LiteRT"}
#: plans of models up to this many operators are made on the GUI thread (milliseconds)
SYNC_OPS = 3000


@dataclass
class MemoryState:
    """The Memory dock's per-model state (``Workspace.part("memory", MemoryState)``): the
    plans made for this model, by target, and what went wrong making one."""

    plans: dict[str, MemoryPlan] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)
    charts: dict[tuple[str, int | None], "MemoryChart"] = field(default_factory=dict)

    def chart(self, target: str, arena_index: int | None = None) -> "MemoryChart | None":
        """The chart of ``target``'s plan (one arena of it for LiteRT), made once."""
        plan = self.plans.get(target)
        if plan is None:
            return None
        key = (target, arena_index)
        if key not in self.charts:
            self.charts[key] = build_chart(plan, arena_index)
        return self.charts[key]


def make_plan(model, target: str) -> MemoryPlan:
    """The plan the dock shows: TFLM for a 32-bit target, or LiteRT's."""
    return plan_tflm(model) if target == "tflm" else plan_litert(model)


@dataclass
class MemoryChart:
    """Rectangles in (step, byte) space: x from ``x0`` to ``x1 + 1``, y from ``y0`` to ``y1``."""

    x0: np.ndarray
    x1: np.ndarray
    y0: np.ndarray
    y1: np.ndarray
    subgraph: np.ndarray
    tensor: np.ndarray       # -1: a scratch buffer
    op: np.ndarray           # the operator that asked for a scratch buffer, else -1
    names: list[str]
    steps: list[tuple[int, int]]  # step -> (subgraph, operator | -1 for its entry)
    first_step: int          # smallest x0 (TFLM plans unreached subgraphs at step -1)
    height: int              # the arena's size: the chart's top
    peak_step: int | None
    live_bytes: np.ndarray   # per step, from `first_step`
    target: str

    def __len__(self) -> int:
        return int(self.x0.size)

    def hit(self, step: float, byte: float) -> int | None:
        """The box under (step, byte), the smallest if boxes overlap; None for empty space."""
        inside = ((self.x0 <= step) & (step < self.x1 + 1)
                  & (self.y0 <= byte) & (byte < self.y1))
        found = np.flatnonzero(inside)
        if found.size == 0:
            return None
        area = (self.y1[found] - self.y0[found]) * (self.x1[found] - self.x0[found] + 1)
        return int(found[np.argmin(area)])

    def boxes_of_tensor(self, subgraph: int, tensor: int) -> list[int]:
        return np.flatnonzero((self.subgraph == subgraph) & (self.tensor == tensor)).tolist()

    def label(self, i: int) -> str:
        size = int(self.y1[i] - self.y0[i])
        what = (f"tensor {self.tensor[i]} {self.names[i]!r}" if self.tensor[i] >= 0
                else f"{self.names[i]} (operator {self.op[i]})")
        return (f"subgraph {self.subgraph[i]} {what}: {size:,} bytes at "
                f"[{int(self.y0[i]):,}, {int(self.y1[i]):,}), steps {self.x0[i]}..{self.x1[i]}")

    def op_heat(self, subgraph: int, n_ops: int) -> np.ndarray:
        """Live bytes at each operator's step of ``subgraph``, over the arena's size (0..1);
        operators a control-flow operator runs twice take their larger figure."""
        heat = np.zeros(n_ops)
        if self.height <= 0:
            return heat
        for step, (s, k) in enumerate(self.steps):
            j = step - self.first_step
            if s == subgraph and 0 <= k < n_ops and 0 <= j < self.live_bytes.size:
                heat[k] = max(heat[k], self.live_bytes[j] / self.height)
        return np.minimum(heat, 1.0)


def build_chart(plan: MemoryPlan, arena_index: int | None = None) -> MemoryChart:
    """The chart of one arena of ``plan`` (default: the one holding the peak).  LiteRT's
    tensors that share their input's memory are left out (their input's box is drawn)."""
    arena = plan.arena if arena_index is None else plan.arenas[arena_index]
    buffers = [b for b in arena.buffers if b.size > 0 and b.shares < 0]
    first = min([0] + [b.first for b in buffers])
    n = len(buffers)
    chart = MemoryChart(
        np.fromiter((b.first for b in buffers), np.int64, n),
        np.fromiter((max(b.last, b.first) for b in buffers), np.int64, n),
        np.fromiter((b.offset for b in buffers), np.int64, n),
        np.fromiter((b.end for b in buffers), np.int64, n),
        np.fromiter((b.subgraph for b in buffers), np.int64, n),
        np.fromiter((b.tensor for b in buffers), np.int64, n),
        np.fromiter((b.op for b in buffers), np.int64, n),
        [b.name for b in buffers], list(arena.steps), first, int(arena.size),
        arena.peak_step, np.asarray(arena.live_bytes), plan.target)
    return chart
