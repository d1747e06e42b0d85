"""Quantization across a generation: where a quantized decoder's tokens part from its float
original's, and which ops carry the error, step by step.

Both models run the generation loop of `interpreter.generation` (prefill, then decode
steps), each with its own KV cache; every call runs both models together through one
`call.PairedCall`, which measures every paired tensor of that call.  With
``teacher_forcing``, the quantized model is fed the float model's token at each decode
step (its own KV cache still carries its own values), so that the steps stay comparable
after the first divergence; without it each model is fed its own previous token.

Per decode step (``step`` 0 is the first generated token, made by decode call #1):

* each model's token (the argmax of its logits);
* the logits' SQNR (the float model's logits as the reference) and the KL divergence
  KL(P_float || P_quantized) of their softmax, in nats;
* whether the top-1 agrees (the two tokens are equal);
* each op's output SQNR at that step, worst first: an op of the quantized model (subgraph
  and index, composites' decompositions included) is as good as its worst real output
  that pairs with a float tensor.

`GenerationAnalysis` holds it all, Qt-free, for the command line and the window: the
per-step logits SQNR for a chart, a steps x ops matrix of SQNR for a heat map, and the op
of each column to select on the canvas::

    ga = analyze_generation("q4.tflite", "f32.tflite", [5, 17, 42], 8, teacher_forcing=True)
    ga.first_divergence, ga.quantized_tokens, ga.logits_sqnr
    ga.sqnr[step, ga.ops.index((1, 51))]     # op 51 of subgraph 1 at that step
    ga.quantized_logits[step]                # what the SQNR and KL were computed on

The quantized model adds its float32 products in its kernel set's exact order by default,
so that its tokens are the ones LiteRT gives (`GENERATION_FLOAT_SUMS`).
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..interpreter.budget import DEFAULT_TIMEOUT
from ..interpreter.errors import RunCancelled
from ..interpreter.generation import (Call, Generation, GenerationError, GenerationPlan,
                                      find_plan, last_row, parse_prompt)
from ..interpreter.generation_plan import signature_io
from ..model import Model
from .analysis import Cancelled, Progress, _label, _load
from .call import PairedCall
from .metrics import sqnr_db
from .plan import pair_problem
from .ranges import dequantize
from .results import finite

OpKey = tuple[int, int]  # (subgraph, operator) of the quantized model

#: How each model's interpreter adds float32 products (`interpreter.float_sums`) across a
#: generation: ``auto`` (the default) adds the quantized model's in its kernel set's exact
#: order and the float model's with BLAS; ``reference`` both in the exact order; ``blas``
#: both with BLAS.  A quantized model that quantizes a FULLY_CONNECTED's input at run time
#: turns a float32 rounding upstream into a different int8 value, which its int4 layers
#: carry on to another argmax (a 0.66 B int4 Qwen3 parts from LiteRT's tokens at step 2
#: under BLAS): in the exact order its tokens and logits are LiteRT's builtin kernels' to
#: the bit, and it costs little, since its big products are integer ones.  The float
#: model's products are its whole cost (gigabytes of float32 weights), where the exact order
#: takes several times BLAS's time, and BLAS's roundings do not move its tokens
#: (docs/quantization.md, "Which float sums").
GENERATION_FLOAT_SUMS = "auto"
#: each mode's (quantized model, float model) sums
_SUMS = {"auto": ("reference", "blas"), "reference": ("reference", "reference"),
         "blas": ("blas", "blas")}

__all__ = ["GenerationAnalysis", "GenerationStep", "OpError", "PrefillCall",
           "analyze_generation", "format_text", "softmax_kl"]


@dataclass(frozen=True)
class OpError:
    """One op's output SQNR on one call: its worst measured output."""

    subgraph: int
    op: int
    opcode: str
    tensor: str
    sqnr_db: float

    def to_dict(self) -> dict[str, Any]:
        return finite({"subgraph": self.subgraph, "op": self.op, "opcode": self.opcode,
                       "tensor": self.tensor, "sqnr_db": self.sqnr_db})


