"""Activation range use: how the quantized activations fill their integer range.

Accumulated over every sample: a histogram over the integer range, the fraction of values
at each limit (what clipping leaves behind), the range the values actually use; with a
float model, the fraction of float values beyond each end of the representable range (the
clipping itself) and a histogram of those float values on the representable range.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .ranges import integer_range

HIST_BINS = 64


@dataclass
class ActivationStats:
    tensor: int
    type_name: str
    qmin: int
    qmax: int
    scale: float
    zero_point: int
    count: int = 0
    at_min: int = 0
    at_max: int = 0
    q_low: int | None = None
    q_high: int | None = None
    float_count: int = 0
    float_below: int = 0
    float_above: int = 0
    q_hist: np.ndarray = field(default=None, repr=False)       # HIST_BINS bins on [qmin, qmax]
    float_hist: np.ndarray = field(default=None, repr=False)   # same bins, float values

    @property
    def real_range(self) -> tuple[float, float]:
        return ((self.qmin - self.zero_point) * self.scale, (self.qmax - self.zero_point) * self.scale)

    def edges(self) -> np.ndarray:
        lo, hi = self.real_range
        return np.linspace(lo, hi, HIST_BINS + 1)

    def add(self, q: np.ndarray, reference: np.ndarray | None) -> None:
        q = np.asarray(q).reshape(-1)
        if self.q_hist is None:
            self.q_hist = np.zeros(HIST_BINS, np.int64)
            self.float_hist = np.zeros(HIST_BINS, np.int64)
        self.count += q.size
        self.at_min += int(np.count_nonzero(q == self.qmin))
        self.at_max += int(np.count_nonzero(q == self.qmax))
        if q.size:
            lo, hi = int(q.min()), int(q.max())
            self.q_low = lo if self.q_low is None else min(self.q_low, lo)
            self.q_high = hi if self.q_high is None else max(self.q_high, hi)
            span = self.qmax - self.qmin
            bins = ((q.astype(np.int64) - self.qmin) * HIST_BINS // (span + 1)).clip(0, HIST_BINS - 1)
            self.q_hist += np.bincount(bins, minlength=HIST_BINS)
        if reference is not None:
            r = np.asarray(reference, dtype=np.float64).reshape(-1)
            lo, hi = self.real_range
            # beyond the outermost representable value by more than half a step
            half = 0.5 * self.scale
            self.float_count += r.size
            self.float_below += int(np.count_nonzero(r < lo - half))
            self.float_above += int(np.count_nonzero(r > hi + half))
            # equal bins over [lo, hi] (values beyond it in the end bins): a bincount, where
            # np.histogram with explicit edges would sort the values
            b = ((r - lo) * (HIST_BINS / (hi - lo))).astype(np.int64).clip(0, HIST_BINS - 1)
            self.float_hist += np.bincount(b, minlength=HIST_BINS)

    def to_dict(self) -> dict[str, Any]:
        n = max(self.count, 1)
        span = self.qmax - self.qmin
        used = ((self.q_high - self.q_low) / span) if self.q_low is not None else None
        lo, hi = self.real_range
        d = {"tensor": self.tensor, "type_name": self.type_name, "scale": self.scale,
             "zero_point": self.zero_point, "representable": [lo, hi],
             "used": None if self.q_low is None else [
                 (self.q_low - self.zero_point) * self.scale,
                 (self.q_high - self.zero_point) * self.scale],
             "at_min_fraction": self.at_min / n, "at_max_fraction": self.at_max / n,
             "unused_fraction": None if used is None else 1.0 - used,
             "histogram": self.q_hist.tolist() if self.q_hist is not None else []}
        if self.float_count:
            d["float_below_fraction"] = self.float_below / self.float_count
            d["float_above_fraction"] = self.float_above / self.float_count
            d["float_histogram"] = self.float_hist.tolist()
        return d


def new_stats(t) -> ActivationStats | None:
    """Stats for a quantized per-tensor activation of the runtime/model tensor ``t``."""
    q = t.quantization
    rng = integer_range(t.type_name)
    if q is None or not q.has_scale or q.scale.size != 1 or rng is None:
        return None
    zp = int(q.zero_point[0]) if q.zero_point.size else 0
    return ActivationStats(t.index, t.type_name, rng[0], rng[1], float(q.scale[0]), zp)
