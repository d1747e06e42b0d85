"""The quantization analysis of a model, optionally against its float original.

>>> from tflite_viewer.quant import analyze
>>> report = analyze("model_int8.tflite", float_model="model_float.tflite", samples=10,
...                  per_layer_fallback=True)
>>> report.findings            # spec violations, from the file alone
>>> report.ranked()[0]         # the tensor with the lowest SQNR
>>> report.fallback[0]         # the op whose float fallback gains most
>>> report.to_json()           # strict JSON (no NaN / Infinity)

Both models run on the same samples (`tflite_viewer.quant.samples`); every paired tensor
gets the metrics of `tflite_viewer.quant.metrics` per sample and averaged.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..model import Model, load_model
from ..model.errors import TFLiteViewerError
from . import samples as smp
from .activations import ActivationStats, new_stats
from .fallback import FallbackGain, FallbackRunner, output_quality
from .metrics import average, badness, tensor_metrics
from .pairing import Pairing, is_real, pair_models
from .ranges import dequantize, integer_range
from .runner import ModelRunner
from .spec import Finding, check_spec
from .weights import WeightReport, analyze_weights

Progress = Callable[[int, int, str], None]


class Cancelled(TFLiteViewerError):
    """The analysis was cancelled (the window's Cancel button)."""


@dataclass
class TensorReport:
    """One activation of the quantized model (subgraph 0) and what was measured on it."""

    tensor: int
    name: str
    type_name: str
    shape: tuple[int, ...]
    op: int | None                    # the producing op (None: a model input)
    opcode: str
    float_tensor: int | None = None
    paired_by: str | None = None
    metrics: dict[str, Any] | None = None
    per_input: list[dict[str, Any]] = field(default_factory=list)
    activation: ActivationStats | None = None
    #: the first sample's values (float, dequantized), for the window's side-by-side view
    sample_values: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def to_dict(self, per_input: bool = True) -> dict[str, Any]:
        d = {"tensor": self.tensor, "name": self.name, "type_name": self.type_name,
             "shape": list(self.shape), "op": self.op, "opcode": self.opcode,
             "float_tensor": self.float_tensor, "paired_by": self.paired_by,
             "metrics": self.metrics}
        if per_input:
            d["per_input"] = self.per_input
        if self.activation is not None:
            d["activation"] = self.activation.to_dict()
        return d


@dataclass
class QuantReport:
    model: str
    float_model: str | None
    samples: int
    findings: list[Finding]
    weights: list[WeightReport]
    tensors: list[TensorReport]
    unpaired_quantized: list[dict[str, Any]] = field(default_factory=list)
    unpaired_float: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, Any] | None = None           # model outputs: sqnr/cosine per input
    fallback: list[FallbackGain] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def compared(self) -> list[TensorReport]:
        return [t for t in self.tensors if t.metrics is not None]

    def ranked(self, metric: str = "sqnr_db") -> list[TensorReport]:
        """Compared tensors, worst first by ``metric``."""
        return sorted(self.compared(), key=lambda t: (
            -badness(metric, t.metrics.get(metric)), -1 if t.op is None else t.op, t.tensor))

    def tensor(self, index: int) -> TensorReport | None:
        return next((t for t in self.tensors if t.tensor == index), None)

    def fallback_for(self, op: int | None) -> FallbackGain | None:
        return next((g for g in self.fallback if g.op == op), None)

    def to_dict(self) -> dict[str, Any]:
        return _finite({
            "model": self.model, "float_model": self.float_model, "samples": self.samples,
            "findings": [f.to_dict() for f in self.findings],
            "weights": [w.to_dict() for w in self.weights],
            "tensors": [t.to_dict() for t in self.ranked()] + [
                t.to_dict() for t in self.tensors if t.metrics is None],
            "unpaired_quantized": self.unpaired_quantized,
            "unpaired_float": self.unpaired_float,
            "outputs": self.outputs,
            "fallback": [g.to_dict() for g in self.fallback],
        })

    def to_json(self, indent: int | None = 1) -> str:
        import json
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)


