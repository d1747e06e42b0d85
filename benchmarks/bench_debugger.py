"""The debugger in the window: how long a step takes, and Continue against a headless run.

    python benchmarks/bench_debugger.py [--steps 40] [--rounds 3] [--blas-threads N]

* Step latency: from triggering Step Over (F10) to the stop applied in the window (canvas
  marks set, inspector refreshed from the new snapshot) and the pending repaints processed
  (the overlay repaints only what changed); median over ``--steps`` steps.  On palm_detection_lite (232 ops) and on
  the 20,000-op synthetic residual model (`benchmarks.synthetic_models.residual_model`).
  The inspector shows the output of the op about to run, so every step ships a snapshot;
  on palm also with the Tensor panel's Values tab (the grid) in front instead of Overview.
  Target (DESIGN): at most 30 ms.  Also printed: the GUI thread's CPU time per step, which
  a loaded machine does not inflate (the load average is printed first).
* Continue to the end (F5 from ready, no breakpoints) against `Interpreter.invoke` on the
  same inputs in the same process, on the largest float (yamnet) and quantized
  (ssd_mobilenet_v1) corpus models; best of ``--rounds``.  Target: at most 1.3x the
  headless time plus 100 ms.

* Responsiveness: the longest gap between ticks of a 5 ms timer on the GUI thread while
  Continue runs a model on the worker thread (target: never blocked over 50 ms).
* Stepping without a window (`DebugSession`, what the worker runs): Continue from ready
  to the end, and the run stepped op by op (Step Over until finished), each against
  `Interpreter.invoke` on the same inputs, the three alternating, best of ``--rounds``
  (at least 5) in CPU time of the thread (with ``--blas-threads 1`` all the work is
  there, and a loaded machine does not inflate it); the difference per op run is what
  the session adds (target: under 1 ms per op).  Also invoke with a progress callback
  (`Interpreter.set_progress`, reports every 0.1 s) against invoke without: the cost of
  reporting progress.

Runs offscreen; prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import blas_threads  # noqa: E402

blas_threads.apply_from_argv()  # before numpy loads its BLAS

from PySide6.QtCore import QEventLoop, QSettings, QTimer  # noqa: E402

from benchmarks.synthetic_models import residual_model  # noqa: E402
from tflite_viewer.interpreter import Interpreter  # noqa: E402
from tflite_viewer.interpreter.inputs import complete_inputs, positional  # noqa: E402
from tflite_viewer.ui.app import make_app  # noqa: E402
from tflite_viewer.ui.errors import ErrorReporter  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "models"


def _window(path: Path):
    from tflite_viewer.ui.main_window import MainWindow
    settings = QSettings(str(Path(tempfile.mkdtemp()) / "s.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings=settings, errors=ErrorReporter(interactive=False))
    w.resize(1600, 1000)
    w.show()
    if not w.open_path(path, wait=True):
        raise SystemExit(f"cannot open {path}")
    return w


def _until_stop(dbg, timeout_ms: int = 600_000):
    loop = QEventLoop()
    got = []
    dbg.stopReceived.connect(lambda s: (got.append(s), loop.quit()))
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()
    dbg.stopReceived.disconnect()
    return got[0] if got else None


def headless_steps(path: Path, steps: int) -> float:
    """Median `DebugSession.step_over` alone (no window): the kernels' share of a step."""
    from tflite_viewer.interpreter.session import DebugSession
    s = DebugSession(path)
    s.step_over()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        stop = s.step_over()
        times.append(time.perf_counter() - t0)
        if stop.state != "paused":
            break
    return statistics.median(times)


def step_latency(path: Path, steps: int, tab: int = 0) -> tuple[float, int, float]:
    """Median wall time of a step, the op count, and the median CPU time the GUI thread
    spent on it (what a loaded machine cannot inflate: the wall time also waits for the
    cores other processes hold).  ``tab``: the Tensor panel's tab in front (0 Overview:
    statistics and histogram, 2 Values: the grid)."""
    w = _window(path)
    w.tensor_panel.tabs.setCurrentIndex(tab)
    dbg = w.debugger
    dbg.step_over_action.trigger()
    stop = _until_stop(dbg)
    times, cpu = [], []
    for _ in range(steps):
        cur = stop.current
        if cur is None:
            break
        op = w.model.subgraphs[cur[0]].operators[cur[1]]
        out = next((t for t in op.outputs if t >= 0), None)
        if out is not None:  # the inspector follows the op's output (selected beforehand)
            w.tensor_panel.show_tensor(w.model.subgraphs[cur[0]].tensors[out])
            deadline = time.perf_counter() + 10
            while (cur[0], out) not in dbg.snapshots and time.perf_counter() < deadline:
                make_app().processEvents()
        c0, t0 = time.thread_time(), time.perf_counter()
        dbg.step_over_action.trigger()
        stop = _until_stop(dbg)
        make_app().processEvents()  # the canvas's pending repaint (of what changed)
        times.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    n = len(w.model.subgraphs[0].operators)
    dbg.shutdown()
    w.close()
    return statistics.median(times), n, statistics.median(cpu)


