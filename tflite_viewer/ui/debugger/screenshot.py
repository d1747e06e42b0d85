"""``--screenshot OUT.png --run-to N``: the window paused before an operator."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEventLoop, QTimer

from ...interpreter.inputs import match_inputs

WAIT_MS = 600_000


def wait_for_stop(controller, timeout_ms: int = WAIT_MS):
    """Block (running the event loop) until the controller receives its next stop."""
    loop = QEventLoop()
    got = []
    controller.stopReceived.connect(lambda stop: (got.append(stop), loop.quit()))
    failed = []
    controller.worker.failed.connect(lambda cmd, msg, _s: (failed.append(msg), loop.quit()))
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()
    if failed:
        raise ValueError(failed[0])
    if not got:
        raise ValueError(f"the run did not pause within {timeout_ms / 1000:g} s")
    return got[0]


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


def wait_for_snapshot(window, subgraph: int, tensor: int, timeout_ms: int = 10_000) -> None:
    """Let the inspector receive the values it asked the worker for."""
    dbg = window.debugger
    loop = QEventLoop()
    QTimer.singleShot(timeout_ms, loop.quit)
    dbg.worker.snapshots.connect(lambda *_a: loop.quit())
    if (subgraph, tensor) not in dbg.snapshots:
        loop.exec()


def pause_before(window, op: int, inputs_path: str | None = None) -> None:
    """Run the shown subgraph's model to just before ``op``; ValueError for a bad op or
    inputs (the message names them)."""
    model = window.model
    sg = window.subgraph
    n = len(model.subgraphs[sg].operators)
    if not 0 <= op < n:
        raise ValueError(f"--run-to {op}: subgraph {sg} has {n} operators (0..{n - 1})")
    dbg = window.debugger
    if inputs_path:
        dbg.set_inputs(match_inputs(model, read_npz(inputs_path)))
    dbg.run_to(sg, op)
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
