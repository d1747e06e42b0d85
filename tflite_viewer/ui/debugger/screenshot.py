"""``--screenshot OUT.png --run-to N``: the window paused before an operator."""
from __future__ import annotations

from typing import Callable

import numpy as np
from PySide6.QtCore import QEventLoop, QTimer

from ...interpreter.inputs import match_inputs

WAIT_MS = 600_000


def wait_until(condition: Callable[[], bool], signals, timeout_ms: int,
               poll_ms: int | None = None) -> bool:
    """Run the event loop until ``condition()`` holds (checked now, and again whenever one
    of ``signals`` fires) or ``timeout_ms`` pass; True when it holds.

    The signals must be emitted on the GUI thread (the controller's, which follow the
    worker's queued results).  A lambda connected to a worker's own signal without a
    context object runs on the worker's thread, possibly before the loop starts: that
    quit was lost and ``--screenshot --run-to`` waited out its 10 s timeout (issue 25,
    item 15).  Checking the condition first and after each signal cannot miss one.
    ``poll_ms`` also checks it that often (for a condition no signal announces)."""
    loop = QEventLoop()
    timer = QTimer()
    timer.setSingleShot(True)
    timer.timeout.connect(loop.quit)
    poll = QTimer()
    if poll_ms:
        poll.timeout.connect(loop.quit)
        poll.start(poll_ms)
    for signal in signals:
        signal.connect(loop.quit)  # a slot of the loop, a QObject of this thread
    try:
        timer.start(timeout_ms)
        while not condition() and timer.isActive():
            loop.exec()
        return bool(condition())
    finally:
        timer.stop()
        poll.stop()
        for signal in signals:
            signal.disconnect(loop.quit)


def wait_for_stop(controller, timeout_ms: int = WAIT_MS):
    """Block (running the event loop) until the controller applies its next stop."""
    before = controller.last_stop.serial if controller.last_stop is not None else 0
    failed: list[str] = []

    def note(_command: str, message: str) -> None:
        failed.append(message)
    controller.commandFailed.connect(note)
    try:
        done = wait_until(lambda: bool(failed) or (
            controller.last_stop is not None and controller.last_stop.serial > before
            and not controller.busy), (controller.stopReceived, controller.commandFailed),
            timeout_ms)
    finally:
        controller.commandFailed.disconnect(note)
    if failed:
        raise ValueError(failed[0])
    if not done:
        raise ValueError(f"the run did not pause within {timeout_ms / 1000:g} s")
    return controller.last_stop


def read_npz(path: str) -> dict[str, np.ndarray]:
    """The arrays of an inputs .npz, never unpickled (ValueError naming the file)."""
    try:
        data = np.load(path, allow_pickle=False)
        if isinstance(data, np.ndarray):
            raise ValueError("a single array (.npy), not an .npz of arrays keyed by input")
        with data:
            return {k: np.array(data[k]) for k in data.files}
    except ValueError as exc:
        raise ValueError(f"--inputs {path}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any unreadable file is one message
        raise ValueError(f"--inputs {path}: cannot read it ({exc})") from None


def wait_for_snapshot(window, subgraph: int, tensor: int, timeout_ms: int = 10_000) -> bool:
    """Let the inspector receive the values it asked the worker for (True when they came)."""
    dbg = window.debugger
    return wait_until(lambda: (subgraph, tensor) in dbg.snapshots,
                      (dbg.snapshotsReceived, dbg.stopReceived, dbg.commandFailed), timeout_ms)


def pause_before(window, op: int, inputs_path: str | None = None,
                 call: int | None = None) -> None:
    """Run the shown subgraph's model to just before ``op`` (in a generation run, in call
    ``call``: decode step ``call``); ValueError for a bad op or inputs (the message names
    them)."""
    model = window.model
    sg = window.subgraph
    n = len(model.subgraphs[sg].operators)
    if not 0 <= op < n:
        raise ValueError(f"--run-to {op}: subgraph {sg} has {n} operators (0..{n - 1})")
    dbg = window.debugger
    if inputs_path:
        dbg.set_inputs(match_inputs(model, read_npz(inputs_path)))
    dbg.run_to(sg, op, call)
    stop = wait_for_stop(dbg)
    if stop.state == "error":
        raise ValueError(f"--run-to {op}: {stop.message}")
    if stop.state != "paused":
        raise ValueError(f"--run-to {op}: the run {stop.state} before reaching subgraph {sg} "
                         f"op {op} (that op is not run with these inputs)")
    if stop.position[-1][0] != sg:
        window.show_subgraph(stop.position[-1][0], wait=True)
    at = stop.position[-1][1]
    window.select_op(at)
    # the inspector shows the activation the op is about to read, not its weights
    msg = window.model.subgraphs[stop.position[-1][0]]
    first = next((t for t in msg.operators[at].inputs
                  if t >= 0 and not msg.tensors[t].is_constant), None)
    if first is not None:
        window.tensor_panel.show_tensor(msg.tensors[first])
        wait_for_snapshot(window, stop.position[-1][0], first)
    window.debugger.callstack_dock.raise_()
