"""QUANTIZE (float -> int, int -> int) and DEQUANTIZE (int/float16 -> float32).

Mirrors ``reference_ops::AffineQuantize`` / ``PerChannelQuantize``, ``Requantize`` and
``Dequantize`` / ``PerChannelDequantize`` with quantize.cc's Prepare.
"""
from __future__ import annotations


import numpy as np

from .. import quant_math as qm
from .common import (RescaleParams, Rounding, dtype_range, prepare_rescale, qparams,
                     saturate_cast)


def _axis_shape(ndim: int, axis: int) -> tuple[int, ...]:
    shape = [1] * ndim
    shape[axis] = -1
    return tuple(shape)


def _to_int32(x: np.ndarray) -> np.ndarray:
    """static_cast<int32_t>(float) as x86 does it: out-of-range values become INT32_MIN."""
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(x) < 2.0 ** 31)
        return np.where(bad, qm.INT32_MIN, np.where(bad, 0, x).astype(np.int64))


def quantize(input: np.ndarray, output_q, output_dtype) -> np.ndarray:
    """Float32 to uint8/int8/int16: round(x / scale) + zero point, clamped.

    The division is float32 and TfLiteRound rounds halves away from zero; a tensor with
    several scales is quantized per channel along its quantized dimension.
    """
    oq = qparams(output_q)
    x = np.asarray(input, dtype=np.float32)
    lo, hi = dtype_range(output_dtype)
    if oq.per_channel:
        shape = _axis_shape(x.ndim, oq.quantized_dimension)
        scale = oq.scale.astype(np.float32).reshape(shape)
        zp = (oq.zero_point if oq.zero_point.size == oq.scale.size
              else np.full(oq.scale.size, oq.zero_point[0])).reshape(shape)
    else:
        scale, zp = np.float32(oq.s), oq.zp
    with np.errstate(all="ignore"):
        q = _to_int32(qm.round_half_away(np.float32(x / scale))) + zp
    return np.clip(q, lo, hi).astype(output_dtype)


RequantizeParams = RescaleParams


def prepare_requantize(input_q, output_q, rounding: Rounding = "double") -> RequantizeParams:
    """quantize.cc Prepare for integer inputs: QuantizeMultiplier(double(s_in) / double(s_out))."""
    return prepare_rescale(input_q, output_q, rounding)


def requantize(input: np.ndarray, input_q=None, output_q=None, output_dtype=None,
               rounding: Rounding = "double", params: RequantizeParams | None = None
               ) -> np.ndarray:
    """Integer to integer QUANTIZE (Requantize): (x - zp_in) * M + zp_out, clamped to
    ``output_dtype`` (default: the input's type)."""
    output_dtype = np.dtype(input.dtype if output_dtype is None else output_dtype)
    p = params or prepare_requantize(input_q, output_q, rounding)
    x = input.astype(np.int64) - p.input_zero_point
    out = qm.multiply_by_quantized_multiplier(x, p.multiplier, p.shift, p.rounding)
    return saturate_cast(out + p.output_zero_point, output_dtype)


def dequantize(input: np.ndarray, input_q=None) -> np.ndarray:
    """DEQUANTIZE to float32.

    float16 inputs are widened.  Per-tensor: ``float(double(scale) * (q - zp))`` (the
    DequantizationParams scale is a double); per-channel: the product in float32.
    """
    if input.dtype == np.float16:
        return input.astype(np.float32)
    q = qparams(input_q)
    x = input.astype(np.int64)
    if q.per_channel:
        shape = _axis_shape(x.ndim, q.quantized_dimension)
        zp = (q.zero_point if q.zero_point.size == q.scale.size
              else np.full(q.scale.size, q.zero_point[0])).reshape(shape)
        return (q.scale.astype(np.float32).reshape(shape)
                * (x - zp).astype(np.float32)).astype(np.float32)
    return (np.float64(q.s) * (x - q.zp).astype(np.float64)).astype(np.float32)
