"""Quantized activations: LOGISTIC, TANH, ELU (lookup tables), HARD_SWISH, RELU family,
LEAKY_RELU, PRELU.

8-bit LOGISTIC/TANH/ELU use the 256-entry tables activations.cc's Prepare builds with
``LUTPopulate`` (float32 arithmetic, libm's ``expf``/``tanhf``/``expm1f`` when available so
that table entries round exactly as LiteRT's).  int16 LOGISTIC/TANH follow
``reference_integer_ops::Logistic``/``Tanh``: a 256-entry sigmoid table in Q0.16 with linear
interpolation.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from .. import quant_math as qm
from .common import Rounding, check_rounding, dtype_range, qparams, saturate_cast

# --------------------------------------------------------------------------- libm


@lru_cache(maxsize=None)
def _libm() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("m")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:  # pragma: no cover - platform without a loadable libm
        return None


def _float_fn(name: str, fallback: Callable[[float], float]) -> Callable[[np.float32], np.float32]:
    """A float32 -> float32 libm function (``expf``...), or the float64 one rounded."""
    lib = _libm()
    fn = getattr(lib, name, None) if lib is not None else None
    if fn is not None:
        fn.restype = ctypes.c_float
        fn.argtypes = [ctypes.c_float]
        return lambda x: np.float32(fn(float(x)))
    return lambda x: np.float32(fallback(float(x)))


def _expf(x: np.float32) -> np.float32:
    return _float_fn("expf", math.exp)(x)


def _tanhf(x: np.float32) -> np.float32:
    return _float_fn("tanhf", math.tanh)(x)


def _expm1f(x: np.float32) -> np.float32:
    return _float_fn("expm1f", math.expm1)(x)


def _roundf(x) -> np.floating:
    """TfLiteRound: halves away from zero, in the argument's precision."""
    return type(x)(np.sign(x) * np.floor(np.abs(x) + type(x)(0.5)))


# --------------------------------------------------------------------------- LUTs


def lut_populate_int8(input_scale: float, input_zero_point: int, output_scale: float,
                      output_zero_point: int, transform: Callable[[np.float32], np.float32],
                      dtype) -> np.ndarray:
    """LUTPopulateInt8: entry for every input value, indexed by ``uint8(value)``.

    dequantized = s_in * (q - zp_in); out = round(f(dequantized) / s_out) + zp_out, clamped,
    all in float32 as the C++ does.
    """
    dtype = np.dtype(dtype)
    lo, hi = dtype_range(dtype)
    inverse = np.float32(1.0) / np.float32(output_scale)
    table = np.zeros(256, dtype=dtype)
    s_in = np.float32(input_scale)
    for val in range(lo, hi + 1):
        dequantized = np.float32(s_in * np.float32(val - input_zero_point))
        transformed = transform(dequantized)
        rescaled = _roundf(np.float32(transformed * inverse))
        quantized = int(np.float32(rescaled + np.float32(output_zero_point))) if np.isfinite(
            rescaled) else (hi if rescaled > 0 else lo)
        table[val & 0xFF] = max(lo, min(hi, quantized))
    return table


def lut_lookup_int8(x: np.ndarray, table: np.ndarray) -> np.ndarray:
    """LUTLookup for 8-bit types: ``lut[uint8(value)]``."""
    return table[x.astype(np.uint8)]


