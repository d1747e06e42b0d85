"""Stable identities for what the user pins to a model: watched tensors and breakpoints (no Qt).

A watch or a breakpoint names a tensor or an operator by (subgraph, index, name): the
index says where it was, the name (for an operator: its type and the tensors it produces)
says what it was.  When the model changes under them they are resolved again:

* after an edit, undo or redo (``scope`` is the edit's `Scope`): tensor indices never
  shift (docs/ARCHITECTURE.md, Edit), so a tensor keeps its index; its name may change
  only when the edit touched that tensor (a rename), and then the pin follows it under its
  new name.  An operator is found again by the tensors it produces (`selection.find_op`)
  and its type; removing it drops what was on it.
* after a reload of a file that changed on disk (``scope`` None): nothing is known about
  indices, so the name decides: the same index with the same name stays, else a unique
  tensor (operator: same type, same output names) of that name in the same subgraph takes
  it, else it is dropped.

Nothing is ever re-bound silently: every pin that moved or was dropped comes back with a
sentence for the user (`Resolved.note`).
"""
from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from ...model import Model
from .selection import find_op


@dataclass(frozen=True)
class TensorRef:
    """A tensor of an open model: subgraph, index and the name it had."""

    subgraph: int
    index: int
    name: str

    @classmethod
    def of(cls, model: Model, subgraph: int, index: int) -> TensorRef:
        return cls(int(subgraph), int(index), model.subgraphs[subgraph].tensors[index].name or "")

    @property
    def key(self) -> tuple[int, int]:
        return (self.subgraph, self.index)

    @property
    def label(self) -> str:
        return f"s{self.subgraph} t{self.index} {self.name}".strip()


@dataclass(frozen=True)
class OpRef:
    """An operator of an open model: subgraph, index, its type and the tensors it produces
    (by index, which edits keep, and by name, which a reloaded file keeps)."""

    subgraph: int
    index: int
    opcode: str
    outputs: tuple[int, ...] = ()
    output_names: tuple[str, ...] = ()

    @classmethod
    def of(cls, model: Model, subgraph: int, index: int) -> OpRef:
        sg = model.subgraphs[subgraph]
        op = sg.operators[index]
        outs = tuple(int(t) for t in op.outputs)
        names = tuple(sg.tensors[t].name or "" if 0 <= t < len(sg.tensors) else "" for t in outs)
        return cls(int(subgraph), int(index), op.name, outs, names)

    @property
    def label(self) -> str:
        return f"subgraph {self.subgraph} op {self.index} {self.opcode}"


@dataclass(frozen=True)
class Resolved:
    """What became of a reference: the reference now (None: dropped) and, when it moved
    or was dropped, the sentence that tells the user."""

    ref: Any
    note: str = ""


def _edited(scope) -> bool:
    return scope is not None


def resolve_tensor(ref: TensorRef, model: Model, scope=None) -> Resolved:
    """``ref`` in ``model`` after an edit (``scope``: the edit's `Scope`) or a reload
    (``scope`` None); see the module docstring."""
    subs = model.subgraphs
    if not 0 <= ref.subgraph < len(subs):
        return Resolved(None, f"{ref.label}: subgraph {ref.subgraph} is gone")
    tensors = subs[ref.subgraph].tensors
    here = tensors[ref.index] if 0 <= ref.index < len(tensors) else None
    if here is not None and (here.name or "") == ref.name:
        return Resolved(ref)
    if _edited(scope) and here is not None and scope.subgraph == ref.subgraph \
            and ref.index in scope.tensors:
        new = replace(ref, name=here.name or "")
        return Resolved(new, f"{ref.label} follows its tensor, now named {new.name!r}")
    if ref.name:
        named = [t.index for t in tensors if (t.name or "") == ref.name]
        if len(named) == 1:
            new = replace(ref, index=named[0])
            return Resolved(new, f"{ref.label} follows its tensor to t{new.index}")
    why = (f"tensor {ref.index} is now {here.name!r}" if here is not None
           else f"subgraph {ref.subgraph} has no tensor {ref.index}")
    return Resolved(None, f"{ref.label}: dropped ({why}, and no tensor of that name)")


def resolve_op(ref: OpRef, model: Model, scope=None) -> Resolved:
    """``ref`` in ``model`` after an edit or a reload (see `resolve_tensor`)."""
    subs = model.subgraphs
    if not 0 <= ref.subgraph < len(subs):
        return Resolved(None, f"{ref.label}: subgraph {ref.subgraph} is gone")
    sg = subs[ref.subgraph]
    ops = sg.operators
    found: int | None = None
    if _edited(scope):
        k = find_op(sg, ref.index, ref.outputs) if ref.outputs else (
            ref.index if ref.index < len(ops) else None)
        if k is not None and ops[k].name == ref.opcode:
            found = k
    else:
        def same(k: int) -> bool:
            return ops[k].name == ref.opcode and OpRef.of(model, ref.subgraph, k).output_names \
                == ref.output_names
        if 0 <= ref.index < len(ops) and same(ref.index):
            found = ref.index
        else:
            matches = [k for k in range(len(ops)) if same(k)]
            found = matches[0] if len(matches) == 1 else None
    if found is None:
        return Resolved(None, f"{ref.label}: dropped (that operator is gone)")
    new = OpRef.of(model, ref.subgraph, found)
    if found != ref.index:
        return Resolved(new, f"{ref.label} follows its operator to op {found}")
    return Resolved(new)


