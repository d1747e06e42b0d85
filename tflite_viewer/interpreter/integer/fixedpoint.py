"""gemmlowp fixed-point arithmetic on int32 raw values, vectorized over int64 arrays.

``FixedPoint<int32_t, IntegerBits>`` values are held as their raw int32; the integer-bit
count is tracked by the caller, as in the C++ templates.  Additions wrap like the int32
arithmetic gemmlowp performs; multiplication is SaturatingRoundingDoublingHighMul.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import quant_math as qm
from .common import wrap32

INT32_MAX = (1 << 31) - 1
INT32_MIN = -(1 << 31)

srdhm = qm.saturating_rounding_doubling_high_mul
rounding_divide_by_pot = qm.rounding_divide_by_pot


def mul(a: np.ndarray, b) -> np.ndarray:
    """FixedPoint multiplication (the result has the sum of the integer bits)."""
    return srdhm(a, b)


def add(a, b) -> np.ndarray:
    return wrap32(np.asarray(a, np.int64) + np.asarray(b, np.int64))


def sub(a, b) -> np.ndarray:
    return wrap32(np.asarray(a, np.int64) - np.asarray(b, np.int64))


def saturating_rounding_mul_by_pot(x: np.ndarray, exponent: int, bits: int = 32) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT<exponent>: saturating left shift, or rounding right
    shift for negative exponents, on ``bits``-wide raw values (gemmlowp's one template
    serves int32 and, for `fixedpoint16`, int16)."""
    x = np.asarray(x, np.int64)
    if exponent == 0:
        return x
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    threshold = (1 << (bits - 1 - exponent)) - 1
    hi, lo = (1 << (bits - 1)) - 1, -(1 << (bits - 1))
    return np.where(x > threshold, hi, np.where(x < -threshold, lo, x << exponent))


def rescale(x: np.ndarray, src_bits: int, dst_bits: int) -> np.ndarray:
    """Rescale<dst_bits>(FixedPoint<src_bits>)."""
    return saturating_rounding_mul_by_pot(x, src_bits - dst_bits)


def rounding_half_sum(a, b) -> np.ndarray:
    s = np.asarray(a, np.int64) + np.asarray(b, np.int64)
    sign = np.where(s >= 0, 1, -1)
    return qm.trunc_div(s + sign, 2)


