"""Statistics, histograms and per-channel tables of tensor values (no Qt).

Kept apart from the widgets so tests can compare every figure the tensor inspector shows
with numpy on the same data, and so a notebook can reuse them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...model import Tensor
from ...quant.ranges import integer_range

# np.unique sorts everything: past this many elements the distinct count is not computed.
DISTINCT_LIMIT = 20_000_000
# ... and while stepping, where every stop brings new values (a 1M-element activation
# takes ~40 ms to sort, more than a step may take), past this many.
LIVE_DISTINCT_LIMIT = 65_536
INTEGER_BIN_LIMIT = 512  # integer ranges up to this wide get one bin per value


@dataclass(frozen=True)
class Stats:
    count: int
    min: float
    max: float
    mean: float
    std: float
    zeros_percent: float
    distinct: int | None  # None: not computed (too many values)
    nan: int
    inf: int


@dataclass(frozen=True)
class Histogram:
    counts: np.ndarray  # (bins,) int64
    edges: np.ndarray  # (bins + 1,) float64
    integer_bins: bool  # one bin per integer value (edges at v - 0.5, v + 0.5)


def _as_numeric(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "c":
        return np.abs(values)
    if values.dtype.kind == "b":
        return values.astype(np.uint8)
    if values.dtype == object:
        raise TypeError("string tensors have no numeric statistics")
    return values


def statistics(values: np.ndarray, distinct_limit: int = DISTINCT_LIMIT) -> Stats:
    """min, max, mean, std (population), zeros %, distinct count (None past
    ``distinct_limit`` elements), NaN/Inf counts."""
    v = _as_numeric(np.asarray(values)).reshape(-1)
    n = int(v.size)
    if n == 0:
        return Stats(0, float("nan"), float("nan"), float("nan"), float("nan"), 0.0, 0, 0, 0)
    if v.dtype.kind == "f":
        finite_mask = np.isfinite(v)
        nan = int(np.isnan(v).sum())
        inf = int(n - nan - finite_mask.sum())
        f = v[finite_mask].astype(np.float64) if nan or inf else v.astype(np.float64)
    else:
        nan = inf = 0
        f = v.astype(np.float64)
    if f.size:
        lo, hi, mean, std = float(f.min()), float(f.max()), float(f.mean()), float(f.std())
    else:
        lo = hi = mean = std = float("nan")
    zeros = float(np.count_nonzero(v == 0)) * 100.0 / n
    distinct = int(np.unique(v).size) if n <= distinct_limit else None
    return Stats(n, lo, hi, mean, std, zeros, distinct, nan, inf)


def histogram(values: np.ndarray, bins: int = 64) -> Histogram:
    """Counts of the values: one bin per integer for narrow integer ranges, else ``bins``
    equal bins over [min, max] (NaN and Inf left out)."""
    v = _as_numeric(np.asarray(values)).reshape(-1)
    if v.dtype.kind == "f":
        v = v[np.isfinite(v)]
    if v.size == 0:
        return Histogram(np.zeros(0, np.int64), np.zeros(1), False)
    if v.dtype.kind in "iub":
        lo, hi = int(v.min()), int(v.max())
        if hi - lo < INTEGER_BIN_LIMIT:
            counts = np.bincount((v.astype(np.int64) - lo), minlength=hi - lo + 1)
            edges = np.arange(lo, hi + 2, dtype=np.float64) - 0.5
            return Histogram(counts.astype(np.int64), edges, True)
    f = v.astype(np.float64)
    lo, hi = float(f.min()), float(f.max())
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    counts, edges = np.histogram(f, bins=bins, range=(lo, hi))
    return Histogram(counts.astype(np.int64), edges, False)


def channel_values(values: np.ndarray, axis: int, channel: int) -> np.ndarray:
    """The values of one channel along ``axis``."""
    return np.take(values, channel, axis=axis)


@dataclass(frozen=True)
class ChannelRow:
    channel: int
    scale: float
    zero_point: int
    real_min: float  # what the channel's quantized range [qmin, qmax] can represent
    real_max: float
    value_min: float | None  # the channel's actual dequantized values, when constant
    value_max: float | None


def quantized_range(type_name: str) -> tuple[int, int] | None:
    """The type's integer range (`tflite_viewer.quant.ranges`, the one table of them)."""
    return integer_range(type_name)


