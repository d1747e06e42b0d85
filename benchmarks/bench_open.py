"""Opening benchmark: parse + graph + layout + scene, and how responsive the window stays.

Targets (docs and issue 17): the window shows a 20,000-op model in under 1.5 s, and no later
than Model Explorer's C++ adapter (``ai-edge-model-explorer-adapter`` 0.2.1, benchmark-only)
takes to convert it to JSON; the last table runs that adapter on the same files.
Stages, each timed separately:

    parse   load_model (mmap + verify + checks)
    layout  graph.build + labels + graph.layout (ui.state.scene_data.build_scene_data)
    scene   GraphScene.set_data (the batch items)
    paint   first paint of an 1200x800 view, fitted and at 100 %

For synthetic .tflite files (benchmarks/synthetic_models.residual_model) and for the corpus
models; residual_dag graphs give the graph part alone.  The last table opens the files in
a real MainWindow asynchronously and reports the longest stall of the event loop (a 5 ms
timer's worst gap) while the worker parses and lays out.

    python benchmarks/bench_open.py [--sizes 5000 20000] [--repeat 3] [--no-corpus]

``--big [DIR]`` measures the > 2 GB decoder of big_decoder.py and its int8 and int4 forms
(written to DIR when missing) as whole processes, alternating: the window opening the file
(seconds until the graph is shown, then the resident memory once every background check
of the opened model has finished, and the process's peak), Model Explorer's adapter
converting it (``--adapter-python``: a Python with ai-edge-model-explorer-adapter; it is a
benchmark-only dependency) and LiteRT loading it (Interpreter + allocate_tensors).  The
issue-28 targets: shown within 2 s, under 600 MB resident after opening.

    python benchmarks/bench_open.py --big /tmp/big --rounds 3 [--adapter-python VENV/bin/python]

Figures are printed, never asserted: the tests check behaviour, not speed.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tflite_viewer.ui  # noqa: E402,F401 - PySide6 6.12 workaround before Qt calls
from PySide6.QtCore import QElapsedTimer, QSettings, QTimer  # noqa: E402
from PySide6.QtGui import QImage, QPainter  # noqa: E402

from benchmarks.bench_layout import adapter_seconds  # noqa: E402
from benchmarks.synthetic_models import residual_model  # noqa: E402
from benchmarks.synthetic_graphs import residual_dag  # noqa: E402
from tflite_viewer.model import load_model  # noqa: E402
from tflite_viewer.ui import style  # noqa: E402
from tflite_viewer.ui.app import make_app  # noqa: E402
from tflite_viewer.ui.graph_scene import GraphScene  # noqa: E402
from tflite_viewer.ui.graph_view import GraphView  # noqa: E402
from tflite_viewer.ui.state.scene_data import build_scene_data  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "models"


def _paint(view: GraphView) -> float:
    image = QImage(view.viewport().size(), QImage.Format.Format_ARGB32_Premultiplied)
    start = time.perf_counter()
    painter = QPainter(image)
    view.render(painter)
    painter.end()
    return time.perf_counter() - start


def stages(source, graph=None) -> dict[str, float]:
    """Seconds per stage for a model (path or bytes) or, with ``graph``, a bare graph."""
    measure = style.text_measure()
    t0 = time.perf_counter()
    model = load_model(source) if graph is None else None
    t1 = time.perf_counter()
    data = build_scene_data(model, 0, measure, graph=graph)
    t2 = time.perf_counter()
    scene = GraphScene()
    scene.set_data(data)
    t3 = time.perf_counter()
    view = GraphView(scene)
    view.resize(1200, 800)
    view.fit_all()
    fit = _paint(view)
    view.set_zoom(1.0)
    view.centerOn(data.width / 2, data.height / 2)
    full = _paint(view)
    n_ops = sum(1 for lab in data.labels if lab.kind == "op")
    return {"ops": n_ops, "parse": t1 - t0, "layout": t2 - t1, "scene": t3 - t2,
            "total": t3 - t0, "paint_fit": fit, "paint_100": full, "items": len(scene.items())}


def best(fn, repeat: int) -> dict[str, float]:
    runs = [fn() for _ in range(repeat)]
    return {k: min(r[k] for r in runs) if isinstance(runs[0][k], float) else runs[0][k] for k in runs[0]}


def row(name: str, r: dict) -> str:
    return (f"{name:<44} {r['ops']:>6} {r['parse'] * 1e3:>8.1f} {r['layout'] * 1e3:>8.1f} "
            f"{r['scene'] * 1e3:>8.1f} {r['total'] * 1e3:>8.1f} {r['paint_fit'] * 1e3:>8.1f} "
            f"{r['paint_100'] * 1e3:>8.1f} {r['items']:>6}")


HEADER = (f"{'model':<44} {'ops':>6} {'parse':>8} {'layout':>8} {'scene':>8} {'total':>8} "
          f"{'paint@fit':>9} {'paint@1':>8} {'items':>6}\n" + "-" * 112)


def responsiveness(path: Path) -> tuple[float, float]:
    """(seconds until the window shows the model, worst event-loop gap) for an async open."""
    from tflite_viewer.ui.errors import ErrorReporter
    from tflite_viewer.ui.main_window import MainWindow

    app = make_app()
    settings = QSettings(str(Path(os.environ.get("TMPDIR", "/tmp")) / "bench_open.ini"),
                         QSettings.Format.IniFormat)
    window = MainWindow(settings=settings, errors=ErrorReporter(interactive=False))
    window.resize(1400, 900)
    window.show()
    app.processEvents()
    gaps: list[float] = []
    clock = QElapsedTimer()
    timer = QTimer()
    timer.setInterval(5)

    def tick() -> None:
        gaps.append(clock.restart() / 1000)

    timer.timeout.connect(tick)
    done: list[float] = []
    window.modelOpened.connect(lambda _m: done.append(time.perf_counter()))
    start = time.perf_counter()
    clock.start()
    timer.start()
    window.open_path(path)
    while not done and time.perf_counter() - start < 60:
        app.processEvents()
        time.sleep(0.001)
    timer.stop()
    window.close()
    from tflite_viewer.ui.app import drain_workers
    drain_workers()  # its background shape check must not outlive the process's Qt objects
    return (done[0] - start if done else float("nan")), max(gaps, default=0.0)


def _status_mb(field: str) -> float:
    """VmRSS or VmHWM of this process, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def open_child(path: Path) -> int:
    """One window opening ``path`` asynchronously, as a user's would: prints the seconds
    until it shows the graph, until every background check of the model has finished, and
    the resident memory then and at the peak."""
    from PySide6.QtCore import QThreadPool
    from tflite_viewer.ui.errors import ErrorReporter
    from tflite_viewer.ui.main_window import MainWindow

    app = make_app()
    settings = QSettings(str(Path(os.environ.get("TMPDIR", "/tmp")) / "bench_open_big.ini"),
                         QSettings.Format.IniFormat)
    window = MainWindow(settings=settings, errors=ErrorReporter(interactive=False))
    window.resize(1400, 900)
    window.show()
    app.processEvents()
    shown: list[float] = []
    window.modelOpened.connect(lambda _m: shown.append(time.perf_counter()))
    start = time.perf_counter()
    window.open_path(path)
    pool = QThreadPool.globalInstance()
    while time.perf_counter() - start < 600:
        app.processEvents()
        if shown and pool.activeThreadCount() == 0:
            app.processEvents()
            if pool.activeThreadCount() == 0:
                break
        time.sleep(0.002)
    checked = time.perf_counter()
    rss = _status_mb("VmRSS")
    print(f"OPEN shown {shown[0] - start if shown else float('nan'):.3f} checked "
          f"{checked - start:.3f} rss {rss:.1f} peak {_status_mb('VmHWM'):.1f}", flush=True)
    window.close()
    return 0


