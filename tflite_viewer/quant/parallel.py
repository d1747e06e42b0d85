"""Sharing an analysis's samples among processes.

The samples of an analysis are independent: each runs both models and measures every
tensor (and each op's float fallback) on its own.  `map_jobs` runs the first job in this
process and times it; when the rest would take long enough to be worth starting processes
(`WORTH_SECONDS`), it hands them to the standard library's process pool
(`concurrent.futures.ProcessPoolExecutor`), one worker per processor the process may use,
while this process does the work no job needs (``meanwhile``) and takes the results in
job order as they come.  The results come back in job order whatever the number of
processes, and every process runs BLAS on one thread (n processes with n threads each
would oversubscribe the processors, and a sum split among threads is added in another
order), so an analysis gives the same report, bit for bit, with one process or several
(`tests/quant/test_fallback_cone.py`).

The pool's workers are forked (the ``fork`` context): they inherit the models,
interpreters and prepared kernels as they are (copy on write), and the job function with
them, so nothing is loaded, built or pickled on the way there; only a job's index goes
to a worker and its result comes back.  Forking is used on Linux only (elsewhere, and
with ``workers=1``, everything runs in this process).  A job that fails in a worker (or a
worker that dies) is run again here, so any error is raised as a run in one process would
raise it.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Callable, Sequence

from threadpoolctl import threadpool_limits

from ..interpreter import compiled

#: the first job's time times the jobs left above which workers are started: forking,
#: sending results back and joining cost some tens of milliseconds
WORTH_SECONDS = 0.15


#: bytes of tensors the jobs compute in all (arena bytes times jobs) above which workers
#: are started before any job is timed: mobilenet_v2's analysis (about 28 MB over its 10
#: samples) is worth them, a 3-op model's never
WORTH_BYTES = 16 << 20


#: bytes of constants (both models' buffers) above which an analysis's checks of the files
#: (spec and weights, `analysis`) are worth a worker of their own: mobilenet_v2's pair
#: (18 MB, checks of about 40 ms) is, a few-op test model (checks of a millisecond, less
#: than forking and joining) is not
WORTH_SIDE_BYTES = 1 << 20


#: seconds a stopped worker is given to end on SIGTERM before it is killed
STOP_SECONDS = 2.0


def worth_a_side_job(constant_bytes: int) -> bool:
    """Whether checks over ``constant_bytes`` bytes of weights are worth `start_side`."""
    return constant_bytes >= WORTH_SIDE_BYTES


def worth_forking_at_once(bytes_per_job: int, jobs: int) -> bool:
    """Whether ``jobs`` jobs computing ``bytes_per_job`` bytes of tensors each are surely
    long enough for workers (`map_jobs`'s ``time_first=False``)."""
    return bytes_per_job * jobs >= WORTH_BYTES


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def can_fork() -> bool:
    return sys.platform.startswith("linux") and \
        "fork" in multiprocessing.get_all_start_methods()


# -- the pool's workers ------------------------------------------------------------------

#: in a worker: the job function and the jobs, inherited at the fork (`_install`)
_inherited: tuple[Callable[[Any, bool], Any], Sequence[Any]] | None = None


def _install(work: Callable[[Any, bool], Any], jobs: Sequence[Any]) -> None:
    """A worker's initializer.  Under the fork context its arguments are inherited, not
    pickled, so ``work`` may be a closure over prepared interpreters.  BLAS is set to one
    thread here rather than trusted to the fork."""
    global _inherited
    _inherited = (work, jobs)
    threadpool_limits(limits=1, user_api="blas")


def _run_job(index: int) -> Any:
    """What a worker is sent: the index of the job to run (``here`` is False)."""
    assert _inherited is not None
    work, jobs = _inherited
    return work(jobs[index], False)


class _Pool:
    """A fork-context `ProcessPoolExecutor` of ``n`` workers that run ``work`` on ``jobs``
    by index, and can be stopped at once (a cancelled analysis), its running jobs too."""

    def __init__(self, n: int, work: Callable[[Any, bool], Any], jobs: Sequence[Any]) -> None:
        # the compiled kernels' machine code loaded here, once, for every worker to inherit
        # (each worker loading it itself cost half a second a worker and an analysis)
        compiled.warm()
        before = set(multiprocessing.active_children())
        self.executor = ProcessPoolExecutor(
            n, mp_context=multiprocessing.get_context("fork"), initializer=_install,
            initargs=(work, jobs))
        self._before = before
        self._workers: list = []

    def submit(self, indices: Sequence[int]) -> dict[Future, int]:
        # the workers fork with every object this process holds in the collector's
        # permanent generation (gc.freeze), so that their collections never write to the
        # pages they share with it: with numba's 50,000 objects loaded (the compiled
        # kernels), each worker's collections copied them, and mobilenet_v2's analysis
        # on two workers took twice its time in one process.  This process unfreezes
        # them once the workers are started.
        gc.freeze()
        try:
            futures = {self.executor.submit(_run_job, i): i for i in indices}
        finally:
            gc.unfreeze()
        # the fork context starts every worker at the first submit: they are the children
        # that were not there before
        self._workers = [p for p in multiprocessing.active_children() if p not in self._before]
        return futures

    def close(self, stop: bool) -> None:
        """Shut the pool down; with ``stop``, end the workers' running jobs too
        (`ProcessPoolExecutor.shutdown` would let them finish)."""
        self.executor.shutdown(wait=not stop, cancel_futures=True)
        if stop:
            for proc in self._workers:
                if proc.exitcode is None:
                    proc.terminate()
            for proc in self._workers:  # a worker that ignores SIGTERM is killed
                proc.join(STOP_SECONDS)
                if proc.exitcode is None:
                    proc.kill()


# -- sharing jobs ------------------------------------------------------------------------

def map_jobs(jobs: Sequence[Any], work: Callable[[Any, bool], Any],
             done: Callable[[int, Any, bool], None], workers: int | None = None,
             check: Callable[[], None] | None = None,
             meanwhile: Callable[[], None] | None = None, time_first: bool = True) -> None:
    """``work(job, here)`` every job and hand each result to ``done(index, result, here)``
    in job order; ``here`` says the job ran in this process (where it may report progress
    and raise to cancel) rather than in a worker.  ``check()`` is called while waiting for
    the workers (it raises to cancel; the workers are then stopped).  ``workers``:
    processes to compute jobs at most (None: the processors this process may run on).
    ``meanwhile()``, work that needs no job's result (an analysis's checks of the file),
    runs in this process while the workers compute, or after the jobs when no worker is
    started.  ``time_first`` False: the caller knows the jobs are long
    (`worth_forking_at_once`), so the workers start at once instead of after the first
    job, timed here, says they are worth it."""
    if not jobs:
        if meanwhile is not None:
            meanwhile()
        return
    # one BLAS thread in every process, from the first job: n processes each with BLAS's
    # n threads would oversubscribe n processors, and OpenBLAS's waiting threads spin
    # (measured: the metrics' dot products took 2.3 s in place of 4 ms on two cores); and
    # a BLAS sum split among threads is added in another order, so a report would depend
    # on the number of processes
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
    pool = _Pool(n, work, jobs)
    try:
        futures = pool.submit(rest)
        if meanwhile is not None:
            meanwhile()
        _collect(futures, rest, jobs, work, done, check)
    except BaseException:  # cancelled, or failed here: the workers' work is not wanted
        pool.close(stop=True)
        raise
    pool.close(stop=False)


def _collect(futures: dict[Future, int], order: list[int], jobs: Sequence[Any],
             work: Callable[[Any, bool], Any], done: Callable[[int, Any, bool], None],
             check: Callable[[], None] | None) -> None:
    """Hand the workers' results to ``done`` in job order as they come, calling ``check``
    at least every 0.1 s; a job whose worker failed is run here."""
    by_index = {i: f for f, i in futures.items()}
    pending = set(futures)
    for i in order:
        future = by_index[i]
        while not future.done():
            if check is not None:
                check()
            pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED).not_done
        if future.exception() is None:
            done(i, future.result(), False)
        else:  # raised in the worker, or the worker died: run here, to raise it here
            done(i, work(jobs[i], True), True)


