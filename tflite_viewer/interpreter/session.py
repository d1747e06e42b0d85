"""A debug session: the Qt-free state of step-debugging one model.

The window's debugger (``tflite_viewer.ui.debugger``) drives a `DebugSession` from a
worker thread and only ever receives what it hands out: immutable `DebugStop` and
`TensorSnapshot` objects.  Tests drive the same object directly, without a window.

A session owns one `Interpreter` and adds to it what a debugger UI needs and the
interpreter does not keep:

* the inputs of the run (checked against the model, seeded where not given);
* breakpoints with ids, so a UI can list, enable, disable and delete them;
* which operators ran and which tensors hold values, per subgraph (numpy masks, cheap to
  copy at every stop even at 20,000 operators);
* a counter of operators run, per-op times, and the last error;
* Cancel: `request_stop`, callable from any thread, is the interpreter's stop request.
  It is seen before every operator (also inside WHILE bodies) and inside long float
  convolutions between their blocks, so a command returns within the op it is in (a
  float CONV_2D of seconds stops within a block, milliseconds).  The session then ends
  the run: state ``stopped``, reason ``"stopped"``, message "stopped by the user", the
  computed values forgotten, as Stop (Shift+F5) does; the next command starts anew;
* progress: `set_progress` reports to a callback, from the thread running the command,
  at most every ``interval`` seconds and once at the end, what a progress bar shows
  (`progress.RunProgress`: ops done out of the entry's plan, the op running now, the
  time left); `progress` answers the same from any thread.  A window's worker forwards
  the callback's objects as a signal.

>>> s = DebugSession(model)            # seeded inputs
>>> s.step_over().position             # ((0, 0),): paused before the first op
>>> s.toggle_breakpoint(0, 12); s.continue_().reason
'breakpoint'
>>> s.snapshot(0, 7).values            # a read-only copy, or None before it is computed
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from ..model import Model, load_model
from . import debugger as dbg
from .budget import run_reserve
from .errors import ExecutionError
from .inputs import complete_inputs, input_specs
from .interpreter import Interpreter
from .progress import DEFAULT_INTERVAL, RunProgress
from .tensor import AllocationType

#: states a session can be in
READY, PAUSED, FINISHED, ERROR, STOPPED = "ready", "paused", "finished", "error", "stopped"


def _frozen(a: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return None
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class TensorSnapshot:
    """One tensor as it is at a stop: its value is a read-only copy (None: not computed)."""

    subgraph: int
    tensor: int
    name: str
    type_name: str
    shape: tuple[int, ...] | None
    values: np.ndarray | None
    constant: bool
    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()
    quantized_dimension: int = 0
    serial: int = 0  # the stop this snapshot belongs to

    @property
    def computed(self) -> bool:
        return self.values is not None

    def real_values(self) -> np.ndarray | None:
        """The values dequantized with the tensor's parameters (float64), or as they are."""
        v = self.values
        if v is None or not self.scale or v.dtype.kind not in "iu":
            return v
        scale = np.asarray(self.scale, np.float64)
        zp = np.asarray(self.zero_point or (0,) * len(self.scale), np.float64)
        if scale.size > 1 and v.ndim:
            shape = [1] * v.ndim
            shape[self.quantized_dimension] = scale.size
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        return (v.astype(np.float64) - zp) * scale


@dataclass(frozen=True)
class BreakpointInfo:
    """What a UI lists about a breakpoint."""

    id: int
    description: str
    enabled: bool
    hits: int
    subgraph: int | None
    op: int | None
    kind: str  # "op", "op type", "non-finite", "range", "saturation", "condition"


