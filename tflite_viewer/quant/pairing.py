"""Pairing the tensors of a quantized model with those of its float original.

First by name (same name, same shape).  Where the converter renamed a tensor, by graph
position: a QUANTIZE / DEQUANTIZE output takes its input's partner (it carries the same
values); any other op's output takes the nearest unpaired float tensor of the same shape
produced downstream of the partners of the op's inputs (same op type first, then the
fewest float ops away).  Model inputs and outputs pair by position when names differ.
Weights pair by name, else through their op's partner (same input position and shape).
What stays unpaired is reported.

Every subgraph is paired, not only the main one: subgraph k of the quantized model with
subgraph k of the float model when both have as many subgraphs (the converter keeps the
control-flow structure), else with the float subgraph of the same name.  Tensors are
identified by (subgraph, tensor index) throughout.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..model import Model
from .ranges import integer_range

VALUE_PRESERVING = {"QUANTIZE", "DEQUANTIZE"}
MAX_DEPTH = 3


Key = tuple[int, int]  # (subgraph, tensor or op index)


@dataclass
class Pairing:
    """(subgraph, quantized tensor) -> ((float subgraph, float tensor), "name" |
    "position"), over every paired subgraph."""

    tensors: dict[Key, tuple[Key, str]] = field(default_factory=dict)
    ops: dict[Key, Key] = field(default_factory=dict)          # quantized op -> float op
    weights: dict[Key, tuple[Key, str]] = field(default_factory=dict)
    subgraphs: dict[int, int] = field(default_factory=dict)    # quantized -> float subgraph
    unpaired_quantized: list[Key] = field(default_factory=list)
    unpaired_float: list[Key] = field(default_factory=list)

    def partner(self, q_tensor: Key) -> Key | None:
        hit = self.tensors.get(q_tensor) or self.weights.get(q_tensor)
        return None if hit is None else hit[0]


def is_real(t) -> bool:
    """A tensor that holds real numbers: float, or an integer type with a scale."""
    if t.type_name in ("FLOAT32", "FLOAT16", "FLOAT64", "BFLOAT16"):
        return True
    q = t.quantization
    return q is not None and q.has_scale and integer_range(t.type_name) is not None


def _producers(sg) -> dict[int, int]:
    return {o: op.index for op in sg.operators for o in op.outputs if o >= 0}


def _consumers(sg) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for op in sg.operators:
        for i in op.inputs:
            if i >= 0:
                out.setdefault(i, []).append(op.index)
    return out


def subgraph_map(quantized: Model, float_model: Model) -> dict[int, int]:
    """Quantized subgraph -> float subgraph: by position when both models have as many
    subgraphs, else by name (subgraph 0 always with subgraph 0)."""
    qs, fs = quantized.subgraphs, float_model.subgraphs
    if len(qs) == len(fs):
        return {k: k for k in range(len(qs))}
    by_name: dict[str, list[int]] = {}
    for g in fs:
        by_name.setdefault(g.name, []).append(g.index)
    out = {0: 0} if qs and fs else {}
    for g in qs[1:]:
        hits = by_name.get(g.name, []) if g.name else []
        if len(hits) == 1 and hits[0] not in out.values():
            out[g.index] = hits[0]
    return out


def pair_models(quantized: Model, float_model: Model) -> Pairing:
    """Pair every subgraph of ``quantized`` with its float counterpart (`subgraph_map`)."""
    p = Pairing()
    p.subgraphs = subgraph_map(quantized, float_model)
    for qk, fk in p.subgraphs.items():
        part = _pair_subgraph(quantized.subgraphs[qk], float_model.subgraphs[fk])
        p.tensors.update({(qk, q): ((fk, f), how) for q, (f, how) in part.tensors.items()})
        p.weights.update({(qk, q): ((fk, f), how) for q, (f, how) in part.weights.items()})
        p.ops.update({(qk, q): (fk, f) for q, f in part.ops.items()})
        p.unpaired_quantized += [(qk, q) for q in part.unpaired_quantized]
        p.unpaired_float += [(fk, f) for f in part.unpaired_float]
    for g in quantized.subgraphs:  # subgraphs without a float counterpart
        if g.index not in p.subgraphs:
            p.unpaired_quantized += [(g.index, t.index) for t in g.tensors
                                     if not t.is_constant and is_real(t)]
    paired_f = set(p.subgraphs.values())
    for g in float_model.subgraphs:
        if g.index not in paired_f:
            p.unpaired_float += [(g.index, t.index) for t in g.tensors
                                 if not t.is_constant and is_real(t)]
    return p


@dataclass
class _SubgraphPairing:
    tensors: dict[int, tuple[int, str]] = field(default_factory=dict)
    ops: dict[int, int] = field(default_factory=dict)
    weights: dict[int, tuple[int, str]] = field(default_factory=dict)
    unpaired_quantized: list[int] = field(default_factory=list)
    unpaired_float: list[int] = field(default_factory=list)


def _pair_subgraph(qsg, fsg) -> _SubgraphPairing:
    """One subgraph pair, by tensor index within each (see the module docstring)."""
    p = _SubgraphPairing()
    f_acts = [t for t in fsg.tensors if not t.is_constant and is_real(t)]
    by_name: dict[str, list] = {}
    for t in f_acts:
        by_name.setdefault(t.name, []).append(t)
    taken: set[int] = set()

    def take(qi: int, fi: int, how: str) -> None:
        p.tensors[qi] = (fi, how)
        taken.add(fi)

    q_acts = [t for t in qsg.tensors if not t.is_constant and is_real(t)]
    for t in q_acts:  # by name
        cands = [f for f in by_name.get(t.name, ()) if f.shape == t.shape and f.index not in taken]
        if t.name and len(cands) == 1:
            take(t.index, cands[0].index, "name")
    for qi, fi in list(zip(qsg.inputs, fsg.inputs)) + list(zip(qsg.outputs, fsg.outputs)):
        if qi not in p.tensors and fi not in taken and qsg.tensors[qi].shape == fsg.tensors[fi].shape \
                and is_real(qsg.tensors[qi]) and is_real(fsg.tensors[fi]):
            take(qi, fi, "position")
    # by graph position, in execution order
    f_prod, f_cons = _producers(fsg), _consumers(fsg)
    f_ops = fsg.operators
    for op in qsg.operators:
        ins = [i for i in op.inputs if i >= 0 and i in p.tensors]
        for o in op.outputs:
            if o < 0 or o in p.tensors or not is_real(qsg.tensors[o]):
                continue
            t = qsg.tensors[o]
            if op.opcode.name in VALUE_PRESERVING and ins:
                fi = p.tensors[ins[0]][0]
                if fsg.tensors[fi].shape == t.shape:
                    p.tensors[o] = (fi, "position")  # shares its partner with the input
                    continue
            best = None
            seen = set()
            queue = deque((p.tensors[i][0], 0) for i in ins)
            while queue:
                fi, depth = queue.popleft()
                if depth >= MAX_DEPTH:
                    continue
                for fop in f_cons.get(fi, ()):
                    if fop in seen:
                        continue
                    seen.add(fop)
                    for fo in f_ops[fop].outputs:
                        if fo < 0:
                            continue
                        ft = fsg.tensors[fo]
                        if fo not in taken and ft.shape == t.shape and is_real(ft):
                            key = (f_ops[fop].opcode.name != op.opcode.name, depth, fop)
                            if best is None or key < best[0]:
                                best = (key, fo)
                        queue.append((fo, depth + 1))
            if best is not None:
                take(o, best[1], "position")
    # ops: outputs paired with a float op of the same type
    for op in qsg.operators:
        outs = [o for o in op.outputs if o >= 0 and o in p.tensors]
        if not outs:
            continue
        fop = f_prod.get(p.tensors[outs[0]][0])
        if fop is not None and f_ops[fop].opcode.name == op.opcode.name:
            p.ops[op.index] = fop
    # weights: by name, else through the op partner
    f_consts = {}
    for t in fsg.tensors:
        if t.is_constant and is_real(t):
            f_consts.setdefault(t.name, []).append(t)
    for op in qsg.operators:
        for pos, i in enumerate(op.inputs):
            if i < 0 or i in p.weights:
                continue
            t = qsg.tensors[i]
            if not t.is_constant or not is_real(t):
                continue
            cands = [f for f in f_consts.get(t.name, ()) if f.shape == t.shape]
            if t.name and len(cands) == 1:
                p.weights[i] = (cands[0].index, "name")
                continue
            fop = p.ops.get(op.index)
            if fop is not None and pos < len(f_ops[fop].inputs):
                fi = f_ops[fop].inputs[pos]
                if fi >= 0 and fsg.tensors[fi].is_constant and fsg.tensors[fi].shape == t.shape:
                    p.weights[i] = (fi, "position")
    p.unpaired_quantized = [t.index for t in q_acts if t.index not in p.tensors]
    used = {fi for fi, _ in p.tensors.values()}
    p.unpaired_float = [t.index for t in f_acts if t.index not in used]
    return p
