"""Phase 3, dummy nodes: long edges become chains, one dummy per layer crossed.

After this every segment joins two adjacent layers, which is what crossing reduction,
alignment and routing work on.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Hierarchy:
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


def split_long_edges(n: int, rank: np.ndarray, up: np.ndarray, lo: np.ndarray) -> Hierarchy:
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
    return Hierarchy(
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
