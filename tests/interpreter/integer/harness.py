"""Run batches of single-op cases through LiteRT and compare with our integer kernels."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from tests.interpreter.singleop import Op, batch_model, run_batch_litert

#: Ops where LiteRT's optimized kernels (BUILTIN) disagreed with its reference kernels
#: (BUILTIN_REF) in our runs: {op label: (differing outputs, total outputs)}.
RESOLVER_DISAGREEMENTS: dict[str, list[int]] = {}


@dataclass
class Case:
    op: Op
    inputs: Sequence[np.ndarray]          # the op's runtime inputs, in order
    ours: Callable[[], Sequence[np.ndarray] | np.ndarray]  # our outputs
    label: str = ""


def check_cases(cases: Sequence[Case], compare_builtin: bool = False, chunk: int = 400,
                resolver: str = "BUILTIN_REF") -> int:
    """Assert every case equals LiteRT (BUILTIN_REF unless the op has no reference kernel)
    bit for bit; returns the number checked."""
    total = 0
    for start in range(0, len(cases), chunk):
        part = cases[start:start + chunk]
        built = batch_model([c.op for c in part])
        ref = run_batch_litert(built, [c.inputs for c in part], resolver)
        opt = run_batch_litert(built, [c.inputs for c in part], "BUILTIN_WITHOUT_DEFAULT_DELEGATES") if compare_builtin else None
        for k, case in enumerate(part):
            ours = case.ours()
            ours = [ours] if isinstance(ours, np.ndarray) else list(ours)
            for j, (a, r) in enumerate(zip(ours, ref[k])):
                assert a.dtype == r.dtype, f"{case.label}: dtype {a.dtype} != {r.dtype}"
                assert a.shape == r.shape, f"{case.label}: shape {a.shape} != {r.shape}"
                if not np.array_equal(a, r):
                    bad = np.argwhere(a != r)[:5]
                    raise AssertionError(
                        f"{case.label} output {j}: {int((a != r).sum())}/{a.size} differ; "
                        f"first at {bad.tolist()}: ours {a[tuple(bad[0])]} litert {r[tuple(bad[0])]}")
                if opt is not None:
                    key = case.op.op + ":" + str(r.dtype)
                    entry = RESOLVER_DISAGREEMENTS.setdefault(key, [0, 0])
                    entry[0] += int((opt[k][j] != r).sum())
                    entry[1] += r.size
            total += 1
    return total
