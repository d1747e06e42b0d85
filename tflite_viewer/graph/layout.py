"""Deterministic layered (Sugiyama-style) layout of a subgraph's operator graph.

Pure geometry: no Qt. The input is the ``networkx.MultiDiGraph`` of one subgraph (nodes are
operators and subgraph inputs/outputs with a ``kind`` attribute, edges are tensors keyed by
tensor index); the output is boxes and polylines with y growing downward.

The layout has to open a 20,000-op model in a few seconds on a small machine, and those
graphs are deep and narrow (thousands of layers, a handful of nodes per layer). A classic
implementation sweeps layer by layer in Python, which costs a Python iteration per layer per
sweep; here everything but two DFS passes and the final object construction works on flat
numpy arrays over *all* layers at once:

1. Cycle breaking: one iterative DFS from the sources, in node order; its back edges (a
   feedback arc set) are reversed and reported. Self loops are set aside and drawn as loops.
2. Ranking: longest path from the sources (inputs on top), then nodes with more outgoing
   than incoming edges are pulled down toward their consumers, which shortens edges.
3. Long edges are split into chains of dummy nodes, one per layer crossed.
4. Crossing reduction: barycenter sweeps down and up, starting from the order in which a
   DFS walking up from the outputs discovers the nodes. The layers are cut into chunks
   and the i-th layer of every chunk is reordered in the same numpy step, so a sweep
   costs a fixed number of vectorized steps whatever the depth.
   Each sweep is followed by dot's transposition (swap adjacent nodes when that removes
   crossings), vectorized over independent pairs. Crossings are counted per layer pair by
   a vectorized merge-sort inversion count, and the best order seen is kept.
5. Coordinates: a Brandes-Koepf-like vertical alignment (real chains first, then long
   edges, by median, never crossing) makes rigid blocks, so the model's trunk and long
   edges are straight; blocks move toward their neighbours for a few rounds, and each
   round a projection restores the gaps in every layer: the trunk stays, the rest is
   pushed outward by segmented running max/min, in fixed point so it is exact and
   deterministic.
6. Edges become polylines: source bottom-centre, a vertical run through every layer the edge
   crosses, target top-centre.

Everything is ordered by the graph's own node and edge order (never by hashing), so the same
graph gives bit-identical floats in every process.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Hashable, Iterable, Sequence

import numpy as np

from .arrays import KINDS, GraphArrays

if TYPE_CHECKING:  # networkx is only needed by callers that pass a graph
    import networkx as nx

__all__ = [
    "NodeBox",
    "EdgePath",
    "Layout",
    "LayoutOptions",
    "SizeFn",
    "default_size",
    "layout",
    "naive_layout",
    "layout_arrays",
]

SizeFn = Callable[[Hashable, dict], "tuple[float, float]"]

OP_SIZE = (120.0, 40.0)
IO_SIZE = (80.0, 28.0)

# Weights of a segment in coordinate assignment, by how many of its ends are dummies.
# Dummy-to-dummy segments weigh most so long edges stay straight (the weights dot uses).
_SEGMENT_WEIGHTS = np.array([1.0, 2.0, 8.0])
# Fixed-point scale of the coordinate projection: 1/64 px steps are exact in float64.
_FIXED = 64
_COORD_ROUNDS = 8
# Pull of every block toward x = 0 per member node, against the neighbours' pull (weights
# above): without it a 20k-op trunk broken into pieces drifts sideways piece by piece.
_CENTRE_PULL = 3.0
# Passes of the adjacent-swap step after each sweep (it stops earlier when nothing moves).
_TRANSPOSE_ROUNDS = 4
# Chunk length of the strided sweeps (see _Sweeper).
_SWEEP_STRIDE = 64
# Groups up to this size count inversions pairwise (see _grouped_inversions).
_PAIRWISE_MAX = 24


_TENSOR_KINDS = frozenset({"input", "output", "variable", "source"})


def default_size(node: Hashable, attrs: dict) -> tuple[float, float]:
    """(120, 40) for operators, (80, 28) for subgraph inputs and outputs.

    Tensor-like nodes of malformed or stateful graphs (kinds "variable", "source") are
    drawn as small as inputs.
    """
    return IO_SIZE if attrs.get("kind") in _TENSOR_KINDS else OP_SIZE


# --------------------------------------------------------------------------------------
# Public result types


@dataclass(frozen=True, slots=True)
class NodeBox:
    """A node's box; ``x, y`` is the top-left corner and y grows downward."""

    id: Hashable
    kind: str
    x: float
    y: float
    width: float
    height: float
    layer: int

    @property
    def center_x(self) -> float:
        return self.x + self.width / 2

    @property
    def bottom(self) -> float:
        return self.y + self.height

    @property
    def right(self) -> float:
        return self.x + self.width


@dataclass(frozen=True, slots=True)
class EdgePath:
    """One tensor edge drawn as a polyline from the source box to the target box.

    ``reversed`` is true for edges that point against the flow because they close a cycle
    (including self loops); those start on the top of their source and end on the bottom
    of their target.
    """

    source: Hashable
    target: Hashable
    key: Hashable
    tensor: int | None
    points: tuple[tuple[float, float], ...]
    reversed: bool


@dataclass
class LayoutArrays:
    """The layout as flat arrays: what the canvas and ``layout --json`` read.

    Rows are nodes in the graph's order, edges in the graph's edge order. Edge ``e`` is
    the polyline ``px[pstart[e]:pstart[e+1]], py[...]``, already drawn from its source
    to its target (reversed edges and self loops included).
    """

    ids: list
    kinds: list[str]
    x: np.ndarray
    y: np.ndarray
    w: np.ndarray
    h: np.ndarray
    layer: np.ndarray
    edge_src: np.ndarray  # node row
    edge_dst: np.ndarray
    keys: Sequence
    tensors: Sequence
    reversed: np.ndarray  # bool per edge: drawn against the flow (cycle or self loop)
    px: np.ndarray
    py: np.ndarray
    pstart: np.ndarray


