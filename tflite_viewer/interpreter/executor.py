"""The executor: running subgraphs op by op, pausing, stepping and breakpoints.

LiteRT's Subgraph::Invoke walks the execution plan and calls each node's registration.
Here that walk comes in two forms over the same plan, re-preparation, hooks, budgets and
op timing:

- `_run_subgraph` is a generator that yields at every op boundary; control-flow kernels
  ``yield from`` the subgraphs they call (`call_subgraph`). The debugger API (`start`,
  `step`, `step_into`, `step_out`, `run`, `run_to`) pulls on that chain until a stop
  condition holds, so a run can pause anywhere, even inside the third iteration of a
  WHILE body, and resume.
- `_execute` is a plain loop for `invoke()`, which nothing can pause.

`Executor` is a mixin of `Interpreter`, which owns the state it uses (subgraphs, the call
stack, hooks, breakpoints, budgets).
"""
from __future__ import annotations

import time
from time import perf_counter
from typing import Any, Generator, Mapping, Sequence

import numpy as np

from .builder import specialize_plan, unspecialize_plan
from .debugger import Frame, OpEvent, Position, Stop
from .errors import PASS_THROUGH, ExecutionError, op_failure
from .node import Node
from .subgraph import Subgraph


class Executor:
    """Running, stepping and pausing (mixed into `Interpreter`)."""

    # ======================================================================================
    # execution
    # ======================================================================================
    @property
    def state(self) -> str:
        """"ready" (nothing run yet), "paused" (mid-run) or "finished"."""
        return self._state

    @property
    def position(self) -> Position:
        """The call stack, outermost first: ((subgraph, op about to run), ...)."""
        return tuple((f.subgraph, f.op) for f in self._stack)

    @property
    def current_op(self) -> tuple[int, int] | None:
        """(subgraph, op) about to run, or None when no op is next."""
        if not self._stack or self._state != "paused":
            return None
        f = self._stack[-1]
        return (f.subgraph, f.op) if f.op < len(self.subgraphs[f.subgraph].nodes) else None

    def current_node(self) -> Node | None:
        cur = self.current_op
        return None if cur is None else self.subgraphs[cur[0]].nodes[cur[1]]

    def _abort(self) -> None:
        if self._gen is not None:
            self._gen.close()
        self._gen = None
        self._stack = []
        self._active.clear()
        self._pending.clear()
        self._state = "ready"
        self._paused_since = None

    def reset(self) -> None:
        """Abandon the current run: back to the start, computed values forgotten (inputs,
        constants and variables are kept)."""
        self._abort()
        for sg in self.subgraphs:
            sg.clear_activations(keep_inputs=sg.index == self._entry)

    def start(self, inputs: Mapping[str, Any] | Sequence[Any] | None = None, *,
              signature: str | None = None, subgraph: int | None = None) -> Stop:
        """Begin a new run (paused before its first op), optionally of a signature or
        subgraph and with inputs."""
        entry = self._begin(inputs, signature, subgraph)
        self._gen = self._run_subgraph(entry)
        self._state = "paused"
        with np.errstate(all="ignore"):
            self._advance_gen()  # to the first op boundary
        if self._state == "finished":
            return self._finished_stop()
        return Stop("step", self.position)

    def _begin(self, inputs, signature: str | None, subgraph: int | None = None) -> Subgraph:
        """What every run starts with: a clean state, the entry subgraph, its inputs."""
        if not self._allocated:
            self.allocate_tensors()
        self._abort()
        self.budget.stop_requested = False  # a request made while nothing ran
        self.budget.start()
        if signature is not None:
            sig = self.model.signature(signature)
            self._signature, self._entry = sig.key, sig.subgraph_index
        elif subgraph is not None:
            self._signature, self._entry = None, int(subgraph)
        if inputs is not None:
            self.set_inputs(inputs)
        entry = self.entry
        for t in self._entry_io()[0]:
            if t.data is None:
                raise ValueError(f"input {t.name!r} (tensor {t.index}) has no value: "
                                 "set_input() it")
        entry.clear_activations(keep_inputs=True)
        self._op_times.clear()
        self._op_calls.clear()
        self._op_stats_in_plan = False
        for sg in self.subgraphs:
            sg.clear_op_stats()
        self._paused_total = 0.0
        return entry

    def _ensure_running(self, inputs=None, signature=None) -> Stop | None:
        """Start a run if none is in progress (or new inputs/signature were given)."""
        sig_changed = signature is not None and signature != self._signature
        if self._state != "paused" or inputs is not None or sig_changed:
            stop = self.start(inputs, signature=signature)
            if stop.finished:
                return stop
        return None

    def invoke(self, inputs: Mapping[str, Any] | Sequence[Any] | None = None, *,
               signature: str | None = None) -> dict[str, np.ndarray | None]:
        """Run the whole entry subgraph from the start, ignoring breakpoints; returns the
        named outputs (TFLite's Invoke).

        Nothing can pause such a run, so it takes the direct executor (`_execute`): the
        same plan, re-preparation, hooks and op timing as a stepped run, without the
        generator machinery that pause points need."""
        entry = self._begin(inputs, signature)
        self._collect_after = False
        self._state = "paused"  # running: hooks see the position as during a stepped run
        self._direct = True
        self.budget.start()
        try:
            self._execute_ieee(entry)
        except BaseException:
            self._state = "ready"
            self._active.clear()
            raise
        finally:
            self._direct = False
        self._state = "finished"
        return self.outputs()

    def run(self, inputs: Mapping[str, Any] | Sequence[Any] | None = None, *,
            signature: str | None = None) -> Stop:
        """Run (or continue) until a breakpoint or the end; a finished run starts anew."""
        stop = self._ensure_running(inputs, signature)
        return stop or self._resume("continue")

    def step(self) -> Stop:
        """Run one op of the current subgraph (a WHILE/IF/CALL_ONCE runs whole)."""
        return self._ensure_running() or self._resume("step")

    def step_into(self) -> Stop:
        """Like step, but enter the subgraph a control-flow op calls."""
        return self._ensure_running() or self._resume("step_into")

    def step_out(self) -> Stop:
        """Run until the current subgraph has returned and its calling op has finished."""
        return self._ensure_running() or self._resume("step_out")

    def run_to(self, op: int | str | tuple[int, int], subgraph: int | None = None) -> Stop:
        """Run until just before an op: an index (of `subgraph`, default the entry), a
        (subgraph, op) pair, or an op type name; stops earlier at breakpoints."""
        if isinstance(op, tuple):
            subgraph, op = op
        target = (self._entry if subgraph is None else subgraph, op)
        return self._ensure_running() or self._resume("run_to", target=target)

    # -- the driver ----------------------------------------------------------------------
    def _advance_gen(self) -> bool:
        """Run to the next op boundary; False when the run finished."""
        if self._paused_since is not None:
            self._paused_total += time.perf_counter() - self._paused_since
            self._paused_since = None
        try:
            next(self._gen)
        except StopIteration:
            self._gen = None
            self._state = "finished"
            return False
        except BaseException:
            self._gen = None
            self._state = "ready"
            self._active.clear()
            raise
        self._paused_since = time.perf_counter()
        return True

    def call_path(self) -> str:
        """Where the run is, outermost first, with the iteration of each enclosing WHILE:
        ``subgraph 0 op 0 (WHILE, iteration 1,204) > subgraph 4 op 2 (ADD)``."""
        parts = []
        for f in self._stack:
            nodes = self.subgraphs[f.subgraph].nodes
            name = nodes[f.op].name if f.op < len(nodes) else "return"
            it = self.loop_iterations.get((f.subgraph, f.op)) if name == "WHILE" else None
            parts.append(f"subgraph {f.subgraph} op {f.op} ({name}"
                         + (f", iteration {it:,})" if it else ")"))
        return " > ".join(parts) or "before the first op"

    def _interrupted(self) -> Stop:
        """A stop request seen at a pause point of a stepped run: pause there."""
        self.budget.stop_requested = False
        return Stop("interrupted", self.position, message="stopped on request")

    def _finished_stop(self) -> Stop:
        return Stop("finished", self.position, outputs=self.outputs())

    def _resume(self, mode: str, target: tuple[int, Any] | None = None,
                use_breakpoints: bool = True) -> Stop:
        self.budget.start()
        with np.errstate(all="ignore"):  # float kernels follow IEEE (inf, nan), silently
            return self._resume_loop(mode, target, use_breakpoints)

    def _resume_loop(self, mode: str, target: tuple[int, Any] | None,
                     use_breakpoints: bool) -> Stop:
        depth0 = len(self._stack)
        befores = [b for b in self.breakpoints if b.enabled and b.when == "before"] \
            if use_breakpoints else []
        self._collect_after = use_breakpoints and any(
            b.enabled and b.when == "after" for b in self.breakpoints)
        self._pending.clear()
        if mode == "continue" and not befores and not self._collect_after:
            # nothing can stop the run: drain the executor without per-op checks
            if self._paused_since is not None:
                self._paused_total += time.perf_counter() - self._paused_since
                self._paused_since = None
            budget = self.budget
            try:
                for _ in self._gen:
                    if budget.stop_requested:
                        return self._interrupted()
            except BaseException:
                self._gen = None
                self._state = "ready"
                self._active.clear()
                raise
            self._gen = None
            self._state = "finished"
            return self._finished_stop()
        while True:
            if self.budget.stop_requested:
                return self._interrupted()
            if not self._advance_gen():
                if self._pending:  # the last op of the run tripped a breakpoint
                    bp, msg, where = self._pending[0]
                    self._pending.clear()
                    bp.hits += 1
                    return Stop("breakpoint", self.position, bp, where, msg,
                                outputs=self.outputs())
                return self._finished_stop()
            depth = len(self._stack)
            frame = self._stack[-1]
            if self._pending:
                bp, msg, where = self._pending[0]
                self._pending.clear()
                bp.hits += 1
                return Stop("breakpoint", self.position, bp, where, msg)
            if mode == "step_into" or (mode == "step" and depth <= depth0) or \
                    (mode == "step_out" and depth < depth0):
                return Stop("step", self.position)
            sg = self.subgraphs[frame.subgraph]
            at_op = frame.op < len(sg.nodes)
            if not at_op:
                continue
            node = sg.nodes[frame.op]
            if mode == "run_to":
                tsg, top = target
                if (isinstance(top, str) and node.name == top) or \
                        (frame.subgraph == tsg and frame.op == top):
                    return Stop("run_to", self.position, None, (frame.subgraph, frame.op))
            for bp in befores:
                if bp.applies(frame.subgraph, node):
                    bp.hits += 1
                    return Stop("breakpoint", self.position, bp, (frame.subgraph, frame.op),
                                bp.check(self, sg, node) or "")

    # -- the executor --------------------------------------------------------------------
    def call_subgraph(self, index: int, inputs: Sequence[np.ndarray]) -> Generator:
        """Run subgraph ``index`` on ``inputs`` (a generator: control-flow kernels ``yield
        from`` it); its return value is the list of the subgraph's output arrays."""
        sg = self._callee(index)
        sg.set_inputs(inputs)
        if self._direct:
            self._execute(sg)
        else:
            yield from self._run_subgraph(sg)
        return self._outputs(sg)

    def run_subgraph(self, index: int, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """`call_subgraph` as a plain call, for control-flow kernels' ``invoke_direct`` in
        runs nothing pauses (`_execute`): the same checks, call stack and outputs."""
        sg = self._callee(index)
        sg.set_inputs(inputs)
        self._execute(sg)
        return self._outputs(sg)

    def _callee(self, index: int) -> Subgraph:
        """Subgraph ``index`` about to be called: it exists and is not already running."""
        if not 0 <= index < len(self.subgraphs):
            raise ValueError(f"subgraph index {index} out of range (0..{len(self.subgraphs) - 1})")
        if index in self._active:
            raise ExecutionError(f"subgraph {index} calls itself recursively")
        return self.subgraphs[index]

    @staticmethod
    def _outputs(sg: Subgraph) -> list[np.ndarray]:
        """A finished subgraph's output arrays (each must have been computed)."""
        outs = []
        tensors = sg.tensors
        for o in sg.outputs:
            data = tensors[o].data
            if data is None:
                raise ExecutionError(f"subgraph {sg.index} output tensor {o} was never computed")
            outs.append(data)
        return outs

    def _enter(self, sg: Subgraph, frame: Frame) -> Frame:
        """Push ``sg``'s frame on the call stack and mark it running."""
        self._stack.append(frame)
        self._active.add(sg.index)
        return frame

    def _leave(self, frame: Frame) -> None:
        """Pop a finished subgraph's frame; a finished run stays positioned at its end."""
        self._stack.pop()
        if not self._stack:
            self._stack.append(frame)

    def _run_subgraph(self, sg: Subgraph) -> Generator:
        frame = self._enter(sg, Frame(sg.index, 0))
        nodes = sg.nodes
        budget = self.budget
        try:
            for ni in sg.execution_plan:
                frame.op = ni
                yield None
                node = nodes[ni]
                if budget.exceeded() and not budget.stop_requested:
                    budget.check(self.call_path())
                sg.check_prepared(node)
                if node.registration.kernel.calls_subgraphs:
                    yield from self._invoke_calling(sg, node)
                else:
                    self._invoke(sg, node)
            frame.op = len(nodes)
            if len(self._stack) > 1:
                yield None  # pause point: the subgraph is about to return
        finally:
            self._active.discard(sg.index)
        self._leave(frame)

    def _execute(self, sg: Subgraph) -> None:
        """`_run_subgraph` without pause points, for runs nothing can pause (`invoke`): the
        call stack, re-preparation, budgets and op timing are the same.

        With no hook and no after-breakpoint to serve, it walks the prepared plan
        (`builder.bind_plan`): one direct kernel call per node, timed with one clock read
        that also serves the budget check of the next node."""
        if self._before_hooks or self._after_hooks or self._collect_after:
            self._execute_watched(sg)
            return
        key = (sg.fold_epoch, self.bind_kernels, self.fold_shape_ops)
        if sg.plan_key is not None and sg.plan_key != key:
            unspecialize_plan(sg)
        self._op_stats_in_plan = True
        frame = self._enter(sg, sg.direct_frame)  # one per subgraph: never runs twice at once
        frame.op = 0
        budget = self.budget
        deadline = budget.deadline
        seconds, counts = sg.op_seconds, sg.op_counts
        try:
            t0 = perf_counter()
            for node, fn, i in sg.plan_steps:
                frame.op = i
                if t0 > deadline or budget.stop_requested:
                    budget.check(self.call_path())
                if node.shapes_dirty:
                    sg.check_prepared(node)
                if fn is None:  # a control-flow kernel without invoke_direct: its generator
                    self._drain_calling(sg, node)
                else:
                    try:
                        fn(sg, node)
                    except PASS_THROUGH:
                        raise
                    except Exception as exc:  # noqa: BLE001 - every kernel failure names its op
                        raise self._fail(sg, node, exc) from exc
                t1 = perf_counter()
                seconds[i] += t1 - t0
                counts[i] += 1
                t0 = t1
            frame.op = len(sg.nodes)
            if sg.tried_key != key and sg.fold_epoch == key[0]:
                specialize_plan(sg, key)  # a run with no re-preparation: shapes hold
        finally:
            self._active.discard(sg.index)
        self._leave(frame)

    def _drain_calling(self, sg: Subgraph, node: Node) -> None:
        """Run a control-flow node to its end in a run nothing pauses (its generator never
        yields there: `call_subgraph` runs the callee directly)."""
        try:
            for _ in node.kernel.invoke(sg, node):
                pass
        except PASS_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001
            raise self._fail(sg, node, exc) from exc

    def _execute_watched(self, sg: Subgraph) -> None:
        """`_execute` when hooks or after-breakpoints watch every op."""
        frame = self._enter(sg, Frame(sg.index, 0))
        invoke = self._invoke
        budget = self.budget
        try:
            for node in sg.plan_nodes:
                frame.op = node.index
                if budget.exceeded():
                    budget.check(self.call_path())
                if node.shapes_dirty:
                    sg.check_prepared(node)
                if node.calls_subgraphs:
                    for _ in self._invoke_calling(sg, node):  # call_subgraph does not pause
                        pass
                else:
                    invoke(sg, node)
            frame.op = len(sg.nodes)
        finally:
            self._active.discard(sg.index)
        self._leave(frame)

    #: `_execute` for `invoke`: float kernels follow IEEE (inf, nan), silently.  The
    #: decorator form of np.errstate costs half of what a with-block does per run.
    _execute_ieee = np.errstate(all="ignore")(_execute)

    @staticmethod
    def _fail(sg: Subgraph, node: Node, exc: BaseException) -> ExecutionError:
        return op_failure(sg, node, exc)

    def _before(self, sg: Subgraph, node: Node) -> None:
        """The before-hooks of an op about to run."""
        ev = OpEvent(sg.index, node.index, node.name, node, len(self._stack))
        for h in self._before_hooks:
            h(self, ev)

    def _invoke(self, sg: Subgraph, node: Node) -> None:
        if self._before_hooks:
            self._before(sg, node)
        t0 = perf_counter()
        try:
            node.kernel.invoke(sg, node)
        except PASS_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - every kernel failure names its op
            raise self._fail(sg, node, exc) from exc
        seconds = perf_counter() - t0
        key = node.key
        self._op_times[key] += seconds
        self._op_calls[key] += 1
        if self._after_hooks or self._collect_after:
            self._after(sg, node, seconds, counted=True)

    def _invoke_calling(self, sg: Subgraph, node: Node) -> Generator:
        if self._before_hooks:
            self._before(sg, node)
        t0 = time.perf_counter()
        paused0 = self._paused_total
        try:
            yield from node.registration.kernel.invoke(sg, node)
        except PASS_THROUGH:
            raise
        except GeneratorExit:
            raise
        except Exception as exc:  # noqa: BLE001
            raise self._fail(sg, node, exc) from exc
        elapsed = time.perf_counter() - t0 - (self._paused_total - paused0)
        self._after(sg, node, max(elapsed, 0.0))

    def _after(self, sg: Subgraph, node: Node, seconds: float, counted: bool = False) -> None:
        key = node.key
        if not counted:
            self._op_times[key] += seconds
            self._op_calls[key] += 1
        if self._after_hooks:
            ev = OpEvent(sg.index, node.index, node.name, node, len(self._stack), seconds)
            for h in self._after_hooks:
                h(self, ev)
        if self._collect_after:
            for bp in self.breakpoints:
                if bp.enabled and bp.when == "after" and bp.applies(sg.index, node):
                    msg = bp.check(self, sg, node)
                    if msg:
                        self._pending.append((bp, msg, key))
                        break
