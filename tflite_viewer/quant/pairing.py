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
* **weights**: each real-valued constant with its matched float constant, else with the
  constant its op's partner reads at the same input position (a quantized model often
  has a bias per op where the float model shares one).

Every subgraph is paired (subgraphs are matched by signature, position, name and as the
callee of matched control-flow ops).  Tensors are identified by (subgraph, tensor index)
throughout.  What stays unpaired is reported.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..match import ModelMatch, match_models
from ..model import Model
from .ranges import integer_range

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
    match: ModelMatch | None = field(default=None, repr=False)  # float = A, quantized = B

    def partner(self, q_tensor: Key) -> Key | None:
        hit = self.tensors.get(q_tensor) or self.weights.get(q_tensor)
        return None if hit is None else hit[0]


def is_real(t) -> bool:
    """A tensor that holds real numbers: float, or an integer type with a scale."""
    if t.type_name in ("FLOAT32", "FLOAT16", "FLOAT64", "BFLOAT16"):
        return True
    q = t.quantization
    return q is not None and q.has_scale and integer_range(t.type_name) is not None


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
    paired_f = {f for f, _ in p.tensors.values()}
    for g in quantized.subgraphs:
        p.unpaired_quantized += [(g.index, t.index) for t in g.tensors
                                 if not t.is_constant and is_real(t)
                                 and (g.index, t.index) not in p.tensors]
    for g in float_model.subgraphs:
        p.unpaired_float += [(g.index, t.index) for t in g.tensors
                             if not t.is_constant and is_real(t)
                             and (g.index, t.index) not in paired_f]
    return p
