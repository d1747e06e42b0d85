"""Pairing the tensors of a quantized model with those of its float original.

A client of the one model matcher (`tflite_viewer.match`): the float model is side A, the
quantized model side B.  What quantization analysis needs from the match:

* **activations**: each real-valued activation of the quantized model with the float
  activation it approximates: its matched tensor, or, for the tensors of the
  QUANTIZE/DEQUANTIZE ops the converter inserted, the float tensor whose values they
  carry (the match's aliases).  Only tensors of the same shape are paired (they are
  compared element by element).  ``"name"`` says the two tensors have one name;
  ``"position"`` that the graph paired them (structure, signature or position).
* **ops**: a quantized op with its matched float op of the same type;
* **weights**: each real-valued constant with its matched float constant (the match
  looks through the DEQUANTIZE of a weight-only or float16 model), else with the
  constant its op's partner reads at the same input position (a quantized model often
  has a bias per op where the float model shares one);
* **rotations**: the Hadamard rotations a quantizer inserted (`rotations`), each paired
  with the float ops its served ops pair with: neither its ops nor the rotated values
  inside it are additions to compare; a lookup's rows turned back by one stand for the
  float lookup's output.

Every subgraph is paired (subgraphs are matched by signature, position, name and as the
callee of matched control-flow ops).  Tensors are identified by (subgraph, tensor index)
throughout.  What stays unpaired is reported.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..match import VALUE_PRESERVING, ModelMatch, match_models
from ..model import Model
from .forms import widened_tensors
from .ranges import integer_range
from .rotations import Rotation, find_rotations

Key = tuple[int, int]  # (subgraph, tensor or op index)


@dataclass
class Pairing:
    """(subgraph, quantized tensor) -> ((float subgraph, float tensor), "name" |
    "position" | "rotation"), over every paired subgraph ("rotation": a lookup's rows a
    Hadamard rotation turned back, standing for the float lookup's output)."""

    tensors: dict[Key, tuple[Key, str]] = field(default_factory=dict)
    ops: dict[Key, Key] = field(default_factory=dict)          # quantized op -> float op
    weights: dict[Key, tuple[Key, str]] = field(default_factory=dict)
    subgraphs: dict[int, int] = field(default_factory=dict)    # quantized -> float subgraph
    unpaired_quantized: list[Key] = field(default_factory=list)
    unpaired_float: list[Key] = field(default_factory=list)
    rotations: list[Rotation] = field(default_factory=list)
    match: ModelMatch | None = field(default=None, repr=False)  # float = A, quantized = B

    def partner(self, q_tensor: Key) -> Key | None:
        hit = self.tensors.get(q_tensor) or self.weights.get(q_tensor)
        return None if hit is None else hit[0]


def is_real(t) -> bool:
    """A tensor that holds real numbers: float, or an integer type with a scale (or
    blockwise scales)."""
    if t.type_name in ("FLOAT32", "FLOAT16", "FLOAT64", "BFLOAT16"):
        return True
    q = t.quantization
    return q is not None and (q.has_scale or q.blockwise is not None) and \
        integer_range(t.type_name) is not None


def _how(match: ModelMatch, float_key: Key, q_key: Key) -> str:
    """"name" when the two tensors have one (non-empty) name, else "position"."""
    fa = match.a.subgraphs[float_key[0]].tensor_columns.name[float_key[1]]
    qb = match.b.subgraphs[q_key[0]].tensor_columns.name[q_key[1]]
    return "name" if fa and fa == qb else "position"


def pair_models(quantized: Model, float_model: Model) -> Pairing:
    """Pair every subgraph of ``quantized`` with its float counterpart (module docstring)."""
    m = match_models(float_model, quantized)
    p = Pairing(match=m)
    p.subgraphs = {qk: fk for fk, qk in m.subgraphs.items()}
    for qk, fk in p.subgraphs.items():
        qsg, fsg = quantized.subgraphs[qk], float_model.subgraphs[fk]
        q_const, f_const = qsg.constant_mask, fsg.constant_mask
        for t in qsg.tensors:
            if q_const[t.index] or not is_real(t):
                continue
            hit = m.tensor_in_a((qk, t.index), aliases=True)
            if hit is None or f_const[hit[1]]:
                continue
            ft = fsg.tensors[hit[1]]
            if ft.shape == t.shape and is_real(ft):
                direct = m.tensor_in_a((qk, t.index)) is not None
                p.tensors[(qk, t.index)] = (hit, _how(m, hit, (qk, t.index)) if direct
                                             else "position")
        for t in qsg.tensors:  # weights the match paired (through a DEQUANTIZE, too)
            if q_const[t.index] and is_real(t):
                hit = m.tensor_in_a((qk, t.index))
                if hit is not None and f_const[hit[1]] and \
                        fsg.tensors[hit[1]].shape == t.shape:
                    p.weights[(qk, t.index)] = (hit, _how(m, hit, (qk, t.index)))
        for (fs, fo), (qs, qo), _ in m.op_pairs():
            if qs != qk:
                continue
            fop, qop = fsg.operators[fo], qsg.operators[qo]
            if fop.name == qop.name:
                p.ops[(qk, qo)] = (fk, fo)
            for pos, qi in enumerate(qop.inputs):
                if qi < 0 or (qk, qi) in p.weights or not q_const[qi] or \
                        not is_real(qsg.tensors[qi]):
                    continue
                hit = m.tensor_in_a((qk, qi))
                if hit is not None and f_const[hit[1]] and \
                        fsg.tensors[hit[1]].shape == qsg.tensors[qi].shape:
                    p.weights[(qk, qi)] = (hit, _how(m, hit, (qk, qi)))
                    continue
                fi = fop.inputs[pos] if pos < len(fop.inputs) else -1
                if fi >= 0 and f_const[fi] and fsg.tensors[fi].shape == qsg.tensors[qi].shape:
                    p.weights[(qk, qi)] = ((fk, fi), "position")
    p.rotations = find_rotations(quantized)
    inside = _pair_rotations(p, quantized)
    paired_f = {f for f, _ in p.tensors.values()}
    for g in quantized.subgraphs:
        skip = widened_tensors(g)
        p.unpaired_quantized += [(g.index, t.index) for t in g.tensors
                                 if not t.is_constant and is_real(t)
                                 and (g.index, t.index) not in p.tensors
                                 and (g.index, t.index) not in inside
                                 and t.index not in skip]
    for g in float_model.subgraphs:
        skip = widened_tensors(g)
        p.unpaired_float += [(g.index, t.index) for t in g.tensors
                             if not t.is_constant and is_real(t)
                             and (g.index, t.index) not in paired_f and t.index not in skip]
    return p


def _pair_rotations(p: Pairing, quantized: Model) -> set[Key]:
    """Pair each rotation with the float ops of the ops it serves; the lookup rows a
    rotation turns back take the float lookup output's pairing from the rotated rows.
    Returns the rotated activations (compared with nothing)."""
    inside: set[Key] = set()
    for r in p.rotations:
        g = r.subgraph
        r.float_ops = [p.match.op_in_a((g, k)) for k in r.served
                       if p.match.op_in_a((g, k)) is not None]
        moved = p.tensors.get((g, r.input)) if r.input in r.tensors else None
        for t in r.tensors:
            p.tensors.pop((g, t), None)
        if moved is not None and (g, r.output) not in p.tensors and \
                tuple(quantized.subgraphs[g].tensors[r.output].shape) == \
                tuple(quantized.subgraphs[g].tensors[r.input].shape):
            p.tensors[(g, r.output)] = (moved[0], "rotation")
        inside |= {(g, t) for t in r.tensors}
    return inside


def added_ops(p: Pairing, quantized: Model) -> list[dict]:
    """The quantized model's ops the float model has no partner for, other than the
    QUANTIZE/DEQUANTIZE quantization inserts and the ops of a rotation (paired with the
    float ops they serve): {subgraph, op, opcode, why}."""
    rotation_ops = {(r.subgraph, k) for r in p.rotations for k in r.ops}
    out = []
    for (g, k), why in p.match.inserted_ops():
        opcode = quantized.subgraphs[g].operators[k].opcode.name
        if opcode not in VALUE_PRESERVING and (g, k) not in rotation_ops:
            out.append({"subgraph": g, "op": k, "opcode": opcode, "why": why})
    return out
