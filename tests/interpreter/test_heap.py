"""`heap.keep_freed_memory`: the blocks of a few megabytes a run frees are reused by the
next run without new page faults (glibc's malloc otherwise gives the freed memory back to
the system, and every run faults its pages in again)."""
from __future__ import annotations

import subprocess
import sys

import pytest

_CHILD = r"""
import resource, sys
import numpy as np
if sys.argv[1] == "tuned":
    from tflite_viewer.interpreter.heap import keep_freed_memory
    assert keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def a_run():  # 20 tensors of 2 MiB alive together (a decode step's caches), then freed
    kept = [np.ones(1 << 19, np.float32) for _ in range(20)]
    del kept
a_run()  # (the first run's memory is new either way)
before = faults()
for _ in range(5):
    a_run()
print(faults() - before)
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _CHILD, mode], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc is Linux's")
def test_freed_blocks_are_reused_without_page_faults():
    plain, tuned = _faults("plain"), _faults("tuned")
    assert plain >= 5 * 20 * 256  # each run's blocks mapped afresh, their pages faulted in
    assert tuned < 500            # the heap's blocks reused
