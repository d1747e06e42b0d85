"""The Interpreter: loading, allocation, signatures, and the stepping executor.

Execution is a chain of Python generators: running a subgraph yields at every op boundary,
and control-flow kernels ``yield from`` the subgraphs they call.  The debugger API (`step`,
`step_into`, `step_out`, `run`, `run_to`) pulls on that chain until a stop condition holds,
so a run can pause anywhere, even inside the third iteration of a WHILE body, and resume.
`invoke()`, which nothing can pause, runs the same plan through `_execute`, a plain loop
with the same re-preparation, hooks and op timing but no pause points.
"""
from __future__ import annotations

import os
import time
from time import perf_counter
from collections import defaultdict
from typing import Any, Callable, Generator, Mapping, Sequence

import numpy as np

from ..model import Model, load_model
from ..model.dtypes import type_name
from . import debugger as dbg
from .debugger import Breakpoint, Frame, OpEvent, Position, Stop
from . import validation
from .inputs import InputError
from .budget import (DEFAULT_MAX_ALLOCATION_BYTES, DEFAULT_MAX_ITERATIONS, DEFAULT_TIMEOUT,
                     HOW_TO_RAISE_MEMORY, Budget, check_bytes)
from .errors import PASS_THROUGH, AllocationError, ExecutionError, UnsupportedOpError
from .node import Node
from .op_resolver import BuiltinOpResolver, OpResolver
from .quant_math import check_rounding
from .subgraph import Subgraph
from .tensor import AllocationType, Tensor

_NO_BYTES = (bytes, bytearray, memoryview)


