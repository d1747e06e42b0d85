"""The Interpreter: the model's runtime and its public API.

Shaped like LiteRT's: `builder` turns operators into nodes bound to kernel registrations
(interpreter_builder), each runtime `Subgraph` prepares and allocates its tensors, and the
`executor` runs the execution plans (Subgraph::Invoke), op by op and pausable by the
`debugger`.  The interpreter owns one `RunState` (run_state.py), the state all of them
work on, and gives it to the executor and the debugger (composition: each is an object of
its own).  This module holds what ties them together: allocation and the memory limit,
inputs and outputs, variables, hooks and breakpoints, signatures, and the stepping API.
"""
from __future__ import annotations

import os
from operator import attrgetter
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..model import Model, load_model
from . import debugger as dbg
from . import float_sums as float_sums_mode
from . import kernel_sets
from .builder import build_nodes
from .debugger import Breakpoint, Debugger, OpEvent, Position, Stop
from .executor import Executor
from .inputs import InputError
from .budget import (DEFAULT_MAX_ALLOCATION_BYTES, DEFAULT_MAX_ITERATIONS, DEFAULT_TIMEOUT,
                     Budget, check_bytes)
from .node import Node
from .op_resolver import BuiltinOpResolver, OpResolver
from .progress import DEFAULT_INTERVAL, RunProgress
from .quant_math import check_rounding
from .run_state import RunState
from .signature_runner import SignatureRunner
from .subgraph import Subgraph
from .tensor import AllocationType, Tensor
from .weights import DEFAULT_WEIGHT_CACHE_BYTES, WeightCache


