"""What ``--screenshot`` can do before it grabs the window, besides selecting and pausing a
run (`debugger.screenshot`): the cross-check with LiteRT, the quantization analysis, a
target's verdicts and the memory plan, each with its dock in front, as a user leaves them
to look at the result; a generation run to pause in (an LLM's prefill, then decode steps)
and tensors pinned in the Watch dock.

    tflite-viewer MODEL --screenshot OUT.png --cross-check
    tflite-viewer QUANT.tflite --screenshot OUT.png --compare-float FLOAT.tflite [--overlay sqnr_db]
    tflite-viewer Q4.tflite --screenshot OUT.png --compare-float F32.tflite --generate 8 \
        --prompt 5,17,42                   # the Quantization dock's Generation view
    tflite-viewer MODEL --screenshot OUT.png --target xnnpack
    tflite-viewer MODEL --screenshot OUT.png --memory
    tflite-viewer LLM.tflite --screenshot OUT.png --generate 8 --prompt 5,17,42 \
        --subgraph decode --run-to 51 --decode-step 3 --watch kv_cache_k_0
    tflite-viewer A.tflite --screenshot OUT.png --compare-with B.tflite

Each waits for its result on the window's own signals (`debugger.screenshot.wait_until`)
and raises ValueError with a message for the command line when there is none.
"""
from __future__ import annotations

import math
from pathlib import Path

from PySide6.QtCore import Qt

from ..quant import report as qreport
from .debugger.screenshot import wait_until

WAIT_MS = 600_000


def prepare(window, launch) -> None:
    """Everything ``launch`` (a `state.launch.Launch`) asks for before the picture, in
    the order a user would do it."""
    if launch.generate and not launch.compare_float:
        generation(window, launch.generate, launch.prompt or "1")
    if launch.run_to is not None:
        from .debugger.screenshot import pause_before
        pause_before(window, launch.run_to, launch.inputs, call=launch.decode_step)
    if launch.watch:
        watch(window, launch.watch)
    if launch.cross_check:
        cross_check(window)
    if launch.compare_float:
        compare_float(window, launch.compare_float, launch.overlay)
        if launch.generate:
            quant_generation(window, launch.generate, launch.prompt or "1")
    if launch.memory:
        memory(window, select_peak=not launch.select)
    if launch.target:
        show_target(window, launch.target)
    if launch.compare_with:
        compare_with(window, launch.compare_with)


def generation(window, steps: int, prompt: str) -> None:
    """Make the debugger's run a generation loop: ``prompt`` (token ids), then ``steps``
    decode steps, the pieces found from litert-torch's names (a GenerationError says
    what is missing)."""
    from ..interpreter.generation import Generation, find_plan, parse_prompt
    from .state.workspace import GenerationSetup
    ids = parse_prompt(prompt)
    plan = find_plan(window.model, len(ids))
    Generation(window.model, plan, ids, steps)
    window.debugger.set_generation(GenerationSetup(plan, tuple(ids), int(steps)))


def watch(window, names, timeout_ms: int = 60_000) -> None:
    """Pin tensors of the shown subgraph (indices or names) in the Watch dock, shown beside
    the Call Stack, and wait for their values."""
    from .state.selection import find_tensor
    dbg = window.debugger
    sg = window.subgraph
    keys = [(sg, find_tensor(window.model, sg, name)) for name in names]
    for key in keys:
        dbg.watch(*key)
    # out of the bottom tabs, beside them: the Call Stack (which call) and the values
    window.removeDockWidget(dbg.watch_dock)
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dbg.watch_dock,
                         Qt.Orientation.Horizontal)
    dbg.watch_dock.show()
    dbg.callstack_dock.show()
    dbg.callstack_dock.raise_()
    window.resizeDocks([dbg.callstack_dock, dbg.watch_dock], [1, 1], Qt.Orientation.Horizontal)
    wait_until(lambda: all(k in dbg.snapshots for k in keys),
               (dbg.snapshotsReceived, dbg.stopReceived), timeout_ms)


def cross_check(window, timeout_ms: int = WAIT_MS) -> None:
    """Run the cross-check on the session's inputs (seeded, or --inputs), bring its dock
    forward coloured by error, and select the row with the largest error."""
    from .state.crosscheck import crosscheck_state
    dbg = window.debugger
    ws = window.workspace
    dbg.crosscheck_action.trigger()
    if not wait_until(lambda: not crosscheck_state(ws).running, (dbg.crossCheckDone,),
                      timeout_ms, poll_ms=100):  # a failure is told to the hub, not by a signal
        raise ValueError(f"--cross-check: no result within {timeout_ms / 1000:g} s")
    state = crosscheck_state(ws)
    check = state.result
    if check is None:
        raise ValueError(f"--cross-check: {state.message}")
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
    from .state.quant import quant_state
    panel = window.panel("quantization")
    ws = window.workspace
    window.docks.bring_forward("quantization")
    panel.compare(float_path)
    if not wait_until(lambda: not quant_state(ws).running, (panel.reportReady, panel.failed),
                      timeout_ms):
        raise ValueError(f"--compare-float: no result within {timeout_ms / 1000:g} s")
    if quant_state(ws).report is None:
        raise ValueError(f"--compare-float {Path(float_path).name}: {quant_state(ws).status}")
    if overlay is not None:
        panel.choose_metric(overlay)
    if panel.proxy.rowCount():
        panel.table.selectRow(0)  # the report's order: the worst first


