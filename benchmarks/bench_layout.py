"""Layered layout benchmark: build + layout wall time and drawing quality.

Targets (docs/ARCHITECTURE.md, "Performance targets"): a 5,000-op graph laid out within 1 s
and 20,000 ops within 4 s, growing close to linearly. Graphs come from
``benchmarks.synthetic_graphs.residual_dag`` (a trunk with residual skips, inception
blocks and parallel edges). Quality is put next to two references on the same graphs:
``naive_layout`` (one row per topological generation, no crossing reduction, no
straightening) and, if the ``dot`` binary is installed, Graphviz dot.

    python benchmarks/bench_layout.py [--sizes 1000 5000 20000] [--repeat 3] [--no-dot]
                                      [--adapter-rounds 5] [--no-adapter]
                                      [--adapter-python VENV/bin/python]

The last table is the anchor of the opening target: ``tflite-viewer layout FILE -o
OUT.json`` as a whole process (start-up, imports and writing the JSON included) against
Model Explorer's C++ adapter (``ai-edge-model-explorer-adapter``, a benchmark-only
dependency: ``pip install ai-edge-model-explorer-adapter==0.2.1``, in this Python or in
the one ``--adapter-python`` names) converting the same synthetic .tflite to its JSON,
which is the work it does before any layout: its conversion alone and its whole process
(start-up, import, conversion). They alternate, round by round, in fresh processes;
medians are compared.

Figures are printed, never asserted: the tests check behaviour, not speed.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import networkx as nx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tflite_viewer.graph.layout import EdgePath, Layout, NodeBox, default_size, layout, naive_layout  # noqa: E402
from tflite_viewer.graph.metrics import count_crossings, count_overlaps, total_edge_length  # noqa: E402
from benchmarks.synthetic_graphs import residual_dag  # noqa: E402

TARGETS = {5000: 1.0, 20000: 4.0}


def timed(fn: Callable, *args, **kwargs) -> tuple[object, float]:
    gc.collect()
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def measure(n: int, repeat: int) -> dict:
    """Median build and layout times over ``repeat`` runs, and the last run's quality."""
    builds, lays = [], []
    for _ in range(repeat):
        graph, t_build = timed(residual_dag, n)
        result, t_layout = timed(layout, graph)
        builds.append(t_build)
        lays.append(t_layout)
    build, lay = statistics.median(builds), statistics.median(lays)
    return {
        "n": n,
        "graph": graph,
        "build": build,
        "layout": lay,
        "total": build + lay,
        "crossings": result.crossings,
        "length": total_edge_length(result),
        "overlaps": count_overlaps(result),
        "width": result.width,
        "geometric": count_crossings(result),
    }


