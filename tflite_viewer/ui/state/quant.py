"""The quantization analysis of the open model, a part of its workspace (no Qt).

``quant_state(ws)`` holds the spec findings (None: being checked), the float comparison's
report, the status line and progress while it runs, and which inputs it ran on; the
Quantization dock and its canvas overlay render it, `panels.quant_runs` fills it on pool
threads.  An edit cancels a comparison under way and keeps the float model chosen
(`QuantState.after_edit`); another model is another workspace.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import tensor_stats as ts

KEY = "quant"
TOPIC = "quant/report"     # spec findings, the analysis' progress or its report


@dataclass
class QuantState:
    """One model's quantization analysis (see the module docstring)."""

    findings: list | None = None
    report: Any = None          # quant.analysis.QuantReport
    status: str = ""
    running: bool = False
    progress: tuple[int, int, str] | None = None
    float_path: Path | None = None
    inputs: str = ""            # where the report's samples came from ("seeded, seed 0")
    run: Any = None             # the run under way (a panels.quant_runs.QuantRun)
    cancel: Any = None          # its cancel flag (threading.Event)

    def after_edit(self) -> "QuantState":
        """The next model's: the comparison under way stops, the float model stays chosen."""
        if self.cancel is not None:
            self.cancel.set()
        return QuantState(float_path=self.float_path)


def quant_state(ws: Any) -> QuantState:
    return ws.part(KEY, QuantState)


def number_text(v: Any) -> str:
    """A table cell: floats to five significant digits, infinities and NaN by name."""
    if v is None:
        return ""
    if isinstance(v, float):
        if not math.isfinite(v):
            return "inf" if v > 0 else "-inf" if v < 0 else "nan"
        return ts.format_number(v, 5)
    return str(v)


def report_summary(report: Any, inputs: str = "") -> str:
    """The status line of a finished comparison, naming the inputs it ran on (``inputs``:
    where they came from, "seeded, seed 0")."""
    compared = report.compared()
    on = f"{report.samples} sample{'s' if report.samples != 1 else ''}"
    summary = f"{len(compared)} tensors compared on {on}" + (f" ({inputs})" if inputs else "")
    subgraphs = {t.subgraph for t in compared}
    if len(subgraphs) > 1:
        summary += f" in {len(subgraphs)} subgraphs"
    out = report.outputs
    if out:
        summary += (f"; model outputs SQNR {number_text(out['sqnr_db'])} dB, "
                    f"cosine {number_text(out['cosine'])}")
    if report.unpaired_quantized or report.unpaired_float:
        summary += (f"; unpaired: {len(report.unpaired_quantized)} quantized, "
                    f"{len(report.unpaired_float)} float")
    return summary


def findings_status(findings: list) -> str:
    return (f"{len(findings)} spec finding(s). Compare with the float original to measure "
            "the error of every tensor.")
