"""HEAD against a base commit on the interpreter, open and edit benchmarks, in one run.

Issue 15 asks that a refactor show "no slowdown beyond run-to-run noise".  On a shared
machine two separate runs of a benchmark differ by more than most refactors change, so this
script measures both commits in the same run, alternately, and gives the noise beside it:

1. ``git worktree add --detach`` checks the base and the head commit out into a temporary
   directory (the working tree's uncommitted changes are not measured).
2. Each round runs one child process per side, in the order base, head, head again (the
   order rotates every round).  A child imports *that* checkout's own ``benchmarks``
   modules and package (both exist at the base commit with the same measuring functions:
   ``bench_interpreter.inputs_for``/``median_time``/``stepping_overhead``,
   ``bench_open.stages``, ``bench_edit.bench``) and prints its figures as JSON.
   LiteRT and the Model Explorer adapter, the anchors of the full benchmarks, are left out:
   here the anchor is the other commit.
3. Per figure: the median over rounds of each side, the ratio HEAD/base, and the A/A ratio
   of the second HEAD process against the first, which is what the machine's noise alone
   gives.  A slowdown shows as a HEAD/base ratio above 1 by more than the A/A spread.

    python benchmarks/compare_commits.py [--base 286a652] [--head HEAD] [--rounds 5]

Figures are printed, never asserted.  ``uptime``'s load is printed before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Quick settings: models whose runs take milliseconds to a few hundred, chosen to cover
# big convolutions, per-op overhead (sine), recurrent loops and integer kernels.
INTERPRETER_MODELS = ["mobilenet_v2_float", "sine_float", "lstm_float", "control_flow",
                      "mobilenet_v1_0.25_224_quant", "trained_lstm_int8", "small_cnn_dilated_int8"]
OPEN_MODELS = ["mobilenet_v2_float.tflite", "ssd_mobilenet_v1.tflite"]
EDIT_MODELS = ["mobilenet_v2_float.tflite", "palm_detection_lite.tflite"]
SYNTHETIC_OPS = 5000


def child(args: argparse.Namespace) -> int:
    """Measure the checkout this process was started in; print {figure: seconds} as JSON."""
    root = Path.cwd()
    sys.path.insert(0, str(root))
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    figures: dict[str, float] = {}
    models = root / "tests" / "data" / "models"

    from benchmarks import bench_interpreter as bi
    from tflite_viewer.interpreter import Interpreter
    from tflite_viewer.model import load_model
    for name in INTERPRETER_MODELS:
        model = load_model(models / f"{name}.tflite")
        interp = Interpreter(model)
        interp.set_inputs(bi.inputs_for(name, model))
        figures[f"interpreter invoke {name}"] = bi.median_time(interp.invoke, args.runs)
        if name in ("mobilenet_v2_float", "sine_float"):
            figures[f"interpreter step overhead/op {name}"] = bi.stepping_overhead(interp, 3)

    from benchmarks import bench_open as bo
    from benchmarks.synthetic_models import residual_model
    bo.make_app()
    sources = [(m, models / m) for m in OPEN_MODELS]
    sources.append((f"residual_model({SYNTHETIC_OPS})", residual_model(SYNTHETIC_OPS)))
    for label, source in sources:
        r = bo.stages(source)
        for stage in ("parse", "layout", "scene", "total"):
            figures[f"open {stage} {label}"] = r[stage]

    from benchmarks import bench_edit as be
    edit_sources = [(m, models / m) for m in EDIT_MODELS]
    edit_sources.append((f"residual_model({SYNTHETIC_OPS})", residual_model(SYNTHETIC_OPS)))
    for label, source in edit_sources:
        r = be.bench(source, args.runs, label)
        for key, what in (("ours", "option edit"), ("undo", "undo"), ("changes", "changes()"),
                          ("slow", "rename"), ("serialize", "serialize"), ("reread", "re-read")):
            figures[f"edit {what} {label}"] = r[key] / 1e3
    print("JSON " + json.dumps(figures))
    return 0


def _checkout(rev: str, where: Path) -> Path:
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet",
                    str(where), rev], check=True)
    return where


def _measure(checkout: Path, runs: int) -> dict[str, float]:
    # One BLAS thread: on a shared two-core machine a second thread only adds noise.
    env = dict(os.environ, PYTHONPATH=str(checkout), QT_QPA_PLATFORM="offscreen",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                           "--runs", str(runs)], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=1800)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("JSON ")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"benchmark child failed in {checkout}:\n{proc.stderr[-2000:]}")
    return json.loads(line[5:])


def _load() -> str:
    """The 1, 5 and 15 minute load averages (the machine is shared)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _rev(rev: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", rev],
                          capture_output=True, text=True, check=True).stdout.strip()


def compare(args: argparse.Namespace) -> int:
    base, head = _rev(args.base), _rev(args.head)
    print(f"base {base}, head {head}, {args.rounds} rounds, runs {args.runs}; "
          f"load (1/5/15 min) before: {_load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="compare_commits_") as tmp:
        trees = {"base": _checkout(base, Path(tmp) / "base"),
                 "head": _checkout(head, Path(tmp) / "head")}
        try:
            sides = ["base", "head", "head2"]
            results: dict[str, list[dict[str, float]]] = {s: [] for s in sides}
            started = time.perf_counter()
            for r in range(args.rounds):
                order = sides[r % 3:] + sides[:r % 3]
                for side in order:
                    results[side].append(_measure(trees[side.rstrip("2")], args.runs))
                print(f"  round {r + 1}/{args.rounds} done ({time.perf_counter() - started:.0f} s,"
                      f" load {_load()})", flush=True)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(tree)], check=False)
    _report(results)
    print(f"load (1/5/15 min) after: {_load()}")
    return 0


def _report(results: dict[str, list[dict[str, float]]]) -> None:
    print(f"\n{'figure':62s} {'base ms':>9s} {'HEAD ms':>9s} {'HEAD/base':>9s} "
          f"{'A/A':>6s} {'per-round HEAD/base':>20s}")
    ratios, noise = [], []
    for key in results["base"][0]:
        b = [r[key] for r in results["base"]]
        h = [r[key] for r in results["head"]]
        h2 = [r[key] for r in results["head2"]]
        ratio = statistics.median(h) / statistics.median(b)
        aa = statistics.median(h2) / statistics.median(h)
        per_round = [x / y for x, y in zip(h, b)]
        ratios.append(ratio)
        noise.append(aa)
        print(f"{key[:62]:62s} {statistics.median(b) * 1e3:9.3f} {statistics.median(h) * 1e3:9.3f} "
              f"{ratio:9.2f} {aa:6.2f} {min(per_round):9.2f} .. {max(per_round):6.2f}")
    print(f"\ngeometric mean HEAD/base over {len(ratios)} figures: {_geomean(ratios):.3f}; "
          f"A/A (HEAD/HEAD): {_geomean(noise):.3f}, A/A range {min(noise):.2f} .. {max(noise):.2f}")


def _geomean(xs: list[float]) -> float:
    return float(statistics.geometric_mean(xs))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="286a652")
    ap.add_argument("--head", default="HEAD")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5, help="timed calls per figure in a child")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    return child(args) if args.child else compare(args)


if __name__ == "__main__":
    raise SystemExit(main())