class Interpreter:
    """Runs a model with numpy kernels and lets a debugger drive it op by op.

    ``Interpreter(model)`` resolves every operator (raising one `UnsupportedOpError` that
    lists every op it cannot run), then allocates (prepares every node of the entry
    subgraphs).  Pass ``allocate=False`` to register custom kernels first::

        interp = Interpreter(model, allocate=False)
        interp.op_resolver.add_custom("MyOp", my_invoke)
        interp.allocate_tensors()

    ``rounding`` is how quantized kernels multiply by a quantized multiplier:
    ``"double"`` (the default) is gemmlowp's SaturatingRoundingDoublingHighMul followed by
    RoundingDivideByPOT, which is what the ai-edge-litert 2.3.0 wheel's kernels do: measured
    on single-op models (tests/integer/test_rounding.py: acc=16474, multiplier=1309785559,
    shift=-7 gives 79 in LiteRT, 79 double, 78 single) and on every intermediate tensor of
    the quantized corpus models (tests/interpreter/test_quantized_models.py).  ``"single"``
    reproduces LiteRT builds compiled with TFLITE_SINGLE_ROUNDING; the two differ on exact
    ties.  Any other value is a ValueError.

    Budgets (see `tflite_viewer.interpreter.budget`): ``max_allocation_bytes`` bounds every
    tensor, input and the prepared arena (checked before allocating); ``max_iterations``
    bounds each WHILE execution; ``timeout`` (seconds) bounds each `invoke()` and each
    `run()`/`step()` call.  Exceeding one raises `AllocationError`, `IterationBudgetError`
    or `TimeBudgetError` naming the op and the figure.  `request_stop()` interrupts a run
    from another thread.  Before any kernel sees the model, every node's arity and tensor
    references are checked against what its kernel declares (`validation`):
    `ModelFormatError` naming where.
    """

    def __init__(self, model: Model | str | os.PathLike | bytes, *, rounding: str = "double",
                 max_allocation_bytes: int = DEFAULT_MAX_ALLOCATION_BYTES,
                 max_iterations: int | None = DEFAULT_MAX_ITERATIONS,
                 timeout: float | None = DEFAULT_TIMEOUT,
                 op_resolver: OpResolver | None = None, allocate: bool = True) -> None:
        rounding = check_rounding(rounding)
        if not isinstance(model, Model):
            model = load_model(model)
        self.model = model
        self.rounding = rounding
        self.max_allocation_bytes = int(max_allocation_bytes)
        #: the iteration and time budgets and the stop request (`request_stop`)
        self.budget = Budget(max_iterations, timeout)
        #: (subgraph, op) of each WHILE -> the iteration it is in (for budget messages)
        self.loop_iterations: dict[tuple[int, int], int] = {}
        self.op_resolver = op_resolver if op_resolver is not None else BuiltinOpResolver()
        self.subgraphs: list[Subgraph] = [Subgraph(self, sg) for sg in model.subgraphs]
        # resource variables (VAR_HANDLE ids -> values) and CALL_ONCE bookkeeping
        self.resource_ids: dict[tuple[str, str], int] = {}
        self.resources: dict[int, np.ndarray | None] = {}
        self.called_once: set[int] = set()
        # debugger state
        self.breakpoints: list[Breakpoint] = []
        self._before_hooks: list[Callable[["Interpreter", OpEvent], Any]] = []
        self._after_hooks: list[Callable[["Interpreter", OpEvent], Any]] = []
        self.op_times: dict[tuple[int, int], float] = defaultdict(float)
        self.op_calls: dict[tuple[int, int], int] = defaultdict(int)
        self._stack: list[Frame] = []
        self._gen: Generator | None = None
        self._state = "ready"  # ready | paused | finished
        self._pending: list[tuple[Breakpoint, str, tuple[int, int]]] = []
        self._paused_since: float | None = None
        self._paused_total = 0.0
        self._active: set[int] = set()
        self._preparing: set[int] = set()
        self._collect_after = False
        self._direct = False  # inside invoke(): subgraph calls run without pause points
        self._entry = 0
        self._signature: str | None = None
        #: (signature, entry subgraph) -> (input tensors, (output name, tensor) pairs): what
        #: every run checks and returns, looked up once (`_entry_io`)
        self._io: dict[tuple[str | None, int], tuple[tuple[Tensor, ...],
                                                     tuple[tuple[str, Tensor], ...]]] = {}
        self._allocated = False
        self._nodes_built = False
        if allocate:
            self.allocate_tensors()

    def __repr__(self) -> str:
        return f"<Interpreter {self.model!r} {self._state}>"

    # ======================================================================================
    # loading and allocation
    # ======================================================================================
    def _build_nodes(self) -> None:
        """Resolve every operator of every subgraph; report every problem at once."""
        problems: dict[tuple[str, int, str], list[str]] = {}
        pending: list[tuple[Subgraph, Node]] = []
        for sg in self.subgraphs:
            sg.nodes = []
            for op in sg.model_subgraph.operators:
                code = op.opcode
                version = code.version
                if code.is_custom:
                    name = code.custom_code or "CUSTOM"
                    reg = self.op_resolver.find_custom(name, version)
                    ranges = self.op_resolver.custom_versions(name)
                    label = f"custom op {name!r}"
                else:
                    name = code.builtin_name
                    reg = self.op_resolver.find_builtin(code.builtin_code, version)
                    ranges = self.op_resolver.builtin_versions(code.builtin_code)
                    label = name
                where = f"subgraph {sg.index} op {op.index}"
                if reg is None:
                    if ranges:
                        rng = ", ".join(f"{a}..{b}" for a, b in ranges)
                        why = (f"{label} version {version} is not supported "
                               f"(supported versions: {rng})")
                    else:
                        why = f"{label} (v{version}): no kernel"
                    problems.setdefault((name, version, why), []).append(where)
                    continue
                node = Node(op.index, sg.index, name, version, op.inputs, op.outputs,
                            op.intermediates, op.options, None, reg, op)
                if code.is_custom:
                    node.custom_data = op.custom_options
                sg.nodes.append(node)
                pending.append((sg, node))
            sg.execution_plan = list(range(len(sg.nodes)))
            sg.plan_nodes = list(sg.nodes)
            for t in sg.tensors:
                t.consumers = []
            for node in sg.nodes:
                for i in node.inputs:
                    if i >= 0:
                        sg.tensors[i].consumers.append(node)
        for sg in self.subgraphs:  # arity, omitted inputs, tensors: before any kernel
            validation.check_subgraph(sg, self.subgraphs, order=not problems)
        if True:  # type checks of resolved ops, reported with the missing ones
            for sg, node in pending:
                why = self._kernel_hook(sg, node, "check")
                if why:
                    problems.setdefault((node.name, node.version, why), []).append(
                        f"subgraph {sg.index} op {node.index}")
        if problems:
            lines = []
            for (name, version, why), wheres in problems.items():
                more = f" and {len(wheres) - 3} more" if len(wheres) > 3 else ""
                lines.append(f"  {why} [{', '.join(wheres[:3])}{more}]")
            err = UnsupportedOpError(
                f"cannot run this model: {len(problems)} unsupported operator"
                f"{'s' if len(problems) > 1 else ''}:\n" + "\n".join(lines))
            err.problems = [  # type: ignore[attr-defined]
                {"op": n, "version": v, "reason": w, "where": ws}
                for (n, v, w), ws in problems.items()]
            raise err
        for sg, node in pending:
            node.user_data = self._kernel_hook(sg, node, "init")
        self._nodes_built = True

    def _kernel_hook(self, sg: Subgraph, node: Node, hook: str) -> Any:
        """A kernel's load-time hook (check, init); a failure names the op."""
        try:
            return getattr(node.registration.kernel, hook)(sg, node)
        except PASS_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - any kernel failure names its op
            raise ExecutionError(f"subgraph {sg.index} ({sg.name}), op {node.index} "
                                 f"({node.name}): {hook} failed: {type(exc).__name__}: "
                                 f"{exc}") from exc

    def request_stop(self) -> None:
        """Interrupt the current run from any thread (a window's Stop button).

        `invoke()` raises `RunCancelled` at the next op boundary or WHILE iteration; a
        stepped run (`run`, `step`, `run_to` ...) pauses there instead, returning a Stop
        with reason ``"interrupted"`` from which it can be resumed.  A request made while
        nothing runs is forgotten when the next run starts."""
        self.budget.request_stop()

    def allocate_tensors(self) -> None:
        """Resolve ops (first time), prepare the entry subgraphs, check the memory limit."""
        if not self._nodes_built:
            self._build_nodes()
        for sg in self.subgraphs:
            sg.reset_variables()
        entries = {0} | {s.subgraph_index for s in self.model.signature_defs}
        with np.errstate(all="ignore"):  # bad scales are findings, never stray warnings
            for i in sorted(entries):
                if 0 <= i < len(self.subgraphs):
                    self.subgraphs[i].prepare()
        self._check_total()
        self._allocated = True
        self._abort()

    def _check_allocation(self, sg: Subgraph, tensor: Tensor, nbytes: int,
                          shape: Sequence[int]) -> None:
        if nbytes > self.max_allocation_bytes:
            raise AllocationError(
                f"subgraph {sg.index} tensor {tensor.index} ({tensor.name!r}) would need "
                f"{nbytes:,} bytes for {type_name(tensor.type)}{list(shape)}, more than the "
                f"allocation limit of {self.max_allocation_bytes:,} bytes "
                f"({HOW_TO_RAISE_MEMORY})")

    def _check_total(self) -> None:
        total = sum(sg.arena_bytes for sg in self.subgraphs)
        if total > self.max_allocation_bytes:
            biggest = max((t for sg in self.subgraphs for t in sg.tensors
                           if t.allocation_type is not AllocationType.MMAP_RO),
                          key=lambda t: t.nbytes)
            raise AllocationError(
                f"the model's tensors would need {total:,} bytes, more than the allocation "
                f"limit of {self.max_allocation_bytes:,} bytes "
                f"({HOW_TO_RAISE_MEMORY}); the largest is tensor "
                f"{biggest.index} ({biggest.name!r}, {biggest.type_name}{list(biggest.shape)}, "
                f"{biggest.nbytes:,} bytes)")

    @property
    def arena_bytes(self) -> int:
        """Bytes of read-write tensors with a known shape, over all subgraphs."""
        return sum(sg.arena_bytes for sg in self.subgraphs)

    # ======================================================================================
    # inputs, outputs, tensors
    # ======================================================================================
    @property
    def entry(self) -> Subgraph:
        """The subgraph a run starts in (subgraph 0, or the selected signature's)."""
        return self.subgraphs[self._entry]

    @property
    def signature(self) -> str | None:
        return self._signature

    def _signature_def(self, key: str | None):
        return self.model.signature(key) if key is not None else None

    def input_names(self) -> list[str]:
        sig = self._signature_def(self._signature)
        if sig is not None:
            return [m.name for m in sig.inputs]
        return [self.entry.tensors[i].name for i in self.entry.inputs]

    def output_names(self) -> list[str]:
        sig = self._signature_def(self._signature)
        if sig is not None:
            return [m.name for m in sig.outputs]
        return [self.entry.tensors[i].name for i in self.entry.outputs]

    def _input_tensor(self, key: int | str) -> Tensor:
        sg = self.entry
        if isinstance(key, (int, np.integer)):
            if not 0 <= int(key) < len(sg.inputs):
                raise IndexError(f"input {key} out of range: the subgraph has "
                                 f"{len(sg.inputs)} inputs")
            return sg.tensors[sg.inputs[int(key)]]
        sig = self._signature_def(self._signature)
        if sig is not None:
            for m in sig.inputs:
                if m.name == key:
                    return sg.tensors[m.tensor_index]
        for i in sg.inputs:
            if sg.tensors[i].name == key:
                return sg.tensors[i]
        for other in self.model.signature_defs:  # a signature name of the entry subgraph
            if other.subgraph_index == self._entry:
                for m in other.inputs:
                    if m.name == key:
                        return sg.tensors[m.tensor_index]
        tensor = _tensor_key(str(key), sg.index)  # "s{subgraph}_t{tensor}"
        if tensor is not None and tensor in sg.inputs:
            return sg.tensors[tensor]
        raise KeyError(f"no input named {key!r} (inputs: {', '.join(self.input_names())})")

    def input_details(self) -> list[dict[str, Any]]:
        """Name, tensor index, type, shape and shape_signature of each entry input."""
        out = []
        for name, i in zip(self.input_names(), self._entry_inputs()):
            t = self.entry.tensors[i]
            out.append({"name": name, "index": i, "dtype": t.dtype, "type": t.type_name,
                        "shape": t.shape, "shape_signature": t.shape_signature,
                        "quantization": t.quantization})
        return out

    def _entry_inputs(self) -> list[int]:
        sig = self._signature_def(self._signature)
        if sig is not None:
            return [m.tensor_index for m in sig.inputs]
        return list(self.entry.inputs)

    def _entry_outputs(self) -> list[int]:
        sig = self._signature_def(self._signature)
        if sig is not None:
            return [m.tensor_index for m in sig.outputs]
        return list(self.entry.outputs)

    def resize_input(self, key: int | str, shape: Sequence[int]) -> None:
        """Resize an input of the entry subgraph (dims that are -1 in its shape_signature may
        change) and prepare again."""
        t = self._input_tensor(key)
        shape = tuple(int(d) for d in shape)
        sig = t.shape_signature
        if sig is not None and (len(sig) != len(shape) or any(
                s != -1 and s != d for s, d in zip(sig, shape))):
            raise InputError(f"input {t.name!r} cannot take shape {list(shape)}: its shape "
                             f"signature is {list(sig)} (only -1 dimensions may change)")
        if any(d < 0 for d in shape):
            raise InputError(f"negative dimension in {list(shape)}")
        self._abort()
        self._check_allocation(self.entry, t, int(np.prod(shape, dtype=np.int64)) *
                               (t.dtype.itemsize if t.dtype else 1), shape)
        t.shape = shape
        t.data = None
        self.entry.prepare()
        self._check_total()

    def set_input(self, key: int | str, value: Any) -> None:
        """Set an input of the entry subgraph (by position, tensor name or signature name).
        A value of another shape resizes the input when its shape signature allows it."""
        t = self._input_tensor(key)
        arr = np.asarray(value)
        if t.dtype is not None and arr.dtype != t.dtype:
            if arr.dtype.kind in "fc" and t.dtype.kind in "biu":
                raise ValueError(f"input {t.name!r} is {t.type_name}; got {arr.dtype} values")
            check_bytes(arr.size * t.dtype.itemsize, self.max_allocation_bytes,
                        f"input {t.name!r} (tensor {t.index})")
            if arr.dtype.kind == "c" and t.dtype.kind != "c":
                arr = arr.real  # what astype keeps, without its ComplexWarning
            arr = arr.astype(t.dtype)
        if t.shape != arr.shape:
            if self._state == "paused":
                raise ValueError(f"input {t.name!r} has shape {list(t.shape or ())}; cannot "
                                 f"resize to {list(arr.shape)} in the middle of a run")
            self.resize_input(key, arr.shape)
        check_bytes(arr.nbytes, self.max_allocation_bytes, f"input {t.name!r} (tensor {t.index})")
        t.data = np.array(arr, copy=True)

    def set_inputs(self, inputs: Mapping[str, Any] | Sequence[Any]) -> None:
        if isinstance(inputs, Mapping):
            for k, v in inputs.items():
                self.set_input(k, v)
        else:
            for k, v in enumerate(inputs):
                self.set_input(k, v)

    def tensor(self, subgraph: int, index: int) -> np.ndarray | None:
        """A copy of a tensor's current value (None if not computed yet in this run)."""
        return self.subgraphs[subgraph].tensors[index].snapshot()

    def runtime_tensor(self, subgraph: int, index: int) -> Tensor:
        """The runtime Tensor itself (type, shape, allocation type); read, don't write."""
        return self.subgraphs[subgraph].tensors[index]

    def set_tensor(self, subgraph: int, index: int, value: Any) -> None:
        """Overwrite a tensor's value, e.g. mid-run: ops that run later see the change."""
        t = self.subgraphs[subgraph].tensors[index]
        if t.allocation_type is AllocationType.MMAP_RO:
            raise ValueError(f"tensor {index} ({t.name!r}) of subgraph {subgraph} is a "
                             "read-only constant of the model; edit the model to change it")
        arr = np.array(value, dtype=t.dtype, copy=True)
        if t.shape is not None and arr.shape != t.shape and not t.is_dynamic:
            raise ValueError(f"tensor {index} ({t.name!r}) has shape {list(t.shape)}, "
                             f"got {list(arr.shape)}")
        if t.is_dynamic:
            t.shape = arr.shape
        t.data = arr

    def _entry_io(self) -> tuple[tuple[Tensor, ...], tuple[tuple[str, Tensor], ...]]:
        """The entry's input tensors and its (output name, tensor) pairs, for the current
        signature or subgraph (computed once per pair: the model does not change)."""
        key = (self._signature, self._entry)
        io = self._io.get(key)
        if io is None:
            tensors = self.entry.tensors
            io = self._io[key] = (
                tuple(tensors[i] for i in self._entry_inputs()),
                tuple((name, tensors[i])
                      for name, i in zip(self.output_names(), self._entry_outputs())))
        return io

    def outputs(self) -> dict[str, np.ndarray | None]:
        """Copies of the entry subgraph's outputs, by signature output name or tensor name."""
        return {name: t.snapshot() for name, t in self._entry_io()[1]}

    def get_output(self, key: int | str = 0) -> np.ndarray | None:
        outs = self.outputs()
        if isinstance(key, (int, np.integer)):
            return list(outs.values())[int(key)]
        return outs[key]

    # ======================================================================================
    # variables
    # ======================================================================================
    def reset_variables(self) -> None:
        """Variable tensors back to their initial values; resource variables forgotten
        (so CALL_ONCE initializers run again)."""
        for sg in self.subgraphs:
            sg.reset_variables()
        self.resources.clear()
        self.called_once.clear()

    # ======================================================================================
    # hooks and breakpoints
    # ======================================================================================
    def add_hook(self, when: str, fn: Callable[["Interpreter", OpEvent], Any]) -> Callable:
        """Call ``fn(interpreter, event)`` before or after every op (``when`` = "before" |
        "after"); returns fn, for `remove_hook`."""
        {"before": self._before_hooks, "after": self._after_hooks}[when].append(fn)
        return fn

    def remove_hook(self, fn: Callable) -> None:
        for hooks in (self._before_hooks, self._after_hooks):
            if fn in hooks:
                hooks.remove(fn)

    def add_breakpoint(self, bp: Breakpoint | int | str) -> Breakpoint:
        """Add a breakpoint: a Breakpoint, an op index of subgraph 0, or an op type name."""
        if isinstance(bp, (int, np.integer)):
            bp = dbg.OpBreakpoint(int(bp))
        elif isinstance(bp, str):
            bp = dbg.OpTypeBreakpoint(bp)
        self.breakpoints.append(bp)
        return bp

    def remove_breakpoint(self, bp: Breakpoint) -> None:
        self.breakpoints.remove(bp)

    def clear_breakpoints(self) -> None:
        self.breakpoints.clear()

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
        self.op_times.clear()
        self.op_calls.clear()
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
        if not 0 <= index < len(self.subgraphs):
            raise ValueError(f"subgraph index {index} out of range (0..{len(self.subgraphs) - 1})")
        if index in self._active:
            raise ExecutionError(f"subgraph {index} calls itself recursively")
        sg = self.subgraphs[index]
        sg.set_inputs(inputs)
        if self._direct:
            self._execute(sg)
        else:
            yield from self._run_subgraph(sg)
        outs = []
        for o in sg.outputs:
            data = sg.tensors[o].data
            if data is None:
                raise ExecutionError(f"subgraph {index} output tensor {o} was never computed")
            outs.append(data)
        return outs

    def _run_subgraph(self, sg: Subgraph) -> Generator:
        frame = Frame(sg.index, 0)
        self._stack.append(frame)
        self._active.add(sg.index)
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
        self._stack.pop()
        if not self._stack:
            self._stack.append(frame)  # a finished run stays positioned at its end

    def _execute(self, sg: Subgraph) -> None:
        """`_run_subgraph` without pause points, for runs nothing can pause (`invoke`): the
        call stack, re-preparation, hooks and timing are the same."""
        frame = Frame(sg.index, 0)
        self._stack.append(frame)
        self._active.add(sg.index)
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
        self._stack.pop()
        if not self._stack:
            self._stack.append(frame)  # a finished run stays positioned at its end

    #: `_execute` for `invoke`: float kernels follow IEEE (inf, nan), silently.  The
    #: decorator form of np.errstate costs half of what a with-block does per run.
    _execute_ieee = np.errstate(all="ignore")(_execute)

    def _fail(self, sg: Subgraph, node: Node, exc: BaseException) -> ExecutionError:
        return ExecutionError(f"subgraph {sg.index} ({sg.name}), op {node.index} "
                              f"({node.name}): {type(exc).__name__}: {exc}")

    def _invoke(self, sg: Subgraph, node: Node) -> None:
        if self._before_hooks:
            ev = OpEvent(sg.index, node.index, node.name, node, len(self._stack))
            for h in self._before_hooks:
                h(self, ev)
        t0 = perf_counter()
        try:
            node.kernel.invoke(sg, node)
        except PASS_THROUGH:
            raise
        except Exception as exc:  # noqa: BLE001 - every kernel failure names its op
            raise self._fail(sg, node, exc) from exc
        seconds = perf_counter() - t0
        key = node.key
        self.op_times[key] += seconds
        self.op_calls[key] += 1
        if self._after_hooks or self._collect_after:
            self._after(sg, node, seconds, counted=True)

    def _invoke_calling(self, sg: Subgraph, node: Node) -> Generator:
        if self._before_hooks:
            ev = OpEvent(sg.index, node.index, node.name, node, len(self._stack))
            for h in self._before_hooks:
                h(self, ev)
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
            self.op_times[key] += seconds
            self.op_calls[key] += 1
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

    # ======================================================================================
    # signatures
    # ======================================================================================
    def signature_keys(self) -> list[str]:
        return [s.key for s in self.model.signature_defs]

    def signature_runner(self, key: str | None = None) -> "SignatureRunner":
        if key is None:
            keys = self.signature_keys()
            if len(keys) != 1:
                raise ValueError(f"the model has signatures {keys}; name one")
            key = keys[0]
        self.model.signature(key)  # KeyError naming the keys
        return SignatureRunner(self, key)

    def op_time_total(self) -> float:
        return float(sum(self.op_times.values()))


