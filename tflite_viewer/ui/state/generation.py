"""The Quantization dock's Generation view of the open model, a part of its workspace (no Qt).

For an LLM pair (the open quantized decoder and its float original), both models generate
K tokens from a prompt (`quant.generation.analyze_generation`, on a worker); the view
shows per step each model's token, the logits' SQNR and KL, whether the top-1 agrees, and
the ops worst first, with a chart of logits SQNR by step and a steps x ops heat map.
`GenerationState` holds the analysis of the model it was run on, the chosen step and the
run's progress; `heat_image` and `step_rows` are what the widgets draw.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

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
