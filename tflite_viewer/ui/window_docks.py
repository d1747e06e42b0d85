"""The analysis docks the window hosts: Quantization, Memory and Targets, each added with
the `DockSpec` its module declares (`MainWindow.add_dock`), and tied to the overlay it
owns.

A dock's options that decide its overlay's colours (the quantization metric, the memory
runtime, the target) are the overlay model's options (`state.overlays`); choosing one in
the dock turns its overlay on, as the toolbar's selector would.  What the dock's signals
ask of the window (select an operator or tensor, apply an edit, report a failure, compare
values) the host connects by itself (`state.docks.DOCK_SIGNALS`).
"""
from __future__ import annotations

from PySide6.QtWidgets import QMainWindow


from .panels import memory_dock, quant_dock, targets_dock
from .state.overlays import NONE



def add_feature_docks(w: QMainWindow) -> None:
    """Host the Quantization, Memory and Targets docks on ``w`` (see the module docstring)."""
    _add_quantization(w)
    _add_memory(w)
    _add_targets(w)


def _add_quantization(w: QMainWindow) -> None:
    dock = quant_dock.QuantDock(w.settings, hub=w.hub, samples=w.samples)
    w.add_dock(quant_dock.DOCK, dock)
    # "Inputs of the debugger session" while one runs
    dock.source.set_session_provider(w.debugger.session_inputs)
    w.debugger.sessionInputsChanged.connect(dock.source.refresh)
    overlay = w.overlay_choice.overlays["quant"]
    overlay.metric = dock.metric

    def metric_chosen(metric: str) -> None:
        overlay.metric = metric
        if not w.overlay_choice.choose("quant"):
            w.overlays.refresh()
    dock.metricChosen.connect(metric_chosen)
    dock.requantized.connect(lambda path, float_path: open_requantized(w, path, float_path))


def open_requantized(w: QMainWindow, path: str, float_path: str) -> None:
    """Open a model the Quantization dock quantized again, beside its float model (the
    compare view, B) and analysed against it (the dock's comparison)."""
    def opened(_model) -> None:
        forget()
        w.compare.compare_with(float_path)
        w.panel("quantization").compare(float_path)
        w.docks.bring_forward("quantization")  # the new analysis first

    def forget(*_args) -> None:
        w.modelOpened.disconnect(opened)
        w.openFailed.disconnect(forget)
    w.modelOpened.connect(opened)
    w.openFailed.connect(forget)
    if not w.open_path(path):
        forget()


def _add_memory(w: QMainWindow) -> None:
    dock = memory_dock.MemoryDock(w.settings, hub=w.hub)
    w.add_dock(memory_dock.DOCK, dock)
    overlay = w.overlay_choice.overlays["memory"]
    overlay.target = dock.target_key

    def target_chosen(_index: int) -> None:
        overlay.target = dock.target_key
        w.overlays.refresh()
    dock.target.currentIndexChanged.connect(target_chosen)


def _add_targets(w: QMainWindow) -> None:
    dock = targets_dock.TargetsDock(w.settings, hub=w.hub)
    w.add_dock(targets_dock.DOCK, dock)
    choice = w.overlay_choice

    def picked(target: str) -> None:  # the dock's picker: that target's colours
        if target:
            choice.choose(f"targets:{target}")
        elif choice.target:
            choice.choose(NONE)
    dock.targetChanged.connect(picked)
    choice.subscribe(lambda _key: choice.target and dock.set_target(choice.target))
