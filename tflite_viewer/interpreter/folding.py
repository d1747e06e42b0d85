"""Folding the shape arithmetic of an execution plan: ops whose values cannot change
between runs are replayed, not recomputed, in runs nothing watches.

Converted models often compute shapes and paddings at run time: SHAPE of an input, then
STRIDED_SLICE, PACK, ADD, FLOOR_MOD ... on a few int32 values (a dilated convolution's
SPACE_TO_BATCH_ND paddings take 19 such ops).  Their values depend only on constants and on
tensor shapes, so once the subgraph has run with its present shapes they are known.  LiteRT
computes them again on every Invoke, at a few nanoseconds each; here each costs the
interpreter's per-op overhead, which is why they dominate small models.

A node is *foldable* when its op is one of the pure builtins of `FOLDABLE` (run by this
package's own kernel, not a user's), its outputs are small static activations, and its
inputs are constants, outputs of foldable nodes, or (for SHAPE and RANK, which read only the
shape) tensors of static shape.  After a run of `Executor.execute` in which no node was
prepared again, the foldable nodes' output values are recorded (as read-only copies) and the
plan binds each run of consecutive foldable nodes to one step replaying them (`fold`).  The
nodes still count as run (op calls; the step's time goes to the first), and their output
tensors hold the same values as if their kernels had run.  A bound step that stores a
value its kernel keeps (a DEQUANTIZE or DENSIFY of a constant: ``fn.constant``, the output
and that read-only value) joins the replays as it is: a float16 model's sixty-five
DEQUANTIZE nodes of its weights, one after another at the head of its plan, become one
step.

Every re-preparation of a node of the subgraph (a resized input, a new dynamic shape) bumps
``Subgraph.fold_epoch``; a replay bound under another epoch runs the kernels instead, and
the next run rebinds the plain plan (`builder.unspecialize_plan`) and records again.  Stepping, breakpoints and
hooks never see replays: they run every kernel (`Executor.walk`,
`_execute_watched`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np

from .tensor import AllocationType

if TYPE_CHECKING:
    from .node import Node
    from .subgraph import Subgraph

#: builtin ops whose outputs are a function of their input values (and options) alone
FOLDABLE = frozenset({
    "ADD", "SUB", "MUL", "DIV", "FLOOR_DIV", "FLOOR_MOD", "MAXIMUM", "MINIMUM", "POW",
    "SQUARED_DIFFERENCE", "NEG", "ABS", "SIGN", "CAST", "EQUAL", "NOT_EQUAL", "LESS",
    "LESS_EQUAL", "GREATER", "GREATER_EQUAL", "LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT",
    "SELECT", "SELECT_V2", "SHAPE", "RANK", "PACK", "UNPACK", "STRIDED_SLICE", "SLICE",
    "CONCATENATION", "RESHAPE", "EXPAND_DIMS", "SQUEEZE", "GATHER", "GATHER_ND", "FILL",
    "RANGE", "TILE", "TRANSPOSE", "ZEROS_LIKE", "ONES_LIKE", "BROADCAST_TO",
    "BROADCAST_ARGS", "REDUCE_PROD", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_ANY",
    "REDUCE_ALL",
})
#: ops that read only their inputs' shapes
SHAPE_READERS = frozenset({"SHAPE", "RANK"})
#: the largest output (elements) worth keeping: shape arithmetic, not activations
MAX_ELEMENTS = 1024

_KERNEL_PACKAGE = __name__.rsplit(".", 1)[0] + ".kernels"


def _is_small_static(t) -> bool:
    shape = t.shape
    return (t.allocation_type is AllocationType.ARENA_RW and shape is not None
            and not t.is_variable and int(np.prod(shape, dtype=np.int64)) <= MAX_ELEMENTS)


def foldable_nodes(sg: "Subgraph") -> list["Node"]:
    """The nodes of the plan whose outputs are fixed while the subgraph's shapes are."""
    tensors = sg.tensors
    known = {t.index for t in tensors
             if t.allocation_type is AllocationType.MMAP_RO and t.has_data}
    entry_inputs = set(sg.inputs)
    nodes = []
    for node in sg.plan_nodes:
        if node.name not in FOLDABLE or node.calls_subgraphs \
                or node.registration.custom_name is not None \
                or not type(node.kernel).__module__.startswith(_KERNEL_PACKAGE):
            continue
        ins = [i for i in node.inputs if i >= 0]
        if not ins:
            continue
        if node.name in SHAPE_READERS:
            ok = all(tensors[i].shape is not None
                     and tensors[i].allocation_type is not AllocationType.DYNAMIC for i in ins)
        else:
            ok = all(i in known for i in ins)
        outs = [o for o in node.outputs if o >= 0]
        if ok and outs and all(o not in entry_inputs and _is_small_static(tensors[o])
                               for o in outs):
            nodes.append(node)
            known.update(outs)
    return nodes


def _replay(nodes: list["Node"], pairs: list, epoch: int) -> Callable:
    """One plan step for consecutive foldable nodes: set their recorded values, or, once
    the subgraph was prepared again since they were recorded, run their kernels in order
    as the executor would (re-preparation, errors naming the op).  The step counts as the
    first node's run; the others' calls are counted here."""
    rest = [n.index for n in nodes[1:]]

    def run(sg: "Subgraph", node: "Node") -> None:
        for n in nodes:
            if n.shapes_dirty:
                sg.check_prepared(n)
        if sg.fold_epoch == epoch:
            for t, v in pairs:
                t.data = v
        else:
            _run_kernels(sg, nodes)
        counts = sg.op_counts
        for i in rest:
            counts[i] += 1
    run.nodes = nodes  # type: ignore[attr-defined]
    return run


def _run_kernels(sg: "Subgraph", nodes: list["Node"]) -> None:
    from .errors import call_kernel

    for n in nodes:
        sg.check_prepared(n)
        call_kernel(n.kernel.invoke, sg, n)


def _recorded(sg: "Subgraph", node: "Node") -> list | None:
    """(output tensor, read-only copy of its value) pairs, or None if one is missing."""
    pairs = []
    for o in node.outputs:
        if o < 0:
            continue
        t = sg.tensors[o]
        if t.data is None or tuple(np.shape(t.data)) != t.shape:
            return None
        v = np.array(t.data, copy=True)
        v.setflags(write=False)
        pairs.append((t, v))
    return pairs


def fold(sg: "Subgraph") -> None:
    """After a run at ``sg.fold_epoch`` with no re-preparation: bind each run of
    consecutive foldable nodes of the plan to one replay of the values that run left in
    their outputs."""
    recorded = {}
    for node in foldable_nodes(sg):
        pairs = _recorded(sg, node)
        if pairs is not None:
            recorded[node.index] = pairs
    for _, fn, i in sg.plan_steps:  # bound steps that store a kept constant's value
        constant = getattr(fn, "constant", None)
        if constant is not None:
            recorded[i] = [constant]
    if not recorded:
        return
    steps, group = [], []

    def close() -> None:
        if group:
            nodes = [n for n, _, _ in group]
            pairs = [p for n in nodes for p in recorded[n.index]]
            steps.append((nodes[0], _replay(nodes, pairs, sg.fold_epoch), nodes[0].index))
            group.clear()
    for step in sg.plan_steps:
        if step[2] in recorded:
            group.append(step)
        else:
            close()
            steps.append(step)
    close()
    sg.plan_steps = steps
    sg.folded = True
