"""LiteRT's partitioner: the heap walk of `delegation.partition` gives exactly the subsets of a
line-by-line transcription of ``PartitionGraphIntoIndependentNodeSubsets``'s nested sweeps
(written here, slow and plain), on random graphs with random claims and side effects; and
on real graphs it matches LiteRT itself (test_xnnpack_litert.py)."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.delegation.partition import NodeSubset, partition

NOT_READY, ALWAYS = -1, -2


def sweeps(inputs, outputs, n_tensors, graph_outputs, claimed, side_effects):
    """graph_info.cc as written: epochs of repeated full sweeps over the plan."""
    n = len(inputs)
    edges = []
    last = -1
    for k in range(n):
        if side_effects[k]:
            if last >= 0:
                edges.append((last, k))
            last = k
    incoming = [0] * n
    for _, b in edges:
        incoming[b] += 1
    tensor_epoch = [ALWAYS] * n_tensors
    for k in range(n):
        for t in outputs[k]:
            tensor_epoch[t] = NOT_READY
    node_epoch = [NOT_READY] * n
    subsets: list[NodeSubset] = []

    def update(k):
        sub = subsets[-1]
        epoch = len(subsets) - 1
        if node_epoch[k] != NOT_READY:
            return False
        if any(t >= 0 and tensor_epoch[t] == NOT_READY for t in inputs[k]):
            return False
        if incoming[k]:
            return False
        if sub.claimed is None:
            sub.claimed = claimed[k]
        if sub.claimed != claimed[k]:
            return False
        node_epoch[k] = epoch
        sub.nodes.append(k)
        for t in outputs[k]:
            tensor_epoch[t] = epoch
        for t in inputs[k]:
            if t < 0:
                continue
            if tensor_epoch[t] != epoch:
                sub.inputs.append(t)
                if tensor_epoch[t] >= 0:
                    subsets[tensor_epoch[t]].outputs.append(t)
        for a, b in edges:
            if a == k:
                incoming[b] -= 1
        return True

    while True:
        subsets.append(NodeSubset(None))
        while True:
            did = False
            for k in range(n):
                did = update(k) or did
            if not did:
                break
        if not subsets[-1].nodes:
            subsets.pop()
            break
    if any(e == NOT_READY for e in node_epoch):
        return None
    for t in graph_outputs:
        if tensor_epoch[t] >= 0:
            subsets[tensor_epoch[t]].outputs.append(t)
    for s in subsets:
        s.inputs, s.outputs = sorted(set(s.inputs)), sorted(set(s.outputs))
    return subsets


def random_graph(rng: np.random.Generator, n: int):
    """A DAG in plan order (with now and then an operator listed before its producer),
    constants, optional (-1) inputs, several outputs per operator."""
    n_inputs = int(rng.integers(1, 3))
    tensors = n_inputs
    available = list(range(n_inputs))
    inputs, outputs = [], []
    for _ in range(n):
        k_in = int(rng.integers(1, 4))
        ins = [int(rng.choice(available)) for _ in range(k_in)]
        if rng.random() < 0.2:
            ins.append(tensors)  # a constant
            tensors += 1
        if rng.random() < 0.1:
            ins.append(-1)
        outs = list(range(tensors, tensors + int(rng.integers(1, 3))))
        tensors += len(outs)
        available.extend(outs)
        inputs.append(ins)
        outputs.append(outs)
    order = list(range(n))
    if n > 3 and rng.random() < 0.3:  # a plan not in dependency order
        i = int(rng.integers(0, n - 1))
        order[i], order[i + 1] = order[i + 1], order[i]
    inputs = [inputs[k] for k in order]
    outputs = [outputs[k] for k in order]
    graph_outputs = [int(t) for t in rng.choice(available, size=min(2, len(available)),
                                                replace=False)]
    return inputs, outputs, tensors, graph_outputs


@pytest.mark.parametrize("seed", range(300))
def test_heap_walk_equals_the_sweeps(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    inputs, outputs, n_tensors, graph_outputs = random_graph(rng, n)
    claimed = [bool(b) for b in rng.random(n) < rng.random()]
    sides = [bool(b) for b in rng.random(n) < 0.15]
    expected = sweeps(inputs, outputs, n_tensors, graph_outputs, claimed, sides)
    got = partition(inputs, outputs, n_tensors, graph_outputs, claimed, sides)
    as_tuples = lambda subs: None if subs is None else [  # noqa: E731
        (bool(s.claimed), s.nodes, s.inputs, s.outputs) for s in subs]
    assert as_tuples(got) == as_tuples(expected)


def test_a_cycle_has_no_schedule():
    # op 0 reads tensor 1, which op 1 writes from tensor 0's reader: a cycle
    assert partition([[1], [0]], [[0], [1]], 2, [1], [True, False]) is None
