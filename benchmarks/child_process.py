"""Whole-process figures of a command: wall time and peak resident memory of the child,
from the operating system's accounting of that one process (``os.wait4``), the way
``/usr/bin/time -v`` reports them.  The big-model benchmarks (bench_open.py and
bench_interpreter.py ``--big``) run each side this way, alternating."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Run:
    wall: float           # seconds from start to exit
    peak_mb: float        # the child's peak resident set, MB
    out: str              # what it printed
    code: int


def run(cmd: list[str], env: dict | None = None, quiet: bool = True) -> Run:
    """Run ``cmd`` to its end and measure it (its stdout captured; its stderr dropped
    when ``quiet``: the anchors log to it)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.DEVNULL if quiet else None)
    out = proc.stdout.read()  # to the end of its output: its exit
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(wall, usage.ru_maxrss / 1024, out, proc.returncode)


def fresh_env(pycache: Path, blas_threads: int | None = 1) -> dict:
    """The environment of an installed tool: bytecode cached (in ``pycache``), this tree's
    code first; BLAS on ``blas_threads`` threads (the machine's cores are shared)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    env["PYTHONPATH"] = str(ROOT)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    if blas_threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(blas_threads)
    return env


def alternate(commands: dict[str, list[str]], rounds: int, env: dict,
              warmup: bool = True) -> dict[str, list[Run]]:
    """Each command once per round, in turn (after one unmeasured run of each)."""
    runs: dict[str, list[Run]] = {k: [] for k in commands}
    if warmup:
        for name, cmd in commands.items():
            if run(cmd, env).code != 0:
                run(cmd, env, quiet=False)  # show why
                raise RuntimeError(f"{name}: {' '.join(cmd)} failed")
    for _ in range(rounds):
        for name, cmd in commands.items():
            runs[name].append(run(cmd, env))
    return runs


def median(runs: list[Run], field: str) -> float:
    return statistics.median(getattr(r, field) for r in runs)


def ensure_big_models(directory: Path, forms=("float", "int8", "int4")) -> dict[str, Path]:
    """The > 2 GB decoder of big_decoder.py and its quantized forms, written into
    ``directory`` when missing (a minute and about 5.5 GB of memory for the float one)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for form in forms:
        path = directory / f"decoder_{form}.tflite"
        if not path.exists():
            print(f"writing {path} ...", file=sys.stderr, flush=True)
            subprocess.run([sys.executable, str(ROOT / "benchmarks" / "big_decoder.py"),
                            str(path), "--form", form], check=True)
        paths[form] = path
    return paths