@dataclass(frozen=True)
class GenerationStep:
    """One decode step of both models.  ``fed`` is the token the float model was fed,
    ``quantized_fed`` the quantized model's (the same with teacher forcing)."""

    step: int
    position: int
    fed: int
    quantized_fed: int
    float_token: int
    quantized_token: int
    logits_sqnr_db: float
    kl: float
    worst_ops: list[OpError] = field(default_factory=list)

    @property
    def top1_agrees(self) -> bool:
        return self.float_token == self.quantized_token

    def to_dict(self) -> dict[str, Any]:
        return finite({"step": self.step, "position": self.position,
                       "fed": self.fed, "quantized_fed": self.quantized_fed,
                       "float_token": self.float_token,
                       "quantized_token": self.quantized_token,
                       "top1_agrees": self.top1_agrees,
                       "logits_sqnr_db": self.logits_sqnr_db, "kl": self.kl,
                       "worst_ops": [o.to_dict() for o in self.worst_ops]})


@dataclass(frozen=True)
class PrefillCall:
    """One prefill call of both models (a chunk of the prompt), its ops worst first."""

    label: str
    signature: str
    fed: str
    worst_ops: list[OpError] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"call": self.label, "signature": self.signature, "fed": self.fed,
                "worst_ops": [o.to_dict() for o in self.worst_ops]}


@dataclass
class GenerationAnalysis:
    """What `analyze_generation` found.  ``ops`` are the measured ops of the decode
    signature (the columns of ``sqnr``, in (subgraph, op) order) and ``opcodes`` their
    names; ``sqnr[step, column]`` is that op's output SQNR at that step (NaN: not
    measured at that step)."""

    model: str
    float_model: str
    prompt: list[int]
    teacher_forcing: bool
    plan: GenerationPlan
    steps: list[GenerationStep]
    prefill: list[PrefillCall]
    ops: list[OpKey]
    opcodes: list[str]
    sqnr: np.ndarray
    #: each step's logits, [steps, vocabulary] in real values (float64; a quantized
    #: output dequantized): what the SQNR and KL were computed on
    float_logits: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    quantized_logits: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)),
                                         repr=False)
    seconds: float = 0.0

    @property
    def float_tokens(self) -> list[int]:
        return [s.float_token for s in self.steps]

    @property
    def quantized_tokens(self) -> list[int]:
        return [s.quantized_token for s in self.steps]

    @property
    def first_divergence(self) -> int | None:
        """The first step whose top-1 differs (None: they agree at every step)."""
        return next((s.step for s in self.steps if not s.top1_agrees), None)

    @property
    def logits_sqnr(self) -> np.ndarray:
        """The logits' SQNR of each step, in dB (the chart's line)."""
        return np.array([s.logits_sqnr_db for s in self.steps], np.float64)

    @property
    def kl(self) -> np.ndarray:
        return np.array([s.kl for s in self.steps], np.float64)

    def to_dict(self) -> dict[str, Any]:
        """The ``generation`` document of ``quant --generate --json`` (strict JSON)."""
        return finite({
            "model": self.model, "float_model": self.float_model,
            "prompt": list(self.prompt), "teacher_forcing": self.teacher_forcing,
            "float_tokens": self.float_tokens, "quantized_tokens": self.quantized_tokens,
            "first_divergence": self.first_divergence,
            "steps": [s.to_dict() for s in self.steps],
            "prefill": [p.to_dict() for p in self.prefill],
            "plan": self.plan.to_dict(), "milliseconds": self.seconds * 1000})


# ------------------------------------------------------------------------------------------
# the numbers of one step
# ------------------------------------------------------------------------------------------
def _log_softmax(logits: np.ndarray) -> np.ndarray:
    x = np.asarray(logits, np.float64).reshape(-1)
    shifted = x - np.max(x)
    return shifted - np.log(np.sum(np.exp(shifted)))


def softmax_kl(float_logits: np.ndarray, quantized_logits: np.ndarray) -> float:
    """KL(P_float || P_quantized) of the two logits' softmax, in nats (float64)."""
    lp, lq = _log_softmax(float_logits), _log_softmax(quantized_logits)
    p = np.exp(lp)
    terms = np.where(p > 0, p * (lp - lq), 0.0)
    return float(max(np.sum(terms), 0.0))