def lut_populate_int16(input_scale: float, input_zero_point: int, output_scale: float,
                       output_zero_point: int, transform: Callable, float_type=np.float32
                       ) -> np.ndarray:
    """LUTPopulateInt16<FloatT>: 512 segments over the input range, each sample corrected by
    half the midpoint interpolation error, plus the end point (513 entries)."""
    F = float_type
    imin, imax = -32768, 32767
    input_min = F(F(input_scale) * F(imin - input_zero_point))
    input_max = F(F(input_scale) * F(imax - input_zero_point))
    output_min = F(F(output_scale) * F(imin - output_zero_point))
    output_max = F(F(output_scale) * F(imax - output_zero_point))
    nb_steps = 512
    step = F((input_max - input_min) / F(nb_steps))
    half_step = F(step / F(2))
    scaling_inv = F(F(65536) / F(output_max - output_min))
    table_min, table_max = F(imin), F(imax)
    lut = np.zeros(nb_steps + 1, dtype=np.int16)
    for i in range(nb_steps):
        x = F(input_min + F(F(i) * step))
        val = F(transform(x))
        val_mid = F(transform(F(x + half_step)))
        val_next = F(transform(F(input_min + F(F(i + 1) * step))))
        sample = _roundf(F(val * scaling_inv))
        mid_interp = _roundf(F(F(F(val_next * scaling_inv) + _roundf(F(val * scaling_inv))) / F(2)))
        mid_val = _roundf(F(val_mid * scaling_inv))
        bias = _roundf(F(F(mid_interp - mid_val) / F(2)))
        lut[i] = int(min(max(F(sample - bias), table_min), table_max))
    last = _roundf(F(F(transform(input_max)) * scaling_inv))
    lut[nb_steps] = int(min(max(last, table_min), table_max))
    return lut


def lut_lookup_int16(x: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """LUTLookup for int16: 9-bit index plus 7-bit linear interpolation."""
    v = x.astype(np.int64)
    index = 256 + (v >> 7)
    offset = v & 0x7F
    base = lut.astype(np.int64)[index]
    slope = lut.astype(np.int64)[index + 1] - base
    delta = (slope * offset + 64) >> 7
    return (base + delta).astype(np.int16)


# --------------------------------------------------------------------------- 8-bit tables

def _sigmoid(x: np.float32) -> np.float32:
    return np.float32(np.float32(1.0) / np.float32(np.float32(1.0) + _expf(np.float32(-x))))


def _elu(x: np.float32) -> np.float32:
    return _expm1f(x) if x < 0 else x


def logistic_table(input_q, output_q, dtype) -> np.ndarray:
    """SigmoidPrepare (uint8/int8): LUTPopulate with 1 / (1 + expf(-x))."""
    iq, oq = qparams(input_q), qparams(output_q)
    return lut_populate_int8(iq.s, iq.zp, oq.s, oq.zp, _sigmoid, dtype)


def tanh_table(input_q, output_q, dtype) -> np.ndarray:
    """TanhPrepare (uint8/int8): LUTPopulate with tanhf."""
    iq, oq = qparams(input_q), qparams(output_q)
    return lut_populate_int8(iq.s, iq.zp, oq.s, oq.zp, _tanhf, dtype)


def elu_table(input_q, output_q) -> np.ndarray:
    """EluPrepare (int8): LUTPopulate with expm1f(x) for x < 0, x otherwise."""
    iq, oq = qparams(input_q), qparams(output_q)
    return lut_populate_int8(iq.s, iq.zp, oq.s, oq.zp, _elu, np.int8)


# --------------------------------------------------------------------------- int16 logistic/tanh

#: sigmoid(i / 24) in unsigned Q0.16 for i = 0..255: the constant table of the
#: specification (common.h's ``sigmoid_table_uint16``).  It is not exactly
#: round(65536 * sigmoid(i / 24)) (entries differ by up to one unit), so it is kept as
#: data; test_activations checks every int16 input of LOGISTIC and TANH against LiteRT.
SIGMOID_TABLE_UINT16 = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498,
    40149, 40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255,
    46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865,
    52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174,
    56503, 56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288,
    59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110, 61279, 61441,
    61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886,
    62990, 63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835,
    63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450,
    64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845,
    64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097,
    65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360,
    65367, 65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425,
    65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465,
    65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508,
    65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516, 65517, 65517, 65518,
    65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525,
    65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529,
    65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531, 65531, 65531, 65531,
    65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533, 65533, 65533,
    65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65535], dtype=np.int64)
assert SIGMOID_TABLE_UINT16.size == 256