def continue_vs_invoke(path: Path, rounds: int) -> tuple[float, float]:
    model_inputs = None
    interp = Interpreter(path)
    arrays, _ = complete_inputs(interp.model, {}, 0)
    model_inputs = positional(interp.model, arrays)
    headless = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        interp.invoke(model_inputs)
        headless.append(time.perf_counter() - t0)
    w = _window(path)
    dbg = w.debugger
    dbg.step_over_action.trigger()  # the session exists (its interpreter built) ...
    _until_stop(dbg)
    window = []
    for _ in range(rounds):
        dbg.stop_action.trigger()  # ... back to ready, then F5 to the end
        _until_stop(dbg)
        t0 = time.perf_counter()
        dbg.continue_action.trigger()
        stop = _until_stop(dbg)
        window.append(time.perf_counter() - t0)
        assert stop is not None and stop.state == "finished", stop
    dbg.shutdown()
    w.close()
    return min(headless), min(window)


def responsiveness(path: Path) -> tuple[float, float]:
    """The longest gap between ticks of a 5 ms QTimer on the GUI thread while F5 runs the
    model to the end on the worker thread (the event loop's longest block), and the run's
    time."""
    w = _window(path)
    dbg = w.debugger
    dbg.step_over_action.trigger()
    _until_stop(dbg)
    dbg.stop_action.trigger()
    _until_stop(dbg)
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start()
    t0 = time.perf_counter()
    dbg.continue_action.trigger()
    _until_stop(dbg)
    seconds = time.perf_counter() - t0
    timer.stop()
    gaps = [b - a for a, b in zip([t0] + ticks, ticks)]
    dbg.shutdown()
    w.close()
    return max(gaps) if gaps else seconds, seconds


def session_overhead(path: Path, rounds: int) -> dict[str, float]:
    """Best-of-``rounds`` CPU seconds (this thread's) of invoke, of the session's Continue
    from ready, of the run stepped op by op, and of invoke with a progress callback,
    alternating; and the ops a run runs."""
    from tflite_viewer.interpreter.session import DebugSession
    s = DebugSession(path)
    interp = Interpreter(path)
    inputs = dict(s.inputs)
    reported = Interpreter(path)
    reported.set_progress(lambda p: None)

    def invoke():
        interp.invoke(inputs)

    def progress():
        reported.invoke(inputs)

    def continue_():
        s.stop()
        assert s.continue_().state == "finished"

    def stepped():
        s.stop()
        while s.step_over().state == "paused":
            pass

    best = {name: float("inf") for name in ("invoke", "continue", "stepped", "progress")}
    for fn in (invoke, progress, continue_, stepped):  # warm: caches, bound plans
        fn()
    for _ in range(rounds):
        for name, fn in (("invoke", invoke), ("continue", continue_), ("stepped", stepped),
                         ("progress", progress)):
            t0 = time.thread_time()
            fn()
            best[name] = min(best[name], time.thread_time() - t0)
    best["ops"] = s.ops_run
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--blas-threads", type=int, default=None,
                    help="BLAS threads (set before numpy loads; 1 on a shared machine)")
    args = ap.parse_args(argv)
    make_app()
    print("load average at start: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print("Step latency (F10 -> canvas and inspector updated), median:")
    palm = CORPUS / "palm_detection_lite.tflite"
    med, n, cpu = step_latency(palm, args.steps)
    print(f"  palm_detection_lite ({n} ops): {med * 1e3:.1f} ms, GUI thread CPU {cpu * 1e3:.1f} ms "
          f"(the session's step alone, no window: {headless_steps(palm, args.steps) * 1e3:.1f} ms)")
    med, n, cpu = step_latency(palm, args.steps, tab=2)
    print(f"  palm_detection_lite, the Values tab in front: {med * 1e3:.1f} ms, GUI thread CPU "
          f"{cpu * 1e3:.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "residual_20000.tflite"
        big.write_bytes(residual_model(20_000))
        med, n, cpu = step_latency(big, args.steps)
        print(f"  synthetic residual_model ({n:,} ops): {med * 1e3:.1f} ms, GUI thread CPU "
              f"{cpu * 1e3:.1f} ms (session alone: {headless_steps(big, args.steps) * 1e3:.1f} ms)")
    print("Continue to the end vs headless invoke (best of rounds):")
    for name in ("yamnet_audio_classifier_with_metadata", "ssd_mobilenet_v1"):
        head, win = continue_vs_invoke(CORPUS / f"{name}.tflite", args.rounds)
        budget = 1.3 * head + 0.1
        print(f"  {name}: window {win * 1e3:.1f} ms, invoke {head * 1e3:.1f} ms "
              f"(ratio {win / head:.2f}; budget 1.3x + 100 ms = {budget * 1e3:.0f} ms)")
    print("The session without a window against invoke (CPU time, best of rounds, "
          "alternating):")
    for name in ("palm_detection_lite", "ssd_mobilenet_v1", "control_flow"):
        b = session_overhead(CORPUS / f"{name}.tflite", max(args.rounds, 5))
        ops, head = b["ops"], b["invoke"]
        print(f"  {name} ({ops:,} ops): invoke {head * 1e3:.1f} ms; Continue "
              f"{b['continue'] * 1e3:.1f} ms (+{(b['continue'] - head) / ops * 1e3:.3f} ms/op); "
              f"stepped {b['stepped'] * 1e3:.1f} ms (+{(b['stepped'] - head) / ops * 1e3:.3f} "
              f"ms/op); invoke with progress {b['progress'] / head:.3f}x")
    print("Event loop while F5 runs on the worker thread (5 ms timer, longest gap):")
    for name in ("ssd_mobilenet_v1", "palm_detection_lite"):
        gap, run = responsiveness(CORPUS / f"{name}.tflite")
        print(f"  {name}: longest gap {gap * 1e3:.1f} ms during a {run * 1e3:.0f} ms run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