class _Logits:
    """A model's decode logits in real values (a quantized output dequantized)."""

    def __init__(self, model: Model, plan: GenerationPlan) -> None:
        outputs = signature_io(model, plan.decode)[1]
        if plan.logits not in outputs:
            raise GenerationError(f"signature {plan.decode!r} gives no {plan.logits!r} "
                                  f"(it gives {', '.join(outputs) or 'nothing'})")
        self.name = plan.logits
        self.quantization = outputs[plan.logits].quantization
        shape = outputs[plan.logits].shape
        self.vocabulary = int(shape[-1]) if shape is not None and len(shape) else None

    def check_ids(self, ids: Sequence[int]) -> None:
        """A GenerationError for an id the model has no token for (its logits' width
        is its vocabulary), before any call, rather than a lookup op failing mid-run."""
        bad = [i for i in ids if self.vocabulary and i >= self.vocabulary]
        if bad:
            raise GenerationError(f"token id {bad[0]} is outside the model's vocabulary "
                                  f"(ids 0..{self.vocabulary - 1}: its {self.name!r} "
                                  f"output is {self.vocabulary} wide)")

    def __call__(self, outputs: Mapping[str, np.ndarray]) -> np.ndarray:
        row = last_row(outputs[self.name])
        if row.dtype.kind in "iu" and self.quantization is not None \
                and self.quantization.has_scale:
            return dequantize(row, self.quantization)
        return np.asarray(row, np.float64)


class _OpColumns:
    """Which measured tensor belongs to which op of the quantized model."""

    def __init__(self, pc: PairedCall) -> None:
        sgs = pc.quantized.subgraphs
        self.of: dict[OpKey, OpKey] = {}
        self.names: dict[OpKey, str] = {}
        for key, rep in pc.reports.items():
            if rep.op is not None and rep.float_tensor is not None:
                self.of[key] = (rep.subgraph, rep.op)
                self.names[key] = rep.name
        self.ops = sorted(set(self.of.values()))
        self.column = {k: i for i, k in enumerate(self.ops)}
        self.opcodes = [sgs[s].operators[o].opcode.name for s, o in self.ops]

    def worst(self, rows: Mapping[OpKey, Mapping[str, Any]]) -> tuple[np.ndarray, list[OpError]]:
        """Each op's SQNR on one call (NaN: not measured) and the ops worst first."""
        values = np.full(len(self.ops), np.nan)
        tensor: dict[int, OpKey] = {}
        for key, row in rows.items():
            op = self.of.get(key)
            v = row.get("sqnr_db")
            if op is None or v is None or math.isnan(v):
                continue
            c = self.column[op]
            if not v >= values[c]:  # NaN (first) or lower
                values[c], tensor[c] = v, key
        order = sorted(tensor, key=lambda c: (values[c], c))
        return values, [OpError(*self.ops[c], self.opcodes[c], self.names[tensor[c]],
                                float(values[c])) for c in order]


# ------------------------------------------------------------------------------------------
# the loop
# ------------------------------------------------------------------------------------------
def _plans(qm: Model, fm: Model, prompt: list[int], loop: Mapping[str, Any]
           ) -> tuple[GenerationPlan, GenerationPlan]:
    """Each model's loop (``loop``: `find_plan` keywords for both); they must call the
    same signatures with the same lengths."""
    pq, pf = find_plan(qm, len(prompt), **loop), find_plan(fm, len(prompt), **loop)
    q_calls = [*pq.chunks(len(prompt)), (pq.decode,)]
    f_calls = [*pf.chunks(len(prompt)), (pf.decode,)]
    if q_calls != f_calls:
        raise GenerationError(f"the two models' loops differ: the quantized model's calls "
                              f"{q_calls}, the float model's {f_calls}")
    problem = pair_problem(qm, fm, pq.decode)
    if problem:
        raise GenerationError(f"the two models do not match: {problem}")
    return pq, pf


def _prompt(prompt: Sequence[int] | str, bos: int | None) -> list[int]:
    ids = parse_prompt(prompt)
    if bos is None:
        return ids
    if not 0 <= int(bos) <= np.iinfo(np.int32).max:
        raise GenerationError(f"BOS id {bos} is not a token id (a non-negative int32)")
    return [int(bos), *ids]


