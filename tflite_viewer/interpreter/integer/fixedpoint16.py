"""gemmlowp fixed-point arithmetic on int16 raw values (``FixedPoint<int16_t, N>``),
vectorized over int64 arrays: what the integer LSTM's ``ApplySigmoid`` / ``ApplyTanh``
evaluate (gemmlowp's ``logistic`` and ``tanh``).

As in gemmlowp, the int32 constants of the generic code are rounding-shifted right by 16
bits (``RescaleConstantInitializer``); additions wrap like int16 arithmetic except the final
one of ``exp_on_interval_between_negative_one_quarter_and_0_excl`` (``AddSaturatingIf16Bit``);
multiplication is the int16 SaturatingRoundingDoublingHighMul.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import quant_math as qm
from .fixedpoint import exp_barrel, saturating_rounding_mul_by_pot

I16_MIN, I16_MAX = -32768, 32767


def wrap16(x) -> np.ndarray:
    return np.asarray(x, np.int64).astype(np.int16).astype(np.int64)


def const(c32: int) -> int:
    """RescaleConstantInitializer for int16: RoundingDivideByPOT(c32, 16)."""
    return int(qm.rounding_divide_by_pot(np.int64(c32), 16))


def add(a, b) -> np.ndarray:
    return wrap16(np.asarray(a, np.int64) + np.asarray(b, np.int64))


def sub(a, b) -> np.ndarray:
    return wrap16(np.asarray(a, np.int64) - np.asarray(b, np.int64))


def neg(a) -> np.ndarray:
    return wrap16(-np.asarray(a, np.int64))


def mul(a, b) -> np.ndarray:
    """SaturatingRoundingDoublingHighMul on int16."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    high = wrap16(qm.trunc_div(ab + nudge, 1 << 15))
    return np.where((a == b) & (a == I16_MIN), I16_MAX, high)


def rounding_divide_by_pot(x, exponent: int) -> np.ndarray:
    return qm.rounding_divide_by_pot(np.asarray(x, np.int64), exponent)


def sat_mul_by_pot(x, exponent: int) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT<exponent> on int16 (below the threshold the shift
    cannot leave int16, so no wrap is needed)."""
    return saturating_rounding_mul_by_pot(x, exponent, bits=16)


def rounding_half_sum(a, b) -> np.ndarray:
    s = np.asarray(a, np.int64) + np.asarray(b, np.int64)
    return wrap16(qm.trunc_div(s + np.where(s >= 0, 1, -1), 2))


def one(integer_bits: int) -> int:
    return I16_MAX if integer_bits == 0 else 1 << (15 - integer_bits)


def exp_on_interval_between_negative_one_quarter_and_0_excl(a) -> np.ndarray:
    constant_term = const(1895147668)
    constant_1_over_3 = const(715827883)
    x = add(a, 1 << 12)  # + 1/8 in Q0.15
    x2 = mul(x, x)
    x3 = mul(x2, x)
    x4 = mul(x2, x2)
    x4_over_4 = sat_mul_by_pot(x4, -2)
    poly = sat_mul_by_pot(add(mul(add(x4_over_4, x3), constant_1_over_3), x2), -1)
    return np.clip(constant_term + mul(constant_term, add(x, poly)), I16_MIN, I16_MAX)


def exp_on_negative_values(a, integer_bits: int) -> np.ndarray:
    """exp(a) for a <= 0 in FixedPoint<int16, integer_bits>; Q0.15 result (the int32
    template with int16 arithmetic and its constants rescaled)."""
    return exp_barrel(a, integer_bits, 16, sub, mul,
                      exp_on_interval_between_negative_one_quarter_and_0_excl, const)


def _newton(half_denominator):
    c48 = const(1515870810)
    cn32 = const(-1010580540)
    x = add(c48, mul(half_denominator, cn32))
    one_f2 = one(2)
    for _ in range(3):
        hdx = mul(half_denominator, x)
        one_minus = sub(one_f2, hdx)
        x = add(x, sat_mul_by_pot(mul(x, one_minus), 2))  # Rescale<2> of an F4
    return x


def one_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    x = _newton(rounding_half_sum(a, I16_MAX))
    return sat_mul_by_pot(x, 1)  # Rescale<0>(ExactMulByPot<-1>(x)): F1 -> F0


def one_minus_x_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    x = _newton(rounding_half_sum(a, I16_MAX))
    return sat_mul_by_pot(sub(x, one(2)), 2)  # Rescale<0> of an F2


def logistic(a, integer_bits: int) -> np.ndarray:
    """gemmlowp::logistic on FixedPoint<int16, integer_bits>; Q0.15 result."""
    a = np.asarray(a, np.int64)
    positive = a > 0
    abs_input = np.where(positive, a, neg(a))
    pos = one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(neg(abs_input), integer_bits))
    negv = sub(I16_MAX, pos)
    return np.where(a == 0, const(1 << 30), np.where(positive, pos, negv))


def tanh(a, integer_bits: int) -> np.ndarray:
    """gemmlowp::tanh on FixedPoint<int16, integer_bits>; Q0.15 result."""
    a = np.asarray(a, np.int64)
    negative = a < 0
    n = np.where(negative, a, neg(a))
    t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values(n, integer_bits + 1))
    return np.where(a == 0, 0, np.where(negative, neg(t), t))


@lru_cache(maxsize=None)
def _table(fn_name: str, integer_bits: int) -> np.ndarray:
    """The function on every int16 value (it depends on nothing else): index q + 32768."""
    fn = {"logistic": logistic, "tanh": tanh}[fn_name]
    table = fn(np.arange(I16_MIN, I16_MAX + 1, dtype=np.int64), integer_bits).astype(np.int16)
    table.setflags(write=False)
    return table


def activation_table(fn_name: str, integer_bits: int) -> np.ndarray:
    """The read-only int16 table of ``logistic`` or ``tanh`` (``fn_name``) on
    FixedPoint<int16, integer_bits> over every int16 input, indexed by q + 32768."""
    return _table(fn_name, integer_bits)
