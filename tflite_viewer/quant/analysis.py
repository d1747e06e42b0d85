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

Every subgraph is analysed: the runs of `runner.entries` (subgraph 0, named by its
signature when one runs it, and any signature whose subgraph it does not call) together
execute them all; the tensors of a called subgraph (a loop body) are compared over every
invocation (`runner`).  Tensors and ops are identified by (subgraph, index) and name the
signature whose run measured them; the samples given (``given``, ``inputs``, ``images``)
feed the entry of ``signature`` (default: subgraph 0), any other entry runs on seeded
samples, or does not run at all with ``all_entries=False``.

Every weight form is analysed (`forms`: per tensor, per channel, blockwise, float16 and
bfloat16 behind DEQUANTIZE; weight-only, dynamic, static), and the Hadamard rotations a
quantizer inserted are paired with the float ops they serve (`rotations`).  The per-call
work (both models run on one call's inputs, every paired tensor measured) is
`per_sample.measure_call`, which `call.PairedCall` offers on its own.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence

import numpy as np

from ..model import Model, load_model
from ..model.errors import TFLiteViewerError
from .explorer import mean_rows
from .fallback import FallbackRunner
from .forms import summary
from .metrics import average
from .pairing import Pairing, added_ops, pair_models
from .parallel import map_jobs, start_side, worth_a_side_job, worth_forking_at_once
from .per_sample import Analysis, SampleResult, merge, run_sample
from .plan import Run, make_samples, pair_problem, plan
from .results import FLOAT_SUMS, QuantReport, TensorReport, finite, tensor_reports
from .rotations import find_rotations, rotated_weights
from .runner import ModelRunner
from .spec import SpecFinding, check_spec
from .weights import WeightReport, analyze_weights

Progress = Callable[[int, int, str], None]
__all__ = ["FLOAT_SUMS", "Cancelled", "QuantReport", "TensorReport", "analyze", "finite",
           "make_samples", "pair_problem"]


class Cancelled(TFLiteViewerError):
    """The analysis was cancelled (the window's Cancel button)."""


def _load(m: Model | str | os.PathLike | bytes | None) -> Model | None:
    if m is None:
        return m
    model = m if isinstance(m, Model) else load_model(m)
    model.prime_views()  # the analysis reads every tensor and operator
    return model


def _constant_bytes(*models: Model | None) -> int:
    """Bytes of every buffer of the models given (from the verifier's columns)."""
    return sum(int(m.buffer_sizes.sum()) for m in models if m is not None)


def _arena_bytes(runner: ModelRunner | None) -> int:
    """Bytes of tensors one run of ``runner`` computes (0 without this interpreter)."""
    return 0 if runner is None or runner.interpreter is None else runner.interpreter.arena_bytes


def _label(m: Model, given) -> str:
    return str(given) if isinstance(given, (str, os.PathLike)) else (
        str(m.path) if m.path is not None else "<bytes>")


def analyze(model: Model | str | os.PathLike | bytes,
            float_model: Model | str | os.PathLike | bytes | None = None, *,
            samples: int = 10, seed: int = 0, inputs: str | os.PathLike | None = None,
            images: str | os.PathLike | None = None, given: Sequence | None = None,
            signature: str | None = None, all_entries: bool = True,
            per_layer_fallback: bool = False,
            fallback_ops: Sequence[int | tuple[int, int]] | None = None,
            backend: str = "interpreter", float_sums: str = FLOAT_SUMS,
            keep_values: bool = False, validator_metrics: bool = False,
            run_models: bool = True, progress: Progress | None = None,
            cancel: Callable[[], bool] | None = None,
            workers: int | None = None) -> QuantReport:
    """Spec checks, weight and activation analysis, and (with ``float_model``) the float vs
    quantized comparison of every paired tensor of every subgraph and, with
    ``per_layer_fallback``, the gain of computing each quantized op (or each of
    ``fallback_ops``: (subgraph, op) pairs, or op indices of subgraph 0) in float.
    ``backend`` "litert" reads the tensors from LiteRT instead of this interpreter (no
    fallback then; LiteRT exposes the entry subgraphs' tensors only); ``float_sums`` is
    the interpreter's for both models and the fallback's float ops (see `FLOAT_SUMS`).
    The samples given feed subgraph 0's inputs, or ``signature``'s; ``all_entries=False``
    runs that entry alone.  ``validator_metrics`` adds litert_quantizer's validator
    metrics of every compared tensor and weight (`explorer`); ``run_models=False``
    analyses the files alone (spec, weights).  ``progress(done, total, message)`` is
    called as it goes; ``cancel()`` returning True stops it with `Cancelled`.  ``workers``
    caps the processes the samples are shared among (`parallel`; None: one per processor
    when the work is long enough, 1: this process only).  See the module docstring."""
    qm = _load(model)
    fm = _load(float_model)
    if fm is not None:
        problem = pair_problem(qm, fm, signature)
        if problem:
            raise ValueError(f"the two models do not match: {problem}")
    pairing: Pairing | None = pair_models(qm, fm) if fm is not None else None
    rotations = pairing.rotations if pairing is not None else find_rotations(qm)
    rotated = rotated_weights(rotations, qm)

    def checks_of_the_files() -> tuple[list[SpecFinding], list[WeightReport]]:
        return check_spec(qm), analyze_weights(qm, fm, pairing, rotated, validator_metrics)

    runs: list[Run] = []
    reports: dict[tuple[int, int], TensorReport] = {}
    fb: FallbackRunner | None = None
    out_rows: dict[int, list[dict]] = {}
    if not run_models:
        findings, weights = checks_of_the_files()
    else:
        # big enough models have the checks made in a child from here on, while the
        # interpreters are built and the samples run; else this process makes them while
        # the samples' children run, or after the samples
        side = start_side(checks_of_the_files, workers) \
            if worth_a_side_job(_constant_bytes(qm, fm)) else None
        file_level: list[tuple[list[SpecFinding], list[WeightReport]]] = []
        try:
            runs = plan(qm, fm, pairing, backend, count=samples, seed=seed, npz=inputs,
                        images=images, given=given, signature=signature,
                        float_sums=float_sums, only=not all_entries)
            reports = tensor_reports(qm, pairing)
            if per_layer_fallback and fm is not None and backend == "interpreter":
                ops = None if fallback_ops is None else [
                    k if isinstance(k, tuple) else (0, int(k)) for k in fallback_ops]
                fb = FallbackRunner(qm, fm, pairing, ops, float_sums)
            runnable = {id(r): [k for k in (fb.float_ops if fb else {}) if k[0] in r.covers]
                        for r in runs}  # the fallback ops each run executes
            shared = Analysis(qm, runs, reports, fb, runnable, keep_values, validator_metrics)
            out_rows = _run_samples(shared, progress, cancel, workers,
                                    None if side is not None else
                                    lambda: file_level.append(checks_of_the_files()))
            findings, weights = side.result(lambda: _check(cancel)) if side is not None \
                else file_level[0]
        finally:
            if side is not None:
                side.close()
    report = QuantReport(_label(qm, model), _label(fm, float_model) if fm is not None else None,
                         len(runs[0].samples) if runs else 0, findings, weights,
                         list(reports.values()))
    _fill(report, qm, fm, pairing, runs, out_rows)
    report.float_sums = float_sums
    report.rotations = [r.to_dict() for r in rotations]
    if fb is not None:
        report.fallback = fb.finish()
    return report


def _fill(report: QuantReport, qm: Model, fm: Model | None, pairing: Pairing | None,
          runs: list[Run], out_rows: dict[int, list[dict]]) -> None:
    """The report's averages, signatures, forms, unpaired tensors and added ops."""
    entry_outputs = [{"signature": run.entry.signature, "subgraph": run.entry.subgraph,
                      "tensors": [q for q, _ in run.out_pairs], "per_input": rows,
                      **average_outputs(rows)}
                     for run in runs for rows in [out_rows[id(run)]] if rows]
    signature_of = {k: run.entry.signature for run in runs for k in run.covers}
    for rep in report.tensors:
        rep.signature = signature_of.get(rep.subgraph)
        if rep.per_input:
            rep.metrics = average(rep.per_input)
        if rep.validator_per_input:
            rep.validator = mean_rows(rep.validator_per_input)
    for w in report.weights:
        w.signature = signature_of.get(w.subgraph)
    report.forms = summary([w.form for w in report.weights])
    if pairing is not None:
        report.unpaired_quantized = [{"subgraph": g, "tensor": i,
                                      "name": qm.subgraphs[g].tensors[i].name}
                                     for g, i in pairing.unpaired_quantized]
        report.unpaired_float = [{"subgraph": g, "tensor": i,
                                  "name": fm.subgraphs[g].tensors[i].name}
                                 for g, i in pairing.unpaired_float]
        report.added_ops = added_ops(pairing, qm)
    report.entry_outputs = entry_outputs
    if entry_outputs and runs and entry_outputs[0]["subgraph"] == runs[0].entry.subgraph:
        report.outputs = entry_outputs[0]


def _check(cancel: Callable[[], bool] | None) -> None:
    if cancel is not None and cancel():
        raise Cancelled("quantization analysis cancelled")


def _run_samples(shared: Analysis, progress: Progress | None,
                 cancel: Callable[[], bool] | None, workers: int | None,
                 meanwhile: Callable[[], None] | None) -> dict[int, list[dict]]:
    """Every sample of every run (and every fallback op on it), shared among processes
    (`parallel.map_jobs`, with ``meanwhile`` done while children compute), merged into
    ``shared``'s reports; returns each run's output rows (by id of the run)."""
    runs = shared.runs
    weight = {id(r): 1 + len(shared.runnable[id(r)]) for r in runs}
    total = sum(len(r.samples) * weight[id(r)] for r in runs)
    done = 0

    def tick(msg: str) -> None:
        nonlocal done
        _check(cancel)
        if progress is not None:
            progress(done, total, msg)
        done += 1

    shared.check = lambda: _check(cancel)
    jobs = [(r, s) for r, run in enumerate(runs) for s in range(len(run.samples))]
    out_rows: dict[int, list[dict]] = {id(r): [] for r in runs}

    def work(job: tuple[int, int], here: bool) -> SampleResult:
        return run_sample(shared, runs[job[0]], job[1], tick if here else None)

    def collect(i: int, res: SampleResult, here: bool) -> None:
        nonlocal done
        run = runs[jobs[i][0]]
        if not here:  # computed in another process: its progress shows now
            tick(f"sample {jobs[i][1] + 1}/{len(run.samples)} done")
            done += weight[id(run)] - 1
        merge(shared, run, res, out_rows[id(run)])

    per_job = max((_arena_bytes(r.qrun) + _arena_bytes(r.frun) for r in runs), default=0)
    map_jobs(jobs, work, collect, workers, lambda: _check(cancel), meanwhile=meanwhile,
             time_first=not worth_forking_at_once(per_job, len(jobs)))
    if progress is not None:
        progress(total, total, "done")
    return out_rows


def average_outputs(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: float(np.mean([r[k] for r in rows])) for k in ("sqnr_db", "cosine")}
