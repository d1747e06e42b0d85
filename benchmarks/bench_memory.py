"""`tflite-viewer memory` on large models: the whole process, start-up included.

Target (DESIGN.md, "Analysis"): `memory` of a 20,000-operator model within 1 s.  The model
is ``benchmarks.synthetic_models.residual_model`` (CONV_2D/ADD with skips: 20,000
operators, 20,003 tensors).  Each round runs, in fresh processes and alternating:

* the anchor: Python importing the reader and loading the same model's columns, which
  every subcommand pays before doing anything (`info` does more: it is printed too);
* ``memory MODEL --json -o OUT`` (TFLM, the default target), ``memory MODEL`` (text),
  ``memory MODEL --target litert --json -o OUT``.

Medians of wall time and of CPU time (user + system of the child) are printed, and each
figure over the anchor.  The machine is shared: CPU time is the steadier figure.

    python benchmarks/bench_memory.py [--ops 20000] [--rounds 5]

Figures are printed, never asserted: the tests check behaviour, not speed.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import child_process as cp  # noqa: E402
from benchmarks.synthetic_models import residual_model  # noqa: E402

ANCHOR = ("from tflite_viewer.model import load_model; import sys; m = load_model(sys.argv[1]); "
          "[(sg.columns, sg.tensor_columns) for sg in m.subgraphs]")


def run(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "residual.tflite"
        model.write_bytes(residual_model(args.ops))
        out = str(Path(tmp) / "out")
        cases = {
            "anchor: import + load_model": [py, "-c", ANCHOR, str(model)],
            "memory --json (tflm)": [py, "-m", "tflite_viewer", "memory", str(model), "--json",
                                     "-o", out],
            "memory (text, tflm)": [py, "-m", "tflite_viewer", "memory", str(model), "-o", out],
            "memory --target litert --json": [py, "-m", "tflite_viewer", "memory", str(model),
                                              "--target", "litert", "--json", "-o", out],
        }
        times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
        # an installed tool's environment: bytecode written once and reused (a process run
        # with PYTHONDONTWRITEBYTECODE compiles every module at every start)
        env = cp.fresh_env(Path(tmp) / "pycache", blas_threads=None)
        run(cases["memory --json (tflm)"], env)  # warm the file cache and .pyc files
        for _ in range(args.rounds):
            for name, argv in cases.items():
                times[name].append(run(argv, env))
    anchor_wall = statistics.median(w for w, _ in times["anchor: import + load_model"])
    anchor_cpu = statistics.median(c for _, c in times["anchor: import + load_model"])
    print(f"{args.ops:,}-operator residual model, {args.rounds} rounds, medians:")
    print(f"{'':34s} {'wall s':>8s} {'cpu s':>8s} {'wall/anchor':>12s} {'cpu/anchor':>11s}")
    for name, values in times.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"{name:34s} {wall:8.3f} {cpu:8.3f} {wall / anchor_wall:12.2f} "
              f"{cpu / anchor_cpu:11.2f}")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
