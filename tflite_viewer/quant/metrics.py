"""Error metrics of a dequantized tensor against its float original.

The first five are TensorFlow's QuantizationDebugger layer metrics, on
``diffs = dequantized - float``: num_elements, stddev, mean_error, max_abs_error,
mean_squared_error.  Added here:

* ``rmse_scale``: sqrt(mean_squared_error) / scale, about 1/sqrt(12) = 0.289 when the only
  error is rounding to the tensor's grid (None without a single scale);
* ``cosine``: cosine similarity of the flattened tensors (1 when both are all zero);
* ``sqnr_db``: 20 log10(||float|| / ||float - dequantized||) (inf when they are equal);
* ``median_diff_ratio``: litert_quantizer's median(|q - float| / (|float| + 1e-6)): its
  validator (model_validator.compare_model) passes the quantized model's values first and
  the float model's second, which its function divides by; computed in float32 as it
  does.

Metrics are computed per input and averaged over inputs (arithmetic mean, as the debugger
and ai-edge-quantizer aggregate).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

METRICS = ("num_elements", "stddev", "mean_error", "max_abs_error", "mean_squared_error",
           "rmse_scale", "cosine", "sqnr_db", "median_diff_ratio")
#: metrics where a larger value is better (the rest: smaller is better)
HIGHER_IS_BETTER = frozenset({"cosine", "sqnr_db"})
IDEAL_RMSE_SCALE = 1.0 / math.sqrt(12.0)
MDR_TOLERANCE = 1e-6


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """The sum of products of two float64 vectors."""
    return float(np.dot(x, y))


def sqnr_db(reference: np.ndarray, approx: np.ndarray) -> float:
    """20 log10(||reference|| / ||reference - approx||); inf for no error, -inf for no
    signal with an error."""
    ref = np.asarray(reference, dtype=np.float64).reshape(-1)
    err = ref - np.asarray(approx, dtype=np.float64).reshape(-1)
    return _sqnr(_dot(ref, ref), _dot(err, err))


def _sqnr(signal2: float, noise2: float) -> float:
    noise, signal = math.sqrt(noise2), math.sqrt(signal2)
    if noise == 0.0:
        return math.inf
    ratio = signal / noise
    if ratio == 0.0:  # no signal, or an infinite error against a finite signal
        return -math.inf
    return 20.0 * math.log10(ratio)  # NaN stays NaN


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    x = np.asarray(a, dtype=np.float64).reshape(-1)
    y = np.asarray(b, dtype=np.float64).reshape(-1)
    return _cosine(_dot(x, x), _dot(y, y), _dot(x, y))


def _cosine(xx: float, yy: float, xy: float) -> float:
    na, nb = math.sqrt(xx), math.sqrt(yy)
    if na == 0.0 and nb == 0.0:
        return 1.0
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(xy / (na * nb))


def median_diff_ratio(reference: np.ndarray, approx: np.ndarray) -> float:
    """median(|approx - reference| / (|reference| + 1e-6)) in float32 (module docstring)."""
    r = np.asarray(reference, dtype=np.float32).reshape(-1)
    t = np.asarray(approx, dtype=np.float32).reshape(-1)
    if r.size == 0:
        return 0.0
    ratio = np.abs(r - t)
    ratio /= np.abs(r) + np.float32(MDR_TOLERANCE)
    return median_in_place(ratio)  # np.median's value (a fresh array: it may reorder it)


def tensor_metrics(reference: np.ndarray, dequantized: np.ndarray,
                   scale: float | None = None) -> dict[str, float]:
    """All `METRICS` of one tensor on one input (``scale``: the quantized tensor's single
    scale, for rmse_scale), by `metrics_of_arrays` (analysis computes this for every
    tensor of every sample, and for every op of its per-layer fallback)."""
    ref = np.asarray(reference, dtype=np.float64)
    deq = np.asarray(dequantized, dtype=np.float64)
    if ref.shape != deq.shape:
        raise ValueError(f"shapes differ: float {list(ref.shape)}, quantized {list(deq.shape)}")
    r = ref.reshape(-1)
    d = np.array(deq, dtype=np.float64).reshape(-1)  # a copy: metrics_of_arrays writes it
    r32, d32 = r.astype(np.float32), d.astype(np.float32)
    denom32 = np.abs(r32)
    denom32 += np.float32(MDR_TOLERANCE)
    return metrics_of_arrays(r, d, scale, r32, d32, denom32)


def _empty_metrics(scale: float | None) -> dict[str, float]:
    """`METRICS` of two empty tensors: no error."""
    return {"num_elements": 0.0, "stddev": 0.0, "mean_error": 0.0, "max_abs_error": 0.0,
            "mean_squared_error": 0.0, "rmse_scale": 0.0 if scale else None, "cosine": 1.0,
            "sqnr_db": math.inf, "median_diff_ratio": 0.0}


def metrics_of_arrays(r: np.ndarray, d: np.ndarray, scale: float | None, r32: np.ndarray,
                      d32: np.ndarray, denom32: np.ndarray, work: np.ndarray | None = None,
                      ratio: np.ndarray | None = None) -> dict[str, float]:
    """`tensor_metrics` of the float64 vectors ``r`` (reference) and ``d`` (dequantized),
    given also their float32 forms and ``denom32`` = |r32| + MDR_TOLERANCE (what the
    analysis has at hand from its lookup tables): the same operations on the same numbers,
    each vector read as few times as it can be.  ``work`` (float64) and ``ratio``
    (float32), of the vectors' size, are scratch space (else allocated); ``d`` is
    overwritten."""
    n = d.size
    if not n:
        return _empty_metrics(scale)
    rr, d_d = _dot(r, r), _dot(d, d)
    if not (math.isfinite(rr) and math.isfinite(d_d)):  # an infinity or a NaN somewhere
        return _metrics_of_non_finite(r, d, scale, r32, d32, denom32)
    return _metrics(r, d, scale, r32, d32, denom32, work, ratio, rr, d_d, _dot(r, d))


def _metrics_of_non_finite(r: np.ndarray, d: np.ndarray, scale: float | None,
                           r32: np.ndarray, d32: np.ndarray,
                           denom32: np.ndarray) -> dict[str, float]:
    """`metrics_of_arrays` where a vector holds an infinity or a NaN.  The same infinity
    in both (an attention mask's -inf in two models) is a value they agree on exactly:
    those positions are left out of every metric (num_elements still counts them), as
    they carry no magnitude to compare (inf - inf would make every metric NaN and call
    two equal tensors different).  What is left is computed as IEEE arithmetic gives it:
    an infinity against a finite value, or a NaN, makes the metrics that have no value
    NaN (the mean of +inf and -inf, an infinity's deviation), which is their answer, so
    numpy's warnings about producing them are not printed."""
    agree = (r == d) & np.isinf(r)
    if agree.any():
        keep = ~agree
        m = metrics_of_arrays(r[keep], d[keep], scale, r32[keep], d32[keep], denom32[keep])
        m["num_elements"] = float(r.size)
        return m
    with np.errstate(invalid="ignore", over="ignore"):
        return _metrics(r, d, scale, r32, d32, denom32, None, None,
                        _dot(r, r), _dot(d, d), _dot(r, d))


def _metrics(r: np.ndarray, d: np.ndarray, scale: float | None, r32: np.ndarray,
             d32: np.ndarray, denom32: np.ndarray, work: np.ndarray | None,
             ratio: np.ndarray | None, rr: float, d_d: float, rd: float) -> dict[str, float]:
    """`metrics_of_arrays`'s arithmetic, given the three dot products."""
    n = d.size
    diffs = np.subtract(d, r, out=work)
    dd = _dot(diffs, diffs)
    mse = dd / n
    mean = np.add.reduce(diffs) / n            # np.mean's sum and division
    max_abs = float(max(diffs.max(), -diffs.min()))
    dev = np.subtract(diffs, mean, out=d)      # np.std's operations
    np.multiply(dev, dev, out=dev)
    stddev = math.sqrt(np.add.reduce(dev) / n)
    ratio = np.subtract(r32, d32, out=ratio)   # median_diff_ratio's, in float32
    np.abs(ratio, out=ratio)
    np.divide(ratio, denom32, out=ratio)
    return {
        "num_elements": float(n),
        "stddev": float(stddev),
        "mean_error": float(mean),
        "max_abs_error": max_abs,
        "mean_squared_error": mse,
        "rmse_scale": (math.sqrt(mse) / scale) if scale else None,
        "cosine": _cosine(rr, d_d, rd),
        "sqnr_db": _sqnr(rr, dd),
        "median_diff_ratio": median_in_place(ratio),
    }


def median_in_place(values: np.ndarray) -> float:
    """np.median of a vector of non-negative floats (median_diff_ratio's ratios), which it
    may reorder.  Often half of them are exactly zero (where the quantized value equals
    the float one), which np.partition handles poorly: the zeros are counted instead, the
    middle order statistics looked for among the others, and the middle pair averaged in
    the vector's type as np.median averages it."""
    n = values.size
    if not n:
        return math.nan
    if math.isnan(np.add.reduce(values)):
        return math.nan  # a NaN (inf alone sums to inf): np.median gives NaN
    half = n // 2
    wanted = [half] if n % 2 else [half - 1, half]
    zeros = n - np.count_nonzero(values)
    if zeros > wanted[-1]:  # the middle lies among the zeros (a third of mobilenet_v2's
        return 0.0          # tensors): counted, nothing moved
    middle = _middle_by_buckets(values, wanted, zeros) if values.dtype == np.float32 \
        and n >= BUCKETS_FROM else None
    if middle is not None:
        if n % 2:
            return float(middle[0])
        return float((middle[0] + middle[1]) / values.dtype.type(2))
    nonzero = values[values != 0]
    kth = [k - zeros for k in wanted if k >= zeros]
    if kth:
        nonzero.partition(kth)
    zero = values.dtype.type(0)
    middle = [zero if k < zeros else nonzero[k - zeros] for k in wanted]
    if n % 2:
        return float(middle[0])
    return float((middle[0] + middle[1]) / values.dtype.type(2))


#: vector sizes from which `median_in_place` selects by buckets of the values' bits
BUCKETS_FROM = 2048


def _middle_by_buckets(values: np.ndarray, wanted: list[int], zeros: int) -> list | None:
    """The order statistics ``wanted`` of a float32 vector of non-negative values (no
    NaN), exactly: non-negative floats order as their bits do, so one count of the top 12
    bits (sign, exponent, 3 mantissa bits) gives the bucket holding each wanted rank, and
    only that bucket's values are partitioned.  Picking the nonzero values out of a vector
    that is half zeros (an int8 tensor against its float values) cost two to four times
    this.  ``zeros`` is how many values are 0.  None where a value has its sign bit set
    (-0.0) or a rank falls among denormals: the caller's plain selection then."""
    buckets = values.view(np.uint32) >> 20
    counts = np.bincount(buckets, minlength=4096)
    if counts[2048:].any():
        return None
    below = np.cumsum(counts)
    found: dict[int, list[tuple[int, int]]] = {}
    picked: dict[int, Any] = {}
    for k in wanted:
        b = int(np.searchsorted(below, k, side="right"))
        if b == 0:  # among zeros and denormals: a zero, or left to the caller
            if zeros <= k:
                return None
            picked[k] = values.dtype.type(0)
            continue
        found.setdefault(b, []).append((k, k - int(below[b - 1])))
    for b, ranks in found.items():
        part = values[buckets == b]
        part.partition([j for _, j in ranks])
        for k, j in ranks:
            picked[k] = part[j]
    return [picked[k] for k in wanted]


def average(per_input: Sequence[Mapping[str, float | None]]) -> dict[str, float | None]:
    """The mean of each metric over inputs (None where a metric is None): np.mean's
    numbers (each metric's values summed pairwise, as one row, then divided), for every
    metric at once (an analysis averages every tensor and every fallback op)."""
    n = len(per_input)
    table = np.zeros((len(METRICS), n))
    present = [bool(n)] * len(METRICS)
    for j, m in enumerate(per_input):
        for i, key in enumerate(METRICS):
            v = m.get(key)
            if v is None:
                present[i] = False
            elif present[i]:
                table[i, j] = v
    with np.errstate(invalid="ignore"):
        means = (np.add.reduce(table, axis=1) / n).tolist() if n else []
    return {key: means[i] if present[i] else None for i, key in enumerate(METRICS)}


def mean(values: Sequence[float]) -> float:
    """np.mean of a list of floats, without its wrapper's cost."""
    return float(np.add.reduce(np.asarray(values, dtype=np.float64)) / len(values))


def badness(metric: str, value: float | None) -> float:
    """A number that grows as ``value`` of ``metric`` gets worse (for ranking, colour)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return -math.inf
    if metric == "rmse_scale":
        return abs(value - IDEAL_RMSE_SCALE)
    return -value if metric in HIGHER_IS_BETTER else value
