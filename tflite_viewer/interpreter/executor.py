"""The executor: walking the execution plans of a run, op by op.

LiteRT's Subgraph::Invoke walks the execution plan and calls each node's registration.
Here that walk comes in two forms over the same plan, re-preparation, hooks, budgets,
progress and op timing, both working on the interpreter's `RunState`:

- `walk` is a generator that yields at every op boundary; control-flow kernels ``yield
  from`` the subgraphs they call (``ctx.call_subgraph``). The debugger
  (`debugger.Debugger`) pulls on that chain until a stop condition holds, so a run can
  pause anywhere, even inside the third iteration of a WHILE body, and resume.
- `execute` is a plain loop for `invoke`, which nothing can pause.

A stop request (`Interpreter.request_stop`) is seen at op boundaries, at WHILE iterations
and at the checkpoints long kernels make between their blocks (`Subgraph.checkpoint`):
`invoke` raises `RunCancelled` there; a stepped run pauses, before the op it was in when
the request came inside a kernel (that op runs anew on resume).
"""
from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any, Callable, Generator, Sequence

import numpy as np

from .builder import specialize_plan, unspecialize_plan
from .debugger import OpEvent
from .errors import PASS_THROUGH, ExecutionError, RunCancelled, op_failure
from .node import Node
from .run_state import Frame, RunState

if TYPE_CHECKING:
    from .subgraph import Subgraph


