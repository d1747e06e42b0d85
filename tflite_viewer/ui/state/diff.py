"""The window's comparison of the open model (A) with another (B), without Qt.

`DiffState` is a part of the open `Workspace` (``diff_state(ws)``): the other file, its
model, the `tflite_viewer.diff.ModelDiff` of the two and the numbers when they were run,
with the inputs they ran on.  An edit of A keeps the other file and drops the diff (it is
computed again for the new model); a reload of A carries the other file over; closing the
workspace drops it all.

What the views need from it, computed here so tests drive it without a window:

* `marks`: per operator of one side's subgraph, "added", "removed" or "changed" (an op is
  changed when it, or a tensor it reads or writes, has a difference), for the canvas
  colours;
* `rows`: the Differences dock's rows, each with where a click goes (`Target`);
* `partner`: the item on the other side of a selected op or tensor (synchronized
  selection), and `subgraph_partner` for the subgraph shown.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...diff import Difference, ModelDiff
from ...model import Model

ADDED, REMOVED, CHANGED = "added", "removed", "changed"
KEY = "diff"
TOPIC = "diff/result"          # the hub topic of a new, cleared or failed comparison


@dataclass
class DiffState:
    other_path: Path | None = None
    other: Model | None = None
    diff: ModelDiff | None = None
    numeric: Any = None          # diff.numeric.NumericComparison, when the numbers were run
    inputs: str = ""             # what the numbers ran on ("10 seeded samples ...")
    status: str = ""
    running: bool = False
    serial: int = 0              # the computation under way (a late result of an older one
                                 # is dropped)

    @property
    def active(self) -> bool:
        return self.other_path is not None

    def after_edit(self) -> "DiffState | None":
        """The state for A's next model (an edit, or a reload: `after_reload`): the same
        other file, to be compared again."""
        if self.other_path is None:
            return None
        return DiffState(self.other_path, self.other,
                         status="The model changed: comparing again ...")

    after_reload = after_edit


def diff_state(ws: Any) -> DiffState:
    return ws.part(KEY, DiffState)


@dataclass(frozen=True)
class Target:
    """Where a difference is: ``side`` "a" or "b", ``kind`` "op", "tensor", "subgraph"
    or "model", and (subgraph, index)."""

    side: str
    kind: str
    subgraph: int
    index: int


@dataclass(frozen=True)
class Row:
    sign: str
    where: str
    field: str
    change: str
    detail: str
    target: Target | None
    difference: Difference = field(compare=False, repr=False)


_SIGN = {ADDED: "+", REMOVED: "-", CHANGED: "~"}


def target(d: Difference) -> Target | None:
    kind = {"operator": "op", "tensor": "tensor", "subgraph": "subgraph"}.get(d.category)
    if kind is None:
        return None
    side, ref = ("a", d.a) if d.a is not None else ("b", d.b)
    if ref is None or ref.subgraph < 0:
        return None
    return Target(side, kind, ref.subgraph, ref.index)


def _change_text(d: Difference) -> str:
    if d.change != CHANGED:
        return d.change
    if d.old is None and d.new is None:
        return ""
    return f"{_short(d.old)} \u2192 {_short(d.new)}"


def _short(v: Any, limit: int = 48) -> str:
    text = "(none)" if v is None else str(v)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def rows(diff: ModelDiff | None) -> list[Row]:
    if diff is None:
        return []
    return [Row(_SIGN[d.change], d.where(), d.field, _change_text(d), d.detail, target(d), d)
            for d in diff.differences]


def marks(diff: ModelDiff | None, side: str, subgraph: int) -> dict[int, str]:
    """op index -> ADDED/REMOVED/CHANGED for the ops of ``subgraph`` of side "a" or "b"."""
    if diff is None:
        return {}
    m = diff.match
    out: dict[int, str] = {}
    changed_tensors: set[int] = set()
    for d in diff.differences:
        ref = d.a if side == "a" else d.b
        if ref is None or ref.subgraph != subgraph:
            continue
        if d.category == "operator":
            out[ref.index] = REMOVED if d.change == REMOVED else (
                ADDED if d.change == ADDED else out.get(ref.index, CHANGED))
        elif d.category == "tensor" and d.change == CHANGED:
            changed_tensors.add(ref.index)
    if changed_tensors:
        sa = subgraph if side == "a" else m.subgraph_in_a(subgraph)
        part = m.parts.get(sa) if sa is not None else None
        if part is not None:
            g = part.a if side == "a" else part.b
            for k in range(g.n_ops):
                if k not in out and changed_tensors.intersection(
                        t for t in g.inputs[k] + g.outputs[k] if t >= 0):
                    out[k] = CHANGED
    return out


def partner(diff: ModelDiff | None, side: str, kind: str, subgraph: int, index: int
            ) -> tuple[int, int] | None:
    """The (subgraph, index) on the other side of ``side``'s op or tensor, or None."""
    if diff is None:
        return None
    m = diff.match
    key = (subgraph, index)
    if kind == "op":
        return m.op(key) if side == "a" else m.op_in_a(key)
    if kind == "tensor":
        return m.tensor(key, aliases=True) if side == "a" else m.tensor_in_a(key, aliases=True)
    return None


def subgraph_partner(diff: ModelDiff | None, side: str, subgraph: int) -> int | None:
    if diff is None:
        return None
    m = diff.match
    return m.subgraphs.get(subgraph) if side == "a" else m.subgraph_in_a(subgraph)


def summary(diff: ModelDiff | None) -> str:
    if diff is None:
        return ""
    return " \u00b7 ".join(line for line in diff.summary_lines()[2:])


def tensor_values(model: Model, subgraph: int, index: int):
    """A constant's values as real numbers (None for activations: they need a run)."""
    t = model.subgraphs[subgraph].tensors[index]
    if not t.is_constant:
        return None
    try:
        return t.dequantized()
    except ValueError:
        return None
