"""Where the numbers of two models part: both run on the same inputs, every matched
tensor pair compared.

The inputs are the quantization analysis's (`quant.samples`): seeded from model A's inputs,
a .npz keyed by input name, a folder of images, or given arrays, each handed to each model
in its own input type (a quantized input gets the values quantized with its own scale).
Both models run in this project's interpreter (`quant.runner.ModelRunner`, which also
keeps every invocation of a called subgraph such as a loop body).  Every matched pair of
computed tensors, and every alias (the output of a QUANTIZE/DEQUANTIZE inserted on one
side), gets the metrics of `quant.metrics` with A as the reference (B's values, and A's,
dequantized where integer), per sample and averaged, plus the error relative to the
reference's range.  The same functions as `tflite-viewer quant` on the same inputs, so a
float model diffed against its int8 twin gives the same numbers per tensor.

A pair *parts* when its largest error exceeds ``tolerance`` times the reference's range
(any error at all for a constant reference).  The first op where the models part is the
first matched op, in A's execution order, one of whose outputs parts.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..match import ModelMatch
from ..quant.analysis import FLOAT_SUMS, make_samples
from ..quant.metrics import average, tensor_metrics
from ..quant.ranges import dequantize, integer_range
from ..quant.runner import Entry, ModelRunner, reached_subgraphs

Key = tuple[int, int]
#: the default `tolerance`: float32 rounding of a range-sized value is about 6e-8
TOLERANCE = 1e-6
Progress = Callable[[int, int, str], None]


@dataclass
class TensorNumbers:
    """One compared tensor pair."""

    a: Key
    b: Key
    name: str
    op_a: int | None               # the A op that computes it (None: a subgraph input)
    op_b: int | None
    opcode: str
    how: str                       # "match" or "alias"
    metrics: dict[str, Any] = field(default_factory=dict)
    per_input: list[dict[str, Any]] = field(default_factory=list)
    parted: bool = False
    #: the first sample's values (A, B, dequantized), for the window's Compare tab
    sample_values: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"a": list(self.a), "b": list(self.b), "name": self.name,
                "op_a": self.op_a, "op_b": self.op_b, "opcode": self.opcode, "how": self.how,
                "parted": self.parted, "metrics": _finite(self.metrics)}


@dataclass
class NumericComparison:
    samples: int
    tolerance: float
    tensors: list[TensorNumbers]
    not_compared: list[dict[str, Any]] = field(default_factory=list)
    first_parting: TensorNumbers | None = None
    inputs_differ: bool = False

    @property
    def same(self) -> bool:
        return not any(t.parted for t in self.tensors)

    def tensor(self, a: Key) -> TensorNumbers | None:
        return next((t for t in self.tensors if t.a == a), None)

    def for_b(self, b: Key) -> TensorNumbers | None:
        return next((t for t in self.tensors if t.b == b), None)

    def summary_lines(self) -> list[str]:
        parted = [t for t in self.tensors if t.parted]
        lines = [f"numbers: {len(self.tensors)} tensor pairs compared on {self.samples} "
                 f"sample{'s' if self.samples != 1 else ''}, {len(parted)} part "
                 f"(error above {self.tolerance:g} of the range)"]
        f = self.first_parting
        if f is not None:
            where = f"subgraph {f.a[0]} " if f.a[0] else ""
            lines.append(f"first op where they part: {where}op {f.op_a} {f.opcode}"
                         f"{'' if f.op_b == f.op_a else f' (B op {f.op_b})'}, output "
                         f"{f.name!r}: {_metric_text(f.metrics)}")
        elif parted and self.inputs_differ:
            lines.append("they part at the inputs already (each model takes them in its "
                         "own type)")
        elif not parted:
            lines.append("no tensor parts")
        return lines

    def table_lines(self, limit: int = 25) -> list[str]:
        parted = [t for t in self.tensors if t.parted]
        if not parted:
            return []
        head = f"{'A op':>5} {'opcode':<22} {'max abs':>10} {'rel':>9} {'cosine':>9} " \
               f"{'SQNR dB':>8}  tensor"
        out = ["tensors that part, in execution order:", head]
        for t in parted[:limit]:
            m = t.metrics
            out.append(f"{'-' if t.op_a is None else t.op_a:>5} {t.opcode[:22]:<22} "
                       f"{_num(m.get('max_abs_error')):>10} {_num(m.get('relative_error')):>9} "
                       f"{_num(m.get('cosine')):>9} {_num(m.get('sqnr_db')):>8}  {t.name}")
        if len(parted) > limit:
            out.append(f"... and {len(parted) - limit} more (--json lists all)")
        return out

    def to_dict(self) -> dict[str, Any]:
        f = self.first_parting
        return {"samples": self.samples, "tolerance": self.tolerance, "same": self.same,
                "inputs_differ": self.inputs_differ,
                "first_parting": None if f is None else {
                    "a_op": [f.a[0], f.op_a], "b_op": [f.b[0], f.op_b], "opcode": f.opcode,
                    "tensor": f.to_dict()},
                "tensors": [t.to_dict() for t in self.tensors],
                "not_compared": self.not_compared}


def _num(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.4g}"


def _metric_text(m: dict[str, Any]) -> str:
    return (f"max abs {_num(m.get('max_abs_error'))}, relative {_num(m.get('relative_error'))}, "
            f"cosine {_num(m.get('cosine'))}, SQNR {_num(m.get('sqnr_db'))} dB")


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    return obj


def _real(model, key: Key, values: np.ndarray) -> np.ndarray:
    """Values as real numbers: integers with a scale dequantized (as `quant` does)."""
    t = model.subgraphs[key[0]].tensors[key[1]]
    q = t.quantization
    if values.dtype.kind in "iu" and q is not None and q.has_scale:
        return dequantize(values, q)
    return values


def _single_scale(model, key: Key) -> float | None:
    t = model.subgraphs[key[0]].tensors[key[1]]
    q = t.quantization
    if q is not None and q.scale.size == 1 and integer_range(t.type_name):
        return float(q.scale[0])
    return None


def _pairs(match: ModelMatch, reached_a: frozenset[int]) -> list[tuple[Key, Key, str]]:
    """Matched and aliased pairs of tensors computed at run time, in A's execution order."""
    out: list[tuple[Key, Key, str]] = []
    for sa in sorted(reached_a):
        part = match.parts.get(sa)
        if part is None:
            continue
        sb = match.subgraphs[sa]
        ga, gb = part.a, part.b
        seen: set[tuple[int, int]] = set()
        order = list(ga.graph_inputs) + [t for outs in ga.outputs for t in outs]
        order += [t for t in range(ga.n_tensors) if t not in set(order)]
        for ta in order:
            if not ga.valid(ta) or ga.kind(ta) == "constant":
                continue
            candidates = []
            if ta in part.t_ab:
                candidates.append((part.t_ab[ta], "match"))
            candidates += [(tb, "alias") for tb, x in part.alias_b.items() if x == ta]
            if ta in part.alias_a:
                candidates.append((part.alias_a[ta], "alias"))
            for tb, how in candidates:
                if gb.kind(tb) != "constant" and (ta, tb) not in seen:
                    seen.add((ta, tb))
                    out.append(((sa, ta), (sb, tb), how))
    return out