def dot_layout(graph: nx.MultiDiGraph, layer_gap: float = 48.0, node_gap: float = 24.0) -> Layout:
    """Graphviz dot on the same graph and box sizes, read back as a Layout.

    dot draws edges as B-splines; each cubic piece is sampled at 8 points so crossings and
    lengths are measured on (nearly) the curve dot would draw.
    """
    ids = {node: f"n{i}" for i, node in enumerate(graph.nodes)}
    back = {v: k for k, v in ids.items()}
    lines = [
        "digraph G {",
        f"ranksep={layer_gap / 72}; nodesep={node_gap / 72};",
        'node [shape=box, fixedsize=true, label=""];',
    ]
    for node, attrs in graph.nodes(data=True):
        w, h = default_size(node, attrs)
        lines.append(f"{ids[node]} [width={w / 72}, height={h / 72}];")
    lines += [f"{ids[u]} -> {ids[v]};" for u, v in graph.edges()]
    lines.append("}")
    out = subprocess.run(["dot", "-Tplain"], input="\n".join(lines), capture_output=True, text=True, check=True).stdout
    nodes: dict = {}
    edges: list[EdgePath] = []
    height = width = 0.0
    t = np.linspace(0.0, 1.0, 9)[1:, None]
    for line in out.splitlines():
        f = line.split()
        if f[0] == "graph":
            width, height = float(f[2]) * 72, float(f[3]) * 72
        elif f[0] == "node":
            node = back[f[1]]
            x, y, w, h = (float(v) * 72 for v in f[2:6])
            nodes[node] = NodeBox(node, graph.nodes[node].get("kind", "op"), x - w / 2, height - y - h / 2, w, h, 0)
        elif f[0] == "edge":
            k = int(f[3])
            p = np.array([[float(f[4 + 2 * i]) * 72, height - float(f[5 + 2 * i]) * 72] for i in range(k)])
            samples = [p[:1]]
            for i in range(0, k - 3, 3):
                p0, p1, p2, p3 = p[i : i + 4]
                samples.append((1 - t) ** 3 * p0 + 3 * (1 - t) ** 2 * t * p1 + 3 * (1 - t) * t**2 * p2 + t**3 * p3)
            pts = tuple(map(tuple, np.concatenate(samples).tolist()))
            edges.append(EdgePath(back[f[1]], back[f[2]], len(edges), None, pts, False))
    return Layout(nodes, edges, 0, width, height)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-dot", action="store_true")
    parser.add_argument("--adapter-rounds", type=int, default=5)
    parser.add_argument("--no-adapter", action="store_true")
    parser.add_argument("--adapter-only", action="store_true", help="only the table against the adapter")
    parser.add_argument("--adapter-python", default=sys.executable,
                        help="a Python with ai-edge-model-explorer-adapter (default: this one)")
    args = parser.parse_args()
    if args.adapter_only:
        versus_adapter([n for n in args.sizes if n >= 5000] or args.sizes, args.adapter_rounds, args.adapter_python)
        return

    rows = [measure(n, args.repeat) for n in args.sizes]
    print(f"layout of residual_dag(n), median of {args.repeat} runs (seconds)")
    header = f"{'n ops':>7} {'build':>7} {'layout':>7} {'total':>7} {'target':>7} {'crossings':>9} {'edge length':>12} {'overlaps':>8} {'width':>7}"
    print(header)
    for r in rows:
        target = TARGETS.get(r["n"])
        mark = "" if target is None else f"{'ok' if r['total'] <= target else 'MISS'} {target:g}"
        print(
            f"{r['n']:>7} {r['build']:>7.3f} {r['layout']:>7.3f} {r['total']:>7.3f} {mark:>7} "
            f"{r['crossings']:>9} {r['length']:>12.0f} {r['overlaps']:>8} {r['width']:>7.0f}"
        )
    for a, b in zip(rows, rows[1:]):
        growth = (b["total"] / b["n"]) / (a["total"] / a["n"])
        print(f"time per op, {b['n']} vs {a['n']}: x{growth:.2f} (1.00 = linear)")
    mismatch = [r["n"] for r in rows if r["geometric"] != r["crossings"]]
    print(f"crossings recounted from the drawing: {'same' if not mismatch else f'DIFFERENT at {mismatch}'}")

    print("\nreference on the same graphs")
    print(f"{'n ops':>7} {'layout':>14} {'time':>7} {'crossings':>9} {'edge length':>12} {'width':>7}")
    dot_n = 1000 if 1000 in args.sizes else min(args.sizes)
    for r in rows:
        if r["n"] > 5000:
            continue
        print(f"{r['n']:>7} {'this layout':>14} {r['layout']:>7.3f} {r['crossings']:>9} {r['length']:>12.0f} {r['width']:>7.0f}")
        naive, t_naive = timed(naive_layout, r["graph"])
        print(
            f"{r['n']:>7} {'naive':>14} {t_naive:>7.3f} {naive.crossings:>9} "
            f"{total_edge_length(naive):>12.0f} {naive.width:>7.0f}"
        )
        if r["n"] == dot_n and not args.no_dot:
            if shutil.which("dot") is None:
                print("dot: not installed")
            else:
                dot, t_dot = timed(dot_layout, r["graph"])
                print(
                    f"{r['n']:>7} {'graphviz dot':>14} {t_dot:>7.3f} {count_crossings(dot):>9} "
                    f"{total_edge_length(dot):>12.0f} {dot.width:>7.0f}"
                )
    print("(dot's edges are splines, sampled; crossings of every layout are counted on its drawing)")
    corpus_quality(use_dot=not args.no_dot)
    if not args.no_adapter:
        versus_adapter([n for n in args.sizes if n >= 5000] or args.sizes, args.adapter_rounds, args.adapter_python)


# Model Explorer's default TFLite adapter ("TFLite adapter (Flatbuffer)") calls the direct
# flatbuffer converter (the MLIR one is its alternative); the script times the conversion.
_ADAPTER_SCRIPT = """
import sys, time
import ai_edge_model_explorer_adapter as a
a._ffi.get_lib()
fn = getattr(a, sys.argv[2])
t, c = time.perf_counter(), time.process_time()
out = fn(a.VisualizeConfig(), sys.argv[1])
print(time.perf_counter() - t, time.process_time() - c, len(out))
"""


