"""Running a model on samples and keeping the tensors of every subgraph it executes.

Two backends: this project's `Interpreter` (the default), or LiteRT with all tensors
preserved (``backend="litert"``, through the interpreter's cross-check runner in a child
process), so an analysis can be checked against, or computed on, LiteRT's own values.

A run starts at an `Entry`: subgraph 0, or a signature whose subgraph nothing else calls
(`entries` lists the runs that together execute every subgraph).  The entry subgraph's
tensors are read after the run.  The operators of the subgraphs it calls (WHILE bodies
and conditions, IF branches, CALL_ONCE initialisers) are watched with an after-op hook:
each invocation's outputs are kept and stacked on a new leading axis (a loop body run 5
times gives its [5, ...] history), so a body's error is measured over every iteration.
A called subgraph's own inputs are not recorded (they hold values its caller's or its
previous iteration's tensors carry).  LiteRT exposes the entry subgraph's tensors only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..interpreter import Interpreter
from ..interpreter.inputs import input_specs
from ..model import Model
from .samples import Sample, model_inputs

BACKENDS = ("interpreter", "litert")

Values = dict  # {(subgraph, tensor): np.ndarray}


@dataclass(frozen=True)
class Entry:
    """Where a run starts: ``signature`` (None: the default, subgraph 0) and its subgraph;
    ``reached`` are the subgraphs such a run can execute (its own and every subgraph its
    control-flow ops call, transitively)."""

    signature: str | None
    subgraph: int
    reached: frozenset[int]

    @property
    def label(self) -> str:
        return f"signature {self.signature!r}" if self.signature is not None else \
            f"subgraph {self.subgraph}"


def reached_subgraphs(model: Model, start: int) -> frozenset[int]:
    """``start`` and every subgraph its operators call, transitively."""
    seen, todo = {start}, [start]
    while todo:
        for op in model.subgraphs[todo.pop()].operators:
            for k in op.called_subgraphs.values():
                if 0 <= k < len(model.subgraphs) and k not in seen:
                    seen.add(k)
                    todo.append(k)
    return frozenset(seen)


def entries(model: Model) -> list[Entry]:
    """The runs that execute every reachable subgraph: subgraph 0 (the default entry, named
    by the signature that runs it when there is one), then each signature whose subgraph
    no earlier entry reaches (a second signature of a multi-signature model)."""
    out = [first_entry(model)] if model.subgraphs else []
    covered = set(out[0].reached) if out else set()
    for sig in model.signature_defs:
        k = sig.subgraph_index
        if 0 <= k < len(model.subgraphs) and k not in covered:
            e = Entry(sig.key, k, reached_subgraphs(model, k))
            out.append(e)
            covered |= e.reached
    return out


def first_entry(model: Model, signature: str | None = None) -> Entry:
    """The entry of ``signature`` (a KeyError naming the keys when there is none), else
    subgraph 0's: through the first signature that runs it, when one does (so a report
    names it as the user knows it: ``prefill_8``, not subgraph 0)."""
    if signature is None:
        signature = next((s.key for s in model.signature_defs if s.subgraph_index == 0), None)
        if signature is None:
            return Entry(None, 0, reached_subgraphs(model, 0))
    k = model.signature(signature).subgraph_index
    return Entry(signature, k, reached_subgraphs(model, k))


def _stack(history: list[np.ndarray]) -> np.ndarray:
    if len({a.shape for a in history}) == 1:
        return np.stack(history)
    return np.concatenate([a.reshape(-1) for a in history])


class ModelRunner:
    """Runs one model from one entry on samples; `run` returns {(subgraph, tensor): array}."""

    def __init__(self, model: Model, backend: str = "interpreter",
                 entry: Entry | None = None, float_sums: str = "auto") -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        self.model = model
        self.backend = backend
        self.entry = entry if entry is not None else Entry(None, 0, reached_subgraphs(model, 0))
        self.interpreter = Interpreter(model, float_sums=float_sums) \
            if backend == "interpreter" else None
        self._names = [s.name for s in input_specs(model, self.entry.signature)]

    def run(self, sample: Sample, after_op: Callable | None = None) -> Values:
        """Every computed or constant tensor of the entry subgraph after running ``sample``,
        and the stacked history of every op output in the subgraphs it called.

        ``after_op(interpreter, event)`` is installed as an after-hook for this run (the
        per-layer fallback rewrites one op's output through it)."""
        entry = self.entry
        arrays = model_inputs(self.model, sample, entry.signature)
        if self.backend == "litert":
            if after_op is not None:
                raise ValueError("op hooks need the interpreter backend")
            from ..interpreter.crosscheck import run_litert
            run = run_litert(self.model, dict(zip(self._names, arrays)),
                             signature=entry.signature,
                             resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
            return {(entry.subgraph, i): a for i, a in run.tensors.items()}
        interp = self.interpreter
        history: dict[tuple[int, int], list[np.ndarray]] = {}

        def record(it, ev) -> None:
            if ev.subgraph == entry.subgraph:
                return
            tensors = it.subgraphs[ev.subgraph].tensors
            for o in ev.node.outputs:
                if o >= 0 and tensors[o].data is not None:
                    history.setdefault((ev.subgraph, o), []).append(np.array(tensors[o].data))

        hooks = ([after_op] if after_op is not None else []) + (
            [record] if len(entry.reached) > 1 else [])
        for h in hooks:
            interp.add_hook("after", h)
        try:
            interp.invoke(dict(zip(self._names, arrays)), signature=entry.signature)
        finally:
            for h in hooks:
                interp.remove_hook(h)
        out: Values = {(entry.subgraph, t.index): t.data
                       for t in interp.subgraphs[entry.subgraph].tensors if t.data is not None}
        out.update({k: _stack(v) for k, v in history.items()})
        return out
