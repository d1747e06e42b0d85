"""Measuring one tensor on one sample: its activation statistics and, against the float
model's values, the metrics of `metrics.tensor_metrics`.

Analysis measures every activation of both models on every sample, so this is where its
time goes after the runs themselves.  A tensor quantized per tensor to an 8- or 16-bit
type takes at most 65,536 distinct values, so `TensorMeter` works from tables over the
type's whole range, built once per tensor:

* the integer statistics (counts at each limit, the range used, the histogram) come from
  one count of each integer value (`np.bincount`), not one pass per statistic;
* the dequantized values are a table lookup of ``(q - zero_point) * scale``, computed by
  the same float64 operations `ranges.dequantize` applies element by element, so they are
  the same numbers;
* the metrics share their float64 vectors and differences (`metrics.metrics_of_arrays`).

Other tensors (float, per-channel, wider types) take `ranges.dequantize` and
`metrics.tensor_metrics` as they come.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .activations import ActivationStats
from .metrics import MDR_TOLERANCE, metrics_of_arrays, tensor_metrics
from .ranges import broadcast_params, dequantize, integer_range

#: integer types whose every value a lookup table can hold
TABLE_TYPES = {"INT8": np.uint8, "UINT8": np.uint8, "INT16": np.uint16, "UINT16": np.uint16}


class Scratch:
    """Work arrays reused from tensor to tensor and sample to sample (an analysis measures
    hundreds of tensors per sample: fresh temporaries of that size cost more in page
    faults than the arithmetic done in them).  One per analysis, freed with it."""

    def __init__(self) -> None:
        self._arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, dtype, n: int) -> np.ndarray:
        a = self._arrays.get(name)
        if a is None or a.size < n:
            a = self._arrays[name] = np.empty(n, dtype)
        return a[:n]


class TensorMeter:
    """Measures one tensor (a model `Tensor`) of the quantized model, sample after sample."""

    def __init__(self, tensor) -> None:
        q = tensor.quantization
        self.quantization = q
        self.type_name = tensor.type_name
        self.scale = float(q.scale[0]) if q is not None and q.scale.size == 1 and \
            integer_range(tensor.type_name) else None
        self._tables: tuple | None = None
        view = TABLE_TYPES.get(tensor.type_name)
        if view is not None and q is not None and q.has_scale and q.scale.size == 1:
            lo, hi = integer_range(tensor.type_name)
            scale, zp = broadcast_params(q, ())
            values = np.arange(lo, hi + 1, dtype=np.int64)
            table = (values.astype(np.float64) - zp) * scale  # ranges.dequantize's operations
            # indexed by the raw bits read as unsigned (a signed value v sits at v mod 2^n)
            shift = -lo
            self._tables = (np.dtype(view), shift, np.roll(table, -shift))

    def measure(self, qv: np.ndarray, ref: np.ndarray | None, stats: ActivationStats | None,
                keep_values: bool, scratch: Scratch | None = None
                ) -> tuple[dict[str, Any] | None, tuple | None]:
        """One sample: ``stats`` (this sample's activation statistics, when the tensor has
        them) take the values; returns (the metrics against ``ref``, or None when unpaired
        or shaped otherwise; (float, dequantized) float32 values when ``keep_values``)."""
        tables = self._tables
        if tables is not None and qv.dtype.kind in "iu" and qv.dtype.itemsize == \
                tables[0].itemsize and (ref is None or np.shape(ref) == qv.shape):
            return self._measure_table(qv, ref, stats, keep_values, scratch or Scratch())
        if stats is not None:
            stats.add(qv, ref)
        if ref is None:
            return None, None
        q = self.quantization
        deq = dequantize(qv, q) if qv.dtype.kind in "iu" and q is not None else qv
        if np.shape(ref) != np.shape(deq):
            return None, None
        values = (np.asarray(ref, np.float32), np.asarray(deq, np.float32)) \
            if keep_values else None
        return tensor_metrics(ref, deq, self.scale), values

    def _measure_table(self, qv: np.ndarray, ref: np.ndarray | None,
                       stats: ActivationStats | None, keep_values: bool, sc: Scratch):
        view, shift, t64 = self._tables
        n = qv.size
        idx = sc.get("index", np.intp, n)
        np.copyto(idx, np.ascontiguousarray(qv).view(view).reshape(-1))
        if stats is not None:
            counts = np.bincount(idx, minlength=t64.size)  # by raw bits: value v at v mod 2^n
            stats.add_counts(np.concatenate((counts[-shift:], counts[:-shift])) if shift
                             else counts, n)  # np.roll's result, without its overhead
        if ref is None:
            return None, None
        r64 = sc.get("ref", np.float64, n)
        np.copyto(r64, np.reshape(ref, -1))
        if stats is not None:
            stats.add_float(r64, sc.get("work", np.float64, n), sc.get("bins", np.intp, n),
                            sc.get("mask", np.bool_, n))
        # the indices are a tensor's raw bits read as unsigned, all within the tables:
        # "clip" never clips, and is the fastest mode (a third faster than "wrap")
        d64 = np.take(t64, idx, out=sc.get("deq", np.float64, n), mode="clip")
        # the float32 values from d64 by a cast, cheaper than another lookup; the
        # median_diff_ratio's denominators |float| + tolerance in float32
        d32 = np.empty(n, np.float32) if keep_values else sc.get("deq32", np.float32, n)
        np.copyto(d32, d64, casting="same_kind")
        r32 = np.asarray(ref, np.float32).reshape(-1)
        den = np.abs(r32, out=sc.get("den32", np.float32, n))
        den += np.float32(MDR_TOLERANCE)
        row = metrics_of_arrays(r64, d64, self.scale, r32, d32, den,
                                work=sc.get("work", np.float64, n),
                                ratio=sc.get("ratio", np.float32, n))
        values = (np.array(r32).reshape(qv.shape), d32.reshape(qv.shape)) \
            if keep_values else None
        return row, values