@dataclass(frozen=True)
class Int16ActivationParams:
    """input_multiplier / input_left_shift of TanhPrepare / SigmoidPrepare for int16."""

    input_multiplier: int
    input_left_shift: int


def _checked_log2(x: float) -> tuple[bool, int]:
    from .elementwise import checked_log2
    return checked_log2(x)


def prepare_int16_activation(input_q, tanh: bool) -> Int16ActivationParams:
    """The int16 branch of TanhPrepare / SigmoidPrepare.

    A power-of-two input scale with (15 - 3) + log2(scale) == 0 (or 1 for tanh) keeps
    multiplier 0; otherwise the multiplier rescales the input to 1 / (3 * 4096), doubled
    while it stays below 32767 / 2.
    """
    s = qparams(input_q).s
    pot, log2 = _checked_log2(s)
    left_shift = 12 + log2
    pot = pot and (left_shift in ((0, 1) if tanh else (0,)))
    if pot:
        return Int16ActivationParams(0, left_shift)
    multiplier = float(np.float64(np.float32(s)) * 4096.0 * 3.0)
    left_shift = 0
    while multiplier <= 32767.0 / 2.0 and left_shift <= 30:
        left_shift += 1
        multiplier *= 2.0
    return Int16ActivationParams(int(multiplier), left_shift)


def _rescale_int16_input(x: np.ndarray, params: Int16ActivationParams) -> np.ndarray:
    """The int16 input of LOGISTIC or TANH times its input multiplier, rounded: both
    kernels rescale alike (3 << shift when the input scale is a power of two)."""
    mult, shift = params.input_multiplier, params.input_left_shift
    if mult == 0:
        mult, shift = 3 << shift, 0
    rnd = (1 << (shift - 1)) if shift > 0 else 0
    return (x.astype(np.int64) * mult + rnd) >> shift


def _sigmoid_table_segment(a: np.ndarray, frac_bits: int):
    """(index, entry, next entry, fraction) of ``a`` = |input| in SIGMOID_TABLE_UINT16.

    LOGISTIC interpolates the table with 9 fractional bits, TANH (2 sigmoid(2x) - 1)
    with 8; an index past the table (>= 255) is the saturated case the callers handle.
    """
    uh = a >> frac_bits
    idx = np.minimum(uh, 254)
    return (uh, SIGMOID_TABLE_UINT16[idx], SIGMOID_TABLE_UINT16[idx + 1],
            a & ((1 << frac_bits) - 1))


def logistic_int16(x: np.ndarray, params: Int16ActivationParams) -> np.ndarray:
    """reference_integer_ops::Logistic (int16): output scale 1/32768, zero point 0."""
    v = _rescale_int16_input(x, params)
    uh, ua, ub, ut = _sigmoid_table_segment(np.abs(v), 9)
    result = np.where(uh >= 255, 0x7FFF << 10, (ua << 9) + ut * (ub - ua))
    result = np.where(v >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1)
    result = (result & 0xFFFFFFFF) >> 10
    return np.asarray(result & 0xFFFF).astype(np.uint16).view(np.int16)


def tanh_int16(x: np.ndarray, params: Int16ActivationParams) -> np.ndarray:
    """reference_integer_ops::Tanh (int16): tanh(x) = 2 * sigmoid(2x) - 1 on the table.

    The input is rescaled like LOGISTIC's (multiplier 3 << shift in the power-of-two
    case), with 8 instead of 9 interpolation bits.
    """
    v = _rescale_int16_input(x, params)
    uh, ua, ub, ut = _sigmoid_table_segment(np.abs(v), 8)
    result = qm.wrap32(np.where(uh >= 255, 0xFFFF << 8, (ua << 8) + ut * (ub - ua)))
    result = np.where(v >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1)
    result = qm.wrap32(result) >> 8
    return np.asarray(result).astype(np.int16)


