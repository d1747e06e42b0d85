"""Counting crossings between adjacent layers, vectorized over all layer pairs.

Two segments cross when their upper and lower ends are in opposite orders, so counting
crossings is counting inversions per layer pair (a merge-sort count done for all pairs at
once).  Crossing reduction counts after every sweep; `graph.metrics` counts finished
drawings with the same function.
"""
from __future__ import annotations

import numpy as np

from .dummies import Hierarchy

# Groups up to this size count inversions pairwise (see grouped_inversions).
_PAIRWISE_MAX = 24


def grouped_inversions(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
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


def pair_crossings(h: Hierarchy, pos: np.ndarray, layer_start: np.ndarray, width_max: int) -> np.ndarray:
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
    return grouped_inversions(h.layer[h.seg_up][order], lo_pos[order], n_pairs)
