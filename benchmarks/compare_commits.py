"""HEAD against a base commit on the interpreter, open and edit benchmarks, in one run.

Issue 15 asks that a refactor show "no slowdown beyond run-to-run noise".  On a shared
machine two separate runs of a benchmark differ by more than most refactors change, so this
script measures both commits in the same run, alternately, and gives the noise beside it:

1. ``git worktree add --detach`` checks the base and the head commit out into a temporary
   directory (the working tree's uncommitted changes are not measured).
2. Three child processes stay up for the whole run: base, head and head again.  A child
   imports *that* checkout's own ``benchmarks`` modules and package (both exist at the
   base commit with the same measuring functions: ``bench_interpreter.inputs_for``/
   ``median_time``/``stepping_overhead``, ``bench_open.stages``, ``bench_edit.bench``).
   Every round asks the three in turn for each task (a model's invoke, an open, an edit),
   rotating who goes first, so the two sides of a ratio are measured seconds apart.
   LiteRT and the Model Explorer adapter, the anchors of the full benchmarks, are left out:
   here the anchor is the other commit.
3. Per figure: the median over rounds of each side, the ratio HEAD/base of those medians
   and the median of the per-round (paired) ratios, and the same for A/A: the second HEAD
   process against the first, which is what the machine's noise alone gives.  A slowdown
   shows as a HEAD/base ratio above 1 by more than the A/A spread.

    python benchmarks/compare_commits.py [--base 286a652] [--head HEAD] [--rounds 5]

Figures are printed, never asserted.  ``uptime``'s load is printed before and after.
"""
from __future__ import annotations

import argparse
import gc
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


def _tasks() -> list[str]:
    """The measurements, each one request to a child: it answers with one or more figures."""
    synthetic = f"residual_model({SYNTHETIC_OPS})"
    return ([f"interpreter {m}" for m in INTERPRETER_MODELS]
            + [f"open {m}" for m in OPEN_MODELS + [synthetic]]
            + [f"edit {m}" for m in EDIT_MODELS + [synthetic]])


class _Bench:
    """The child's side: the checkout's own benchmark functions, set up once per task."""

    def __init__(self, root: Path, runs: int) -> None:
        sys.path.insert(0, str(root))
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        from benchmarks import bench_edit, bench_interpreter, bench_open
        from benchmarks.synthetic_models import residual_model
        self.bi, self.bo, self.be = bench_interpreter, bench_open, bench_edit
        self.bo.make_app()
        self.models = root / "tests" / "data" / "models"
        self.synthetic = residual_model(SYNTHETIC_OPS)
        self.runs = runs
        self.interpreters: dict[str, object] = {}

    def source(self, label: str):
        return self.synthetic if label.startswith("residual_model(") else self.models / label

    def measure(self, task: str) -> dict[str, float]:
        kind, label = task.split(" ", 1)
        if kind == "interpreter":
            interp = self.interpreters.get(label)
            if interp is None:
                from tflite_viewer.interpreter import Interpreter
                from tflite_viewer.model import load_model
                model = load_model(self.models / f"{label}.tflite")
                interp = self.interpreters[label] = Interpreter(model)
                interp.set_inputs(self.bi.inputs_for(label, model))
            out = {f"interpreter invoke {label}": self.bi.median_time(interp.invoke, self.runs)}
            if label in ("mobilenet_v2_float", "sine_float"):
                overhead = self.bi.stepping_overhead(interp, 3)  # later: (seconds, ops)
                out[f"interpreter step overhead/op {label}"] = \
                    overhead[0] if isinstance(overhead, (tuple, list)) else overhead
            return out
        if kind == "open":
            r = self.bo.stages(self.source(label))
            return {f"open {stage} {label}": r[stage] for stage in ("parse", "layout", "scene", "total")}
        r = self.be.bench(self.source(label), self.runs, label)
        return {f"edit {what} {label}": r[key] / 1e3
                for key, what in (("ours", "option edit"), ("undo", "undo"), ("changes", "changes()"),
                                  ("slow", "rename"), ("serialize", "serialize"),
                                  ("reread", "re-read"))}


def child(args: argparse.Namespace) -> int:
    """Serve measurements of the checkout this process was started in: one task name a line
    on stdin, one ``JSON {figure: seconds}`` line back on stdout."""
    bench = _Bench(Path.cwd(), args.runs)
    print("READY", flush=True)
    for line in sys.stdin:
        gc.collect()  # the previous task's garbage must not land in this one's time
        print("JSON " + json.dumps(bench.measure(line.strip())), flush=True)
    return 0


