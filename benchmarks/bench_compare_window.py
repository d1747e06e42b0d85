"""Opening a comparison in the window against opening one model.

Target (issue 29): showing A and B side by side (File > Compare With) within 2x the time
the window takes to show A alone.  Each round, in a fresh window (offscreen Qt):

    one       open_path(A) until the window shows A (parse, layout, scene)
    compare   open_path(A), then Compare With B until both canvases, the colours and the
              Differences dock are shown (B read, matched, diffed, laid out on a worker)

alternating, so that load on the machine hits both alike; medians and their ratio are
printed for mobilenet_v2 float vs int8 and for two 20,000-op synthetic models, one with
100 random edits (as benchmarks/bench_diff.py makes them).

    python benchmarks/bench_compare_window.py [--repeat 5] [--ops 20000] [--no-synthetic]

Figures are printed, never asserted.
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
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tflite_viewer.ui  # noqa: E402,F401 - PySide6 workaround before Qt calls
from PySide6.QtCore import QSettings  # noqa: E402


def _window():
    from tflite_viewer.ui.app import make_app
    from tflite_viewer.ui.errors import ErrorReporter
    from tflite_viewer.ui.main_window import MainWindow

    app = make_app()
    settings = QSettings(str(Path(tempfile.gettempdir()) / "bench_compare.ini"),
                         QSettings.Format.IniFormat)
    w = MainWindow(settings=settings, errors=ErrorReporter(interactive=False),
                   remember_layout=False)
    w.resize(1400, 900)
    w.show()
    app.processEvents()
    return app, w


def _close(w) -> None:
    from tflite_viewer.ui.app import drain_workers
    w.close()
    drain_workers()


def time_open(a: Path) -> float:
    app, w = _window()
    start = time.perf_counter()
    assert w.open_path(a, wait=True)
    app.processEvents()
    w.grab()  # painted
    dt = time.perf_counter() - start
    _close(w)
    return dt


def time_compare(a: Path, b: Path) -> float:
    app, w = _window()
    start = time.perf_counter()
    assert w.open_path(a, wait=True)
    done: list[float] = []
    w.compare.computed.connect(lambda: done.append(time.perf_counter()))
    w.compare.compare_with(b)
    while not done and time.perf_counter() - start < 120:
        app.processEvents()
        time.sleep(0.001)
    app.processEvents()
    w.grab()
    dt = time.perf_counter() - start
    assert w.compare.state.diff is not None, w.compare.state.status
    _close(w)
    return dt


def measure(name: str, a: Path, b: Path, repeat: int) -> None:
    ones, pairs = [], []
    for _ in range(repeat):
        ones.append(time_open(a))
        pairs.append(time_compare(a, b))
    one, pair = statistics.median(ones), statistics.median(pairs)
    print(f"{name:<36} one {one:6.2f} s   compare {pair:6.2f} s   ratio {pair / one:4.2f}x "
          f"(target 2x: {'met' if pair <= 2 * one else 'NOT met'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--no-synthetic", action="store_true")
    args = parser.parse_args()
    models = ROOT / "tests" / "data" / "models"
    measure("mobilenet_v2 float vs int8", models / "mobilenet_v2_float.tflite",
            models / "mobilenet_v2_int8.tflite", args.repeat)
    if not args.no_synthetic:
        from benchmarks.synthetic_models import residual_model
        from tests.diff.edit_oracle import EditGenerator
        tmp = Path(tempfile.mkdtemp(prefix="bench_compare_"))
        a, b = tmp / "a.tflite", tmp / "b.tflite"
        a.write_bytes(residual_model(args.ops))
        b.write_bytes(EditGenerator(a, 0).run(100).edited.data.tobytes())
        measure(f"{args.ops} ops vs 100 edits of it", a, b, args.repeat)
        a.unlink()
        b.unlink()
        tmp.rmdir()


if __name__ == "__main__":
    main()