def _finite(obj: Any) -> Any:
    """Strict-JSON values: non-finite floats become None (an SQNR of +inf means no error at
    all, which max_abs_error 0 in the same row says)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (np.floating,)):
        return _finite(float(obj))
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _load(m: Model | str | os.PathLike | bytes | None) -> Model | None:
    if m is None or isinstance(m, Model):
        return m
    return load_model(m)


def _label(m: Model, given) -> str:
    return str(given) if isinstance(given, (str, os.PathLike)) else (
        str(m.path) if m.path is not None else "<bytes>")


def make_samples(model: Model, float_model: Model | None, *, count: int = 10, seed: int = 0,
                 npz: str | os.PathLike | None = None, images: str | os.PathLike | None = None,
                 given: Sequence | None = None) -> list[smp.Sample]:
    """The samples of an analysis: given arrays, a .npz, an image folder, else seeded ones
    (from the float model when there is one: its inputs are what the data looks like)."""
    source = float_model if float_model is not None else model
    if given is not None:
        return smp.given_samples(source, given)[:count] if count else smp.given_samples(source, given)
    if npz is not None:
        return smp.npz_samples(model, npz, count)
    if images is not None:
        return smp.image_samples(model, images, count)
    return smp.seeded_samples(source, count, seed)


def analyze(model: Model | str | os.PathLike | bytes,
            float_model: Model | str | os.PathLike | bytes | None = None, *,
            samples: int = 10, seed: int = 0, inputs: str | os.PathLike | None = None,
            images: str | os.PathLike | None = None, given: Sequence | None = None,
            per_layer_fallback: bool = False, fallback_ops: Sequence[int] | None = None,
            backend: str = "interpreter",
            keep_values: bool = False, progress: Progress | None = None,
            cancel: Callable[[], bool] | None = None) -> QuantReport:
    """Spec checks, weight and activation analysis, and (with ``float_model``) the float vs
    quantized comparison of every paired tensor and, with ``per_layer_fallback``, the gain
    of computing each quantized op (or each of ``fallback_ops``) in float.  ``backend``
    "litert" reads the tensors from LiteRT instead of this interpreter (no fallback then).
    ``progress(done, total, message)`` is called as it goes; ``cancel()`` returning True
    stops it with `Cancelled`.  See the module docstring."""
    qm = _load(model)
    fm = _load(float_model)
    findings = check_spec(qm)
    pairing: Pairing | None = pair_models(qm, fm) if fm is not None else None
    weights = analyze_weights(qm, fm, pairing)
    batch = make_samples(qm, fm, count=samples, seed=seed, npz=inputs, images=images, given=given)
    qrun = ModelRunner(qm, backend)
    frun = ModelRunner(fm, backend) if fm is not None else None
    qsg = qm.subgraphs[0]
    producer = {o: op.index for op in qsg.operators for o in op.outputs if o >= 0}
    reports: dict[int, TensorReport] = {}
    for t in qsg.tensors:
        if t.is_constant or not is_real(t):
            continue
        op = producer.get(t.index)
        rep = TensorReport(t.index, t.name, t.type_name, tuple(t.shape), op,
                           qsg.operators[op].opcode.name if op is not None else "input")
        rep.activation = new_stats(t)
        if pairing is not None and t.index in pairing.tensors:
            rep.float_tensor, rep.paired_by = pairing.tensors[t.index]
        reports[t.index] = rep
    fb: FallbackRunner | None = None
    if per_layer_fallback and fm is not None and backend == "interpreter":
        fb = FallbackRunner(qm, fm, pairing, None if fallback_ops is None else list(fallback_ops))
    runnable = [k for k in (fb.float_ops if fb else {})]
    total = len(batch) * (1 + len(runnable))
    done = 0
    out_pairs = [(qi, pairing.tensors[qi][0]) for qi in qsg.outputs
                 if pairing is not None and qi in pairing.tensors]
    out_rows: list[dict[str, float]] = []

    def tick(msg: str) -> None:
        nonlocal done
        if cancel is not None and cancel():
            raise Cancelled("quantization analysis cancelled")
        if progress is not None:
            progress(done, total, msg)
        done += 1

    for s, sample in enumerate(batch):
        tick(f"sample {s + 1}/{len(batch)}: running the models")
        qt = qrun.run(sample)
        ft = frun.run(sample) if frun is not None else None
        for rep in reports.values():
            qv = qt.get(rep.tensor)
            if qv is None:
                continue
            t = qsg.tensors[rep.tensor]
            ref = None
            if ft is not None and rep.float_tensor is not None:
                ref = ft.get(rep.float_tensor)
            if rep.activation is not None:
                rep.activation.add(qv, ref)
            if ref is None:
                continue
            deq = dequantize(qv, t.quantization) if qv.dtype.kind in "iu" and t.quantization \
                is not None else qv
            if np.shape(ref) != np.shape(deq):
                continue
            scale = float(t.quantization.scale[0]) if t.quantization is not None and \
                t.quantization.scale.size == 1 and integer_range(t.type_name) else None
            rep.per_input.append(tensor_metrics(ref, deq, scale))
            if keep_values and rep.sample_values is None:
                rep.sample_values = (np.asarray(ref, np.float32), np.asarray(deq, np.float32))
        if ft is None or not out_pairs:
            continue
        f_outs = [ft[fi] for _, fi in out_pairs]

        def q_outs(tensors: dict[int, np.ndarray]) -> list[np.ndarray]:
            res = []
            for qi, _ in out_pairs:
                t = qsg.tensors[qi]
                v = tensors[qi]
                res.append(dequantize(v, t.quantization) if v.dtype.kind in "iu" else v)
            return res

        base_sqnr, base_cos = output_quality(f_outs, q_outs(qt))
        out_rows.append({"sqnr_db": base_sqnr, "cosine": base_cos})
        if fb is None:
            continue
        for k in runnable:
            tick(f"sample {s + 1}/{len(batch)}: op {k} ({fb.gains[k].opcode}) in float")
            try:
                tensors = qrun.run(sample, after_op=fb.hook_for(k))
            except Exception as exc:  # noqa: BLE001 - one op's failure is that op's result
                fb.gains[k].error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                continue
            sq, co = output_quality(f_outs, q_outs(tensors))
            fb.gains[k].per_input.append({"sqnr_db": sq, "cosine": co, "baseline_sqnr_db": base_sqnr,
                                          "baseline_cosine": base_cos})
    if progress is not None:
        progress(total, total, "done")
    for rep in reports.values():
        if rep.per_input:
            rep.metrics = average(rep.per_input)
    report = QuantReport(_label(qm, model), _label(fm, float_model) if fm is not None else None,
                         len(batch), findings, weights, list(reports.values()))
    if pairing is not None:
        fsg = fm.subgraphs[0]
        report.unpaired_quantized = [{"tensor": i, "name": qsg.tensors[i].name}
                                     for i in pairing.unpaired_quantized]
        report.unpaired_float = [{"tensor": i, "name": fsg.tensors[i].name}
                                 for i in pairing.unpaired_float]
    if out_rows:
        report.outputs = {"tensors": [q for q, _ in out_pairs], "per_input": out_rows,
                          **average_outputs(out_rows)}
    if fb is not None:
        report.fallback = fb.finish()
    return report


def average_outputs(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: float(np.mean([r[k] for r in rows])) for k in ("sqnr_db", "cosine")}