class Executor:
    """Runs the plans of one interpreter's subgraphs on its run state."""

    def __init__(self, state: RunState, interpreter: Any) -> None:
        self.state = state
        #: the object hooks receive as their first argument (the `Interpreter`)
        self.interpreter = interpreter
        #: called after every op of a stepped run whose breakpoints check outputs (the
        #: debugger's), else None
        self.after_check: Callable[["Subgraph", Node], None] | None = None

    # -- runs nothing pauses -------------------------------------------------------------
    def invoke(self, entry: "Subgraph") -> None:
        """Run ``entry`` whole with the direct executor (`execute`): the same plan,
        re-preparation, hooks and op timing as a stepped run, without the generator
        machinery that pause points need.  The run state ends ``finished`` (``ready``
        when it failed)."""
        state = self.state
        self.after_check = None
        state.status = "paused"  # running: hooks see the position as during a stepped run
        state.direct = True
        state.begin_command()
        try:
            self._execute_ieee(entry)
        except BaseException:
            state.status = "ready"
            state.active.clear()
            raise
        finally:
            state.direct = False
        state.status = "finished"
        state.progress.finish()

    # -- calling subgraphs ---------------------------------------------------------------
    def call_subgraph(self, index: int, inputs: Sequence[np.ndarray]) -> Generator:
        """Run subgraph ``index`` on ``inputs`` (a generator: control-flow kernels ``yield
        from`` it); its return value is the list of the subgraph's output arrays."""
        sg = self._callee(index)
        sg.set_inputs(inputs)
        if self.state.direct:
            self.execute(sg)
        else:
            yield from self.walk(sg)
        return self._outputs(sg)

    def run_subgraph(self, index: int, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """`call_subgraph` as a plain call, for control-flow kernels' ``invoke_direct`` in
        runs nothing pauses (`execute`): the same checks, call stack and outputs."""
        sg = self._callee(index)
        sg.set_inputs(inputs)
        self.execute(sg)
        return self._outputs(sg)

    def _callee(self, index: int) -> "Subgraph":
        """Subgraph ``index`` about to be called: it exists and is not already running."""
        subgraphs = self.state.subgraphs
        if not 0 <= index < len(subgraphs):
            raise ValueError(f"subgraph index {index} out of range (0..{len(subgraphs) - 1})")
        if index in self.state.active:
            raise ExecutionError(f"subgraph {index} calls itself recursively")
        return subgraphs[index]

    @staticmethod
    def _outputs(sg: "Subgraph") -> list[np.ndarray]:
        """A finished subgraph's output arrays (each must have been computed)."""
        outs = []
        tensors = sg.tensors
        for o in sg.outputs:
            data = tensors[o].data
            if data is None:
                raise ExecutionError(f"subgraph {sg.index} output tensor {o} was never computed")
            outs.append(data)
        return outs

    def _enter(self, sg: "Subgraph", frame: Frame) -> Frame:
        """Push ``sg``'s frame on the call stack and mark it running."""
        self.state.stack.append(frame)
        self.state.active.add(sg.index)
        return frame

    def _leave(self, frame: Frame) -> None:
        """Pop a finished subgraph's frame; a finished run stays positioned at its end."""
        stack = self.state.stack
        stack.pop()
        if not stack:
            stack.append(frame)

    # -- the pausable walk ---------------------------------------------------------------
    def walk(self, sg: "Subgraph") -> Generator:
        """Run ``sg``'s plan, yielding before every op (and before returning to a caller)."""
        state = self.state
        frame = self._enter(sg, Frame(sg.index, 0))
        nodes = sg.nodes
        try:
            for ni in sg.execution_plan:
                frame.op = ni
                yield None
                node = nodes[ni]
                now = perf_counter()
                if now > state.due:
                    state.boundary(now, stop=False)
                sg.check_prepared(node)
                if node.calls_subgraphs:
                    yield from self._invoke_calling(sg, node)
                else:
                    while not self._invoke_stoppable(sg, node):
                        yield None  # stopped inside the op: paused before it, run anew
            frame.op = len(nodes)
            if len(state.stack) > 1:
                yield None  # pause point: the subgraph is about to return
        finally:
            state.active.discard(sg.index)
        self._leave(frame)

    def _invoke_stoppable(self, sg: "Subgraph", node: Node) -> bool:
        """`_invoke` in a stepped run: False when a stop request ended the op inside its
        kernel (`Subgraph.checkpoint`); the request stands, for the debugger to pause."""
        try:
            self._invoke(sg, node)
        except RunCancelled:
            self.state.budget.stop_requested = True
            return False
        return True

    # -- the direct loop -----------------------------------------------------------------
    def execute(self, sg: "Subgraph") -> None:
        """`walk` without pause points, for runs nothing can pause (`invoke`): the call
        stack, re-preparation, budgets, progress and op timing are the same.

        With no hook and no after-breakpoint to serve, it walks the prepared plan
        (`builder.bind_plan`): one direct kernel call per node, timed with one clock read
        that also serves the budget and progress checks of the next node."""
        state = self.state
        if state.before_hooks or state.after_hooks or self.after_check is not None:
            self._execute_watched(sg)
            return
        key = (sg.fold_epoch, state.bind_kernels, state.fold_shape_ops)
        if sg.plan_key is not None and sg.plan_key != key:
            unspecialize_plan(sg)
        state.stats_in_plan = True
        frame = self._enter(sg, sg.direct_frame)  # one per subgraph: never runs twice at once
        frame.op = 0
        budget = state.budget
        due = state.due
        seconds, counts = sg.op_seconds, sg.op_counts
        try:
            t0 = perf_counter()
            for node, fn, i in sg.plan_steps:
                frame.op = i
                if t0 > due or budget.stop_requested:
                    due = state.boundary(t0, stop=True)
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
                        raise op_failure(sg, node, exc) from exc
                t1 = perf_counter()
                seconds[i] += t1 - t0
                counts[i] += 1
                t0 = t1
            frame.op = len(sg.nodes)
            if sg.tried_key != key and sg.fold_epoch == key[0]:
                specialize_plan(sg, key)  # a run with no re-preparation: shapes hold
        finally:
            state.active.discard(sg.index)
        self._leave(frame)

    def _drain_calling(self, sg: "Subgraph", node: Node) -> None:
        """Run a control-flow node to its end in a run nothing pauses (its generator never
        yields there: `call_subgraph` runs the callee directly)."""
        try:
            for _ in node.kernel.invoke(sg, node):
                pass
        except PASS_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001
            raise op_failure(sg, node, exc) from exc

    def _execute_watched(self, sg: "Subgraph") -> None:
        """`execute` when hooks or after-breakpoints watch every op."""
        state = self.state
        frame = self._enter(sg, Frame(sg.index, 0))
        invoke = self._invoke
        budget = state.budget
        try:
            for node in sg.plan_nodes:
                frame.op = node.index
                now = perf_counter()
                if now > state.due or budget.stop_requested:
                    state.boundary(now, stop=True)
                if node.shapes_dirty:
                    sg.check_prepared(node)
                if node.calls_subgraphs:
                    for _ in self._invoke_calling(sg, node):  # call_subgraph does not pause
                        pass
                else:
                    invoke(sg, node)
            frame.op = len(sg.nodes)
        finally:
            state.active.discard(sg.index)
        self._leave(frame)

    #: `execute` for `invoke`: float kernels follow IEEE (inf, nan), silently.  The
    #: decorator form of np.errstate costs half of what a with-block does per run.
    _execute_ieee = np.errstate(all="ignore")(execute)

    # -- one op, watched -----------------------------------------------------------------
    def _before(self, sg: "Subgraph", node: Node) -> None:
        """The before-hooks of an op about to run."""
        ev = OpEvent(sg.index, node.index, node.name, node, len(self.state.stack))
        for h in self.state.before_hooks:
            h(self.interpreter, ev)

    def _invoke(self, sg: "Subgraph", node: Node) -> None:
        state = self.state
        if state.before_hooks:
            self._before(sg, node)
        t0 = perf_counter()
        try:
            node.kernel.invoke(sg, node)
        except PASS_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - every kernel failure names its op
            raise op_failure(sg, node, exc) from exc
        seconds = perf_counter() - t0
        key = node.key
        state.stepped_times[key] += seconds
        state.stepped_calls[key] += 1
        if state.after_hooks or self.after_check is not None:
            self._after(sg, node, seconds, counted=True)

    def _invoke_calling(self, sg: "Subgraph", node: Node) -> Generator:
        state = self.state
        if state.before_hooks:
            self._before(sg, node)
        t0 = perf_counter()
        paused0 = state.paused_total
        try:
            yield from node.kernel.invoke(sg, node)
        except PASS_THROUGH:
            raise
        except GeneratorExit:
            raise
        except Exception as exc:  # noqa: BLE001
            raise op_failure(sg, node, exc) from exc
        elapsed = perf_counter() - t0 - (state.paused_total - paused0)
        self._after(sg, node, max(elapsed, 0.0))

    def _after(self, sg: "Subgraph", node: Node, seconds: float, counted: bool = False) -> None:
        state = self.state
        key = node.key
        if not counted:
            state.stepped_times[key] += seconds
            state.stepped_calls[key] += 1
        if state.after_hooks:
            ev = OpEvent(sg.index, node.index, node.name, node, len(state.stack), seconds)
            for h in state.after_hooks:
                h(self.interpreter, ev)
        if self.after_check is not None:
            self.after_check(sg, node)
