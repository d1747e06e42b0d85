"""Quantized unary math of elementwise.cc and GELU: RSQRT, SQRT, LOG, ABS (int8/int16) and
GELU (uint8/int8/int16), as LiteRT's kernels compute them.

RSQRT int8 runs the fixed-point inverse square root (GetInvSqrtQuantizedMultiplierExp) per
value; RSQRT int16, LOG and GELU look values up in a table built at prepare (LUTPopulate);
SQRT dequantizes, takes the float square root and truncates; ABS rescales |q - zp| with a
quantized multiplier when the scales differ.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import quant_math as qm
from .common import QParams, Rounding, dtype_range, saturate_cast
from .fixedpoint import inv_sqrt_quantized_multiplier_exp
from .lut import _float_fn, lut_lookup_int8, lut_lookup_int16, lut_populate_int8, \
    lut_populate_int16

F32 = np.float32
#: float(M_2_SQRTPI * M_SQRT1_2): sqrt(2 / pi) as GeluTransformApproximate's constant
_SQRT_2_OVER_PI = F32((2.0 / math.sqrt(math.pi)) * math.sqrt(0.5))
_SQRT1_2 = F32(math.sqrt(0.5))


def gelu_transform(x: np.float32) -> np.float32:
    """GeluTransform: 0.5 x erfc(-x / sqrt 2) in float32."""
    erfc = _float_fn("erfcf", math.erfc)
    return F32(F32(F32(0.5) * F32(x)) * erfc(F32(F32(x) * -_SQRT1_2)))


def gelu_transform_approximate(x: np.float32) -> np.float32:
    """GeluTransformApproximate: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) in float32."""
    tanh = _float_fn("tanhf", math.tanh)
    x = F32(x)
    cube = F32(F32(F32(F32(0.044715) * x) * x) * x)
    inner = F32(_SQRT_2_OVER_PI * F32(x + cube))
    return F32(F32(F32(0.5) * x) * F32(F32(1) + tanh(inner)))


def _table(dtype, input_q: QParams, output_q: QParams, transform) -> np.ndarray:
    if np.dtype(dtype) == np.int16:
        return lut_populate_int16(input_q.s, input_q.zp, output_q.s, output_q.zp, transform)
    return lut_populate_int8(input_q.s, input_q.zp, output_q.s, output_q.zp, transform, dtype)


def lookup(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """A table of `_table` applied (int16: interpolated; 8-bit: indexed)."""
    if x.dtype == np.int16:
        return lut_lookup_int16(x, table)
    return lut_lookup_int8(x, table)


def gelu_table(dtype, input_q: QParams, output_q: QParams, approximate: bool) -> np.ndarray:
    """GeluPrepare's LUTPopulate for uint8/int8/int16."""
    return _table(dtype, input_q, output_q,
                  gelu_transform_approximate if approximate else gelu_transform)


def log_table(dtype, input_q: QParams, output_q: QParams) -> np.ndarray:
    """LogLUTPrepare: log, with values <= 0 mapped to the output's lowest value."""
    lo = dtype_range(dtype)[0]
    output_min = F32(F32(lo - output_q.zp) * F32(output_q.s))
    log = _float_fn("logf", math.log)
    return _table(dtype, input_q, output_q,
                  lambda v: output_min if v <= 0 else log(v))


def exp_table(dtype, input_q: QParams, output_q: QParams) -> np.ndarray:
    """exp.cc Prepare: LUTPopulate of expf for int8 and int16."""
    return _table(dtype, input_q, output_q, _float_fn("expf", math.exp))


def rsqrt_int16_table(input_q: QParams, output_q: QParams) -> np.ndarray:
    """PrepareRsqrt's int16 table: 1/sqrt(v), values <= 0 mapped to 32767 * output scale."""
    out_scale = F32(output_q.s)
    sqrt = _float_fn("sqrtf", math.sqrt)
    return _table(np.int16, input_q, output_q,
                  lambda v: F32(32767 * out_scale) if v <= 0 else F32(F32(1) / sqrt(v)))


@dataclass(frozen=True)
class RsqrtInt8:
    """SetRsqrtOutputMultiplier: 1 / (sqrt(s_in) * s_out) as a quantized multiplier."""

    input_offset: int
    output_offset: int
    multiplier: int
    shift: int


def prepare_rsqrt_int8(input_q: QParams, output_q: QParams, rounding: Rounding) -> RsqrtInt8:
    scale = 1.0 / (math.sqrt(float(F32(input_q.s))) * float(F32(output_q.s)))
    m, s = qm.quantize_multiplier(scale, rounding)
    return RsqrtInt8(input_q.zp, output_q.zp, int(m), int(s))


def rsqrt_int8(x: np.ndarray, p: RsqrtInt8, rounding: Rounding = "double") -> np.ndarray:
    """RsqrtEvalQuantizedInt8: values below the input zero point are an error."""
    value = x.astype(np.int64) - p.input_offset
    if np.any(value < 0):
        raise ValueError("Rsqrt is only defined for positive values")
    k_shift = 20
    mult, shift = inv_sqrt_quantized_multiplier_exp(value, -1)
    data = qm.multiply_by_quantized_multiplier(np.ones_like(value), mult, shift + k_shift,
                                               rounding)
    out = qm.multiply_by_quantized_multiplier(data, p.multiplier, p.shift - k_shift,
                                              rounding) + p.output_offset
    out = np.where(value == 0, 127, out)
    return np.clip(out, -128, 127).astype(np.int8)


def check_positive(x: np.ndarray, input_q: QParams) -> None:
    """RsqrtEvalQuantizedInt16's input check."""
    if np.any(x.astype(np.int64) < input_q.zp):
        raise ValueError("Rsqrt is only defined for positive values")


def sqrt_quantized(x: np.ndarray, input_q: QParams, output_q: QParams) -> np.ndarray:
    """SqrtEvalQuantized: float sqrt of the dequantized value, truncated toward zero."""
    deq = F32(input_q.s) * (x.astype(np.int32) - input_q.zp).astype(F32)
    if np.any(deq < 0):
        raise ValueError("Sqrt is only defined for non-negative values")
    q = np.trunc(np.sqrt(deq) / F32(output_q.s)).astype(np.int64) + output_q.zp
    return saturate_cast(q, x.dtype)


@dataclass(frozen=True)
class AbsParams:
    input_offset: int
    output_offset: int
    needs_rescale: bool
    multiplier: int
    shift: int


def prepare_abs(input_q: QParams, output_q: QParams, rounding: Rounding) -> AbsParams:
    """SetAbsOutputMultiplier when the scales differ."""
    rescale = F32(input_q.s) != F32(output_q.s)
    m, s = qm.quantize_multiplier(float(F32(input_q.s)) / float(F32(output_q.s)), rounding) \
        if rescale else (0, 0)
    return AbsParams(input_q.zp, output_q.zp, bool(rescale), int(m), int(s))


def abs_quantized(x: np.ndarray, p: AbsParams, rounding: Rounding = "double") -> np.ndarray:
    """AbsEvalQuantized."""
    value = np.abs(x.astype(np.int64) - p.input_offset)
    if p.needs_rescale:
        value = qm.multiply_by_quantized_multiplier(value, p.multiplier, p.shift, rounding)
    return saturate_cast(value + p.output_offset, x.dtype)
