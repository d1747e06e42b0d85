"""Phase 5, coordinates: the x of every node and dummy, in fixed point.

A Brandes-Koepf-like vertical alignment (real chains first, then long edges, by median,
never crossing) makes rigid blocks, so the model's trunk and long edges are straight;
blocks move toward their neighbours for a few rounds, and each round a projection restores
the gaps in every layer: the trunk stays, the rest is pushed outward by segmented running
max/min, in fixed point so it is exact and deterministic.
"""
from __future__ import annotations

import numpy as np

from .dummies import Hierarchy

# Weights of a segment in coordinate assignment, by how many of its ends are dummies.
# Dummy-to-dummy segments weigh most so long edges stay straight (the weights dot uses).
_SEGMENT_WEIGHTS = np.array([1.0, 2.0, 8.0])
# Fixed-point scale of the coordinate projection: 1/64 px steps are exact in float64.
FIXED = 64
COORD_ROUNDS = 8
# Pull of every block toward x = 0 per member node, against the neighbours' pull (weights
# above): without it a 20k-op trunk broken into pieces drifts sideways piece by piece.
_CENTRE_PULL = 3.0


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

    def __init__(self, h: Hierarchy, pos: np.ndarray, width_max: int) -> None:
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

    def __init__(self, h: Hierarchy, pos: np.ndarray, widths: np.ndarray, node_gap: float) -> None:
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
        sep[1:] = np.where(same_layer, np.ceil(((w[1:] + w[:-1]) / 2 + gap) * FIXED), 0)
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


def place_x(h: Hierarchy, pos: np.ndarray, widths: np.ndarray, node_gap: float, rounds: int) -> np.ndarray:
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
