"""The canvas's colourings, one at a time (no Qt).

An overlay colours the operators of the subgraph shown by something measured about them:
the quantization error, the arena bytes live at each step, a target's verdicts, the
differences from the model compared with, the op times of the last run, the error against
LiteRT.  Each kind is a model here (napari's ``Overlay``): `Overlay.paint` turns the open
workspace into `Marks` (a colour per operator, with an optional dashed group frame and a
tag) and a `Legend` (what the colours mean, and what to do when there is nothing to show);
the window has one view per model type that draws them (`ui.overlays`), and the legend
strip under the canvas shows the legend.  `OverlayChoice` is the toolbar's selector: which
overlay is on (at most one), turned off when the dock that owns it is closed.

    choice = OverlayChoice(default_overlays())
    choice.choose("targets:xnnpack")
    marks, legend = choice.current.paint(ws, subgraph=0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Hashable

from ...quant import report as qreport
from ...targets import overlay as target_overlay
from ...targets.verdict import FALLS_BACK, REFUSED, RUNS
from . import diff as cmp
from . import tensor_stats as ts
from .crosscheck import crosscheck_state, op_errors
from .memory import TARGETS as MEMORY_TARGETS, MemoryState
from .quant import quant_state
from .targets import CHOICES, result_of

NONE = ""
#: ramps, low to high (a colour with an alpha byte is "#aarrggbb", as Qt reads it)
QUALITY = ("#2da44e", "#e3b341", "#cf222e")           # best green .. worst red
LIVE_BYTES = ("#ffffff", "#f2cc60", "#cf222e")        # none .. the whole arena
HEAT = ("#00ffffff", "#78ffc800", "#aae63214")        # transparent .. amber .. red
DIFF_COLOURS = {cmp.ADDED: "#2da44e", cmp.REMOVED: "#cf222e", cmp.CHANGED: "#d4a72c"}

Key = Hashable   # an op index of the subgraph shown, or (subgraph, op) of one drawn inline


@dataclass(frozen=True)
class Marks:
    """What an overlay paints: ``colours`` per operator (a tint of alpha ``fill`` and a
    frame ``frame`` wide; a colour with its own alpha keeps it), ``groups`` a dashed frame
    of another colour around some (a delegate's partitions), ``tags`` a label over some."""

    colours: dict[Key, str] = field(default_factory=dict)
    fill: int = 70
    frame: float = 4.0
    groups: dict[Key, str] = field(default_factory=dict)
    tags: dict[Key, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Legend:
    """What the colours mean: ``title``, a ramp (``stops``, low to high, ``low`` and
    ``high`` under its ends) or ``swatches`` (colour, meaning), and a ``note`` (the inputs
    the numbers come from, or what to do to get any)."""

    title: str
    stops: tuple[str, ...] = ()
    low: str = ""
    high: str = ""
    swatches: tuple[tuple[str, str], ...] = ()
    note: str = ""


def ramp(t: float, stops: tuple[str, str, str]) -> str:
    """``t`` in [0, 1] (clamped) on a three-stop ramp, as "#aarrggbb"."""
    t = min(max(float(t), 0.0), 1.0)
    lo, hi, u = (stops[0], stops[1], t * 2) if t <= 0.5 else (stops[1], stops[2], t * 2 - 1)
    a, b = _argb(lo), _argb(hi)
    return "#" + "".join(f"{round(x + (y - x) * u):02x}" for x, y in zip(a, b))


def _argb(colour: str) -> tuple[int, int, int, int]:
    h = colour.lstrip("#")
    if len(h) == 6:
        h = "ff" + h
    return tuple(int(h[i:i + 2], 16) for i in range(0, 8, 2))  # type: ignore[return-value]


class Overlay:
    """One kind of colouring (see the module docstring).  ``key`` names it in the selector,
    ``dock`` is the dock that owns it, ``topics`` the hub topics it is painted again on
    (besides another model, an edit and another subgraph)."""

    key: str = ""
    label: str = ""
    dock: str = ""
    topics: tuple[str, ...] = ()

    def paint(self, ws: Any, subgraph: int, inlined: Collection[tuple[int, int]] = ()
              ) -> tuple[Marks, Legend]:
        raise NotImplementedError


class QuantOverlay(Overlay):
    """The quantization error of each operator's output (``metric``), green to red."""

    key, label, dock, topics = "quant", "Quantization", "quantization", ("quant/report",)

    def __init__(self, metric: str = "sqnr_db") -> None:
        self.metric = metric

    def paint(self, ws, subgraph, inlined=()):
        state = quant_state(ws)
        title = f"Quantization: {self.metric} per operator (red: worst)"
        if state.report is None:
            return Marks(), Legend(title, QUALITY, note="No comparison yet: Compare with "
                                   "float model\u2026 in the Quantization dock")
        values = qreport.op_values(state.report, self.metric, subgraph=subgraph)
        fractions = qreport.badness_fractions(values, self.metric)
        marks = Marks({op: ramp(t, QUALITY) for op, t in fractions.items()})
        if not values:
            return marks, Legend(title, QUALITY, note="no operator of this subgraph compared")
        worst = max(fractions, key=fractions.get)
        best = min(fractions, key=fractions.get)
        n = state.report.samples
        on = f"on {n} sample{'s' if n != 1 else ''}" + (f" ({state.inputs})" if state.inputs else "")
        return marks, Legend(title, QUALITY, f"best {ts.format_number(values[best], 4)}",
                             f"worst {ts.format_number(values[worst], 4)}", note=on)


class MemoryOverlay(Overlay):
    """The arena bytes live at each operator's step (``target``: "tflm" or "litert")."""

    key, label, dock, topics = "memory", "Memory", "memory", ("memory/plan",)

    def __init__(self, target: str = "tflm") -> None:
        self.target = target

    def paint(self, ws, subgraph, inlined=()):
        runtime = MEMORY_TARGETS.get(self.target, self.target)
        title = f"Memory: {runtime} arena live at each operator"
        state = ws.part("memory", MemoryState)
        plan = state.plans.get(self.target)
        if ws.model is None or plan is None or subgraph >= len(ws.model.subgraphs):
            note = state.errors.get(self.target) or "Planning the arena\u2026"
            return Marks(), Legend(title, LIVE_BYTES, note=note)
        index = subgraph if plan.target == "litert" and subgraph < len(plan.arenas) else None
        chart = state.chart(self.target, index)
        if chart is None or chart.height <= 0:
            return Marks(), Legend(title, LIVE_BYTES, note="no arena: nothing to plan")
        n_ops = len(ws.model.subgraphs[subgraph].operators)
        values = chart.op_heat(subgraph, n_ops).tolist()
        planned = {op for s, op in chart.steps if s == subgraph and 0 <= op < n_ops}
        marks = Marks({op: ramp(values[op], LIVE_BYTES) for op in sorted(planned)},
                      fill=110, frame=2.0)
        return marks, Legend(title, LIVE_BYTES, "0", f"{chart.height:,} bytes")


class TargetsOverlay(Overlay):
    """One target's verdicts (runs, falls back, refused) and a delegate's partitions."""

    dock = "targets"
    topics = ("targets/report",)

    def __init__(self, target: str, label: str) -> None:
        self.target = target
        self.key = f"targets:{target}"
        self.label = f"Targets: {label}"

    def paint(self, ws, subgraph, inlined=()):
        result = result_of(ws, self.target)
        swatches = tuple((target_overlay.VERDICT_COLOURS[v], v)
                         for v in (RUNS, FALLS_BACK, REFUSED))
        if result is None:
            return Marks(), Legend(self.label, swatches=swatches,
                                   note="Checking the operators\u2026")
        marks = target_overlay.marks(result, subgraph)
        tags = {p.ops[0]: f"P{i}" for i, p in enumerate(result.partitions)
                if p.subgraph == subgraph and p.ops}
        ours = sum(1 for p in result.partitions if p.subgraph == subgraph)
        return (Marks({k: m.colour for k, m in marks.items()}, fill=60, frame=3.0,
                      groups={k: m.group_colour for k, m in marks.items() if m.group_colour},
                      tags=tags),
                Legend(target_overlay.legend(result), swatches=swatches,
                       note=f"dashed frames: {ours} partition(s)" if ours else ""))


class DiffOverlay(Overlay):
    """What differs from the model compared with, on side ``side`` ("a" or "b")."""

    key, label, dock, topics = "diff", "Diff", "differences", (cmp.TOPIC,)

    def __init__(self, side: str = "a") -> None:
        self.side = side

    def paint(self, ws, subgraph, inlined=()):
        kinds = (cmp.REMOVED, cmp.CHANGED) if self.side == "a" else (cmp.ADDED, cmp.CHANGED)
        diff = cmp.diff_state(ws).diff
        marks = cmp.marks(diff, self.side, subgraph)
        counts = {k: sum(1 for v in marks.values() if v == k) for k in kinds}
        legend = Legend(f"Diff ({'A' if self.side == 'a' else 'B'})",
                        swatches=tuple((DIFF_COLOURS[k], f"{k}: {counts[k]} ops") for k in kinds),
                        note="" if diff is not None else
                        "No comparison: File \u203a Compare With\u2026")
        return Marks({k: DIFF_COLOURS[v] for k, v in marks.items()}, fill=60), legend


class TimeOverlay(Overlay):
    """The op times of the debug run's last stop, over the slowest one."""

    key, label, dock, topics = "time", "Op time", "profile", ("debug",)

    def paint(self, ws, subgraph, inlined=()):
        title = "Op time of the last stop (red: slowest)"
        times = ws.debug.profile if ws.debug.active else {}
        drawn = set(inlined)
        values = {(op if s == subgraph else (s, op)): sec for (s, op), sec in times.items()
                  if s == subgraph or (s, op) in drawn}
        top = max(values.values(), default=0.0)
        if not top > 0:
            return Marks(), Legend(title, HEAT, note="No run yet: Debug \u203a Start (F5)")
        return (Marks({k: ramp(v / top, HEAT) for k, v in values.items() if v > 0}, frame=0.0),
                Legend(title, HEAT, "0 ms", f"{top * 1e3:.3g} ms"))


class ErrorOverlay(Overlay):
    """Each operator's error against LiteRT in the last cross-check (log scale)."""

    key, label, dock, topics = "error", "LiteRT error", "crosscheck", ("crosscheck/result",)

    def paint(self, ws, subgraph, inlined=()):
        title = "Cross-check: error / range of LiteRT's (log)"
        state = crosscheck_state(ws)
        check = state.result
        if ws.model is None or check is None or check.report.subgraph != subgraph:
            note = ("No cross-check yet: Debug \u203a Cross-check with LiteRT" if check is None
                    else f"the cross-check compared subgraph {check.report.subgraph}")
            return Marks(), Legend(title, HEAT, note=note)
        errors = op_errors(check, len(ws.model.subgraphs[subgraph].operators))
        colours = {k: ramp(v, HEAT) for k, v in enumerate(errors.tolist())
                   if not math.isnan(v) and v > 0}
        return (Marks(colours, frame=0.0),
                Legend(title, HEAT, "1e-7 or less", "0.1 or more",
                       note=f"on {state.inputs}" if state.inputs else ""))


def default_overlays() -> list[Overlay]:
    """Every overlay the window offers, in the selector's order."""
    return ([QuantOverlay(), MemoryOverlay()]
            + [TargetsOverlay(key, text) for key, text in CHOICES if key]
            + [DiffOverlay(), TimeOverlay(), ErrorOverlay()])


class OverlayChoice:
    """Which overlay colours the canvas: at most one (see the module docstring)."""

    def __init__(self, overlays: list[Overlay]) -> None:
        self.overlays = {o.key: o for o in overlays}
        self.key = NONE
        self._listeners: list[Callable[[str], None]] = []

    def entries(self) -> list[tuple[str, str]]:
        """(key, label) of the selector's entries, None first."""
        return [(NONE, "None")] + [(k, o.label) for k, o in self.overlays.items()]

    @property
    def current(self) -> Overlay | None:
        return self.overlays.get(self.key)

    def subscribe(self, fn: Callable[[str], None]) -> None:
        """``fn(key)`` after every change of the overlay on."""
        self._listeners.append(fn)

    def choose(self, key: str) -> bool:
        """Turn ``key``'s overlay on (NONE: none); False when it was on already."""
        if key != NONE and key not in self.overlays:
            raise ValueError(f"no overlay {key!r} (one of {', '.join(self.overlays)})")
        if key == self.key:
            return False
        self.key = key
        for fn in list(self._listeners):
            fn(key)
        return True

    def release(self, dock: str) -> bool:
        """The dock ``dock`` was closed: its overlay, if on, goes off."""
        current = self.current
        return current is not None and current.dock == dock and self.choose(NONE)

    @property
    def target(self) -> str:
        """The target whose verdicts are shown ("" unless a targets overlay is on)."""
        current = self.current
        return current.target if isinstance(current, TargetsOverlay) else ""