class Layout:
    """Boxes, polylines and summary figures of one laid-out graph.

    ``nodes`` (id -> `NodeBox`) and ``edges`` (`EdgePath` list) are made on first use from
    ``arrays`` when the layout was computed here: a caller that only draws or counts (the
    canvas, ``layout`` without ``--json``) never pays for 50,000 small objects.
    """

    def __init__(
        self,
        nodes: dict[Hashable, NodeBox] | None = None,
        edges: list[EdgePath] | None = None,
        crossings: int = 0,
        width: float = 0.0,
        height: float = 0.0,
        reversed_edges: list | None = None,
        *,
        arrays: LayoutArrays | None = None,
    ) -> None:
        self._nodes = nodes
        self._edges = edges
        self.crossings = crossings
        self.width = width
        self.height = height
        self._reversed_edges = reversed_edges
        self.arrays = arrays

    @property
    def nodes(self) -> dict[Hashable, NodeBox]:
        if self._nodes is None:
            a = self.arrays
            self._nodes = {
                node: NodeBox(node, kind, x, y, w, h, r)
                for node, kind, x, y, w, h, r in zip(
                    a.ids, a.kinds, a.x.tolist(), a.y.tolist(), a.w.tolist(), a.h.tolist(), a.layer.tolist()
                )
            }
        return self._nodes

    @property
    def edges(self) -> list[EdgePath]:
        if self._edges is None:
            a = self.arrays
            points = list(zip(a.px.tolist(), a.py.tolist()))
            ids = a.ids
            bounds = a.pstart.tolist()
            self._edges = [
                EdgePath(ids[u], ids[v], k, t, tuple(points[bounds[e] : bounds[e + 1]]), rev)
                for e, (u, v, k, t, rev) in enumerate(
                    zip(a.edge_src.tolist(), a.edge_dst.tolist(), a.keys, a.tensors, a.reversed.tolist())
                )
            ]
        return self._edges

    @property
    def reversed_edges(self) -> list:
        """(source, target, key) of every edge drawn against the flow."""
        if self._reversed_edges is None:
            a = self.arrays
            self._reversed_edges = [
                (a.ids[int(a.edge_src[e])], a.ids[int(a.edge_dst[e])], a.keys[e]) for e in np.flatnonzero(a.reversed)
            ]
        return self._reversed_edges

    def _key(self) -> tuple:
        return (self.nodes, self.edges, self.crossings, self.width, self.height, self.reversed_edges)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaces

    def __repr__(self) -> str:
        n = len(self.arrays.ids) if self.arrays is not None else len(self.nodes)
        return f"<Layout {n} nodes, {self.crossings} crossings, {self.width:.0f} x {self.height:.0f}>"

    def to_json(self) -> dict:
        """Plain JSON-able dict (ids as strings), the shape of ``tflite-viewer layout --json``."""
        if self.arrays is None:
            nodes = [(b.id, b.kind, b.x, b.y, b.width, b.height, b.layer) for b in self.nodes.values()]
            edges = [(e.source, e.target, e.tensor, [[x, y] for x, y in e.points]) for e in self.edges]
        else:
            a = self.arrays
            nodes = zip(a.ids, a.kinds, a.x.tolist(), a.y.tolist(), a.w.tolist(), a.h.tolist(), a.layer.tolist())
            xy = np.stack([a.px, a.py], axis=1).tolist()
            bounds = a.pstart.tolist()
            ids = a.ids
            edges = [
                (ids[u], ids[v], t, xy[bounds[e] : bounds[e + 1]])
                for e, (u, v, t) in enumerate(zip(a.edge_src.tolist(), a.edge_dst.tolist(), a.tensors))
            ]
        return {
            "nodes": [
                {"id": str(i), "kind": k, "x": x, "y": y, "width": w, "height": h, "layer": r}
                for i, k, x, y, w, h, r in nodes
            ],
            "edges": [
                {"source": str(u), "target": str(v), "tensor": t, "points": pts} for u, v, t, pts in edges
            ],
            "crossings": int(self.crossings),
            "width": self.width,
            "height": self.height,
        }


# --------------------------------------------------------------------------------------
# Stage 0: the graph as arrays


@dataclass
class _Graph:
    """The networkx graph flattened to index arrays, in the graph's own order."""

    ids: list
    kinds: list[str]
    widths: np.ndarray
    heights: np.ndarray
    src: np.ndarray  # per edge, node index
    dst: np.ndarray
    keys: list
    tensors: list

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def m(self) -> int:
        return len(self.keys)


def _extract(graph: nx.Graph, size: SizeFn | None) -> _Graph:
    """One pass over nodes and one over edges; everything later works on the arrays."""
    size = size or default_size
    ids: list = []
    kinds: list[str] = []
    dims: list[tuple[float, float]] = []
    for node, attrs in graph.nodes(data=True):
        ids.append(node)
        kinds.append(attrs.get("kind", "op"))
        dims.append(size(node, attrs))
    index = {node: i for i, node in enumerate(ids)}
    src: list[int] = []
    dst: list[int] = []
    keys: list = []
    tensors: list = []
    if graph.is_multigraph():
        edge_iter: Iterable = graph.edges(keys=True, data="tensor")
    else:
        edge_iter = ((u, v, t, t) for u, v, t in graph.edges(data="tensor"))
    for u, v, k, t in edge_iter:
        src.append(index[u])
        dst.append(index[v])
        keys.append(k)
        tensors.append(t)
    wh = np.asarray(dims, dtype=np.float64).reshape(-1, 2)
    return _Graph(
        ids=ids,
        kinds=kinds,
        widths=np.ascontiguousarray(wh[:, 0]),
        heights=np.ascontiguousarray(wh[:, 1]),
        src=np.asarray(src, dtype=np.int64),
        dst=np.asarray(dst, dtype=np.int64),
        keys=keys,
        tensors=tensors,
    )