def analyze_generation(model: Model | str | os.PathLike | bytes,
                       float_model: Model | str | os.PathLike | bytes,
                       prompt: Sequence[int] | str, steps: int, *,
                       teacher_forcing: bool = False, bos: int | None = None,
                       loop: Mapping[str, Any] | None = None,
                       float_sums: str = GENERATION_FLOAT_SUMS,
                       timeout: float | None = DEFAULT_TIMEOUT,
                       progress: Progress | None = None,
                       op_progress: Progress | None = None,
                       cancel: Callable[[], bool] | None = None) -> GenerationAnalysis:
    """Both models generate ``steps`` tokens after ``prompt`` (``bos`` first when given),
    each call measured (see the module docstring).  Each model's loop is read from its
    signatures (`find_plan`), ``loop`` setting pieces by hand for both (`find_plan`'s
    keywords, as `parse_settings` gives them); ``float_sums`` how each model's float32
    products are added (`GENERATION_FLOAT_SUMS`: by default the quantized model's in its
    kernel set's exact order, so that its tokens are LiteRT's); ``timeout`` the seconds each call of
    a model may take (None: no limit; a large model's prefill takes minutes).
    ``progress(done, total, message)`` is called before each call (prefill chunks and
    decode steps: ``total`` calls, then once more with ``done == total``);
    ``op_progress(done, total, message)`` after each op of the called signature within
    a call (the quantized model's ops, then the float model's: ``total`` is both counts,
    reset at every call), since one call of a large model can take minutes; ``cancel()``
    returning True stops it with `Cancelled` (checked before every op, so a long call
    stops too).  A window runs this in a worker thread and drives its progress bars and
    Cancel button through these three.  A loop that cannot run is a `GenerationError`
    naming why."""
    t0 = time.perf_counter()
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds or None, not {timeout}")
    if float_sums not in _SUMS:
        raise ValueError(f"float sums must be one of {', '.join(_SUMS)}, not {float_sums!r}")
    qm, fm = _load(model), _load(float_model)
    ids = _prompt(prompt, bos)
    pq, pf = _plans(qm, fm, ids, loop or {})
    gq, gf = Generation(qm, pq, ids, steps), Generation(fm, pf, ids, steps)
    logits_q, logits_f = _Logits(qm, pq), _Logits(fm, pf)
    logits_q.check_ids(ids)
    logits_f.check_ids(ids)
    calls: dict[str, tuple[PairedCall, _OpColumns]] = {}
    out_steps: list[GenerationStep] = []
    prefill: list[PrefillCall] = []
    matrix: list[np.ndarray] = []
    rows_f: list[np.ndarray] = []
    rows_q: list[np.ndarray] = []
    while (cf := gf.next_call()) is not None:
        cq = gq.next_call()
        if cancel is not None and cancel():
            raise Cancelled("generation analysis cancelled")
        if progress is not None:
            progress(cf.number, cf.total, f"{cf.label}: {cf.fed()}")
        if cf.signature not in calls:
            pc = _paired_call(qm, fm, cf.signature, float_sums)
            _hooks(pc, timeout, cancel, op_progress)
            calls[cf.signature] = (pc, _OpColumns(pc))
        pc, columns = calls[cf.signature]
        try:
            got = pc.measure(_quantized_inputs(cq, cf, pq, pf, teacher_forcing), cf.inputs)
        except RunCancelled:
            raise Cancelled("generation analysis cancelled") from None
        values, worst = columns.worst(got.rows)
        gq.record(got.quantized)
        gf.record(got.float)
        if cf.index == 0:
            prefill.append(PrefillCall(cf.label, cf.signature, cf.fed(), worst))
            continue
        fl, ql = logits_f(got.float), logits_q(got.quantized)
        rows_f.append(fl)
        rows_q.append(ql)
        out_steps.append(GenerationStep(
            cf.index - 1, cf.position, cf.token,
            cf.token if teacher_forcing else cq.token, gf.tokens[-1], gq.tokens[-1],
            sqnr_db(fl, ql), softmax_kl(fl, ql), worst))
        matrix.append(values)
    if progress is not None:
        progress(gf.total, gf.total, "done")
    columns = calls[pq.decode][1]
    return GenerationAnalysis(
        _label(qm, model), _label(fm, float_model), ids, teacher_forcing, pq, out_steps,
        prefill, list(columns.ops), list(columns.opcodes), np.array(matrix, np.float64),
        np.array(rows_f), np.array(rows_q), time.perf_counter() - t0)


def _paired_call(qm: Model, fm: Model, signature: str, float_sums: str) -> PairedCall:
    """Both models' interpreters on ``signature``, each adding its float32 products as
    ``float_sums`` says for it (`_SUMS`)."""
    quantized, float_ = _SUMS[float_sums]
    pc = PairedCall(qm, fm, signature, float_sums=float_)
    pc.run.qrun.interpreter.reference_float_sums = quantized == "reference"
    return pc


