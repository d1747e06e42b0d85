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

Every subgraph is analysed: the runs of `runner.entries` (subgraph 0, and any signature
whose subgraph it does not call) together execute them all; the tensors of a called
subgraph (a loop body) are compared over every invocation (`runner`).  Tensors and ops
are identified by (subgraph, index); the samples given (``given``, ``inputs``,
``images``) feed the entry of ``signature`` (default: subgraph 0), any other entry runs
on seeded samples.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..interpreter.inputs import InputError, InputSpec, input_specs
from ..model import Model, load_model
from ..model.errors import TFLiteViewerError
from . import samples as smp
from .activations import ActivationStats, new_stats
from .fallback import FallbackGain, FallbackRunner
from .parallel import map_jobs, start_side, worth_a_side_job, worth_forking_at_once
from .per_sample import Analysis, SampleResult, merge, run_sample
from .metrics import average, badness
from .pairing import Pairing, is_real, pair_models
from .runner import Entry, ModelRunner, entries
from .spec import Finding, check_spec
from .weights import WeightReport, analyze_weights

Progress = Callable[[int, int, str], None]

#: How the analysis's interpreters add float32 CONV_2D and FULLY_CONNECTED products
#: (`interpreter.float_sums`): BLAS's order, for both models and the fallback's float ops.
#: What is measured here is quantization error, 1e-2 to 1e-5 of a tensor's values; the
#: order of a float sum moves them by about 1e-7, and moves both models alike where they
#: compute the same float ops, so an op left in float still compares exactly.  LiteRT's
#: optimized and XNNPACK kernels, which ai-edge-quantizer's validator runs the pair on, do
#: not add in the reference order either.  The reference order costs 2.6 times as much per
#: float run (mobilenet_v2: 7.8 ms against 3.0 ms).  ``analyze(float_sums="reference")``
#: (``quant --float-sums reference``) gives the reference kernels' bits.
FLOAT_SUMS = "blas"


class Cancelled(TFLiteViewerError):
    """The analysis was cancelled (the window's Cancel button)."""


