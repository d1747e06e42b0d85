"""The interpreter's shortcuts against literal transcriptions of the reference arithmetic.

Kernels use precomputed tables and fused formulas (fewer numpy passes); these tests check,
over random and edge-case values, that they give the same integers as the step-by-step
gemmlowp/TFLite formulas written out below.
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import quant_math as qm

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _ref_srdhm(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul, literally (truncating division)."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    n = ab + nudge
    q = np.abs(n) // (1 << 31)
    high = np.where(n < 0, -q, q)
    return np.where((a == b) & (a == INT32_MIN), INT32_MAX, high)


def _ref_rdbp(x, e):
    """gemmlowp RoundingDivideByPOT, literally."""
    x = np.asarray(x, np.int64)
    e = np.asarray(e, np.int64)
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def _int32s(rng, n):
    edge = np.array([0, 1, -1, 2, -2, INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1,
                     1 << 30, -(1 << 30), (1 << 30) - 1, 1 - (1 << 30)], np.int64)
    return np.concatenate([edge, rng.integers(INT32_MIN, INT32_MAX, n, endpoint=True),
                           rng.integers(-70000, 70000, n)])


def test_srdhm_matches_gemmlowp():
    rng = np.random.default_rng(1)
    a = _int32s(rng, 20000)
    for b in list(_int32s(rng, 40)):
        np.testing.assert_array_equal(qm.saturating_rounding_doubling_high_mul(a, b),
                                      _ref_srdhm(a, b))
    b = rng.permutation(a)
    np.testing.assert_array_equal(qm.saturating_rounding_doubling_high_mul(a, b),
                                  _ref_srdhm(a, b))
    np.testing.assert_array_equal(qm.saturating_rounding_doubling_high_mul(a, a),
                                  _ref_srdhm(a, a))


def test_rounding_divide_by_pot_matches_gemmlowp():
    rng = np.random.default_rng(2)
    x = _int32s(rng, 20000)
    for e in range(0, 32):
        np.testing.assert_array_equal(qm.rounding_divide_by_pot(x, e), _ref_rdbp(x, e))
    e = rng.integers(0, 32, x.size)
    np.testing.assert_array_equal(qm.rounding_divide_by_pot(x, e), _ref_rdbp(x, e))
    np.testing.assert_array_equal(qm.rounding_divide_by_pot(x.reshape(-1, 1), np.arange(8)),
                                  _ref_rdbp(x.reshape(-1, 1), np.arange(8)))


def _ref_mbqm(x, m, s):
    """MultiplyByQuantizedMultiplier (double rounding), step by step."""
    s = np.asarray(s, np.int64)
    left, right = np.maximum(s, 0), np.maximum(-s, 0)
    scaled = (np.asarray(x, np.int64) * (np.int64(1) << left)).astype(np.int32).astype(np.int64)
    return _ref_rdbp(_ref_srdhm(scaled, m), right)


@pytest.mark.parametrize("seed", range(4))
def test_multiply_by_quantized_multiplier_matches_steps(seed):
    rng = np.random.default_rng(10 + seed)
    x = _int32s(rng, 5000)
    # per-tensor multipliers, including right shifts of 0 and 31 and left shifts
    for real in [0.0, 1e-9, 0.3, 0.5, 0.999999, 1.0, 1.7, 3.9, 100.0, 2.0 ** -31, 2.0 ** -30]:
        m, s = qm.quantize_multiplier(real, "double")
        np.testing.assert_array_equal(qm.multiply_by_quantized_multiplier(x, m, s),
                                      _ref_mbqm(x, m, s), err_msg=str(real))
    m = rng.integers(1 << 30, INT32_MAX, 16, endpoint=True)
    m[0] = INT32_MIN  # the saturating multiplier takes the step-by-step path
    s = rng.integers(-31, 4, 16)
    s[1] = 0
    xs = x[: (x.size // 16) * 16].reshape(-1, 16)
    np.testing.assert_array_equal(qm.multiply_by_quantized_multiplier(xs, m, s),
                                  _ref_mbqm(xs, m, s))
    m[0] = 1 << 30
    np.testing.assert_array_equal(qm.multiply_by_quantized_multiplier(xs, m, s),
                                  _ref_mbqm(xs, m, s))
    s[:] = -rng.integers(0, 32, 16)
    np.testing.assert_array_equal(qm.multiply_by_quantized_multiplier(xs, m, s),
                                  _ref_mbqm(xs, m, s))
    # values outside int32 wrap first, as C's int32 arithmetic does
    big = rng.integers(-(1 << 40), 1 << 40, 1000)
    np.testing.assert_array_equal(qm.multiply_by_quantized_multiplier(big, m[2], s[2]),
                                  _ref_mbqm(big, m[2], s[2]))


def _near_ties(rng, m: int, s: int, n: int) -> np.ndarray:
    """int64 values whose product by ``m`` falls on or within a few units of a rounding
    boundary of either of double rounding's two steps (and some far outside int32)."""
    right = max(-s, 0)
    steps = [1 << 30] + ([1 << (30 + right)] if right else [])
    out = [_int32s(rng, n), rng.integers(-(1 << 40), 1 << 40, n)]
    for step in steps:
        k = rng.integers(-(1 << 20), 1 << 20, n) * 2 + 1  # odd multiples: the ties
        x = np.round(k.astype(np.float64) * step / max(m, 1)).astype(np.int64)
        out += [x + d for d in (-2, -1, 0, 1, 2)]
    return np.concatenate(out)


