"""The debugger worker's thread: made, stopped, or left to finish on its own.

Closing a window asks its debugger worker to stop, and nearly every command returns within
an operator.  One that does not (an interpreter still being built for a large model) must
not hold the window open, nor be destroyed while it runs: Qt aborts the process when a
running QThread is deleted, and a deleted worker object would be used after free.  Such a
thread and its worker are disconnected from the window and kept here, without a parent,
until the command returns and the thread finishes; the application waits for them before
it quits.
"""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QCoreApplication, QObject, Qt, QThread, SignalInstance

from .worker import DebugWorker

_kept: list[tuple[QThread, QObject]] = []
_waits_at_quit = [False]  # wait_all is connected to the application's aboutToQuit once


def make(owner: QObject, request: SignalInstance, slots: dict[str, Callable],
         start: bool = True) -> tuple[QThread, DebugWorker]:
    """A worker on its own thread (a child of ``owner``): ``request`` reaches its
    `execute`, and each of its signals named in ``slots`` the given slot of ``owner``, queued
    to the GUI thread.  The thread is started now or by the caller's first command."""
    thread = QThread(owner)
    thread.setObjectName("tflite-viewer debugger")
    worker = DebugWorker()
    worker.moveToThread(thread)
    request.connect(worker.execute, Qt.ConnectionType.QueuedConnection)
    for name, slot in slots.items():
        getattr(worker, name).connect(slot)
    if start:
        thread.start()
    return thread, worker


def stop(thread: QThread, worker: DebugWorker, request: SignalInstance, wait_ms: int) -> bool:
    """Stop the running command and the thread.  False when the command did not return
    within ``wait_ms``: the pair is then cut off from its owner and kept until it ends."""
    if not thread.isRunning():
        return True
    worker.request_stop()
    thread.quit()
    if thread.wait(wait_ms):
        return True
    request.disconnect(worker.execute)
    for name in ("opened", "stopped", "snapshots", "breakpoints", "result", "failed",
                 "progressed"):
        getattr(worker, name).disconnect()
    _adopt(thread, worker)
    return False


def _adopt(thread: QThread, worker: QObject) -> None:
    prune()
    thread.setParent(None)
    _kept.append((thread, worker))
    app = QCoreApplication.instance()
    if app is not None and not _waits_at_quit[0]:
        app.aboutToQuit.connect(wait_all)
        _waits_at_quit[0] = True


def prune() -> None:
    """Let go of the threads that have finished (from the GUI thread, never from theirs)."""
    _kept[:] = [(t, w) for t, w in _kept if not t.isFinished()]


def running() -> int:
    """How many cut-off threads are still running a command."""
    prune()
    return len(_kept)


def wait_all(timeout_ms: int = 60_000) -> None:
    """Wait for every cut-off thread (the application is quitting)."""
    for thread, _worker in list(_kept):
        thread.wait(timeout_ms)
    prune()
