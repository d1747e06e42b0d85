"""`tflite-viewer targets` on large models: the whole process against LiteRT's own answer.

Target (docs/ARCHITECTURE.md, "Performance targets"): ``targets`` of a 20,000-op model
within 1 s.  The anchor is what LiteRT itself does to answer one of the four questions:
``Interpreter(model_path=...)`` and ``allocate_tensors()`` with its default XNNPACK
delegate (the delegate's checks and LiteRT's partitioner, in C++), in a fresh process like
ours.  The two alternate, round by round; medians are compared.

Models: ``benchmarks.synthetic_models.residual_model`` (CONV_2D/ADD with skips: every op
claimed, one partition) and the same graph with every third ADD given a fused TANH (which
XNNPACK refuses: 2,223 delegate partitions among 4,445 node subsets at 20,000 ops, the
partitioner's worst case).

    python benchmarks/bench_targets.py [--ops 20000] [--rounds 5]

Both commands run once untimed first, and the children may write bytecode caches
(``PYTHONDONTWRITEBYTECODE`` is taken out of their environment): an installed package has
its ``.pyc`` files, and without them every run of ours would first compile the hundred-odd
modules it imports (about 0.4 s here), which is not what a user's run costs.  Pass
``--no-bytecode-cache`` to measure that case anyway.

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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic_models import pack, residual_model  # noqa: E402
from tflite_viewer.schema import schema_generated as S  # noqa: E402

_LITERT = ("import sys; from ai_edge_litert.interpreter import Interpreter; "
           "i = Interpreter(model_path=sys.argv[1]); i.allocate_tensors()")


def with_tanh(data: bytes) -> bytes:
    """The residual model with a fused TANH on every third ADD (XNNPACK refuses those)."""
    model = S.ModelT.InitFromPackedBuf(data, 0)
    adds = 0
    for op in model.subgraphs[0].operators:
        if op.builtinOptionsType == S.BuiltinOptions.AddOptions:
            adds += 1
            if adds % 3 == 0:
                op.builtinOptions.fusedActivationFunction = S.ActivationFunctionType.TANH
    return pack(model)


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of a child process: on a shared machine the CPU time
    is the steadier figure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, cwd=ROOT, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="keep the caller's PYTHONDONTWRITEBYTECODE (every run compiles)")
    args = ap.parse_args()
    env = dict(os.environ)
    if not args.no_bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; bytecode cache "
          f"{'off' if 'PYTHONDONTWRITEBYTECODE' in env else 'on'}")
    with tempfile.TemporaryDirectory() as tmp:
        models = {"residual": residual_model(args.ops)}
        models["residual+TANH"] = with_tanh(models["residual"])
        print(f"{'model':<15} {'ops':>6} {'targets s':>10} {'LiteRT s':>9} {'ratio':>6}   "
              f"{'targets cpu':>11} {'LiteRT cpu':>10} {'ratio':>6}")
        for name, data in models.items():
            path = Path(tmp) / f"{name}.tflite"
            path.write_bytes(data)
            ours = [sys.executable, "-m", "tflite_viewer", "targets", str(path), "--json"]
            anchor = [sys.executable, "-c", _LITERT, str(path)]
            run(ours, env)  # warm-up (and bytecode caches written)
            run(anchor, env)
            t_ours, t_anchor = [], []
            for _ in range(args.rounds):
                t_ours.append(run(ours, env))
                t_anchor.append(run(anchor, env))
            a, b = (statistics.median(t[0] for t in ts) for ts in (t_ours, t_anchor))
            ca, cb = (statistics.median(t[1] for t in ts) for ts in (t_ours, t_anchor))
            print(f"{name:<15} {args.ops:>6} {a:>10.3f} {b:>9.3f} {a / b:>6.2f}   "
                  f"{ca:>11.3f} {cb:>10.3f} {ca / cb:>6.2f}")


if __name__ == "__main__":
    main()
