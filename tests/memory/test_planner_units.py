"""Planner rules worked out by hand on small graphs, and the bucketed LiteRT arena against a
literal transcription of SimpleMemoryArena::Allocate."""
from __future__ import annotations

import numpy as np
import pytest

from tests.interpreter.singleop import Op, graph_model
from tests.memory.models import if_model
from tflite_viewer.memory import plan_tflm
from tflite_viewer.memory.facts import read_facts
from tflite_viewer.memory.litert import ALIGNMENT, NOT_ASSIGNED, _Active
from tflite_viewer.memory.reorder import best_order, check_order
from tflite_viewer.memory.tflm_lifetimes import mark_lifetimes
from tflite_viewer.model import load_model

F32 = np.float32


def test_if_lifetimes_worked_by_hand():
    """IF at step 1 runs `then` (entry step 2, ops 3-4) and `else` (entry 5, op 6); its
    operands stay live to step 6, where the RELU after it (step 7) reads its output."""
    facts = read_facts(load_model(if_model()))
    life = mark_lifetimes(facts, [])
    assert life.steps == [(0, -1), (0, 0), (1, -1), (1, 0), (1, 1), (2, -1), (2, 0), (0, 1)]
    # main: 0 cond, 1 x (inputs at 0); 2 IF's output; 3 RELU's output
    assert life.first[0][:4] == [0, 0, 1, 7] and life.last[0][:4] == [6, 6, 7, 7]
    # then: input at its entry (2), concat output at 3, slice output at 4 (its output)
    assert (life.first[1][0], life.last[1][0]) == (2, 3)
    assert (life.first[1][1], life.last[1][1]) == (3, 4)
    assert (life.first[1][2], life.last[1][2]) == (4, 4)
    # else: input at 5, RELU6 output at 6
    assert (life.first[2][0], life.last[2][0], life.first[2][1], life.last[2][1]) == (5, 6, 6, 6)


def test_unreached_subgraph_is_planned_at_step_minus_one():
    """A second subgraph nothing calls (a signature's): TFLM never marks it."""
    t = [((1, 4), F32), ((1, 4), F32)]
    data = graph_model(t, [Op("RELU", [0], [1])], [0], [1],
                       [([((1, 64), F32), ((1, 64), F32)], [Op("RELU", [0], [1])], [0], [1])])
    plan = plan_tflm(load_model(data))
    other = [b for b in plan.buffers if b.subgraph == 1]
    assert [(b.first, b.last) for b in other] == [(-1, -1), (-1, -1)]
    # both 256-byte tensors overlap "at step -1": 512 bytes, more than subgraph 0's 32
    assert plan.head_bytes == 512


def test_problems_tflm_would_refuse():
    t = [((1, 4), F32), ((1, -1), F32)]
    plan = plan_tflm(load_model(graph_model(t, [Op("RELU", [0], [1])], [0], [1])))
    assert any("dynamic tensor" in p for p in plan.problems)


def _literal_allocate(active, size, first, last):
    """SimpleMemoryArena::Allocate, line by line (active: list sorted by offset)."""
    if size == 0:
        return 0
    best, best_fit = None, None
    current = 0
    for off, sz, f, l_ in active:
        if l_ < first or f > last:
            continue
        aligned = -(-current // ALIGNMENT) * ALIGNMENT
        if aligned + size <= off and (best_fit is None or off - aligned < best_fit):
            best, best_fit = aligned, off - current
        current = max(current, off + sz)
        if best_fit == 0:
            break
    if best is None:
        best = -(-current // ALIGNMENT) * ALIGNMENT
    i = len(active)
    while i > 0 and active[i - 1][0] > best:
        i -= 1
    active.insert(i, (best, size, first, last))
    return best


@pytest.mark.parametrize("seed", range(30))
def test_bucketed_arena_equals_literal_allocate(seed):
    rng = np.random.default_rng(seed)
    nodes = int(rng.integers(1, 50))
    ours, ref = _Active(nodes), []
    for _ in range(int(rng.integers(1, 150))):
        size = int(rng.choice([0, 4, 60, 64, 100, 256, 1000]))
        first = int(rng.integers(0, nodes))
        last = NOT_ASSIGNED if rng.random() < 0.1 else first + int(rng.integers(0, 6))
        assert ours.allocate(size, first, last) == _literal_allocate(ref, size, first, last)


def _random_dag(seed: int):
    rng = np.random.default_rng(seed)
    tensors = [((1, int(rng.integers(1, 64)) * 8), F32)]
    ops = []
    for _ in range(int(rng.integers(4, 14))):
        src = [int(i) for i in rng.choice(len(tensors), size=min(2, len(tensors)), replace=False)]
        if len(src) == 2 and rng.random() < 0.5:
            width = tensors[src[0]][0][1] + tensors[src[1]][0][1]
            ops.append(Op("CONCATENATION", src, [len(tensors)], "ConcatenationOptions",
                          {"axis": 1}))
            tensors.append(((1, width), F32))
        else:
            ops.append(Op("RELU", [src[0]], [len(tensors)]))
            tensors.append(((1, tensors[src[0]][0][1]), F32))
    consumed = {i for op in ops for i in op.inputs}
    outputs = [i for i in range(1, len(tensors)) if i not in consumed] or [len(tensors) - 1]
    return load_model(graph_model(tensors, ops, [0], outputs))


def test_best_order_is_valid_and_its_head_is_what_tflm_plans():
    """Random DAGs of RELU/CONCATENATION: every order found runs no operator before one it
    depends on, re-planning it gives the head claimed, and it is smaller."""
    found_any = 0
    for seed in range(12):
        model = _random_dag(seed)
        found = best_order(model)
        if found is None:
            continue
        found_any += 1
        facts = read_facts(model)
        assert check_order(facts.subgraphs[0], found.order) is None
        assert plan_tflm(model, orders={0: found.order}).head_bytes == found.head_after
        assert found.head_after < plan_tflm(model).head_bytes
    assert found_any >= 3
