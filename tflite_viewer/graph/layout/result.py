"""What a layout produces: boxes and polylines, as flat arrays and as objects.

`LayoutArrays` is what the canvas and ``layout --json`` read; `Layout` wraps it and makes
`NodeBox` / `EdgePath` objects only when a caller asks for them (a 20,000-op graph would
otherwise cost 50,000 small objects nobody reads).  Box sizes default to `default_size`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Sequence

import numpy as np

SizeFn = Callable[[Hashable, dict], "tuple[float, float]"]

OP_SIZE = (120.0, 40.0)
IO_SIZE = (80.0, 28.0)
# node kinds drawn as small as subgraph inputs (tensor-like nodes)
TENSOR_KINDS = frozenset({"input", "output", "variable", "source"})


def default_size(node: Hashable, attrs: dict) -> tuple[float, float]:
    """(120, 40) for operators, (80, 28) for subgraph inputs and outputs.

    Tensor-like nodes of malformed or stateful graphs (kinds "variable", "source") are
    drawn as small as inputs.
    """
    return IO_SIZE if attrs.get("kind") in TENSOR_KINDS else OP_SIZE


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
