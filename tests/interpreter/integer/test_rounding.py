"""Single vs double (gemmlowp) rounding: known ties, hand-computed values, and which one the
ai-edge-litert 2.3.0 wheel's reference kernels use."""
from __future__ import annotations

import numpy as np

from tflite_viewer.interpreter import quant_math as qm
from tflite_viewer.interpreter.integer import conv, elementwise

from .harness import Case, check_cases
from .gen import LITERT_ROUNDING
from tests.interpreter.singleop import Op, T, batch_model, run_batch_litert


def test_roundings_differ_on_ties():
    # x * 0.5 with multiplier 2^30, shift 0: exact halves.
    x = np.array([-7, -5, -3, -1, 1, 3, 5, 7])
    single = qm.multiply_by_quantized_multiplier(x, 1 << 30, 0, "single")
    double = qm.multiply_by_quantized_multiplier(x, 1 << 30, 0, "double")
    # single rounding: (x * M + 2^30) >> 31, halves go up (toward +inf)
    np.testing.assert_array_equal(single, [-3, -2, -1, 0, 1, 2, 3, 4])
    # gemmlowp SRDHM: nudge 2^30 or 1 - 2^30, then truncating division: halves go up too
    np.testing.assert_array_equal(double, [-3, -2, -1, 0, 1, 2, 3, 4])
    # ...but with a right shift the tie is resolved by RoundingDivideByPOT, away from zero:
    # x * 0.25 as multiplier 2^30 (0.5) and shift -1.
    x = np.array([-6, -2, 2, 6])
    np.testing.assert_array_equal(
        qm.multiply_by_quantized_multiplier(x, 1 << 30, -1, "single"), [-1, 0, 1, 2])
    np.testing.assert_array_equal(
        qm.multiply_by_quantized_multiplier(x, 1 << 30, -1, "double"), [-2, -1, 1, 2])


def test_double_rounding_hand_computed():
    # 78.498...: SRDHM(16474, 1309785559) = round(16474 * 1309785559 / 2^31) = 10047.76 -> 10048,
    # then RoundingDivideByPOT(10048, 7) = 78.5 -> 79 (away from zero); single rounding
    # gives round(78.498) = 78.  (A case met in the conv tests.)
    acc, m, shift = 16474, 1309785559, -7
    assert int(qm.saturating_rounding_doubling_high_mul(acc, m)) == 10048
    assert int(qm.rounding_divide_by_pot(10048, 7)) == 79
    assert int(qm.multiply_by_quantized_multiplier(acc, m, shift, "double")) == 79
    assert int(qm.multiply_by_quantized_multiplier(acc, m, shift, "single")) == 78
    # negative: -7126 * 1147444679 / 2^37 = -59.4933; SRDHM -> round(-3807.57) = -3808,
    # -3808 / 64 = -59.5 -> -60 away from zero; single: -59.
    acc, m, shift = -7126, 1147444679, -6
    assert int(qm.saturating_rounding_doubling_high_mul(acc, m)) == -3808
    assert int(qm.multiply_by_quantized_multiplier(acc, m, shift, "double")) == -60
    assert int(qm.multiply_by_quantized_multiplier(acc, m, shift, "single")) == -59
    # SRDHM saturates the one overflow case
    assert int(qm.saturating_rounding_doubling_high_mul(-(1 << 31), -(1 << 31))) == (1 << 31) - 1


def test_litert_reference_kernels_use_double_rounding():
    """The exact accumulators above, pushed through a 1x1 CONV_2D and a MUL in LiteRT."""
    cases = []
    # conv: input 1, filter 1, bias = acc - 1 -> accumulator acc; choose scales giving
    # the multiplier/shift pair of the hand-computed case.
    for acc, m, shift in ((16474, 1309785559, -7), (-7126, 1147444679, -6)):
        real = m / 2.0 ** 31 * 2.0 ** shift
        in_s, f_s = 1.0, 1.0
        out_s = float(np.float32(in_s * f_s / real))
        mult, sh = qm.per_channel_multipliers(in_s, np.array([f_s]), out_s, 1)
        x = np.ones((1, 1, 1, 1), np.int8)
        f = np.ones((1, 1, 1, 1), np.int8)
        b = np.array([acc - 1], np.int32)
        iq, fq, oq = (in_s, 0), (np.array([f_s], np.float32), 0), (out_s, 0)
        op = Op("CONV_2D", [T((1, 1, 1, 1), np.int8, *iq), T.const(f, [f_s], 0),
                            T.const(b, in_s * f_s, 0)], [T((1, 1, 1, 1), np.int8, *oq)],
                "Conv2DOptions", {"padding": "VALID", "stride_w": 1, "stride_h": 1}, 3)
        double = conv.conv_2d(x, f, b, iq, fq, oq, {"padding": "VALID"}, "double")
        single = conv.conv_2d(x, f, b, iq, fq, oq, {"padding": "VALID"}, "single")
        assert int(double.ravel()[0]) != int(single.ravel()[0]), (mult, sh)
        cases.append(Case(op, [x], lambda d=double: d, f"conv acc={acc}"))
    assert check_cases(cases) == 2


def test_mul_tie_away_from_zero_in_litert():
    """MUL by 1 with output scale 4 = input scale: x / 4 on exact halves (-6/4 = -1.5)."""
    x = np.array([-10, -6, -2, 2, 6, 10], np.int8)
    one = np.ones(1, np.int8)
    ours = elementwise.mul(x, one, (1.0, 0), (1.0, 0), (4.0, 0), {}, "double")
    np.testing.assert_array_equal(ours, [-3, -2, -1, 1, 2, 3])
    op = Op("MUL", [T(x.shape, np.int8, 1.0, 0), T.const(one, 1.0, 0)],
            [T(x.shape, np.int8, 4.0, 0)], "MulOptions", {}, 2)
    assert check_cases([Case(op, [x], lambda: ours, "MUL ties")]) == 1


def test_rounding_census_against_litert():
    """How often each rounding reproduces LiteRT's reference kernels on random requantized
    outputs (conv, depthwise conv and MUL, int8 and uint8): double rounding every one of
    them, single rounding not (the ties it resolves differently do occur)."""
    from . import test_conv, test_elementwise
    rng = np.random.default_rng(314)
    cases = ([test_conv._case(rng, d, dw, per_channel=bool(i % 2))
              for d in (np.int8, np.uint8) for dw in (False, True) for i in range(150)]
             + [test_elementwise._binary_case(rng, "MUL", d) for d in (np.int8, np.uint8)
                for _ in range(150)])
    built = batch_model([c.op for c in cases])
    litert = run_batch_litert(built, [c.inputs for c in cases])
    census = {}
    for rounding in ("double", "single"):
        differing = total = 0
        for module in (test_conv, test_elementwise):
            module.LITERT_ROUNDING = rounding  # the cases read it when computing ours
        try:
            for case, ref in zip(cases, litert):
                ours = np.asarray(case.ours())
                differing += int((ours != ref[0]).sum())
                total += ours.size
        finally:
            for module in (test_conv, test_elementwise):
                module.LITERT_ROUNDING = LITERT_ROUNDING
        census[rounding] = (differing, total)
    print(f"\nLiteRT reference outputs reproduced: double rounding "
          f"{census['double'][1] - census['double'][0]} of {census['double'][1]}, single "
          f"rounding {census['single'][1] - census['single'][0]} of {census['single'][1]}")
    assert census["double"][0] == 0
    assert census["single"][0] > 0
