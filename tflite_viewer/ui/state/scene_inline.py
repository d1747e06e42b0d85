"""The canvas with composites expanded (View > Fold Composites off), without Qt.

`graph.inline.expanded_arrays` gives the graph of a subgraph whose STABLEHLO_COMPOSITE
ops are replaced by their decompositions' operators.  This module gives those inlined
boxes their text (the operator's name and options, and which composite it belongs to) and
keeps, beside the `SceneData`, where every inlined box and edge comes from
(`InlineIndex`): the window selects them as operators and tensors of their own subgraph,
the debugger marks them from that subgraph's masks, breakpoints set on them are theirs.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ...graph.inline import Expanded


@dataclass
class InlineIndex:
    """Where the inlined boxes and edges of an expanded scene come from."""

    expanded: Expanded
    #: (subgraph, op) of an inlined operator -> its node row
    node_of: dict[tuple[int, int], int] = field(default_factory=dict)
    #: node row -> (subgraph, op), for the inlined rows
    origin_of: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: a composite of the shown subgraph (its op index) -> the rows of the ops inlined for it
    composite_rows: dict[int, list[int]] = field(default_factory=dict)
    #: edge row -> (subgraph, tensor) of an edge inside a decomposition
    edge_origin: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: (subgraph, tensor) inside a decomposition -> its edge rows
    tensor_edges: dict[tuple[int, int], list[int]] = field(default_factory=dict)

    def slots(self) -> list[tuple[int, int]]:
        """Every inlined (subgraph, op), in drawing order of the slots."""
        return list(self.expanded.slots)


def short_name(name: str) -> str:
    """``odml.rms_norm`` -> ``rms_norm`` (the part after the last dot)."""
    return name.rsplit(".", 1)[-1] or name


def inlined_label(model, exp: Expanded, ref: int, label_type):
    """The label of an inlined operator node (``ref = n_ops + slot``): its name, version
    and options, and on its last line the composite it belongs to and its weights."""
    from ...graph.labels import composite_title, options_summary
    sgi, k = exp.slots[ref - exp.n_ops]
    op = model.subgraphs[sgi].operators[k]
    outer_sg, outer_op = exp.groups[ref - exp.n_ops][-1]
    try:
        group = composite_title(model.subgraphs[outer_sg].operators[outer_op]) or "composite"
    except Exception:  # noqa: BLE001 - a broken options table keeps a plain name
        group = "composite"
    try:
        options = options_summary(op)
    except Exception:  # noqa: BLE001
        options = "?"
    from .scene_data import constants_text
    code = op.opcode
    sg = model.subgraphs[sgi]
    weights = constants_text(code.name, op.inputs, sg.constant_mask,
                             lambda t: tuple(sg.tensors[t].shape))
    where = f"in {short_name(group)}" + (f": {weights}" if weights else "")
    return label_type("op", code.name, f"v{code.version}", options, where, code.category,
                      None, None, {}, (sgi, k), group)


def inlined_tensor_label(model, exp: Expanded, kind: str, key: int, label_type, elide):
    """The label of a tensor node of a decomposition (a variable or source it reads)."""
    sgi, t = exp.origin_of_tensor(key)
    tensor = model.subgraphs[sgi].tensors[t]
    dims = tensor.shape_signature if tensor.shape_signature is not None else tensor.shape
    shape = "x".join("?" if d < 0 else str(d) for d in dims) or "scalar"
    return label_type(kind, elide(tensor.name or f"tensor {t}", 40), "",
                      f"{shape} {tensor.type_name.lower()}", "", kind, None, None, {}, (sgi, t))


def tensor_text(model, exp: Expanded, own):
    """Edge label text by edge key: the shown subgraph's own (``own``), or a decomposition
    tensor's shape and type."""
    cache: dict[tuple[int, int], str] = {}

    def text(key: int) -> str | None:
        if key < exp.n_tensors:
            return own(key)
        origin = exp.origin_of_tensor(key)
        out = cache.get(origin)
        if out is None:
            t = model.subgraphs[origin[0]].tensors[origin[1]]
            dims = t.shape_signature if t.shape_signature is not None else t.shape
            shape = "x".join("?" if d < 0 else str(d) for d in dims) or "scalar"
            out = cache[origin] = f"{shape} {t.type_name.lower()}"
        return out
    return text


def index_scene(exp: Expanded, labels, edge_keys: np.ndarray) -> tuple[InlineIndex, np.ndarray]:
    """The `InlineIndex` of a laid-out expanded scene, and its edge tensors with the keys
    inside decompositions replaced by -1 (they are no tensor of the shown subgraph)."""
    index = InlineIndex(exp)
    for row, lab in enumerate(labels):
        if lab.kind == "op" and lab.origin is not None:
            index.node_of[lab.origin] = row
            index.origin_of[row] = lab.origin
    top = exp.subgraph
    for (sg, k), slots in exp.composite_slots.items():
        if sg == top:
            index.composite_rows[k] = [index.node_of[exp.slots[s]] for s in slots
                                       if exp.slots[s] in index.node_of]
    tensors = np.array(edge_keys, dtype=np.int64)
    inner = defaultdict(list)
    for e in np.flatnonzero(tensors >= exp.n_tensors).tolist():
        origin = exp.origin_of_tensor(int(tensors[e]))
        index.edge_origin[e] = origin
        inner[origin].append(e)
        tensors[e] = -1
    index.tensor_edges = dict(inner)
    return index, tensors
