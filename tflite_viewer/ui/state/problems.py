"""What the Problems dock lists (no Qt): the model's problems, and a target's verdicts apart.

The model's problems are the reader's findings (what LiteRT would refuse), what shape
propagation found after an edit (stored shapes that are stale, operators whose prepare
fails) and the quantization spec checks' findings (one the reader already reports on the
same tensor, person_detect's quantized_dimension, is not listed twice).  A target's
verdicts are not problems of the model: a target that does not take an operator says
something about the target.  They are listed apart, under the target's name, as
information, and only while that target is the overlay shown (`TargetNotes`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...model import Finding
from .quant import quant_state
from .targets import CHOICES, result_of



def shape_findings(ws: Any) -> list[Finding]:
    """What shape propagation found, as rows linked to the tensor or operator."""
    check, model = ws.shape_check, ws.model
    if check is None or model is None:
        return []
    out = []
    for m in check.mismatches:
        sg = model.subgraphs[m.subgraph]
        out.append(Finding("warning", f"subgraphs[{m.subgraph}].tensors[{m.tensor}].shape",
                           m.message(sg.tensors[m.tensor].name, sg.operators[m.operator].name),
                           m.subgraph, m.tensor))
    for s, k, message in check.failures:
        out.append(Finding("error", f"subgraphs[{s}].operators[{k}]", message, s, operator=k))
    return out


def spec_findings(ws: Any) -> list[Finding]:
    """The quantization spec checks' findings, less those the reader reports already."""
    model = ws.model
    known = {(f.subgraph, f.tensor) for f in (model.findings if model is not None else [])
             if f.tensor is not None}
    return [Finding(f.severity, f"quantization spec [{f.rule}]", f.message, f.subgraph,
                    f.tensor, f.op) for f in (quant_state(ws).findings or [])
            if f.tensor is None or (f.subgraph, f.tensor) not in known]


def model_problems(ws: Any) -> list[Finding]:
    """Everything wrong with the open model itself (see the module docstring)."""
    reader = list(ws.model.findings) if ws.model is not None else []
    return reader + shape_findings(ws) + spec_findings(ws)


@dataclass(frozen=True)
class TargetNotes:
    """A target's verdicts on the open model, as Problems lists them apart."""

    title: str
    findings: tuple[Finding, ...]


def target_notes(ws: Any, target: str) -> TargetNotes | None:
    """``target``'s verdicts on the open model (`targets.overlay.findings`: information
    rows tagged with the target, its model-wide failure first), their text without the
    target's name in front, and a title counting the operators that do not run there;
    None without a target or its report."""
    result = result_of(ws, target)
    if result is None:
        return None
    from ...targets import overlay as target_overlay
    notes = tuple(replace(f, message=_without_prefix(f.message, result.name))
                  for f in target_overlay.findings(result))
    name = dict(CHOICES).get(target, target)
    left = sum(1 for f in notes if f.operator is not None and f.verdict != "runs")
    count = f"{left} operator{'s' if left != 1 else ''} do not run there" \
        if left else "every operator runs there"
    return TargetNotes(f"Target {name}: {count} (not problems of the model)", notes)


def _without_prefix(message: str, name: str) -> str:
    """A verdict's text without the target's name in front (the group names it)."""
    prefix = f"{name}: "
    return message[len(prefix):] if message.startswith(prefix) else message