class SideJob:
    """``func()`` computed in a one-worker pool while this process goes on (`start_side`);
    `result` gives its value.  Where no worker was started, or it failed, `result`
    computes it here, so an error is raised as a call here would raise it."""

    def __init__(self, func: Callable[[], Any], fork: bool) -> None:
        self._func = func
        self._pool: _Pool | None = None
        if fork:
            self._pool = _Pool(1, lambda f, here: f(), [func])
            (self._future,) = self._pool.submit([0])

    @property
    def forked(self) -> bool:
        return self._pool is not None

    def result(self, check: Callable[[], None] | None = None) -> Any:
        """The value of ``func()``; ``check()`` is called while waiting (it raises to
        cancel; the worker is then stopped)."""
        if self._pool is None:
            return self._func()
        got: list[Any] = []
        try:
            _collect({self._future: 0}, [0], [self._func], lambda f, here: f(),
                     lambda i, value, here: got.append(value), check)
        except BaseException:
            self.close()
            raise
        self._pool.close(stop=False)
        self._pool = None
        return got[0]

    def close(self) -> None:
        """Stop the worker if it still runs (a cancelled analysis)."""
        if self._pool is not None:
            self._pool.close(stop=True)
            self._pool = None


def start_side(func: Callable[[], Any], workers: int | None = None) -> SideJob:
    """`SideJob` of ``func``: in a worker when this process may use another processor
    (``workers``: processes at most, None: the processors it may run on) and can fork,
    else computed here when its result is asked for.  For work no job needs, started before
    the setup the jobs wait for (an analysis's checks of the files while its interpreters
    are built), where `map_jobs`'s ``meanwhile`` would only run after it."""
    n = available_cpus() if workers is None else max(1, int(workers))
    return SideJob(func, n > 1 and can_fork())
