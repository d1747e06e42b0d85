"""Quantized DIV (uint8, int8, int16) as LiteRT's reference DivElementwise computes it:
the divisor's reciprocal in fixed point (GetReciprocal), the dividend shifted up by its
headroom, and one rescale by s1 / (s2 * s_out)."""
from __future__ import annotations


import numpy as np

from .. import quant_math as qm
from .common import QParams, Rounding, ScaledBinaryParams, prepare_scaled_binary
from .fixedpoint import count_leading_zeros_u32, one_over_one_plus_x_for_x_in_0_1


DivParams = ScaledBinaryParams


def prepare_div(q1: QParams, q2: QParams, qo: QParams, options, dtype,
                rounding: Rounding = "double") -> DivParams:
    """div.cc Prepare: real multiplier s1 / (s2 * s_out) in double from the float32 scales."""
    real = float(np.float32(q1.s)) / (float(np.float32(q2.s)) * float(np.float32(qo.s)))
    return prepare_scaled_binary(q1, q2, qo, real, options, dtype, rounding)


def _count_leading_sign_bits(x: np.ndarray) -> np.ndarray:
    """__builtin_clrsb on int32 (31 for zero)."""
    x = np.asarray(x, np.int64)
    return np.where(x >= 0, count_leading_zeros_u32(x), count_leading_zeros_u32(~x)) - 1


def get_reciprocal(x: np.ndarray, integer_digits: int = 31) -> tuple[np.ndarray, np.ndarray]:
    """GetReciprocal for x > 0: (1 / x in Q0.31 of x scaled into [1, 2), the shift)."""
    headroom_plus_one = count_leading_zeros_u32(x)
    shifted = ((np.asarray(x, np.int64) << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)
    return one_over_one_plus_x_for_x_in_0_1(shifted), integer_digits - headroom_plus_one


def _rounding_divide_by_pot_x86(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT as the x86 wheel runs it, also for exponents of 32 and
    more (a tiny dividend's headroom makes them): its mask ``(1ll << e) - 1`` truncates to
    -1 in int32 and the int32 shift counts only the low five bits of ``e``."""
    x = np.asarray(x, np.int64)
    e = np.broadcast_to(np.asarray(exponent, np.int64), x.shape)
    big = e >= 32
    if not big.any():
        return qm.rounding_divide_by_pot(x, e)
    normal = qm.rounding_divide_by_pot(x, np.where(big, 0, e))
    threshold = -1 + (x < 0)
    wrapped = (x >> (e & 31)) + (x > threshold)
    return np.where(big, wrapped, normal)


def div(a: np.ndarray, b: np.ndarray, p: DivParams) -> np.ndarray:
    """Broadcasting quantized division; a zero divisor (after its offset) is an error."""
    x1, x2 = np.broadcast_arrays(a.astype(np.int64) + p.input1_offset,
                                 b.astype(np.int64) + p.input2_offset)
    if np.any(x2 == 0):
        raise ZeroDivisionError("quantized DIV by a value equal to the zero point")
    neg = x2 < 0
    x1 = np.where(neg, -x1, x1)
    x2 = np.where(neg, -x2, x2)
    inv, recip_shift = get_reciprocal(x2)
    headroom = _count_leading_sign_bits(x1)
    if p.rounding == "single":
        unscaled = qm.multiply_by_quantized_multiplier(x1, inv, headroom, "single")
        out = qm.multiply_by_quantized_multiplier(unscaled, p.multiplier,
                                                  p.shift - recip_shift - headroom, "single")
    else:
        unscaled = qm.saturating_rounding_doubling_high_mul(x1 << headroom, inv)
        total = p.shift - recip_shift - headroom
        out = _rounding_divide_by_pot_x86(
            qm.saturating_rounding_doubling_high_mul(unscaled, p.multiplier), -total)
    out = np.clip(out + p.output_offset, p.act_min, p.act_max)
    return out.astype(a.dtype)