@pytest.mark.parametrize("seed", range(3))
def test_requantize_int64_matches_steps(seed):
    """The binary ops' and MEAN's lean tail: `_ref_mbqm` of the int32-wrapped values, on
    random values, values beyond int32 and values next to every rounding tie."""
    rng = np.random.default_rng(40 + seed)
    multipliers = [(int(m), int(s)) for m, s in zip(rng.integers(1 << 30, INT32_MAX, 12),
                                                   rng.integers(-31, 6, 12))]
    multipliers += [(INT32_MIN, -3), (1 << 30, 0), (INT32_MAX, -31), (0, 0), (1 << 30, 7)]
    for m, s in multipliers:
        x = _near_ties(rng, m, s, 3000)
        wrapped = x.astype(np.int32).astype(np.int64)
        got = qm.requantize_int64(x, m, s)
        np.testing.assert_array_equal(got, _ref_mbqm(wrapped, m, s), err_msg=f"{m} {s}")
        if s <= 0 and m > 0:  # (single rounding: its one step on the wrapped values)
            single = (wrapped * m + (np.int64(1) << (30 - s))) >> (31 - s)
            np.testing.assert_array_equal(qm.requantize_int64(x, m, s, "single"), single)
    assert qm.requantize_int64(np.int64(5), 1 << 30, -1).shape == ()


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_byte_scaled_add_sub_match_elementwise_arithmetic(dtype):
    """ADD/SUB of 8-bit inputs read each input's rescaled value from `byte_scaled` (256
    values per input) and end in `requantize_int64`: every pair of bytes, under random
    parameters and activations, gives the integers of add.cc's arithmetic written out
    (`_scaled_each`, the generic multiply, clamp)."""
    from tflite_viewer.interpreter.integer import elementwise as ew
    rng = np.random.default_rng(7)
    lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    bits = np.arange(256, dtype=np.uint8).view(dtype)
    x1, x2 = bits.reshape(256, 1), bits.reshape(1, 256)
    for trial in range(40):
        def q():
            return float(rng.uniform(1e-3, 1.0)) * 10.0 ** int(rng.integers(-2, 2)), \
                int(rng.integers(lo, hi + 1))
        act = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")[trial % 4]
        p = ew.prepare_add(q(), q(), q(), {"fused_activation_function": act}, dtype)
        a, b = ew._scaled_each(x1, x2, p)
        for core, raw in ((ew._add_core, a + b), (ew._sub_core, a - b)):
            want = qm.multiply_by_quantized_multiplier(qm.wrap32(raw), p.output_multiplier,
                                                       p.output_shift) + p.output_offset
            want = np.clip(want, p.act_min, p.act_max).astype(dtype)
            np.testing.assert_array_equal(core(x1, x2, p), want, err_msg=f"{p}")