class _Side:
    """A child process measuring one checkout, kept alive for the whole run so that base and
    HEAD can alternate figure by figure (seconds apart, not minutes)."""

    def __init__(self, name: str, checkout: Path, runs: int, log: Path) -> None:
        # One BLAS thread: on a shared two-core machine a second thread only adds noise.
        env = dict(os.environ, PYTHONPATH=str(checkout), QT_QPA_PLATFORM="offscreen",
                   OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.name, self.log = name, log
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child",
                                      "--runs", str(runs)], cwd=checkout, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=log.open("w"))
        self._expect("READY")

    def _expect(self, prefix: str) -> str:
        for line in self.proc.stdout:
            if line.startswith(prefix):
                return line[len(prefix):].strip()
        raise SystemExit(f"benchmark child {self.name} stopped:\n{self.log.read_text()[-2000:]}")

    def measure(self, task: str) -> dict[str, float]:
        self.proc.stdin.write(task + "\n")
        self.proc.stdin.flush()
        return json.loads(self._expect("JSON "))

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _checkout(rev: str, where: Path) -> Path:
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet",
                    str(where), rev], check=True)
    return where


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
    sides = ["base", "head", "head2"]
    samples: dict[str, dict[str, list[float]]] = {s: {} for s in sides}
    with tempfile.TemporaryDirectory(prefix="compare_commits_") as tmp:
        trees = {"base": _checkout(base, Path(tmp) / "base"),
                 "head": _checkout(head, Path(tmp) / "head")}
        children: dict[str, _Side] = {}
        try:
            for s in sides:
                children[s] = _Side(s, trees[s.rstrip("2")], args.runs, Path(tmp) / f"{s}.log")
            started = time.perf_counter()
            for r in range(args.rounds):
                for t, task in enumerate(_tasks()):
                    k = (r + t) % 3
                    for s in sides[k:] + sides[:k]:  # each side first, second, third in turn
                        for figure, value in children[s].measure(task).items():
                            samples[s].setdefault(figure, []).append(value)
                print(f"  round {r + 1}/{args.rounds} done ({time.perf_counter() - started:.0f} s,"
                      f" load {_load()})", flush=True)
        finally:
            for child_side in children.values():
                child_side.close()
            for tree in trees.values():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(tree)], check=False)
    _report(samples)
    print(f"load (1/5/15 min) after: {_load()}")
    return 0


def _report(samples: dict[str, dict[str, list[float]]]) -> None:
    """Per figure: medians of each side, HEAD/base of the medians, the median of the paired
    per-round ratios (the two measured seconds apart), and the same for A/A."""
    print(f"\n{'figure':52s} {'base ms':>9s} {'HEAD ms':>9s} {'HEAD/base':>9s} {'paired':>7s} "
          f"{'A/A':>6s} {'A/A pd':>7s}")
    ratios, paired, noise, noise_paired = [], [], [], []
    for key, b in samples["base"].items():
        h, h2 = samples["head"][key], samples["head2"][key]
        ratios.append(statistics.median(h) / statistics.median(b))
        noise.append(statistics.median(h2) / statistics.median(h))
        paired.append(statistics.median(x / y for x, y in zip(h, b)))
        noise_paired.append(statistics.median(x / y for x, y in zip(h2, h)))
        print(f"{key[:52]:52s} {statistics.median(b) * 1e3:9.3f} {statistics.median(h) * 1e3:9.3f} "
              f"{ratios[-1]:9.2f} {paired[-1]:7.2f} {noise[-1]:6.2f} {noise_paired[-1]:7.2f}")
    print(f"\ngeometric mean over {len(ratios)} figures: HEAD/base {_geomean(ratios):.3f} "
          f"(paired {_geomean(paired):.3f}); A/A HEAD/HEAD {_geomean(noise):.3f} "
          f"(paired {_geomean(noise_paired):.3f}), A/A per figure "
          f"{min(noise_paired):.2f} .. {max(noise_paired):.2f}")


def _geomean(xs: list[float]) -> float:
    """Geometric mean of the positive ratios (a step overhead is a difference of two times
    and can come out negative on a busy machine: such a figure is left out)."""
    positive = [x for x in xs if x > 0]
    return float(statistics.geometric_mean(positive)) if positive else float("nan")


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
