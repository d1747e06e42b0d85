"""A debug session over a generation loop: prefill, then decode after decode, each call a
run the debugger can pause in.

`GenerationSession` is a `DebugSession` whose run is the chain of signature calls that
`generation.Generation` defines (the KV cache carried by name, the argmax fed back).  What
a debugger does in one run it does in any call: breakpoints fire in every call that runs
their op, Run To stops at the next call that reaches it (or, with ``call=``, in that
call), Watch and snapshots read the call paused in.  Every stop names its call
(``DebugStop.call``: "prefill", "decode #3", its signature and inputs) and carries the ids
generated so far (``DebugStop.tokens``).

When a call finishes and another follows, its outputs are recorded and the next call
starts at once: Continue and Run To go on into it, a step pauses before its first op
(reason ``"call"``).  The last call's end is the session's FINISHED stop, with the last
call's outputs and every generated id.

>>> s = GenerationSession(model, find_plan(model, 3), [5, 17, 42], steps=8)
>>> s.toggle_breakpoint(decode_subgraph, 12)
>>> for _ in range(3): stop = s.continue_()
>>> stop.call.label
'decode #3'
"""
from __future__ import annotations

from typing import Any, Sequence

from ..model import Model, load_model
from .generation import Call, Generation, GenerationPlan
from .session import ERROR, FINISHED, PAUSED, DebugSession, DebugStop, describe_breakpoint


class GenerationSession(DebugSession):
    """Step-debugging a generation loop (see the module docstring)."""

    def __init__(self, model: Model | str | bytes, plan: GenerationPlan,
                 prompt: Sequence[int] | str, steps: int, **kwargs: Any) -> None:
        if not isinstance(model, Model):
            model = load_model(model)
        self.plan = plan
        self.prompt = prompt
        self.steps = int(steps)
        self.generation = Generation(model, plan, prompt, steps)  # checked before any run
        self.call: Call | None = self.generation.next_call()
        kwargs.pop("signature", None)
        super().__init__(model, dict(self.call.inputs), signature=self.call.signature,
                         **kwargs)

    def _call_state(self) -> tuple[Any, tuple[int, ...]]:
        return self.call, tuple(self.generation.tokens)

    def set_inputs(self, inputs) -> None:
        raise ValueError("a generation run makes its own inputs: set the prompt and the "
                         "number of tokens instead")

    # -- the chain ---------------------------------------------------------------------------
    def start(self) -> DebugStop:
        """The loop from its first call (the prefill), paused before its first op."""
        self.generation = Generation(self.model, self.plan, self.prompt, self.steps)
        self._enter(self.generation.next_call())
        return super().start()

    def _enter(self, call: Call) -> None:
        self.call = call
        self.signature = call.signature
        self.inputs = dict(call.inputs)

    def _next_call(self, finished: DebugStop) -> DebugStop | None:
        """Record the finished call and start the next one, paused before its first op;
        None when the loop is done (then the FINISHED stop is remade with every id)."""
        try:
            self.generation.record(finished.outputs or {})
        except Exception as exc:  # noqa: BLE001 - a call without its outputs ends the run
            self.state = ERROR
            self.error = str(exc)
            return self._record(self._make_stop(ERROR, "error", finished.position, self.error))
        call = self.generation.next_call()
        if call is None:
            tokens = " ".join(map(str, self.generation.tokens))
            return self._record(self._make_stop(FINISHED, "finished", finished.position,
                                                f"generated {tokens}",
                                                outputs=finished.outputs))
        self._enter(call)
        try:
            stop = self.interpreter.start(self.inputs, signature=self.signature)
        except Exception as exc:  # noqa: BLE001
            self.state = ERROR
            self.error = f"{call.label}: {exc}"
            return self._record(self._make_stop(ERROR, "error", (), self.error))
        self._reset_masks()
        if stop.finished:  # a signature without ops
            return self._next_call(self._from(stop))
        self.state = PAUSED
        return self._record(self._make_stop(PAUSED, "call", stop.position,
                                            f"{call.describe()} begins"))

    def _run(self, fn, *args) -> DebugStop:
        """One session command across calls: a step stops at the start of the next call,
        Continue and Run To go on in it (stopping at a breakpoint on its first op)."""
        interp = self.interpreter
        moving = fn in (interp.run, interp.run_to)
        stop = super()._run(fn, *args)
        while stop.state == FINISHED and self.generation.current is not None:
            stop = self._next_call(stop)
            if stop.state != PAUSED or not moving:
                return stop
            bp = self._first_op_breakpoint()
            if bp is not None:
                bp.hits += 1
                return self._record(self._make_stop(PAUSED, "breakpoint", stop.position,
                                                    describe_breakpoint(bp, self.model), bp))
            if fn is interp.run_to and stop.position[-1] == tuple(args[0]):
                return self._record(self._make_stop(PAUSED, "run_to", stop.position))
            stop = super()._run(fn, *args)
        return stop

    def run_to(self, subgraph: int, op: int, call: int | None = None) -> DebugStop:
        """Run until just before ``op`` of ``subgraph``: in the next call that runs it, or
        with ``call`` (0 prefill, i decode step i) in that call; breakpoints stop earlier."""
        stop = super().run_to(subgraph, op)
        while (call is not None and stop.state == PAUSED and stop.reason == "run_to"
               and self.call is not None and self.call.index < call):
            stop = self._run(self.interpreter.run_to, (subgraph, op))
        return stop