@pytest.mark.parametrize("rounding", ["double", "single"])
@pytest.mark.parametrize("shape", [(1, 7, 5, 8), (2, 3, 3, 3), (1, 48, 48, 16), (4, 10), (6,)])
def test_requantizer_matches_requantize(rounding, shape):
    rng = np.random.default_rng(sum(shape))
    acc32 = rng.integers(-(1 << 22), 1 << 22, shape).astype(np.int32)
    acc32.reshape(-1)[:4] = [INT32_MIN, INT32_MAX, 0, -1]
    c = shape[-1]
    reals = rng.uniform(1e-5, 0.9, c)
    reals[0] = 1.5  # a left shift: the step-by-step path
    for mult_shift in [qm.quantize_multiplier(reals, rounding),
                       qm.quantize_multiplier(reals[1:2], rounding),
                       qm.quantize_multiplier(reals[1:], rounding) if c > 1 else None]:
        if mult_shift is None:
            continue
        m, s = mult_shift
        if m.size not in (1, c):
            m, s = np.concatenate([[1 << 30], m]), np.concatenate([[-3], s])
        for dtype, zp in [(np.int8, -5), (np.uint8, 128), (np.int16, 0)]:
            lo, hi = qm.dtype_range(dtype)
            r = qm.Requantizer(m, s, zp, lo + 3, hi, dtype, shape, rounding)
            want = qm.requantize(acc32.astype(np.int64), m, s, zp, lo + 3, hi, dtype, rounding)
            np.testing.assert_array_equal(r(acc32), want)
            np.testing.assert_array_equal(r(acc32.astype(np.int64) + (1 << 33)),
                                          qm.requantize(acc32.astype(np.int64) + (1 << 33), m,
                                                        s, zp, lo + 3, hi, dtype, rounding))


def test_hybrid_round_is_sign_floor_abs():
    from tflite_viewer.interpreter.integer.hybrid import _round_f32
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(20000) * 200, np.arange(-300, 300) / 2,
                        [0.49999997, -0.49999997, 0.5, -0.5, 1.5, -2.5, 8388607.5, -0.0, 0.0,
                         np.inf, -np.inf]]).astype(np.float32)
    x = np.concatenate([x, np.nextafter(x, np.float32(np.inf)),
                        np.nextafter(x, np.float32(-np.inf))])
    want = np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))
    np.testing.assert_array_equal(_round_f32(x), want)


