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

Every op's fallback of a sample is computed in one walk of the plan (`outputs_many`): a
node is invoked for each op whose replacement changed one of its inputs, and a convolution
whose bound call takes a batch (`Kernel.bind`) once for all of them, the runs' inputs
stacked on the first axis: its sums are exact and its requantization elementwise, so each
run's result is what it computes alone.

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
        #: the last plan position reading each tensor (the subgraph's outputs: past the end)
        self._last_read: dict[int, int] = {}
        for p, node in enumerate(self._plan):
            for i in node.inputs:
                self._last_read[i] = p
        for i in sg.outputs:
            self._last_read[i] = len(self._plan)
        self.batched_calls = 0  # nodes invoked once for several runs (for tests)
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
        got = self.outputs_many([op], baseline, lambda _, tensors: replace(tensors), wanted)[op]
        if isinstance(got, CannotReuse):
            raise got
        return got

    def outputs_many(self, ops: list[int], baseline: Values,
                     replace: Callable[[int, list], dict[int, np.ndarray]],
                     wanted: list[int], poll: Callable[[], None] | None = None
                     ) -> dict[int, dict[int, np.ndarray] | CannotReuse]:
        """`outputs` of each op of ``ops`` (``replace(op, tensors)`` its replacement), all
        computed in one walk of the plan: a node that reads a changed value of several of
        the ops' runs is invoked once for all of them where its kernel takes a batch of
        inputs (`batched_calls`), else once per run.  Each op's result is its wanted
        values, or the `CannotReuse` that sends it to a full re-run.  ``poll()`` is called
        before each op's replacement and each node (it raises to cancel: the tensors then
        hold the first run's values)."""
        results: dict[int, dict[int, np.ndarray] | CannotReuse] = {}
        poll = poll or _nothing
        with np.errstate(all="ignore"):
            self._restore_all(baseline)
            runs = []
            for op in sorted(ops, key=self._position.__getitem__):
                poll()
                run = _Run(op, self._position[op])
                self._guard(run, lambda: self._replace(run, replace, baseline))
                runs.append(run)
            self._walk([r for r in runs if r.failed is None and r.changed], baseline,
                       set(wanted), poll)
        k = self.subgraph
        for run in runs:
            results[run.op] = run.failed if run.failed is not None else {
                i: run.changed.get(i, baseline.get((k, i))) for i in wanted}
        return results

    def _replace(self, run: "_Run", replace, baseline: Values) -> None:
        k = self.subgraph
        for o, value in replace(run.op, self._sg.tensors).items():
            old = baseline.get((k, o))
            if old is None or value.shape != old.shape or value.dtype != old.dtype:
                raise CannotReuse(f"output {o} changes shape or type")
            if (value != old).any():
                run.changed[o] = value

    @staticmethod
    def _guard(run: "_Run", step: Callable[[], None]) -> None:
        """``step()``, its failure recorded as the run's (a kernel's failure is reported
        by the full re-run, as it always was)."""
        try:
            step()
        except CannotReuse as exc:
            run.failed = exc
        except Exception as exc:  # noqa: BLE001 - the full re-run reports kernel failures
            run.failed = CannotReuse(f"{type(exc).__name__}: {exc}")

    def _walk(self, runs: list["_Run"], baseline: Values, wanted: set[int],
              poll: Callable[[], None]) -> None:
        """Every node after the first replaced op, for the runs that changed an input."""
        if not runs:
            return
        calls = self._calls()
        last_read = self._last_read
        for p in range(min(r.position for r in runs) + 1, len(self._plan)):
            node = self._plan[p]
            active = [r for r in runs if r.position < p and r.failed is None
                      and not r.changed.keys().isdisjoint(node.inputs)]
            if not active:
                continue
            poll()
            if node.shapes_dirty:  # (every value here has its first run's shape)
                for r in active:
                    r.failed = CannotReuse(f"op {node.index} would be prepared again")
                continue
            fn = calls.get(node.index, node.kernel.invoke)
            if not (len(active) > 1 and self._invoke_batch(node, fn, active, baseline)):
                for r in active:
                    self._guard(r, lambda: self._invoke_one(node, fn, r, baseline))
            for r in active:  # values no later node reads are let go
                for t in [t for t in r.changed if last_read.get(t, -1) <= p
                          and t not in wanted]:
                    del r.changed[t]

    def _invoke_one(self, node, fn, run: "_Run", baseline: Values) -> None:
        """``node`` on ``run``'s values: its changed inputs put in the tensors for the
        call, then the first run's values back."""
        sg, k = self._sg, self.subgraph
        tensors = sg.tensors
        touched = []
        try:
            for i in node.inputs:
                if i in run.changed:
                    tensors[i].data = run.changed[i]
                    touched.append(i)
            fn(sg, node)
            for o in node.outputs:
                if o < 0:
                    continue
                touched.append(o)
                self._record(run, node, o, tensors[o].data, baseline.get((k, o)))
        finally:
            for i in touched:
                tensors[i].data = baseline.get((k, i))

    def _invoke_batch(self, node, fn, runs: list["_Run"], baseline: Values) -> bool:
        """``node`` on every run's input at once, through its bound call's batched form
        (``fn.batched``: (input index, output index, function of a batch of inputs); the
        node's other inputs are constants): False where it has none or it fails (each run
        is then invoked on its own)."""
        batched = getattr(fn, "batched", None)
        if batched is None:
            return False
        x, o, compute = batched
        old = baseline.get((self.subgraph, o))
        if old is None or any(x not in r.changed for r in runs):
            return False
        try:
            out = compute(np.concatenate([r.changed[x] for r in runs]))
        except Exception:  # noqa: BLE001 - each run on its own then says what fails
            return False
        n = old.shape[0] if old.ndim else 0
        if out.dtype != old.dtype or out.shape != (n * len(runs),) + old.shape[1:]:
            return False
        self.batched_calls += 1
        for j, r in enumerate(runs):
            self._guard(r, lambda: self._record(r, node, o, out[j * n:(j + 1) * n], old))
        return True

    def _record(self, run: "_Run", node, o: int, new, old) -> None:
        if old is None or new is None or new.shape != old.shape or new.dtype != old.dtype:
            raise CannotReuse(f"op {node.index} changes output {o}'s shape or type")
        if (new != old).any():  # np.array_equal's test, shape and type checked
            run.changed[o] = new

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


def _nothing() -> None:
    pass


class _Run:
    """One op's fallback in `DownstreamCone.outputs_many`: where its op sits in the plan,
    the values that differ from the first run's (by tensor), or why it cannot be reused."""

    __slots__ = ("op", "position", "changed", "failed")

    def __init__(self, op: int, position: int) -> None:
        self.op = op
        self.position = position
        self.changed: dict[int, np.ndarray] = {}
        self.failed: CannotReuse | None = None
