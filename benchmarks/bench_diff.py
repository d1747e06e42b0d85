"""`tflite-viewer diff` of two 20,000-op models, one with 100 random edits.

Target (docs/ARCHITECTURE.md, "Performance targets"; issue 29): the whole process within
2 s.  The models come from ``benchmarks.synthetic_models.residual_model`` (written with the
flatc object API); the edits are the edit-oracle generator's (tests/diff/edit_oracle.py:
options, renames, shapes, constants, op removals, exposed tensors) applied with the
project's editor.  Printed:

* the whole process (``tflite-viewer diff A B`` and ``--json``), median of ``--repeat``
  fresh processes, beside the anchor of the same process doing nothing but start and
  import the model reader (``python -c "import tflite_viewer.model"``): what no
  subcommand can go below;
* the in-process breakdown: loading both, matching, listing the differences;
* whether the diff reported exactly the edits (the oracle).

    python benchmarks/bench_diff.py [--ops 20000] [--edits 100] [--repeat 5] [--seed 0]

Figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import statistics
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic_models import residual_model  # noqa: E402


def _run(cmd: list[str], env: dict) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          cwd=ROOT)
    return time.perf_counter() - start, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=20000)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from tests.diff.edit_oracle import EditGenerator, reported
    from tflite_viewer.diff import diff_models
    from tflite_viewer.match import match_models
    from tflite_viewer.model import load_model

    tmp = Path(tempfile.mkdtemp(prefix="bench_diff_"))
    a_path, b_path = tmp / "a.tflite", tmp / "b.tflite"
    a_path.write_bytes(residual_model(args.ops, seed=args.seed))
    t0 = time.perf_counter()
    case = EditGenerator(a_path, args.seed).run(args.edits)
    b_path.write_bytes(case.edited.data.tobytes())
    print(f"models: {args.ops} ops; {len(case.log)} edits applied in "
          f"{time.perf_counter() - t0:.1f} s; {a_path.stat().st_size / 1e6:.1f} MB, "
          f"{b_path.stat().st_size / 1e6:.1f} MB")

    t = time.perf_counter()
    a, b = load_model(a_path), load_model(b_path)
    t_load = time.perf_counter() - t
    t = time.perf_counter()
    m = match_models(a, b)
    t_match = time.perf_counter() - t
    t = time.perf_counter()
    d = diff_models(a, b, match=m)
    t_diff = time.perf_counter() - t
    exact = reported(d) == case.expected
    print(f"in process: load both {t_load * 1e3:.0f} ms, match {t_match * 1e3:.0f} ms, "
          f"differences {t_diff * 1e3:.0f} ms ({len(d.differences)} differences; reports "
          f"exactly the edits: {exact})")

    # an installed tool's environment: bytecode written once and reused
    from benchmarks import child_process as cp
    env = cp.fresh_env(tmp / "pycache", blas_threads=None)
    exe = [sys.executable, "-m", "tflite_viewer"]
    _run(exe + ["diff", str(a_path), str(b_path)], env)  # writes the bytecode
    text, js, floor = [], [], []
    for _ in range(args.repeat):  # alternate, so load changes hit all three alike
        floor.append(_run([sys.executable, "-c", "import tflite_viewer.model"], env)[0])
        dt, rc = _run(exe + ["diff", str(a_path), str(b_path)], env)
        text.append(dt)
        js.append(_run(exe + ["diff", str(a_path), str(b_path), "--json"], env)[0])
    med = statistics.median
    print(f"whole process, median of {args.repeat}: diff {med(text):.2f} s (exit {rc}), "
          f"diff --json {med(js):.2f} s; anchor (start + import the reader) "
          f"{med(floor):.2f} s; target 2 s: {'met' if med(text) <= 2.0 else 'NOT met'}")
    for p in (a_path, b_path):
        p.unlink()
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
