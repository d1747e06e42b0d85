"""The run state: what one interpreter's runs read and change, in one object.

LiteRT keeps it in its Subgraph objects and the interpreter's options: each subgraph's
tensors and execution plan, the resources and the initialization status map every
subgraph shares (resource variables, CALL_ONCE), and what a kernel may ask of its context.
Here `RunState` holds all of it that outlives one op:

* the runtime subgraphs (their tensors and execution plans), the entry subgraph and
  signature a run starts in, and the run's status (``ready``, ``paused``, ``finished``);
* the call stack: one `Frame` per subgraph running, outermost first, the op about to run
  in each (WHILE, IF, CALL_ONCE and composites push their callees' frames); the
  subgraphs running and those being prepared (a subgraph that calls itself is refused);
* whether the run can pause (`direct` is True for `invoke`, which nothing pauses);
* the budgets (`budget.Budget`: iterations, time, the stop request), the allocation limit,
  the iterations of each WHILE, and the progress (`progress.ProgressMeter`);
* the hooks that watch every op, and the per-op times and calls of the current run;
* resource variables and hash tables (`resources`, `resource_ids`) and the CALL_ONCE
  subgraphs that have run (`called_once`);
* the options a run computes with (`fuse_loops`, `fold_shape_ops`, `bind_kernels`,
  `reference_float_sums`).

The executor (`executor.Executor`) walks the plans with it, the debugger
(`debugger.Debugger`) pauses and resumes runs through it, the `Interpreter` owns it, and
kernels reach it through their context (``ctx.run``, `Subgraph`).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from time import perf_counter
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..model.dtypes import type_name
from .budget import HOW_TO_RAISE_MEMORY, Budget
from .errors import AllocationError
from .progress import ProgressMeter
from .tensor import AllocationType

if TYPE_CHECKING:
    from .debugger import OpEvent
    from .subgraph import Subgraph
    from .tensor import Tensor

Position = tuple[tuple[int, int], ...]
Hook = Callable[[Any, "OpEvent"], Any]


@dataclass
class Frame:
    """One level of the call stack: a subgraph and the op about to run in it."""

    subgraph: int
    op: int


class RunState:
    """The state of one interpreter's runs (see the module docstring)."""

    def __init__(self, budget: Budget, max_allocation_bytes: int,
                 reference_float_sums: bool = False) -> None:
        self.subgraphs: list["Subgraph"] = []
        #: the subgraph a run starts in, and the signature that chose it (None: by index)
        self.entry = 0
        self.signature: str | None = None
        self.status = "ready"  # ready | paused | finished
        self.stack: list[Frame] = []
        #: subgraphs running now, and subgraphs being prepared: a call of one of them from
        #: itself is refused (recursion)
        self.active: set[int] = set()
        self.preparing: set[int] = set()
        #: a run nothing pauses (`invoke`): subgraph calls are plain calls
        self.direct = False
        self.budget = budget
        self.max_allocation_bytes = int(max_allocation_bytes)
        #: when the executor next looks at the clock's verdicts: the time budget's
        #: deadline or the next progress report, whichever comes first (`boundary`)
        self.due = budget.deadline
        self.progress = ProgressMeter(self)
        #: (subgraph, op) of each WHILE -> the iteration it is in (for messages)
        self.loop_iterations: dict[tuple[int, int], int] = {}
        self.before_hooks: list[Hook] = []
        self.after_hooks: list[Hook] = []
        #: resource variables and tables, by id; (container, shared_name) -> id; the
        #: CALL_ONCE init subgraphs that ran (until the variables are reset)
        self.resources: dict[Any, Any] = {}
        self.resource_ids: dict[tuple[str, str], int] = {}
        self.called_once: set[int] = set()
        #: op times and calls kept per op by stepped and watched runs (a stop reads them
        #: after every step); the prepared plan keeps them in the subgraphs' counters
        self.stepped_times: dict[tuple[int, int], float] = defaultdict(float)
        self.stepped_calls: dict[tuple[int, int], int] = defaultdict(int)
        self.stats_in_plan = False
        #: when a stepped run last paused, and the seconds it spent paused in this command
        self.paused_since: float | None = None
        self.paused_total = 0.0
        #: run WHILE loops recognised as a Keras LSTM step as one compiled loop in invoke()
        #: (`fused_loops`); False runs every loop op by op
        self.fuse_loops = True
        #: replay the values of shape arithmetic in invoke() once a run computed them
        #: (`folding`); False runs every kernel
        self.fold_shape_ops = True
        #: let kernels bind their invoke to the prepared node (`Kernel.bind`) in invoke()
        #: once a run has gone through; False calls every kernel's invoke
        self.bind_kernels = True
        #: float32 CONV_2D and FULLY_CONNECTED add their products in LiteRT's reference
        #: order (`float32.ordered_matmul`), else by BLAS (`float_sums`)
        self.reference_float_sums = reference_float_sums

    # -- where the run is ----------------------------------------------------------------
    @property
    def position(self) -> Position:
        """The call stack, outermost first: ((subgraph, op about to run), ...)."""
        return tuple((f.subgraph, f.op) for f in self.stack)

    def call_path(self) -> str:
        """Where the run is, outermost first, with the iteration of each enclosing WHILE:
        ``subgraph 0 op 0 (WHILE, iteration 1,204) > subgraph 4 op 2 (ADD)``."""
        parts = []
        for f in list(self.stack):  # (a copy: the progress may read it from another thread)
            nodes = self.subgraphs[f.subgraph].nodes
            name = nodes[f.op].name if f.op < len(nodes) else "return"
            it = self.loop_iterations.get((f.subgraph, f.op)) if name == "WHILE" else None
            parts.append(f"subgraph {f.subgraph} op {f.op} ({name}"
                         + (f", iteration {it:,})" if it else ")"))
        return " > ".join(parts) or "before the first op"

    @property
    def current_op(self) -> tuple[int, int] | None:
        """(subgraph, op) about to run in a paused run, or None when no op is next."""
        if not self.stack or self.status != "paused":
            return None
        f = self.stack[-1]
        return (f.subgraph, f.op) if f.op < len(self.subgraphs[f.subgraph].nodes) else None

    @property
    def watched(self) -> bool:
        """Whether hooks watch every op (a fused loop would hide its body's ops)."""
        return bool(self.before_hooks or self.after_hooks)

    # -- budgets and progress ------------------------------------------------------------
    def begin_command(self) -> None:
        """A command (invoke, or one call of the stepping API) starts: the time budget's
        clock and the progress's."""
        self.budget.start()
        self.progress.begin()
        self.due = min(self.budget.deadline, self.progress.next_at)

    def boundary(self, now: float, stop: bool) -> float:
        """At an op boundary or a kernel's checkpoint, once the clock passed `due` or a stop
        was asked: the budgets, then the progress.  A stop request raises `RunCancelled`
        only when ``stop`` (a stepped run pauses at its next pause point instead); a run
        past its time budget raises `TimeBudgetError`.  Returns the new `due`."""
        budget = self.budget
        if budget.stop_requested:
            if stop:
                budget.check(self.call_path())
        elif now > budget.deadline:
            budget.check(self.call_path())
        progress = self.progress
        if now >= progress.next_at:
            progress.tick(now)
        self.due = min(budget.deadline, progress.next_at)
        return self.due

    def iteration(self, key: tuple[int, int], where: str, count: int) -> None:
        """Before iteration ``count`` of the WHILE at ``key``: its place for messages, the
        iteration and time budgets and (in a run nothing pauses) the stop request, and the
        progress when a report is due."""
        self.loop_iterations[key] = count
        self.budget.iteration(where, count, self.direct, self.call_path)
        progress = self.progress
        if progress.callback is not None:
            now = perf_counter()
            if now >= progress.next_at:
                progress.tick(now)

    def check_allocation(self, sg: "Subgraph", tensor: "Tensor", nbytes: int,
                         shape: Sequence[int]) -> None:
        """Refuse a tensor of ``nbytes`` over the allocation limit (`AllocationError`)."""
        if nbytes > self.max_allocation_bytes:
            raise AllocationError(
                f"subgraph {sg.index} tensor {tensor.index} ({tensor.name!r}) would need "
                f"{nbytes:,} bytes for {type_name(tensor.type)}{list(shape)}, more than the "
                f"allocation limit of {self.max_allocation_bytes:,} bytes "
                f"({HOW_TO_RAISE_MEMORY})")

    def check_total(self) -> None:
        """Refuse tensors whose arena, over every subgraph, passes the allocation limit,
        naming the largest (`AllocationError`)."""
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

    # -- op statistics -------------------------------------------------------------------
    def clear_op_stats(self) -> None:
        """Forget the op times and calls of the last run."""
        self.stepped_times.clear()
        self.stepped_calls.clear()
        self.stats_in_plan = False
        for sg in self.subgraphs:
            sg.clear_op_stats()

    def op_times(self) -> dict[tuple[int, int], float]:
        """Seconds spent in each (subgraph, op) during the current or last run (an op that
        calls subgraphs includes them), for the ops that ran."""
        if not self.stats_in_plan:
            return self.stepped_times
        return {(sg.index, i): t for sg in self.subgraphs
                for i, (t, n) in enumerate(zip(sg.op_seconds, sg.op_counts)) if n}

    def op_calls(self) -> dict[tuple[int, int], int]:
        """How many times each (subgraph, op) ran during the current or last run."""
        if not self.stats_in_plan:
            return self.stepped_calls
        return {(sg.index, i): n for sg in self.subgraphs
                for i, n in enumerate(sg.op_counts) if n}

    def ops_run(self) -> int:
        """Ops run so far in the current or last run, every subgraph's (any thread)."""
        if not self.stats_in_plan:
            return int(sum(list(self.stepped_calls.values())))
        return int(sum(sum(sg.op_counts) for sg in list(self.subgraphs)))

    # -- resources -----------------------------------------------------------------------
    def reset_resources(self) -> None:
        """Resource variables forgotten, so CALL_ONCE initializers run again."""
        self.resources.clear()
        self.called_once.clear()

