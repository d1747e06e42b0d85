"""Everything the graph canvas draws, computed without Qt so it can run in a worker thread.

The worker turns (model, subgraph) into a `SceneData`: the networkx graph, its layout, the
text of every box and edge label and flat numpy arrays of rectangles and segments.  The
canvas then only has to wrap those arrays in a few batch items, which keeps the GUI thread
free even for 20,000-operator graphs.  Label widths are measured with a `TextMeasure` (a
per-character advance table taken from the real fonts on the GUI thread), because Qt's
font metrics are not something to lean on from a worker thread.
"""
from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Hashable

import numpy as np

from ...graph.arrays import KINDS, OP, GraphArrays, cycle_defects, graph_arrays
from ...graph.build import build_graph
from ...graph.layout import Layout, layout, layout_arrays
from ...model.dtypes import type_name
from ...model.op_metadata import input_roles
from .edge_routes import edge_label_places, polyline_segments, spread_ports

if TYPE_CHECKING:
    import networkx as nx

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
    #: (subgraph, op or tensor) of a box inlined from a composite's decomposition (the
    #: canvas with composites expanded), and that composite's name; None and "" otherwise
    origin: tuple[int, int] | None = None
    group: str = ""


@dataclass
class SceneData:
    """A laid-out subgraph ready to draw (see the module docstring)."""

    subgraph: int
    title: str
    graph_factory: Callable[[], nx.MultiDiGraph]  # the networkx graph, built on first use
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
    defects: list[str] = field(default_factory=list)
    #: composites drawn expanded: where the inlined boxes and edges come from
    #: (`scene_inline.InlineIndex`); None for the folded drawing
    inline: object | None = None
    #: laid out with composites expanded (asked for; a subgraph without any looks the same)
    expanded: bool = False
    _graph: nx.MultiDiGraph | None = field(default=None, repr=False)

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The subgraph's networkx graph (analysis only: drawing runs on the arrays)."""
        if self._graph is None:
            self._graph = self.graph_factory()
        return self._graph

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
    roles = input_roles(op_name)
    parts = []
    for pos, t in enumerate(inputs):
        t = int(t)
        if t < 0 or not is_const[t]:
            continue
        parts.append(f"{roles.get(pos, f'#{pos}')} {_shape_text(shapes(t))}")
    if len(parts) > _MAX_CONSTANTS_SHOWN:
        parts = parts[:_MAX_CONSTANTS_SHOWN] + [f"+{len(parts) - _MAX_CONSTANTS_SHOWN}"]
    return ", ".join(parts)


def _labels_for_model(model, subgraph: int, ga: GraphArrays, exp=None) -> list[NodeLabel]:
    """The text of every box, by node row, from the reader's columns (no networkx); with
    ``exp`` (`graph.inline.Expanded`) the inlined boxes too."""
    from ...graph.build import called_subgraphs
    from ...graph.labels import composite_title, options_summary  # graph layer: no Qt

    sg = model.subgraphs[subgraph]
    is_const = sg.constant_mask
    cols = sg.columns
    tcols = sg.tensor_columns
    codes = model.operator_codes
    eager = cols.opcode_index.size <= EAGER_OPTIONS_LIMIT
    calls = called_subgraphs(sg)
    shape = tcols.shape.__getitem__
    opcode_index = cols.opcode_index.tolist()
    op_code: dict[int, tuple[str, str, str]] = {}  # opcode index -> name, version, category
    constants: dict[tuple, str] = {}  # (op name, constant inputs) -> text; weights are shared
    has_const = np.zeros(max(len(opcode_index), 1), dtype=bool)
    const_inputs = np.full(len(cols.inputs), -2, dtype=np.int64)  # -2: not a constant
    if len(cols.inputs):
        ok = cols.inputs >= 0
        ok[ok] = is_const[cols.inputs[ok]]
        owner = np.repeat(np.arange(len(opcode_index)), np.diff(cols.input_offsets))
        has_const[owner[ok]] = True
        const_inputs[ok] = cols.inputs[ok]
    offsets = cols.input_offsets.tolist()
    labels: list[NodeLabel] = []
    n_ops, n_tensors = len(opcode_index), len(tcols.name)
    for kind, k in zip(ga.kind.tolist(), ga.ref.tolist()):
        if exp is not None and (k >= n_ops if kind == OP else k >= n_tensors):
            from .scene_inline import inlined_label, inlined_tensor_label
            labels.append(inlined_label(model, exp, k, NodeLabel) if kind == OP else
                          inlined_tensor_label(model, exp, KINDS[kind], k, NodeLabel, _elide))
            continue
        if kind == OP:
            ci = opcode_index[k]
            facts = op_code.get(ci)
            if facts is None:
                code = codes[ci]
                facts = op_code[ci] = (code.name, f"v{code.version}", code.category)
            name = facts[0]
            version = facts[1]
            if name == "STABLEHLO_COMPOSITE":  # its own name says what it computes
                try:
                    title = composite_title(sg.operators[k])
                except Exception:  # noqa: BLE001 - a broken options table keeps the op name
                    title = None
                if title:
                    name, version = title, f"composite {facts[1]}"
            options: str | None = None
            if eager:
                try:
                    options = options_summary(sg.operators[k])
                except Exception:  # noqa: BLE001 - show the box even with broken options
                    options = "?"
            text = ""
            if has_const[k]:
                key = (facts[0], const_inputs[offsets[k]:offsets[k + 1]].tobytes())
                text = constants.get(key)
                if text is None:
                    text = constants[key] = constants_text(facts[0], cols.op_inputs(k),
                                                           is_const, shape)
            labels.append(NodeLabel("op", name, version, options, text, facts[2], k, None,
                                    dict(calls.get(k, {}))))
        else:
            name = KINDS[kind]
            dims = tcols.shape_signature[k] or tcols.shape[k]
            labels.append(NodeLabel(name, _elide(tcols.name[k] or f"tensor {k}", 40), "",
                                    _shape_text(dims) + " " + type_name(int(tcols.type[k])).lower(),
                                    "", name, None, k))
    return labels