def _sigmoid_family(x: np.ndarray, input_q, output_q, table, params, tanh: bool) -> np.ndarray:
    """LOGISTIC and TANH dispatch alike: a lookup table for uint8/int8 (built here unless
    prepared), the fixed-point kernel for int16."""
    if x.dtype == np.int16:
        p = params or prepare_int16_activation(input_q, tanh=tanh)
        return tanh_int16(x, p) if tanh else logistic_int16(x, p)
    if table is None:
        table = (tanh_table if tanh else logistic_table)(input_q, output_q, x.dtype)
    return lut_lookup_int8(x, table)


def logistic(x: np.ndarray, input_q, output_q, table: np.ndarray | None = None,
             params: Int16ActivationParams | None = None) -> np.ndarray:
    """Quantized LOGISTIC: table lookup for uint8/int8, fixed point for int16."""
    return _sigmoid_family(x, input_q, output_q, table, params, tanh=False)


def tanh(x: np.ndarray, input_q, output_q, table: np.ndarray | None = None,
         params: Int16ActivationParams | None = None) -> np.ndarray:
    """Quantized TANH: table lookup for uint8/int8, fixed point for int16."""
    return _sigmoid_family(x, input_q, output_q, table, params, tanh=True)


def elu(x: np.ndarray, input_q, output_q, table: np.ndarray | None = None) -> np.ndarray:
    """Quantized ELU (int8) through its lookup table."""
    return lut_lookup_int8(x, table if table is not None else elu_table(input_q, output_q))


# --------------------------------------------------------------------------- RELU family


@dataclass(frozen=True)
class ReluParams:
    multiplier: int
    shift: int
    input_zero_point: int
    output_zero_point: int
    act_min: int
    act_max: int
    rounding: Rounding


_RELU_BOUNDS = {"RELU": (0.0, math.inf), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0),
                "RELU_0_TO_1": (0.0, 1.0)}


def prepare_relu(kind: str, input_q, output_q, dtype, rounding: Rounding = "double") -> ReluParams:
    """ReluPrepare + QuantizedReluX: rescale by s_in / s_out (float32 quotient) and clamp to
    the quantized bounds zp + roundf(bound / s_out)."""
    rounding = check_rounding(rounding)
    iq, oq = qparams(input_q), qparams(output_q)
    real = float(np.float32(np.float32(iq.s) / np.float32(oq.s)))
    m, s = (int(v) for v in qm.quantize_multiplier(real, rounding))
    lo_t, hi_t = dtype_range(dtype)
    low, high = _RELU_BOUNDS[kind]
    act_min = max(lo_t, oq.zp + int(_roundf(np.float32(np.float32(low) / np.float32(oq.s)))))
    act_max = hi_t if math.isinf(high) else min(
        hi_t, oq.zp + int(_roundf(np.float32(np.float32(high) / np.float32(oq.s)))))
    return ReluParams(m, s, iq.zp, oq.zp, act_min, act_max, rounding)


def relu(x: np.ndarray, input_q=None, output_q=None, kind: str = "RELU",
         rounding: Rounding = "double",
         params: ReluParams | None = None) -> np.ndarray:
    """Quantized RELU / RELU6 / RELU_N1_TO_1 / RELU_0_TO_1 (optimized_ops::ReluX, which
    both resolvers use)."""
    p = params or prepare_relu(kind, input_q, output_q, x.dtype, rounding)
    v = qm.multiply_by_quantized_multiplier(x.astype(np.int64) - p.input_zero_point,
                                            p.multiplier, p.shift, p.rounding)
    return np.clip(v + p.output_zero_point, p.act_min, p.act_max).astype(x.dtype)


@dataclass(frozen=True)
class LeakyReluParams:
    multiplier_alpha: int
    shift_alpha: int
    multiplier_identity: int
    shift_identity: int
    input_zero_point: int
    output_zero_point: int
    rounding: Rounding


