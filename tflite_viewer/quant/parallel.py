"""Sharing an analysis's samples among processes.

The samples of an analysis are independent: each runs both models and measures every
tensor (and each op's float fallback) on its own.  `map_jobs` runs the first job in this
process and times it; when the rest would take long enough to be worth starting processes
(`WORTH_SECONDS`), it forks one child per further processor the process may use; every
process (this one included) takes the next job no process has taken until none is left,
and this one collects the children's results.  The results come back in job order
whatever the number of processes, and every process runs BLAS on one thread (n processes
with n threads each would oversubscribe the processors, and a sum split among threads is
added in another order), so an analysis gives the same report, bit for bit, with one
process or several (`tests/quant/test_fallback_cone.py`).

Forked children inherit the models, interpreters and prepared kernels as they are (copy on
write): nothing is loaded or built again.  Forking is used on Linux only (elsewhere, and
with ``workers=1``, everything runs in this process).  A child that fails sends nothing
usable back; its jobs are then run here, so any error is raised as a run in one process
would raise it.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import time
from typing import Any, Callable, Sequence

from threadpoolctl import threadpool_limits

#: the first job's time times the jobs left above which children are started: forking,
#: sending results back and joining cost some tens of milliseconds
WORTH_SECONDS = 0.15


#: bytes of tensors the jobs compute in all (arena bytes times jobs) above which children
#: are started before any job is timed: mobilenet_v2's analysis (about 28 MB over its 10
#: samples) is worth them, a 3-op model's never
WORTH_BYTES = 16 << 20


#: bytes of constants (both models' buffers) above which an analysis's checks of the files
#: (spec and weights, `analysis`) are worth a child of their own: mobilenet_v2's pair
#: (18 MB, checks of about 40 ms) is, a few-op test model (checks of a millisecond, less
#: than forking and joining) is not
WORTH_SIDE_BYTES = 1 << 20


def worth_a_side_job(constant_bytes: int) -> bool:
    """Whether checks over ``constant_bytes`` bytes of weights are worth `start_side`."""
    return constant_bytes >= WORTH_SIDE_BYTES


def worth_forking_at_once(bytes_per_job: int, jobs: int) -> bool:
    """Whether ``jobs`` jobs computing ``bytes_per_job`` bytes of tensors each are surely
    long enough for children (`map_jobs`'s ``time_first=False``)."""
    return bytes_per_job * jobs >= WORTH_BYTES


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    return sys.platform.startswith("linux") and \
        "fork" in multiprocessing.get_all_start_methods()


def map_jobs(jobs: Sequence[Any], work: Callable[[Any, bool], Any],
             done: Callable[[int, Any, bool], None], workers: int | None = None,
             check: Callable[[], None] | None = None,
             meanwhile: Callable[[], None] | None = None, time_first: bool = True) -> None:
    """``work(job, here)`` every job and hand each result to ``done(index, result, here)``
    in job order; ``here`` says the job ran in this process (where it may report progress
    and raise to cancel) rather than in a child.  ``check()`` is called while waiting for
    the children (it raises to cancel; the children are then stopped).  ``workers``:
    processes to use at most (None: the processors this process may run on).
    ``meanwhile()``, work that needs no job's result (an analysis's checks of the file),
    runs in this process while the children compute, before it takes any of the jobs
    (so it takes fewer), or after the jobs when no child is started.  ``time_first``
    False: the caller knows the jobs are long (`worth_forking_at_once`), so the children
    start at once instead of after the first job, timed here, says they are worth it."""
    if not jobs:
        if meanwhile is not None:
            meanwhile()
        return
    # one BLAS thread in every process, from the first job: n processes each with BLAS's
    # n threads would oversubscribe n processors, and OpenBLAS's waiting threads spin
    # (measured: the metrics' dot products took 2.3 s in place of 4 ms on two cores); and
    # a BLAS sum split among threads is added in another order, so a report would depend
    # on the number of processes (the children inherit the limit)
    with threadpool_limits(limits=1, user_api="blas"):
        _map_jobs(jobs, work, done, workers, check, meanwhile, time_first)


def _map_jobs(jobs: Sequence[Any], work: Callable[[Any, bool], Any],
              done: Callable[[int, Any, bool], None], workers: int | None,
              check: Callable[[], None] | None, meanwhile: Callable[[], None] | None,
              time_first: bool) -> None:
    """`map_jobs`, with BLAS already limited to one thread."""
    if time_first or len(jobs) < 2:
        t0 = time.perf_counter()
        done(0, work(jobs[0], True), True)
        rest = list(range(1, len(jobs)))
        worth = (time.perf_counter() - t0) * len(rest) > WORTH_SECONDS
    else:
        rest, worth = list(range(len(jobs))), True
    n = min(available_cpus() if workers is None else max(1, int(workers)), len(rest))
    if n <= 1 or not worth or not can_fork():
        for i in rest:
            done(i, work(jobs[i], True), True)
        if meanwhile is not None:
            meanwhile()
        return
    results = _share(jobs, work, rest, n, check, meanwhile)
    for i in rest:
        done(i, *results[i])


def _share(jobs: Sequence[Any], work: Callable[[Any, bool], Any], rest: list[int], n: int,
           check: Callable[[], None] | None,
           meanwhile: Callable[[], None] | None) -> dict[int, tuple[Any, bool]]:
    """Fork ``n - 1`` children; every process, this one after ``meanwhile``, takes the
    next job of ``rest`` not yet taken until none is left, so the one with ``meanwhile`` to
    do simply takes fewer (mobilenet_v2's analysis: the file checks are worth about two
    samples, and fixed equal shares left the children idle that long).  A child's results
    come back once it has taken its last job; a job a child took and did not send back
    (it failed) is computed here."""
    ctx = multiprocessing.get_context("fork")
    taken = ctx.Value("l", 0)  # how many of ``rest`` are taken (with its lock)

    def take() -> int | None:
        with taken.get_lock():
            k = taken.value
            if k >= len(rest):
                return None
            taken.value = k + 1
        return rest[k]

    children = []
    results: dict[int, tuple[Any, bool]] = {}
    try:
        for _ in range(n - 1):
            children.append(_fork(_child, take, jobs, work))
        if meanwhile is not None:
            meanwhile()
        while (i := take()) is not None:
            results[i] = (work(jobs[i], True), True)
        for proc, reader in children:
            for i, result in _receive(reader, check).items():
                results[i] = (result, False)
        for i in rest:  # taken by a child that failed
            if i not in results:
                results[i] = (work(jobs[i], True), True)
    except BaseException:  # cancelled, or failed here: the children's work is not wanted
        _release(children, stop=True)
        raise
    _release(children, stop=False)
    return results


def _fork(target: Callable, *args: Any) -> tuple[Any, Any]:
    """A forked daemon child running ``target(*args, writer)``: (the process, the reading
    end of its pipe)."""
    ctx = multiprocessing.get_context("fork")
    reader, writer = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=target, args=(*args, writer), daemon=True)
    proc.start()
    writer.close()
    return proc, reader