def _labels_for_graph(graph: nx.MultiDiGraph) -> list[NodeLabel]:
    """Labels from node attributes alone (synthetic graphs, benchmarks), in node order."""
    labels = []
    for node, attrs in graph.nodes(data=True):
        kind = attrs.get("kind", "op")
        if kind == "op":
            name = attrs.get("name") or attrs.get("opcode") or "?"
            labels.append(NodeLabel("op", name, f"v{attrs.get('version', 1)}", "", "",
                                    attrs.get("category", "other"), attrs.get("index")))
        else:
            t = attrs.get("tensor")
            labels.append(NodeLabel(kind, str(attrs.get("name") or f"tensor {t}"), "", "", "",
                                    kind, None, t))
    return labels


def _label_size(lab: NodeLabel, measure: TextMeasure) -> tuple[float, float]:
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


def _sizes(labels: list[NodeLabel], measure: TextMeasure) -> tuple[np.ndarray, np.ndarray]:
    """Box widths and heights by row; identical labels (most of a deep model) measured once."""
    cache: dict[tuple, tuple[float, float]] = {}
    out = []
    for lab in labels:
        key = (lab.kind, lab.title, lab.version, lab.options, lab.constants)
        wh = cache.get(key)
        if wh is None:
            wh = cache[key] = _label_size(lab, measure)
        out.append(wh)
    wh = np.asarray(out, dtype=np.float64).reshape(-1, 2)
    return np.ascontiguousarray(wh[:, 0]), np.ascontiguousarray(wh[:, 1])


def same_structure(lay: Layout, ids: list, src: np.ndarray, dst: np.ndarray, tensors) -> bool:
    """Whether a layout was made for a graph with exactly these nodes and edges."""
    a = lay.arrays
    if a is None or len(a.ids) != len(ids) or len(a.edge_src) != len(src):
        return False
    return (list(a.ids) == list(ids) and np.array_equal(a.edge_src, src)
            and np.array_equal(a.edge_dst, dst) and list(a.tensors) == list(tensors))


