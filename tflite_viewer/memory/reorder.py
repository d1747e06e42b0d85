"""What if the operators ran in another order?

TFLite Micro and LiteRT run a subgraph's operators in the order the file lists them, and
plan the arena from that order; any topological order computes the same outputs.  This
module looks for one whose arena is smaller: it schedules the operators a few ways (the
file's order; ready operators that raise live memory least first; depth-first, finishing
a branch before starting the next), then moves single operators around the peak while that
helps, scoring every candidate with TFLM's own plan (`plan_tflm`), and returns the best.

Operators with effects beyond their output tensors keep their relative order: those that
read or write variable or resource tensors, custom operators, and control flow.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

from ..model import Model
from ..model.opcodes import BUILTIN_CODES, CUSTOM
from ..schema.schema_generated import TensorType as TT
from .facts import MemoryFacts, MemorySubgraphFacts, read_facts
from .sizes import align_up, tflm_bytes
from .tflm import ALIGNMENT, plan_tflm

_STATEFUL = {BUILTIN_CODES[n] for n in ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE",
                                        "CALL_ONCE", "WHILE", "IF")} | {CUSTOM}


@dataclass(frozen=True)
class Reorder:
    """A better operator order for one subgraph, and what TFLM's head becomes with it."""

    subgraph: int
    order: list[int]        # file indices of the operators, in the new execution order
    head_before: int
    head_after: int
    strategy: str
    evaluations: int

    @property
    def saved(self) -> int:
        return self.head_before - self.head_after

    @property
    def moved(self) -> int:
        return sum(1 for i, k in enumerate(self.order) if i != k)


def dependencies(sg: MemorySubgraphFacts) -> list[set[int]]:
    """For each operator (file order), the operators that must run before it."""
    n = sg.n_ops
    producer: dict[int, int] = {}
    preds: list[set[int]] = [set() for _ in range(n)]
    for k in range(n):
        for t in sg.op_inputs[k]:
            if t in producer:
                preds[k].add(producer[t])
        for t in sg.op_outputs[k]:
            if t in producer:  # written twice: keep the writers in order
                preds[k].add(producer[t])
            producer[t] = k
    # a tensor read before a later operator overwrites it
    readers: dict[int, list[int]] = {}
    for k in range(n):
        for t in sg.op_outputs[k]:
            for r in readers.get(t, ()):
                if r != k:
                    preds[k].add(r)
        for t in sg.op_inputs[k]:
            readers.setdefault(t, []).append(k)
    previous = None
    for k in range(n):
        if _has_effects(sg, k):
            if previous is not None:
                preds[k].add(previous)
            previous = k
    return preds


def _has_effects(sg: MemorySubgraphFacts, k: int) -> bool:
    if sg.op_codes[k] in _STATEFUL:
        return True
    for t in (*sg.op_inputs[k], *sg.op_outputs[k]):
        if 0 <= t < sg.n_tensors and (sg.is_variable[t] or sg.types[t] == TT.RESOURCE):
            return True
    return False


def check_order(sg: MemorySubgraphFacts, order: list[int]) -> str | None:
    """Why ``order`` (file indices) is not a valid execution order, or None."""
    n = sg.n_ops
    if sorted(order) != list(range(n)):
        return f"the order must list each of the {n} operators once"
    position = {k: i for i, k in enumerate(order)}
    for k, before in enumerate(dependencies(sg)):
        for p in before:
            if position[p] > position[k]:
                return (f"operator {k} would run before operator {p}, which it depends on "
                        "(a tensor it reads, or an effect the file orders)")
    return None


def _sizes(sg: MemorySubgraphFacts) -> list[int]:
    out = []
    for t in range(sg.n_tensors):
        b = tflm_bytes(sg.types[t], sg.shapes[t]) or 0
        arena = not sg.has_data[t] and not sg.is_variable[t] and b > 0
        out.append(align_up(max(b, 0), ALIGNMENT) if arena else 0)
    return out


