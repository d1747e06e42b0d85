"""quant_math against hand-computed values and exact rational arithmetic."""
from __future__ import annotations

import inspect
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter import quant_math as qm


@pytest.mark.parametrize("real,expected", [
    (0.5, (1 << 30, 0)),
    (1.0, (1 << 30, 1)),
    (0.25, (1 << 30, -1)),
    (0.75, (3 << 29, 0)),
    (0.0, (0, 0)),
    (2.0 ** -40, (0, 0)),               # below 2^-31: flushed to zero
    (1.0 - 2.0 ** -33, (1 << 30, 1)),   # rounds up to 2^31: carried into the shift
])
def test_quantize_multiplier_hand_values(real, expected):
    q, s = qm.quantize_multiplier(real)
    assert (int(q), int(s)) == expected


def test_quantize_multiplier_saturates_large_shifts_only_in_single_rounding():
    q, s = qm.quantize_multiplier(2.0 ** 40, "single")
    assert (int(q), int(s)) == ((1 << 31) - 1, 30)
    q, s = qm.quantize_multiplier(2.0 ** 40, "double")
    assert (int(q), int(s)) == (1 << 30, 41)


def _exact(x: int, q: int, shift: int) -> Fraction:
    return Fraction(x) * Fraction(q, 1 << 31) * (Fraction(2) ** shift)


@settings(max_examples=400, deadline=None)
@given(x=st.integers(-(1 << 20), 1 << 20), real=st.floats(1e-6, 0.999),
       rounding=st.sampled_from(["single", "double"]))
def test_multiply_rounds_to_nearest_of_the_exact_product(x, real, rounding):
    q, s = qm.quantize_multiplier(real, rounding)
    got = int(qm.multiply_by_quantized_multiplier(np.array([x]), q, s, rounding)[0])
    exact = _exact(x, int(q), int(s))
    if rounding == "single":
        # One rounding: the nearest integer, ties toward +infinity.
        assert got == (exact + Fraction(1, 2)).__floor__()
    else:
        # Two roundings (to the high 32 bits, then by the shift) can each add half a unit.
        assert abs(Fraction(got) - exact) <= 1


def test_the_two_roundings_differ_on_negative_ties():
    # -2 * 0.25 = -0.5 exactly: single rounding goes up (0), double away from zero (-1).
    q, s = qm.quantize_multiplier(0.25)
    assert int(qm.multiply_by_quantized_multiplier(np.array([-2]), q, s, "single")[0]) == 0
    assert int(qm.multiply_by_quantized_multiplier(np.array([-2]), q, s, "double")[0]) == -1
    # Positive ties agree: 2 * 0.25 = 0.5 -> 1 either way.
    for rounding in qm.ROUNDINGS:
        assert int(qm.multiply_by_quantized_multiplier(np.array([2]), q, s, rounding)[0]) == 1


def test_srdhm_and_rounding_divide_follow_gemmlowp_definitions():
    assert int(qm.saturating_rounding_doubling_high_mul(qm.INT32_MIN, qm.INT32_MIN)) == qm.INT32_MAX
    assert int(qm.saturating_rounding_doubling_high_mul(1 << 30, 1 << 30)) == 1 << 29
    assert list(qm.rounding_divide_by_pot(np.array([5, -5, 6, -6, 7, -7]), 1)) == [3, -3, 3, -3, 4, -4]
    assert list(qm.trunc_div(np.array([-7, 7, -8]), 2)) == [-3, 3, -4]


def test_per_channel_broadcast_and_requantize_clamps():
    q, s = qm.quantize_multiplier(np.array([0.5, 0.25]))
    acc = np.array([[10, 10], [-10, -10]])
    out = qm.requantize(acc, q, s, 3, -128, 127, np.int8, "single")
    assert out.tolist() == [[8, 6], [-2, 1]]  # 10*0.5+3, 10*0.25 (2.5 -> 3)+3, -5+3, -2.5 -> -2, +3
    out = qm.requantize(acc, q, s, 3, -128, 127, np.int8)  # double: -2.5 -> -3 (away from 0)
    assert out.tolist() == [[8, 6], [-2, 0]]
    assert qm.requantize(np.array([10 ** 6]), q[0], s[0], 0, -128, 127, np.int8).tolist() == [127]


def test_int64_accumulator_overload_uses_a_16_bit_multiplier():
    q, s = qm.quantize_multiplier(0.5)
    # reduced multiplier (2^30 + 2^15) >> 16 = 2^14; total shift 15: x * 2^14 / 2^15 = x / 2
    assert qm.multiply_by_quantized_multiplier_int64(np.array([1 << 40, 3]), q, s,
                                                     "single").tolist() == [1 << 39, 2]
    # the double-rounding build returns the int64 result cast to int32 (wrapping)
    assert qm.multiply_by_quantized_multiplier_int64(np.array([1 << 40, 3]), q, s).tolist() == [0, 2]


def test_multipliers_as_the_kernels_prepare_them():
    q, s = qm.per_tensor_multiplier(0.1, 0.2, 0.3)
    real = float(np.float32(0.1) * np.float32(0.2)) / float(np.float32(0.3))
    assert (q, s) == tuple(int(v) for v in qm.quantize_multiplier(real))
    qs, ss = qm.per_channel_multipliers(0.1, np.array([0.2]), 0.3, channels=3)
    assert qs.shape == (3,) and len(set(qs.tolist())) == 1


def test_activation_ranges():
    assert qm.activation_range("RELU6", 0.05, -128, -128, 127) == (-128, -8)
    assert qm.activation_range("RELU", 0.05, -10, -128, 127) == (-10, 127)
    assert qm.activation_range("RELU_N1_TO_1", 0.05, 0, -128, 127) == (-20, 20)
    assert qm.activation_range(None, 1.0, 0, -128, 127) == (-128, 127)
    # LiteRT's CalculateActivationRangeQuantized clamps only RELU, RELU6 and RELU_N1_TO_1:
    # every other fused activation keeps the full range of the type.
    for act in ("NONE", "RELU_0_TO_1", "TANH", "SIGN_BIT"):
        assert qm.activation_range(act, 0.05, -128, -128, 127) == (-128, 127)
    with pytest.raises(ValueError):
        qm.check_rounding("banker")


def test_default_rounding_is_litert_double():
    """The defaults follow the ai-edge-litert 2.3.0 wheel (gemmlowp double rounding)."""
    assert inspect.signature(Interpreter).parameters["rounding"].default == "double"
    # the LiteRT case of tests/interpreter/integer/test_rounding.py
    acc, m, shift = 16474, 1309785559, -7
    assert int(qm.multiply_by_quantized_multiplier(acc, m, shift)) == 79
    assert int(qm.multiply_by_quantized_multiplier(acc, m, shift, "single")) == 78
    q, s = qm.quantize_multiplier(2.0 ** 40)  # no single-rounding shift saturation
    assert (int(q), int(s)) == (1 << 30, 41)