@dataclass(frozen=True)
class DebugStop:
    """Where a session is after a command, and what changed: immutable, safe to hand to
    another thread.  ``executed`` and ``computed`` are per-subgraph read-only masks."""

    serial: int
    state: str                                   # ready paused finished error stopped
    reason: str                                  # step breakpoint run_to finished error ...
    position: tuple[tuple[int, int], ...]
    op_names: tuple[str, ...]                    # the op at each frame ("" past the end)
    message: str
    ops_run: int
    executed: tuple[np.ndarray, ...]
    computed: tuple[np.ndarray, ...]
    breakpoint_id: int | None = None
    op_times: Mapping[tuple[int, int], float] = field(default_factory=dict)
    outputs: Mapping[str, np.ndarray] | None = None
    #: a generation loop's call the run is in (`generation.Call`: "prefill", "decode #3",
    #: its signature and inputs), and the token ids generated so far; None and () otherwise
    call: Any = None
    tokens: tuple[int, ...] = ()
    #: how float32 CONV_2D / FULLY_CONNECTED sums are added (`Interpreter.float_sums`)
    float_sums: str = "reference"

    @property
    def current(self) -> tuple[int, int] | None:
        """(subgraph, op) about to run, or None."""
        if self.state != PAUSED or not self.position:
            return None
        sg, op = self.position[-1]
        return (sg, op) if op < len(self.executed[sg]) else None

    def describe(self, subgraph_names: list[str] | None = None) -> str:
        """The status-bar text: ``paused at main/op 12 CONV_2D`` (``subgraph 0/op 12 ...``
        without names), in a generation loop led by the call (``decode #3: paused at
        ...``)."""
        call = f"{self.call.label}: " if self.call is not None else ""
        if self.state == PAUSED and self.position:
            sg, op = self.position[-1]
            name = self.op_names[-1]
            label = subgraph_names[sg] if subgraph_names and sg < len(subgraph_names) \
                else f"subgraph {sg}"
            where = f"{label}/op {op} {name}" if name else f"{label} (returning)"
            return f"{call}paused at {where}"
        if self.state == FINISHED and self.tokens:
            return f"finished: generated {' '.join(map(str, self.tokens))}"
        return call + {READY: "ready", FINISHED: "finished", STOPPED: "stopped",
                       ERROR: "error"}.get(self.state, self.state)


def breakpoint_kind(bp: dbg.Breakpoint) -> str:
    """``op``, ``op type``, ``non-finite``, ``range``, ``saturation`` or ``condition``."""
    return {dbg.OpBreakpoint: "op", dbg.OpTypeBreakpoint: "op type",
            dbg.NonFiniteBreakpoint: "non-finite", dbg.RangeBreakpoint: "range",
            dbg.SaturationBreakpoint: "saturation"}.get(type(bp), "condition")


def describe_breakpoint(bp: dbg.Breakpoint, model: Model | None = None) -> str:
    """One line for a breakpoints list."""
    where = []
    if bp.op is not None:
        name = ""
        if model is not None:
            try:
                name = " " + model.subgraphs[bp.subgraph or 0].operators[bp.op].name
            except (IndexError, KeyError):
                pass
        where.append(f"subgraph {bp.subgraph or 0} op {bp.op}{name}")
    elif bp.subgraph is not None:
        where.append(f"subgraph {bp.subgraph}")
    if bp.op_type is not None:
        where.append(f"op type {bp.op_type}")
    kind = breakpoint_kind(bp)
    if isinstance(bp, dbg.NonFiniteBreakpoint):
        head = "NaN/Inf in an output"
    elif isinstance(bp, dbg.RangeBreakpoint):
        head = f"output outside [{bp.low:g}, {bp.high:g}]"
    elif isinstance(bp, dbg.SaturationBreakpoint):
        head = f"saturated outputs > {bp.fraction:.0%}"
    elif kind in ("op", "op type"):
        head = "before"
    else:
        head = "condition"
    return f"{head} {', '.join(where)}".strip() if where else head


