"""What ``--screenshot`` can do before it grabs the window, besides selecting and pausing a
run (`debugger.screenshot`): the cross-check with LiteRT and the quantization analysis,
each with its dock in front, as a user leaves them to look at the result.

    tflite-viewer MODEL --screenshot OUT.png --cross-check
    tflite-viewer QUANT.tflite --screenshot OUT.png --compare-float FLOAT.tflite [--overlay sqnr_db]
    tflite-viewer A.tflite --screenshot OUT.png --compare-with B.tflite

Each waits for its result on the window's own signals (`debugger.screenshot.wait_until`)
and raises ValueError with a message for the command line when there is none.
"""
from __future__ import annotations

import math
from pathlib import Path

from ..quant import report as qreport
from .debugger.screenshot import wait_until

WAIT_MS = 600_000


def cross_check(window, timeout_ms: int = WAIT_MS) -> None:
    """Run the cross-check on the session's inputs (seeded, or --inputs), bring its dock
    forward coloured by error, and select the row with the largest error."""
    dbg = window.debugger
    ws = window.workspace
    dbg.crosscheck_action.trigger()
    if not wait_until(lambda: not ws.crosscheck.running, (dbg.crossCheckDone,), timeout_ms,
                      poll_ms=100):  # a failure is announced to the hub, not by a signal
        raise ValueError(f"--cross-check: no result within {timeout_ms / 1000:g} s")
    check = ws.crosscheck.result
    if check is None:
        raise ValueError(f"--cross-check: {ws.crosscheck.message}")
    panel = dbg.crosscheck_panel
    dbg.crosscheck_dock.show()
    dbg.crosscheck_dock.raise_()
    panel.colour.setChecked(True)
    rows = check.report.rows
    if rows:
        worst = max(range(len(rows)), key=lambda k: _size(rows[k].max_abs))
        panel.table.selectRow(worst)


def compare_float(window, float_path: str | Path, overlay: str | None = None,
                  timeout_ms: int = WAIT_MS) -> None:
    """Compare the open (quantized) model with ``float_path`` in the Quantization dock,
    bring it forward, colour the canvas by ``overlay`` and select the worst tensor."""
    if overlay is not None and overlay not in qreport.OVERLAY_METRICS:
        raise ValueError(f"--overlay {overlay}: one of {', '.join(qreport.OVERLAY_METRICS)}")
    dock, panel = window.quant_dock, window.quant_panel
    ws = window.workspace
    dock.show()
    dock.raise_()
    panel.compare(float_path)
    if not wait_until(lambda: not ws.quant.running, (panel.reportReady, panel.failed),
                      timeout_ms):
        raise ValueError(f"--compare-float: no result within {timeout_ms / 1000:g} s")
    if ws.quant.report is None:
        raise ValueError(f"--compare-float {Path(float_path).name}: {ws.quant.status}")
    if overlay is not None:
        panel.overlay_metric.setCurrentIndex(panel.overlay_metric.findData(overlay))
    if panel.proxy.rowCount():
        panel.table.selectRow(0)  # the report's order: the worst first


def compare_with(window, other: str | Path, timeout_ms: int = WAIT_MS) -> None:
    """File > Compare With ``other``: both canvases, the Differences dock in front."""
    ctl = window.compare
    ws = window.workspace
    ctl.compare_with(other)
    if not wait_until(lambda: not ws.comparison.running, (ctl.computed,), timeout_ms,
                      poll_ms=100):
        raise ValueError(f"--compare-with: no result within {timeout_ms / 1000:g} s")
    if ws.comparison.diff is None:
        raise ValueError(f"--compare-with {Path(other).name}: {ws.comparison.status}")
    window.view.fit_width()
    ctl.pane.view.fit_width()


def _size(x) -> float:
    return -1.0 if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
