"""The graph of a subgraph as a networkx MultiDiGraph (no Qt; the UI and CLI draw it).

Nodes: one per operator (`op:K`), one per subgraph input (`in:T`) and output (`out:T`),
one per variable tensor that no operator produces (`var:T`) and one per other tensor that
nothing produces (`src:T`, e.g. a state tensor of a malformed model).  Edges are tensors,
keyed by tensor index, from producer to each consumer.  Constant tensors are not nodes:
they are listed on their operator (`constants`).  Malformed graphs (several producers,
cycles) are still built; their defects are listed in `graph.graph["defects"]`.

Built from the reader's operator columns, so a 20,000-operator subgraph needs no
per-operator view objects; per-operator details (options text) are computed on demand.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np

from ..model import Model, Subgraph
from ..model import dtypes
from .arrays import KINDS, OP, graph_arrays


@dataclass(frozen=True)
class TensorEdge:
    """What an edge label shows: index, name, shape (or signature) and type."""

    index: int
    name: str
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...] | None
    dtype: str
    is_variable: bool

    @property
    def shape_text(self) -> str:
        dims = self.shape_signature if self.shape_signature is not None else self.shape
        return "x".join("?" if d < 0 else str(d) for d in dims) or "scalar"


def _edge_info(sg: Subgraph, t: int) -> TensorEdge:
    c = sg.tensor_columns
    return TensorEdge(t, c.name[t], c.shape[t], c.shape_signature[t],
                      dtypes.type_name(int(c.type[t])), bool(c.is_variable[t]))


def _calling_options() -> list[int]:
    """BuiltinOptions tags of the options tables that name subgraphs (WHILE, IF, ...)."""
    from ..model.operator import SUBGRAPH_FIELDS
    from ..schema.schema_layout import LAYOUT
    values = LAYOUT["enums"]["tflite.BuiltinOptions"]["values"]
    return [tag for tag, name in values.items() if name in SUBGRAPH_FIELDS]


_CALLING_OPTIONS = _calling_options()


def op_node(k: int) -> str:
    return f"op:{k}"


def build_graph(model: Model, subgraph: int = 0) -> nx.MultiDiGraph:
    """The MultiDiGraph of one subgraph (see the module docstring for its conventions).

    Made from `graph_arrays`, so its nodes and edges come in the same order as the arrays
    the layout and the canvas use.
    """
    sg = model.subgraphs[subgraph]
    ga = graph_arrays(model, subgraph)
    cols = sg.columns
    codes = model.operator_codes
    g = nx.MultiDiGraph(subgraph=subgraph, name=sg.display_name, defects=list(ga.defects))
    is_const = sg.constant_mask
    fused = cols.fused_activation
    calls = called_subgraphs(sg)
    names = sg.tensor_columns.name
    nodes = []
    for node, kind, ref in zip(ga.ids, ga.kind.tolist(), ga.ref.tolist()):
        if kind == OP:
            code = codes[int(cols.opcode_index[ref])]
            ins = cols.op_inputs(ref)
            attrs = dict(kind="op", index=ref, name=code.name, version=code.version,
                         builtin_code=code.builtin_code, category=code.category,
                         fused_activation=fused.get(ref),
                         constants=tuple(int(t) for t in ins[ins >= 0] if is_const[t]))
            if ref in calls:
                attrs["calls"] = calls[ref]
        else:
            attrs = dict(kind=KINDS[kind], tensor=ref, name=names[ref])
        nodes.append((node, attrs))
    g.add_nodes_from(nodes)
    ids = ga.ids
    info: dict[int, TensorEdge] = {}
    edges = []
    for u, v, t in zip(ga.src.tolist(), ga.dst.tolist(), ga.tensor.tolist()):
        e = info.get(t)
        if e is None:
            e = info[t] = _edge_info(sg, t)
        edges.append((ids[u], ids[v], t, {"tensor": t, "info": e}))
    g.add_edges_from(edges)
    if ga.n_nodes and not nx.is_directed_acyclic_graph(g):
        cycle = nx.find_cycle(g)
        g.graph["defects"].append("cycle through " + " -> ".join(str(e[0]) for e in cycle))
    return g


def called_subgraphs(sg: Subgraph) -> dict[int, dict[str, int]]:
    """Called subgraphs per operator; options are decoded only for ops whose options name some."""
    cols = sg.columns
    out: dict[int, dict[str, int]] = {}
    for k in np.flatnonzero(np.isin(cols.options_type, _CALLING_OPTIONS) | (cols.options_2_type != 0)):
        calls = sg.operators[int(k)].called_subgraphs
        if calls:
            out[int(k)] = dict(calls)
    return out


def subgraph_references(model: Model) -> dict[int, list[tuple[int, str, int]]]:
    """For each subgraph, the (operator, role, called subgraph) triples it contains.

    Only operators whose options table can name a subgraph are decoded (`called_subgraphs`):
    the window asks this on the GUI thread when a model opens, and decoding the options of
    all 20,000 operators of a large model took seconds there.
    """
    out: dict[int, list[tuple[int, str, int]]] = {}
    for sg in model.subgraphs:
        out[sg.index] = [(k, role, target) for k, calls in called_subgraphs(sg).items()
                         for role, target in calls.items()]
    return out