def _in_run_state(name: str) -> property:
    """An interpreter attribute kept in its `RunState`, under the name it always had (read
    through a C getter: kernels read some of them at every call)."""
    def set_value(self: "Interpreter", value: Any) -> None:
        setattr(self.run_state, name, value)
    return property(attrgetter(f"run_state.{name}"), set_value)


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
    on single-op models (tests/interpreter/integer/test_rounding.py: acc=16474,
    multiplier=1309785559, shift=-7 gives 79 in LiteRT, 79 double, 78 single) and on every
    intermediate tensor of the quantized corpus models
    (tests/interpreter/test_quantized_models.py).  ``"single"``
    reproduces LiteRT builds compiled with TFLITE_SINGLE_ROUNDING; the two differ on exact
    ties.  Any other value is a ValueError.

    Signatures take their inputs by name, as LiteRT's SignatureRunner does::

        interp.invoke({"tokens": t, "input_pos": p, ...}, signature="decode")
        interp.signature_runner("decode")(tokens=t, input_pos=p, ...)

    A signature lists its inputs in its own order, which need not be its subgraph's
    (litert-torch's prefill and decode signatures are alphabetical): a list, or an input
    position, for a signature is an `InputError`.  Without a signature a list follows the
    subgraph's ``inputs`` order.

    Budgets (see `tflite_viewer.interpreter.budget`): ``max_allocation_bytes`` bounds every
    tensor, input and the prepared arena (checked before allocating); ``max_iterations``
    bounds each WHILE execution; ``timeout`` (seconds) bounds each `invoke()` and each
    `run()`/`step()` call.  Exceeding one raises `AllocationError`, `IterationBudgetError`
    or `TimeBudgetError` naming the op and the figure.  `request_stop()` interrupts a run
    from another thread.  Before any kernel sees the model, every node's arity and tensor
    references are checked against what its kernel declares (`validation`):
    `ModelFormatError` naming where.

    Weights stay in the mapped file; what kernels derive from them (unpacked sub-byte
    values, converted copies) is kept between invokes within ``weight_cache_bytes``
    (`weights`; 64 MiB by default), else derived again a block of rows at a time.

    ``float_sums`` (``auto``, ``reference`` or ``blas``; `float_sums`) says how float32
    CONV_2D and FULLY_CONNECTED add their products: in LiteRT's reference order, to the
    bit, or by BLAS; ``auto`` takes BLAS, and the reference order in a cross-check
    against LiteRT's reference kernels.

    ``kernels`` (``auto``, ``reference``, ``builtin`` or ``xnnpack``; `kernel_sets`) says
    which of LiteRT's kernel sets the float ops whose sets differ (LOGISTIC, TANH, SOFTMAX,
    MEAN, SUM, FULLY_CONNECTED) compute as; ``xnnpack`` computes the operators LiteRT's
    default XNNPACK delegate takes as XNNPACK does; ``auto`` takes the builtin set for an
    LLM export or a model with blockwise weights, the reference set otherwise (and, within
    the builtin set, the reference kernel for a FULLY_CONNECTED whose INT4 weights hold -8,
    which LiteRT's builtin 4-bit path computes without meaning).
    """

    def __init__(self, model: Model | str | os.PathLike | bytes, *, rounding: str = "double",
                 max_allocation_bytes: int = DEFAULT_MAX_ALLOCATION_BYTES,
                 max_iterations: int | None = DEFAULT_MAX_ITERATIONS,
                 timeout: float | None = DEFAULT_TIMEOUT,
                 op_resolver: OpResolver | None = None, allocate: bool = True,
                 weight_cache_bytes: int = DEFAULT_WEIGHT_CACHE_BYTES,
                 float_sums: str = float_sums_mode.AUTO,
                 kernels: str = kernel_sets.AUTO) -> None:
        rounding = check_rounding(rounding)
        if not isinstance(model, Model):
            model = load_model(model)
        self.model = model
        #: what kernels derive from weights (unpacked, converted) and keep between
        #: invokes, within ``weight_cache_bytes`` (`weights`)
        self.weight_cache = WeightCache(weight_cache_bytes)
        self.rounding = rounding
        #: everything the runs read and change (`run_state`): the executor and the
        #: debugger work on it; the attributes below that name it are kept there
        self.run_state = RunState(
            Budget(max_iterations, timeout), max_allocation_bytes,
            float_sums_mode.resolve(float_sums) == float_sums_mode.REFERENCE)
        self.executor = Executor(self.run_state, self)
        self.debugger = Debugger(self.run_state, self.executor, self.outputs)
        #: the ``float_sums`` asked for (``auto``, ``reference`` or ``blas``)
        self.float_sums_asked = float_sums
        #: ``reference`` or ``builtin``: the LiteRT kernel set the float kernels follow
        #: where the two differ (`kernel_sets`)
        self.kernels = kernel_sets.resolve(kernels, model)
        #: under the ``xnnpack`` set, the operators its partitions take (`kernel_sets`);
        #: their loops then run op by op (a fused loop computes as the builtin kernels)
        self.xnnpack = kernel_sets.delegated(self.kernels, model)
        self.fuse_loops = self.xnnpack is None
        #: the ``kernels`` asked for: under ``auto`` a node the builtin set computes without
        #: meaning takes the reference kernel (`blockwise.builtin_dense4bit`)
        self.kernels_asked = kernels
        self.op_resolver = op_resolver if op_resolver is not None else BuiltinOpResolver()
        model.prime_views()  # what building reads of every tensor and op, read at once
        self.run_state.subgraphs = [Subgraph(self, sg) for sg in model.subgraphs]
        #: (signature, entry subgraph) -> (input tensors, (output name, tensor) pairs): what
        #: every run checks and returns, looked up once (`_entry_io`)
        self._io: dict[tuple[str | None, int], tuple[tuple[Tensor, ...],
                                                     tuple[tuple[str, Tensor], ...]]] = {}
        self._allocated = False
        self._nodes_built = False
        if allocate:
            self.allocate_tensors()

    # kept in the run state (`RunState` says what each is), under the names they always had
    subgraphs = _in_run_state("subgraphs")  # the runtime subgraphs: tensors, nodes, execution plans
    budget = _in_run_state("budget")  # iterations, time and the stop request (`request_stop`)
    max_allocation_bytes = _in_run_state("max_allocation_bytes")
    loop_iterations = _in_run_state("loop_iterations")
    resources = _in_run_state("resources")
    resource_ids = _in_run_state("resource_ids")
    called_once = _in_run_state("called_once")
    fuse_loops = _in_run_state("fuse_loops")
    fold_shape_ops = _in_run_state("fold_shape_ops")
    bind_kernels = _in_run_state("bind_kernels")
    reference_float_sums = _in_run_state("reference_float_sums")

    def __repr__(self) -> str:
        return f"<Interpreter {self.model!r} {self.state}>"

    @property
    def float_sums(self) -> str:
        """``reference`` or ``blas``: how float32 CONV_2D and FULLY_CONNECTED add their
        products now (`reference_float_sums`)."""
        return float_sums_mode.REFERENCE if self.reference_float_sums else float_sums_mode.BLAS

    # ======================================================================================
    # loading and allocation
    # ======================================================================================
    def _build_nodes(self) -> None:
        """Resolve every operator of every subgraph (see `builder.build_nodes`)."""
        build_nodes(self)
        self._nodes_built = True

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
        self.run_state.check_total()
        self._allocated = True
        self.debugger.abort()

    @property
    def arena_bytes(self) -> int:
        """Bytes of read-write tensors with a known shape, over all subgraphs."""
        return sum(sg.arena_bytes for sg in self.subgraphs)

    # ======================================================================================
    # running (the executor) and stepping (the debugger)
    # ======================================================================================
    @property
    def state(self) -> str:
        """"ready" (nothing run yet), "paused" (mid-run) or "finished"."""
        return self.run_state.status

    @property
    def position(self) -> Position:
        """The call stack, outermost first: ((subgraph, op about to run), ...)."""
        return self.run_state.position

    @property
    def current_op(self) -> tuple[int, int] | None:
        """(subgraph, op) about to run, or None when no op is next."""
        return self.run_state.current_op

    def current_node(self) -> Node | None:
        cur = self.current_op
        return None if cur is None else self.subgraphs[cur[0]].nodes[cur[1]]

    def call_path(self) -> str:
        """Where the run is, outermost first, with the iteration of each enclosing WHILE:
        ``subgraph 0 op 0 (WHILE, iteration 1,204) > subgraph 4 op 2 (ADD)``."""
        return self.run_state.call_path()

    def invoke(self, inputs: Mapping[str, Any] | Sequence[Any] | None = None, *,
               signature: str | None = None) -> dict[str, np.ndarray | None]:
        """Run the whole entry subgraph from the start, ignoring breakpoints; returns the
        named outputs (TFLite's Invoke).  Nothing can pause such a run: it takes the
        executor's direct loop (`Executor.invoke`)."""
        self.executor.invoke(self._begin(inputs, signature))
        return self.outputs()

    def start(self, inputs: Mapping[str, Any] | Sequence[Any] | None = None, *,
              signature: str | None = None, subgraph: int | None = None) -> Stop:
        """Begin a new run (paused before its first op), optionally of a signature or
        subgraph and with inputs."""
        return self.debugger.start(self._begin(inputs, signature, subgraph))

    def run(self, inputs: Mapping[str, Any] | Sequence[Any] | None = None, *,
            signature: str | None = None) -> Stop:
        """Run (or continue) until a breakpoint or the end; a finished run starts anew."""
        return self._ensure_running(inputs, signature) or self.debugger.resume("continue")

    def step(self) -> Stop:
        """Run one op of the current subgraph (a WHILE/IF/CALL_ONCE runs whole)."""
        return self._ensure_running() or self.debugger.resume("step")

    def step_into(self) -> Stop:
        """Like step, but enter the subgraph a control-flow op calls."""
        return self._ensure_running() or self.debugger.resume("step_into")

    def step_out(self) -> Stop:
        """Run until the current subgraph has returned and its calling op has finished."""
        return self._ensure_running() or self.debugger.resume("step_out")

    def run_to(self, op: int | str | tuple[int, int], subgraph: int | None = None) -> Stop:
        """Run until just before an op: an index (of `subgraph`, default the entry), a
        (subgraph, op) pair, or an op type name; stops earlier at breakpoints."""
        if isinstance(op, tuple):
            subgraph, op = op
        target = (self.run_state.entry if subgraph is None else subgraph, op)
        return self._ensure_running() or self.debugger.resume("run_to", target)

    def reset(self) -> None:
        """Abandon the current run: back to the start, computed values forgotten (inputs,
        constants and variables are kept)."""
        self.debugger.abort()
        entry = self.run_state.entry
        for sg in self.subgraphs:
            sg.clear_activations(keep_inputs=sg.index == entry)

    def request_stop(self) -> None:
        """Interrupt the current run from any thread (a window's Stop button).

        Seen at the next op boundary or WHILE iteration, or inside a long kernel at its
        next checkpoint (`Subgraph.checkpoint`: float CONV_2D, DEPTHWISE_CONV_2D and
        TRANSPOSE_CONV between their blocks).  `invoke()` raises `RunCancelled` there; a
        stepped run (`run`, `step`, `run_to` ...) pauses instead, returning a Stop with
        reason ``"interrupted"`` from which it can be resumed (before the op it was
        inside, which then runs anew).  A request made while nothing runs is forgotten
        when the next run starts."""
        self.budget.request_stop()

    def set_progress(self, callback: Callable[[RunProgress], Any] | None,
                     interval: float = DEFAULT_INTERVAL) -> None:
        """Report the progress of every run to ``callback`` (None: no more), at most every
        ``interval`` seconds and once at the end, from the thread that runs it
        (`progress.RunProgress`: ops done out of the entry's plan, the op running now,
        the time left)."""
        self.run_state.progress.watch(callback, interval)

    def progress(self) -> RunProgress:
        """The progress of the current or last run now; callable from any thread."""
        return self.run_state.progress.snapshot()

    def _begin(self, inputs, signature: str | None, subgraph: int | None = None) -> Subgraph:
        """What every run starts with: a clean state, the entry subgraph, its inputs."""
        if not self._allocated:
            self.allocate_tensors()
        self.debugger.abort()
        state = self.run_state
        state.budget.stop_requested = False  # a request made while nothing ran
        if signature is not None:
            sig = self.model.signature(signature)
            state.signature, state.entry = sig.key, sig.subgraph_index
        elif subgraph is not None:
            state.signature, state.entry = None, int(subgraph)
        if inputs is not None:
            self.set_inputs(inputs)
        entry = self.entry
        for t in self._entry_io()[0]:
            if t.data is None:
                raise ValueError(f"input {t.name!r} (tensor {t.index}) has no value: "
                                 "set_input() it")
        entry.clear_activations(keep_inputs=True)
        state.clear_op_stats()
        state.paused_total = 0.0
        return entry

    def _ensure_running(self, inputs=None, signature=None) -> Stop | None:
        """Start a run if none is in progress (or new inputs/signature were given)."""
        sig_changed = signature is not None and signature != self.run_state.signature
        if self.state != "paused" or inputs is not None or sig_changed:
            stop = self.start(inputs, signature=signature)
            if stop.finished:
                return stop
        return None

    # ======================================================================================
    # inputs, outputs, tensors
    # ======================================================================================
    @property
    def entry(self) -> Subgraph:
        """The subgraph a run starts in (subgraph 0, or the selected signature's)."""
        state = self.run_state
        return state.subgraphs[state.entry]

    @property
    def signature(self) -> str | None:
        return self.run_state.signature

    def _signature_def(self, key: str | None):
        return self.model.signature(key) if key is not None else None

    def input_names(self) -> list[str]:
        sig = self._signature_def(self.run_state.signature)
        if sig is not None:
            return [m.name for m in sig.inputs]
        return [self.entry.tensors[i].name for i in self.entry.inputs]

    def output_names(self) -> list[str]:
        sig = self._signature_def(self.run_state.signature)
        if sig is not None:
            return [m.name for m in sig.outputs]
        return [self.entry.tensors[i].name for i in self.entry.outputs]

    def _refuse_positions(self, what: str) -> None:
        """Inputs by position are refused while a signature is the entry: a signature lists
        its inputs in its own order, which need not be its subgraph's (litert-torch's
        prefill and decode signatures do not keep it), and a mix-up between inputs of one
        type computes wrong numbers without any error.  Signatures take inputs by name,
        as LiteRT's SignatureRunner does."""
        signature = self.run_state.signature
        if signature is not None:
            raise InputError(
                f"signature {signature!r} takes its inputs by name, not {what}: pass "
                f"a dict keyed by {', '.join(repr(n) for n in self.input_names())}")

    def _input_tensor(self, key: int | str) -> Tensor:
        sg = self.entry
        if isinstance(key, (int, np.integer)):
            self._refuse_positions(f"by position ({key})")
            if not 0 <= int(key) < len(sg.inputs):
                raise IndexError(f"input {key} out of range: the subgraph has "
                                 f"{len(sg.inputs)} inputs")
            return sg.tensors[sg.inputs[int(key)]]
        sig = self._signature_def(self.run_state.signature)
        if sig is not None:
            for m in sig.inputs:
                if m.name == key:
                    return sg.tensors[m.tensor_index]
        for i in sg.inputs:
            if sg.tensors[i].name == key:
                return sg.tensors[i]
        for other in self.model.signature_defs:  # a signature name of the entry subgraph
            if other.subgraph_index == self.run_state.entry:
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
        sig = self._signature_def(self.run_state.signature)
        if sig is not None:
            return [m.tensor_index for m in sig.inputs]
        return list(self.entry.inputs)

    def _entry_outputs(self) -> list[int]:
        sig = self._signature_def(self.run_state.signature)
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
        self.debugger.abort()
        self.run_state.check_allocation(self.entry, t, int(np.prod(shape, dtype=np.int64)) *
                               (t.dtype.itemsize if t.dtype else 1), shape)
        t.shape = shape
        t.data = None
        self.entry.prepare()
        self.run_state.check_total()

    def set_input(self, key: int | str, value: Any) -> None:
        """Set an input of the entry subgraph: by signature input name, tensor name or
        ``s{subgraph}_t{tensor}`` key; without a signature also by position in the
        subgraph's ``inputs``.  With a signature a position is an `InputError` (see
        `_refuse_positions`).  A value of another shape resizes the input when its shape
        signature allows it."""
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
            if self.state == "paused":
                raise ValueError(f"input {t.name!r} has shape {list(t.shape or ())}; cannot "
                                 f"resize to {list(arr.shape)} in the middle of a run")
            self.resize_input(key, arr.shape)
        check_bytes(arr.nbytes, self.max_allocation_bytes, f"input {t.name!r} (tensor {t.index})")
        t.data = np.array(arr, copy=True)

    def set_inputs(self, inputs: Mapping[str, Any] | Sequence[Any]) -> None:
        """Set several inputs: a mapping by name (any name `set_input` takes), or, for
        subgraph 0 or another subgraph run without a signature, a sequence in the order
        of the subgraph's ``inputs``.  A sequence for a signature is an `InputError`: its
        order would be ambiguous (the signature's or the subgraph's)."""
        if isinstance(inputs, Mapping):
            for k, v in inputs.items():
                self.set_input(k, v)
        else:
            self._refuse_positions("as a list")
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
        key = (self.run_state.signature, self.run_state.entry)
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
        self.run_state.reset_resources()

    # ======================================================================================
    # hooks and breakpoints
    # ======================================================================================
    def add_hook(self, when: str, fn: Callable[["Interpreter", OpEvent], Any]) -> Callable:
        """Call ``fn(interpreter, event)`` before or after every op (``when`` = "before" |
        "after"); returns fn, for `remove_hook`."""
        state = self.run_state
        {"before": state.before_hooks, "after": state.after_hooks}[when].append(fn)
        return fn

    def remove_hook(self, fn: Callable) -> None:
        for hooks in (self.run_state.before_hooks, self.run_state.after_hooks):
            if fn in hooks:
                hooks.remove(fn)

    @property
    def breakpoints(self) -> list[Breakpoint]:
        """The breakpoints, in the order they are checked (the debugger's list)."""
        return self.debugger.breakpoints

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
    # signatures
    # ======================================================================================
    def signature_keys(self) -> list[str]:
        return [s.key for s in self.model.signature_defs]

    def signature_runner(self, key: str | None = None) -> SignatureRunner:
        if key is None:
            keys = self.signature_keys()
            if len(keys) != 1:
                raise ValueError(f"the model has signatures {keys}; name one")
            key = keys[0]
        self.model.signature(key)  # KeyError naming the keys
        return SignatureRunner(self, key)

    @property
    def op_times(self) -> dict[tuple[int, int], float]:
        """Seconds spent in each (subgraph, op) during the current or last run (an op that
        calls subgraphs includes them), for the ops that ran."""
        return self.run_state.op_times()

    @property
    def op_calls(self) -> dict[tuple[int, int], int]:
        """How many times each (subgraph, op) ran during the current or last run."""
        return self.run_state.op_calls()


def _tensor_key(key: str, subgraph: int) -> int | None:
    """The tensor index of an ``s{subgraph}_t{tensor}`` key of ``subgraph``, else None."""
    if key.startswith(f"s{subgraph}_t") and key[len(f"s{subgraph}_t"):].isdigit():
        return int(key[len(f"s{subgraph}_t"):])
    return None
