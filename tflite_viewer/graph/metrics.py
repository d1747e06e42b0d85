"""Measuring any layout: crossings from the drawing, edge length, overlaps, invariants.

These read only the public `Layout` (boxes and polylines), so they judge this project's
layout, the naive baseline and Graphviz dot's drawing alike. The tests and
`benchmarks/bench_layout.py` use them; opening a model never does.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np

from .layout import Layout, NodeBox
from .layout.crossings import grouped_inversions

__all__ = ["count_crossings", "count_overlaps", "total_edge_length", "check_layout"]



def _segments(lay: Layout, loops: bool = False) -> np.ndarray:
    """All polyline segments (self loops only if ``loops``), as rows (x0, y0, x1, y1)."""
    xs: list[float] = []
    ys: list[float] = []
    lengths: list[int] = []
    for e in lay.edges:
        if len(e.points) < 2 or (e.source == e.target and not loops):
            continue
        for x, y in e.points:
            xs.append(x)
            ys.append(y)
        lengths.append(len(e.points))
    if not lengths:
        return np.zeros((0, 4))
    x = np.asarray(xs)
    y = np.asarray(ys)
    last = np.cumsum(lengths) - 1
    head = np.ones(len(x), dtype=bool)
    head[last] = False  # a segment starts at every point but an edge's last
    i = np.flatnonzero(head)
    return np.stack([x[i], y[i], x[i + 1], y[i + 1]], axis=1)


def count_crossings(lay: Layout) -> int:
    """Proper crossings between edge segments, from the drawing alone (any Layout).

    The plane is cut into horizontal bands at every distinct endpoint y; each segment is
    split into one piece per band it spans. Inside a band all pieces run from its top line
    to its bottom line, so two pieces cross exactly when their x order differs at top and
    bottom - an inversion count per band (O(P log P) for P pieces). Segments sharing an
    endpoint never count; horizontal segments and self loops are ignored (layered layouts
    only draw them for self loops).
    """
    seg = _segments(lay)
    if len(seg) < 2:
        return 0
    flip = seg[:, 1] > seg[:, 3]
    seg[flip] = seg[flip][:, [2, 3, 0, 1]]
    seg = seg[seg[:, 1] < seg[:, 3]]
    if len(seg) < 2:
        return 0
    x0, y0, x1, y1 = seg.T
    levels = np.unique(np.concatenate([y0, y1]))
    first = np.searchsorted(levels, y0)
    pieces = np.searchsorted(levels, y1) - first
    owner = np.repeat(np.arange(len(seg)), pieces)
    band = np.arange(int(pieces.sum())) - np.repeat(np.cumsum(pieces) - pieces, pieces) + first[owner]

    def x_at(level: np.ndarray) -> np.ndarray:
        a, b, ya, yb = x0[owner], x1[owner], y0[owner], y1[owner]
        exact = np.where(level == ya, a, b)
        inner = a + (b - a) * ((level - ya) / (yb - ya))
        return np.where((level == ya) | (level == yb), exact, inner)

    top = x_at(levels[band])
    bottom = x_at(levels[band + 1])
    order = np.lexsort((bottom, top, band))
    return int(grouped_inversions(band[order], bottom[order], len(levels)).sum())


def total_edge_length(lay: Layout) -> float:
    """Sum of the lengths of all polylines (self loops included)."""
    seg = _segments(lay, loops=True)
    return float(np.hypot(seg[:, 2] - seg[:, 0], seg[:, 3] - seg[:, 1]).sum())


def _overlaps(lay: Layout, eps: float = 1e-6) -> list[str]:
    """Overlapping boxes: within a layer (by x) and between layers (by y bands)."""
    problems: list[str] = []
    by_layer: dict[int, list[NodeBox]] = {}
    for b in lay.nodes.values():
        by_layer.setdefault(b.layer, []).append(b)
    bands = []
    for layer_index in sorted(by_layer):
        boxes = sorted(by_layer[layer_index], key=lambda b: (b.x, b.right))
        reach = None
        for b in boxes:
            if reach is not None and b.x < reach.right - eps:
                problems.append(f"overlap in layer {layer_index}: {reach.id!s} and {b.id!s}")
            if reach is None or b.right > reach.right:
                reach = b
        bands.append((layer_index, min(b.y for b in boxes), max(b.bottom for b in boxes)))
    for (la, _, bottom_a), (lb, top_b, _) in zip(bands, bands[1:]):
        if top_b < bottom_a - eps:
            problems.append(f"overlap between layers {la} and {lb}")
    return problems


def count_overlaps(lay: Layout) -> int:
    """Number of box overlaps found by :func:`check_layout` (0 for a valid layout)."""
    return len(_overlaps(lay))


def _on_box(point: tuple[float, float], b: NodeBox, eps: float = 1e-6) -> bool:
    x, y = point
    return b.x - eps <= x <= b.right + eps and b.y - eps <= y <= b.bottom + eps


def check_layout(lay: Layout, graph: nx.MultiDiGraph) -> list[str]:
    """Invariant violations of ``lay`` as a layout of ``graph``; ``[]`` when it is sound.

    Checks: every node placed once with finite coordinates, no overlapping boxes, every
    edge drawn once, polylines starting on the source box and ending on the target box,
    and every edge not marked reversed pointing strictly downward.
    """
    problems: list[str] = []
    for node in graph.nodes:
        if node not in lay.nodes:
            problems.append(f"node {node!s} not placed")
    for node, b in lay.nodes.items():
        if node not in graph:
            problems.append(f"node {node!s} is not in the graph")
        if not all(math.isfinite(v) for v in (b.x, b.y, b.width, b.height)):
            problems.append(f"node {node!s} has non-finite geometry")
    problems += _overlaps(lay)

    if graph.is_multigraph():
        expected = {(u, v, k) for u, v, k in graph.edges(keys=True)}
    else:
        expected = {(u, v, d.get("tensor")) for u, v, d in graph.edges(data=True)}
    seen: set = set()
    for e in lay.edges:
        ident = (e.source, e.target, e.key)
        name = f"edge {e.source!s}->{e.target!s} [{e.key!s}]"
        if ident in seen:
            problems.append(f"{name} drawn twice")
        seen.add(ident)
        if ident not in expected:
            problems.append(f"{name} is not in the graph")
        s, t = lay.nodes.get(e.source), lay.nodes.get(e.target)
        if s is None or t is None or not e.points:
            continue
        if not _on_box(e.points[0], s):
            problems.append(f"{name} does not start on its source")
        if not _on_box(e.points[-1], t):
            problems.append(f"{name} does not end on its target")
        if not e.reversed:
            ys = [y for _, y in e.points]
            monotone = all(b >= a for a, b in zip(ys, ys[1:]))
            if not (t.layer > s.layer and t.y > s.y and monotone):
                problems.append(f"{name} does not point downward")
    for ident in expected - seen:
        problems.append(f"edge {ident[0]!s}->{ident[1]!s} [{ident[2]!s}] not drawn")
    return problems