class DebugSession:
    """Step-debugging one model (see the module docstring).  Not thread-safe except for
    `request_stop`: one thread (the window's worker) calls everything else."""

    def __init__(self, model: Model | str | bytes, inputs: Mapping[str, Any] | None = None, *,
                 signature: str | None = None, seed: int = 0, rounding: str | None = None,
                 interpreter: Interpreter | None = None, float_sums: str = "auto") -> None:
        if not isinstance(model, Model):
            model = load_model(model)
        self.model = model
        self.signature = signature
        self.seed = int(seed)
        options = {"float_sums": float_sums} if rounding is None else \
            {"float_sums": float_sums, "rounding": rounding}
        self.interpreter = interpreter or Interpreter(model, **options)
        self.specs = input_specs(model, signature)
        self.inputs, self.generated = self._complete(inputs or {})
        self.state = READY
        self.error = ""
        self.ops_run = 0
        self._serial = itertools.count(1)
        self._ids = itertools.count(1)
        self._breakpoints: dict[int, dbg.Breakpoint] = {}
        #: Step Over enters a STABLEHLO_COMPOSITE, as the canvas draws composites expanded
        #: (View > Fold Composites off): its ops are the next ones on screen
        self.inline_composites = False
        self.interpreter.add_hook("after", self._after_op)
        self._executed = [np.zeros(len(sg.nodes), bool) for sg in self.interpreter.subgraphs]
        self._computed = [np.zeros(len(sg.tensors), bool) for sg in self.interpreter.subgraphs]
        self.last: DebugStop = self._make_stop(READY, "ready", ())

    # -- inputs ------------------------------------------------------------------------------
    def set_inputs(self, inputs: Mapping[str, Any]) -> None:
        """Replace the inputs (checked: an `InputError` names the input and why); takes effect
        at the next start."""
        self.inputs, self.generated = self._complete(inputs)

    def _complete(self, inputs: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], list[str]]:
        """`complete_inputs` within the interpreter's memory budget, its tensors counted."""
        interp = self.interpreter
        return complete_inputs(self.model, inputs, self.seed, self.signature,
                               max_bytes=interp.max_allocation_bytes,
                               reserved=run_reserve(interp.arena_bytes))

    # -- bookkeeping -------------------------------------------------------------------------
    def _after_op(self, interp: Interpreter, ev: dbg.OpEvent) -> None:
        self.ops_run += 1
        self._executed[ev.subgraph][ev.op] = True
        outs = ev.node.outputs
        mask = self._computed[ev.subgraph]
        for o in outs:
            if o >= 0:
                mask[o] = True

    def _reset_masks(self) -> None:
        for a in self._executed:
            a[:] = False
        for sgi, a in enumerate(self._computed):
            a[:] = False
            for t in self.interpreter.subgraphs[sgi].tensors:
                if t.allocation_type is AllocationType.MMAP_RO:
                    a[t.index] = True
        entry = self.interpreter.entry
        for i in entry.inputs:
            if i >= 0:
                self._computed[entry.index][i] = True

    def _make_stop(self, state: str, reason: str, position, message: str = "",
                   bp: dbg.Breakpoint | None = None, outputs=None) -> DebugStop:
        names = []
        for sg, op in position:
            nodes = self.interpreter.subgraphs[sg].nodes
            names.append(nodes[op].name if op < len(nodes) else "")
        bp_id = next((k for k, b in self._breakpoints.items() if b is bp), None)
        call, tokens = self._call_state()
        return DebugStop(next(self._serial), state, reason, tuple(position), tuple(names),
                         message, self.ops_run, tuple(_frozen(a) for a in self._executed),
                         tuple(_frozen(a) for a in self._computed), bp_id,
                         MappingProxyType(dict(self.interpreter.op_times)),
                         None if outputs is None else MappingProxyType(
                             {k: _frozen(v) for k, v in outputs.items()}), call, tokens,
                         self.interpreter.float_sums)

    def _call_state(self) -> tuple[Any, tuple[int, ...]]:
        """The generation call the run is in and the tokens so far (a chained session's)."""
        return None, ()

    def _from(self, stop: dbg.Stop) -> DebugStop:
        if stop.finished:
            self.state = FINISHED
            return self._record(self._make_stop(FINISHED, "finished", stop.position,
                                                "finished", outputs=stop.outputs))
        if stop.reason == "interrupted":  # `request_stop`: the run ends, as Stop ends it
            return self._stopped_by_user()
        bp = stop.breakpoint
        self.state = PAUSED
        message = stop.message or ""
        return self._record(self._make_stop(PAUSED, stop.reason, stop.position, message, bp,
                                            outputs=stop.outputs))

    def _stopped_by_user(self) -> DebugStop:
        self.interpreter.reset()
        self.state = STOPPED
        return self._record(self._make_stop(STOPPED, "stopped", (), "stopped by the user"))

    def _record(self, stop: DebugStop) -> DebugStop:
        self.last = stop
        return stop

    def _run(self, fn, *args) -> DebugStop:
        """Call an interpreter stepping method; a failure is the ERROR state, a stop
        request (the run paused, "interrupted") the STOPPED one.  A request that came
        after the command's end is forgotten."""
        interp = self.interpreter
        try:
            return self._from(fn(*args))
        except Exception as exc:  # noqa: BLE001 - a kernel failure is a state, not a crash
            self.state = ERROR
            position = interp.position or self.last.position
            self.error = self._where(exc, position)
            return self._record(self._make_stop(ERROR, "error", position, self.error))
        finally:
            interp.budget.stop_requested = False

    def _where(self, exc: Exception, position) -> str:
        """The failure's message, naming the subgraph, op index and op when it does not
        already (an `ExecutionError` does; a hook's or a budget's may not)."""
        if isinstance(exc, ExecutionError) or not position:
            return str(exc)
        sg, op = position[-1]
        sub = self.interpreter.subgraphs[sg]
        name = sub.nodes[op].name if op < len(sub.nodes) else "return"
        return f"subgraph {sg} ({sub.name}), op {op} ({name}): {type(exc).__name__}: {exc}"

    # -- commands ----------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """Whether a run is in progress (paused mid-run)."""
        return self.state == PAUSED

    def start(self) -> DebugStop:
        """A new run from the first op, paused before it."""
        self.ops_run = 0
        self._reset_masks()
        interp = self.interpreter
        try:  # by input name: a signature's order need not be its subgraph's
            stop = interp.start(self.inputs, signature=self.signature)
        except Exception as exc:  # noqa: BLE001
            self.state = ERROR
            self.error = str(exc)
            return self._record(self._make_stop(ERROR, "error", (), str(exc)))
        self._reset_masks()  # inputs may have been resized
        return self._from(stop)

    def _ensure(self) -> DebugStop | None:
        if self.state != PAUSED:
            stop = self.start()
            return stop
        return None

    def continue_(self) -> DebugStop:
        """Run on until a breakpoint, the end, an error or `request_stop` (F5).  Not
        running: start and continue."""
        if self.state != PAUSED:
            stop = self.start()
            if stop.state != PAUSED:
                return stop
            # a breakpoint on the first op: stop there, as IDEs do
            if self._first_op_breakpoint():
                bp = self._first_op_breakpoint()
                bp.hits += 1
                return self._record(self._make_stop(PAUSED, "breakpoint", stop.position,
                                                    describe_breakpoint(bp, self.model), bp))
        return self._run(self.interpreter.run)

    def _first_op_breakpoint(self) -> dbg.Breakpoint | None:
        node = self.interpreter.current_node()
        cur = self.interpreter.current_op
        if node is None or cur is None:
            return None
        for bp in self.interpreter.breakpoints:
            if bp.enabled and bp.when == "before" and bp.applies(cur[0], node):
                return bp
        return None

    def step_over(self) -> DebugStop:
        """Run one op of the current subgraph; a control-flow op runs whole (F10), a
        composite too unless `inline_composites` (then it is entered, and its end passed
        without a pause).  Not running: start, paused before the first op."""
        first = self._ensure()
        if first is not None:
            return first
        node = self.interpreter.current_node()
        if self.inline_composites and node is not None and node.name == "STABLEHLO_COMPOSITE":
            return self._run(self.interpreter.step_into)
        stop = self._run(self.interpreter.step)
        if self.inline_composites and self._returning_from_composite(stop):
            stop = self._run(self.interpreter.step)
        return stop

    def _returning_from_composite(self, stop: DebugStop) -> bool:
        """Paused at the end of a composite's decomposition (about to return)."""
        if stop.state != PAUSED or len(stop.position) < 2 or stop.op_names[-1]:
            return False
        sg, op = stop.position[-2]
        nodes = self.interpreter.subgraphs[sg].nodes
        return op < len(nodes) and nodes[op].name == "STABLEHLO_COMPOSITE"

    def set_inline_composites(self, on: bool) -> None:
        """Whether Step Over enters composites (see `inline_composites`)."""
        self.inline_composites = bool(on)

    def step_into(self) -> DebugStop:
        """Like step_over, but enter the subgraph a WHILE/IF/CALL_ONCE calls (F11)."""
        return self._ensure() or self._run(self.interpreter.step_into)

    def step_out(self) -> DebugStop:
        """Run until the current subgraph returned and its calling op finished."""
        if self.state != PAUSED:
            return self.start()
        return self._run(self.interpreter.step_out)

    def run_to(self, subgraph: int, op: int, call: int | None = None) -> DebugStop:
        """Run until just before ``op`` of ``subgraph`` (breakpoints stop earlier).
        ``call`` names a generation run's call (`GenerationSession`); one run has one."""
        if self.state != PAUSED:
            stop = self.start()
            if stop.state != PAUSED or stop.position[-1] == (subgraph, op):
                return stop
        return self._run(self.interpreter.run_to, (subgraph, op))

    def restart(self) -> DebugStop:
        return self.start()

    def stop(self) -> DebugStop:
        """End the run (Shift+F5): back to ready, computed values forgotten."""
        self.interpreter.reset()
        self.state = STOPPED
        self.ops_run = 0
        self._reset_masks()
        return self._record(self._make_stop(STOPPED, "stopped", (), "stopped"))

    def request_stop(self) -> None:
        """Cancel the running command (thread-safe): it returns within the op it is in
        (see the module docstring) with the run ended, state ``stopped``."""
        self.interpreter.request_stop()

    def set_progress(self, callback: Callable[[RunProgress], Any] | None,
                     interval: float = DEFAULT_INTERVAL) -> None:
        """Report every command's progress to ``callback`` (None: no more), from the
        thread running it, at most every ``interval`` seconds and once when the run
        finishes (`Interpreter.set_progress`)."""
        self.interpreter.set_progress(callback, interval)

    def progress(self) -> RunProgress:
        """The running (or last) command's progress now; callable from any thread."""
        return self.interpreter.progress()

    # -- breakpoints -------------------------------------------------------------------------
    def add_breakpoint(self, bp: dbg.Breakpoint, bid: int | None = None) -> int:
        """Add ``bp``; ``bid`` gives it the id a UI knows it by (one already used is
        replaced), else the next free one."""
        if bid is None:
            bid = next(self._ids)
            while bid in self._breakpoints:
                bid = next(self._ids)
        elif bid in self._breakpoints:
            self.remove_breakpoint(bid)
        self._breakpoints[bid] = bp
        self.interpreter.add_breakpoint(bp)
        return bid

    def sync_breakpoints(self, wanted) -> None:
        """Make the session's breakpoints ``wanted`` ((id, Breakpoint) pairs, a UI's list):
        ids it lacks are removed, new ones added, known ones take the new enabled state
        (their hit counts stay)."""
        wanted = dict(wanted)
        for bid in [b for b in self._breakpoints if b not in wanted]:
            self.remove_breakpoint(bid)
        for bid, bp in wanted.items():
            mine = self._breakpoints.get(bid)
            if mine is None:
                self.add_breakpoint(bp, bid)
            else:
                mine.enabled = bool(bp.enabled)

    def remove_breakpoint(self, bid: int) -> None:
        bp = self._breakpoints.pop(bid, None)
        if bp is not None:
            self.interpreter.remove_breakpoint(bp)

    def enable_breakpoint(self, bid: int, enabled: bool = True) -> None:
        self._breakpoints[bid].enabled = bool(enabled)

    def op_breakpoint(self, subgraph: int, op: int) -> int | None:
        """The id of the plain breakpoint on an op, if any."""
        for bid, bp in self._breakpoints.items():
            if type(bp) is dbg.OpBreakpoint and bp.subgraph == subgraph and bp.op == op:
                return bid
        return None

    def toggle_breakpoint(self, subgraph: int, op: int) -> int | None:
        """Add a breakpoint before an op, or remove the one there (F9); returns the new id
        or None when one was removed."""
        bid = self.op_breakpoint(subgraph, op)
        if bid is not None:
            self.remove_breakpoint(bid)
            return None
        return self.add_breakpoint(dbg.OpBreakpoint(op, subgraph))

    def breakpoints(self) -> tuple[BreakpointInfo, ...]:
        return tuple(BreakpointInfo(bid, describe_breakpoint(bp, self.model), bp.enabled,
                                    bp.hits, bp.subgraph, bp.op, breakpoint_kind(bp))
                     for bid, bp in self._breakpoints.items())

    # -- values ------------------------------------------------------------------------------
    def snapshot(self, subgraph: int, tensor: int) -> TensorSnapshot:
        t = self.interpreter.runtime_tensor(subgraph, tensor)
        q = t.quantization
        scale: tuple[float, ...] = ()
        zp: tuple[int, ...] = ()
        qd = 0
        if q is not None and q.has_scale:
            scale = tuple(float(s) for s in np.ravel(q.scale))
            zp = tuple(int(z) for z in np.ravel(q.zero_point))
            qd = int(getattr(q, "quantized_dimension", 0) or 0)
        constant = t.allocation_type is AllocationType.MMAP_RO
        value = t.data if (constant or self._computed[subgraph][tensor]) else None
        if value is not None and value.dtype == object:
            value = None
        return TensorSnapshot(subgraph, tensor, t.name, t.type_name,
                              None if t.shape is None else tuple(t.shape), _frozen(value),
                              constant, scale, zp, qd, self.last.serial)

    def snapshots(self, keys) -> dict[tuple[int, int], TensorSnapshot]:
        out = {}
        for sg, t in keys:
            if 0 <= sg < len(self.interpreter.subgraphs) and \
                    0 <= t < len(self.interpreter.subgraphs[sg].tensors):
                out[(sg, t)] = self.snapshot(sg, t)
        return out

    def set_tensor(self, subgraph: int, tensor: int, value: Any) -> TensorSnapshot:
        """Overwrite a tensor while paused; later ops see the new values."""
        if self.state != PAUSED:
            raise ValueError("set a tensor's values while the run is paused")
        self.interpreter.set_tensor(subgraph, tensor, value)
        self._computed[subgraph][tensor] = True
        return self.snapshot(subgraph, tensor)

    def op_times(self) -> dict[tuple[int, int], float]:
        return dict(self.interpreter.op_times)

    def close(self) -> None:
        self.interpreter.remove_hook(self._after_op)
        self.interpreter.reset()
        self.state = STOPPED