def prepare_leaky_relu(input_q, output_q, alpha: float, rounding: Rounding = "double"
                       ) -> LeakyReluParams:
    """LeakyReluPrepare: s_in * alpha / s_out and s_in / s_out, each in float32."""
    rounding = check_rounding(rounding)
    iq, oq = qparams(input_q), qparams(output_q)
    s_in, s_out = np.float32(iq.s), np.float32(oq.s)
    real_alpha = float(np.float32(np.float32(s_in * np.float32(alpha)) / s_out))
    real_id = float(np.float32(s_in / s_out))
    ma, sa = (int(v) for v in qm.quantize_multiplier(real_alpha, rounding))
    mi, si = (int(v) for v in qm.quantize_multiplier(real_id, rounding))
    return LeakyReluParams(ma, sa, mi, si, iq.zp, oq.zp, rounding)


def _rescale_by_sign(v: np.ndarray, positive: tuple[int, int], negative_value: np.ndarray,
                     negative: tuple[int, int], rounding: Rounding, output_offset: int,
                     dtype) -> np.ndarray:
    """LEAKY_RELU's and PRELU's common end: where the offset input ``v`` is non-negative it
    is rescaled by the ``positive`` (multiplier, shift), elsewhere ``negative_value`` (v
    itself, or v * alpha for PRELU) by the ``negative`` one; then offset and saturated."""
    pos = qm.multiply_by_quantized_multiplier(v, *positive, rounding)
    neg = qm.multiply_by_quantized_multiplier(negative_value, *negative, rounding)
    return saturate_cast(np.where(v >= 0, pos, neg) + output_offset, dtype)


def leaky_relu(x: np.ndarray, input_q=None, output_q=None, alpha: float | None = None,
               rounding: Rounding = "double", params: LeakyReluParams | None = None
               ) -> np.ndarray:
    """QuantizeLeakyRelu: identity or alpha multiplier by the sign of (q - zp_in)."""
    p = params or prepare_leaky_relu(input_q, output_q, alpha, rounding)
    v = x.astype(np.int64) - p.input_zero_point
    return _rescale_by_sign(v, (p.multiplier_identity, p.shift_identity), v,
                            (p.multiplier_alpha, p.shift_alpha), p.rounding,
                            p.output_zero_point, x.dtype)


@dataclass(frozen=True)
class PreluParams:
    multiplier_1: int
    shift_1: int
    multiplier_2: int
    shift_2: int
    input_offset: int
    alpha_offset: int
    output_offset: int
    rounding: Rounding


def prepare_prelu(input_q, alpha_q, output_q, rounding: Rounding = "double") -> PreluParams:
    """PreluPrepare: s_in / s_out and s_in * s_alpha / s_out, each in float32."""
    rounding = check_rounding(rounding)
    iq, aq, oq = qparams(input_q), qparams(alpha_q), qparams(output_q)
    s_in, s_a, s_out = np.float32(iq.s), np.float32(aq.s), np.float32(oq.s)
    m1, s1 = (int(v) for v in qm.quantize_multiplier(float(np.float32(s_in / s_out)), rounding))
    m2, s2 = (int(v) for v in qm.quantize_multiplier(
        float(np.float32(np.float32(s_in * s_a) / s_out)), rounding))
    return PreluParams(m1, s1, m2, s2, -iq.zp, -aq.zp, oq.zp, rounding)


def prelu(x: np.ndarray, alpha: np.ndarray, input_q=None, alpha_q=None, output_q=None,
          rounding: Rounding = "double", params: PreluParams | None = None) -> np.ndarray:
    """reference_ops::Prelu / BroadcastPrelu4DSlow (alpha broadcast against the input)."""
    p = params or prepare_prelu(input_q, alpha_q, output_q, rounding)
    v = x.astype(np.int64) + p.input_offset
    a = alpha.astype(np.int64) + p.alpha_offset
    return _rescale_by_sign(v, (p.multiplier_1, p.shift_1), qm.wrap32(v * a),
                            (p.multiplier_2, p.shift_2), p.rounding, p.output_offset, x.dtype)


