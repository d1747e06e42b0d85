"""One sample of an analysis: both models run, every tensor measured, every op's float
fallback measured, all of it kept in a `SampleResult` that `merge` adds to the report.

A sample's work reads the analysis's shared state (models, runners, reports, the fallback
runner) and writes only its own result, so samples can run in other processes
(`parallel.map_jobs`) and their results be merged in sample order: the report is the same
whichever process computed which sample.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..model import Model
from .activations import ActivationStats
from .cone import CannotReuse, DownstreamCone
from .explorer import validator_row
from .fallback import FallbackRunner, OpKey, output_quality
from .measure import Scratch, TensorMeter
from .ranges import dequantize

#: bytes of changed values the fallback's cone keeps at once (about four of the largest
#: activation per op computed together: the ops are taken in groups within it)
CONE_BYTES = 256 << 20


@dataclass
class SampleResult:
    """What one sample of one run measured (see `merge`)."""

    rows: dict[tuple[int, int], dict] = field(default_factory=dict)     # tensor metrics
    #: the validator's metrics (`explorer.validator_row`), when the analysis wants them
    validator: dict[tuple[int, int], dict] = field(default_factory=dict)
    stats: dict[tuple[int, int], ActivationStats] = field(default_factory=dict)
    values: dict[tuple[int, int], tuple] = field(default_factory=dict)  # keep_values
    outputs: dict[str, float] | None = None         # the model outputs' sqnr_db, cosine
    #: per fallback op: (error or None, output quality row or None, the op's own error)
    fallback: dict[OpKey, tuple[str | None, dict | None, dict | None]] = \
        field(default_factory=dict)


@dataclass
class Analysis:
    """What every sample reads: the models, the runs, the reports, the fallback runner."""

    qm: Model
    runs: list                     # analysis._Run
    reports: dict                  # (subgraph, tensor) -> TensorReport
    fb: FallbackRunner | None
    runnable: dict[int, list[OpKey]]   # id(run) -> the fallback ops it executes
    keep_values: bool
    #: also compute litert_quantizer's validator metrics of every compared tensor
    validator: bool = False
    #: raises to cancel the analysis (`Cancelled`), called between the steps of a sample
    #: computed in the process that reports progress
    check: Callable[[], None] | None = None
    meters: dict = field(default_factory=dict)
    scratch: Scratch = field(default_factory=Scratch)
    cones: dict[int, DownstreamCone] = field(default_factory=dict)

    def meter(self, rep) -> TensorMeter:
        m = self.meters.get(rep.key)
        if m is None:
            m = self.meters[rep.key] = TensorMeter(
                self.qm.subgraphs[rep.subgraph].tensors[rep.tensor])
        return m


def run_sample(a: Analysis, run, s: int, tick: Callable[[str], None] | None
               ) -> SampleResult:
    """Sample ``s`` of ``run``: ``tick(message)`` before each step when given."""
    sample = run.samples[s]
    where = "" if len(a.runs) == 1 else f"{run.entry.label}, "
    if tick is not None:
        tick(f"{where}sample {s + 1}/{len(run.samples)}: running the models")
    q_sample = pick(sample, run.q_order)
    res, qt, ft = measure_call(a, run, q_sample, pick(sample, run.f_order))
    if res.outputs is None:
        return res
    f_outs = [ft[fk] for _, fk in run.out_pairs]
    base_sqnr, base_cos = res.outputs["sqnr_db"], res.outputs["cosine"]
    fb = a.fb
    ops = a.runnable[id(run)]
    reused = cone_values(a, run, ops, qt, a.check if tick is not None else None)
    for k in ops:
        if tick is not None:
            tick(f"{where}sample {s + 1}/{len(run.samples)}: op {k[1]} "
                 f"({fb.gains[k].opcode}) in float")
        error = row = None
        try:
            tensors = reused.get(k)
            if tensors is None:
                tensors = run.qrun.run(q_sample, after_op=fb.hook_for(k))
        except Exception as exc:  # noqa: BLE001 - one op's failure is that op's result
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        else:
            sq, co = output_quality(f_outs, q_outputs(a.qm, run, tensors))
            row = {"sqnr_db": sq, "cosine": co, "baseline_sqnr_db": base_sqnr,
                   "baseline_cosine": base_cos}
        res.fallback[k] = (error, row, fb.take_local(k))
    return res


def measure_call(a: Analysis, run, q_sample: list, f_sample: list | None
                 ) -> tuple[SampleResult, dict, dict | None]:
    """One call of ``run``'s entry: the quantized model on ``q_sample`` and the float model
    on ``f_sample`` (each in its runner's input order), every tensor of the subgraphs the
    run covers measured against its float partner, and the outputs' quality.  Returns
    the result and both runs' tensors ({(subgraph, tensor): array})."""
    res = SampleResult()
    qt = run.qrun.run(q_sample)
    ft = run.frun.run(f_sample) if run.frun is not None else None
    for key, rep in a.reports.items():
        if key[0] not in run.covers:
            continue
        qv = qt.get(key)
        if qv is None:
            continue
        ref = None
        if ft is not None and rep.float_tensor is not None:
            ref = ft.get((rep.float_subgraph, rep.float_tensor))
        stats = rep.activation.empty() if rep.activation is not None else None
        keep = a.keep_values and rep.sample_values is None
        row, values = a.meter(rep).measure(qv, ref, stats, keep, a.scratch)
        if stats is not None:
            res.stats[key] = stats
        if row is not None:
            res.rows[key] = row
            if a.validator:
                res.validator[key] = validator_row(ref, _real(qv, a.meter(rep)))
        if values is not None:
            res.values[key] = values
            rep.sample_values = values  # kept once per process; merge keeps the first
    if ft is not None and run.out_pairs:
        sq, co = output_quality([ft[fk] for _, fk in run.out_pairs], q_outputs(a.qm, run, qt))
        res.outputs = {"sqnr_db": sq, "cosine": co}
    return res, qt, ft


def _real(values: np.ndarray, meter: TensorMeter) -> np.ndarray:
    """A quantized tensor's values dequantized (a float tensor's as they are)."""
    q = meter.quantization
    return dequantize(values, q) if values.dtype.kind in "iu" and q is not None else values


def pick(sample: list, order: list[int] | None) -> list:
    """A sample's arrays in the order one runner takes its inputs (`analysis.input_order`)."""
    return sample if order is None else [sample[k] for k in order]


def merge(a: Analysis, run, res: SampleResult, out_rows: list[dict]) -> None:
    """Add one sample's result to the reports, the fallback gains and ``out_rows``."""
    for key, stats in res.stats.items():
        a.reports[key].activation.merge(stats)
    for key, row in res.rows.items():
        a.reports[key].per_input.append(row)
    for key, row in res.validator.items():
        a.reports[key].validator_per_input.append(row)
    for key, values in res.values.items():
        rep = a.reports[key]
        if rep.sample_values is None or rep.sample_values is values:
            rep.sample_values = values
    if res.outputs is not None:
        out_rows.append(res.outputs)
    for k, (error, row, local) in res.fallback.items():
        gain = a.fb.gains[k]
        if error is not None:
            gain.error = error
        if row is not None:
            gain.per_input.append(row)
        if local is not None:
            gain._local.append(local)


def q_outputs(qm: Model, run, values: dict) -> list[np.ndarray]:
    res = []
    for qi, _ in run.out_pairs:
        t = qm.subgraphs[run.entry.subgraph].tensors[qi]
        v = values[(run.entry.subgraph, qi)]
        res.append(dequantize(v, t.quantization) if v.dtype.kind in "iu" else v)
    return res


def cone_values(a: Analysis, run, ops: list[OpKey], baseline: dict,
                poll: Callable[[], None] | None = None) -> dict[OpKey, dict[Any, Any]]:
    """The quantized run's output values with each op of ``ops`` computed in float, from
    the sample's first run (``baseline``) and the ops' downstream cones, all in one walk
    (`cone.DownstreamCone.outputs_many`), for the ops where that is exact; the others
    are left out (the caller runs the model again with the op's hook).  Ops are taken in
    groups whose changed values stay within `CONE_BYTES`; ``poll()`` between steps (it
    raises to cancel)."""
    fb = a.fb
    if not ops:
        return {}
    cone = a.cones.get(id(run))
    if cone is None:
        entry = run.entry
        cone = a.cones[id(run)] = DownstreamCone(run.qrun.interpreter, entry.subgraph,
                                                 len(entry.reached) > 1)
    eligible = [k for k in ops if cone.eligible(*k)]
    wanted = [qi for qi, _ in run.out_pairs]
    k0 = run.entry.subgraph
    out: dict[OpKey, dict[Any, Any]] = {}
    per_run = max((v.nbytes for (g, _), v in baseline.items() if g == k0), default=1)
    group = max(1, CONE_BYTES // (4 * max(per_run, 1)))
    for g in range(0, len(eligible), group):
        chunk = eligible[g:g + group]
        marks = {k: len(fb.gains[k]._calls) for k in chunk}
        got = cone.outputs_many([k[1] for k in chunk], baseline,
                                lambda op, tensors: fb.replacements((k0, op), tensors), wanted,
                                poll)
        for k in chunk:
            values = got[k[1]]
            if isinstance(values, CannotReuse):
                del fb.gains[k]._calls[marks[k]:]  # the full re-run measures the op again
            else:
                out[k] = {(k0, i): v for i, v in values.items()}
    return out
