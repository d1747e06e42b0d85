"""Per-layer float fallback: what computing one quantized op in float would gain.

For each quantized op, the quantized model runs again with that op replaced, through an
after-op hook of the interpreter, by its float computation (`FloatOp`): its inputs
dequantized, the float kernel with the float model's weights (when paired, else the
dequantized ones), its outputs requantized into the op's own output parameters.  The
model's final outputs are compared with the float model's; the gain is the SQNR (and
cosine) improvement over the unmodified quantized model.  The same hook also measures the
op's own error: its quantized output against its float computation on the same inputs
(QuantizationDebugger's per-layer view, free of the error accumulated upstream).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model import Model
from .float_op import FloatOp
from .metrics import average, cosine, sqnr_db, tensor_metrics
from .pairing import Pairing, is_real
from .ranges import dequantize, integer_range, quantize

SKIPPED_OPS = {"QUANTIZE", "DEQUANTIZE"}


@dataclass
class FallbackGain:
    op: int
    opcode: str
    weights: str = "dequantized"           # or "float model"
    sqnr_db: float | None = None           # model outputs with this op in float (mean)
    cosine: float | None = None
    gain_db: float | None = None           # sqnr_db - baseline
    cosine_gain: float | None = None
    local: dict[str, Any] | None = None    # the op's own output error (averaged)
    error: str | None = None               # why the op could not be computed in float
    per_input: list[dict[str, float]] = field(default_factory=list, repr=False)
    _local: list[dict] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("op", "opcode", "weights", "sqnr_db", "cosine",
                                              "gain_db", "cosine_gain", "local", "error")}


def _is_quantized(t) -> bool:
    q = t.quantization
    return q is not None and q.has_scale and integer_range(t.type_name) is not None \
        and t.type_name != "INT32"


def candidate_ops(model: Model) -> list[int]:
    """Ops computed on quantized values: a quantized activation in or out, or quantized
    weights (hybrid ops); QUANTIZE and DEQUANTIZE excluded."""
    sg = model.subgraphs[0]
    out = []
    for op in sg.operators:
        if op.opcode.name in SKIPPED_OPS or op.opcode.is_custom:
            continue
        tensors = [sg.tensors[i] for i in list(op.inputs) + list(op.outputs) if i >= 0]
        if any(_is_quantized(t) for t in tensors):
            out.append(op.index)
    return out


def float_weights_for(model: Model, float_model: Model | None, pairing: Pairing | None,
                      op_index: int) -> dict[int, np.ndarray]:
    if float_model is None or pairing is None:
        return {}
    sg, fsg = model.subgraphs[0], float_model.subgraphs[0]
    out = {}
    for i in sg.operators[op_index].inputs:
        if i >= 0 and sg.tensors[i].is_constant and i in pairing.weights:
            values = fsg.tensors[pairing.weights[i][0]].values()
            if values is not None and values.shape == tuple(sg.tensors[i].shape):
                out[i] = values
    return out


class FallbackRunner:
    """Builds the float ops once and runs the fallback of each on every sample."""

    def __init__(self, model: Model, float_model: Model | None, pairing: Pairing | None,
                 ops: list[int] | None = None) -> None:
        from ..schema import schema_generated as S
        self.model = model
        root = S.Model.GetRootAs(bytes(np.asarray(model.data, dtype=np.uint8)), 0)
        self.gains: dict[int, FallbackGain] = {}
        self.float_ops: dict[int, FloatOp] = {}
        for k in (candidate_ops(model) if ops is None else ops):
            op = model.subgraphs[0].operators[k]
            gain = FallbackGain(k, op.opcode.name)
            weights = float_weights_for(model, float_model, pairing, k)
            if weights:
                gain.weights = "float model"
            try:
                self.float_ops[k] = FloatOp(model, k, weights, root)
            except Exception as exc:  # noqa: BLE001 - reported per op, the rest still run
                gain.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            self.gains[k] = gain

    def hook_for(self, k: int):
        fop = self.float_ops[k]
        gain = self.gains[k]

        def after(interp, ev) -> None:
            if ev.subgraph != 0 or ev.op != k:
                return
            tensors = interp.subgraphs[0].tensors
            real_in = []
            for i in fop.inputs:
                t = tensors[i]
                real_in.append(dequantize(t.data, t.quantization) if _is_quantized(t) else t.data)
            outs = fop.run(real_in)
            local = {}
            for o, value in zip(fop.outputs, outs):
                t = tensors[o]
                if not is_real(t):
                    continue
                if _is_quantized(t):
                    before = dequantize(t.data, t.quantization)
                    local = tensor_metrics(value, before, float(t.quantization.scale[0])
                                           if t.quantization.scale.size == 1 else None)
                    interp.set_tensor(0, o, quantize(value, t.quantization, t.type_name))
                else:
                    local = tensor_metrics(value, t.data)
                    interp.set_tensor(0, o, value)
            gain._local.append(local)

        return after

    def finish(self) -> list[FallbackGain]:
        for g in self.gains.values():
            if g.per_input:
                g.sqnr_db = float(np.mean([p["sqnr_db"] for p in g.per_input]))
                g.cosine = float(np.mean([p["cosine"] for p in g.per_input]))
                g.gain_db = float(np.mean([_gain(p["sqnr_db"], p["baseline_sqnr_db"])
                                           for p in g.per_input]))
                g.cosine_gain = float(np.mean([p["cosine"] - p["baseline_cosine"]
                                               for p in g.per_input]))
            measured = [x for x in g._local if x]
            if measured:
                g.local = average(measured)
        return sorted(self.gains.values(), key=lambda g: (
            g.gain_db is None, -(g.gain_db if g.gain_db is not None else 0.0), g.op))


def _gain(value: float, baseline: float) -> float:
    """value - baseline, 0 when equal (both +inf: the outputs were exact either way)."""
    return 0.0 if value == baseline else value - baseline


def output_quality(reference: list[np.ndarray], approx: list[np.ndarray]) -> tuple[float, float]:
    """(SQNR dB, cosine) of the model outputs, all outputs flattened together."""
    r = np.concatenate([np.asarray(a, np.float64).reshape(-1) for a in reference])
    a = np.concatenate([np.asarray(x, np.float64).reshape(-1) for x in approx])
    return sqnr_db(r, a), cosine(r, a)
