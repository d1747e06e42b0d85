"""``--blas-threads N`` for the benchmarks that run numpy kernels.

On a shared two-core machine a second BLAS thread mostly adds noise, and LiteRT's
reference kernels use one.  The thread count is read by BLAS when numpy is first imported,
so a benchmark calls `apply_from_argv` before it imports numpy (this module imports none).
"""
from __future__ import annotations

import os
import sys

_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def apply_from_argv(argv: list[str] | None = None) -> None:
    """Set the BLAS thread variables from ``--blas-threads N`` in ``argv`` (sys.argv)."""
    argv = sys.argv if argv is None else argv
    if "--blas-threads" in argv:
        n = argv[argv.index("--blas-threads") + 1]
        for var in _VARIABLES:
            os.environ[var] = n
