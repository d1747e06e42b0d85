"""When each tensor and scratch buffer is live, as TFLite Micro's ``AllocationInfoBuilder``
marks it (micro_allocation_info.cc).

Time is TFLM's *allocation scope count*: it starts at 0 where subgraph 0's inputs are
created, goes up by one for every operator, and by one more before each subgraph a
control-flow operator runs (IF's then and else, WHILE's cond and body, CALL_ONCE's init),
whose operators are then marked right there, inside the caller's step.  So:

* a subgraph's inputs are created (and last used, if nothing reads them) at its entry;
* an operator's outputs are created at its step; its inputs and outputs are last used at
  the step reached after the subgraphs it runs, so a WHILE's operands stay live for the
  whole loop;
* a subgraph's outputs live until the end of its last operator;
* a subgraph run twice (two WHILEs sharing a body) keeps its first creation and last use;
* scratch buffers live from their operator's step to the end of the subgraphs it runs.

Subgraphs no control flow reaches from subgraph 0 are never marked: their tensors keep
TFLM's uninitialised lifetime, -1 to -1, and still get planned (all at "step -1").
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .facts import MemoryFacts

UNMARKED = -1


@dataclass(frozen=True)
class ScratchRequest:
    """One ``RequestScratchBufferInArena`` made by an operator's Prepare."""

    subgraph: int
    op: int        # position in execution order (the node index TFLM records)
    bytes: int
    what: str      # which buffer, for people ("int32 accumulator", ...)


@dataclass
class Lifetimes:
    first: list[list[int]]
    last: list[list[int]]
    scratch_first: list[int]
    scratch_last: list[int]
    steps: list[tuple[int, int]] = field(default_factory=list)  # scope -> (subgraph, op | -1)
    problems: list[str] = field(default_factory=list)


def mark_lifetimes(facts: MemoryFacts, scratch: list[ScratchRequest]) -> Lifetimes:
    subs = facts.subgraphs
    first = [[UNMARKED] * sg.n_tensors for sg in subs]
    last = [[UNMARKED] * sg.n_tensors for sg in subs]
    s_first = [UNMARKED] * len(scratch)
    s_last = [UNMARKED] * len(scratch)
    by_op: dict[tuple[int, int], list[int]] = {}
    for i, req in enumerate(scratch):
        by_op.setdefault((req.subgraph, req.op), []).append(i)
    out = Lifetimes(first, last, s_first, s_last)
    steps = out.steps
    stack: list[int] = []

    def mark(s: int) -> None:
        sg = subs[s]
        fs, ls = first[s], last[s]
        n = sg.n_tensors
        stack.append(s)
        steps.append((s, -1))
        scope = len(steps) - 1
        for t in sg.inputs:
            if 0 <= t < n:
                if fs[t] == UNMARKED:
                    fs[t] = scope
                ls[t] = scope
        calls = sg.calls
        for k in range(sg.n_ops):
            steps.append((s, k))
            scope = len(steps) - 1
            outs = sg.op_outputs[k]
            for t in outs:
                if 0 <= t < n and fs[t] == UNMARKED:
                    fs[t] = scope
            start = scope
            for callee in calls.get(k, ()):
                if not 0 <= callee < len(subs):
                    out.problems.append(f"subgraphs[{s}].operators[{sg.original[k]}] runs "
                                        f"subgraph {callee}, which does not exist")
                    continue
                if callee in stack:
                    out.problems.append(f"subgraphs[{s}].operators[{sg.original[k]}] runs "
                                        f"subgraph {callee} recursively; TFLM would not return")
                    continue
                mark(callee)
            scope = len(steps) - 1
            for t in sg.op_inputs[k]:
                if 0 <= t < n:
                    ls[t] = scope
            for t in outs:
                if 0 <= t < n:
                    ls[t] = scope
            for i in by_op.get((s, k), ()):
                if s_first[i] == UNMARKED:
                    s_first[i] = start
                s_last[i] = scope
        scope = len(steps) - 1
        for t in sg.outputs:
            if 0 <= t < n:
                if fs[t] == UNMARKED:
                    fs[t] = scope
                ls[t] = scope
        stack.pop()

    if subs:
        mark(0)
    return out