_LITERT_LOAD = """
import sys, warnings
from ai_edge_litert.interpreter import Interpreter, OpResolverType
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    li = Interpreter(model_path=sys.argv[1], experimental_op_resolver_type=
                     OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
li.allocate_tensors()
print(len(li.get_tensor_details()))
"""

_ADAPTER_CONVERT = """
import sys
import ai_edge_model_explorer_adapter as a
out = a.ConvertFlatbufferDirectlyToJson(a.VisualizeConfig(), sys.argv[1])
print(len(out))
"""


def big(directory: Path, rounds: int, adapter_python: str | None) -> None:
    """The > 2 GB decoder and its quantized forms: the window, the adapter and LiteRT, each
    a whole process, alternating (see the module docstring)."""
    import tempfile

    from benchmarks import child_process as cp

    paths = cp.ensure_big_models(directory)
    env = cp.fresh_env(Path(tempfile.mkdtemp(prefix="bench_open_pyc_")))
    print(f"Whole processes, median of {rounds} alternating rounds (after a warm-up): wall "
          "seconds and peak resident MB; ours: the window opening the file (shown = the "
          "graph on screen; after checks = resident MB once every background check ended)")
    print(f"{'model':<24} {'GB':>5} {'shown s':>8} {'checked s':>9} {'after checks':>12} "
          f"{'peak':>7} {'process s':>9} | {'adapter s':>9} {'peak':>7} | {'LiteRT s':>8} "
          f"{'peak':>7}")
    for form, path in paths.items():
        commands = {"ours": [sys.executable, str(Path(__file__)), "--open-child", str(path)],
                    "litert": [sys.executable, "-c", _LITERT_LOAD, str(path)]}
        if adapter_python:
            commands["adapter"] = [adapter_python, "-c", _ADAPTER_CONVERT, str(path)]
        runs = cp.alternate(commands, rounds, env)
        fields = [r.out.split("OPEN", 1)[1].split() for r in runs["ours"]]
        med = {k: statistics.median(float(f[f.index(k) + 1]) for f in fields)
               for k in ("shown", "checked", "rss", "peak")}
        line = (f"{path.name:<24} {path.stat().st_size / 1e9:>5.2f} {med['shown']:>8.2f} "
                f"{med['checked']:>9.2f} {med['rss']:>12.0f} {med['peak']:>7.0f} "
                f"{cp.median(runs['ours'], 'wall'):>9.2f} | ")
        if "adapter" in runs:
            line += (f"{cp.median(runs['adapter'], 'wall'):>9.2f} "
                     f"{cp.median(runs['adapter'], 'peak_mb'):>7.0f} | ")
        else:
            line += f"{'-':>9} {'-':>7} | "
        line += (f"{cp.median(runs['litert'], 'wall'):>8.2f} "
                 f"{cp.median(runs['litert'], 'peak_mb'):>7.0f}")
        print(line, flush=True)
    print("Targets (issue 28): shown within 2 s; under 600 MB resident after opening, "
          "background checks included")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--big", nargs="?", const=str(Path(os.environ.get("TMPDIR", "/tmp"))
                                                  / "tflite_viewer_big"), default=None,
                    metavar="DIR", help="the > 2 GB decoder and its int8 / int4 forms")
    ap.add_argument("--rounds", type=int, default=3, help="with --big: alternating rounds")
    ap.add_argument("--adapter-python", default=None,
                    help="with --big: a Python with ai-edge-model-explorer-adapter")
    ap.add_argument("--open-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.open_child:
        return open_child(Path(args.open_child))
    if args.big:
        big(Path(args.big), args.rounds, args.adapter_python)
        return 0
    make_app()
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    have_adapter = importlib.util.find_spec("ai_edge_model_explorer_adapter") is not None

    print("Times in ms (best of", args.repeat, "runs); paint = first paint of a 1200x800 view")
    print(HEADER)
    files = []
    for n in args.sizes:
        path = tmp / f"bench_open_residual_{n}.tflite"
        path.write_bytes(residual_model(n))
        files.append(path)
        print(row(f"synthetic residual_model({n}) .tflite", best(lambda: stages(path), args.repeat)))
    for n in args.sizes:
        graph = residual_dag(n)
        print(row(f"synthetic residual_dag({n}) graph only", best(lambda: stages(None, graph), args.repeat)))
    if not args.no_corpus:
        for path in sorted(CORPUS.glob("*.tflite")):
            print(row(path.name, best(lambda: stages(path), args.repeat)))

    print("\nAsync open in the window (worker thread): time to shown, worst event-loop gap,"
          " and Model Explorer's adapter converting the same file (alternating, medians)")
    for path in files:
        shown, gaps, adapter = [], [], []
        for _ in range(args.repeat):
            s, g = responsiveness(path)
            shown.append(s)
            gaps.append(g)
            if have_adapter:
                adapter.append(adapter_seconds(path))
        line = (f"  {path.name:<40} shown after {statistics.median(shown):6.2f} s, "
                f"worst gap {max(gaps) * 1e3:6.1f} ms")
        if adapter:
            a = statistics.median(adapter)
            line += f"; adapter {a:6.2f} s, ratio {statistics.median(shown) / a:.2f}"
        print(line)
    print("\nTargets: the window shows 20,000 ops in under 1.5 s; 5,000 ops in 1 s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
