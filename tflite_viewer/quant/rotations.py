"""Hadamard rotations a quantizer inserted into a model, found by their matrices.

litert_quantizer's ``_hr`` recipes (the DECOMPOSED_HADAMARD_ROTATION algorithm) quantize a
weight W rotated by a normalized Hadamard matrix H (orthonormal: H Hᵀ = I), so that its
outliers are spread over the whole row before rounding.  To keep the op's result, the
activation it multiplies is rotated by the same H at run time, written with builtin ops:

* before a FULLY_CONNECTED: ``RESHAPE(x, [-1, n])``, ``FULLY_CONNECTED(·, H)``,
  ``RESHAPE(·, x.shape)``, whose result the op reads (X W ᵀ = (X H)(W H)ᵀ);
* after an EMBEDDING_LOOKUP of a rotated table: the same three ops rotate the rows it
  looked up back (E H Hᵀ = E).

A rotation is recognised by its matrix, not by the names the quantizer gives its tensors:
a FULLY_CONNECTED without bias whose weight is a square float constant of a power-of-two
size n, every entry ±1/√n, with H Hᵀ = I.  The RESHAPE on either side belongs to it when
it reads or feeds the rotation alone.  Each rotation records the op it serves (the op it
rotates the input of, or the lookup whose output it turns back) and that op's rotated
weight, which `weights` compares with the float weight rotated by the same matrix.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..match import SideGraph
from ..model import Model

#: how far a matrix entry may be from ±1/√n, and H Hᵀ from I (the matrix is float32)
TOLERANCE = 1e-5
#: ops whose weight (input 1) may be stored rotated, and where the rotation sits
ROTATED_OPS = {"FULLY_CONNECTED": "input", "EMBEDDING_LOOKUP": "output"}


@dataclass
class Rotation:
    """One rotation of subgraph ``subgraph``: its ops in execution order, its matrix (a
    tensor of ``size`` × ``size``), the ops it serves and their rotated weights."""

    subgraph: int
    ops: tuple[int, ...]
    matrix: int
    size: int
    served: tuple[int, ...] = ()
    weights: tuple[int, ...] = ()
    tensors: tuple[int, ...] = ()      # the activations inside it (rotated values)
    input: int = -1                    # the tensor it rotates
    output: int = -1                   # its result, which the served op reads (or the
    #                                    lookup's rows turned back)
    float_ops: list[tuple[int, int]] = field(default_factory=list)  # filled by pairing

    def to_dict(self) -> dict:
        return {"subgraph": self.subgraph, "ops": list(self.ops), "matrix": self.matrix,
                "size": self.size, "served": list(self.served), "weights": list(self.weights),
                "tensors": list(self.tensors), "input": self.input, "output": self.output,
                "float_ops": [list(k) for k in self.float_ops]}


def is_hadamard(matrix: np.ndarray | None) -> bool:
    """Whether ``matrix`` is a normalized Hadamard matrix (see the module docstring)."""
    if matrix is None or matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        return False
    n = matrix.shape[0]
    if n < 2 or n & (n - 1):
        return False
    h = matrix.astype(np.float64)
    if abs(abs(h[0, 0]) - 1.0 / np.sqrt(n)) > TOLERANCE:  # a float weight: seen at once
        return False
    if not np.allclose(np.abs(h), 1.0 / np.sqrt(n), rtol=0.0, atol=TOLERANCE):
        return False
    return bool(np.allclose(h @ h.T, np.eye(n), rtol=0.0, atol=TOLERANCE * n))


def find_rotations(model: Model) -> list[Rotation]:
    """Every Hadamard rotation of every subgraph, in subgraph and op order."""
    out: list[Rotation] = []
    for sg in model.subgraphs:
        g = SideGraph.of(model, sg.index)
        for k, name in enumerate(g.opcode):
            ins = g.inputs[k]
            if name != "FULLY_CONNECTED" or len(ins) < 2 or (len(ins) > 2 and ins[2] >= 0) \
                    or not g.valid(ins[1]) or not g.constant[ins[1]]:
                continue
            shape = g.shapes[ins[1]]
            if g.type_name(ins[1]) != "FLOAT32" or len(shape) != 2 or shape[0] != shape[1]:
                continue
            if is_hadamard(sg.tensors[ins[1]].values()):
                out.append(_chain(g, k, ins[1]))
    return out


def _chain(g: SideGraph, fc: int, matrix: int) -> Rotation:
    """The rotation around FULLY_CONNECTED ``fc``: the RESHAPE that only feeds it before,
    the RESHAPE that alone reads it after, and the op it serves."""
    ops = [fc]
    first_in = g.inputs[fc][0]
    p = g.producer[first_in] if first_in >= 0 else -1
    if p >= 0 and g.opcode[p] == "RESHAPE" and len(g.consumers[first_in]) == 1:
        ops.insert(0, p)
        first_in = g.inputs[p][0]
    last_out = g.outputs[fc][0]
    readers = g.consumers[last_out]
    if len(readers) == 1 and g.opcode[readers[0][0]] == "RESHAPE" and readers[0][1] == 0:
        ops.append(readers[0][0])
        last_out = g.outputs[readers[0][0]][0]
    rot = Rotation(g.subgraph, tuple(ops), matrix, g.shapes[matrix][0],
                   input=first_in, output=last_out)
    # served: the weighted ops reading the rotated activation (every tensor the rotation
    # writes holds rotated values), else the lookup whose rotated rows it turns back
    served = [k for k, pos in g.consumers[last_out]
              if pos == 0 and ROTATED_OPS.get(g.opcode[k]) == "input"]
    written = [t for k in ops for t in g.outputs[k]]
    rot.tensors = tuple(written)
    p = g.producer[first_in] if first_in >= 0 else -1
    if not served and p >= 0 and ROTATED_OPS.get(g.opcode[p]) == "output":
        served = [p]
        rot.tensors = (first_in,) + tuple(t for t in written if t != last_out)
    rot.served = tuple(served)
    rot.weights = tuple(g.inputs[k][1] for k in served if len(g.inputs[k]) > 1
                        and g.inputs[k][1] >= 0 and g.constant[g.inputs[k][1]])
    return rot


def rotated_weights(rotations: list[Rotation], model: Model
                    ) -> dict[tuple[int, int], np.ndarray]:
    """(subgraph, weight tensor) -> the matrix it is stored rotated by."""
    out = {}
    for r in rotations:
        h = model.subgraphs[r.subgraph].tensors[r.matrix].values()
        for w in r.weights:
            out[(r.subgraph, w)] = h
    return out


def rotate(values: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``values`` rotated as the quantizer rotates a weight: each run of n values along
    the last axis multiplied by the n × n ``matrix`` (float64)."""
    n = matrix.shape[0]
    v = np.asarray(values, dtype=np.float64)
    return (v.reshape(-1, n) @ matrix.astype(np.float64)).reshape(v.shape)