def build_scene_data(model, subgraph: int = 0, measure: TextMeasure | None = None,
                     graph: nx.MultiDiGraph | None = None,
                     reuse_layout: Layout | None = None,
                     computed_shapes: dict[int, tuple[int, ...]] | None = None,
                     expand_composites: bool = False) -> SceneData:
    """Graph, layout and labels of one subgraph (or of ``graph`` when no model is given).

    With a model the whole path runs on arrays (`graph.arrays`, `graph.layout.layout_arrays`);
    the networkx graph is made only if someone asks for ``SceneData.graph``.
    ``computed_shapes``: tensor -> the shape its producer computes, for tensors whose stored
    shape is stale after an edit; their edge labels show the computed shape and the stale
    one (``1x48x96x16 float32 \u2260 stored 1x48x48x16``).

    ``reuse_layout``: the layout of an earlier version of the same subgraph.  After an edit
    that changed only labels (options, versions, names, shapes), the boxes stay where they
    were and only the text is new; it is used only if the graph still has exactly its nodes
    and edges and every new text fits its old box (a longer options line, "3x3 s2x1 SAME
    relu", would be cut), else the subgraph is laid out afresh.

    ``expand_composites``: every STABLEHLO_COMPOSITE drawn as the operators of its
    decomposition, inline (`graph.inline`); ``SceneData.inline`` then says where each
    inlined box and edge comes from.  A subgraph without composites is drawn as always.
    """
    measure = measure or TextMeasure()
    exp = None
    if graph is None and expand_composites:
        from ...graph.inline import expanded_arrays
        exp = expanded_arrays(model, subgraph)
        if not exp.inlined:
            exp = None
    if exp is not None:
        ga = exp.arrays
        labels = _labels_for_model(model, subgraph, ga, exp)
        title = model.subgraphs[subgraph].display_name
        ids, src, dst, tensors = ga.ids, ga.src, ga.dst, ga.tensor.tolist()
        factory = functools.partial(build_graph, model, subgraph)
        defects = list(ga.defects)
        reuse_layout = None
    elif graph is None:
        ga = graph_arrays(model, subgraph)
        labels = _labels_for_model(model, subgraph, ga)
        title = model.subgraphs[subgraph].display_name
        ids, src, dst, tensors = ga.ids, ga.src, ga.dst, ga.tensor.tolist()
        factory = functools.partial(build_graph, model, subgraph)
        defects = list(ga.defects)
    else:
        labels = _labels_for_graph(graph) if model is None else _labels_from_graph_nodes(model, subgraph, graph)
        title = graph.graph.get("name", "graph") if model is None else model.subgraphs[subgraph].display_name
        factory = functools.partial(lambda g: g, graph)
        defects = list(graph.graph.get("defects", ()))
        ga = None
    if reuse_layout is not None and (ga is None or not same_structure(
            reuse_layout, ids, src, dst, tensors)):
        reuse_layout = None
    lay = _place(labels, measure, ga, graph, reuse_layout)
    if ga is not None and lay is not reuse_layout and lay.arrays.reversed.any() and exp is None:
        defects += cycle_defects(model, subgraph)
    a = lay.arrays
    node_ids = a.ids
    node_index = {n: i for i, n in enumerate(node_ids)}
    rects = np.stack([a.x, a.y, a.w, a.h], axis=1).reshape(-1, 4)
    op_node = {lab.op_index: i for i, lab in enumerate(labels) if lab.kind == "op"
               and lab.op_index is not None}
    paths = spread_ports(a, rects, np.arange(len(node_ids)))

    edge_tensor = np.array([t if t is not None else -1 for t in a.tensors], dtype=np.int64).reshape(-1)
    tensor_text = _tensor_text(model, subgraph, graph, computed_shapes)
    inline = None
    if exp is not None:
        from .scene_inline import index_scene
        from .scene_inline import tensor_text as inline_text
        tensor_text = inline_text(model, exp, tensor_text)
        keys = edge_tensor
        inline, edge_tensor = index_scene(exp, labels, keys)
    tensor_edges: dict[int, list[int]] = defaultdict(list)
    for e, t in enumerate(edge_tensor.tolist()):
        if t >= 0:
            tensor_edges[t].append(e)
    tensor_nodes = _tensor_nodes(model, subgraph, labels, op_node)

    edge_labels = edge_label_places(a, paths, keys if exp is not None else edge_tensor,
                                    tensor_text)
    segments, seg_edge = polyline_segments(paths)

    options_of = None
    if model is not None:
        from ...graph.labels import options_summary
        sg = model.subgraphs[subgraph]
        options_of = lambda k: options_summary(sg.operators[k])  # noqa: E731
    ids = node_ids
    return SceneData(subgraph, title, factory, lay, node_ids, labels, rects, paths, edge_tensor,
                     [ids[u] for u in a.edge_src.tolist()], [ids[v] for v in a.edge_dst.tolist()],
                     edge_labels, segments, seg_edge, node_index,
                     op_node, dict(tensor_edges), dict(tensor_nodes), options_of, None, defects,
                     inline=inline, expanded=bool(expand_composites))


