"""The window's side of "will it run there" (no Qt): which target the user picked, the
report of the open model kept in its workspace, and what the Targets dock shows of it (the
canvas overlay and Problems read it too: `overlays.TargetsOverlay`, `problems.target_notes`).

The report covers every target at once (one pass over the model, a few milliseconds for
the corpus, a third of a second at 20,000 operators) and lives in the workspace's part
``"targets"``: an edit, undo or redo replaces the model and the part goes with the old
one, so the dock computes the report of the new model; another model is another
workspace.  The target picked and the runtime version are the window's choices (settings),
the same for every model.

    state = targets_state(ws)                 # the open model's report (None: not yet)
    rows = op_rows(state.report.results["xnnpack"], every=False)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...targets import TARGETS, Fix, Report, TargetResult
from ...targets import overlay as target_overlay
from ...targets.verdict import RUNS

KEY = "targets"
REPORT = "targets/report"   # the hub topic: the report arrived, is being made, or failed
OFF = ""                    # the picker's "no target": no colouring, nothing in Problems

#: the picker's entries, in its order: (key, what it says)
CHOICES = ((OFF, "Off"), ("litert", "LiteRT CPU"), ("xnnpack", "XNNPACK"),
           ("gpu", "GPU delegate"), ("tflm", "TFLite Micro"))
assert [k for k, _ in CHOICES[1:]] == list(TARGETS)


@dataclass
class TargetsState:
    """The report of one workspace's model (``runtime``: the LiteRT version it was made
    for, None the model's own needs)."""

    report: Report | None = None
    runtime: str | None = None
    running: bool = False
    error: str = ""
    serial: int = 0   # the request under way (a late answer to an older one is dropped)


def targets_state(ws: Any) -> TargetsState:
    return ws.part(KEY, TargetsState)


def needs_report(state: TargetsState, runtime: str | None) -> bool:
    """Whether the dock should (re)compute: nothing yet, or made for another runtime."""
    if state.running:
        return False
    if state.report is None:
        return not state.error or state.runtime != runtime
    return state.runtime != runtime


def result_of(ws: Any, target: str) -> TargetResult | None:
    if not target or ws is None or ws.model is None:
        return None
    report = targets_state(ws).report
    return None if report is None else report.results.get(target)


@dataclass(frozen=True)
class OpRow:
    """One line of the Targets dock's table."""

    subgraph: int
    index: int
    op: str
    verdict: str
    partition: int | None   # index into the result's partitions
    reason: str
    fixes: tuple[Fix, ...]

    @property
    def label(self) -> str:
        return f"#{self.index} {self.op}" if self.subgraph == 0 else \
            f"s{self.subgraph} #{self.index} {self.op}"

    @property
    def partition_label(self) -> str:
        return "" if self.partition is None else f"P{self.partition}"


def op_rows(result: TargetResult, every: bool = False) -> list[OpRow]:
    """The operators that do not run (``every``: all of them), in model order."""
    where = {}
    for i, p in enumerate(result.partitions):
        for k in p.ops:
            where[(p.subgraph, k)] = i
    return [OpRow(o.subgraph, o.index, o.op, o.verdict, where.get((o.subgraph, o.index)),
                  o.reason, tuple(o.fixes))
            for o in result.ops if every or o.verdict != RUNS]


def summary_line(result: TargetResult) -> str:
    """The dock's line over its table: the target's counts and its notes."""
    line = target_overlay.legend(result)
    if result.crossing:
        line += f", {result.crossing} tensor(s) cross to the CPU"
    if result.notes:
        line += " \u2014 " + "; ".join(result.notes)
    return line


def fixes_for(result: TargetResult, row: OpRow | None) -> list[Fix]:
    """What to change: the selected operator's rewrites, then the whole model's."""
    out = list(row.fixes) if row is not None else []
    return out + [f for f in result.fixes if f not in out]


def empty_text(ws: Any, target: str, state: TargetsState | None) -> str:
    """What the dock says instead of a table."""
    if ws is None or ws.model is None:
        return "No model open."
    if not target:
        return "Pick a target to see what runs there."
    if state is None or state.running or (state.report is None and not state.error):
        return "Checking the operators\u2026"
    if state.error:
        return f"The check failed: {state.error}"
    return ""