@dataclass
class TensorReport:
    """One activation of the quantized model and what was measured on it."""

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
    subgraph: int = 0
    float_subgraph: int | None = None

    @property
    def key(self) -> tuple[int, int]:
        return (self.subgraph, self.tensor)

    def to_dict(self, per_input: bool = True) -> dict[str, Any]:
        d = {"subgraph": self.subgraph, "tensor": self.tensor, "name": self.name,
             "type_name": self.type_name, "shape": list(self.shape), "op": self.op,
             "opcode": self.opcode, "float_subgraph": self.float_subgraph,
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
    #: the outputs' quality of every run (`runner.entries`); ``outputs`` is the first's
    entry_outputs: list[dict[str, Any]] = field(default_factory=list)
    float_sums: str = FLOAT_SUMS  # the interpreters' (`FLOAT_SUMS`)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def compared(self) -> list[TensorReport]:
        return [t for t in self.tensors if t.metrics is not None]

    def ranked(self, metric: str = "sqnr_db") -> list[TensorReport]:
        """Compared tensors, worst first by ``metric``."""
        return sorted(self.compared(), key=lambda t: (
            -badness(metric, t.metrics.get(metric)), t.subgraph, -1 if t.op is None else t.op,
            t.tensor))

    def tensor(self, index: int, subgraph: int = 0) -> TensorReport | None:
        return next((t for t in self.tensors if t.tensor == index and t.subgraph == subgraph),
                    None)

    def fallback_for(self, op: int | None, subgraph: int = 0) -> FallbackGain | None:
        return next((g for g in self.fallback if g.op == op and g.subgraph == subgraph), None)

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
            "entry_outputs": self.entry_outputs,
            "fallback": [g.to_dict() for g in self.fallback],
            "float_sums": self.float_sums,
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


def pair_problem(qm: Model, fm: Model) -> str | None:
    """Why ``fm`` cannot be the float original of ``qm``, or None: their first subgraphs
    must take as many inputs, of the same shapes (-1 in a shape signature matches any
    size), and give as many outputs."""
    qs, fs = qm.subgraphs[0], fm.subgraphs[0]
    if len(qs.inputs) != len(fs.inputs):
        return (f"the quantized model takes {len(qs.inputs)} input(s), the float model "
                f"{len(fs.inputs)}")
    for i, (a, b) in enumerate(zip(qs.inputs, fs.inputs)):
        ta, tb = qs.tensors[a], fs.tensors[b]
        sa = tuple(ta.shape_signature if ta.shape_signature is not None else ta.shape)
        sb = tuple(tb.shape_signature if tb.shape_signature is not None else tb.shape)
        if len(sa) != len(sb) or any(x != y and x != -1 and y != -1 for x, y in zip(sa, sb)):
            return (f"input {i} is {ta.name!r} {list(ta.shape)} in the quantized model but "
                    f"{tb.name!r} {list(tb.shape)} in the float model")
    if len(qs.outputs) != len(fs.outputs):
        return (f"the quantized model gives {len(qs.outputs)} output(s), the float model "
                f"{len(fs.outputs)}")
    return None


def _label(m: Model, given) -> str:
    return str(given) if isinstance(given, (str, os.PathLike)) else (
        str(m.path) if m.path is not None else "<bytes>")


def make_samples(model: Model, float_model: Model | None, *, count: int = 10, seed: int = 0,
                 npz: str | os.PathLike | None = None, images: str | os.PathLike | None = None,
                 given: Sequence | None = None, signature: str | None = None
                 ) -> list[smp.Sample]:
    """The samples of an analysis: given arrays (inputs of ``model``, the quantized one:
    a debugger session's Inputs, integers for its quantized inputs), a .npz, an image
    folder, else seeded ones (from the float model when there is one: its inputs are what
    the data looks like), for the inputs of subgraph 0 or of ``signature``."""
    source = float_model if float_model is not None else model
    if given is not None:
        got = smp.given_samples(model, given, signature)
        return got[:count] if count else got
    if npz is not None:
        return smp.npz_samples(model, npz, count, signature)
    if images is not None:
        return smp.image_samples(model, images, count, signature)
    return smp.seeded_samples(source, count, seed, signature)


@dataclass
class _Run:
    """One entry of the quantized model, its float counterpart, samples and runners.

    ``samples`` are in the order of one model's entry inputs (``source``); ``q_order`` and
    ``f_order`` pick each runner's inputs from a sample (`input_order`), so the two models
    get the same values for the same named input even when their inputs are listed in
    other orders."""

    entry: Entry
    covers: frozenset[int]               # the subgraphs compared on this run
    samples: list[smp.Sample]
    qrun: ModelRunner
    frun: ModelRunner | None
    out_pairs: list[tuple[int, tuple[int, int]]]   # (quantized output, float (sg, tensor))
    q_order: list[int] | None = None
    f_order: list[int] | None = None


def input_order(src: list[InputSpec], dst: list[InputSpec],
                partner: Callable[[InputSpec], tuple[int, int] | None] | None = None
                ) -> list[int] | None:
    """For each input of ``dst``, the index of the ``src`` input that feeds it: same name
    (signature input name, else tensor name), else the tensor ``partner`` pairs it with
    ((subgraph, tensor) of ``src``), else the same position.  None when that is the
    identity; an `InputError` when an input finds no source."""
    by_name = {s.name: k for k, s in enumerate(src)}
    by_tensor = {(s.subgraph, s.tensor): k for k, s in enumerate(src)}
    order = []
    for pos, d in enumerate(dst):
        k = by_name.get(d.name)
        if k is None and partner is not None:
            k = by_tensor.get(partner(d) or (-1, -1))
        if k is None and len(src) == len(dst):
            k = pos
        if k is None:
            raise InputError(f"input {d.name!r} {d.describe()}: no input of the other model "
                             f"feeds it (those are {', '.join(repr(s.name) for s in src)})")
        order.append(k)
    return None if order == list(range(len(src))) else order


def _float_entry(qm: Model, fm: Model, entry: Entry, pairing: Pairing) -> Entry | None:
    """The float model's entry that runs what ``entry`` runs in the quantized one: the
    same signature, else the paired subgraph (subgraph 0, or a signature of it)."""
    from .runner import reached_subgraphs
    if entry.signature is not None and any(s.key == entry.signature
                                           for s in fm.signature_defs):
        k = fm.signature(entry.signature).subgraph_index
        return Entry(entry.signature, k, reached_subgraphs(fm, k))
    k = pairing.subgraphs.get(entry.subgraph)
    if k is None:
        return None
    if k == 0:
        return Entry(None, 0, reached_subgraphs(fm, 0))
    key = next((s.key for s in fm.signature_defs if s.subgraph_index == k), None)
    return None if key is None else Entry(key, k, reached_subgraphs(fm, k))


def _plan(qm: Model, fm: Model | None, pairing: Pairing | None, backend: str, *, count: int,
          seed: int, npz, images, given, signature: str | None,
          float_sums: str) -> list[_Run]:
    runs: list[_Run] = []
    covered: set[int] = set()
    todo = entries(qm)
    if signature is not None:  # the given samples' entry first
        sig = qm.signature(signature)
        from .runner import reached_subgraphs
        first = Entry(signature, sig.subgraph_index, reached_subgraphs(qm, sig.subgraph_index))
        todo = [first] + [e for e in todo if e.subgraph != first.subgraph]
    for n, e in enumerate(todo):
        covers = frozenset(e.reached - covered)
        if not covers:
            continue
        covered |= covers
        fe = _float_entry(qm, fm, e, pairing) if fm is not None else None
        supplied = n == 0 and (given is not None or npz is not None or images is not None)
        if supplied:  # in the quantized entry's order
            batch = make_samples(qm, None, count=count, seed=seed, npz=npz, images=images,
                                 given=given, signature=e.signature)
        else:  # seeded, for the float entry's inputs when there is one (what data is like)
            batch = smp.seeded_samples(fm if fe is not None else qm, count, seed,
                                       fe.signature if fe is not None else e.signature)
        qsg = qm.subgraphs[e.subgraph]
        outs = [(qi, pairing.tensors[(e.subgraph, qi)][0]) for qi in qsg.outputs
                if pairing is not None and (e.subgraph, qi) in pairing.tensors] \
            if fe is not None else []
        run = _Run(e, covers, batch, ModelRunner(qm, backend, e, float_sums),
                   ModelRunner(fm, backend, fe, float_sums) if fe is not None else None, outs)
        if fe is not None:
            qspecs, fspecs = input_specs(qm, e.signature), input_specs(fm, fe.signature)
            if not supplied:   # samples in the float entry's order
                run.q_order = input_order(fspecs, qspecs, lambda q: pairing.partner(
                    (q.subgraph, q.tensor)))
            else:                   # samples in the quantized entry's order
                back = {v[0]: k for k, v in pairing.tensors.items()}
                run.f_order = input_order(qspecs, fspecs,
                                          lambda f: back.get((f.subgraph, f.tensor)))
        runs.append(run)
    return runs


def _tensor_reports(qm: Model, pairing: Pairing | None) -> dict[tuple[int, int], TensorReport]:
    """A report for every real-valued activation of every subgraph."""
    reports: dict[tuple[int, int], TensorReport] = {}
    for qsg in qm.subgraphs:
        producer = {o: op.index for op in qsg.operators for o in op.outputs if o >= 0}
        for t in qsg.tensors:
            if t.is_constant or not is_real(t):
                continue
            op = producer.get(t.index)
            rep = TensorReport(t.index, t.name, t.type_name, tuple(t.shape), op,
                               qsg.operators[op].opcode.name if op is not None else "input",
                               subgraph=qsg.index)
            rep.activation = new_stats(t)
            if pairing is not None and (qsg.index, t.index) in pairing.tensors:
                (rep.float_subgraph, rep.float_tensor), rep.paired_by = \
                    pairing.tensors[(qsg.index, t.index)]
            reports[(qsg.index, t.index)] = rep
    return reports


def analyze(model: Model | str | os.PathLike | bytes,
            float_model: Model | str | os.PathLike | bytes | None = None, *,
            samples: int = 10, seed: int = 0, inputs: str | os.PathLike | None = None,
            images: str | os.PathLike | None = None, given: Sequence | None = None,
            signature: str | None = None,
            per_layer_fallback: bool = False,
            fallback_ops: Sequence[int | tuple[int, int]] | None = None,
            backend: str = "interpreter", float_sums: str = FLOAT_SUMS,
            keep_values: bool = False, progress: Progress | None = None,
            cancel: Callable[[], bool] | None = None,
            workers: int | None = None) -> QuantReport:
    """Spec checks, weight and activation analysis, and (with ``float_model``) the float vs
    quantized comparison of every paired tensor of every subgraph and, with
    ``per_layer_fallback``, the gain of computing each quantized op (or each of
    ``fallback_ops``: (subgraph, op) pairs, or op indices of subgraph 0) in float.
    ``backend`` "litert" reads the tensors from LiteRT instead of this interpreter (no
    fallback then; LiteRT exposes the entry subgraphs' tensors only); ``float_sums`` is
    the interpreter's for both models and the fallback's float ops (see `FLOAT_SUMS`).  The samples given
    feed subgraph 0's inputs, or ``signature``'s.  ``progress(done, total, message)`` is
    called as it goes; ``cancel()`` returning True stops it with `Cancelled`.  ``workers``
    caps the processes the samples are shared among (`parallel`; None: one per processor
    when the work is long enough, 1: this process only).  See the module docstring."""
    qm = _load(model)
    fm = _load(float_model)
    if fm is not None:
        problem = pair_problem(qm, fm)
        if problem:
            raise ValueError(f"the two models do not match: {problem}")
    pairing: Pairing | None = pair_models(qm, fm) if fm is not None else None

    def checks_of_the_files() -> tuple[list[Finding], list[WeightReport]]:
        return check_spec(qm), analyze_weights(qm, fm, pairing)  # no run needs them

    # big enough models have the checks made in a child from here on, while the
    # interpreters are built and the samples run; else this process makes them while the
    # samples' children run, or after the samples
    side = start_side(checks_of_the_files, workers) \
        if worth_a_side_job(_constant_bytes(qm, fm)) else None
    file_level: list[tuple[list[Finding], list[WeightReport]]] = []
    try:
        runs = _plan(qm, fm, pairing, backend, count=samples, seed=seed, npz=inputs,
                     images=images, given=given, signature=signature, float_sums=float_sums)
        reports = _tensor_reports(qm, pairing)
        fb: FallbackRunner | None = None
        if per_layer_fallback and fm is not None and backend == "interpreter":
            ops = None if fallback_ops is None else [
                k if isinstance(k, tuple) else (0, int(k)) for k in fallback_ops]
            fb = FallbackRunner(qm, fm, pairing, ops, float_sums)
        runnable = {id(r): [k for k in (fb.float_ops if fb else {}) if k[0] in r.covers]
                    for r in runs}  # the fallback ops each run executes
        out_rows = _run_samples(Analysis(qm, runs, reports, fb, runnable, keep_values),
                                progress, cancel, workers, None if side is not None else
                                lambda: file_level.append(checks_of_the_files()))
        findings, weights = side.result(lambda: _check(cancel)) if side is not None \
            else file_level[0]
    finally:
        if side is not None:
            side.close()
    entry_outputs = [{"signature": run.entry.signature, "subgraph": run.entry.subgraph,
                      "tensors": [q for q, _ in run.out_pairs], "per_input": rows,
                      **average_outputs(rows)}
                     for run in runs for rows in [out_rows[id(run)]] if rows]
    for rep in reports.values():
        if rep.per_input:
            rep.metrics = average(rep.per_input)
    report = QuantReport(_label(qm, model), _label(fm, float_model) if fm is not None else None,
                         len(runs[0].samples) if runs else 0, findings, weights,
                         list(reports.values()))
    if pairing is not None:
        report.unpaired_quantized = [{"subgraph": g, "tensor": i,
                                      "name": qm.subgraphs[g].tensors[i].name}
                                     for g, i in pairing.unpaired_quantized]
        report.unpaired_float = [{"subgraph": g, "tensor": i,
                                  "name": fm.subgraphs[g].tensors[i].name}
                                 for g, i in pairing.unpaired_float]
    report.entry_outputs = entry_outputs
    report.float_sums = float_sums
    if entry_outputs and runs and entry_outputs[0]["subgraph"] == runs[0].entry.subgraph:
        report.outputs = entry_outputs[0]
    if fb is not None:
        report.fallback = fb.finish()
    return report


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