def _place(labels: list[NodeLabel], measure: TextMeasure, ga, graph, reuse_layout: Layout | None
           ) -> Layout:
    """The boxes' places: ``reuse_layout`` (of the same structure) when every new text
    fits its old box (the boxes stay where they were), else a new layered layout."""
    widths, heights = _sizes(labels, measure)
    if reuse_layout is not None:
        old = reuse_layout.arrays
        if (widths <= old.w + 0.5).all() and (heights <= old.h + 0.5).all():
            return reuse_layout
    if ga is not None:
        return layout_arrays(ga, widths, heights, layer_gap=LAYER_GAP, node_gap=NODE_GAP)
    row = {n: i for i, n in enumerate(graph.nodes)}
    return layout(graph, lambda node, _attrs: (widths[row[node]], heights[row[node]]),
                  layer_gap=LAYER_GAP, node_gap=NODE_GAP)


def _tensor_nodes(model, subgraph: int, labels: list[NodeLabel], op_node: dict[int, int]
                  ) -> dict[int, list[int]]:
    """Tensor -> the boxes a selection of it highlights: its own (an input, an output),
    and for a constant, which has no edge, the operators that read it."""
    tensor_nodes: dict[int, list[int]] = defaultdict(list)
    for i, lab in enumerate(labels):
        if lab.tensor is not None and lab.kind != "op":
            tensor_nodes[int(lab.tensor)].append(i)
    if model is not None:
        sg = model.subgraphs[subgraph]
        cols, mask = sg.columns, sg.constant_mask
        for k, row in op_node.items():
            for t in cols.op_inputs(k).tolist():
                if t >= 0 and mask[t]:
                    tensor_nodes[t].append(row)
    return tensor_nodes


def _labels_from_graph_nodes(model, subgraph: int, graph: nx.MultiDiGraph) -> list[NodeLabel]:
    """Model labels in the node order of a given networkx graph of that subgraph."""
    ga = graph_arrays(model, subgraph)
    by_id = dict(zip(ga.ids, _labels_for_model(model, subgraph, ga)))
    return [by_id[n] for n in graph.nodes]


def _tensor_text(model, subgraph: int, graph: nx.MultiDiGraph | None,
                 computed_shapes: dict[int, tuple[int, ...]] | None = None) -> Callable[[int], str | None]:
    """``tensor -> "1x16x16x8 float32"`` for edge labels (None: no label); a tensor of
    ``computed_shapes`` shows that shape with its stale stored one (`edge_label_text`)."""
    computed = computed_shapes or {}
    if model is None:
        info_of = {int(k): d["info"] for _u, _v, k, d in graph.edges(keys=True, data=True) if "info" in d}
        return lambda t: edge_label_text(info_of[t], computed.get(t)) if t in info_of else None
    tcols = model.subgraphs[subgraph].tensor_columns
    types = tcols.type.tolist()
    cache: dict[tuple, str] = {}  # (shape, type) -> text: a deep model repeats a few shapes

    def text(t: int) -> str:
        dims = tcols.shape_signature[t] if tcols.shape_signature[t] is not None else tcols.shape[t]
        key = (dims, types[t])
        out = cache.get(key)
        if out is None:
            out = cache[key] = f"{_shape_text(dims)} {type_name(types[t]).lower()}"
        return out
    if not computed:
        return text

    def flagged(t: int) -> str:
        shape = computed.get(t)
        if shape is None:
            return text(t)
        sig = tcols.shape_signature[t]
        dynamic = [sig is not None and len(sig) == len(shape) and sig[i] < 0 for i in range(len(shape))]
        dims = "x".join("?" if dyn else str(d) for d, dyn in zip(shape, dynamic)) or "scalar"
        stored, dtype = text(t).rsplit(" ", 1)
        if dims == stored:  # they differ where the signature leaves the size open: say how
            dims = "x".join(map(str, shape)) or "scalar"
            stored = "x".join(str(int(d)) for d in tcols.shape[t]) or "scalar"
        return f"{dims} {dtype} \u2260 stored {stored}"
    return flagged
