"""The cross-check with LiteRT of the open model, a part of its workspace (no Qt).

``crosscheck_state(ws)`` holds the last check (`CrossCheck`: our run's tensors against
LiteRT's, `interpreter.crosscheck.compare_with_litert`, what ``run --compare-litert``
prints) or what the Cross-check dock says instead (running, failed, not run), with the
inputs it ran on.  `run_cross_check` is the work a pool thread does; `op_errors` is the
canvas colouring of its errors.  An edit drops the check with a message to run it again.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...interpreter.crosscheck import CrossCheckReport, compare_with_litert, real_values

KEY = "crosscheck"
TOPIC = "crosscheck/result"


@dataclass
class CrossCheckState:
    """The last cross-check (``result``) or what the dock says instead (running, failed,
    not run); ``inputs`` says what it ran on."""

    result: Any = None
    message: str = ""
    running: bool = False
    inputs: str = ""

    def after_edit(self) -> "CrossCheckState | None":
        """The next model's: a check made (or under way) goes, with a word about it."""
        if self.result is None and not self.running:
            return None
        return CrossCheckState(message="The model changed: run the cross-check again.")


def crosscheck_state(ws: Any) -> CrossCheckState:
    return ws.part(KEY, CrossCheckState)


@dataclass
class CrossCheck:
    """A report and the values it compared: ours and LiteRT's, by tensor index."""

    report: CrossCheckReport
    ours: dict[int, np.ndarray]
    model: object = None
    range_errors: dict[int, float] = field(default_factory=dict)


def run_cross_check(model, inputs: dict, signature: str | None,
                    float_sums: str = "auto") -> CrossCheck:
    """Qt-free: our run (with the debugger's float sums) and LiteRT's on ``inputs``,
    compared (runs on a pool thread)."""
    from ...edit.expose import expose_op_outputs
    from ...interpreter import Interpreter
    from ...interpreter.inputs import complete_inputs

    arrays, _ = complete_inputs(model, inputs or {}, 0, signature)
    interp = Interpreter(model, float_sums=float_sums)
    interp.invoke(arrays, signature=signature)  # by input name
    # LiteRT crashing while keeping every tensor: compared on an exposed copy instead
    report = compare_with_litert(model, arrays, signature=signature, interpreter=interp,
                                 expose=expose_op_outputs)
    sg = interp.subgraphs[report.subgraph]
    ours = {r.tensor: np.array(sg.tensors[r.tensor].data) for r in report.rows
            if sg.tensors[r.tensor].data is not None}
    check = CrossCheck(report, ours, model)
    for r in report.rows:
        check.range_errors[r.tensor] = range_error(sg.tensors[r.tensor], ours.get(r.tensor),
                                                   report.litert_tensors.get(r.tensor))
    return check


def range_error(t, ours: np.ndarray | None, ref: np.ndarray | None) -> float:
    """max|ours - LiteRT| / (max - min of LiteRT's), on real (dequantized) values."""
    if ours is None or ref is None or ours.shape != ref.shape or ours.dtype == object:
        return math.nan
    a, b = real_values(t, ours), real_values(t, ref)
    if a.dtype.kind == "c":
        a, b = np.abs(a), np.abs(b)
    with np.errstate(all="ignore"):
        d = np.abs(a - b)
        fb = b[np.isfinite(b)]
        span = float(fb.max() - fb.min()) if fb.size else 0.0
        span = span or (float(np.abs(fb).max()) if fb.size else 0.0)
        err = float(np.nanmax(d)) if d.size else 0.0
    return err / span if span > 0 else (0.0 if err == 0 else math.inf)


def op_errors(check: CrossCheck | None, n_ops: int) -> np.ndarray:
    """A value in [0, 1] per op for the canvas: log-scaled error relative to range (1e-7
    and below: 0, 1e-1 and above: 1); NaN where there is nothing to show."""
    values = np.full(n_ops, np.nan)
    if check is None:
        return values
    for r in check.report.rows:
        e = check.range_errors.get(r.tensor, math.nan)
        if 0 <= r.op < n_ops and not math.isnan(e):
            level = 1.0 if math.isinf(e) else (0.0 if e <= 1e-7 else
                                                min(1.0, (math.log10(e) + 7) / 6))
            values[r.op] = max(level, 0.0 if math.isnan(values[r.op]) else values[r.op])
    return values