class SignatureRunner:
    """Runs one signature by its input and output names (as LiteRT's SignatureRunner)."""

    def __init__(self, interpreter: Interpreter, key: str) -> None:
        self.interpreter = interpreter
        self.key = key
        self.signature_def = interpreter.model.signature(key)

    @property
    def input_names(self) -> list[str]:
        return [m.name for m in self.signature_def.inputs]

    @property
    def output_names(self) -> list[str]:
        return [m.name for m in self.signature_def.outputs]

    def __call__(self, **inputs: Any) -> dict[str, np.ndarray | None]:
        missing = set(self.input_names) - set(inputs)
        extra = set(inputs) - set(self.input_names)
        if missing or extra:
            raise KeyError(f"signature {self.key!r} takes inputs {self.input_names}"
                           f"{'; missing ' + str(sorted(missing)) if missing else ''}"
                           f"{'; unknown ' + str(sorted(extra)) if extra else ''}")
        return self.interpreter.invoke(inputs, signature=self.key)


def _tensor_key(key: str, subgraph: int) -> int | None:
    """The tensor index of an ``s{subgraph}_t{tensor}`` key of ``subgraph``, else None."""
    if key.startswith(f"s{subgraph}_t") and key[len(f"s{subgraph}_t"):].isdigit():
        return int(key[len(f"s{subgraph}_t"):])
    return None
