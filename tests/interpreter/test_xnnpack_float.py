"""The arithmetic under the ``xnnpack`` kernel set, against sources that need no LiteRT:
exact rational arithmetic for the fused multiply-add, the VRSQRT14PS instruction's own
results (measured on this machine) for the estimate XNNPACK's RSQRT refines, and the
rules XNNPACK's reductions follow.  The microkernels themselves are checked against the
wheel in test_xnnpack_kernels_litert.py."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tflite_viewer.interpreter import xnnpack_float as xf
from tflite_viewer.interpreter.xnnpack_kernels import trailing_reduction
from tflite_viewer.interpreter.xnnpack_rsqrt import rsqrt14

F32 = np.float32


def correctly_rounded(value: Fraction) -> F32:
    """The float32 nearest to an exact rational (ties to even), by exact comparison with
    the neighbours of the float64 rounding's float32 rounding."""
    guess = F32(float(value))
    candidates = [np.nextafter(guess, F32(-np.inf)), guess, np.nextafter(guess, F32(np.inf))]
    distances = [abs(Fraction(float(c)) - value) for c in candidates]
    best = min(distances)
    ties = [c for c, d in zip(candidates, distances) if d == best]
    if len(ties) == 1:
        return ties[0]
    return next(c for c in ties if int(np.asarray(c).view(np.uint32)) % 2 == 0)


def exact_fma(a: F32, b: F32, c: F32) -> F32:
    return correctly_rounded(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))


def test_fma_is_one_rounding_where_float64_then_float32_rounds_twice():
    """a*b + c just below the midpoint between two float32 values: float64 rounds it onto
    the midpoint, float32 then rounds the tie to even, the wrong way; one rounding (an FMA
    instruction, and `fma`) gives the lower neighbour."""
    a = F32(2.0 ** -24 * (1 + 2.0 ** -18))
    b = F32(1 - 2.0 ** -18)
    c = F32(1 + 2.0 ** -23)  # its last bit odd: the tie goes up
    exact = exact_fma(a, b, c)
    twice = F32(np.float64(a) * np.float64(b) + np.float64(c))
    assert exact == c and twice != exact  # the corner exists
    assert xf.fma(a, b, c) == exact
    # and mirrored below zero, and the same sum reached the other way round
    assert xf.fma(-a, b, -c) == -exact
    assert xf.fma(b, a, c) == exact


def test_fma_matches_exact_arithmetic_on_random_and_near_tie_operands():
    rng = np.random.default_rng(0)
    n = 4000
    a = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(F32)
    b = (rng.standard_normal(n) * 2.0 ** rng.integers(-20, 20, n)).astype(F32)
    c = (-(a.astype(np.float64) * b) * (1 + rng.standard_normal(n) * 1e-7)).astype(F32)
    c[::3] = rng.standard_normal(n)[::3].astype(F32)  # and unrelated addends
    ours = xf.fma(a, b, c)
    want = np.array([exact_fma(x, y, z) for x, y, z in zip(a, b, c)], F32)
    assert np.array_equal(ours.view(np.uint32), want.view(np.uint32))


def test_fma_keeps_infinities_and_nan():
    with np.errstate(invalid="ignore"):
        out = xf.fma(np.array([np.inf, 1.0, np.nan, 3e38], F32),
                     np.array([2.0, np.inf, 1.0, 10.0], F32),
                     np.array([1.0, -1.0, 0.0, 0.0], F32))
    assert out[0] == np.inf and out[1] == np.inf and np.isnan(out[2]) and out[3] == np.inf


def test_flush_zeroes_subnormals_only_keeping_the_sign():
    x = np.array([1e-40, -1e-40, 1.2e-38, -1.0, 0.0, -0.0, 5e-324], np.float64).astype(F32)
    out = xf.flush(x)
    assert list(out[:3]) == [0.0, 0.0, F32(1.2e-38)] and out[3] == -1.0
    assert np.signbit(out[1]) and not np.signbit(out[0])
    clean = np.array([1.0, 2.0], F32)
    assert xf.flush(clean) is clean  # nothing to flush: no copy