def exp_on_interval_between_negative_one_quarter_and_0_excl(a: np.ndarray) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), Q0.31 in and out: Taylor series around -1/8."""
    constant_term = 1895147668       # exp(-1/8)
    constant_1_over_3 = 715827883
    x = add(a, 1 << 28)              # a + 1/8
    x2 = mul(x, x)
    x3 = mul(x2, x)
    x4 = mul(x2, x2)
    x4_over_4 = saturating_rounding_mul_by_pot(x4, -2)
    poly = saturating_rounding_mul_by_pot(
        add(mul(add(x4_over_4, x3), constant_1_over_3), x2), -1)
    return add(constant_term, mul(constant_term, add(x, poly)))


#: exp(-1/4 * 2^k) in Q0.31 for k = -2..4: the barrel shifter of exp_on_negative_values.
EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
              (2, 39332535), (3, 720401), (4, 242))


def exp_barrel(a: np.ndarray, integer_bits: int, bits: int, sub, mul, interval_exp,
               const=int) -> np.ndarray:
    """gemmlowp's exp_on_negative_values template for FixedPoint<int``bits``,
    integer_bits>, given that width's ``sub``, ``mul``, exp on [-1/4, 0) and constant
    rescaling (`fixedpoint16` passes its int16 arithmetic; int32 uses this module's)."""
    a = np.asarray(a, np.int64)
    frac = bits - 1 - integer_bits
    one_quarter = 1 << (frac - 2)
    a_mod_q_minus_q = sub(a & (one_quarter - 1), one_quarter)
    result = interval_exp(saturating_rounding_mul_by_pot(a_mod_q_minus_q, integer_bits, bits))
    remainder = sub(a_mod_q_minus_q, a)
    for exponent, multiplier in EXP_BARREL:
        if integer_bits > exponent:
            shift = frac + exponent
            result = np.where((remainder & (1 << shift)) != 0, mul(result, const(multiplier)),
                              result)
    if integer_bits > 5:
        result = np.where(a < const(-(1 << (36 - integer_bits))), 0, result)
    return np.where(a == 0, (1 << (bits - 1)) - 1, result)


def exp_on_negative_values(a: np.ndarray, integer_bits: int) -> np.ndarray:
    """exp(a) for a <= 0 given as FixedPoint<int32, integer_bits>; result in Q0.31."""
    return exp_barrel(a, integer_bits, 32, sub, mul,
                      exp_on_interval_between_negative_one_quarter_and_0_excl)


def one_over_one_plus_x_for_x_in_0_1(a: np.ndarray) -> np.ndarray:
    """1 / (1 + a) for a in [0, 1) in Q0.31, by three Newton-Raphson steps in Q2.29."""
    half_denominator = rounding_half_sum(a, INT32_MAX)
    constant_48_over_17 = 1515870810
    constant_neg_32_over_17 = -1010580540
    x = add(constant_48_over_17, mul(half_denominator, constant_neg_32_over_17))
    one_f2 = 1 << 29
    for _ in range(3):
        half_denominator_times_x = mul(half_denominator, x)
        one_minus = sub(one_f2, half_denominator_times_x)
        x = add(x, rescale(mul(x, one_minus), 4, 2))
    return rescale(x, 1, 0)  # ExactMulByPot<-1> then Rescale<0>


def count_leading_zeros_u32(x: np.ndarray) -> np.ndarray:
    """CountLeadingZeros on uint32 values (32 for zero); frexp is exact below 2**53."""
    x = np.asarray(x, np.int64) & 0xFFFFFFFF
    _, exp = np.frexp(x.astype(np.float64))
    return np.where(x == 0, 32, 32 - exp).astype(np.int64)


def saturating_rounding_mul_by_pot_param(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOTParam for per-element exponents >= 0 (a saturating
    left shift)."""
    x = np.asarray(x, np.int64)
    e = np.asarray(exponent, np.int64)
    threshold = (np.int64(1) << (31 - e)) - 1
    shifted = wrap32(x << e)
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, shifted))


def saturating_add(a, b) -> np.ndarray:
    """SaturatingAddNonGemmlowp on int32 values."""
    return np.clip(np.asarray(a, np.int64) + np.asarray(b, np.int64), INT32_MIN, INT32_MAX)


def saturating_sub(a, b) -> np.ndarray:
    return np.clip(np.asarray(a, np.int64) - np.asarray(b, np.int64), INT32_MIN, INT32_MAX)


def log_x_for_x_greater_than_or_equal_to_1(x: np.ndarray, input_bits: int,
                                           output_bits: int) -> np.ndarray:
    """log(x) of FixedPoint<int32, input_bits> values >= 1, as FixedPoint<int32, output_bits>
    (common.h ``log_x_for_x_greater_than_or_equal_to_1_impl``): the exponent from the
    headroom, the mantissa's log from a rational approximation around 2^-1/4."""
    accum_bits = output_bits + 1
    log_2, sqrt_sqrt_half, sqrt_half = 1488522236, 1805811301, 1518500250
    alpha_n, alpha_d, alpha_i, alpha_f = 117049297, 127690142, 1057819769, 638450708
    shifted_quarter = int(rescale(np.int64(536870912), 0, accum_bits))
    z_a = np.asarray(x, np.int64)
    z_a_headroom_plus_1 = count_leading_zeros_u32(z_a)
    r_a_tmp = saturating_rounding_mul_by_pot_param(z_a, z_a_headroom_plus_1 - 1)
    r_a_raw = saturating_rounding_mul_by_pot(mul(r_a_tmp, sqrt_half), 1)
    z_a_pow_2_adj = saturating_add(saturating_rounding_mul_by_pot_param(
        input_bits - z_a_headroom_plus_1, np.int64(31 - accum_bits)), shifted_quarter)
    z_b = mul(z_a, sqrt_half)
    z_b_headroom = count_leading_zeros_u32(z_b) - 1
    r_b_raw = saturating_rounding_mul_by_pot_param(z_a, z_b_headroom)
    z_b_pow_2_adj = saturating_sub(saturating_rounding_mul_by_pot_param(
        input_bits - z_b_headroom, np.int64(31 - accum_bits)), shifted_quarter)
    r = np.minimum(r_a_raw, r_b_raw)
    z_pow_2_adj = np.maximum(z_a_pow_2_adj, z_b_pow_2_adj)
    p = rounding_half_sum(r, sqrt_sqrt_half)
    q = sub(r, sqrt_sqrt_half)
    q = add(q, q)
    common_sq = mul(q, q)
    num = add(mul(q, r), mul(mul(q, common_sq), alpha_n))
    denom_minus_one_0 = add(mul(p, add(add(alpha_i, q), mul(alpha_d, common_sq))),
                            mul(alpha_f, q))
    recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one_0)
    num_scaled = rescale(num, 0, accum_bits)
    return rescale(add(mul(z_pow_2_adj, log_2), mul(num_scaled, recip_denom)), accum_bits,
                   output_bits)


def inv_sqrt_quantized_multiplier_exp(x: np.ndarray, reverse_shift: int
                                      ) -> tuple[np.ndarray, np.ndarray]:
    """GetInvSqrtQuantizedMultiplierExp on int32 values >= 0: (multiplier, shift) with
    multiplier * 2^shift ~ 1/sqrt(x) (shift times ``reverse_shift``), by five Newton-Raphson
    steps in Q3.28; inputs 0 and 1 give (INT32_MAX, 0)."""
    x = np.asarray(x, np.int64)
    small = x <= 1
    v = np.where(small, 4, x)
    shift = np.full(v.shape, 11, np.int64)
    while True:  # input /= 4 while input >= 2^29
        big = v >= (1 << 29)
        if not big.any():
            break
        v = np.where(big, v // 4, v)
        shift = shift + big
    max_left_shift_bits = count_leading_zeros_u32(v) - 1
    left_shift_bit_pairs = max_left_shift_bits // 2 - 1
    shift = shift - left_shift_bit_pairs
    v = v << (2 * left_shift_bit_pairs)
    fixedpoint_input = v >> 1
    half_input = saturating_rounding_mul_by_pot(fixedpoint_input, -1)
    half_three = (1 << 28) + (1 << 27)
    r = np.full(v.shape, 1 << 28, np.int64)  # F3::One()
    for _ in range(5):
        r3 = rescale(mul(mul(r, r), r), 9, 3)
        r = rescale(sub(mul(half_three, r), mul(half_input, r3)), 6, 3)
    r = mul(r, 1518500250)  # * sqrt(2)/2: FixedPoint<3> * FixedPoint<0>
    neg = shift < 0
    r = np.where(neg, wrap32(r << np.where(neg, -shift, 0)), r)
    shift = np.where(neg, 0, shift)
    shift = shift * reverse_shift
    return (np.where(small, INT32_MAX, r), np.where(small, 0, shift))


# -- the same on a few Python integers ----------------------------------------------------
# A numpy call costs ~0.3 us whatever its size, so for the handful of values of one LSTM
# step (one variance per gate and batch row) the Newton steps run faster on Python ints:
# measured, 4 values take ~50 us this way and ~250 us as arrays.

#: at most this many values go through the Python-integer form
_SCALAR_LIMIT = 64


def _srdhm_int(a: int, b: int) -> int:
    """SaturatingRoundingDoublingHighMul of two non-negative Python ints (the Newton steps
    below only multiply non-negative values)."""
    if a == b == INT32_MIN:
        return INT32_MAX
    return (a * b + (1 << 30)) >> 31


def _sat_shift_left_int(x: int, exponent: int) -> int:
    """`saturating_rounding_mul_by_pot` with a positive exponent, on a Python int."""
    threshold = (1 << (31 - exponent)) - 1
    return INT32_MAX if x > threshold else INT32_MIN if x < -threshold else x << exponent


def _wrap32_int(x: int) -> int:
    """`quant_math.wrap32` on a Python int."""
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


@lru_cache(maxsize=1 << 16)
def _inv_sqrt_int(v: int) -> tuple[int, int]:
    """`inv_sqrt_quantized_multiplier_exp` step for step on one value, reverse_shift 1."""
    if v <= 1:
        return INT32_MAX, 0
    shift = 11
    while v >= 1 << 29:
        v //= 4
        shift += 1
    pairs = (32 - v.bit_length() - 1) // 2 - 1
    shift -= pairs
    v <<= 2 * pairs
    half_input = v >> 1
    half_input = (half_input + (1 if half_input >= 0 else 0)) >> 1   # RoundingDivideByPOT 1
    half_three = (1 << 28) + (1 << 27)
    x = 1 << 28                                                      # F3::One()
    for _ in range(5):
        x3 = _sat_shift_left_int(_srdhm_int(_srdhm_int(x, x), x), 6)  # Rescale<3> of an F9
        x = _sat_shift_left_int(
            _wrap32_int(_srdhm_int(half_three, x) - _srdhm_int(half_input, x3)), 3)
    x = _srdhm_int(x, 1518500250)                                    # * sqrt(2) / 2
    if shift < 0:
        x = _wrap32_int(x << -shift)
        shift = 0
    return x, shift


def inv_sqrt_multipliers(x: np.ndarray, reverse_shift: int) -> tuple[np.ndarray, np.ndarray]:
    """`inv_sqrt_quantized_multiplier_exp`, on Python integers when there are few values."""
    x = np.asarray(x, np.int64)
    if x.size > _SCALAR_LIMIT:
        return inv_sqrt_quantized_multiplier_exp(x, reverse_shift)
    pairs = np.array([_inv_sqrt_int(v) for v in x.reshape(-1).tolist()], np.int64)
    pairs = pairs.reshape(x.shape + (2,))
    return pairs[..., 0], pairs[..., 1] * reverse_shift