# --------------------------------------------------------------------------- HARD_SWISH


@dataclass(frozen=True)
class HardSwishParams:
    input_zero_point: int
    output_zero_point: int
    output_multiplier_fixedpoint_int16: int
    output_multiplier_exponent: int
    reluish_multiplier_fixedpoint_int16: int
    reluish_multiplier_exponent: int


def _downscale_to_int16(m: int) -> int:
    """DownScaleInt32ToInt16Multiplier: round a Q31 multiplier to Q15."""
    if m >= (1 << 31) - 1 - (1 << 15):
        return 32767
    return (m + (1 << 15)) >> 16


def prepare_hard_swish(input_q, output_q, rounding: Rounding = "double") -> HardSwishParams:
    """HardSwishPrepare: the input on a 'hires' scale s_in / 128, one multiplier to the
    output scale and one to the 'relu-ish' scale where 3.0 is 32768, both in float32."""
    rounding = check_rounding(rounding)
    iq, oq = qparams(input_q), qparams(output_q)
    hires = np.float32(np.float32(1.0 / 128.0) * np.float32(iq.s))
    reluish_scale = np.float32(np.float32(3.0) / np.float32(32768.0))
    out_mult = float(np.float32(hires / np.float32(oq.s)))
    relu_mult = float(np.float32(hires / reluish_scale))
    mo, eo = (int(v) for v in qm.quantize_multiplier(out_mult, rounding))
    mr, er = (int(v) for v in qm.quantize_multiplier(relu_mult, rounding))
    return HardSwishParams(iq.zp, oq.zp, _downscale_to_int16(mo), eo, _downscale_to_int16(mr), er)


def _srdhm16(a: np.ndarray, b) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul on int16."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    high = qm.trunc_div(ab + nudge, 1 << 15)
    high = high.astype(np.int16).astype(np.int64)
    return np.where((a == b) & (a == -32768), 32767, high)


def _sdhm16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """SaturatingDoublingHighMul (truncating, like ARM SQDMULH) on int16."""
    ab = np.asarray(a, np.int64) * np.asarray(b, np.int64)
    high = qm.trunc_div(ab, 1 << 15).astype(np.int16).astype(np.int64)
    return np.where((a == b) & (a == -32768), 32767, high)


def _sat_shift16(v: np.ndarray, amount: int) -> np.ndarray:
    return np.clip(v * (1 << amount), -32768, 32767)


def hard_swish(x: np.ndarray, input_q=None, output_q=None, rounding: Rounding = "double",
               params: HardSwishParams | None = None) -> np.ndarray:
    """reference_ops::HardSwish (uint8/int8): x * relu6(x + 3) / 6 in 16-bit fixed point."""
    p = params or prepare_hard_swish(input_q, output_q, rounding)
    i16 = lambda v: np.asarray(v, np.int64).astype(np.int16).astype(np.int64)  # noqa: E731
    value = i16(x.astype(np.int64) - p.input_zero_point)
    hires = i16(value * (1 << 7))
    preshift_out = _srdhm16(hires, p.output_multiplier_fixedpoint_int16)
    reluish = hires
    if p.reluish_multiplier_exponent > 0:
        reluish = _sat_shift16(reluish, p.reluish_multiplier_exponent - 1)
    reluish = _srdhm16(reluish, p.reluish_multiplier_fixedpoint_int16)
    if p.reluish_multiplier_exponent > 0:
        reluish = _sat_shift16(reluish, 1)
    if p.reluish_multiplier_exponent < 0:
        reluish = qm.rounding_divide_by_pot(reluish, -p.reluish_multiplier_exponent)
    reluish = i16((reluish + (1 << 15)) >> 1)
    pre = _sdhm16(reluish, preshift_out)
    out = i16(qm.rounding_divide_by_pot(pre, -p.output_multiplier_exponent))
    out = i16(out + p.output_zero_point)
    return saturate_cast(out, x.dtype)
