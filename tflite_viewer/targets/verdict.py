"""What a target says about each operator, and the groups a delegate takes.

Three verdicts, the same words in the JSON and the window:

* ``runs``: the target executes the operator (a delegate: inside one of its partitions);
* ``falls back``: a delegate leaves it to LiteRT's CPU kernels (the model still runs);
* ``refused``: the target cannot run it and nothing takes over (LiteRT's CPU runtime,
  TFLite Micro; XNNPACK when the delegate takes an operator it then cannot build, which
  makes LiteRT's default interpreter fail): the model does not load or does not prepare
  there, or (TFLM) runs computing something else.

An operator that runs may carry a *warning*: it runs, but whether it computes the right
thing depends on something only a run knows (TFLM computing into a stored shape that the
input's values set).  Verdicts and warnings are information about a target, not errors in
the model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

RUNS, FALLS_BACK, REFUSED = "runs", "falls back", "refused"
VERDICTS = (RUNS, FALLS_BACK, REFUSED)


@dataclass
class Fix:
    """A well-known rewrite that would let an operator run on a target.

    ``edits`` are `tflite_viewer.edit` commands the editor can apply as they are (empty
    when the rewrite needs more than the editor offers: then ``summary`` says what to do).
    """

    summary: str
    edits: list[Any] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"summary": self.summary, "applicable": bool(self.edits),
                "edits": [getattr(e, "description", repr(e)) for e in self.edits]}


@dataclass(slots=True)
class OpVerdict:
    subgraph: int
    index: int
    op: str
    verdict: str
    reason: str = ""
    fixes: list[Fix] = field(default_factory=list)
    warning: str = ""  # it runs, but rightly only if a run's values allow (see the module)

    def as_dict(self) -> dict:
        out = {"subgraph": self.subgraph, "index": self.index, "op": self.op,
               "verdict": self.verdict, "reason": self.reason}
        if self.warning:
            out["warning"] = self.warning
        if self.fixes:
            out["fixes"] = [f.as_dict() for f in self.fixes]
        return out


@dataclass
class Partition:
    """A group of operators a delegate replaces by one DELEGATE node, with the tensors
    that node reads and writes (sorted, as LiteRT's partitioner leaves them)."""

    subgraph: int
    ops: list[int]
    inputs: list[int]
    outputs: list[int]

    def as_dict(self) -> dict:
        return {"subgraph": self.subgraph, "ops": list(self.ops), "inputs": list(self.inputs),
                "outputs": list(self.outputs)}


@dataclass
class TargetResult:
    """One target's answer for a whole model."""

    name: str
    title: str
    ops: list[OpVerdict]
    partitions: list[Partition] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    source: str = ""  # what the rules transcribe (and whether a runnable oracle checked them)
    crossing: int = 0  # tensors a partition reads from or hands back to LiteRT's CPU kernels
    fixes: list[Fix] = field(default_factory=list)  # rewrites for the model as a whole
    #: why the model as a whole does not run right there ("" when it does): the first thing
    #: the report says
    failure: str = ""

    def counts(self) -> dict[str, int]:
        out = {v: 0 for v in VERDICTS}
        for o in self.ops:
            out[o.verdict] += 1
        return out

    def summary(self) -> dict:
        c = self.counts()
        return {"ops": len(self.ops), "runs": c[RUNS], "falls_back": c[FALLS_BACK],
                "refused": c[REFUSED], "partitions": len(self.partitions),
                "crossing_tensors": self.crossing,
                "warnings": sum(1 for o in self.ops if o.warning)}

    def as_dict(self) -> dict:
        return {"title": self.title, "source": self.source, "summary": self.summary(),
                "failure": self.failure,
                "partitions": [p.as_dict() for p in self.partitions],
                "ops": [o.as_dict() for o in self.ops], "notes": list(self.notes),
                "fixes": [f.as_dict() for f in self.fixes]}

    def as_json(self) -> str:
        """``json.dumps(self.as_dict(), separators=(",", ":"))``, the same text, written
        without building a dict per operator: on a 20,000-op model the operators' dicts
        and their encoding cost more than a target's analysis.  An operator without fixes
        is its indices followed by the encoded (op, verdict, reason), which repeats."""
        head = _dumps({"title": self.title, "source": self.source, "summary": self.summary(),
                       "failure": self.failure,
                       "partitions": [p.as_dict() for p in self.partitions]})
        tail = _dumps({"notes": list(self.notes), "fixes": [f.as_dict() for f in self.fixes]})
        return f'{head[:-1]},"ops":[{ops_json(self.ops)}],{tail[1:]}'


def _dumps(value: Any) -> str:
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


def ops_json(ops: list[OpVerdict]) -> str:
    """The operators' dicts, encoded and joined by commas (see `TargetResult.as_json`)."""
    tails: dict[tuple[str, str, str, str], str] = {}
    out = []
    for o in ops:
        if type(o.subgraph) is not int or type(o.index) is not int:
            out.append(_dumps(o.as_dict()))
            continue
        key = (o.op, o.verdict, o.reason, o.warning)
        tail = tails.get(key)
        if tail is None:
            head = {"op": o.op, "verdict": o.verdict, "reason": o.reason}
            if o.warning:
                head["warning"] = o.warning
            tail = tails[key] = _dumps(head)[1:]
        if o.fixes:
            fixes = _dumps([f.as_dict() for f in o.fixes])
            out.append(f'{{"subgraph":{o.subgraph},"index":{o.index},{tail[:-1]},'
                       f'"fixes":{fixes}}}')
        else:
            out.append(f'{{"subgraph":{o.subgraph},"index":{o.index},{tail}')
    return ",".join(out)
