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
           "ModelFormatError", "PASS_THROUGH", "RunCancelled", "TimeBudgetError",
           "UnsupportedOpError"]


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


#: what the executor lets through unchanged when a kernel raises; any other exception is
#: wrapped in an ExecutionError naming the op
PASS_THROUGH = (ExecutionError, BudgetError, ModelFormatError, UnsupportedOpError)
