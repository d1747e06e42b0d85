"""A smaller TFLite Micro arena without touching the graph: an offline plan.

TFLM's GreedyMemoryPlanner places buffers largest first.  That is a good rule, not the
best: on mobilenet_v1 (0.25, 224x224, float) it needs 1,605,632 bytes where placing the
tensors in the order they are created needs 1,204,224.  TFLM takes any plan a model carries in its
``OfflineMemoryAllocation`` metadata, so this module places the tensors in a few other
orders (same first-fit scan), lets TFLM's own rules fit the scratch buffers around each
result (`plan_tflm` with the candidate offsets), and returns the smallest, if it beats
TFLM's plan.  ``SetOfflineMemoryPlan("best")`` stores it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..model import Model
from .facts import MemoryFacts, read_facts
from .greedy import ONLINE, plan_greedy
from .plan import PlannedBuffer
from .tflm import plan_tflm

Key = Callable[[PlannedBuffer], tuple]

#: orders to place tensors in (each a sort key; ties keep TFLM's order)
STRATEGIES: dict[str, Key] = {
    "longest lifetime first": lambda b: (-(b.last - b.first), -b.size),
    "largest area first": lambda b: (-b.size * (b.last - b.first + 1),),
    "earliest first": lambda b: (b.first, -b.size),
    "largest first, earliest first": lambda b: (-b.size, b.first),
}


@dataclass(frozen=True)
class OfflinePlan:
    """Offsets for every tensor of every subgraph (-1: TFLM plans it) and what they give."""

    offsets: list[int]
    head_before: int
    head_after: int
    strategy: str

    @property
    def saved(self) -> int:
        return self.head_before - self.head_after


def flat_offsets(facts: MemoryFacts, buffers: list[PlannedBuffer],
                 offsets: list[int] | None = None) -> list[int]:
    """One offset per tensor of every subgraph (the metadata's layout), -1 elsewhere."""
    starts, total = [], 0
    for sg in facts.subgraphs:
        starts.append(total)
        total += sg.n_tensors
    out = [ONLINE] * total
    for i, b in enumerate(buffers):
        out[starts[b.subgraph] + b.tensor] = b.offset if offsets is None else offsets[i]
    return out


def best_offline_plan(model: Model | MemoryFacts, pointer_bytes: int = 4) -> OfflinePlan | None:
    """The smallest plan found, or None when none beats TFLM's own."""
    facts = model if isinstance(model, MemoryFacts) else read_facts(model)
    base = plan_tflm(facts, pointer_bytes, offline=False)
    tensors = [b for b in base.buffers if b.tensor >= 0]
    if not tensors:
        return None
    sizes = [b.size for b in tensors]
    first = [b.first for b in tensors]
    last = [b.last for b in tensors]
    best: OfflinePlan | None = None
    for name, key in STRATEGIES.items():
        order = sorted(range(len(tensors)), key=lambda i: key(tensors[i]))
        placed = plan_greedy(sizes, first, last, order=order)
        offsets = flat_offsets(facts, tensors, placed.offsets)
        head = plan_tflm(facts, pointer_bytes, offline=offsets).head_bytes
        if head < base.head_bytes and (best is None or head < best.head_after):
            best = OfflinePlan(offsets, base.head_bytes, head, name)
    return best