def compare_numbers(match: ModelMatch, *, samples: int = 1, seed: int = 0,
                    inputs: str | os.PathLike | None = None,
                    images: str | os.PathLike | None = None, given: Sequence | None = None,
                    tolerance: float = TOLERANCE, keep_values: bool = False,
                    progress: Progress | None = None,
                    cancel: Callable[[], bool] | None = None,
                    float_sums: str = FLOAT_SUMS) -> NumericComparison:
    """Run both models of ``match`` on the same samples and compare every matched tensor
    pair of subgraph 0 and the subgraphs it calls (module docstring); ``float_sums`` is
    the interpreters', the quantization analysis's by default (`quant.analysis.FLOAT_SUMS`)
    so that both give the same numbers."""
    a, b = match.a, match.b
    batch = make_samples(b, a, count=samples, seed=seed, npz=inputs, images=images,
                         given=given)
    entry_a = Entry(None, 0, reached_subgraphs(a, 0))
    entry_b = Entry(None, 0, reached_subgraphs(b, 0))
    run_a = ModelRunner(a, entry=entry_a, float_sums=float_sums)
    run_b = ModelRunner(b, entry=entry_b, float_sums=float_sums)
    pairs = _pairs(match, entry_a.reached)
    rows: dict[tuple[Key, Key], TensorNumbers] = {}
    result = NumericComparison(len(batch), tolerance, [])
    for s, sample in enumerate(batch):
        if cancel is not None and cancel():
            from ..quant.analysis import Cancelled
            raise Cancelled("comparison cancelled")
        if progress is not None:
            progress(s, len(batch), f"sample {s + 1}/{len(batch)}: running both models")
        va, vb = run_a.run(sample), run_b.run(sample)
        for ka, kb, how in pairs:
            xa, xb = va.get(ka), vb.get(kb)
            if xa is None or xb is None:
                continue
            ra, rb = _real(a, ka, np.asarray(xa)), _real(b, kb, np.asarray(xb))
            if ra.dtype == object or rb.dtype == object or ra.shape != rb.shape:
                if s == 0:
                    result.not_compared.append({"a": list(ka), "b": list(kb), "reason": (
                        f"shapes differ: {list(ra.shape)} vs {list(rb.shape)}"
                        if ra.shape != rb.shape else "not numbers")})
                continue
            row = rows.get((ka, kb))
            if row is None:
                part = match.parts[ka[0]]
                pa, pb = part.a.producer[ka[1]], part.b.producer[kb[1]]
                row = rows[(ka, kb)] = TensorNumbers(
                    ka, kb, part.a.names[ka[1]], pa if pa >= 0 else None,
                    pb if pb >= 0 else None, part.a.opcode[pa] if pa >= 0 else "input", how)
            m = tensor_metrics(ra, rb, _single_scale(b, kb))
            rng = float(np.max(ra) - np.min(ra)) if ra.size and np.issubdtype(
                ra.dtype, np.number) else 0.0
            err = m["max_abs_error"]
            m["relative_error"] = (err / rng) if rng > 0 and math.isfinite(rng) else (
                0.0 if err == 0 else math.inf)
            row.per_input.append(m)
            if keep_values and row.sample_values is None:
                row.sample_values = (np.asarray(ra, np.float32), np.asarray(rb, np.float32))
    if progress is not None:
        progress(len(batch), len(batch), "done")
    for (ka, kb), row in rows.items():
        row.metrics = average(row.per_input)
        rel = [m["relative_error"] for m in row.per_input]
        row.metrics["relative_error"] = max(rel) if rel else None
        row.parted = any(not (r <= tolerance) for r in rel)
        result.tensors.append(row)
    result.inputs_differ = any(t.parted and t.op_a is None for t in result.tensors)
    result.first_parting = next((t for t in result.tensors if t.parted and t.op_a is not None),
                                None)
    return result