#: VRSQRT14PS results measured on this machine's AMD EPYC (an AVX-512 intrinsic run in a
#: throwaway C program): input bits -> result bits.  Special values, powers of 4, both
#: halves of [1, 4), and arguments far outside it.
RSQRT14_MEASURED = {
    0x00000000: 0x7F800000, 0x80000000: 0xFF800000, 0x00800000: 0x5F000000,
    0x7F7FC99E: 0x1F800D80, 0x3E800000: 0x40000000, 0x3F000000: 0x3FB50280,
    0x0DA24260: 0x58636100, 0x7149F2CA: 0x26901E00, 0x40E00000: 0x3EC18380,
    0x42C80000: 0x3DCCCB80, 0x358637BD: 0x447A0300, 0x47F12000: 0x3B3A8500,
    0x3FC00000: 0x3F510480, 0x40200000: 0x3F21E780,
}


def test_rsqrt14_gives_the_instructions_measured_results():
    bits = np.array(sorted(RSQRT14_MEASURED), np.uint32)
    got = rsqrt14(bits.view(F32)).view(np.uint32)
    want = np.array([RSQRT14_MEASURED[b] for b in sorted(RSQRT14_MEASURED)], np.uint32)
    assert [hex(v) for v in got] == [hex(v) for v in want]


def test_rsqrt14_special_values_and_daz():
    x = np.array([np.inf, -1.0, np.nan, 1e-40, -1e-40, 1.0, 4.0, 0.25], F32)
    with np.errstate(invalid="ignore"):
        out = rsqrt14(x)
    assert out[0] == 0 and np.isnan(out[1]) and np.isnan(out[2])
    assert out[3] == np.inf and out[4] == -np.inf  # a subnormal is a zero (DAZ)
    assert list(out[5:]) == [1.0, 0.5, 2.0]


def test_rsqrt14_is_within_its_documented_bound_everywhere_in_1_to_4():
    """Every float32 of [1, 4) a thousandth apart: relative error below 2**-14 (the SDM's
    bound for the instruction), and the estimate never increases with x."""
    x = np.arange(0x3F800000, 0x40800000, 997, dtype=np.uint32).view(F32)
    est = rsqrt14(x).astype(np.float64)
    exact = 1 / np.sqrt(x.astype(np.float64))
    assert np.max(np.abs(est / exact - 1)) < 2.0 ** -14
    assert np.all(np.diff(est) <= 0)


@pytest.mark.parametrize("shape,axes,count", [
    ((1, 8, 64), [-1], 64), ((1, 8, 64), [2, 1], 512), ((1, 8, 64), [1], None),
    ((4, 1, 6), [0, 2], 24), ((4, 1, 6), [0], None), ((3,), [0], 3), ((1, 1, 64), [2], 64),
    ((2, 3, 4), [1, 2], 12), ((2, 3, 4), [0, 2], None)])
def test_which_reductions_are_one_contiguous_sum(shape, axes, count):
    """XNNPACK drops size-1 dimensions and merges alike neighbours; one trailing block of
    reduced dimensions is its contiguous rsum (the only reduction reproduced)."""
    assert trailing_reduction(shape, axes) == count


def test_row_sums_add_lane_by_lane_then_reduce_the_lanes_as_a_tree():
    """A row of 33 values: two 16-lane vectors (one per accumulator), the one-value tail,
    then lanes 0..7 + 8..15, 0..3 + 4..7, (0, 1) + (2, 3), 0 + 1; a sum in another order
    would round elsewhere on this row."""
    row = np.array([1e8, 1.0, -1e8, 3.0] * 8 + [0.5], F32)
    lanes = np.zeros((2, 16), F32)
    lanes[0], lanes[1] = row[:16], row[16:32]
    acc = lanes[0] + lanes[1]
    acc[0] += row[32]
    a = acc[:8] + acc[8:]
    a = a[:4] + a[4:]
    a = a[:2] + a[2:]
    want = a[0] + a[1]
    sequential = F32(0)
    for v in row:
        sequential = sequential + v
    assert xf.row_sum(row[None])[0] == want == 32.0
    assert sequential == 3.5  # one value after another: another result