def _fresh_env(pycache: Path) -> dict:
    """The environment of an installed tool: bytecode cached (in ``pycache``), our code first."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    return env


def adapter_seconds(path: Path, function: str = "ConvertFlatbufferDirectlyToJson", env: dict | None = None,
                    python: str = sys.executable) -> tuple[float, float, float]:
    """The adapter converting ``path`` to its JSON in a fresh process: (conversion wall
    seconds, conversion CPU seconds of all its threads, whole-process wall seconds)."""
    cmd = [python, "-c", _ADAPTER_SCRIPT, str(path), function]
    start = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), time.perf_counter() - start


def _child_cpu() -> float:
    """CPU seconds (user + system) used so far by finished child processes."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def versus_adapter(sizes: list[int], rounds: int, python: str = sys.executable) -> None:
    """``tflite-viewer layout -o`` (whole process) vs the adapter's conversion and its
    whole process, alternating."""
    import tempfile

    from benchmarks.synthetic_models import residual_model

    print("\ntflite-viewer layout -o OUT.json (whole process) vs Model Explorer adapter 0.2.1")
    probe = subprocess.run([python, "-c", "import ai_edge_model_explorer_adapter"], capture_output=True)
    if probe.returncode != 0:
        print(f"ai-edge-model-explorer-adapter is not installed in {python}: "
              "pip install ai-edge-model-explorer-adapter==0.2.1")
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench_layout_"))
    env = _fresh_env(tmp / "pycache")
    print(f"median of {rounds} alternating rounds, seconds; residual_model(n) .tflite files;"
          " CPU = user+system seconds (ours: the whole process; adapter: its conversion, all threads)")
    print(f"{'n ops':>7} {'ours':>7} {'adapter':>8} {'ratio':>6} {'adapter process':>16} {'ratio':>6}"
          f" {'ours CPU':>9} {'adapter CPU':>12} {'CPU ratio':>9} {'crossings':>10}")
    for n in sizes:
        path = tmp / f"residual_{n}.tflite"
        path.write_bytes(residual_model(n))
        ours_cmd = [sys.executable, "-m", "tflite_viewer", "layout", str(path), "-o", str(tmp / "layout.json")]
        summary = subprocess.run(ours_cmd, env=env, capture_output=True, text=True, check=True).stdout  # warm-up
        ours, ours_cpu, theirs, theirs_cpu, theirs_whole = [], [], [], [], []
        for _ in range(rounds):
            start, cpu0 = time.perf_counter(), _child_cpu()
            subprocess.run(ours_cmd, env=env, capture_output=True, check=True)
            ours.append(time.perf_counter() - start)
            ours_cpu.append(_child_cpu() - cpu0)
            wall, cpu, whole = adapter_seconds(path, env=env, python=python)
            theirs.append(wall)
            theirs_cpu.append(cpu)
            theirs_whole.append(whole)
        a, b, w = statistics.median(ours), statistics.median(theirs), statistics.median(theirs_whole)
        ac, bc = statistics.median(ours_cpu), statistics.median(theirs_cpu)
        crossings = summary.split(" crossings")[0].rsplit(" ", 1)[-1]
        print(f"{n:>7} {a:>7.3f} {b:>8.3f} {a / b:>6.2f} {w:>16.3f} {a / w:>6.2f}"
              f" {ac:>9.3f} {bc:>12.3f} {ac / bc:>9.2f} {crossings:>10}")
    print("ratio = ours / adapter (direct flatbuffer converter, Model Explorer's default for .tflite);"
          " target <= 1.00 against its whole process")


def corpus_quality(use_dot: bool) -> None:
    """Crossings, edge length and overlaps of every corpus subgraph against naive (and dot)."""
    from pathlib import Path

    from tflite_viewer.graph.build import build_graph
    from tflite_viewer.graph.metrics import check_layout
    from tflite_viewer.model import load_model

    models = sorted((Path(__file__).resolve().parents[1] / "tests" / "data" / "models").glob("*.tflite"))
    have_dot = use_dot and shutil.which("dot") is not None
    print("\ncorpus models (every subgraph): this layout vs naive" + (" vs dot" if have_dot else ""))
    print(f"{'model/subgraph':44s} {'ops':>5} {'cross':>6} {'naive':>6} {'dot':>6} "
          f"{'length':>9} {'naive len':>9} {'overlaps':>8}")
    totals = [0, 0, 0]
    for path in models:
        model = load_model(path)
        for sg in model.subgraphs:
            graph = build_graph(model, sg.index)
            ours = layout(graph)
            naive = naive_layout(graph)
            problems = check_layout(ours, graph)
            dot = count_crossings(dot_layout(graph)) if have_dot and graph.number_of_nodes() > 1 else None
            totals[0] += ours.crossings
            totals[1] += naive.crossings
            totals[2] += dot or 0
            print(f"{(path.stem[:36] + '/' + str(sg.index)):44s} {len(sg.operators):>5} "
                  f"{ours.crossings:>6} {naive.crossings:>6} {'' if dot is None else dot:>6} "
                  f"{total_edge_length(ours):>9.0f} {total_edge_length(naive):>9.0f} "
                  f"{count_overlaps(ours) + len([p for p in problems if 'overlap' in p]):>8}")
    print(f"{'total':44s} {'':>5} {totals[0]:>6} {totals[1]:>6} {totals[2] if have_dot else '':>6}")


if __name__ == "__main__":
    main()
