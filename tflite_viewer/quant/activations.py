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
        self._start()
        self.count += q.size
        self.at_min += int(np.count_nonzero(q == self.qmin))
        self.at_max += int(np.count_nonzero(q == self.qmax))
        if q.size:
            self._span(int(q.min()), int(q.max()))
            span = self.qmax - self.qmin
            bins = ((q.astype(np.int64) - self.qmin) * HIST_BINS // (span + 1)).clip(0, HIST_BINS - 1)
            self.q_hist += np.bincount(bins, minlength=HIST_BINS)
        if reference is not None:
            self.add_float(np.asarray(reference, dtype=np.float64).reshape(-1))

    def add_counts(self, counts: np.ndarray, size: int) -> None:
        """What `add` counts, from the number of occurrences of every integer value of the
        type (``counts[j]``: value qmin + j; a length divisible by HIST_BINS)."""
        self._start()
        self.count += size
        self.at_min += int(counts[0])
        self.at_max += int(counts[-1])
        if size:
            used = np.flatnonzero(counts)
            self._span(self.qmin + int(used[0]), self.qmin + int(used[-1]))
            self.q_hist += counts.reshape(HIST_BINS, -1).sum(axis=1)

    def add_float(self, r: np.ndarray, work: np.ndarray | None = None,
                  bins: np.ndarray | None = None, mask: np.ndarray | None = None) -> None:
        """The float model's values (a float64 vector) of the same tensor; ``work``
        (float64), ``bins`` (intp) and ``mask`` (bool) of its size are scratch space."""
        self._start()
        lo, hi = self.real_range
        # beyond the outermost representable value by more than half a step
        half = 0.5 * self.scale
        self.float_count += r.size
        self.float_below += int(np.count_nonzero(np.less(r, lo - half, out=mask)))
        self.float_above += int(np.count_nonzero(np.greater(r, hi + half, out=mask)))
        # equal bins over [lo, hi] (values beyond it in the end bins): a bincount, where
        # np.histogram with explicit edges would sort the values
        scaled = np.subtract(r, lo, out=work)
        np.multiply(scaled, HIST_BINS / (hi - lo), out=scaled)
        if bins is None:
            b = scaled.astype(np.int64)
        else:
            b = bins
            np.copyto(b, scaled, casting="unsafe")  # astype's conversion, into scratch
        np.minimum(np.maximum(b, 0, out=b), HIST_BINS - 1, out=b)  # np.clip's, in place
        self.float_hist += np.bincount(b, minlength=HIST_BINS)

    def _start(self) -> None:
        if self.q_hist is None:
            self.q_hist = np.zeros(HIST_BINS, np.int64)
            self.float_hist = np.zeros(HIST_BINS, np.int64)

    def _span(self, lo: int, hi: int) -> None:
        self.q_low = lo if self.q_low is None else min(self.q_low, lo)
        self.q_high = hi if self.q_high is None else max(self.q_high, hi)

    def empty(self) -> "ActivationStats":
        """The same tensor's statistics with nothing counted yet (one sample's share)."""
        return ActivationStats(self.tensor, self.type_name, self.qmin, self.qmax, self.scale,
                               self.zero_point)

    def merge(self, other: "ActivationStats") -> None:
        """Add what ``other`` (another share of the same tensor) counted."""
        if other.q_hist is None:
            return
        self._start()
        for name in ("count", "at_min", "at_max", "float_count", "float_below", "float_above"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.q_low is not None:
            self._span(other.q_low, other.q_high)
        self.q_hist += other.q_hist
        self.float_hist += other.float_hist

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
