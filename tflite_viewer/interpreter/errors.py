"""Errors the interpreter raises.

`UnsupportedOpError`, `ExecutionError` and `ModelFormatError` are the project-wide classes
from `tflite_viewer.model.errors` (re-exported here).  The interpreter's own are the
*budget* errors, which say that a run would need more than it is allowed:

* `AllocationError`: a tensor, an input or the arena would need more bytes than
  ``Interpreter(max_allocation_bytes=...)`` allows (checked before allocating);
* `IterationBudgetError`: a WHILE still looping after ``max_iterations`` iterations;
* `TimeBudgetError`: a run still going after ``timeout`` seconds;
* `RunCancelled`: `Interpreter.request_stop()` was called during `invoke()`.

Each names the op (subgraph, index, type) and the figure, and how to raise the limit.
"""
from __future__ import annotations

from ..model.errors import (ExecutionError, ModelFormatError, TFLiteViewerError,
                            UnsupportedOpError)

__all__ = ["AllocationError", "BudgetError", "ExecutionError", "IterationBudgetError",
           "KernelError", "ModelFormatError", "PASS_THROUGH", "RunCancelled",
           "TimeBudgetError", "UnsupportedOpError", "call_kernel", "op_failure"]


class BudgetError(TFLiteViewerError):
    """A run would exceed one of the interpreter's budgets (memory, iterations, time)."""


class AllocationError(BudgetError, MemoryError):
    """Tensors would need more bytes than `Interpreter(max_allocation_bytes=...)` allows."""


class IterationBudgetError(BudgetError):
    """A WHILE op ran more iterations than `Interpreter(max_iterations=...)` allows."""


class TimeBudgetError(BudgetError, TimeoutError):
    """A run took longer than `Interpreter(timeout=...)` seconds."""


class RunCancelled(BudgetError):
    """`Interpreter.request_stop()` interrupted an `invoke()` (stepped runs pause instead)."""


class KernelError(ValueError):
    """A kernel's refusal of what it was given (a shape its Prepare rejects, an index
    outside a table), its message written for the person running the model: the
    ExecutionError that reports it shows the message alone, where an unexpected failure
    shows its exception type too."""


#: what the executor lets through unchanged when a kernel raises; any other exception is
#: wrapped in an ExecutionError naming the op
PASS_THROUGH = (ExecutionError, BudgetError, ModelFormatError, UnsupportedOpError)


def op_failure(sg, node, exc: BaseException, stage: str = "") -> ExecutionError | AllocationError:
    """The ExecutionError for a kernel's unexpected failure (an `AllocationError` when the
    system refused it memory): every message names the subgraph and the op (index and
    name), and the stage (prepare, init, ...) when it was not the invoke itself."""
    what = f"{stage} failed: " if stage else ""
    if isinstance(exc, MemoryError):  # the system refused memory the budget allowed
        return AllocationError(f"subgraph {sg.index} ({sg.name}), op {node.index} "
                               f"({node.name}): {what}out of memory ({exc}); lower the "
                               "memory budget (run --max-memory) to be told before the run")
    kind = "" if isinstance(exc, KernelError) else f"{type(exc).__name__}: "
    return ExecutionError(f"subgraph {sg.index} ({sg.name}), op {node.index} ({node.name}): "
                          f"{what}{kind}{exc}")


def call_kernel(fn, sg, node, stage: str = ""):
    """``fn(sg, node)``, a kernel entry point outside the executor's hot loops: the
    documented errors pass through, any other exception becomes `op_failure`."""
    try:
        return fn(sg, node)
    except PASS_THROUGH:
        raise
    except Exception as exc:  # noqa: BLE001 - any kernel failure names its op
        raise op_failure(sg, node, exc, stage) from exc
