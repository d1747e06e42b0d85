"""What the window shows of a target's answer, without Qt: a mark per operator (its verdict
and, for a delegate, which partition holds it), the partition colours, and the Problems
entries.  The canvas overlay paints these; tests check them without a window.

A target's verdicts are information about that target, not errors in the model (a model
for a phone is not wrong because TFLite Micro lacks a kernel): Problems gets them as
``info`` rows tagged with their target (`TargetFinding`), which the window can show apart
from the model's own errors and warnings.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model.errors import Finding
from .verdict import FALLS_BACK, REFUSED, RUNS, TargetResult

VERDICT_COLOURS = {RUNS: "#2da44e", FALLS_BACK: "#e3b341", REFUSED: "#cf222e"}
# partitions: distinct hues that stay readable over the verdict tint, cycled
GROUP_COLOURS = ("#1f6feb", "#8250df", "#bf3989", "#1b7c83", "#9a6700", "#0550ae", "#6639ba",
                 "#953800")


@dataclass(frozen=True)
class OpMark:
    verdict: str
    partition: int | None  # index into the target's partitions, or None
    reason: str

    @property
    def colour(self) -> str:
        return VERDICT_COLOURS[self.verdict]

    @property
    def group_colour(self) -> str | None:
        return None if self.partition is None else GROUP_COLOURS[self.partition %
                                                                 len(GROUP_COLOURS)]


def marks(result: TargetResult, subgraph: int) -> dict[int, OpMark]:
    """Operator index -> its mark, for one subgraph."""
    where = {k: i for i, p in enumerate(result.partitions) if p.subgraph == subgraph
             for k in p.ops}
    return {o.index: OpMark(o.verdict, where.get(o.index), o.reason)
            for o in result.ops if o.subgraph == subgraph}


INFO = "info"  # the severity of a target's rows: information, not a fault of the model


@dataclass(frozen=True)
class TargetFinding(Finding):
    """A Problems row from a target's verdict: ``target`` says which (``litert``,
    ``xnnpack``, ``gpu``, ``tflm``), ``verdict`` what it does with the operator (``runs``
    for a warning)."""

    target: str = ""
    verdict: str = ""


def findings(result: TargetResult) -> list[TargetFinding]:
    """An ``info`` row per operator that does not run there (refused, or left to the CPU
    by a delegate) and per warning, each tagged with the target; the model-wide failure
    (`TargetResult.failure`) first."""
    out = []
    if result.failure:
        out.append(TargetFinding(INFO, "model", f"{result.name}: {result.failure}",
                                 target=result.name, verdict=REFUSED))
    for o in result.ops:
        if o.verdict == RUNS and not o.warning:
            continue
        text = (f"{result.name}: {o.op} {o.verdict}: {o.reason}" if o.verdict != RUNS
                else f"{result.name}: {o.op} runs, but {o.warning}")
        if o.fixes:
            text += f" (change: {o.fixes[0].summary})"
        out.append(TargetFinding(INFO, f"subgraphs[{o.subgraph}].operators[{o.index}]", text,
                                 o.subgraph, None, o.index, result.name, o.verdict))
    return out


def legend(result: TargetResult) -> str:
    """One line under the canvas: the target and its counts."""
    s = result.summary()
    parts = f", {s['partitions']} partition(s)" if result.partitions else ""
    return (f"{result.title}: {s['runs']} run, {s['falls_back']} fall back, "
            f"{s['refused']} refused{parts}")
