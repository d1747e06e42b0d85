"""One report across targets: every target's verdicts, the JSON contract, the text table."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..model import Model
from . import fixes, gpu, litert, tflm, xnnpack
from ..delegation.facts import ModelFacts
from .verdict import RUNS, TargetResult

TARGETS = ("litert", "xnnpack", "gpu", "tflm")
_SHORT = {"runs": "runs", "falls back": "CPU", "refused": "NO"}


@dataclass
class Report:
    results: dict[str, TargetResult]
    runtime: str | None = None
    facts: ModelFacts | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        """The ``targets --json`` document (the contract in docs/targets.md)."""
        doc = {"targets": {name: r.as_dict() for name, r in self.results.items()}}
        if self.runtime:
            doc["runtime"] = self.runtime
        return doc

    def as_json(self, **extra) -> str:
        """``as_dict()`` with ``extra`` keys added, as one line of strict JSON: the same
        text as ``json.dumps(doc, allow_nan=False, separators=(",", ":"))``, faster
        (`TargetResult.as_json`)."""
        rest = {"runtime": self.runtime} if self.runtime else {}
        rest.update(extra)
        targets = ",".join(f"{json.dumps(name)}:{r.as_json()}"
                           for name, r in self.results.items())
        tail = json.dumps(rest, allow_nan=False, separators=(",", ":"))[1:]
        return f'{{"targets":{{{targets}}}' + ("," + tail if rest else "}")

    def verdict(self, target: str, subgraph: int, index: int) -> str:
        for o in self.results[target].ops:
            if o.subgraph == subgraph and o.index == index:
                return o.verdict
        raise KeyError((target, subgraph, index))

    def uneven(self) -> list[tuple[int, int]]:
        """(subgraph, op) of the operators that do not run on every target."""
        return sorted({(o.subgraph, o.index) for r in self.results.values() for o in r.ops
                       if o.verdict != RUNS})

    def table(self, reasons: bool = True) -> str:
        """The text report: a summary per target (and why a model does not run right on
        one), then the operators that do not run everywhere with each target's verdict
        (runs / CPU: falls back / NO: refused), the warnings, notes and changes."""
        names = list(self.results)
        lines = [f"{'target':<9} {'runs':>6} {'falls back':>11} {'refused':>8} "
                 f"{'partitions':>11} {'crossing':>9}  what"]
        for name in names:
            r = self.results[name]
            s = r.summary()
            delegate = name in ("xnnpack", "gpu")
            lines.append(f"{name:<9} {s['runs']:>6} {s['falls_back']:>11} {s['refused']:>8} "
                         f"{s['partitions'] if delegate else '-':>11} "
                         f"{s['crossing_tensors'] if delegate else '-':>9}  {r.title}")
        lines += [f"{name}: {self.results[name].failure}" for name in names
                  if self.results[name].failure]
        for name in names:
            parts = self.results[name].partitions
            if parts:
                shown = "; ".join(f"sg {p.subgraph}: ops {_ranges(p.ops)}" for p in parts[:8])
                more = f"; ... {len(parts) - 8} more" if len(parts) > 8 else ""
                lines.append(f"{name} partitions: {shown}{more}")
        lines += self._uneven_lines(reasons)
        warned = [(n, o) for n in names for o in self.results[n].ops if o.warning]
        if warned:
            lines += ["", f"Warnings ({len(warned)}):"]
            lines += [f"{o.subgraph:>3} {o.index:>5}  {o.op}  {n}: {o.warning}"
                      for n, o in warned]
        for name in names:
            r = self.results[name]
            for note in r.notes:
                lines.append(f"note ({name}): {note}")
            for fx in r.fixes:
                lines.append(f"change ({name}): {fx.summary}" + (" [edit]" if fx.edits else ""))
        return "\n".join(lines) + "\n"

    def _uneven_lines(self, reasons: bool) -> list[str]:
        """The table of operators that do not run on every target."""
        names = list(self.results)
        rows = self.uneven()
        if not rows:
            return ["", "Every operator runs on every target."]
        wanted = set(rows)
        by_key = {name: {(o.subgraph, o.index): o for o in r.ops
                         if (o.subgraph, o.index) in wanted}
                  for name, r in self.results.items()}
        first = by_key[names[0]]
        width = max(len(first[k].op) for k in rows)
        lines = ["", f"Operators that do not run everywhere ({len(rows)}):",
                 f"{'sg':>3} {'op':>5}  {'name':<{width}}  "
                 + "  ".join(f"{n:<8}" for n in names)]
        for key in rows:
            cells = "  ".join(f"{_SHORT[by_key[n][key].verdict]:<8}" for n in names)
            lines.append(f"{key[0]:>3} {key[1]:>5}  {first[key].op:<{width}}  {cells}")
            if reasons:
                for n in names:
                    o = by_key[n][key]
                    if o.verdict != RUNS:
                        lines.append(f"{'':>11}{n}: {o.reason}")
                        lines.extend(f"{'':>13}-> {fx.summary}"
                                     + (" [edit]" if fx.edits else "") for fx in o.fixes)
        return lines


def _ranges(ops: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> "0-2, 5, 7-8"."""
    out: list[str] = []
    for k in sorted(ops):
        if out and out[-1][1] == k - 1:
            out[-1][1] = k
        else:
            out.append([k, k])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in out)


def analyze(model: Model, targets: tuple[str, ...] | list[str] | None = None,
            runtime: str | None = None, with_fixes: bool = True,
            share_verdicts: bool = True) -> Report:
    """Every requested target's verdict on every operator of ``model``.

    ``share_verdicts=False`` runs every operator through its target's rules, instead of
    once per distinct `SubgraphFacts.op_key`: the reference the tests compare with."""
    chosen = list(targets or TARGETS)
    unknown = [t for t in chosen if t not in TARGETS]
    if unknown:
        raise ValueError(f"unknown target {unknown[0]!r} (one of {', '.join(TARGETS)})")
    if runtime is not None:
        runtime = litert.check_runtime(runtime)
    facts = ModelFacts(model, share_verdicts)
    results: dict[str, TargetResult] = {}
    for name in chosen:
        if name == "litert":
            results[name] = litert.analyze(facts, runtime)
        elif name == "xnnpack":
            results[name] = xnnpack.analyze(facts)
        elif name == "gpu":
            results[name] = gpu.analyze(facts)
        else:
            results[name] = tflm.analyze(facts)
        if with_fixes:
            fixes.attach(facts, results[name])
    return Report(results, runtime, facts)