# -- the watch list ---------------------------------------------------------------------------

@dataclass
class WatchList:
    """The tensors pinned in the Watch dock, in the order they were pinned."""

    pins: list[TensorRef] = field(default_factory=list)

    def keys(self) -> list[tuple[int, int]]:
        return [p.key for p in self.pins]

    def pin(self, ref: TensorRef) -> bool:
        """Pin ``ref`` (False: it was pinned already)."""
        if ref.key in self.keys():
            return False
        self.pins.append(ref)
        return True

    def unpin(self, key: tuple[int, int]) -> bool:
        before = len(self.pins)
        self.pins = [p for p in self.pins if p.key != tuple(key)]
        return len(self.pins) != before

    def resolve(self, model: Model, scope=None) -> list[str]:
        """Follow every pin into ``model``; returns the notes for the user."""
        notes, kept = [], []
        for pin in self.pins:
            r = resolve_tensor(pin, model, scope)
            if r.note:
                notes.append(f"Watch {r.note}")
            if r.ref is not None and r.ref.key not in [p.key for p in kept]:
                kept.append(r.ref)
        self.pins = kept
        return notes


# -- breakpoints ------------------------------------------------------------------------------

@dataclass
class BreakpointEntry:
    """One breakpoint of the workspace: the interpreter breakpoint it stands for
    (``template``: its kind and condition), the operator it is on (None: any), whether it
    is enabled and how often the current session hit it."""

    id: int
    template: Any  # an interpreter.debugger.Breakpoint; copied into every session
    op: OpRef | None = None
    enabled: bool = True
    hits: int = 0

    @property
    def subgraph(self) -> int | None:
        return self.op.subgraph if self.op is not None else self.template.subgraph

    def make(self):
        """A fresh interpreter breakpoint for a session (its own hit count)."""
        bp = copy.copy(self.template)
        if self.op is not None:
            bp.subgraph, bp.op = self.op.subgraph, self.op.index
        bp.enabled = self.enabled
        bp.hits = 0
        return bp

    @property
    def plain(self) -> bool:
        """A plain "stop before this op" breakpoint (what F9 toggles)."""
        return type(self.template).__name__ == "OpBreakpoint"


@dataclass
class BreakpointList:
    """The workspace's breakpoints; they outlive debug sessions and follow edits."""

    entries: list[BreakpointEntry] = field(default_factory=list)
    _ids: Any = field(default_factory=lambda: itertools.count(1), repr=False)

    def add(self, template, model: Model | None = None) -> BreakpointEntry:
        """Add an interpreter breakpoint (``template``); an operator it names is kept as
        an `OpRef` of ``model``."""
        op = None
        if template.op is not None and model is not None:
            op = OpRef.of(model, template.subgraph or 0, template.op)
        entry = BreakpointEntry(next(self._ids), template, op, bool(template.enabled))
        self.entries.append(entry)
        return entry

    def get(self, bid: int) -> BreakpointEntry | None:
        return next((e for e in self.entries if e.id == bid), None)

    def remove(self, bid: int) -> bool:
        before = len(self.entries)
        self.entries = [e for e in self.entries if e.id != bid]
        return len(self.entries) != before

    def on_op(self, subgraph: int, op: int) -> BreakpointEntry | None:
        """The plain breakpoint before ``op`` of ``subgraph``, if any."""
        return next((e for e in self.entries if e.plain and e.op is not None
                     and (e.op.subgraph, e.op.index) == (subgraph, op)), None)

    def op_marks(self, subgraph: int) -> dict[int, bool]:
        """Op index -> enabled, for the canvas's dots in ``subgraph``."""
        return {e.op.index: e.enabled for e in self.entries
                if e.op is not None and e.op.subgraph == subgraph}

    def set_hits(self, hits: dict[int, int]) -> None:
        for e in self.entries:
            e.hits = int(hits.get(e.id, 0))

    def resolve(self, model: Model, scope=None) -> list[str]:
        """Follow every breakpoint on an operator into ``model``; notes for the user."""
        notes, kept = [], []
        for e in self.entries:
            if e.op is None:
                sg = e.template.subgraph
                if sg is not None and not 0 <= sg < len(model.subgraphs):
                    notes.append(f"Breakpoint on subgraph {sg}: dropped (it is gone)")
                    continue
                kept.append(e)
                continue
            r = resolve_op(e.op, model, scope)
            if r.note:
                notes.append(f"Breakpoint {r.note}")
            if r.ref is not None:
                e.op = r.ref
                kept.append(e)
        self.entries = kept
        return notes

    def __iter__(self) -> Iterable[BreakpointEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)
