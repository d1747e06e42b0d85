"""Quantized MEAN, SUM, REDUCE_MAX/REDUCE_MIN and ARG_MAX/ARG_MIN.

MEAN and SUM mirror ``reference_ops::QuantizedMeanOrSum``: an int32 (wrapping) sum over the
reduced axes, the input zero point times the element count removed, then one
MultiplyByQuantizedMultiplier by input_scale / output_scale, into which MEAN folds
1 / count as an integer division of the multiplier (reduce.cc's PrepareMeanOrSum).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np

from .. import compiled
from .. import quant_math as qm
from .common import (RescaleParams, Rounding, dtype_range, prepare_rescale,
                     qparams, saturate_cast)


def resolve_axes(axis: Sequence[int] | np.ndarray | int, ndim: int) -> tuple[int, ...]:
    """ResolveAxis: negative axes wrapped, duplicates dropped, order kept."""
    out: list[int] = []
    for a in np.atleast_1d(np.asarray(axis, dtype=np.int64)).tolist():
        a = a + ndim if a < 0 else a
        if not 0 <= a < ndim:
            raise ValueError(f"axis {a} out of range for rank {ndim}")
        if a not in out:
            out.append(a)
    return tuple(out)


MeanParams = RescaleParams


def prepare_mean(input_q, output_q, rounding: Rounding = "double") -> MeanParams:
    """PrepareMeanOrSum: QuantizeMultiplier(double(input_scale) / double(output_scale))."""
    return prepare_rescale(input_q, output_q, rounding)


def _reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def mean_or_sum(input: np.ndarray, axis, input_q=None, output_q=None, keep_dims: bool = False,
                compute_sum: bool = False, rounding: Rounding = "double",
                params: MeanParams | None = None) -> np.ndarray:
    """QuantizedMeanOrSum for uint8, int8 and int16 (``compute_sum`` selects SUM)."""
    p = params or prepare_mean(input_q, output_q, rounding)
    axes = resolve_axes(axis, input.ndim)
    out_shape = _reduced_shape(input.shape, axes, keep_dims)
    lo, hi = dtype_range(input.dtype)
    count = int(np.prod([input.shape[a] for a in axes], dtype=np.int64)) if axes else 1
    if count == 0:
        return np.zeros(out_shape, input.dtype)
    # (C's int32 sums wrap; `requantize_int64` wraps the int64 sums the same way)
    total = input.sum(axis=axes, dtype=np.int64) if axes else input.astype(np.int64)
    multiplier, shift = (p.multiplier, p.shift) if compute_sum else \
        mean_multiplier(p.multiplier, p.shift, count)
    total -= p.input_zero_point * count
    out = qm.requantize_int64(total, multiplier, shift, p.rounding)
    out += p.output_zero_point
    qm.clip_into(out, lo, hi)
    return out.astype(input.dtype).reshape(out_shape)


def compiled_spatial(p: MeanParams, input_shape: tuple[int, ...], dtype,
                     compute_sum: bool):
    """MEAN (SUM: ``compute_sum``) of an 8-bit NHWC input over its height and width (a
    global average pool) as one compiled loop (`compiled_loops.sum_requantized`), a
    function of the input giving [N, C]; None when compiled kernels are off, for other
    types, or where the multiplier needs the step-by-step rounding (`requantize_table`).
    The numpy form's dozen calls cost a model's last MEAN 20-30 us."""
    loops = compiled.loops()
    if loops is None or np.dtype(dtype) not in (np.dtype(np.int8), np.dtype(np.uint8)) \
            or len(input_shape) != 4:
        return None
    n, h, w, c = input_shape
    count = h * w
    if not count:
        return None
    multiplier, shift = (p.multiplier, p.shift) if compute_sum else \
        mean_multiplier(p.multiplier, p.shift, count)
    table = loops.requantize_table(np.array([multiplier]), np.array([shift]), 1,
                                   p.rounding == "double")
    if table is None:
        return None
    lo, hi = dtype_range(dtype)
    args = (p.input_zero_point * count, table, p.output_zero_point, lo, hi)

    def run(x: np.ndarray) -> np.ndarray:
        out = np.empty((n, c), dtype)
        loops.sum_requantized(x.reshape(n, count, c), *args, out)
        return out
    return run


@lru_cache(maxsize=256)
def mean_multiplier(multiplier: int, shift: int, count: int) -> tuple[int, int]:
    """PrepareMeanOrSum's 1/count folded into the multiplier: shifted left by as many
    bits as the shift allows, divided by count (truncating), wrapped to int32."""
    s = min(count.bit_length() - 1, 32, 31 + shift)
    folded = int(qm.trunc_div(np.int64(multiplier) << s, count))
    return int(np.int64(folded).astype(np.int32)), shift - s


def mean(input: np.ndarray, axis, input_q, output_q, keep_dims: bool,
         rounding: Rounding = "double", params: MeanParams | None = None) -> np.ndarray:
    """Quantized MEAN."""
    return mean_or_sum(input, axis, input_q, output_q, keep_dims, False, rounding, params)


def sum(input: np.ndarray, axis, input_q, output_q, keep_dims: bool,  # noqa: A001
        rounding: Rounding = "double", params: MeanParams | None = None) -> np.ndarray:
    """Quantized SUM."""
    return mean_or_sum(input, axis, input_q, output_q, keep_dims, True, rounding, params)


def reduce_max(input: np.ndarray, axis, keep_dims: bool) -> np.ndarray:
    """REDUCE_MAX on raw quantized values (input and output share quantization)."""
    axes = resolve_axes(axis, input.ndim)
    if not axes:
        return input.copy()
    initial = np.iinfo(input.dtype).min if not input.size else None  # the kernel's start
    return np.asarray(input.max(axis=axes, keepdims=keep_dims, initial=initial))


def reduce_min(input: np.ndarray, axis, keep_dims: bool) -> np.ndarray:
    """REDUCE_MIN on raw quantized values."""
    axes = resolve_axes(axis, input.ndim)
    if not axes:
        return input.copy()
    initial = np.iinfo(input.dtype).max if not input.size else None
    return np.asarray(input.min(axis=axes, keepdims=keep_dims, initial=initial))


def arg_max(input: np.ndarray, axis: int, output_dtype=np.int64) -> np.ndarray:
    """ARG_MAX: index of the first maximum along ``axis`` (raw values compare like the
    dequantized ones since the scale is positive)."""
    a = resolve_axes(axis, input.ndim)[0]
    return np.asarray(np.argmax(input, axis=a)).astype(output_dtype)


def reduce_prod(x: np.ndarray, axes, keep_dims: bool, input_q, output_q,
                rounding: Rounding = "double") -> np.ndarray:
    """QuantizedReduceProd (int8, int16): the product of (q - zp) over the reduced axes in
    input order, each step rescaled by s_in / s_out^(1/n) (n the reduced size) with the
    int64 MultiplyByQuantizedMultiplier, then once more, plus the output zero point."""
    iq, oq = qparams(input_q), qparams(output_q)
    rank = x.ndim
    red = sorted({int(a) + rank if int(a) < 0 else int(a) for a in np.asarray(axes).reshape(-1)})
    keep = [d for d in range(rank) if d not in red]
    out_shape = tuple(1 if d in red else x.shape[d] for d in range(rank)) if keep_dims else \
        tuple(x.shape[d] for d in keep)
    moved = np.transpose(x, keep + red).reshape(
        int(np.prod([x.shape[d] for d in keep], dtype=np.int64)), -1).astype(np.int64)
    n = moved.shape[1]
    if moved.size == 0 or n == 0:
        return np.zeros(out_shape, x.dtype)
    scaling = float(np.float32(iq.s)) / (float(np.float32(oq.s)) ** (1.0 / n))
    m, s = qm.quantize_multiplier(scaling, rounding)
    acc = moved[:, 0] - iq.zp
    for j in range(1, n):
        acc = qm.multiply_by_quantized_multiplier_int64(acc * (moved[:, j] - iq.zp), m, s,
                                                        rounding)
    out = qm.multiply_by_quantized_multiplier_int64(acc, m, s, rounding) + oq.zp
    return saturate_cast(out, x.dtype).reshape(out_shape)