def per_channel_rows(tensor: Tensor) -> list[ChannelRow]:
    """One row per quantization channel: scale, zero point, representable range and the
    range the stored values actually use (for constants)."""
    q = tensor.quantization
    if q is None or not q.has_scale:
        return []
    scale = q.scale.astype(np.float64)
    zp = q.zero_point.astype(np.int64) if q.zero_point.size == scale.size else np.zeros(scale.size, np.int64)
    qrange = quantized_range(tensor.type_name)
    real = None
    if q.is_per_channel and tensor.is_constant:
        try:
            real = tensor.dequantized()
        except (ValueError, TypeError):
            real = None
    axis = q.quantized_dimension
    rows = []
    for c in range(scale.size):
        if qrange is not None:
            rmin, rmax = (qrange[0] - zp[c]) * scale[c], (qrange[1] - zp[c]) * scale[c]
        else:
            rmin = rmax = float("nan")
        vmin = vmax = None
        if real is not None and 0 <= axis < real.ndim and real.shape[axis] == scale.size:
            ch = channel_values(real, axis, c)
            if ch.size:
                vmin, vmax = float(ch.min()), float(ch.max())
        rows.append(ChannelRow(c, float(scale[c]), int(zp[c]), float(rmin), float(rmax), vmin, vmax))
    return rows


def density(tensor: Tensor) -> float | None:
    """Stored values / dense elements of a sparse tensor."""
    if tensor.sparsity is None:
        return None
    data = tensor.data()
    if data is None or not tensor.num_elements:
        return None
    return data.size / tensor.num_elements


def format_number(v: float | int | None, digits: int = 6) -> str:
    if v is None:
        return "\u2014"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if np.isnan(v):
        return "nan"
    if v == 0:
        return "0"
    if abs(v) >= 1e6 or abs(v) < 1e-4:
        return f"{v:.{digits - 2}e}"
    return f"{v:.{digits}g}"


@dataclass(frozen=True)
class Comparison:
    """Two versions of one tensor's values (ours and LiteRT's, dequantized and float ...)
    and their difference ``a - b``: what the inspector's Compare tab shows."""

    labels: tuple[str, str]
    a: np.ndarray
    b: np.ndarray
    stats: tuple[Stats, Stats]
    #: both arrays counted on the same bins (edges over both ranges), to draw overlaid
    overlay: tuple[Histogram, Histogram] | None
    diff: np.ndarray | None  # a - b as float64; None when the shapes differ
    diff_stats: Stats | None
    error: Histogram | None  # of ``diff``
    max_abs: float | None  # max |a - b| over the finite differences
    differing: int | None  # elements where a != b (NaN in both counts as equal)

    @property
    def diff_label(self) -> str:
        return f"{self.labels[0]} \u2212 {self.labels[1]}"


def _real_numeric(values: np.ndarray) -> np.ndarray:
    return _as_numeric(np.asarray(values)).astype(np.float64, copy=False)


def shared_histograms(a: np.ndarray, b: np.ndarray, bins: int = 64) -> tuple[Histogram, Histogram] | None:
    """``a`` and ``b`` counted on the same ``bins`` equal bins over the range of both
    (NaN and Inf left out); None when neither has a finite value."""
    fa, fb = _real_numeric(a).reshape(-1), _real_numeric(b).reshape(-1)
    fa, fb = fa[np.isfinite(fa)], fb[np.isfinite(fb)]
    both = [x for x in (fa, fb) if x.size]
    if not both:
        return None
    lo = min(float(x.min()) for x in both)
    hi = max(float(x.max()) for x in both)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    ca, edges = np.histogram(fa, bins=bins, range=(lo, hi))
    cb, _ = np.histogram(fb, bins=bins, range=(lo, hi))
    return (Histogram(ca.astype(np.int64), edges, False), Histogram(cb.astype(np.int64), edges, False))


def compare(a: np.ndarray, b: np.ndarray, labels: tuple[str, str] = ("a", "b"),
            bins: int = 64) -> Comparison:
    """Statistics of both, their histograms on shared bins, and the difference ``a - b``
    (its statistics, histogram, max |a - b| and how many elements differ).  Arrays of
    different shapes are compared side by side only (no difference)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == object or b.dtype == object:
        raise TypeError("string tensors have no numeric comparison")
    stats = (statistics(a), statistics(b))
    overlay = shared_histograms(a, b, bins)
    diff = diff_stats = error = max_abs = differing = None
    if a.shape == b.shape:
        fa, fb = _real_numeric(a), _real_numeric(b)
        with np.errstate(invalid="ignore", over="ignore"):
            diff = fa - fb
        diff_stats = statistics(diff, distinct_limit=0)
        error = histogram(diff, bins)
        finite = np.abs(diff[np.isfinite(diff)])
        max_abs = float(finite.max()) if finite.size else 0.0
        same = (fa == fb) | (np.isnan(fa) & np.isnan(fb))
        differing = int(same.size - np.count_nonzero(same))
    return Comparison(tuple(labels), a, b, stats, overlay, diff, diff_stats, error, max_abs,
                      differing)
