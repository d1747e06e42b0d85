"""Issue 25, item 16: the window runs numpy's matrix products on one BLAS thread (see
`tflite_viewer.ui`'s docstring for the measurement that found the cause).  Checked in a
fresh process, where importing the window's package comes before numpy loads its BLAS:
the variable is set, OpenBLAS starts no thread of its own, and a value the user chose wins.
The speed itself is measured, not tested (the command is in the report of issue 25)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

CODE = ("import os, tflite_viewer.cli; from tflite_viewer.ui import app; import numpy; "
        "numpy.ones((300, 300), numpy.float32) @ numpy.ones((300, 300), numpy.float32); "
        "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))")


def _run(env: dict) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                         check=True, env=env).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc (Linux)")
def test_the_window_runs_blas_on_one_thread_unless_the_user_says_otherwise():
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    assert _run(env) == ("1", 1)  # the main thread alone: no BLAS worker was started
    value, threads = _run({**env, "OPENBLAS_NUM_THREADS": "2"})
    assert value == "2" and threads == 2