def _tie_multipliers(rng, c: int, rounding: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel multipliers mixing random ones with dyadic ones (1<<30, 3<<28, ...),
    whose products land on the exact ties of both roundings, and left shifts."""
    m, s = qm.quantize_multiplier(rng.uniform(1e-5, 0.9, c), rounding)
    dyadic = np.array([1 << 30, 3 << 28, 5 << 27, (1 << 31) - 1], np.int64)
    pick = rng.random(c) < 0.5
    m = np.where(pick, dyadic[rng.integers(0, dyadic.size, c)], m)
    s = np.where(pick, rng.integers(-12, 1, c), s)
    if c > 2:
        s[1], m[2] = 2, 0  # a left shift, and a zero multiplier
    return m, s


@pytest.mark.parametrize("rounding", ["double", "single"])
@pytest.mark.parametrize("shape", [(1, 7, 5, 8), (2, 3, 3, 3), (1, 48, 48, 16), (4, 10), (6,)])
def test_float_requantizer_matches_requantizer(rounding, shape):
    """The float64 tail against the int64 one, on float accumulators that hold exact
    integers (float32 and float64), with and without bias, many exact ties included."""
    rng = np.random.default_rng(100 + sum(shape))
    c = shape[-1]
    bound = 1 << 20
    for trial in range(6):
        m, s = _tie_multipliers(rng, c, rounding)
        if trial % 3 == 0:
            m, s = m[:1], s[:1]  # per-tensor
        acc = rng.integers(-bound, bound + 1, shape)
        small = rng.random(shape) < 0.5  # near zero, where the nudge's sign decides
        acc[small] = rng.integers(-300, 300, int(small.sum()))
        acc.reshape(-1)[:6] = [0, 1, -1, bound, -bound, -(1 << 9)]
        bias = None if trial % 2 else rng.integers(-(1 << 16), 1 << 16, c).astype(np.int32)
        # clamps below the zero point, and at or above it (RELU-like: the nudge's sign
        # cannot matter, the tail folds it)
        for dtype, zp, low in [(np.int8, -5, -125), (np.uint8, 128, 3), (np.int16, 7, -32765),
                               (np.int8, -5, -5), (np.int8, -5, -6), (np.uint8, 3, 9),
                               (np.int8, -128, -128)]:
            hi = qm.dtype_range(dtype)[1]
            tail = qm.FloatRequantizer.build(m, s, zp, low, hi, dtype, shape, rounding,
                                             bound, bias)
            assert tail is not None
            full = acc if bias is None else acc + bias.astype(np.int64)
            want = qm.Requantizer(m, s, zp, low, hi, dtype, shape, rounding)(full)
            for ftype in (np.float32, np.float64):
                got = tail(acc.astype(ftype))
                assert got.dtype == np.dtype(dtype)
                np.testing.assert_array_equal(got, want)
            # BLAS sums of -0.0 products can end at -0.0: the sign test must not matter
            negative_zero = acc.astype(np.float32)
            negative_zero[negative_zero == 0] = -0.0
            np.testing.assert_array_equal(tail(negative_zero), want)


def test_float_requantizer_refuses_inexact_or_wrapping_cases():
    shape = (2, 4)
    m, s = np.array([1 << 30]), np.array([-3])
    build = qm.FloatRequantizer.build
    assert build(m, s, 0, -128, 127, np.int8, shape, "double", 1 << 20) is not None
    assert build(m, s, 0, -128, 127, np.int8, shape, "double", 1 << 31) is None  # int32 wraps
    assert build(m, np.array([-25]), 0, -128, 127, np.int8, shape, "double", 1 << 10) is None
    assert build(m, np.array([3]), 0, -128, 127, np.int8, shape, "double", 1 << 29) is None
    big_bias = np.full(4, (1 << 31) - 10, np.int64)
    assert build(m, s, 0, -128, 127, np.int8, shape, "double", 100, big_bias) is None
    assert build(m, s, 0, -128, 127, np.int8, (0, 4), "double", 100) is None


def test_hybrid_quantizers_as_float_give_the_int8_values():
    """The hybrid convolutions take the input quantizers' values as float32
    (``as_float``): the same integers as the int8 result, zeros as +0.0 (the int8 value's
    float), with the same scales and zero points, over rows of every magnitude, all-zero
    rows and values that round to -0.0."""
    from tflite_viewer.interpreter.integer import hybrid
    rng = np.random.default_rng(11)
    for trial in range(200):
        rows, n = int(rng.integers(1, 4)), int(rng.integers(1, 40))
        x = (rng.standard_normal((rows, n)) * 10.0 ** rng.uniform(-3, 3)).astype(np.float32)
        if trial % 10 == 0:
            x[0] = 0
        if trial % 7 == 0:
            x[:, :3] = -1e-9  # rounds to -0.0 before the zero point or the int8 cast
        for quantize in (hybrid.symmetric_quantize, hybrid.asymmetric_quantize):
            as_int, as_float = quantize(x), quantize(x, as_float=True)
            assert as_int[0].dtype == np.int8 and as_float[0].dtype == np.float32
            np.testing.assert_array_equal(as_float[0], as_int[0].astype(np.float32))
            assert not np.signbit(as_float[0][as_float[0] == 0]).any()
            for got, want in zip(as_float[1:], as_int[1:]):
                np.testing.assert_array_equal(got, want)
