"""Per-layer float fallback: what computing one quantized op in float would gain.

For each quantized op, the quantized model runs again with that op replaced, through an
after-op hook of the interpreter, by its float computation (`FloatOp`): its inputs
dequantized, the float kernel with the float model's weights (when paired, else the
dequantized ones), its outputs requantized into the op's own output parameters.  The
model's final outputs are compared with the float model's; the gain is the SQNR (and
cosine) improvement over the unmodified quantized model.  The same hook also measures the
op's own error: its quantized output against its float computation on the same inputs
(QuantizationDebugger's per-layer view, free of the error accumulated upstream).

Ops are identified by (subgraph, op): an op of a loop body is computed in float on every
iteration, and the gain is measured on the outputs of the run that executes it.
Control-flow ops themselves (WHILE, IF, CALL_ONCE) are not candidates: their work is
their subgraphs' ops, which are.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import Model
from .float_op import FloatOp, float_ops
from .metrics import average, cosine, mean, sqnr_db, tensor_metrics
from .pairing import Pairing, is_real
from .ranges import dequantize, integer_range, quantize

SKIPPED_OPS = {"QUANTIZE", "DEQUANTIZE"}
OpKey = tuple[int, int]  # (subgraph, op)


@dataclass
class FallbackGain:
    op: int
    opcode: str
    subgraph: int = 0
    weights: str = "dequantized"           # or "float model"
    sqnr_db: float | None = None           # model outputs with this op in float (mean)
    cosine: float | None = None
    gain_db: float | None = None           # sqnr_db - baseline
    cosine_gain: float | None = None
    local: dict[str, Any] | None = None    # the op's own output error (averaged)
    error: str | None = None               # why the op could not be computed in float
    per_input: list[dict[str, float]] = field(default_factory=list, repr=False)
    _local: list[dict] = field(default_factory=list, repr=False)
    #: this run's (float computation, quantized output, scale) per invocation of the op
    _calls: list[tuple] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("subgraph", "op", "opcode", "weights", "sqnr_db", "cosine",
                                              "gain_db", "cosine_gain", "local", "error")}


def _is_quantized(t) -> bool:
    q = t.quantization
    return q is not None and q.has_scale and integer_range(t.type_name) is not None \
        and t.type_name != "INT32"


def candidate_ops(model: Model) -> list[OpKey]:
    """(subgraph, op) of the ops computed on quantized values, in every subgraph: a
    quantized activation in or out, or quantized weights (hybrid ops); QUANTIZE,
    DEQUANTIZE and control-flow ops excluded."""
    out = []
    for sg in model.subgraphs:
        for op in sg.operators:
            if op.opcode.name in SKIPPED_OPS or op.opcode.is_custom or op.called_subgraphs:
                continue
            tensors = [sg.tensors[i] for i in list(op.inputs) + list(op.outputs) if i >= 0]
            if any(_is_quantized(t) for t in tensors):
                out.append((sg.index, op.index))
    return out


def float_weights_for(model: Model, float_model: Model | None, pairing: Pairing | None,
                      op: OpKey) -> dict[int, np.ndarray]:
    """The float model's values of the op's paired weights, by quantized tensor index."""
    if float_model is None or pairing is None:
        return {}
    sg = model.subgraphs[op[0]]
    out = {}
    for i in sg.operators[op[1]].inputs:
        if i >= 0 and sg.tensors[i].is_constant and (op[0], i) in pairing.weights:
            fk, fi = pairing.weights[(op[0], i)][0]
            values = float_model.subgraphs[fk].tensors[fi].values()
            if values is not None and values.shape == tuple(sg.tensors[i].shape):
                out[i] = values
    return out


class FallbackRunner:
    """Builds the float ops once and runs the fallback of each on every sample."""

    def __init__(self, model: Model, float_model: Model | None, pairing: Pairing | None,
                 ops: list[OpKey] | None = None, float_sums: str = "auto") -> None:
        self.model = model
        self.gains: dict[OpKey, FallbackGain] = {}
        self.float_ops: dict[OpKey, FloatOp] = {}
        keys = candidate_ops(model) if ops is None else ops
        weights = {}
        for k in keys:
            op = model.subgraphs[k[0]].operators[k[1]]
            self.gains[k] = FallbackGain(k[1], op.opcode.name, k[0])
            weights[k] = float_weights_for(model, float_model, pairing, k)
            if weights[k]:
                self.gains[k].weights = "float model"
        for k, fop in float_ops(model, list(self.gains), weights, float_sums).items():
            if isinstance(fop, Exception):  # reported per op, the rest still run
                self.gains[k].error = f"{type(fop).__name__}: {str(fop).splitlines()[0][:200]}"
            else:
                self.float_ops[k] = fop

    def replacements(self, k: OpKey, tensors) -> dict[int, np.ndarray]:
        """Op ``k``'s real outputs computed in float from its inputs as ``tensors`` (the
        runtime tensors of its subgraph) hold them, requantized into the outputs' own
        parameters and cast to their types: {output index: value}.  Records the op's own
        error for `end_run`."""
        fop = self.float_ops[k]
        real_in = []
        for i in fop.inputs:
            t = tensors[i]
            real_in.append(dequantize(t.data, t.quantization) if _is_quantized(t) else t.data)
        outs = fop.run(real_in)
        local = None
        new: dict[int, np.ndarray] = {}
        for o, value in zip(fop.outputs, outs):
            t = tensors[o]
            if not is_real(t):
                continue
            if _is_quantized(t):
                before = dequantize(t.data, t.quantization)
                local = (value, before, float(t.quantization.scale[0])
                         if t.quantization.scale.size == 1 else None)
                value = quantize(value, t.quantization, t.type_name)
            else:
                local = (value, np.array(t.data), None)
            # what Interpreter.set_tensor stores (its copy aside)
            new[o] = np.asarray(value, dtype=t.dtype)
        if local is not None:
            self.gains[k]._calls.append(local)
        return new

    def hook_for(self, k: OpKey):
        """An after-op hook replacing op ``k``'s outputs by their float computation, for a
        full re-run of the model."""
        sgi, opi = k

        def after(interp, ev) -> None:
            if ev.subgraph != sgi or ev.op != opi:
                return
            for o, value in self.replacements(k, interp.subgraphs[sgi].tensors).items():
                interp.set_tensor(sgi, o, value)

        return after

    def take_local(self, k: OpKey) -> dict | None:
        """The op's own error on the run just made: its last real output against its float
        computation, over every invocation of the op (all iterations of a loop body);
        None when the op did not run."""
        gain = self.gains[k]
        calls, gain._calls = gain._calls, []
        if not calls:
            return None
        if len(calls) == 1:  # (an op outside a loop)
            ref, got = np.reshape(calls[0][0], -1), np.reshape(calls[0][1], -1)
        else:
            ref = np.concatenate([np.asarray(c[0], np.float64).reshape(-1) for c in calls])
            got = np.concatenate([np.asarray(c[1], np.float64).reshape(-1) for c in calls])
        return tensor_metrics(ref, got, calls[0][2])

    def finish(self) -> list[FallbackGain]:
        for g in self.gains.values():
            if g.per_input:
                g.sqnr_db = mean([p["sqnr_db"] for p in g.per_input])
                g.cosine = mean([p["cosine"] for p in g.per_input])
                g.gain_db = mean([_gain(p["sqnr_db"], p["baseline_sqnr_db"])
                                  for p in g.per_input])
                g.cosine_gain = mean([p["cosine"] - p["baseline_cosine"] for p in g.per_input])
            measured = [x for x in g._local if x]
            if measured:
                g.local = average(measured)
        return sorted(self.gains.values(), key=lambda g: (
            g.gain_db is None, -(g.gain_db if g.gain_db is not None else 0.0), g.subgraph, g.op))


def _gain(value: float, baseline: float) -> float:
    """value - baseline, 0 when equal (both +inf: the outputs were exact either way)."""
    return 0.0 if value == baseline else value - baseline


def output_quality(reference: list[np.ndarray], approx: list[np.ndarray]) -> tuple[float, float]:
    """(SQNR dB, cosine) of the model outputs, all outputs flattened together."""
    r = np.concatenate([np.asarray(a, np.float64).reshape(-1) for a in reference])
    a = np.concatenate([np.asarray(x, np.float64).reshape(-1) for x in approx])
    return sqnr_db(r, a), cosine(r, a)
