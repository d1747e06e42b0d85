"""The Quantization dock's Generation view of the open model, a part of its workspace (no Qt).

For an LLM pair (the open quantized decoder and its float original), both models generate
K tokens from a prompt (`quant.generation.analyze_generation`, on a worker); the view
shows per step each model's token, the logits' SQNR and KL, whether the top-1 agrees, and
the ops worst first, with a chart of logits SQNR by step and a steps x layers heat map.
`GenerationState` holds the analysis of the model it was run on, the chosen step and the
run's progress; `heat_image`, `by_layer` and `step_rows` are what the widgets draw.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .quant import number_text

KEY = "quant/generation"
TOPIC = "quant/generation"
#: the heat map's scale: SQNR at or below LOW dB is red, at or above HIGH dB green
LOW_DB, HIGH_DB = 0.0, 40.0
#: step table columns
COLUMNS = ("Step", "Float token", "Quantized token", "Top-1", "Logits SQNR dB", "KL",
           "Worst op")


@dataclass
class GenerationState:
    """One model's generation analysis (see the module docstring)."""

    analysis: Any = None        # quant.generation.GenerationAnalysis
    status: str = ""
    running: bool = False
    progress: tuple[int, int, str] | None = None
    step: int = 0               # the step shown (slider, table, worst ops)
    run: Any = None             # the run under way (panels.quant_generation.GenerationRun)
    cancel: Any = None          # its cancel flag (threading.Event)
    prompt: str = "1 2 3"
    steps: int = 8
    teacher_forcing: bool = False

    def after_edit(self) -> "GenerationState":
        """The next model's: the run under way stops, the prompt and settings stay."""
        if self.cancel is not None:
            self.cancel.set()
        return GenerationState(prompt=self.prompt, steps=self.steps,
                               teacher_forcing=self.teacher_forcing)


def generation_state(ws: Any) -> GenerationState:
    return ws.part(KEY, GenerationState)


def op_label(op: Any) -> str:
    """An op of a step's worst list as the table shows it: ``2/96 MUL 3.7 dB``."""
    return f"{op.subgraph}/{op.op} {op.opcode} {number_text(float(op.sqnr_db))} dB"


def step_rows(analysis: Any) -> list[tuple[str, ...]]:
    """The step table's cells (`COLUMNS`), one row per decode step."""
    rows = []
    for s in analysis.steps:
        worst = op_label(s.worst_ops[0]) if s.worst_ops else ""
        rows.append((str(s.step), str(s.float_token), str(s.quantized_token),
                     "yes" if s.top1_agrees else "NO", number_text(float(s.logits_sqnr_db)),
                     number_text(float(s.kl)), worst))
    return rows


def summary(analysis: Any) -> str:
    """The status line of a finished run."""
    n = len(analysis.steps)
    agree = sum(s.top1_agrees for s in analysis.steps)
    first = analysis.first_divergence
    parted = "the tokens agree at every step" if first is None \
        else f"the tokens part at step {first}"
    forced = ", teacher-forced" if analysis.teacher_forcing else ""
    sqnr = analysis.logits_sqnr
    worst = number_text(float(np.nanmin(sqnr))) if n and np.isfinite(sqnr).any() else "-"
    return (f"{n} decode steps after {len(analysis.prompt)} prompt tokens{forced}: {parted}; "
            f"top-1 agrees {agree}/{n}; worst logits SQNR {worst} dB "
            f"({analysis.seconds:.1f} s)")


RED, YELLOW, GREEN = (215, 48, 39), (215, 200, 39), (26, 152, 80)
NOT_MEASURED = (234, 238, 242)


def heat_image(matrix: np.ndarray) -> np.ndarray:
    """The heat map's pixels, one per cell (steps x ops x RGB, uint8): red at LOW_DB or
    below, through yellow, to green at HIGH_DB or above; `NOT_MEASURED` grey for a cell
    not measured (NaN).  A decoder of thousands of ops over hundreds of steps is one
    image, not a rectangle per cell."""
    m = np.asarray(matrix, np.float64)
    x = np.clip((np.nan_to_num(m, nan=LOW_DB) - LOW_DB) / (HIGH_DB - LOW_DB), 0.0, 1.0)[..., None]
    low, mid, high = (np.array(c, np.float64) for c in (RED, YELLOW, GREEN))
    lower = low + (mid - low) * np.minimum(x * 2, 1.0)
    upper = mid + (high - mid) * np.maximum(x * 2 - 1, 0.0)
    out = np.where(x < 0.5, lower, upper).astype(np.uint8)
    out[np.isnan(m)] = NOT_MEASURED
    return out


#: litert-torch names every tensor of a decoder layer by its module path, which holds the
#: layer's ``TransformerBlock_N`` (the first of a fused op's ``;;``-joined names)
_BLOCK = re.compile(r"TransformerBlock_(\d+)")


@dataclass(frozen=True)
class Layers:
    """The heat map's columns: a decoder's layers in order (the ops before the first block,
    each block, the ops after the last), each cell the worst SQNR of the layer's ops at
    that step and ``worst`` the op (the analysis's column) that gives it, -1 where no op
    of the layer was measured.  Where no name says its layer (not a litert-torch export),
    each op is its own column."""

    labels: list[str]
    matrix: np.ndarray
    worst: np.ndarray


def layer_of(name: str) -> int | None:
    """The decoder layer a tensor's name puts it in (None: outside every block)."""
    m = _BLOCK.search(name.split(";;", 1)[0])
    return int(m.group(1)) if m else None


def by_layer(matrix: np.ndarray, names: Sequence[str], ops: Sequence[str]) -> Layers:
    """Steps x ops of SQNR (``names``: each op's output tensor name, ``ops``: its label)
    grouped into `Layers`."""
    m = np.asarray(matrix, np.float64)
    blocks = [layer_of(n) for n in names]
    if m.ndim != 2 or not any(b is not None for b in blocks):
        cols = np.arange(m.shape[1] if m.ndim == 2 else 0)
        return Layers(list(ops), m, np.broadcast_to(cols, m.shape).copy())
    first = next(i for i, b in enumerate(blocks) if b is not None)
    keys = ["in" if b is None and i < first else "out" if b is None else b
            for i, b in enumerate(blocks)]
    order = (["in"] if "in" in keys else []) + sorted({k for k in keys if isinstance(k, int)}) \
        + (["out"] if "out" in keys else [])
    labels = [{"in": "before the blocks", "out": "after the blocks"}.get(k, f"block {k}")
              if isinstance(k, str) else f"block {k}" for k in order]
    matrix_out = np.full((m.shape[0], len(order)), np.nan)
    worst = np.full((m.shape[0], len(order)), -1, np.int64)
    for c, key in enumerate(order):
        cols = np.array([i for i, k in enumerate(keys) if k == key])
        part = m[:, cols]
        measured = ~np.isnan(part)
        filled = np.where(measured, part, np.inf)
        pick = np.argmin(filled, axis=1)
        has = measured.any(axis=1)
        matrix_out[has, c] = filled[has, pick[has]]
        worst[has, c] = cols[pick[has]]
    return Layers(labels, matrix_out, worst)