def _hooks(pc: PairedCall, timeout: float | None, cancel: Callable[[], bool] | None,
           op_progress: Progress | None) -> None:
    """Both interpreters of ``pc``: ``timeout`` per call, stopped at the next op once
    ``cancel()`` says so, and each op of the entry subgraph reported to ``op_progress``
    (TFLite runs a subgraph's ops in index order, so op i done is i + 1 of its model)."""
    def stop_if_cancelled(interpreter, _event) -> None:
        if cancel():
            interpreter.request_stop()

    runners = [("quantized", pc.run.qrun), ("float", pc.run.frun)]
    counts = [len(r.model.subgraphs[r.entry.subgraph].operators) for _, r in runners]
    offset = 0
    for (side, runner), count in zip(runners, counts):
        interpreter = runner.interpreter
        interpreter.budget.timeout = timeout
        if cancel is not None:
            interpreter.add_hook("before", stop_if_cancelled)
        if op_progress is not None:
            interpreter.add_hook("after", _op_reporter(
                op_progress, side, runner.entry.subgraph, offset, sum(counts)))
        offset += count


def _op_reporter(op_progress: Progress, side: str, subgraph: int, offset: int, total: int
                 ) -> Callable[[Any, Any], None]:
    """An after-hook telling ``op_progress`` each op of ``subgraph`` done (ops of the
    subgraphs it calls, a composite's decomposition, are part of their op)."""
    def report(_interpreter, event) -> None:
        if event.subgraph == subgraph:
            op_progress(offset + event.op + 1, total,
                        f"{side} model: op {event.op} {event.name}")
    return report


def _quantized_inputs(cq: Call, cf: Call, pq: GenerationPlan, pf: GenerationPlan,
                      teacher_forcing: bool) -> Mapping[str, np.ndarray]:
    """The quantized model's inputs of this call: its own, but for the token of a decode
    step, the float model's with teacher forcing."""
    if not teacher_forcing or cq.index == 0:
        return cq.inputs
    inputs = dict(cq.inputs)
    own = inputs[pq.tokens]
    inputs[pq.tokens] = np.asarray(cf.inputs[pf.tokens]).astype(own.dtype).reshape(own.shape)
    return inputs


# ------------------------------------------------------------------------------------------
# the text report
# ------------------------------------------------------------------------------------------
def _ops_text(ops: Sequence[OpError], count: int) -> str:
    return ", ".join(f"{o.subgraph}/{o.op} {o.opcode} {o.sqnr_db:.1f}" for o in ops[:count])


def format_text(ga: GenerationAnalysis, worst: int = 3) -> str:
    """The readable report: the loop, each prefill call's worst ops, one row per step
    (tokens, top-1, logits SQNR and KL, the ``worst`` worst ops), the first divergence."""
    fed = "both fed the float model's tokens (teacher forcing)" if ga.teacher_forcing \
        else "each model fed its own tokens"
    lines = [f"Generation: {ga.model} against {ga.float_model}, {len(ga.steps)} steps, {fed}",
             f"Loop: {ga.plan.describe()}",
             f"Prompt: {' '.join(map(str, ga.prompt))}"]
    for p in ga.prefill:
        lines.append(f"{p.label} ({p.signature}, {p.fed}): worst ops {_ops_text(p.worst_ops, worst)}")
    lines.append(f"{'step':>4} {'pos':>4} {'fed':>9} {'float':>6} {'quant':>6} {'top-1':>5} "
                 f"{'logits SQNR dB':>14} {'KL':>9}  worst ops (subgraph/op opcode SQNR dB)")
    for s in ga.steps:
        given = str(s.fed) if s.fed == s.quantized_fed else f"{s.fed}/{s.quantized_fed}"
        lines.append(f"{s.step:>4} {s.position:>4} {given:>9} {s.float_token:>6} "
                     f"{s.quantized_token:>6} {'same' if s.top1_agrees else 'DIFF':>5} "
                     f"{s.logits_sqnr_db:>14.2f} {s.kl:>9.3g}  {_ops_text(s.worst_ops, worst)}")
    first = ga.first_divergence
    if first is None:
        lines.append(f"First divergence: none, the top-1 agrees at all {len(ga.steps)} steps")
    else:
        s = ga.steps[first]
        lines.append(f"First divergence: step {first} (position {s.position}): float "
                     f"{s.float_token}, quantized {s.quantized_token}")
    lines += [f"Float tokens:     {' '.join(map(str, ga.float_tokens))}",
              f"Quantized tokens: {' '.join(map(str, ga.quantized_tokens))}",
              f"Ran {len(ga.prefill) + len(ga.steps)} calls of both models in "
              f"{ga.seconds:.2f} s"]
    return "\n".join(lines)