def memory_greedy(sg: MemorySubgraphFacts, preds: list[set[int]]) -> list[int]:
    """Run next the ready operator whose step needs least memory (ties: frees most, then
    the file's order)."""
    n = sg.n_ops
    size = _sizes(sg)
    uses: dict[int, int] = {}
    for k in range(n):
        for t in set(sg.op_inputs[k]):
            uses[t] = uses.get(t, 0) + 1
    keep = set(sg.outputs)
    succ: list[list[int]] = [[] for _ in range(n)]
    waiting = [len(p) for p in preds]
    for k, p in enumerate(preds):
        for q in p:
            succ[q].append(k)
    ready = {k for k in range(n) if waiting[k] == 0}
    live = sum(size[t] for t in sg.inputs if 0 <= t < sg.n_tensors)
    order = []
    while ready:
        best, best_key = None, None
        for k in ready:
            alloc = sum(size[t] for t in set(sg.op_outputs[k]) if 0 <= t < sg.n_tensors)
            free = sum(size[t] for t in set(sg.op_inputs[k])
                       if 0 <= t < sg.n_tensors and uses.get(t) == 1 and t not in keep)
            key = (live + alloc, alloc - free, k)
            if best_key is None or key < best_key:
                best, best_key = k, key
        ready.discard(best)
        order.append(best)
        live += best_key[1]
        for t in set(sg.op_inputs[best]):
            uses[t] = uses.get(t, 0) - 1
        for q in succ[best]:
            waiting[q] -= 1
            if waiting[q] == 0:
                ready.add(q)
    return order


def depth_first(sg: MemorySubgraphFacts, preds: list[set[int]]) -> list[int]:
    """Finish a branch before starting another: among ready operators, the one whose
    inputs were produced most recently (ties: the file's order)."""
    n = sg.n_ops
    succ: list[list[int]] = [[] for _ in range(n)]
    waiting = [len(p) for p in preds]
    for k, p in enumerate(preds):
        for q in p:
            succ[q].append(k)
    heap = [(0, k) for k in range(n) if waiting[k] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, k = heapq.heappop(heap)
        order.append(k)
        for q in succ[k]:
            waiting[q] -= 1
            if waiting[q] == 0:
                heapq.heappush(heap, (-len(order), q))
    return order


def best_order(model: Model | MemoryFacts, subgraph: int | None = None, pointer_bytes: int = 4,
               max_evaluations: int | None = None) -> Reorder | None:
    """The smallest-head operator order found for ``subgraph`` (default: the one holding
    TFLM's peak), or None when no order found beats the file's."""
    facts = model if isinstance(model, MemoryFacts) else read_facts(model)
    base = plan_tflm(facts, pointer_bytes)
    if subgraph is None:
        peak = base.peak_op
        subgraph = peak[0] if peak is not None else 0
    sg = facts.subgraphs[subgraph]
    if sg.n_ops < 2:
        return None
    if max_evaluations is None:
        max_evaluations = max(4, min(200, 20000 // max(sg.n_ops, 1)))
    preds = dependencies(sg)
    seen: dict[tuple[int, ...], int] = {tuple(range(sg.n_ops)): base.head_bytes}
    evaluations = 0

    def score(order: list[int]) -> int:
        nonlocal evaluations
        key = tuple(order)
        if key not in seen:
            evaluations += 1
            seen[key] = plan_tflm(facts, pointer_bytes, orders={subgraph: order}).head_bytes
        return seen[key]

    best, best_head, strategy = list(range(sg.n_ops)), base.head_bytes, "file order"
    for name, make in (("least memory first", memory_greedy), ("depth first", depth_first)):
        order = make(sg, preds)
        head = score(order)
        if head < best_head:
            best, best_head, strategy = order, head, name
    best, best_head, moved = _improve(facts, sg, preds, best, best_head, score,
                                      lambda: evaluations >= max_evaluations, pointer_bytes)
    if moved:
        strategy += " + local moves"
    if best_head >= base.head_bytes:
        return None
    return Reorder(subgraph, best, base.head_bytes, best_head, strategy, evaluations)


def _improve(facts, sg, preds, order, head, score, exhausted, pointer_bytes):
    """Move single operators live at the peak to their earliest or latest valid slot while
    that lowers the head."""
    succ: list[set[int]] = [set() for _ in range(sg.n_ops)]
    for k, p in enumerate(preds):
        for q in p:
            succ[q].add(k)
    moved = False
    improved = True
    while improved and not exhausted():
        improved = False
        plan = plan_tflm(facts, pointer_bytes, orders={sg.index: order})
        peak = plan.peak_op
        if peak is None or peak[0] != sg.index:
            break
        pos = order.index(peak[1])
        window = order[max(0, pos - 3):pos + 4]
        for k in window:
            if exhausted():
                break
            i = order.index(k)
            rest = order[:i] + order[i + 1:]
            lo = max((rest.index(p) + 1 for p in preds[k]), default=0)
            hi = min((rest.index(s) for s in succ[k]), default=len(rest))
            for slot in {lo, hi}:
                if slot == i:
                    continue
                candidate = rest[:slot] + [k] + rest[slot:]
                h = score(candidate)
                if h < head:
                    order, head, improved, moved = candidate, h, True, True
                    break
            if improved:
                break
    return order, head, moved