@dataclass(frozen=True)
class TensorSummary:
    """A Watch row: shape and statistics of a snapshot (real values for quantized tensors),
    and the fraction of stored integers at their type's limits."""

    shape: tuple[int, ...] | None
    min: float
    max: float
    mean: float
    std: float
    nan: int
    inf: int
    saturation: float | None  # quantized integer tensors only


def summarize(snap: TensorSnapshot) -> TensorSummary | None:
    """Statistics of a computed numeric snapshot, None otherwise."""
    v = snap.values
    if v is None or v.dtype.kind not in "biufc" or v.size == 0:
        return None
    real = snap.real_values()
    r = np.abs(real) if real.dtype.kind == "c" else real.astype(np.float64)
    finite = r[np.isfinite(r)]
    nan = int(np.count_nonzero(np.isnan(r)))
    inf = int(np.count_nonzero(np.isinf(r)))
    sat = None
    if snap.scale and v.dtype.kind in "iu":
        info = np.iinfo(v.dtype)
        sat = float(np.count_nonzero((v == info.min) | (v == info.max)) / v.size)
    if finite.size == 0:
        return TensorSummary(snap.shape, float("nan"), float("nan"), float("nan"),
                             float("nan"), nan, inf, sat)
    return TensorSummary(snap.shape, float(finite.min()), float(finite.max()),
                         float(finite.mean()), float(finite.std()), nan, inf, sat)