def quant_generation(window, steps: int, prompt: str, timeout_ms: int = WAIT_MS) -> None:
    """The Quantization dock's Generation view: the open model and the float model it was
    compared with generate ``steps`` tokens after ``prompt``; the first step where their
    tokens part (else the worst logits SQNR) is shown, its worst op selected on the
    canvas."""
    from .state.generation import generation_state
    panel = window.panel("quantization")
    g = generation_state(window.workspace)
    panel.lists.setCurrentIndex(panel.generation_tab)
    panel.generation.start(prompt, steps)
    if not wait_until(lambda: not g.running, (panel.failed,), timeout_ms, poll_ms=100):
        raise ValueError(f"--generate: no result within {timeout_ms / 1000:g} s")
    if g.analysis is None:
        raise ValueError(f"--generate {steps}: {g.status}")
    first = g.analysis.first_divergence
    step = first if first is not None else int(g.analysis.logits_sqnr.argmin())
    panel.generation.choose_step(step)
    worst = g.analysis.steps[step].worst_ops
    if worst:
        window.show_op(worst[0].subgraph, worst[0].op)


def show_target(window, target: str, timeout_ms: int = WAIT_MS) -> None:
    """Pick ``target`` in the Targets dock, bring it forward with the canvas coloured by
    its verdicts (a delegate's list with every operator and its partition), and select the
    first operator that does not run there."""
    from .state.targets import targets_state
    panel = window.panel("targets")
    try:
        panel.set_target(target)  # its colours on the canvas, as a pick in the dock
    except ValueError as exc:
        raise ValueError(f"--target: {exc}") from None
    window.docks.bring_forward("targets")
    state = targets_state(window.workspace)
    if not wait_until(lambda: panel.result is not None or bool(state.error),
                      (panel.reportShown,), timeout_ms, poll_ms=50):
        raise ValueError(f"--target {target}: no report within {timeout_ms / 1000:g} s")
    if panel.result is None:
        raise ValueError(f"--target {target}: {state.error}")
    if panel.result.partitions:  # a delegate: list every operator with its partition
        panel.every.setChecked(True)
    rows = [r for r in panel.rows() if r.verdict != "runs"] or panel.rows()
    if rows:
        panel.select_row(rows[0].subgraph, rows[0].index)
        panel.opActivated.emit(rows[0].subgraph, rows[0].index)  # as a click on the row


def memory(window, select_peak: bool = True, timeout_ms: int = WAIT_MS) -> None:
    """Bring the Memory dock forward (TFLite Micro's arena, the canvas coloured by live
    memory) and select the largest tensor live at the peak."""
    from .state.memory import MemoryState
    panel = window.panel("memory")
    ws = window.workspace
    panel.target.setCurrentIndex(panel.target.findData("tflm"))
    window.docks.bring_forward("memory")
    panel.overlay.setChecked(True)  # the canvas coloured by live memory
    state = ws.part("memory", MemoryState)
    if not wait_until(lambda: "tflm" not in state.running, (), timeout_ms, poll_ms=100):
        raise ValueError(f"--memory: no plan within {timeout_ms / 1000:g} s")
    plan = state.plans.get("tflm")
    if plan is None:
        raise ValueError(f"--memory: {state.errors.get('tflm', 'no plan')}")
    arena = plan.arena
    live = arena.live_at(arena.peak_step) if arena.peak_step is not None else []
    tensors = [b for b in live if b.tensor >= 0]
    if select_peak and tensors:
        if tensors[0].subgraph != window.subgraph:
            window.show_subgraph(tensors[0].subgraph, wait=True)
        window.select_tensor(tensors[0].tensor)


def compare_with(window, other: str | Path, timeout_ms: int = WAIT_MS) -> None:
    """File > Compare With ``other``: both canvases, the Differences dock in front."""
    ctl = window.compare
    ctl.compare_with(other)
    if not wait_until(lambda: not ctl.state.running, (ctl.computed,), timeout_ms, poll_ms=100):
        raise ValueError(f"--compare-with: no result within {timeout_ms / 1000:g} s")
    if ctl.state.diff is None:
        raise ValueError(f"--compare-with {Path(other).name}: {ctl.state.status}")
    window.view.fit_width()
    ctl.pane.view.fit_width()


def _size(x) -> float:
    return -1.0 if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