def _csr(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Group item indices by ``keys`` (stable): returns (start offsets [n+1], items)."""
    items = np.argsort(keys, kind="stable")
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=start[1:])
    return start, items


# --------------------------------------------------------------------------------------
# Stage 1: cycle breaking


@dataclass
class _Acyclic:
    """Result of the DFS: which edges are reversed and a topological order."""

    back: np.ndarray  # bool per edge: reversed to break a cycle
    loop: np.ndarray  # bool per edge: self loop, not part of the layering
    topo: np.ndarray  # node indices, a topological order of the acyclic graph


def _break_cycles(g: _Graph) -> _Acyclic:
    """DFS from the sources (then any unvisited node), in node order and edge order.

    Edges into a node still on the DFS stack are back edges; reversing them leaves a DAG
    whose topological order is the reverse DFS postorder. Starting at sources keeps the
    reversed edges at the "end" of a cycle, where a reader expects the feedback edge.

    Most graphs need no DFS: a TFLite subgraph lists its operators in execution order, so
    the sources followed by the other nodes in graph order is already topological. That
    is checked on all edges at once; only a graph that fails the check (a cycle, or nodes
    out of order) is walked. For a DAG nothing is reversed either way, and the ranks do
    not depend on which topological order is used.
    """
    n, m = g.n, g.m
    loop = g.src == g.dst
    indeg = np.bincount(g.dst[~loop], minlength=n)
    order = np.lexsort((np.arange(n), indeg > 0))
    place = np.empty(n, dtype=np.int64)
    place[order] = np.arange(n)
    if np.all(place[g.src[~loop]] < place[g.dst[~loop]]):
        return _Acyclic(back=np.zeros(m, dtype=bool), loop=loop, topo=order.astype(np.int64))
    start_arr, items_arr = _csr(g.src, n)
    start = start_arr.tolist()
    out_edges = items_arr.tolist()
    dst = g.dst.tolist()
    roots = np.concatenate([np.flatnonzero(indeg == 0), np.arange(n)]).tolist()

    state = [0] * n  # 0 unseen, 1 on the stack, 2 finished
    back = [False] * m
    post: list[int] = []
    for root in roots:
        if state[root]:
            continue
        state[root] = 1
        stack = [[root, start[root]]]
        while stack:
            frame = stack[-1]
            u, i = frame
            end = start[u + 1]
            while i < end:
                e = out_edges[i]
                i += 1
                v = dst[e]
                sv = state[v]
                if sv == 0:
                    frame[1] = i
                    state[v] = 1
                    stack.append([v, start[v]])
                    break
                if sv == 1:
                    back[e] = True
            else:
                state[u] = 2
                post.append(u)
                stack.pop()
    back_arr = np.asarray(back, dtype=bool) & ~loop if m else np.zeros(0, dtype=bool)
    return _Acyclic(
        back=back_arr,
        loop=loop,
        topo=np.asarray(post[::-1], dtype=np.int64),
    )


def _upward_preorder(n: int, up: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """DFS discovery order walking edges backwards, from the sinks (outputs) up.

    Used only to seed the crossing reduction. Walking up from the outputs, an ADD reaches
    its trunk input before its skip input (TFLite lists the running tensor first), so
    the trunk gets consecutive numbers and skips are numbered where they rejoin it; on
    the synthetic residual graphs this start gives about a fifth fewer crossings after
    the sweeps than a DFS from the inputs.
    """
    start_arr, items = _csr(lo, n)
    start = start_arr.tolist()
    uppers = up[items].tolist()
    has_out = np.bincount(up, minlength=n) > 0
    roots = np.concatenate([np.flatnonzero(~has_out), np.arange(n)]).tolist()
    pre = [-1] * n
    counter = 0
    for root in roots:
        if pre[root] >= 0:
            continue
        stack = [root]
        while stack:
            v = stack.pop()
            if pre[v] >= 0:
                continue
            pre[v] = counter
            counter += 1
            a, b = start[v], start[v + 1]
            stack.extend(u for u in reversed(uppers[a:b]) if pre[u] < 0)
    return np.asarray(pre, dtype=np.int64)


# --------------------------------------------------------------------------------------
# Stage 2: ranks


def _assign_ranks(
    n: int,
    up: np.ndarray,
    lo: np.ndarray,
    topo: np.ndarray,
    movable: np.ndarray,
) -> np.ndarray:
    """Longest path from the sources, then pull fan-out nodes down toward their consumers.

    ``up -> lo`` are the acyclic layering edges. A node that moves down by one layer makes
    its out-edges shorter and its in-edges longer, so only nodes with more out- than
    in-edges (``movable``, e.g. ops fed only by constants) are pulled down, in reverse
    topological order so successors are final first. Empty layers are squeezed out.
    """
    rank = [0] * n
    if len(up):
        topo_pos = np.empty(n, dtype=np.int64)
        topo_pos[topo] = np.arange(n)
        order = np.argsort(topo_pos[lo], kind="stable")
        for u, v in zip(up[order].tolist(), lo[order].tolist()):
            r = rank[u] + 1
            if r > rank[v]:
                rank[v] = r
        cand = topo[movable[topo]][::-1].tolist()
        if cand:
            start_arr, items = _csr(up, n)
            start = start_arr.tolist()
            succ = lo[items].tolist()
            for v in cand:
                a, b = start[v], start[v + 1]
                if a == b:
                    continue
                r = min(rank[s] for s in succ[a:b]) - 1
                if r > rank[v]:
                    rank[v] = r
    ranks = np.asarray(rank, dtype=np.int64)
    if n:
        _, ranks = np.unique(ranks, return_inverse=True)
    return ranks.reshape(-1).astype(np.int64)


# --------------------------------------------------------------------------------------
# Stage 3: the proper layered graph (dummy nodes)


@dataclass
class _Hierarchy:
    """Real nodes ``0..n-1`` plus dummies ``n..N-1``; every segment joins adjacent layers."""

    n: int
    layer: np.ndarray  # per node (real and dummy)
    n_layers: int
    seg_up: np.ndarray  # per segment: node in the upper layer
    seg_lo: np.ndarray  # per segment: node in the lower layer
    edge_up: np.ndarray  # per layering edge: upper end node
    edge_lo: np.ndarray  # per layering edge: lower end node
    dummy_edge: np.ndarray  # per dummy: index of the layering edge it belongs to
    edge_first_dummy: np.ndarray  # per layering edge: first dummy node id
    edge_span: np.ndarray  # per layering edge: layers spanned (>= 1)

    @property
    def size(self) -> int:
        return len(self.layer)


def _split_long_edges(n: int, rank: np.ndarray, up: np.ndarray, lo: np.ndarray) -> _Hierarchy:
    """Replace each edge spanning k layers by a chain of k-1 dummies and k segments."""
    span = rank[lo] - rank[up]
    n_dummy = span - 1
    total_dummies = int(n_dummy.sum())
    first = n + np.cumsum(n_dummy) - n_dummy
    dummy_edge = np.repeat(np.arange(len(up)), n_dummy)
    dummy_step = np.arange(total_dummies) - np.repeat(first - n, n_dummy)
    layer = np.concatenate([rank, rank[up][dummy_edge] + 1 + dummy_step])

    seg_edge = np.repeat(np.arange(len(up)), span)
    seg_start = np.cumsum(span) - span
    j = np.arange(int(span.sum())) - np.repeat(seg_start, span)
    seg_up = np.where(j == 0, up[seg_edge], first[seg_edge] + j - 1)
    seg_lo = np.where(j == span[seg_edge] - 1, lo[seg_edge], first[seg_edge] + j)
    n_layers = int(rank.max()) + 1 if n else 0
    return _Hierarchy(
        n=n,
        layer=layer.astype(np.int64),
        n_layers=n_layers,
        seg_up=seg_up.astype(np.int64),
        seg_lo=seg_lo.astype(np.int64),
        edge_up=up,
        edge_lo=lo,
        dummy_edge=dummy_edge,
        edge_first_dummy=first,
        edge_span=span,
    )


# --------------------------------------------------------------------------------------
# Crossing counting


def _grouped_inversions(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Inversions of ``values`` inside each run of equal ``group``, per group.

    ``group`` must be sorted. Bottom-up merge sort done for all groups at once: at level
    ``w`` each right block counts, with one ``searchsorted``, the elements of its sorted
    left sibling that are strictly greater, then sibling pairs are merged by one global
    sort (pair ids increase along the array, so the sort never mixes pairs). Only
    log2(largest group) levels are needed, so narrow layers cost a few array passes.
    """
    out = np.zeros(n_groups, dtype=np.int64)
    total = len(values)
    if total < 2:
        return out
    run_start = np.flatnonzero(np.concatenate([[True], group[1:] != group[:-1]]))
    run_size = np.diff(np.concatenate([run_start, [total]]))
    largest = int(run_size.max())
    if largest < 2:
        return out
    small = run_size <= _PAIRWISE_MAX
    if small.any():
        # Narrow groups (the usual case: deep graphs have a few segments per layer pair)
        # compare every pair directly, which is a few array passes instead of log2 levels.
        in_small = np.repeat(small & (run_size >= 2), run_size)
        out += _pairwise_inversions(group[in_small], values[in_small], n_groups)
        keep = np.repeat(~small, run_size)
        if not keep.any():
            return out
        run_size = run_size[~small]
        largest = int(run_size.max())
    else:
        keep = np.repeat(run_size >= 2, run_size)
        run_size = run_size[run_size >= 2]
    if not keep.all():
        group, values = group[keep], values[keep]
        run_start = np.cumsum(run_size) - run_size
    if values.dtype.kind in "iu" and values.min() >= 0:
        vals = values.astype(np.int64)
    else:  # ranks keep order and ties, and make the keys below small integers
        vals = np.unique(values, return_inverse=True)[1].reshape(-1).astype(np.int64)
    span = int(vals.max()) + 1
    local = np.arange(len(vals)) - np.repeat(run_start, run_size)
    run_id = np.repeat(np.arange(len(run_size), dtype=np.int64), run_size)
    w = 1
    while w < largest:
        block = local // w
        right = (block & 1).astype(bool)
        pairs_per_run = (largest + 2 * w - 1) // (2 * w)
        pair = run_id * pairs_per_run + (block >> 1)
        key = pair * span + vals
        left_keys = key[~right]
        right_keys = key[right]
        hi = np.searchsorted(left_keys, (pair[right] + 1) * span, side="left")
        lo = np.searchsorted(left_keys, right_keys, side="right")
        out += np.bincount(group[right], weights=hi - lo, minlength=n_groups).astype(np.int64)
        vals = np.sort(key) - pair * span
        w *= 2
    return out


def _pairwise_inversions(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Inversions per group by comparing every pair inside each run (``group`` sorted)."""
    out = np.zeros(n_groups, dtype=np.int64)
    total = len(values)
    if total < 2:
        return out
    run_start = np.flatnonzero(np.concatenate([[True], group[1:] != group[:-1]]))
    run_end = np.repeat(np.concatenate([run_start[1:], [total]]), np.diff(np.concatenate([run_start, [total]])))
    later = run_end - np.arange(total) - 1  # elements after i in its run
    i = np.repeat(np.arange(total), later)
    j = i + 1 + np.arange(len(i)) - np.repeat(np.cumsum(later) - later, later)
    inverted = values[i] > values[j]
    return out + np.bincount(group[i][inverted], minlength=n_groups)


def _pair_crossings(h: _Hierarchy, pos: np.ndarray, layer_start: np.ndarray, width_max: int) -> np.ndarray:
    """Crossings between each pair of adjacent layers for the order ``pos``.

    Two segments between the same layers cross when their upper ends and lower ends are in
    opposite orders; segments sharing an end never count. Sorting by (upper end, lower end)
    turns this into counting inversions of the lower ends within each layer pair.
    """
    n_pairs = max(h.n_layers - 1, 0)
    if len(h.seg_up) < 2 or n_pairs == 0:
        return np.zeros(n_pairs, dtype=np.int64)
    up_rank = layer_start[h.layer[h.seg_up]] + pos[h.seg_up]
    lo_pos = pos[h.seg_lo]
    order = np.argsort(up_rank * (width_max + 1) + lo_pos, kind="stable")
    return _grouped_inversions(h.layer[h.seg_up][order], lo_pos[order], n_pairs)


# --------------------------------------------------------------------------------------
# Stage 4: crossing reduction


@dataclass
class _Ordering:
    """Positions within layers and the per-layer-pair crossing counts they give."""

    pos: np.ndarray
    crossings: np.ndarray


class _Sweeper:
    """Barycenter sweeps over all layers, many layers per numpy call.

    A classic down sweep reorders layer 1, then 2, ... each by the barycenters of its
    (already reordered) upper neighbours; that chain of dependencies is what carries a
    good decision deep into the graph, but it costs a Python step per layer. Here the
    layers are cut into chunks of ``stride`` consecutive layers and the i-th layer of
    every chunk is reordered in the same vectorized step, so a sweep takes ``stride``
    steps whatever the depth, and still propagates sequentially inside each chunk. The
    chunk boundaries move by half a chunk from one sweep to the next, so no layer pair is
    always on a boundary. Graphs with at most ``stride`` layers get exact classic sweeps.
    """

    def __init__(self, h: _Hierarchy, stride: int = 64) -> None:
        self.h = h
        self.layer_size = np.bincount(h.layer, minlength=h.n_layers)
        self.layer_start = np.cumsum(self.layer_size) - self.layer_size
        self.width_max = int(self.layer_size.max()) if h.n_layers else 0
        self.stride = max(1, min(stride, h.n_layers))

    def crossings(self, pos: np.ndarray) -> np.ndarray:
        return _pair_crossings(self.h, pos, self.layer_start, self.width_max)

    def initial(self, key: np.ndarray, tiebreak: np.ndarray) -> _Ordering:
        """Order each layer by ``key`` then ``tiebreak``."""
        perm = np.lexsort((tiebreak, key, self.h.layer))
        pos = np.empty(self.h.size, dtype=np.int64)
        pos[perm] = np.arange(self.h.size) - np.repeat(self.layer_start, self.layer_size)
        return _Ordering(pos, self.crossings(pos))

    def sweep(self, pos: np.ndarray, downward: bool, shift: int) -> np.ndarray:
        """One full down (or up) sweep; returns the new positions."""
        h, stride = self.h, self.stride
        pos = pos.copy()
        # Nodes grouped by step (layer index within its chunk), then by layer.
        step_of = (h.layer - shift) % stride
        nodes = np.lexsort((h.layer, step_of))
        node_step = step_of[nodes]
        node_layer = h.layer[nodes]
        bounds = np.searchsorted(node_step, np.arange(stride + 1))
        local = np.empty(h.size, dtype=np.int64)
        local[nodes] = np.arange(h.size) - bounds[node_step]
        first_of_layer = np.flatnonzero(np.concatenate([[True], node_layer[1:] != node_layer[:-1]]))
        run = np.diff(np.concatenate([first_of_layer, [h.size]]))
        slot = np.arange(h.size) - np.repeat(first_of_layer, run)  # position inside its layer
        # Segments grouped by the step of the node they move (lower end when sweeping down).
        me, nbr = (h.seg_lo, h.seg_up) if downward else (h.seg_up, h.seg_lo)
        seg_step = step_of[me]
        segs = np.argsort(seg_step, kind="stable")
        seg_bounds = np.searchsorted(seg_step[segs], np.arange(stride + 1))
        seg_local = local[me[segs]]
        seg_nbr = nbr[segs]
        deg = np.bincount(me, minlength=h.size)[nodes]
        has_nbr = deg > 0
        deg_safe = np.maximum(deg, 1).astype(np.float64)

        steps = range(stride) if downward else range(stride - 1, -1, -1)
        for i in steps:
            a, b = bounds[i], bounds[i + 1]
            if b - a < 2:
                continue
            sa, sb = seg_bounds[i], seg_bounds[i + 1]
            group = nodes[a:b]
            current = pos[group]
            total = np.bincount(seg_local[sa:sb], weights=pos[seg_nbr[sa:sb]], minlength=b - a)
            bary = np.where(has_nbr[a:b], total / deg_safe[a:b], current)
            order = np.lexsort((current, bary, node_layer[a:b]))
            pos[group[order]] = slot[a:b]
        return pos


class _Transposer:
    """dot's "transpose" step, vectorized: swap neighbours in a layer when that helps.

    Swapping two adjacent nodes a, b changes only the crossings between a's edges and b's
    edges, so the gain of every swap is known from their neighbours' positions alone.
    Disjoint slot pairs (every other slot) in every other layer do not interact, so each
    of the four (layer parity, slot parity) phases swaps all its profitable pairs at once.
    After the first round only layers next to a swap are looked at again.
    """

    def __init__(self, h: _Hierarchy, layer_start: np.ndarray) -> None:
        self.h = h
        size = h.size
        up_start, up_items = _csr(h.seg_lo, size)
        lo_start, lo_items = _csr(h.seg_up, size)
        self.sides = ((up_start, h.seg_up[up_items]), (lo_start, h.seg_lo[lo_items]))
        self.layer_start = layer_start
        # Left slots of the candidate pairs of each phase; slots never change, nodes do.
        slot_layer = np.repeat(np.arange(h.n_layers), np.bincount(h.layer, minlength=h.n_layers))
        in_layer = np.arange(size) - layer_start[slot_layer]
        pair_ok = np.zeros(size, dtype=bool)
        pair_ok[:-1] = slot_layer[:-1] == slot_layer[1:]
        self.phases = [
            np.flatnonzero(pair_ok & (slot_layer % 2 == lp) & (in_layer % 2 == sp)) for lp in (0, 1) for sp in (0, 1)
        ]
        self.slot_layer = slot_layer

    def _pair_cross(self, a: np.ndarray, b: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Crossings among a's and b's edges with a left of b (now) and with b left of a."""
        now = np.zeros(len(a), dtype=np.int64)
        swapped = np.zeros(len(a), dtype=np.int64)
        for start, nbr in self.sides:
            sa, sb = start[a], start[b]
            combos = (start[a + 1] - sa) * (start[b + 1] - sb)
            pairs = np.flatnonzero(combos)
            if len(pairs) == 0:
                continue
            combos = combos[pairs]
            db = (start[b + 1] - sb)[pairs]
            total = int(combos.sum())
            pair = np.repeat(pairs, combos)
            r = np.arange(total) - np.repeat(np.cumsum(combos) - combos, combos)
            width = np.repeat(db, combos)
            pa = pos[nbr[sa[pair] + r // width]]
            pb = pos[nbr[sb[pair] + r % width]]
            now += np.bincount(pair, pa > pb, len(a)).astype(np.int64)
            swapped += np.bincount(pair, pa < pb, len(a)).astype(np.int64)
        return now, swapped

    def run(self, pos: np.ndarray, rounds: int, equal_ok: bool = False) -> np.ndarray:
        """Up to ``rounds`` passes; ``equal_ok`` also swaps crossing pairs that stay equal.

        Equal swaps change nothing by themselves but let the next sweep see a different
        order, which is how dot escapes plateaus.
        """
        h = self.h
        pos = pos.copy()
        node_at = np.empty(h.size, dtype=np.int64)
        node_at[self.layer_start[h.layer] + pos] = np.arange(h.size)
        active = np.ones(h.n_layers + 1, dtype=bool)
        for round_ in range(rounds):
            changed = np.zeros(h.n_layers + 1, dtype=bool)
            for left in self.phases:
                left = left[active[self.slot_layer[left]]]
                if len(left) == 0:
                    continue
                a, b = node_at[left], node_at[left + 1]
                now, after = self._pair_cross(a, b, pos)
                swap = after < now
                if equal_ok and round_ == 0:
                    swap |= (after == now) & (now > 0)
                if not swap.any():
                    continue
                a, b, left = a[swap], b[swap], left[swap]
                pos[a] += 1
                pos[b] -= 1
                node_at[left], node_at[left + 1] = b, a
                changed[self.slot_layer[left]] = True
            if not changed.any():
                break
            active = changed | np.roll(changed, 1) | np.roll(changed, -1)
        return pos


def _reduce_crossings(
    h: _Hierarchy,
    first_seen: np.ndarray,
    sweeps: int,
    dummies_follow_lower: bool = True,
    stride: int = _SWEEP_STRIDE,
) -> _Ordering:
    """Initial order from a DFS, then alternating down and up sweeps with transposition.

    The initial order places nodes by ``first_seen`` and each dummy right after its edge's
    lower end (or upper end). Each iteration is one sweep followed by transposition
    (accepting equal swaps every other time, as dot does). After every iteration the
    crossings are counted (vectorized) and the best order seen is kept, so the result is
    never worse than the initial order.
    """
    sweeper = _Sweeper(h, stride)
    pre = first_seen.astype(np.float64)
    anchor_end = h.edge_lo if dummies_follow_lower else h.edge_up
    key = np.concatenate([pre, pre[anchor_end[h.dummy_edge]] + 0.5])
    tiebreak = np.concatenate([np.full(h.n, -1, dtype=np.int64), h.dummy_edge])
    best = sweeper.initial(key, tiebreak)
    if h.n_layers < 2 or sweeper.width_max < 2 or sweeps <= 0:
        return best
    transposer = _Transposer(h, sweeper.layer_start)
    best_total = int(best.crossings.sum())
    pos = best.pos
    for it in range(2 * sweeps):
        if best_total == 0:
            break
        pos = sweeper.sweep(pos, it % 2 == 0, (it // 2 * sweeper.stride) // 2)
        pos = transposer.run(pos, _TRANSPOSE_ROUNDS, equal_ok=it % 4 < 2)
        crossings = sweeper.crossings(pos)
        total = int(crossings.sum())
        if total < best_total:
            best, best_total = _Ordering(pos, crossings), total
    if best_total > 0:
        pos = transposer.run(best.pos, _TRANSPOSE_ROUNDS)
        best = _Ordering(pos, sweeper.crossings(pos))
    return best


# --------------------------------------------------------------------------------------
# Stage 5: x coordinates


def _segmented_cummax(values: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Running maximum restarting at every new ``group`` (``group`` nondecreasing, >= 0).

    Adding ``group * span`` lifts each group above everything before it, so one global
    ``maximum.accumulate`` never carries a value across a group boundary. Integer input
    keeps it exact.
    """
    if len(values) == 0:
        return values
    span = int(values.max()) - int(values.min()) + 1
    if (int(group[-1]) + 1) * span >= 2**62:  # would overflow: fall back to a loop per group
        out = values.copy()
        bounds = np.flatnonzero(np.diff(group)) + 1
        for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(values)]):
            out[a:b] = np.maximum.accumulate(values[a:b])
        return out
    offset = group * span
    return np.maximum.accumulate(values + offset) - offset


def _median_per_group(group: np.ndarray, value: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Among ``candidates`` (indices), keep the lower median by ``value`` of each ``group``."""
    if len(candidates) == 0:
        return candidates
    order = candidates[np.lexsort((value[candidates], group[candidates]))]
    g = group[order]
    first = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]]))
    count = np.diff(np.concatenate([first, [len(order)]]))
    return order[first + (count - 1) // 2]


class _Aligner:
    """Vertical alignment: which segments become straight vertical lines.

    Like the first phase of Brandes-Koepf, each node may align with one upper neighbour
    and each node with one lower neighbour, aligned segments must not cross, and the
    aligned chains ("blocks") are then placed as rigid vertical lines. Candidates are
    taken by priority class - real-to-real segments first (the model's trunk stays
    straight even where a skip edge crosses it), then dummy-to-dummy (long edges stay
    straight), then the rest - and inside a class by median (a fan-out aligns with its
    middle child, a fan-in with its middle parent). Within one class and layer pair,
    non-crossing candidates are picked left to right by a running maximum, so every step
    is a vectorized pass over all layers.
    """

    def __init__(self, h: _Hierarchy, pos: np.ndarray, width_max: int) -> None:
        self.h = h
        self.pos = pos
        self.span = width_max + 1
        size = h.size
        self.used_up = np.zeros(size, dtype=bool)  # node already aligned with a lower one
        self.used_lo = np.zeros(size, dtype=bool)  # node already aligned with an upper one
        self.key_accepted = np.zeros(0, dtype=np.int64)  # (pair, upper pos) of aligned segments
        self.lo_accepted = np.zeros(0, dtype=np.int64)
        self.accepted = np.zeros(0, dtype=np.int64)

    def _compatible(self, segs: np.ndarray) -> np.ndarray:
        """Candidates whose ends are free and that cross no aligned segment."""
        h, pos = self.h, self.pos
        u, v = h.seg_up[segs], h.seg_lo[segs]
        ok = ~self.used_up[u] & ~self.used_lo[v]
        if len(self.key_accepted) == 0 or not ok.any():
            return segs[ok]
        pair = h.layer[u]
        key = pair * self.span + pos[u]
        i = np.searchsorted(self.key_accepted, key)
        n_acc = len(self.key_accepted)
        # Aligned segments never cross each other, so checking the nearest one on each
        # side (by upper position) in the same layer pair is enough.
        left = i - 1
        has_left = left >= 0
        left_c = np.clip(left, 0, n_acc - 1)
        has_left &= self.key_accepted[left_c] // self.span == pair
        ok &= ~has_left | (self.lo_accepted[left_c] < pos[v])
        right_c = np.clip(i, 0, n_acc - 1)
        has_right = (i < n_acc) & (self.key_accepted[right_c] // self.span == pair)
        ok &= ~has_right | (self.lo_accepted[right_c] > pos[v])
        return segs[ok]

    def _records(self, segs: np.ndarray) -> np.ndarray:
        """Greedy left-to-right non-crossing subset: upper ends strictly increasing."""
        if len(segs) == 0:
            return segs
        h, pos = self.h, self.pos
        pair = h.layer[h.seg_up[segs]]
        segs = segs[np.lexsort((pos[h.seg_lo[segs]], pair))]
        pair = h.layer[h.seg_up[segs]]
        p = pos[h.seg_up[segs]]
        running = _segmented_cummax(p, pair)
        before = np.concatenate([[-1], running[:-1]])
        new_pair = np.concatenate([[True], pair[1:] != pair[:-1]])
        before[new_pair] = -1
        return segs[p > before]

    def _accept(self, segs: np.ndarray) -> None:
        h, pos = self.h, self.pos
        self.used_up[h.seg_up[segs]] = True
        self.used_lo[h.seg_lo[segs]] = True
        acc = np.concatenate([self.accepted, segs])
        key = h.layer[h.seg_up[acc]] * self.span + pos[h.seg_up[acc]]
        order = np.argsort(key, kind="stable")
        self.accepted = acc[order]
        self.key_accepted = key[order]
        self.lo_accepted = pos[h.seg_lo[self.accepted]]

    def align(self) -> np.ndarray:
        """Per node, the upper node it is aligned with, or -1."""
        h, pos = self.h, self.pos
        dummies = (h.seg_up >= h.n).astype(np.int64) + (h.seg_lo >= h.n)
        for cls in (0, 2, 1):  # both ends real, both dummies, mixed
            segs = np.flatnonzero(dummies == cls)
            segs = _median_per_group(h.seg_lo, pos[h.seg_up], segs)  # median parent
            segs = _median_per_group(h.seg_up, pos[h.seg_lo], segs)  # median child
            self._accept(self._records(self._compatible(segs)))
        upper = np.full(h.size, -1, dtype=np.int64)
        upper[h.seg_lo[self.accepted]] = h.seg_up[self.accepted]
        return upper


def _block_roots(upper: np.ndarray) -> np.ndarray:
    """Topmost node of each node's aligned chain, by pointer jumping (log depth passes)."""
    root = np.where(upper >= 0, upper, np.arange(len(upper)))
    while True:
        nxt = root[root]
        if np.array_equal(nxt, root):
            return root
        root = nxt


class _Slots:
    """Layer-major view of an ordering: slot ``i`` holds node ``perm[i]``.

    In fixed point, ``offset[i]`` is the least distance from the first slot of its layer
    that the gaps allow (boxes ``node_gap`` apart, dummies half that from each other), so
    a placement is valid exactly when ``x - offset`` is nondecreasing inside every layer.
    """

    def __init__(self, h: _Hierarchy, pos: np.ndarray, widths: np.ndarray, node_gap: float) -> None:
        self.h = h
        size = h.size
        self.layer_size = np.bincount(h.layer, minlength=h.n_layers)
        self.layer_start = np.cumsum(self.layer_size) - self.layer_size
        self.perm = np.empty(size, dtype=np.int64)
        self.perm[self.layer_start[h.layer] + pos] = np.arange(size)
        self.layer = h.layer[self.perm]
        dummy = self.perm >= h.n
        w = widths[self.perm]
        gap = np.where(dummy[1:] & dummy[:-1], node_gap / 2, node_gap)
        sep = np.zeros(size, dtype=np.int64)
        same_layer = self.layer[1:] == self.layer[:-1]
        sep[1:] = np.where(same_layer, np.ceil(((w[1:] + w[:-1]) / 2 + gap) * _FIXED), 0)
        c = np.cumsum(sep)
        self.offset = c - np.repeat(c[self.layer_start], self.layer_size)
        last = self.offset[self.layer_start + self.layer_size - 1] if size else self.offset
        self.packed = self.offset - np.repeat(last // 2, self.layer_size)  # centred rows

    def feasible(self, x_slots: np.ndarray) -> bool:
        y = x_slots - self.offset
        same = self.layer[1:] == self.layer[:-1]
        return bool(np.all(y[1:][same] >= y[:-1][same]))


def _split_by_side(block: np.ndarray, side: np.ndarray, layer: np.ndarray) -> np.ndarray:
    """Cut blocks where their side of the layer anchor changes (left, anchor, right).

    A block left of the anchor in one layer and right of it in another would have to be
    pushed both ways at once (it crosses the trunk, so it bends there anyway). A trunk
    piece that stops being the anchor where it runs into a bigger piece would drag its
    whole length sideways when pushed there; cut, only the stray end moves. Returns dense
    block ids per node; ``side`` is per node (-1, 0, +1).
    """
    order = np.lexsort((layer, block))  # members of each block, top to bottom
    b, sd = block[order], side[order]
    new_block = np.concatenate([[True], b[1:] != b[:-1]])
    flip = ~new_block & (sd != np.concatenate([[0], sd[:-1]]))
    ids = np.empty(len(block), dtype=np.int64)
    ids[order] = np.cumsum(new_block | flip) - 1
    return ids


class _BlockPlacer:
    """Moves rigid blocks toward their neighbours, then restores the gaps.

    Targets: the weighted mean x of the nodes each block is joined to by segments outside
    the block (weights 1, 2, 8 by number of dummy ends, as in dot), plus a pull toward
    x = 0 in proportion to block size that stops a long graph from drifting sideways
    piece by piece.

    Making targets feasible is anchored: in every layer the node of highest priority
    (member of the block with the most real nodes, usually the model's trunk) stays at
    its target, the nodes to its right are pushed right by a running max and those to
    its left are pushed left by a running min. Blocks are cut where their side changes
    (:func:`_split_by_side`), so a block takes the most pushed of its members in one
    direction; that can push other layers, so this repeats until nothing moves (a few
    passes), and a fixpoint is a valid placement. Blocks stay rigid, and the trunk never
    gets shoved sideways by small blocks.
    """

    def __init__(self, slots: _Slots, block: np.ndarray, priority: np.ndarray, max_push: int = 64) -> None:
        h = slots.h
        self.slots = slots
        self.max_push = max_push
        size = h.size
        slot = np.arange(size)
        best = np.lexsort((slot, -priority[slots.perm], slots.layer))
        anchor = best[slots.layer_start]
        side = np.sign(slot - anchor[slots.layer])  # per slot: left of, at, right of the anchor
        self.right_slots = np.flatnonzero(side >= 0)
        self.left_slots = np.flatnonzero(side <= 0)[::-1]

        self.block = _split_by_side(block, side[np.argsort(slots.perm)], slots.h.layer)
        self.n_blocks = int(self.block.max()) + 1
        self.slot_block = self.block[slots.perm]
        self.by_block = np.argsort(self.slot_block, kind="stable")
        counts = np.bincount(self.slot_block, minlength=self.n_blocks)
        self.block_start = np.cumsum(counts) - counts
        self.block_count = counts
        self.pushed_right = np.bincount(self.slot_block, side > 0, self.n_blocks) > 0

        bu, bl = self.block[h.seg_up], self.block[h.seg_lo]
        external = bu != bl
        self.ext_u, self.ext_l = h.seg_up[external], h.seg_lo[external]
        self.ext_bu, self.ext_bl = bu[external], bl[external]
        weight = _SEGMENT_WEIGHTS[(self.ext_u >= h.n).astype(np.int64) + (self.ext_l >= h.n)]
        self.ext_w = weight
        self.pull = np.bincount(self.ext_bu, weight, self.n_blocks) + np.bincount(self.ext_bl, weight, self.n_blocks)
        self.centre_pull = _CENTRE_PULL * counts

    def spread(self, y: np.ndarray) -> np.ndarray:
        """Per-layer anchored projection of ``y = x - offset`` (slot order)."""
        layer = self.slots.layer
        out = y.copy()
        r = self.right_slots
        out[r] = _segmented_cummax(y[r], layer[r])
        lft = self.left_slots
        out[lft] = -_segmented_cummax(-y[lft], self.slots.h.n_layers - 1 - layer[lft])
        return out

    def project(self, xb: np.ndarray) -> tuple[np.ndarray, bool]:
        """Rigid-block version of :meth:`spread`, iterated until no block moves."""
        offset = self.slots.offset
        for _ in range(self.max_push):
            moved = self.spread(xb[self.slot_block] - offset) + offset
            ordered = moved[self.by_block]
            nxt = np.where(
                self.pushed_right,
                np.maximum.reduceat(ordered, self.block_start),
                np.minimum.reduceat(ordered, self.block_start),
            )
            if np.array_equal(nxt, xb):
                return xb, True
            xb = nxt
        return xb, False

    def targets(self, xb: np.ndarray) -> np.ndarray:
        """Where each block would like to be, given the others at ``xb``."""
        x = xb[self.block].astype(np.float64)
        pull = np.bincount(self.ext_bu, self.ext_w * x[self.ext_l], self.n_blocks) + np.bincount(
            self.ext_bl, self.ext_w * x[self.ext_u], self.n_blocks
        )
        weight = self.pull + self.centre_pull
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(weight > 0, pull / weight, xb)
        return np.rint(t).astype(np.int64)

    def run(self, x: np.ndarray, rounds: int) -> tuple[np.ndarray, bool]:
        """``rounds`` of pull + project from node positions ``x``; returns node positions."""
        start = np.add.reduceat(x[self.slots.perm][self.by_block], self.block_start) // self.block_count
        xb, ok = self.project(start)
        if not ok:
            return x, False
        for _ in range(rounds):
            nxt, ok = self.project(self.targets(xb))
            if not ok:
                break
            xb = nxt
        return xb[self.block], True


def _place_x(h: _Hierarchy, pos: np.ndarray, widths: np.ndarray, node_gap: float, rounds: int) -> np.ndarray:
    """Centre x of every node (real and dummy), in fixed-point units.

    Every aligned chain is a rigid block, so long edges and the trunk come out straight.
    Keeping a long edge straight where it must give way to a wide spot is also what the
    optimum of dot's objective does (a bend costs 8 per pixel, its two ends 2 each). A
    final per-layer spread guarantees the gaps even if block pushing ever fails to settle.
    """
    slots = _Slots(h, pos, widths, node_gap)
    x = np.empty(h.size, dtype=np.int64)
    x[slots.perm] = slots.packed
    if rounds <= 0 or h.size == 0:
        return x
    width_max = int(slots.layer_size.max())
    upper = _Aligner(h, pos, width_max).align()
    full = _block_roots(upper)
    # Anchors: blocks with the most real nodes (the trunk), then the longest.
    real = (np.arange(h.size) < h.n).astype(np.int64)
    priority = (np.bincount(full, real, h.size)[full].astype(np.int64) * (h.size + 1)
                + np.bincount(full, minlength=h.size)[full])
    placer = _BlockPlacer(slots, full, priority)
    x, _ = placer.run(x, rounds)
    if not slots.feasible(x[slots.perm]):
        x[slots.perm] = placer.spread(x[slots.perm] - slots.offset) + slots.offset
    return x


# --------------------------------------------------------------------------------------
# Stage 6: geometry


@dataclass
class _Frame:
    """Vertical geometry: per layer top/bottom; per real node its box."""

    layer_top: np.ndarray
    layer_bottom: np.ndarray
    box_x: np.ndarray
    box_y: np.ndarray
    height: float


def _frame(
    rank: np.ndarray,
    n_layers: int,
    cx: np.ndarray,
    widths: np.ndarray,
    heights: np.ndarray,
    layer_gap: float,
) -> _Frame:
    """Layer y = cumulative max heights + layer_gap; boxes centred vertically in their layer."""
    layer_h = np.zeros(n_layers)
    if len(rank):
        np.maximum.at(layer_h, rank, heights)
    step = layer_h + layer_gap
    top = np.cumsum(step) - step
    bottom = top + layer_h
    box_y = top[rank] + (layer_h[rank] - heights) / 2 if len(rank) else np.zeros(0)
    height = float(bottom[-1]) if n_layers else 0.0
    return _Frame(top, bottom, cx - widths / 2, box_y, height)


def _chain_points(
    h: _Hierarchy,
    cx: np.ndarray,
    fr: _Frame,
    heights: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat polyline points of every layering edge, drawn from its upper to its lower end.

    Per edge: upper box bottom-centre, a stub to the layer bottom when the box is shorter
    than its layer, the top and bottom of every dummy's layer at the dummy's x, a stub from
    the lower layer's top, the lower box top-centre. Every segment between two layers then
    runs from one layer's bottom line to the next one's top line, so crossings seen in the
    drawing are exactly the order inversions counted during crossing reduction.
    Returns x and y arrays and per-edge start offsets (length m+1).
    """
    up, lo, span = h.edge_up, h.edge_lo, h.edge_span
    n_dummy = span - 1
    rank = h.layer[: h.n]
    src_bottom = fr.box_y[up] + heights[up]
    stub_up = src_bottom < fr.layer_bottom[rank[up]]
    stub_lo = fr.box_y[lo] > fr.layer_top[rank[lo]]
    count = 2 + stub_up + stub_lo + 2 * n_dummy
    start = np.zeros(len(up) + 1, dtype=np.int64)
    np.cumsum(count, out=start[1:])
    px = np.empty(int(start[-1]))
    py = np.empty(int(start[-1]))
    s = start[:-1]
    px[s], py[s] = cx[up], src_bottom
    i = s[stub_up] + 1
    px[i], py[i] = cx[up[stub_up]], fr.layer_bottom[rank[up[stub_up]]]
    if len(h.dummy_edge):
        d = np.arange(h.n, h.size)
        e = h.dummy_edge
        j = d - h.edge_first_dummy[e]
        i = s[e] + 1 + stub_up[e] + 2 * j
        dl = h.layer[d]
        px[i], py[i] = cx[d], fr.layer_top[dl]
        px[i + 1], py[i + 1] = cx[d], fr.layer_bottom[dl]
    end = start[1:] - 1
    i = end[stub_lo] - 1
    px[i], py[i] = cx[lo[stub_lo]], fr.layer_top[rank[lo[stub_lo]]]
    px[end], py[end] = cx[lo], fr.box_y[lo]
    return px, py, start


def _assemble(
    g: _Graph,
    acyc: _Acyclic,
    h: _Hierarchy,
    edge_ids: np.ndarray,
    cx_all: np.ndarray,
    fr: _Frame,
    crossings: int,
    pad: float,
) -> Layout:
    """Flat arrays of boxes and polylines in the graph's node and edge order."""
    rank = h.layer[: g.n]
    left = float(min(fr.box_x.min() if g.n else 0.0, cx_all[g.n :].min() if h.size > g.n else math.inf))
    shift = -left if math.isfinite(left) else 0.0
    box_x = fr.box_x + shift
    cx_all = cx_all + shift
    fr = _Frame(fr.layer_top, fr.layer_bottom, box_x, fr.box_y, fr.height)
    px, py, start = _chain_points(h, cx_all, fr, g.heights)

    max_right = float((box_x + g.widths).max()) if g.n else 0.0
    if h.size > g.n:
        max_right = max(max_right, float(cx_all[g.n :].max()))

    # Per graph edge: its chain (layering edges) or the six points of a self loop.
    chain = np.full(g.m, -1, dtype=np.int64)
    chain[edge_ids] = np.arange(len(edge_ids))
    chain_len = np.diff(start)
    count = np.where(acyc.loop, 6, chain_len[np.maximum(chain, 0)] if len(chain_len) else 6)
    pstart = np.zeros(g.m + 1, dtype=np.int64)
    np.cumsum(count, out=pstart[1:])
    owner = np.repeat(np.arange(g.m), count)
    r = np.arange(int(pstart[-1])) - pstart[owner]
    out_x = np.empty(int(pstart[-1]))
    out_y = np.empty(int(pstart[-1]))
    on_chain = ~acyc.loop[owner]
    if on_chain.any():
        e = owner[on_chain]
        rr = r[on_chain]
        j = chain[e]
        src_i = start[j] + np.where(acyc.back[e], chain_len[j] - 1 - rr, rr)
        out_x[on_chain] = px[src_i]
        out_y[on_chain] = py[src_i]
    loops = np.flatnonzero(acyc.loop)
    if len(loops):
        v = g.src[loops]
        x, y, w, hh = box_x[v], fr.box_y[v], g.widths[v], g.heights[v]
        cx, bottom, right = x + w / 2, y + hh, x + w
        # out of the bottom, around the right side, into the top
        lx = np.stack([cx, cx, right + pad, right + pad, cx, cx], axis=1)
        ly = np.stack([bottom, bottom + pad, bottom + pad, y - pad, y - pad, y], axis=1)
        idx = pstart[loops][:, None] + np.arange(6)
        out_x[idx], out_y[idx] = lx, ly
        max_right = max(max_right, float((right + pad).max()))
    arrays = LayoutArrays(
        ids=g.ids,
        kinds=g.kinds,
        x=box_x,
        y=fr.box_y,
        w=g.widths,
        h=g.heights,
        layer=rank,
        edge_src=g.src,
        edge_dst=g.dst,
        keys=g.keys,
        tensors=g.tensors,
        reversed=acyc.back | acyc.loop,
        px=out_x,
        py=out_y,
        pstart=pstart,
    )
    return Layout(None, None, int(crossings), max_right if g.n else 0.0, fr.height, arrays=arrays)


# --------------------------------------------------------------------------------------
# Public entry points


def _layering_edges(g: _Graph, acyc: _Acyclic) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(edge ids, upper ends, lower ends) of all non-loop edges, back edges turned around."""
    edge_ids = np.flatnonzero(~acyc.loop)
    back = acyc.back[edge_ids]
    s, d = g.src[edge_ids], g.dst[edge_ids]
    return edge_ids, np.where(back, d, s), np.where(back, s, d)


def _run(
    g: _Graph,
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
    acyc = _break_cycles(g)
    edge_ids, up, lo = _layering_edges(g, acyc)
    movable = np.zeros(g.n, dtype=bool)
    if pull_down:
        movable = np.bincount(up, minlength=g.n) > np.bincount(lo, minlength=g.n)
        if pin_inputs:
            movable &= np.asarray([k != "input" for k in g.kinds], dtype=bool).reshape(-1)
    rank = _assign_ranks(g.n, up, lo, acyc.topo, movable)
    h = _split_long_edges(g.n, rank, up, lo)
    if naive:  # graph order (execution order in TFLite), dummies after their source
        order = _reduce_crossings(h, np.arange(g.n), 0, dummies_follow_lower=False)
    else:
        order = _reduce_crossings(h, _upward_preorder(g.n, up, lo), sweeps)
    widths = np.concatenate([g.widths, np.zeros(h.size - g.n)])
    cx = _place_x(h, order.pos, widths, node_gap, coord_rounds) / _FIXED
    fr = _frame(rank, h.n_layers, cx[: g.n], g.widths, g.heights, layer_gap)
    pad = min(node_gap, layer_gap) / 3
    return _assemble(g, acyc, h, edge_ids, cx, fr, int(order.crossings.sum()), pad)


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
    coord_rounds: int = _COORD_ROUNDS


def layout(graph: nx.MultiDiGraph, size: SizeFn | None = None, **options) -> Layout:
    """Lay out ``graph`` top to bottom; never raises on cycles, self loops or empty graphs.

    ``size(node, attrs) -> (width, height)`` gives box sizes (default: :func:`default_size`);
    ``options`` are `LayoutOptions` fields (an unknown one is a TypeError).
    """
    return _layout(_extract(graph, size), LayoutOptions(**options))


def _layout(g: _Graph, options: LayoutOptions) -> Layout:
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
        io = np.isin(graph.kind, [k for k, name in enumerate(KINDS) if name in _TENSOR_KINDS])
        widths = np.where(io, IO_SIZE[0], OP_SIZE[0]) if widths is None else widths
        heights = np.where(io, IO_SIZE[1], OP_SIZE[1]) if heights is None else heights
    tensors = graph.tensor.tolist()
    g = _Graph(
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
        _extract(graph, size),
        layer_gap=layer_gap,
        node_gap=node_gap,
        sweeps=0,
        coord_rounds=0,
        pull_down=False,
        pin_inputs=True,
        naive=True,
    )
