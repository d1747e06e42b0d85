"""The layout's input: a graph flattened to index arrays, in the graph's own order.

Every phase works on these arrays; `extract` makes them from a networkx graph in one pass
over nodes and one over edges (`layout_arrays` fills them from `GraphArrays` directly).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

import numpy as np

from .result import SizeFn, default_size

if TYPE_CHECKING:  # networkx is only needed by callers that pass a graph
    import networkx as nx


@dataclass
class Graph:
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


def extract(graph: nx.Graph, size: SizeFn | None) -> Graph:
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
    return Graph(
        ids=ids,
        kinds=kinds,
        widths=np.ascontiguousarray(wh[:, 0]),
        heights=np.ascontiguousarray(wh[:, 1]),
        src=np.asarray(src, dtype=np.int64),
        dst=np.asarray(dst, dtype=np.int64),
        keys=keys,
        tensors=tensors,
    )


def csr(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Group item indices by ``keys`` (stable): returns (start offsets [n+1], items)."""
    items = np.argsort(keys, kind="stable")
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=start[1:])
    return start, items
