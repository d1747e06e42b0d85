"""The refusal audit (issue 42): no false refusal.  Every (op, tensor type, quantization
form) the interpreter refuses is checked against what LiteRT 2.3.0's builtin kernels do
with it, on a one-op model built for the purpose (refusal_audit_models.py: the simple ops'
values in every type and form, the weighted ops' weights, the conv and pool
configurations, DENSIFY, zero scales on quantized activations).

A refusal is false when LiteRT loads the model, runs it and computes it with meaning
(litert_meaning.py: finite outputs that agree with the op computed in float on the real
values).  Each false refusal is a failing test, unless `coverage.REFUSAL_GAPS` names it
with the reason it is still refused (reported by `tflite-viewer ops`); a gap listed
there that the audit no longer finds fails too.  What the audit's models beyond the plain
forms load here must also compute what LiteRT computes (no silent wrong result in what a
looser declaration lets through).  A sample runs in every suite; the whole audit is
marked slow (``pytest --run-slow``).
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter, UnsupportedOpError
from tflite_viewer.interpreter.coverage import REFUSAL_GAPS, refusal_gap
from tflite_viewer.model import ExecutionError, ModelFormatError

from . import quant_form_models as qf
from .litert_meaning import LiteRTFailed, judge, rel, run_forked
from .refusal_audit_models import Case, all_cases

CASES = all_cases()
#: cases every sample runs: the refusals the issues named
NAMED = {"densify DENSIFY INT8 per-channel:0", "densify DENSIFY INT8 per-channel:last",
         "weights FULLY_CONNECTED float INT2 blockwise",
         "weights FULLY_CONNECTED int8 INT2 per-tensor",
         "activations RESHAPE INT8 per-channel:0", "scales RELU INT8 zero input scale"}
_OUTCOMES: dict[str, dict] = {}


def outcome(case: Case) -> dict:
    """{"here": "runs" | "refused" | "skip"; for a refusal "why" it is refused, LiteRT's
    verdict "litert" ("runs" with meaning, "wrong", "refuses", "unjudged") and its "note";
    for a run of a case to compare, "differs": how it differs from LiteRT, or None}."""
    if case.key not in _OUTCOMES:
        _OUTCOMES[case.key] = _outcome(case)
    return _OUTCOMES[case.key]


def _outcome(case: Case) -> dict:
    try:
        model, inputs = case.make()
    except qf.Skip as exc:
        return {"here": "skip", "why": str(exc)}
    try:
        interp = Interpreter(model)
    except (UnsupportedOpError, ModelFormatError, ExecutionError) as exc:
        why = str(exc).splitlines()[-1].strip()
        verdict = case.verdict() if case.verdict is not None else judge(model, inputs)
        return {"here": "refused", "why": why, "litert": verdict.status, "note": verdict.note}
    return {"here": "runs", "differs": differs(interp, model, inputs) if case.compare else None}


def differs(interp: Interpreter, model: bytes, inputs) -> str | None:
    """None when this interpreter's outputs equal LiteRT's (bit for bit on integers, 1e-5
    of the magnitude on floats, 2e-3 on FLOAT16) or LiteRT does not run the model, else
    how they differ."""
    try:
        theirs = run_forked(model, inputs)
    except LiteRTFailed:
        return None
    interp.set_inputs(inputs)
    try:
        interp.invoke()
    except Exception as exc:  # noqa: BLE001 - a load that then fails is a defect
        return f"fails here: {type(exc).__name__}: {exc}"[:200]
    sg = interp.subgraphs[0]
    for o in sg.outputs:
        ours, ref = sg.tensors[o].data, theirs.get(o)
        if ref is None:
            continue
        if ref.dtype.kind == "f" and ours.shape == ref.shape:
            if rel(ours, ref) > (2e-3 if ref.dtype == np.float16 else 1e-5):
                return f"output {o}: {rel(ours, ref):.3g} of its magnitude apart"
        elif ours.shape != ref.shape or not np.array_equal(ours, ref):
            return f"output {o}: not equal"
    return None


def audit(cases: list[Case]) -> dict:
    """The figures and findings of the audit on ``cases``: refusals checked, LiteRT's
    verdicts on them, the false refusals no gap names, the gaps met, the compared runs and
    the ones that differ from LiteRT."""
    figures = {"cases": len(cases), "refused": 0, "verdicts": {}, "false": [], "gaps": set(),
               "compared": 0, "differ": []}
    for case in cases:
        r = outcome(case)
        if r["here"] == "runs" and case.compare:
            figures["compared"] += 1
            if r["differs"]:
                figures["differ"].append(f"{case.key}: {r['differs']}")
        if r["here"] != "refused":
            continue
        figures["refused"] += 1
        figures["verdicts"][r["litert"]] = figures["verdicts"].get(r["litert"], 0) + 1
        if r["litert"] != "runs":
            continue
        gap = refusal_gap(case.family, case.op, case.label)
        if gap is not None:
            figures["gaps"].add(gap)
        else:
            figures["false"].append(f"{case.key}: refused here ({r['why'][:200]}), LiteRT "
                                    "computes it with meaning")
    return figures


def _sample(every: int) -> list[Case]:
    return [c for c in CASES if c.key in NAMED or zlib.crc32(c.key.encode()) % every == 0]


def test_the_audit_covers_every_family():
    assert {c.family for c in CASES} == {"activations", "weights", "conv", "densify", "scales"}
    assert len(CASES) > 6000 and {c.key for c in CASES} >= NAMED


def test_no_false_refusal_sample():
    figures = audit(_sample(60))
    assert figures["refused"] > 30 and figures["compared"] > 15, figures
    assert not figures["false"], f"{len(figures['false'])} false refusals:\n" + \
        "\n".join(figures["false"])
    assert not figures["differ"], "\n".join(figures["differ"])


@pytest.mark.slow
@pytest.mark.timeout(3600)  # about 6,000 one-op models, a third of them run by LiteRT twice
def test_no_false_refusal_anywhere():
    figures = audit(CASES)
    print({k: v for k, v in figures.items() if k not in ("false", "differ")})
    assert figures["refused"] > 1500, figures["refused"]
    assert not figures["false"], (f"{len(figures['false'])} of {figures['refused']} "
                                  "refusals are false:\n" + "\n".join(figures["false"]))
    assert figures["gaps"] == set(REFUSAL_GAPS), \
        f"gaps no longer found: {set(REFUSAL_GAPS) - figures['gaps']}"
    assert not figures["differ"], (f"{len(figures['differ'])} of {figures['compared']}:\n"
                                   + "\n".join(figures["differ"]))
