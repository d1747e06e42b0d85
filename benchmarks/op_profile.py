"""What the Profile dock shows, headless: per-op times of runs through the debug session.

    python benchmarks/op_profile.py [MODEL] [--runs 15] [--top 5] [--blas-threads N]
                                    [--float-sums auto|reference|blas]

Runs MODEL (a corpus name or a path; default mobilenet_v2_float) to the end with
`DebugSession.continue_` ``--runs`` times on seeded inputs and prints the median time of the
slowest operators, the time of each operator type and of the whole run, and the denormal float32 values found in any tensor
after the last run.  Without ``--blas-threads`` numpy's BLAS uses its default (a thread per
core); the window sets one thread (`tflite_viewer.ui`), so comparing the two shows what that
choice is worth on this machine (issue 25, item 16).  Prints figures, asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import blas_threads  # noqa: E402

blas_threads.apply_from_argv()  # before numpy loads its BLAS

import numpy as np  # noqa: E402

from tflite_viewer.interpreter.session import DebugSession  # noqa: E402
from tflite_viewer.model import load_model  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "models"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default="mobilenet_v2_float")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--op", type=int, action="append", default=[],
                    help="also print this operator of subgraph 0 (repeatable)")
    ap.add_argument("--blas-threads", type=int, default=None)
    ap.add_argument("--float-sums", default="auto", choices=("auto", "reference", "blas"))
    args = ap.parse_args()
    path = Path(args.model)
    if not path.exists():
        path = CORPUS / f"{args.model}.tflite"
    model = load_model(path)
    session = DebugSession(model, float_sums=args.float_sums)
    session.continue_()  # warm-up: kernels' caches, BLAS start-up
    runs = []
    for _ in range(args.runs):
        runs.append(dict(session.continue_().op_times))
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    total = statistics.median(sum(r.values()) for r in runs)
    print(f"{path.name}: BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}, "
          f"float sums {session.interpreter.float_sums}, load {os.getloadavg()[0]:.2f}, "
          f"{args.runs} runs; whole run {total * 1e3:.2f} ms")
    by_type: dict[str, float] = {}
    for (sg, op), sec in med.items():
        name = model.subgraphs[sg].operators[op].name
        by_type[name] = by_type.get(name, 0.0) + sec
    print("  by type: " + ", ".join(f"{name} {sec * 1e3:.2f} ms" for name, sec in
                                    sorted(by_type.items(), key=lambda kv: -kv[1])[:6]))
    shown = sorted(med.items(), key=lambda kv: -kv[1])[:args.top]
    shown += [((0, k), med[(0, k)]) for k in args.op if (0, k) in med and ((0, k), med[(0, k)]) not in shown]
    for (sg, op), sec in shown:
        name = model.subgraphs[sg].operators[op].name
        print(f"  s{sg} op {op:4d} {name:20s} {sec * 1e3:8.3f} ms  {100 * sec / total:5.1f} %")
    tiny = np.finfo(np.float32).tiny
    denormal = 0
    for sg in range(len(model.subgraphs)):
        for t in range(len(model.subgraphs[sg].tensors)):
            v = session.interpreter.tensor(sg, t)
            if isinstance(v, np.ndarray) and v.dtype == np.float32:
                denormal += int(np.count_nonzero((v != 0) & (np.abs(v) < tiny)))
    print(f"  denormal float32 values in the tensors: {denormal}")


if __name__ == "__main__":
    main()
