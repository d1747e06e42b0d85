"""The per-layer fallback without re-running the model: only the ops downstream of the
changed op are computed again, on the tensors of the run already made.

The plain way to measure one op's float fallback on one sample runs the whole quantized
model again with an after-op hook that replaces the op's outputs (`FallbackRunner.hook_for`).
Every op upstream of it, and every op that does not depend on it, then computes exactly
what it computed in the sample's first run: the interpreter's kernels are deterministic and
never write into an input array (`interpreter.tensor`).  So the same outputs come from the
first run's tensors with only the op's downstream cone computed again:

* the op's float computation is made on its inputs as the first run left them;
* its requantized outputs replace its outputs; an output whose replacement is equal, bit
  for bit, to what the first run computed changes nothing downstream;
* every later node of the execution plan with a changed input is invoked again, through the
  call an unwatched run of the plan makes (the kernel's bound invoke, `Kernel.bind`, which
  computes what `Kernel.invoke`, the hooked run's call, computes), and its outputs that
  differ from the first run's are changed in turn.

The interpreter's tensors are put back to the first run's values afterwards.  This holds
where a full re-run would compute the same upstream values: the entry subgraph of a run
that calls no other subgraph (no WHILE, IF, CALL_ONCE), with no variable tensor and no op
that keeps state between invocations (resource variables, hash tables, random numbers) or
whose kernel a user supplied (custom ops).  Elsewhere `eligible` says no and the caller
re-runs the model.  A node whose input shapes differ from those it was prepared for, or
any kernel failure, also sends that fallback back to the full re-run, which reports the
failure as it always did.  `tests/quant/test_fallback_cone.py` compares both ways bit for
bit.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..interpreter import Interpreter

#: ops whose result depends on more than their inputs (state kept across invocations)
STATEFUL_OPS = frozenset({
    "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "HASHTABLE", "HASHTABLE_FIND",
    "HASHTABLE_IMPORT", "HASHTABLE_SIZE", "RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL",
    "MULTINOMIAL", "CALL_ONCE", "WHILE", "IF", "CALL", "STABLEHLO_RNG_BIT_GENERATOR",
})

Values = dict  # {(subgraph, tensor): np.ndarray}


class CannotReuse(Exception):
    """This fallback cannot be computed from the first run (re-run the model instead)."""


class DownstreamCone:
    """Recomputes, on the tensors of a finished run of ``interpreter``'s subgraph
    ``subgraph``, the ops downstream of one op whose outputs were replaced."""

    def __init__(self, interpreter: Interpreter, subgraph: int, calls_other_subgraphs: bool
                 ) -> None:
        self.interpreter = interpreter
        self.subgraph = subgraph
        sg = interpreter.subgraphs[subgraph]
        self._sg = sg
        self._plan = list(sg.plan_nodes)
        self._position = {node.index: p for p, node in enumerate(self._plan)}
        self._computed = [t for t in sg.tensors if not t.is_constant]
        self._bound: tuple = (None, {})  # (the plan's steps, their calls by node index)
        self.why_not = self._why_not(interpreter, calls_other_subgraphs)

    @staticmethod
    def _why_not(interpreter: Interpreter, calls_other_subgraphs: bool) -> str | None:
        if calls_other_subgraphs:
            return "the run calls other subgraphs"
        for sg in interpreter.subgraphs:
            if any(t.is_variable for t in sg.tensors):
                return "the model has variable tensors"
            for node in sg.nodes:
                op = node.op
                if node.calls_subgraphs or (op is not None and op.opcode.is_custom):
                    return f"op {node.index} ({node.name}) is a control-flow or custom op"
                if node.name in STATEFUL_OPS:
                    return f"op {node.index} ({node.name}) keeps state between invocations"
        return None

    def eligible(self, subgraph: int, op: int) -> bool:
        return self.why_not is None and subgraph == self.subgraph and op in self._position

    def outputs(self, op: int, baseline: Values, replace: Callable[[list], dict[int, np.ndarray]],
                wanted: list[int]) -> dict[int, np.ndarray]:
        """The values of tensors ``wanted`` when op ``op``'s outputs are replaced by
        ``replace(tensors)`` (the subgraph's runtime tensors holding the first run's
        values; it returns {output index: new value}), every downstream op computed again.
        ``baseline`` holds the first run's values by (subgraph, tensor).  Raises
        `CannotReuse` when the reuse would not be exact (the caller re-runs the model)."""
        sg = self._sg
        tensors = sg.tensors
        k = self.subgraph
        touched: list[int] = []
        try:
            self._restore_all(baseline)
            dirty: set[int] = set()
            for o, value in replace(tensors).items():
                t = tensors[o]
                old = baseline.get((k, o))
                if old is None or value.shape != old.shape or value.dtype != old.dtype:
                    raise CannotReuse(f"output {o} changes shape or type")
                t.data = value
                touched.append(o)
                if (value != old).any():
                    dirty.add(o)
            if dirty:
                with np.errstate(all="ignore"):
                    self._propagate(self._position[op] + 1, dirty, baseline, touched)
            return {i: tensors[i].data for i in wanted}
        except CannotReuse:
            raise
        except Exception as exc:  # noqa: BLE001 - the full re-run reports kernel failures
            raise CannotReuse(f"{type(exc).__name__}: {exc}") from exc
        finally:
            for i in touched:
                tensors[i].data = baseline.get((k, i))

    def _propagate(self, start: int, dirty: set[int], baseline: Values, touched: list[int]
                   ) -> None:
        sg = self._sg
        tensors = sg.tensors
        k = self.subgraph
        calls = self._calls()
        for node in self._plan[start:]:
            if dirty.isdisjoint(node.inputs):
                continue
            if node.shapes_dirty:  # (every value here has its first run's shape)
                raise CannotReuse(f"op {node.index} would be prepared again")
            calls.get(node.index, node.kernel.invoke)(sg, node)
            for o in node.outputs:
                if o < 0:
                    continue
                touched.append(o)
                new, old = tensors[o].data, baseline.get((k, o))
                if old is None or new is None or new.shape != old.shape \
                        or new.dtype != old.dtype:
                    raise CannotReuse(f"op {node.index} changes output {o}'s shape or type")
                if (new != old).any():  # np.array_equal's test, shape and type checked
                    dirty.add(o)

    def _calls(self) -> dict:
        """The plan's bound kernel calls by node index (`builder.bind_kernels`; replays of
        folded nodes left out: their nodes take their kernels' invoke), as the plan now
        holds them."""
        steps = self._sg.plan_steps
        if self._bound[0] is not steps:
            self._bound = (steps, {node.index: fn for node, fn, _ in steps
                                   if fn is not None and not hasattr(fn, "nodes")})
        return self._bound[1]

    def _restore_all(self, baseline: Values) -> None:
        """The subgraph's computed tensors as the first run left them (a full re-run made
        since, e.g. another op's fallback, replaced them)."""
        k = self.subgraph
        for t in self._computed:
            v = baseline.get((k, t.index))
            if v is not None:
                t.data = v
