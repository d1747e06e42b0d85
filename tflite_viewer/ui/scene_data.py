"""Everything the graph canvas draws, computed without Qt so it can run in a worker thread.

The worker turns (model, subgraph) into a `SceneData`: the networkx graph, its layout, the
text of every box and edge label and flat numpy arrays of rectangles and segments.  The
canvas then only has to wrap those arrays in a few batch items, which keeps the GUI thread
free even for 20,000-operator graphs.  Label widths are measured with a `TextMeasure` (a
per-character advance table taken from the real fonts on the GUI thread), because Qt's
font metrics are not something to lean on from a worker thread.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Hashable

import networkx as nx
import numpy as np

from ..graph.build import build_graph
from ..graph.layout import Layout, layout

# Above this many operators the options line ("3x3 s2 SAME relu6") is computed when a box
# is first painted instead of in the worker: decoding 20,000 option tables costs seconds.
EAGER_OPTIONS_LIMIT = 4000

PAD_X = 10.0
TITLE_H = 17.0
LINE_H = 13.0
PAD_Y = 6.0
MIN_OP_W, MAX_OP_W = 96.0, 280.0
IO_H = 34.0
LAYER_GAP = 56.0
NODE_GAP = 28.0

# Which constant input of an operator is which, for the compact "W 24x3x3x3, b 24" line.
INPUT_ROLES: dict[str, dict[int, str]] = {
    "CONV_2D": {1: "W", 2: "b"},
    "DEPTHWISE_CONV_2D": {1: "W", 2: "b"},
    "CONV_3D": {1: "W", 2: "b"},
    "FULLY_CONNECTED": {1: "W", 2: "b"},
    "TRANSPOSE_CONV": {0: "shape", 1: "W", 3: "b"},
    "BATCH_MATMUL": {0: "A", 1: "B"},
    "PRELU": {1: "alpha"},
    "RESHAPE": {1: "shape"},
    "PAD": {1: "pad"},
    "PADV2": {1: "pad", 2: "value"},
    "MEAN": {1: "axis"},
    "SUM": {1: "axis"},
    "GATHER": {0: "params", 1: "idx"},
    "EMBEDDING_LOOKUP": {1: "table"},
    "CONCATENATION": {},
    "STRIDED_SLICE": {1: "begin", 2: "end", 3: "strides"},
    "TRANSPOSE": {1: "perm"},
}
_MAX_CONSTANTS_SHOWN = 3


class TextMeasure:
    """Text widths from per-character advances (Qt-free; built from QFontMetricsF in ui)."""

    def __init__(self, advances: dict[str, dict[str, float]] | None = None,
                 fallback: dict[str, float] | None = None) -> None:
        self._advances = advances or {}
        self._fallback = fallback or {}
        self._cache: dict[tuple[str, str], float] = {}  # op names and shapes repeat a lot

    def width(self, role: str, text: str) -> float:
        key = (role, text)
        w = self._cache.get(key)
        if w is None:
            table = self._advances.get(role)
            if table is None:
                w = 6.5 * len(text)
            else:
                default = self._fallback.get(role, 7.0)
                w = sum(table.get(c, default) for c in text)
            if len(self._cache) < 200_000:
                self._cache[key] = w
        return w


@dataclass
class NodeLabel:
    """The text of one box.  ``options`` is None until computed (large graphs: lazily)."""

    kind: str  # op, input, output, variable, source
    title: str
    version: str = ""
    options: str | None = ""
    constants: str = ""
    category: str = "other"
    op_index: int | None = None
    tensor: int | None = None
    calls: dict[str, int] = field(default_factory=dict)


@dataclass
class SceneData:
    """A laid-out subgraph ready to draw (see the module docstring)."""

    subgraph: int
    title: str
    graph: nx.MultiDiGraph
    layout: Layout
    node_ids: list[Hashable]
    labels: list[NodeLabel]
    rects: np.ndarray  # (N, 4) x, y, w, h
    edge_points: list[list[tuple[float, float]]]  # drawn polylines (ports spread)
    edge_tensor: np.ndarray  # (E,) tensor index or -1
    edge_source: list[Hashable]
    edge_target: list[Hashable]
    edge_labels: list[tuple[float, float, str, int]]  # x, y (top-left), text, tensor
    segments: np.ndarray  # (S, 4) x0, y0, x1, y1 for hit testing
    segment_edge: np.ndarray  # (S,) edge of each segment
    node_index: dict[Hashable, int]
    op_node: dict[int, int]  # operator index -> node row
    tensor_edges: dict[int, list[int]]  # tensor -> edge rows
    tensor_nodes: dict[int, list[int]]  # tensor -> io/variable node rows, consumers of constants
    options_of: Callable[[int], str] | None = None  # lazy options text by operator index
    plan: object | None = None  # the canvas's prepared chunks (graph_scene.ScenePlan)

    @property
    def width(self) -> float:
        return self.layout.width

    @property
    def height(self) -> float:
        return self.layout.height

    def options_text(self, row: int) -> str:
        """The options line of node ``row``, computing and caching it on first use."""
        label = self.labels[row]
        if label.options is None:
            try:
                label.options = self.options_of(label.op_index) if self.options_of else ""
            except Exception:  # noqa: BLE001 - a malformed option table must not break painting
                label.options = "?"
        return label.options

    def node_at(self, x: float, y: float) -> int | None:
        """The row of the box under (x, y), or None (vectorized: fine for 20,000 boxes)."""
        r = self.rects
        if not len(r):
            return None
        hit = (r[:, 0] <= x) & (x <= r[:, 0] + r[:, 2]) & (r[:, 1] <= y) & (y <= r[:, 1] + r[:, 3])
        rows = np.flatnonzero(hit)
        return int(rows[-1]) if rows.size else None

    def edge_at(self, x: float, y: float, tolerance: float) -> int | None:
        """The edge whose polyline passes within ``tolerance`` of (x, y), nearest first."""
        s = self.segments
        if not len(s):
            return None
        x0, y0, x1, y1 = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
        dx, dy = x1 - x0, y1 - y0
        length2 = dx * dx + dy * dy
        t = np.where(length2 > 0, ((x - x0) * dx + (y - y0) * dy) / np.where(length2 > 0, length2, 1), 0)
        t = np.clip(t, 0.0, 1.0)
        px, py = x0 + t * dx, y0 + t * dy
        d2 = (px - x) ** 2 + (py - y) ** 2
        best = int(np.argmin(d2))
        if d2[best] > tolerance * tolerance:
            return None
        return int(self.segment_edge[best])


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join("?" if d < 0 else str(d) for d in shape) or "scalar"


def edge_label_text(info, computed: tuple[int, ...] | None = None) -> str:
    """``?x96x96x16 float32`` (``?``: a dynamic dimension); with a ``computed`` shape that
    differs from the stored one, that shape first and the stored one flagged."""
    text = f"{info.shape_text} {info.dtype.lower()}"
    if computed is None:
        return text
    sig = info.shape_signature
    dynamic = [sig is not None and len(sig) == len(computed) and sig[i] < 0 for i in range(len(computed))]
    dims = "x".join("?" if dyn else str(d) for d, dyn in zip(computed, dynamic)) or "scalar"
    return f"{dims} {info.dtype.lower()} \u2260 stored {info.shape_text}"


def _elide(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def constants_text(op_name: str, inputs: np.ndarray | tuple[int, ...], is_const: np.ndarray,
                   shapes: Callable[[int], tuple[int, ...]]) -> str:
    """`W 24x3x3x3, b 24`: the constant inputs of an operator, compactly."""
    roles = INPUT_ROLES.get(op_name, {})
    parts = []
    for pos, t in enumerate(inputs):
        t = int(t)
        if t < 0 or not is_const[t]:
            continue
        parts.append(f"{roles.get(pos, f'#{pos}')} {_shape_text(shapes(t))}")
    if len(parts) > _MAX_CONSTANTS_SHOWN:
        parts = parts[:_MAX_CONSTANTS_SHOWN] + [f"+{len(parts) - _MAX_CONSTANTS_SHOWN}"]
    return ", ".join(parts)


def _labels_for_model(model, subgraph: int, graph: nx.MultiDiGraph) -> dict[Hashable, NodeLabel]:
    from ..graph.labels import options_summary  # graph layer: no Qt

    sg = model.subgraphs[subgraph]
    is_const = sg.constant_mask
    cols = sg.columns
    eager = cols.opcode_index.size <= EAGER_OPTIONS_LIMIT
    shape_cache: dict[int, tuple[int, ...]] = {}

    def shape(t: int) -> tuple[int, ...]:
        s = shape_cache.get(t)
        if s is None:
            s = shape_cache[t] = sg.tensors[t].shape
        return s

    labels: dict[Hashable, NodeLabel] = {}
    for node, attrs in graph.nodes(data=True):
        kind = attrs.get("kind", "op")
        if kind == "op":
            k = int(attrs["index"])
            name = attrs.get("name", "?")
            options: str | None = None
            if eager:
                try:
                    options = options_summary(sg.operators[k])
                except Exception:  # noqa: BLE001 - show the box even with broken options
                    options = "?"
            labels[node] = NodeLabel(
                "op", name, f"v{attrs.get('version', 1)}", options,
                constants_text(name, cols.op_inputs(k), is_const, shape),
                attrs.get("category", "other"), k, None, dict(attrs.get("calls", {})))
        else:
            t = int(attrs.get("tensor", -1))
            tensor = sg.tensors[t]
            labels[node] = NodeLabel(kind, _elide(tensor.name or f"tensor {t}", 40),
                                     "", _shape_text(tensor.shape_signature or tensor.shape)
                                     + " " + tensor.type_name.lower(), "", kind, None, t)
    return labels


def _labels_for_graph(graph: nx.MultiDiGraph) -> dict[Hashable, NodeLabel]:
    """Labels from node attributes alone (synthetic graphs, benchmarks)."""
    labels = {}
    for node, attrs in graph.nodes(data=True):
        kind = attrs.get("kind", "op")
        if kind == "op":
            name = attrs.get("name") or attrs.get("opcode") or "?"
            labels[node] = NodeLabel("op", name, f"v{attrs.get('version', 1)}", "", "",
                                     attrs.get("category", "other"), attrs.get("index"))
        else:
            t = attrs.get("tensor")
            labels[node] = NodeLabel(kind, str(attrs.get("name") or f"tensor {t}"), "", "", "",
                                     kind, None, t)
    return labels


def _sizer(labels: dict[Hashable, NodeLabel], measure: TextMeasure):
    def size(node: Hashable, attrs: dict) -> tuple[float, float]:
        lab = labels[node]
        if lab.kind == "op":
            w = measure.width("title", lab.title) + 6 + measure.width("small", lab.version)
            lines = 0
            if lab.options is None or lab.options:
                lines += 1
                w = max(w, measure.width("body", lab.options or "") if lab.options else 0)
            if lab.constants:
                lines += 1
                w = max(w, measure.width("small", lab.constants))
            w = min(max(w + 2 * PAD_X + 4, MIN_OP_W), MAX_OP_W)
            return w, PAD_Y + TITLE_H + LINE_H * lines + PAD_Y
        # the drawn name carries a marker ("\u25b6 " input, "\u25a0 " output) before it
        w = max(measure.width("body", "\u25b6 " + lab.title), measure.width("small", lab.options or ""))
        return min(max(w + 2 * PAD_X + 8, 70.0), 300.0), IO_H
    return size


def _spread_ports(lay: Layout, node_index: dict[Hashable, int], rects: np.ndarray,
                  order_key: dict[Hashable, int]) -> list[list[tuple[float, float]]]:
    """Polylines whose ends are spread over the box edges instead of all meeting mid-box.

    The layout starts every edge at its source's bottom-centre and ends it at the target's
    top-centre; with several distinct tensors on a box they would sit on top of each other.
    Distinct tensors leaving a box get distinct ports (one tensor to several consumers
    shares its port); edges entering a box are ordered by where they come from so the
    spreading does not add crossings.
    """
    out_tensors: dict[Hashable, list] = defaultdict(list)
    in_edges: dict[Hashable, list[int]] = defaultdict(list)
    for e, ep in enumerate(lay.edges):
        if ep.reversed:
            continue
        if ep.key not in out_tensors[ep.source]:
            out_tensors[ep.source].append(ep.key)
        in_edges[ep.target].append(e)
    paths = [list(ep.points) for ep in lay.edges]

    def port(row: int, i: int, n: int) -> float:
        x, _, w, _ = rects[row]
        usable = w * 0.7
        return float(x + w / 2 - usable / 2 + usable * (i + 0.5) / n)

    for e, ep in enumerate(lay.edges):
        if ep.reversed or len(paths[e]) < 2:
            continue
        keys = out_tensors[ep.source]
        if len(keys) > 1:
            row = node_index[ep.source]
            x = port(row, keys.index(ep.key), len(keys))
            (_, y0) = paths[e][0]
            paths[e][0] = (x, y0)
            paths[e].insert(1, (x, y0 + 8))
    for target, edges in in_edges.items():
        if len(edges) < 2:
            continue
        row = node_index[target]
        edges.sort(key=lambda e: (paths[e][-2][0] if len(paths[e]) > 1 else 0.0,
                                  order_key.get(lay.edges[e].source, 0)))
        for i, e in enumerate(edges):
            x = port(row, i, len(edges))
            (_, y1) = paths[e][-1]
            paths[e][-1] = (x, y1)
            paths[e].insert(len(paths[e]) - 1, (x, y1 - 8))
    return paths


def same_structure(lay: Layout, graph: nx.MultiDiGraph) -> bool:
    """Whether a layout was made for a graph with exactly these nodes and edges."""
    if len(lay.nodes) != graph.number_of_nodes() or len(lay.edges) != graph.number_of_edges():
        return False
    if any(n not in graph for n in lay.nodes):
        return False
    edges = {(u, v, k) for u, v, k in graph.edges(keys=True)}
    return all((ep.source, ep.target, ep.key) in edges for ep in lay.edges)


def build_scene_data(model, subgraph: int = 0, measure: TextMeasure | None = None,
                     graph: nx.MultiDiGraph | None = None,
                     reuse_layout: Layout | None = None,
                     computed_shapes: dict[int, tuple[int, ...]] | None = None) -> SceneData:
    """Graph, layout and labels of one subgraph (or of ``graph`` when no model is given).

    ``computed_shapes``: tensor -> the shape its producer computes, for tensors whose stored
    shape is stale after an edit; their edge labels show the computed shape and the stale
    one (``1x48x96x16 float32 \u2260 stored 1x48x48x16``).

    ``reuse_layout``: the layout of an earlier version of the same subgraph.  After an edit
    that changed only labels (options, versions, names, shapes), the boxes stay where they
    were and only the text is new; it is used only if the graph still has exactly its nodes
    and edges, else the subgraph is laid out afresh.
    """
    measure = measure or TextMeasure()
    if graph is None:
        graph = build_graph(model, subgraph)
    if model is not None:
        labels_by_node = _labels_for_model(model, subgraph, graph)
        title = model.subgraphs[subgraph].display_name
    else:
        labels_by_node = _labels_for_graph(graph)
        title = graph.graph.get("name", "graph")
    if reuse_layout is not None and same_structure(reuse_layout, graph):
        lay = reuse_layout
    else:
        lay = layout(graph, _sizer(labels_by_node, measure), layer_gap=LAYER_GAP, node_gap=NODE_GAP)

    node_ids = list(lay.nodes)
    node_index = {n: i for i, n in enumerate(node_ids)}
    boxes = lay.nodes
    rects = np.array([(b.x, b.y, b.width, b.height) for b in boxes.values()],
                     dtype=np.float64).reshape(-1, 4)
    labels = [labels_by_node[n] for n in node_ids]
    op_node = {lab.op_index: i for i, lab in enumerate(labels) if lab.kind == "op"
               and lab.op_index is not None}
    paths = _spread_ports(lay, node_index, rects, {n: i for i, n in enumerate(graph.nodes)})

    edge_tensor = np.array([ep.tensor if ep.tensor is not None else -1 for ep in lay.edges],
                           dtype=np.int64)
    tensor_edges: dict[int, list[int]] = defaultdict(list)
    for e, t in enumerate(edge_tensor.tolist()):
        if t >= 0:
            tensor_edges[t].append(e)
    tensor_nodes: dict[int, list[int]] = defaultdict(list)
    for i, lab in enumerate(labels):
        if lab.tensor is not None and lab.kind != "op":
            tensor_nodes[int(lab.tensor)].append(i)

    # One label per (source, tensor), just under the port where the tensor leaves its box.
    # Several tensors leaving one box (SPLIT, UNPACK, LSTM states) would put their labels
    # side by side on ports a few pixels apart: identical labels are merged ("4 x 1x16
    # float32"), different ones are stacked.
    edge_labels: list[tuple[float, float, str, int]] = []
    seen: set[tuple[Hashable, int]] = set()
    info_of: dict[int, object] = {}
    for u, _v, key, data in graph.edges(keys=True, data=True):
        if "info" in data:
            info_of[int(key)] = data["info"]
    by_source: dict[Hashable, list[tuple[float, float, str, int]]] = defaultdict(list)
    for e, ep in enumerate(lay.edges):
        t = int(edge_tensor[e])
        if ep.reversed or (ep.source, t) in seen or t < 0:
            continue
        seen.add((ep.source, t))
        info = info_of.get(t)
        if info is None:
            continue
        x, y = paths[e][0]
        by_source[ep.source].append((x, y, edge_label_text(info, (computed_shapes or {}).get(t)), t))
    for items in by_source.values():
        if len(items) == 1:
            x, y, text, t = items[0]
            edge_labels.append((x + 4.0, y + 3.0, text, t))
            continue
        items.sort()
        texts = {text for _, _, text, _ in items}
        x0, y0 = items[-1][0], items[-1][1]
        if len(texts) == 1:
            edge_labels.append((x0 + 4.0, y0 + 3.0, f"{len(items)} \u00d7 {items[0][2]}", items[0][3]))
        else:
            for i, (_, _, text, t) in enumerate(items):
                edge_labels.append((x0 + 4.0, y0 + 3.0 + 11.0 * i, text, t))

    segs = []
    seg_edge = []
    for e, pts in enumerate(paths):
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            segs.append((x0, y0, x1, y1))
            seg_edge.append(e)
    segments = np.array(segs, dtype=np.float64).reshape(-1, 4)

    options_of = None
    if model is not None:
        from ..graph.labels import options_summary
        sg = model.subgraphs[subgraph]
        options_of = lambda k: options_summary(sg.operators[k])  # noqa: E731
    # Constants have no edge: selecting one highlights the operators that read it.
    if model is not None:
        sg = model.subgraphs[subgraph]
        cols = sg.columns
        mask = sg.constant_mask
        for k, row in op_node.items():
            for t in cols.op_inputs(k):
                t = int(t)
                if t >= 0 and mask[t]:
                    tensor_nodes[t].append(row)
    return SceneData(subgraph, title, graph, lay, node_ids, labels, rects, paths, edge_tensor,
                     [ep.source for ep in lay.edges], [ep.target for ep in lay.edges],
                     edge_labels, segments, np.array(seg_edge, dtype=np.int64), node_index,
                     op_node, dict(tensor_edges), dict(tensor_nodes), options_of)
