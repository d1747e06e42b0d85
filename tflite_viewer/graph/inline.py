"""A subgraph with its composites expanded inline: every STABLEHLO_COMPOSITE replaced by
the operators of its decomposition subgraph (and theirs, nested), wired to the tensors
the composite reads and writes.

The canvas draws a composite folded (one box with its name and attributes) or expanded
(View > Fold Composites).  Expanded, the graph is no longer one subgraph's: its operators
come from several.  `expanded_arrays` gives the same `GraphArrays` the layout runs on,
numbered so that everything of the shown subgraph keeps its own number:

* an operator of the subgraph keeps its index as its node's ``ref``; an inlined operator
  gets ``ref = n_ops + slot`` and ``slots[slot] = (subgraph, op)`` says where it comes
  from;
* a tensor of the subgraph keeps its index as the edge key; a tensor inside a
  decomposition gets ``n_tensors + k`` and ``tensor_origin[k] = (subgraph, tensor)``; a
  decomposition's inputs and outputs are the composite's own tensors (no key of their own);
* ``groups[slot]`` is the chain of composites (``(subgraph, op)``, outermost first) an
  inlined operator sits in, ``composite_slots`` the inlined slots of each composite.

A decomposition that cannot be inlined (an index out of range, inputs or outputs that do
not match the composite's, a composite that calls itself) keeps its composite folded.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .arrays import INPUT, OP, OUTPUT, SOURCE, VARIABLE, GraphArrays, _networkx_edge_order

COMPOSITE = "STABLEHLO_COMPOSITE"
MAX_DEPTH = 16


@dataclass
class Expanded:
    """`GraphArrays` of a subgraph with its composites inlined, and where each inlined
    operator and tensor comes from (see the module docstring)."""

    arrays: GraphArrays
    subgraph: int
    n_ops: int
    n_tensors: int
    slots: list[tuple[int, int]] = field(default_factory=list)
    groups: list[tuple[tuple[int, int], ...]] = field(default_factory=list)
    tensor_origin: list[tuple[int, int]] = field(default_factory=list)
    composite_slots: dict[tuple[int, int], list[int]] = field(default_factory=dict)

    @property
    def inlined(self) -> bool:
        """Whether any composite was expanded."""
        return bool(self.slots)

    def origin_of_tensor(self, key: int) -> tuple[int, int]:
        """(subgraph, tensor) of an edge key."""
        if key < self.n_tensors:
            return self.subgraph, key
        return self.tensor_origin[key - self.n_tensors]


def _decomposition(model, op) -> int | None:
    """The decomposition subgraph of a composite that can be inlined, else None."""
    try:
        d = int(op.builtin_options_2.get("decomposition_subgraph_index", -1))
    except Exception:  # noqa: BLE001 - unreadable options keep the composite folded
        return None
    if not 0 <= d < len(model.subgraphs):
        return None
    body = model.subgraphs[d]
    if len(body.inputs) != len(op.inputs) or len(body.outputs) != len(op.outputs):
        return None
    return d


def expanded_arrays(model, subgraph: int = 0) -> Expanded:
    """The arrays of ``subgraph`` with every composite inlined (see the module docstring)."""
    top = model.subgraphs[subgraph]
    n_ops, n_tensors = len(top.operators), len(top.tensors)
    ops: list[tuple[int, list[int], list[int]]] = []  # (node ref, input keys, output keys)
    out = Expanded(GraphArrays(np.zeros(0, np.int8), np.zeros(0, np.int64),
                               np.zeros(0, np.int64), np.zeros(0, np.int64),
                               np.zeros(0, np.int64)), subgraph, n_ops, n_tensors)
    inner_key: dict[tuple[int, int], int] = {}
    const: dict[int, bool] = {}
    variable: dict[int, bool] = {}
    names: dict[int, str] = {}
    alias: dict[int, int] = {}  # a composite output its decomposition passes straight through

    def key(sgi: int, t: int, mapping: dict[int, int] | None) -> int:
        if t < 0:
            return -1
        if mapping is None:
            return t
        if t in mapping:
            return mapping[t]
        k = inner_key.get((sgi, t))
        if k is None:
            k = inner_key[(sgi, t)] = n_tensors + len(out.tensor_origin)
            out.tensor_origin.append((sgi, t))
            tensor = model.subgraphs[sgi].tensors[t]
            const[k], variable[k], names[k] = tensor.is_constant, tensor.is_variable, tensor.name
        return k

    def walk(sgi: int, mapping: dict[int, int] | None, chain: tuple) -> None:
        for op in model.subgraphs[sgi].operators:
            d = _decomposition(model, op) if op.name == COMPOSITE else None
            if d is not None and len(chain) < MAX_DEPTH and \
                    d not in {s for s, _ in chain} and d != subgraph:
                ins = [key(sgi, t, mapping) for t in op.inputs]
                outs = [key(sgi, t, mapping) for t in op.outputs]
                body = model.subgraphs[d]
                inner = {t: k for t, k in zip(body.inputs, ins)}
                for t, k in zip(body.outputs, outs):
                    if t in inner:
                        alias[k] = inner[t]
                    else:
                        inner[t] = k
                here = (sgi, op.index)
                out.composite_slots[here] = []
                walk(d, inner, chain + (here,))
                continue
            if mapping is None:
                ref = op.index
            else:
                slot = len(out.slots)
                out.slots.append((sgi, op.index))
                out.groups.append(chain)
                for c in chain:
                    out.composite_slots[c].append(slot)
                ref = n_ops + slot
            ops.append((ref, [key(sgi, t, mapping) for t in op.inputs],
                        [key(sgi, t, mapping) for t in op.outputs]))

    walk(subgraph, None, ())
    is_const = np.asarray(top.constant_mask, bool)

    def constant(k: int) -> bool:
        return bool(is_const[k]) if k < n_tensors else const[k]

    def is_var(k: int) -> bool:
        return top.tensors[k].is_variable if k < n_tensors else variable[k]

    out.arrays = _arrays(ops, list(dict.fromkeys(top.inputs)), list(top.outputs), constant,
                         is_var, alias)
    return out


def _arrays(ops, sub_inputs, sub_outputs, constant, is_var, alias) -> GraphArrays:
    """GraphArrays from a flat operator list (the conventions of `graph.arrays`)."""
    def real(k: int) -> int:
        seen = 0
        while k in alias and seen < MAX_DEPTH:
            k, seen = alias[k], seen + 1
        return k

    kinds = [OP] * len(ops)
    refs = [ref for ref, _, _ in ops]
    producer: dict[int, int] = {}
    defects = []
    for node, (_, _, outs) in enumerate(ops):
        for k in outs:
            if k < 0:
                continue
            if k in producer:
                defects.append(f"tensor key {k} is produced twice")
                continue
            producer[k] = node
    source: dict[int, int] = {}
    for t in sub_inputs:
        source[t] = len(kinds)
        kinds.append(INPUT)
        refs.append(t)
    orphans: dict[int, int] = {}
    src, dst, keys = [], [], []

    def origin(k: int) -> int | None:
        k = real(k)
        if k in producer:
            return producer[k]
        if k in source:
            return source[k]
        if constant(k):
            return None
        if k not in orphans:
            orphans[k] = len(kinds)
            kinds.append(VARIABLE if is_var(k) else SOURCE)
            refs.append(k)
        return orphans[k]

    for node, (_, ins, _) in enumerate(ops):
        for k in ins:
            if k < 0:
                continue
            s = origin(k)
            if s is not None:
                src.append(s)
                dst.append(node)
                keys.append(real(k))
    out_node: dict[int, int] = {}
    for t in sub_outputs:
        if t not in out_node:
            out_node[t] = len(kinds)
            kinds.append(OUTPUT)
            refs.append(t)
        s = origin(t)
        if s is not None:
            src.append(s)
            dst.append(out_node[t])
            keys.append(real(t))
    n_keys = max([*keys, *refs, 0]) + 1
    s_arr, d_arr, k_arr = _networkx_edge_order(np.asarray(src, np.int64),
                                               np.asarray(dst, np.int64),
                                               np.asarray(keys, np.int64), len(kinds), n_keys)
    return GraphArrays(np.asarray(kinds, np.int8), np.asarray(refs, np.int64), s_arr, d_arr,
                       k_arr, defects)
