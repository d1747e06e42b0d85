"""Phase 1, cycle breaking: reverse a feedback arc set so the graph can be layered.

One iterative DFS from the sources, in node order; its back edges are reversed (and
reported by the caller), self loops set aside and drawn as loops.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .extract import Graph, csr


@dataclass
class Acyclic:
    """Result of the DFS: which edges are reversed and a topological order."""

    back: np.ndarray  # bool per edge: reversed to break a cycle
    loop: np.ndarray  # bool per edge: self loop, not part of the layering
    topo: np.ndarray  # node indices, a topological order of the acyclic graph


def break_cycles(g: Graph) -> Acyclic:
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
        return Acyclic(back=np.zeros(m, dtype=bool), loop=loop, topo=order.astype(np.int64))
    start_arr, items_arr = csr(g.src, n)
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
    return Acyclic(
        back=back_arr,
        loop=loop,
        topo=np.asarray(post[::-1], dtype=np.int64),
    )


def layering_edges(g: Graph, acyc: Acyclic) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(edge ids, upper ends, lower ends) of all non-loop edges, back edges turned around."""
    edge_ids = np.flatnonzero(~acyc.loop)
    back = acyc.back[edge_ids]
    s, d = g.src[edge_ids], g.dst[edge_ids]
    return edge_ids, np.where(back, d, s), np.where(back, s, d)
