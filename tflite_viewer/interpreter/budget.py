"""What a run may spend: memory, WHILE iterations, wall-clock time, and a stop request.

A model is untrusted input.  A WHILE whose condition is always true, a loop bound taken
from an input, or a 1 KB file declaring a multi-gigabyte tensor must end in a documented
error, not a hang or an exhausted machine.  LiteRT has no such limits; this interpreter
has, with defaults generous enough for every real model:

* memory: ``max_allocation_bytes`` (default `DEFAULT_MAX_ALLOCATION_BYTES`: a quarter of
  physical memory, at most 4 GiB), checked *before* allocating, for what the run holds in
  the process together, not for each tensor alone: the interpreter's tensors (its copies
  of the inputs included), the input arrays made or loaded beside them (`inputs`'s
  ``reserved``), and `SCRATCH_BYTES` for the kernels' temporaries, which element-wise
  kernels keep bounded by working a piece at a time (`kernels/chunks.py`); a run that
  fits peaks at about three times its largest tensors above the process's start.  An
  allocation the system refuses all the same (a smaller ``ulimit -v``) is an
  `AllocationError` naming the op too (`AllocationError`);
* iterations: ``max_iterations`` (default `DEFAULT_MAX_ITERATIONS`) per execution of one
  WHILE op (`IterationBudgetError`);
* time: ``timeout`` seconds (default `DEFAULT_TIMEOUT`) per `invoke()`, and per
  `run()`/`step()` call of a stepped run (time spent paused does not count)
  (`TimeBudgetError`);
* stop: `Budget.request_stop()` (also `Interpreter.request_stop()`), callable from any
  thread, e.g. a window's Stop button: `invoke()` raises `RunCancelled` at the next op
  boundary or WHILE iteration; a stepped run pauses there with ``Stop.reason ==
  "interrupted"``.

``None`` switches the iteration or time budget off.
"""
from __future__ import annotations

import os
from time import perf_counter
from typing import Callable

from .errors import AllocationError, IterationBudgetError, RunCancelled, TimeBudgetError

DEFAULT_MAX_ITERATIONS = 100_000
DEFAULT_TIMEOUT = 300.0  # seconds
_MAX_DEFAULT_BYTES = 4 << 30
_INF = float("inf")


def physical_memory() -> int | None:
    """Bytes of physical memory, or None where the platform does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def address_space_left() -> int | None:
    """Bytes the process may still map under its address-space limit (``ulimit -v``,
    RLIMIT_AS), or None when it has none (or the platform does not say)."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm") as f:  # the first field: pages mapped
            mapped = int(f.read().split()[0]) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ImportError, OSError, ValueError, IndexError):
        return None
    return max(soft - mapped, 0)


def default_max_allocation_bytes() -> int:
    """A quarter of physical memory, at most 4 GiB (2 GiB when memory is unknown), and
    within three quarters of the address space the process has left under ``ulimit -v``
    (the rest for the kernels' scratch, Python's own objects and libraries), so that a
    run that would not fit is told so before it starts instead of failing in an op."""
    phys = physical_memory()
    limit = min(phys // 4, _MAX_DEFAULT_BYTES) if phys else 2 << 30
    left = address_space_left()
    return limit if left is None else min(limit, left * 3 // 4)


DEFAULT_MAX_ALLOCATION_BYTES = default_max_allocation_bytes()

HOW_TO_RAISE_MEMORY = "raise it with Interpreter(max_allocation_bytes=...) or run --max-memory"

#: bytes a run may need beyond its tensors and inputs: the temporaries of a kernel (a few
#: int64 vectors, of a piece of 2^18 elements for a large element-wise output,
#: `kernels/chunks.py`, else of a tensor under 2^19 elements), with room for the like
SCRATCH_BYTES = 64 << 20


def run_reserve(tensor_bytes: int) -> int:
    """Bytes a run holds besides its input arrays, given its interpreter's ``tensor_bytes``
    (``Interpreter.arena_bytes``, the copies of the inputs included): those, and the
    kernels' scratch, `SCRATCH_BYTES` at most and no more than eight times the tensors (a
    small model's int64 temporaries).  What `inputs.complete_inputs` adds to the inputs
    for the process-level check."""
    return tensor_bytes + min(SCRATCH_BYTES, 8 * tensor_bytes)


def check_bytes(nbytes: int, limit: int, what: str) -> None:
    """Raise `AllocationError` if ``what`` would need more than ``limit`` bytes."""
    if nbytes > limit:
        raise AllocationError(f"{what} would need {nbytes:,} bytes, more than the allocation "
                              f"limit of {limit:,} bytes ({HOW_TO_RAISE_MEMORY})")


class Budget:
    """The iteration and time budgets of one interpreter, and its stop request."""

    __slots__ = ("max_iterations", "timeout", "deadline", "stop_requested")

    def __init__(self, max_iterations: int | None = DEFAULT_MAX_ITERATIONS,
                 timeout: float | None = DEFAULT_TIMEOUT) -> None:
        if max_iterations is not None and int(max_iterations) < 1:
            raise ValueError(f"max_iterations must be >= 1 or None, not {max_iterations}")
        if timeout is not None and not float(timeout) > 0:
            raise ValueError(f"timeout must be > 0 seconds or None, not {timeout}")
        self.max_iterations = None if max_iterations is None else int(max_iterations)
        self.timeout = None if timeout is None else float(timeout)
        self.deadline = _INF
        self.stop_requested = False

    def start(self) -> None:
        """A run (or a resume of a stepped run) begins: the clock starts now."""
        self.deadline = perf_counter() + self.timeout if self.timeout is not None else _INF

    def request_stop(self) -> None:
        """Ask the running run to stop at its next op boundary (thread-safe: one flag)."""
        self.stop_requested = True

    def exceeded(self) -> bool:
        """The cheap test the executor makes at every op boundary."""
        return self.stop_requested or perf_counter() > self.deadline

    def check(self, where: str) -> None:
        """Raise if the run was asked to stop or is past its time budget."""
        if self.stop_requested:
            self.stop_requested = False
            raise RunCancelled(f"{where}: the run was stopped (Interpreter.request_stop)")
        if perf_counter() > self.deadline:
            raise TimeBudgetError(f"{where}: the run is still going after the time budget "
                                  f"of {self.timeout:g} s (raise it with "
                                  "Interpreter(timeout=...) or run --timeout SECONDS)")

    def iteration(self, where: str, count: int, stop: bool = True,
                  path: Callable[[], str] | None = None) -> None:
        """Called by WHILE before iteration ``count`` (1-based): iteration, time and (when
        ``stop``: a run nothing pauses) the stop request.  A stepped run sees the stop
        request at its next pause point instead, and pauses there.  ``path`` gives the
        call path for time and stop messages (`Interpreter.call_path`)."""
        if self.max_iterations is not None and count > self.max_iterations:
            raise IterationBudgetError(
                f"{where}: still looping after {self.max_iterations:,} iterations, the "
                "iteration budget (raise it with Interpreter(max_iterations=...) or run "
                "--max-iterations N)")
        if self.exceeded() and (stop or not self.stop_requested):
            self.check(path() if path is not None else f"{where} (iteration {count:,})")
