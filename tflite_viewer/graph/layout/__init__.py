"""Deterministic layered (Sugiyama-style) layout of a subgraph's operator graph.

Pure geometry: no Qt. The input is the ``networkx.MultiDiGraph`` of one subgraph (nodes are
operators and subgraph inputs/outputs with a ``kind`` attribute, edges are tensors keyed by
tensor index) or its `GraphArrays`; the output is boxes and polylines with y growing
downward (`result.py`).

The layout has to open a 20,000-op model in a few seconds on a small machine, and those
graphs are deep and narrow (thousands of layers, a handful of nodes per layer). A classic
implementation sweeps layer by layer in Python, which costs a Python iteration per layer per
sweep; here everything but two DFS passes and the final object construction works on flat
numpy arrays over *all* layers at once (`extract.py`). One module per phase, as dagre
keeps them, run in this order by `_run` below:

1. `acyclic.py`, cycle breaking: a DFS's back edges are reversed and reported; self loops
   are set aside and drawn as loops.
2. `rank.py`, ranking: longest path from the sources, then fan-out nodes pulled down
   toward their consumers.
3. `dummies.py`: long edges split into chains of dummy nodes, one per layer crossed.
4. `order.py`, crossing reduction: strided barycenter sweeps and dot's transposition,
   crossings counted by `crossings.py`; the best order seen is kept.
5. `coordinates.py`: Brandes-Koepf-like alignment into rigid blocks (the trunk and long
   edges straight), blocks pulled toward their neighbours, gaps restored in fixed point.
6. `routing.py`: layer heights, boxes and every edge's polyline as flat arrays.

Everything is ordered by the graph's own node and edge order (never by hashing), so the same
graph gives bit-identical floats in every process (tests/graph/test_layout_reference.py
holds every corpus drawing to the bit).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..arrays import KINDS, GraphArrays
from .acyclic import break_cycles, layering_edges
from .coordinates import COORD_ROUNDS, FIXED, place_x
from .dummies import split_long_edges
from .extract import Graph, extract
from .order import reduce_crossings, upward_preorder
from .rank import assign_ranks
from .result import (IO_SIZE, OP_SIZE, TENSOR_KINDS, EdgePath, Layout, LayoutArrays, NodeBox,
                     SizeFn, default_size)
from .routing import assemble, frame

if TYPE_CHECKING:  # networkx is only needed by callers that pass a graph
    import networkx as nx

__all__ = [
    "NodeBox",
    "EdgePath",
    "Layout",
    "LayoutArrays",
    "LayoutOptions",
    "SizeFn",
    "default_size",
    "layout",
    "naive_layout",
    "layout_arrays",
]


def _run(
    g: Graph,
    *,
    layer_gap: float,
    node_gap: float,
    sweeps: int,
    coord_rounds: int,
    pull_down: bool,
    pin_inputs: bool,
    naive: bool = False,
) -> Layout:
    """The whole pipeline on extracted arrays; ``naive`` swaps in the baseline choices."""
    acyc = break_cycles(g)
    edge_ids, up, lo = layering_edges(g, acyc)
    movable = np.zeros(g.n, dtype=bool)
    if pull_down:
        movable = np.bincount(up, minlength=g.n) > np.bincount(lo, minlength=g.n)
        if pin_inputs:
            movable &= np.asarray([k != "input" for k in g.kinds], dtype=bool).reshape(-1)
    rank = assign_ranks(g.n, up, lo, acyc.topo, movable)
    h = split_long_edges(g.n, rank, up, lo)
    if naive:  # graph order (execution order in TFLite), dummies after their source
        order = reduce_crossings(h, np.arange(g.n), 0, dummies_follow_lower=False)
    else:
        order = reduce_crossings(h, upward_preorder(g.n, up, lo), sweeps)
    widths = np.concatenate([g.widths, np.zeros(h.size - g.n)])
    cx = place_x(h, order.pos, widths, node_gap, coord_rounds) / FIXED
    fr = frame(rank, h.n_layers, cx[: g.n], g.widths, g.heights, layer_gap)
    pad = min(node_gap, layer_gap) / 3
    return assemble(g, acyc, h, edge_ids, cx, fr, int(order.crossings.sum()), pad)


@dataclass(frozen=True)
class LayoutOptions:
    """The knobs of :func:`layout` and :func:`layout_arrays` (given to either as keyword
    arguments).  ``sweeps`` is the number of down+up crossing-reduction sweeps,
    ``coord_rounds`` the number of straightening rounds of the x assignment; with
    ``pin_inputs`` subgraph inputs stay in the top layer even when their first consumer
    is far below."""

    layer_gap: float = 48.0
    node_gap: float = 24.0
    sweeps: int = 4
    pin_inputs: bool = True
    coord_rounds: int = COORD_ROUNDS


def layout(graph: nx.MultiDiGraph, size: SizeFn | None = None, **options) -> Layout:
    """Lay out ``graph`` top to bottom; never raises on cycles, self loops or empty graphs.

    ``size(node, attrs) -> (width, height)`` gives box sizes (default: :func:`default_size`);
    ``options`` are `LayoutOptions` fields (an unknown one is a TypeError).
    """
    return _layout(extract(graph, size), LayoutOptions(**options))


def _layout(g: Graph, options: LayoutOptions) -> Layout:
    """The optimised pipeline (what :func:`layout` and :func:`layout_arrays` run)."""
    return _run(g, layer_gap=options.layer_gap, node_gap=options.node_gap,
                sweeps=options.sweeps, coord_rounds=options.coord_rounds, pull_down=True,
                pin_inputs=options.pin_inputs)


def layout_arrays(graph: GraphArrays, widths: np.ndarray | None = None,
                  heights: np.ndarray | None = None, **options) -> Layout:
    """:func:`layout` of a graph given as `GraphArrays` (no networkx on the way).

    ``widths`` and ``heights`` are per node row (default: :func:`default_size` by kind);
    ``options`` are `LayoutOptions` fields.  The result is identical to laying out
    ``build_graph`` of the same subgraph.
    """
    kinds = graph.kind_names
    if widths is None or heights is None:
        io = np.isin(graph.kind, [k for k, name in enumerate(KINDS) if name in TENSOR_KINDS])
        widths = np.where(io, IO_SIZE[0], OP_SIZE[0]) if widths is None else widths
        heights = np.where(io, IO_SIZE[1], OP_SIZE[1]) if heights is None else heights
    tensors = graph.tensor.tolist()
    g = Graph(
        ids=graph.ids,
        kinds=kinds,
        widths=np.ascontiguousarray(widths, dtype=np.float64),
        heights=np.ascontiguousarray(heights, dtype=np.float64),
        src=graph.src,
        dst=graph.dst,
        keys=tensors,
        tensors=tensors,
    )
    return _layout(g, LayoutOptions(**options))


def naive_layout(
    graph: nx.MultiDiGraph,
    size: SizeFn | None = None,
    *,
    layer_gap: float = 48.0,
    node_gap: float = 24.0,
    **_ignored: object,
) -> Layout:
    """Baseline for comparisons: the same layered drawing without any of the optimisation.

    One row per topological generation (longest path, no pulling down), nodes in graph
    order (execution order for TFLite) with each long edge's dummy points right after its
    source's slot, rows packed and centred, no crossing reduction and no straightening.
    Cycles are broken as in :func:`layout`. Extra keyword arguments are accepted and
    ignored so callers can pass the same options to both functions.
    """
    return _run(
        extract(graph, size),
        layer_gap=layer_gap,
        node_gap=node_gap,
        sweeps=0,
        coord_rounds=0,
        pull_down=False,
        pin_inputs=True,
        naive=True,
    )
