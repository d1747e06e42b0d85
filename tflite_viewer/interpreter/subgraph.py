"""Runtime subgraphs: tensors, nodes, an execution plan, and the kernel context API.

A `Subgraph` is what kernels receive as ``ctx`` (TFLite's TfLiteContext): they read
tensors through it, declare output shapes in prepare (`resize`, `set_dynamic`) and hand
results over in invoke (`set_output`).  Control-flow kernels call other subgraphs through
it (`call_subgraph`, `run_subgraph`) and keep their state in the run state it holds
(``ctx.run``: `run_state.RunState`, e.g. the resource variables); long kernels let a stop
request and the progress in between their blocks (`checkpoint`).

Shapes are propagated by each kernel's prepare.  A node is prepared only once all its input
shapes are known; otherwise its outputs are dynamic.  Before a node runs, the executor
compares its input shapes with those its prepare saw and prepares it again when they differ
(a resized input, a dynamic producer), which is TFLite's "re-prepare after resize" rule
applied node by node.
"""
from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any, Generator, Sequence

import numpy as np

from . import validation
from .errors import call_kernel
from .node import Node
from .run_state import Frame
from .tensor import AllocationType, Tensor
from .weights import make_tensor

if TYPE_CHECKING:
    from ..model import Subgraph as ModelSubgraph
    from .interpreter import Interpreter
    from .run_state import RunState


def _nbytes(shape: Sequence[int], dtype: np.dtype | None) -> int:
    n = 1
    for d in shape:
        n *= max(int(d), 0)
    return n * (dtype.itemsize if dtype is not None else 1)


def _empty_value(t: Tensor) -> np.ndarray | None:
    """A zero-element tensor's value: the empty array (its buffer is rightly empty, as an
    INT32 shape [0] constant's is; LiteRT reads such a tensor without data), else None."""
    shape = t.shape
    if shape is None or t.dtype is None or 0 not in shape:
        return None
    return np.zeros(shape, t.dtype)


