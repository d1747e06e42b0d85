"""Phase 2, ranking: which layer each node sits in.

Longest path from the sources (inputs on top), then nodes with more outgoing than
incoming edges are pulled down toward their consumers, which shortens edges.
"""
from __future__ import annotations

import numpy as np

from .extract import csr


def assign_ranks(
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
            start_arr, items = csr(up, n)
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