def _release(children: list, stop: bool) -> None:
    """Close the pipes of ``children`` (processes and their readers), stopping them when
    ``stop``.  No child is waited for: one that sent its end mark exits by itself, and a
    forked copy of this process takes milliseconds to exit (measured: 6-9 ms a join);
    multiprocessing reaps exited children at the next start, at `active_children` (called
    here for those already gone) and at exit."""
    for proc, reader in children:
        reader.close()
        if stop and proc.exitcode is None:
            proc.terminate()
    multiprocessing.active_children()


class SideJob:
    """``func()`` computed in a forked child while this process goes on (`start_side`);
    `result` gives its value.  Where no child was started, or the child failed (it sent
    nothing usable), `result` computes it here, so an error is raised as a call here would
    raise it."""

    def __init__(self, func: Callable[[], Any], fork: bool) -> None:
        self._func = func
        self._proc = self._reader = None
        if fork:
            self._proc, self._reader = _fork(_side_child, func)

    @property
    def forked(self) -> bool:
        return self._proc is not None

    def result(self, check: Callable[[], None] | None = None) -> Any:
        """The value of ``func()``; ``check()`` is called while waiting (it raises to
        cancel; the child is then stopped)."""
        try:
            if self._reader is not None:
                got = _receive(self._reader, check)
                if 0 in got:
                    return got[0]
            return self._func()
        except BaseException:
            self.close()
            raise
        finally:
            if self._proc is not None:  # it sent its end mark, or failed: it ends itself
                _release([(self._proc, self._reader)], stop=False)
                self._proc = self._reader = None

    def close(self) -> None:
        """Stop the child if it still runs (a cancelled analysis)."""
        if self._proc is not None:
            _release([(self._proc, self._reader)], stop=True)
            self._proc = self._reader = None


def start_side(func: Callable[[], Any], workers: int | None = None) -> SideJob:
    """`SideJob` of ``func``: in a child when this process may use another processor
    (``workers``: processes at most, None: the processors it may run on) and can fork,
    else computed here when its result is asked for.  For work no job needs, started before
    the setup the jobs wait for (an analysis's checks of the files while its interpreters
    are built), where `map_jobs`'s ``meanwhile`` would only run after it."""
    n = available_cpus() if workers is None else max(1, int(workers))
    return SideJob(func, n > 1 and can_fork())


def _side_child(func: Callable[[], Any], writer) -> None:
    """`_child` with one job, ``func()``, computed with BLAS on one thread (as every job of
    `map_jobs`): its result and an end mark, or on failure the mark alone (the parent
    computes it again)."""
    todo = [0]
    with threadpool_limits(limits=1, user_api="blas"):
        _child(lambda: todo.pop() if todo else None, [func], lambda f, here: f(), writer)


def _receive(reader, check: Callable[[], None] | None) -> dict[int, Any]:
    """The results a child sent, up to its end mark (those it could not send are
    missing)."""
    got: dict[int, Any] = {}
    while True:
        if check is not None:
            check()
        try:
            if not reader.poll(0.1):
                continue
            item = reader.recv()
        except Exception:  # noqa: BLE001 - a failed child (EOF, a bad pickle): redo its jobs
            break
        if item is None:  # the child's end mark
            break
        i, result = item
        got[i] = result
    return got


def _child(take: Callable[[], int | None], jobs: Sequence[Any], work, writer) -> None:
    """Take jobs until none is left, then send every result and an end mark: the parent
    reads only once it has no job left itself, and a result larger than the pipe's buffer
    sent at once would stall this child until then (measured: a child ran one job of its
    five in parallel, then waited)."""
    results = []
    try:
        while (i := take()) is not None:
            results.append((i, work(jobs[i], False)))
    except BaseException:  # noqa: BLE001 - the parent runs what is missing
        pass
    try:
        for item in results:
            writer.send(item)
        writer.send(None)
    except BaseException:  # noqa: BLE001 - idem
        pass
    finally:
        writer.close()
