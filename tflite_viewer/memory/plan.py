"""The result every planner returns: buffers with offsets and lifetimes, the arena's size,
and where it peaks; plus the text timeline `tflite-viewer memory` prints."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class PlannedBuffer:
    """One buffer of the planned (non-persistent) arena: a tensor or a kernel's scratch."""

    subgraph: int
    tensor: int          # tensor index, or -1 for a scratch buffer
    op: int              # the operator that asked for a scratch buffer (file index), else -1
    name: str
    bytes: int           # what the tensor needs
    size: int            # what the planner reserves (aligned)
    first: int           # first step it is live
    last: int            # last step it is live
    offset: int
    offline: bool = False  # the offset came from the model's OfflineMemoryAllocation
    shares: int = -1     # LiteRT: the tensor whose memory this one reuses in place

    @property
    def end(self) -> int:
        return self.offset + self.size

    @property
    def kind(self) -> str:
        return "scratch" if self.tensor < 0 else "tensor"


@dataclass
class Arena:
    """One planned arena (TFLM has one; LiteRT one per subgraph)."""

    subgraph: int | None
    size: int
    buffers: list[PlannedBuffer]
    steps: list[tuple[int, int]]   # step -> (subgraph, operator file index | -1 = entry)
    live_bytes: np.ndarray         # per step: sum of the sizes of the buffers live then
    top: np.ndarray                # per step: highest byte any live buffer reaches
    peak_step: int | None
    step_base: int = 0             # live_bytes[i] describes step i + step_base

    def live_at(self, step: int) -> list[PlannedBuffer]:
        """Buffers live at ``step``, largest first."""
        live = [b for b in self.buffers if b.first <= step <= b.last and b.size > 0]
        return sorted(live, key=lambda b: (-b.size, b.subgraph, b.tensor, b.op))

    def step_op(self, step: int | None) -> tuple[int, int] | None:
        if step is None or not 0 <= step < len(self.steps):
            return None
        return self.steps[step]


@dataclass
class MemoryPlan:
    """What a runtime's planner makes of a model."""

    target: str                    # "tflm" or "litert"
    alignment: int
    head_bytes: int                # the planned arena (TFLM's head; LiteRT: sum of arenas)
    tail_bytes: int                # persistent bytes this model needs at least
    tail_parts: dict[str, int]
    arenas: list[Arena]
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    offline: "OfflineCheck | None" = None

    @property
    def arena(self) -> Arena:
        """The arena holding the peak (TFLM's only arena; LiteRT's largest)."""
        return max(self.arenas, key=lambda a: a.size) if self.arenas else Arena(
            None, 0, [], [], np.zeros(0, np.int64), np.zeros(0, np.int64), None)

    @property
    def buffers(self) -> list[PlannedBuffer]:
        return [b for a in self.arenas for b in a.buffers]

    @property
    def peak_op(self) -> tuple[int, int] | None:
        a = self.arena
        return a.step_op(a.peak_step)


@dataclass
class OfflineCheck:
    """The model's own OfflineMemoryAllocation, and what is wrong with it."""

    version: int
    subgraphs: int
    offsets: list[int]
    errors: list[str]              # TFLM refuses the model
    warnings: list[str]            # TFLM runs it, but the plan is unsafe or wasteful

    @property
    def valid(self) -> bool:
        return not self.errors and not self.warnings


def profile(buffers: list[PlannedBuffer], n_steps: int, base: int = 0
            ) -> tuple[np.ndarray, np.ndarray]:
    """(live bytes, top byte) at every step from ``base`` to ``base + n_steps - 1``.

    int64 unless a model's absurd shapes need Python's integers (a fuzzed file asks for
    exabytes; the figures must still be right, not wrapped)."""
    big = sum(b.size for b in buffers) + max([b.end for b in buffers], default=0) >= 2**62
    dtype = object if big else np.int64
    delta = np.zeros(n_steps + 1, dtype=dtype)
    top = np.zeros(n_steps, dtype=dtype)
    for b in buffers:
        lo, hi = b.first - base, b.last - base
        if hi < lo or hi < 0 or lo >= n_steps:
            continue
        lo, hi = max(lo, 0), min(hi, n_steps - 1)
        delta[lo] += b.size
        delta[hi + 1] -= b.size
        seg = top[lo:hi + 1]
        if big:
            top[lo:hi + 1] = [max(v, b.end) for v in seg]
        else:
            np.maximum(seg, b.end, out=seg)
    return np.cumsum(delta[:-1]), top


def peak_step(live: np.ndarray, top: np.ndarray, base: int = 0) -> int | None:
    """The step whose live buffers reach highest (ties: the most live bytes, then earliest)."""
    if top.size == 0 or int(top.max()) == 0:
        return None
    at_top = np.flatnonzero(top == top.max())
    best = at_top[np.argmax(live[at_top])]
    return int(best) + base


def timeline(arena: Arena, width: int = 80, max_rows: int = 400) -> list[str]:
    """A text picture of the arena over time, one row per step, as TFLM's PrintMemoryPlan
    draws it: each column is a slice of the arena, each buffer drawn with its own character
    ('*' for buffers live one step only, '!' where two buffers overlap)."""
    bufs = [b for b in arena.buffers if b.size > 0]
    if not bufs:
        return []
    extent = max(width, max(b.end for b in bufs))
    n = len(arena.steps)
    first_step = min(0, min(b.first for b in bufs))
    steps = list(range(first_step, n))
    if len(steps) > max_rows:
        keep = set(range(first_step, first_step + max_rows // 2))
        keep |= set(range(n - max_rows // 2, n))
        if arena.peak_step is not None:
            keep |= set(range(arena.peak_step - 5, arena.peak_step + 6))
        steps = sorted(s for s in keep if first_step <= s < n)
    ids = {id(b): i for i, b in enumerate(bufs)}
    by_step: dict[int, list[PlannedBuffer]] = {}
    for b in bufs:
        for s in range(max(b.first, first_step), b.last + 1):
            by_step.setdefault(s, []).append(b)
    lines = []
    previous = None
    for s in steps:
        if previous is not None and s != previous + 1:
            lines.append("      ...")
        previous = s
        row = ["."] * width
        used = 0
        for b in by_step.get(s, ()):
            used += b.size
            mark = "*" if b.first == b.last else _ordinal(ids[id(b)])
            for c in range(b.offset * width // extent, b.end * width // extent):
                row[c] = mark if row[c] == "." else "!"
        where = arena.step_op(s)
        label = "" if where is None else (f"sg{where[0]} in" if where[1] < 0
                                          else f"sg{where[0]} op{where[1]}")
        flag = " <- peak" if s == arena.peak_step else ""
        lines.append(f"{s:5d}: {''.join(row)} ({(used + 1023) // 1024}k) {label}{flag}")
    return lines


def _ordinal(i: int) -> str:
    i %= 62
    if i < 10:
        return chr(ord("0") + i)
    if i < 36:
        return chr(ord("a") + i - 10)
    return chr(ord("A") + i - 36)
