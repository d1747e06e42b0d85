"""Where the canvas draws its edges: polylines with spread ports, their labels' places,
and the flat segment array used for hit testing.

The layout (graph/layout/) routes every edge between box centres; this module is the
drawing-side geometry on top of it, vectorized over all edges so that a 20,000-operator
graph stays a handful of numpy passes.  It needs no Qt: scene_data.py calls it in the
worker thread.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Callable

import numpy as np

from ...graph.layout import LayoutArrays


class Polylines(Sequence):
    """Edge polylines over flat arrays: ``[e]`` is edge e's list of (x, y) points.

    The canvas reads the arrays; the list view is for selection and tests.
    """

    def __init__(self, xs: np.ndarray, ys: np.ndarray, start: np.ndarray) -> None:
        self.xs, self.ys, self.start = xs, ys, start

    def __len__(self) -> int:
        return len(self.start) - 1

    def __getitem__(self, e):  # type: ignore[override]
        if isinstance(e, slice):
            return [self[i] for i in range(*e.indices(len(self)))]
        if e < 0:
            e += len(self)
        if not 0 <= e < len(self):
            raise IndexError(e)
        a, b = int(self.start[e]), int(self.start[e + 1])
        return list(zip(self.xs[a:b].tolist(), self.ys[a:b].tolist()))


def spread_ports(a: LayoutArrays, rects: np.ndarray, order_key: np.ndarray) -> Polylines:
    """Polylines whose ends are spread over the box edges instead of all meeting mid-box.

    The layout starts every edge at its source's bottom-centre and ends it at the target's
    top-centre; with several distinct tensors on a box they would sit on top of each other.
    Distinct tensors leaving a box get distinct ports (one tensor to several consumers
    shares its port; ports in the order the tensors first leave); edges entering a box
    are ordered by where they come from so the spreading does not add crossings. Reversed
    edges (cycles, self loops) keep their ends. Vectorized over all edges.
    """
    m = len(a.edge_src)
    start = a.pstart
    length = np.diff(start)
    fwd = ~a.reversed & (length >= 2)
    src, dst = a.edge_src, a.edge_dst
    keys = _dense_keys(a.keys)

    def port(row: np.ndarray, i: np.ndarray, n: np.ndarray) -> np.ndarray:
        x, w = rects[row, 0], rects[row, 2]
        usable = w * 0.7
        return x + w / 2 - usable / 2 + usable * (i + 0.5) / n

    out_port = np.zeros(m, dtype=bool)
    out_x = np.zeros(m)
    e_fwd = np.flatnonzero(~a.reversed)
    if len(e_fwd):
        # distinct (source, key) pairs per source, in order of first appearance
        pair = src[e_fwd] * (int(keys.max()) + 1) + keys[e_fwd]
        uniq, first, inv = np.unique(pair, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank_of_uniq = np.empty(len(uniq), dtype=np.int64)
        u_src = src[e_fwd][first[order]]
        grp = np.lexsort((np.arange(len(order)), u_src))
        sorted_src = u_src[grp]
        run_start = np.flatnonzero(np.concatenate([[True], sorted_src[1:] != sorted_src[:-1]]))
        run_len = np.diff(np.concatenate([run_start, [len(grp)]]))
        within = np.arange(len(grp)) - np.repeat(run_start, run_len)
        rank_sorted = np.empty(len(grp), dtype=np.int64)
        rank_sorted[grp] = within
        rank_of_uniq[order] = rank_sorted
        n_keys = np.zeros(len(rects), dtype=np.int64)
        np.add.at(n_keys, sorted_src[run_start], run_len)
        e_rank = rank_of_uniq[inv.reshape(-1)]
        multi = (n_keys[src[e_fwd]] > 1) & fwd[e_fwd]
        sel = e_fwd[multi]
        out_port[sel] = True
        out_x[sel] = port(src[sel], e_rank[multi], n_keys[src[sel]])

    # edges into a box with two or more forward edges, ordered by where they come from
    in_fwd = e_fwd
    in_count = np.bincount(dst[in_fwd], minlength=len(rects))
    cand = in_fwd[in_count[dst[in_fwd]] >= 2]
    in_port = np.zeros(m, dtype=bool)
    in_x = np.zeros(m)
    if len(cand):
        last = start[cand + 1] - 1
        orig_len = length[cand]
        prev_x = np.where(orig_len > 1, a.px[np.maximum(last - 1, 0)], 0.0)
        prev_x = np.where(out_port[cand] & (orig_len == 2), out_x[cand], prev_x)
        order = np.lexsort((order_key[src[cand]], prev_x, dst[cand]))
        c = cand[order]
        d = dst[c]
        run_start = np.flatnonzero(np.concatenate([[True], d[1:] != d[:-1]]))
        run_len = np.diff(np.concatenate([run_start, [len(c)]]))
        i = np.arange(len(c)) - np.repeat(run_start, run_len)
        in_port[c] = True
        in_x[c] = port(d, i, np.repeat(run_len, run_len))

    # new point lists: [p0', (x, y0+8)] + middle + [(x, y1-8), p_last']
    new_len = length + out_port + in_port
    new_start = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(new_len, out=new_start[1:])
    owner = np.repeat(np.arange(m), new_len)
    r = np.arange(int(new_start[-1])) - new_start[owner]
    # index into the original points: shift by one after an inserted out-port point
    src_r = r - (out_port[owner] & (r >= 1)).astype(np.int64)
    src_r = np.minimum(src_r, length[owner] - 1)
    in_ins = in_port[owner] & (r == new_len[owner] - 2)
    xs = a.px[start[owner] + src_r].copy()
    ys = a.py[start[owner] + src_r].copy()
    first_pt = r == 0
    xs[first_pt & out_port[owner]] = out_x[owner[first_pt & out_port[owner]]]
    after_first = out_port[owner] & (r == 1)
    xs[after_first] = out_x[owner[after_first]]
    ys[after_first] = a.py[start[owner[after_first]]] + 8
    last_pt = r == new_len[owner] - 1
    xs[last_pt & in_port[owner]] = in_x[owner[last_pt & in_port[owner]]]
    xs[in_ins] = in_x[owner[in_ins]]
    ys[in_ins] = a.py[start[owner[in_ins] + 1] - 1] - 8
    return Polylines(xs, ys, new_start)


def _dense_keys(keys) -> np.ndarray:
    """Edge keys as small non-negative integers (keys may be any hashable)."""
    try:
        arr = np.asarray(keys, dtype=np.int64)
        if arr.ndim == 1 and (len(arr) == 0 or arr.min() >= 0):
            return arr
    except (TypeError, ValueError, OverflowError):
        pass
    index: dict = {}
    return np.asarray([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)


def edge_label_places(a: LayoutArrays, paths: Polylines, edge_tensor: np.ndarray,
                 text_of: Callable[[int], str | None]) -> list[tuple[float, float, str, int]]:
    """One label per (source, tensor), just under the port where the tensor leaves its box.

    Several tensors leaving one box (SPLIT, UNPACK, LSTM states) would put their labels
    side by side on ports a few pixels apart: identical labels are merged ("4 x 1x16
    float32"), different ones are stacked.
    """
    m = len(edge_tensor)
    if not m:
        return []
    cand = np.flatnonzero(~a.reversed & (edge_tensor >= 0))
    pair = a.edge_src[cand] * (int(edge_tensor.max()) + 1) + edge_tensor[cand]
    _, first = np.unique(pair, return_index=True)
    first.sort()
    chosen = cand[first]
    by_source: dict[int, list[tuple[float, float, str, int]]] = defaultdict(list)
    x0 = paths.xs[paths.start[chosen]].tolist()
    y0 = paths.ys[paths.start[chosen]].tolist()
    for e, s, t, x, y in zip(chosen.tolist(), a.edge_src[chosen].tolist(), edge_tensor[chosen].tolist(), x0, y0):
        text = text_of(t)
        if text is not None:
            by_source[s].append((x, y, text, t))
    edge_labels: list[tuple[float, float, str, int]] = []
    for items in by_source.values():
        if len(items) == 1:
            x, y, text, t = items[0]
            edge_labels.append((x + 4.0, y + 3.0, text, t))
            continue
        items.sort()
        texts = {text for _, _, text, _ in items}
        x0_, y0_ = items[-1][0], items[-1][1]
        if len(texts) == 1:
            edge_labels.append((x0_ + 4.0, y0_ + 3.0, f"{len(items)} \u00d7 {items[0][2]}", items[0][3]))
        else:
            for i, (_, _, text, t) in enumerate(items):
                edge_labels.append((x0_ + 4.0, y0_ + 3.0 + 11.0 * i, text, t))
    return edge_labels


def polyline_segments(paths: Polylines) -> tuple[np.ndarray, np.ndarray]:
    """(S, 4) segments x0, y0, x1, y1 of every polyline and the edge of each (hit testing)."""
    n = len(paths.xs)
    if n < 2:
        return np.zeros((0, 4)), np.zeros(0, dtype=np.int64)
    head = np.ones(n, dtype=bool)
    head[paths.start[1:] - 1] = False  # a segment starts at every point but an edge's last
    head[-1] = False
    i = np.flatnonzero(head)
    owner = np.repeat(np.arange(len(paths)), np.diff(paths.start))
    segs = np.stack([paths.xs[i], paths.ys[i], paths.xs[i + 1], paths.ys[i + 1]], axis=1)
    return segs, owner[i].astype(np.int64)
