"""A subgraph's operator graph as flat arrays, built from the reader's columns with numpy.

This is what the layout and the canvas run on. `graph.build.build_graph` turns the same
arrays into a networkx MultiDiGraph for analysis (cycles, neighbourhoods, the Python API);
opening a 20,000-operator model never needs that object, and building it costs about as
much as the whole layout.

Conventions are those of `build_graph` (which is made from these arrays, so the two cannot
disagree): nodes are the operators in execution order (`op:K`), then the subgraph inputs
(`in:T`), then, in the order they are first met, tensors read by an operator or listed as
an output that nothing produces (`var:T` for variables, `src:T` otherwise) and the outputs
(`out:T`). Edges are tensors from producer to consumer, in networkx's own edge order (by
source node, then by the first edge to each target, then by tensor); one tensor read twice
by the same operator is one edge, as in a MultiDiGraph keyed by tensor.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

KINDS = ("op", "input", "output", "variable", "source")
OP, INPUT, OUTPUT, VARIABLE, SOURCE = range(5)
_PREFIX = ("op", "in", "out", "var", "src")


@dataclass
class GraphArrays:
    """Nodes and tensor edges of one subgraph (see the module docstring for the order)."""

    kind: np.ndarray  # per node: index into KINDS
    ref: np.ndarray  # per node: operator index for ops, tensor index for the others
    src: np.ndarray  # per edge: source node
    dst: np.ndarray  # per edge: target node
    tensor: np.ndarray  # per edge: tensor index (the edge key)
    defects: list[str] = field(default_factory=list)

    @property
    def n_nodes(self) -> int:
        return len(self.kind)

    @property
    def n_edges(self) -> int:
        return len(self.src)

    @cached_property
    def ids(self) -> list[str]:
        """Node ids, `op:K`, `in:T`, ... (the networkx graph's node keys)."""
        return [f"{_PREFIX[k]}:{r}" for k, r in zip(self.kind.tolist(), self.ref.tolist())]

    @cached_property
    def kind_names(self) -> list[str]:
        return [KINDS[k] for k in self.kind.tolist()]


def _first_occurrence(values: np.ndarray) -> np.ndarray:
    """Distinct ``values`` in the order they first occur."""
    uniq, first = np.unique(values, return_index=True)
    return uniq[np.argsort(first, kind="stable")]


def graph_arrays(model, subgraph: int = 0) -> GraphArrays:
    """The arrays of subgraph ``subgraph`` of ``model`` (a `tflite_viewer.model.Model`)."""
    sg = model.subgraphs[subgraph]
    cols = sg.columns
    n_ops = int(cols.opcode_index.size)
    n_tensors = len(sg.tensors)
    is_const = np.asarray(sg.constant_mask, dtype=bool)
    defects: list[str] = []

    # Producers: the first operator listing a tensor as an output; later ones are defects.
    outs = cols.outputs
    out_owner = np.repeat(np.arange(n_ops), np.diff(cols.output_offsets)) if n_ops else np.zeros(0, np.int64)
    valid = outs >= 0
    outs, out_owner = outs[valid], out_owner[valid]
    producer = np.full(n_tensors, -1, dtype=np.int64)
    if len(outs):
        uniq, first = np.unique(outs, return_index=True)
        producer[uniq] = out_owner[first]
        dup = np.ones(len(outs), dtype=bool)
        dup[first] = False
        for i in np.flatnonzero(dup).tolist():
            t = int(outs[i])
            defects.append(f"tensor {t} is produced by operators {producer[t]} and {int(out_owner[i])}")

    # Subgraph inputs, once each, in order.
    sub_inputs = [t for t in dict.fromkeys(sg.inputs)]
    input_node = np.full(n_tensors, -1, dtype=np.int64)
    for i, t in enumerate(sub_inputs):
        input_node[t] = n_ops + i
    next_node = n_ops + len(sub_inputs)
    kind = [np.zeros(n_ops, np.int64), np.full(len(sub_inputs), INPUT, np.int64)]
    ref = [np.arange(n_ops, dtype=np.int64), np.asarray(sub_inputs, dtype=np.int64)]

    # Operator inputs: (tensor, consumer) in insertion order; omitted and constant inputs skip.
    ins = cols.inputs
    in_owner = np.repeat(np.arange(n_ops), np.diff(cols.input_offsets)) if n_ops else np.zeros(0, np.int64)
    keep = ins >= 0
    ins, in_owner = ins[keep], in_owner[keep]
    source = np.where(producer[ins] >= 0, producer[ins], input_node[ins])
    orphan = (source < 0) & ~is_const[ins]
    # Tensors nothing produces become var:/src: nodes in the order they are first read.
    orphan_node = np.full(n_tensors, -1, dtype=np.int64)
    # (orphans are rare: their views are read one by one, not every tensor's columns)

    def add_orphans(tensors: np.ndarray) -> None:
        nonlocal next_node
        fresh = tensors[orphan_node[tensors] < 0]
        if not len(fresh):
            return
        orphan_node[fresh] = next_node + np.arange(len(fresh))
        next_node += len(fresh)
        kind.append(np.array([VARIABLE if sg.tensors[t].is_variable else SOURCE for t in fresh.tolist()],
                             dtype=np.int64))
        ref.append(fresh.astype(np.int64))

    add_orphans(_first_occurrence(ins[orphan]))
    source = np.where(orphan, orphan_node[ins], source)
    wired = source >= 0
    e_src, e_dst, e_t = [source[wired]], [in_owner[wired]], [ins[wired]]

    # Subgraph outputs: the out: node, then (if needed) the orphan node feeding it.
    out_node: dict[int, int] = {}
    for t in sg.outputs:
        t = int(t)
        if t not in out_node:
            out_node[t] = next_node
            next_node += 1
            kind.append(np.array([OUTPUT], np.int64))
            ref.append(np.array([t], np.int64))
        s = int(producer[t]) if producer[t] >= 0 else int(input_node[t])
        if s < 0 and not is_const[t]:
            add_orphans(np.array([t], np.int64))
            s = int(orphan_node[t])
        if s >= 0:
            e_src.append(np.array([s]))
            e_dst.append(np.array([out_node[t]]))
            e_t.append(np.array([t]))

    src = np.concatenate(e_src).astype(np.int64)
    dst = np.concatenate(e_dst).astype(np.int64)
    tensor = np.concatenate(e_t).astype(np.int64)
    src, dst, tensor = _networkx_edge_order(src, dst, tensor, next_node, n_tensors)
    return GraphArrays(np.concatenate(kind).astype(np.int8), np.concatenate(ref), src, dst, tensor, defects)


def _networkx_edge_order(src: np.ndarray, dst: np.ndarray, tensor: np.ndarray, n_nodes: int,
                         n_tensors: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges given in insertion order, deduplicated and put in MultiDiGraph.edges() order."""
    if not len(src):
        return src, dst, tensor
    nn, nt = max(n_nodes, 1), max(n_tensors, 1)
    ident = (src * nn + dst) * nt + tensor
    _, first = np.unique(ident, return_index=True)
    first.sort()
    src, dst, tensor = src[first], dst[first], tensor[first]
    pair = src * nn + dst
    uniq_pair, pair_first = np.unique(pair, return_index=True)
    pair_pos = pair_first[np.searchsorted(uniq_pair, pair)]
    order = np.lexsort((np.arange(len(src)), pair_pos, src))
    return src[order], dst[order], tensor[order]


def cycle_defects(model, subgraph: int) -> list[str]:
    """The "cycle through ..." defect of a subgraph, from networkx.

    Callers ask only when the layout had to reverse an edge, so a well-formed subgraph
    never builds the networkx graph.
    """
    from .build import build_graph

    return [d for d in build_graph(model, subgraph).graph["defects"] if d.startswith("cycle")]
