"""Phase 6, edge routing and the final geometry: layer heights, boxes, polylines.

Edges become polylines: source bottom-centre, a vertical run through every layer the edge
crosses, target top-centre; self loops go out of the bottom, around the right side and
into the top.  `assemble` returns everything as flat arrays in the graph's node and edge
order.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .acyclic import Acyclic
from .dummies import Hierarchy
from .extract import Graph
from .result import Layout, LayoutArrays


@dataclass
class VerticalGeometry:
    """Vertical geometry: per layer top/bottom; per real node its box."""

    layer_top: np.ndarray
    layer_bottom: np.ndarray
    box_x: np.ndarray
    box_y: np.ndarray
    height: float


def frame(
    rank: np.ndarray,
    n_layers: int,
    cx: np.ndarray,
    widths: np.ndarray,
    heights: np.ndarray,
    layer_gap: float,
) -> VerticalGeometry:
    """Layer y = cumulative max heights + layer_gap; boxes centred vertically in their layer."""
    layer_h = np.zeros(n_layers)
    if len(rank):
        np.maximum.at(layer_h, rank, heights)
    step = layer_h + layer_gap
    top = np.cumsum(step) - step
    bottom = top + layer_h
    box_y = top[rank] + (layer_h[rank] - heights) / 2 if len(rank) else np.zeros(0)
    height = float(bottom[-1]) if n_layers else 0.0
    return VerticalGeometry(top, bottom, cx - widths / 2, box_y, height)


def _chain_points(
    h: Hierarchy,
    cx: np.ndarray,
    fr: VerticalGeometry,
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


def assemble(
    g: Graph,
    acyc: Acyclic,
    h: Hierarchy,
    edge_ids: np.ndarray,
    cx_all: np.ndarray,
    fr: VerticalGeometry,
    crossings: int,
    pad: float,
) -> Layout:
    """Flat arrays of boxes and polylines in the graph's node and edge order."""
    rank = h.layer[: g.n]
    left = float(min(fr.box_x.min() if g.n else 0.0, cx_all[g.n :].min() if h.size > g.n else math.inf))
    shift = -left if math.isfinite(left) else 0.0
    box_x = fr.box_x + shift
    cx_all = cx_all + shift
    fr = VerticalGeometry(fr.layer_top, fr.layer_bottom, box_x, fr.box_y, fr.height)
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