class Subgraph:
    """One subgraph of a running model (and the context its kernels see)."""

    def __init__(self, interpreter: "Interpreter", model_subgraph: "ModelSubgraph") -> None:
        self.interpreter = interpreter
        #: the state of the interpreter's runs, shared by its subgraphs (`RunState`)
        self.run: "RunState" = interpreter.run_state
        self._executor = interpreter.executor
        self.model_subgraph = model_subgraph
        self.index: int = model_subgraph.index
        self.name: str = model_subgraph.display_name
        cache = interpreter.weight_cache
        self.tensors: list[Tensor] = [make_tensor(i, t, cache)
                                      for i, t in enumerate(model_subgraph.tensors)]
        self.inputs: tuple[int, ...] = model_subgraph.inputs
        self.outputs: tuple[int, ...] = model_subgraph.outputs
        self.nodes: list[Node] = []
        self.execution_plan: list[int] = []
        self.plan_nodes: list[Node] = []  # the nodes of execution_plan, in its order
        #: (node, bound kernel invoke or None for a control-flow node, node index) per
        #: node of the plan (`builder.bind_plan`): what the executor's loop calls
        self.plan_steps: list[tuple[Node, Any, int]] = []
        #: seconds and calls per node index in the current run (Interpreter.op_times)
        self.op_seconds: list[float] = []
        self.op_counts: list[int] = []
        #: the call-stack frame of this subgraph in runs nothing pauses (`Executor.execute`)
        self.direct_frame = Frame(self.index, 0)
        #: bumped by every (re)preparation of a node: folded replays recorded under
        #: another epoch are stale (`folding`)
        self.fold_epoch = 0
        #: (epoch, bind kernels, fold) the plan was specialised for (None: the plain plan),
        #: and the last one tried (`builder.specialize_plan`)
        self.plan_key: tuple[int, bool, bool] | None = None
        self.tried_key: tuple[int, bool, bool] | None = None
        self.folded = False  # plan_steps hold replays (`folding.fold`)
        # what clear_activations forgets: the computed tensors (allocation types only move
        # between ARENA_RW and DYNAMIC once constants and variables are set apart)
        computed = (AllocationType.ARENA_RW, AllocationType.DYNAMIC)
        self._activations = [t for t in self.tensors if t.allocation_type in computed]
        inputs = set(self.inputs)
        self._activations_not_inputs = [t for t in self._activations if t.index not in inputs]

    def __repr__(self) -> str:
        return f"<runtime Subgraph {self.index} {self.name!r}: {len(self.nodes)} nodes>"

    # -- kernel context: reading ---------------------------------------------------------
    def input(self, node: Node, k: int) -> Tensor | None:
        """The k-th input tensor of a node (None when omitted: index -1 or past the end)."""
        inputs = node.inputs
        if k >= len(inputs) or inputs[k] < 0:
            return None
        return self.tensors[inputs[k]]

    def output(self, node: Node, k: int) -> Tensor:
        return self.tensors[node.outputs[k]]

    def value(self, node: Node, k: int) -> np.ndarray:
        """The data of input k; an error if it has none (not computed, not constant)."""
        inputs = node.inputs
        if k >= len(inputs) or inputs[k] < 0:
            raise ValueError(f"input {k} is missing")
        t = self.tensors[inputs[k]]
        data = t.data
        if data is None:
            data = _empty_value(t)
            if data is None:
                raise ValueError(f"input {k} (tensor {t.index} {t.name!r}) has no value")
        return data

    def known_value(self, node: Node, k: int) -> np.ndarray | None:
        """Input k's values if they are fixed at prepare time (a constant), else None."""
        t = self.input(node, k)
        if t is None or t.allocation_type is not AllocationType.MMAP_RO:
            return None
        return t.data

    # -- kernel context: calling subgraphs, stop requests, progress ----------------------
    def call_subgraph(self, index: int, inputs: Sequence[np.ndarray]) -> Generator:
        """Run subgraph ``index`` on ``inputs``: a generator control-flow kernels ``yield
        from`` (so the debugger can pause inside it), whose value is the list of the
        subgraph's output arrays (`Executor.call_subgraph`)."""
        return self._executor.call_subgraph(index, inputs)

    def run_subgraph(self, index: int, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """`call_subgraph` as a plain call, for the ``invoke_direct`` of control-flow
        kernels in runs nothing pauses."""
        return self._executor.run_subgraph(index, inputs)

    def checkpoint(self, fraction: float | None = None) -> None:
        """Called by a long kernel between its blocks: a stop request ends the op here
        (`RunCancelled`; a stepped run pauses before the op and runs it anew on resume),
        so does a run past its time budget (`TimeBudgetError`), and the progress is
        reported when due, with ``fraction`` (0..1) of the op done.  A clock read while
        nothing is due; outside a run it only sees a stop request."""
        run = self.run
        if fraction is not None and run.progress.callback is not None:
            run.progress.report_within(fraction)
        now = perf_counter()
        if now > run.due or run.budget.stop_requested:
            run.boundary(now, stop=True)

    def check_allocation(self, tensor: Tensor, nbytes: int, shape: Sequence[int]) -> None:
        """Refuse a tensor of ``nbytes`` over the allocation limit (`AllocationError`),
        before allocating it."""
        self.run.check_allocation(self, tensor, nbytes, shape)

    # -- kernel context: shapes and outputs ----------------------------------------------
    def resize(self, tensor: Tensor, shape: Sequence[int]) -> None:
        """Give a tensor its prepared (static) shape, refusing sizes beyond the limit."""
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"tensor {tensor.index} ({tensor.name!r}): negative dimension "
                             f"in shape {list(shape)}")
        self.run.check_allocation(self, tensor, _nbytes(shape, tensor.dtype), shape)
        tensor.shape = shape
        if tensor.allocation_type is AllocationType.DYNAMIC:
            tensor.allocation_type = AllocationType.ARENA_RW

    def set_dynamic(self, tensor: Tensor) -> None:
        """Mark a tensor's shape as known only when its producer runs."""
        if tensor.allocation_type in (AllocationType.ARENA_RW, AllocationType.DYNAMIC):
            tensor.allocation_type = AllocationType.DYNAMIC
            tensor.shape = None

    def set_output(self, tensor: Tensor, array: Any) -> None:
        """Store a kernel's result: cast to the tensor's type, check its shape."""
        arr = array if type(array) is np.ndarray else np.asarray(array)
        dtype = tensor.dtype
        if dtype is not None and arr.dtype != dtype:
            if arr.dtype.kind == "c" and dtype.kind != "c":
                arr = arr.real  # what astype keeps, without its ComplexWarning on stderr
            arr = arr.astype(dtype)
        shape = tensor._shape
        if arr.shape == shape and tensor.allocation_type is not AllocationType.DYNAMIC:
            tensor.data = arr  # the common case: a static tensor of the prepared shape
            return
        if tensor.allocation_type is AllocationType.DYNAMIC or shape is None:
            self.run.check_allocation(self, tensor, arr.nbytes, arr.shape)
            tensor.shape = tuple(arr.shape)
        elif arr.shape != tensor.shape:
            if arr.size == int(np.prod(tensor.shape, dtype=np.int64)) and tensor.is_variable:
                arr = arr.reshape(tensor.shape)
            else:
                raise ValueError(f"kernel produced shape {list(arr.shape)} for tensor "
                                 f"{tensor.index} ({tensor.name!r}) prepared as "
                                 f"{list(tensor.shape)}")
        tensor.data = arr

    def set_inputs(self, arrays: Sequence[np.ndarray]) -> None:
        """Give the subgraph's inputs these values (resizing them when shapes differ)."""
        if len(arrays) != len(self.inputs):
            raise ValueError(f"subgraph {self.index} takes {len(self.inputs)} inputs, "
                             f"got {len(arrays)}")
        tensors = self.tensors
        for i, arr in zip(self.inputs, arrays):  # (a WHILE calls this twice per iteration)
            t = tensors[i]
            if type(arr) is not np.ndarray:
                arr = np.asarray(arr)
            dtype = t.dtype
            if dtype is not None and arr.dtype != dtype:
                if arr.dtype.kind == "c" and dtype.kind != "c":
                    arr = arr.real
                arr = arr.astype(dtype)
            if t._shape != arr.shape:
                self.run.check_allocation(self, t, arr.nbytes, arr.shape)
                t.shape = tuple(arr.shape)
            t.data = arr

    # -- preparing -----------------------------------------------------------------------
    def input_shapes(self, node: Node) -> tuple:
        tensors = self.tensors
        return tuple([None if i < 0 else tensors[i].shape for i in node.inputs])

    def check_prepared(self, node: Node) -> None:
        """Prepare the node again if its input shapes changed since its last prepare
        (TFLite's re-prepare after a resize); a flag test while none of them changed."""
        if node.shapes_dirty:
            node.shapes_dirty = False
            if node.prepared_shapes != self.input_shapes(node):
                self.prepare_node(node)

    def prepare_node(self, node: Node) -> None:
        self.fold_epoch += 1
        shapes = self.input_shapes(node)
        if any(s is None for i, s in zip(node.inputs, shapes) if i >= 0):
            for o in node.outputs:
                if o >= 0:
                    self.set_dynamic(self.tensors[o])
        else:
            validation.check_window(self, node)  # before the kernel pads its input
            call_kernel(node.registration.kernel.prepare, self, node, "prepare")
        node.prepared_shapes = shapes

    def prepare(self) -> None:
        """Prepare every node in execution order (TFLite's AllocateTensors)."""
        for ni in self.execution_plan:
            self.prepare_node(self.nodes[ni])

    # -- state ---------------------------------------------------------------------------
    def clear_op_stats(self) -> None:
        """Forget the op times and calls of the last run."""
        n = len(self.nodes)
        self.op_seconds = [0.0] * n
        self.op_counts = [0] * n

    def reset_variables(self) -> None:
        """Variables to their initial values and kernels' own state forgotten (TFLite's
        ResetVariableTensors plus TFLM's per-kernel reset)."""
        for t in self.tensors:
            if t.is_variable:
                if t.shape is not None:  # checked before allocating: the shape is untrusted
                    self.run.check_allocation(self, t, t.nbytes, t.shape)
                t.reset_variable()
        for node in self.nodes:
            reset = getattr(node.kernel, "reset", None)  # a user's kernel may lack it
            if reset is not None:
                reset(self, node)

    def clear_activations(self, keep_inputs: bool = True) -> None:
        """Forget computed values (not constants, variables or, optionally, inputs)."""
        for t in self._activations_not_inputs if keep_inputs else self._activations:
            t.data = None

    @property
    def arena_bytes(self) -> int:
        return sum(t.nbytes for t in self.tensors
                   if t.allocation_type in (AllocationType.ARENA_RW, AllocationType.PERSISTENT))
