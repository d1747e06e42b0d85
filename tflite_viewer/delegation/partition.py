"""LiteRT's graph partitioner: how the operators a delegate claims become DELEGATE nodes.

A transcription of ``PartitionGraphIntoIndependentNodeSubsets`` (google-ai-edge/LiteRT,
``tflite/graph_info.cc``) as ``Subgraph::ReplaceNodeSubsetsWithDelegateKernels`` calls
it: greedy clustering, and a chain of control dependencies between the operators that may
have side effects (resource tensors in or out, IF, WHILE, CALL_ONCE), in execution order.

LiteRT builds the subsets epoch by epoch: the first ready operator (lowest index) fixes an
epoch's kind (claimed or not), then the epoch sweeps the execution plan again and again,
taking every ready operator of that kind, until a sweep takes nothing.  Sweeping the whole
plan per epoch is quadratic in Python on a 20,000-op model with many partitions, so this
does the same walk with heaps: operators become ready when their last producer is taken,
and a sweep visits ready operators in index order, leaving those behind its position for
the next sweep, exactly as the nested loops do.  Same subsets, same order of operators in
each, same sorted input and output tensors.
"""
from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

_ALWAYS_READY = -2
_NOT_READY = -1


@dataclass
class NodeSubset:
    claimed: bool
    nodes: list[int] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)


def partition(inputs: Sequence[Sequence[int]], outputs: Sequence[Sequence[int]],
              n_tensors: int, graph_outputs: Sequence[int], claimed: Sequence[bool],
              side_effects: Sequence[bool] | None = None) -> list[NodeSubset] | None:
    """The node subsets of a plan of ``len(inputs)`` operators (indices are plan
    positions), ``claimed[k]`` saying whether the delegate claims operator k.  None when
    some operator can never be scheduled (LiteRT's kTfLiteError)."""
    n = len(inputs)
    if n == 0:
        return []
    if all(claimed) or not any(claimed):
        fast = _one_subset(inputs, outputs, n_tensors, graph_outputs, bool(claimed[0]))
        if fast is not None:
            return fast
    tensor_epoch = [_ALWAYS_READY] * n_tensors
    producers_left = [0] * n
    consumers: dict[int, list[int]] = {}
    for k in range(n):
        for t in outputs[k]:
            if 0 <= t < n_tensors:
                tensor_epoch[t] = _NOT_READY
    for k in range(n):
        for t in inputs[k]:
            if 0 <= t < n_tensors and tensor_epoch[t] == _NOT_READY:
                producers_left[k] += 1
                consumers.setdefault(t, []).append(k)
    # control edges: each side-effect operator waits for the previous one
    control_next: dict[int, int] = {}
    if side_effects is not None:
        last = -1
        for k in range(n):
            if side_effects[k]:
                if last >= 0:
                    control_next[last] = k
                    producers_left[k] += 1
                last = k
    ready: tuple[list[int], list[int]] = ([], [])  # by kind: unclaimed, claimed
    for k in range(n):
        if producers_left[k] == 0:
            ready[claimed[k]].append(k)  # already in index order: valid heaps
    node_epoch = [-1] * n
    subsets: list[NodeSubset] = []
    done = 0
    while ready[0] or ready[1]:
        kind = bool(ready[1]) and (not ready[0] or ready[1][0] < ready[0][0])
        epoch = len(subsets)
        sub = NodeSubset(kind)
        subsets.append(sub)
        current = ready[kind]  # this sweep: ready operators past the position
        later: list[int] = []  # ready operators behind the position: the next sweep
        ready = (ready[0], []) if kind else ([], ready[1])
        pos = -1
        while current or later:
            if not current:
                current, later, pos = later, [], -1
                heapq.heapify(current)
            k = heapq.heappop(current)
            pos = k
            node_epoch[k] = epoch
            done += 1
            sub.nodes.append(k)
            for t in inputs[k]:
                if not 0 <= t < n_tensors:
                    continue
                te = tensor_epoch[t]
                if te != epoch:
                    sub.inputs.append(t)
                    if te >= 0:
                        subsets[te].outputs.append(t)
            woken: list[int] = []
            for t in outputs[k]:
                if not 0 <= t < n_tensors:
                    continue
                tensor_epoch[t] = epoch
                for c in consumers.get(t, ()):
                    producers_left[c] -= 1
                    if producers_left[c] == 0:
                        woken.append(c)
            nxt = control_next.get(k)
            if nxt is not None:
                producers_left[nxt] -= 1
                if producers_left[nxt] == 0:
                    woken.append(nxt)
            for c in woken:
                if claimed[c] != kind:
                    heapq.heappush(ready[claimed[c]], c)
                elif c > pos:
                    heapq.heappush(current, c)
                else:
                    later.append(c)
    if done != n:
        return None
    for t in graph_outputs:
        if 0 <= t < n_tensors and tensor_epoch[t] >= 0:
            subsets[tensor_epoch[t]].outputs.append(t)
    for sub in subsets:
        sub.inputs = sorted(set(sub.inputs))
        sub.outputs = sorted(set(sub.outputs))
    return subsets



def _one_subset(inputs, outputs, n_tensors, graph_outputs, kind) -> list[NodeSubset] | None:
    """Every operator of one kind, in a plan where each reads only what earlier operators
    wrote: LiteRT's sweep takes them all, in order, in one epoch (the control edges
    between side-effect operators follow the same order).  None when the plan is not in
    that order (the general walk handles it)."""
    written: set[int] = set()
    produced = {t for outs in outputs for t in outs}
    sub = NodeSubset(kind, list(range(len(inputs))))
    ins: set[int] = set()
    for k in range(len(inputs)):
        for t in inputs[k]:
            if 0 <= t < n_tensors:
                if t in produced and t not in written:
                    return None
                if t not in written:
                    ins.add(t)
        written.update(t for t in outputs[k] if 0 <= t < n_tensors)
    sub.inputs = sorted(ins)
    sub.outputs = sorted({t for t in graph_outputs if t in written})
    return [sub]


class Crossing:
    """Counts the tensors passing between a partition and LiteRT's CPU kernels: its inputs
    another operator writes, and its outputs an operator outside it reads (the model's own
    inputs and outputs are not counted)."""

    def __init__(self, producer: dict[int, int], readers: dict[int, list[int]]) -> None:
        self.produced = producer
        self.readers = readers

    def count(self, sub: NodeSubset) -> int:
        members = set(sub.nodes)
        return (sum(1 for t in sub.inputs if t in self.produced)
                + sum(1 for t in sub.outputs
                      if any(k not in members for k in self.readers.get(t, ()))))
