"""Integer requantization arithmetic, bit for bit as LiteRT's kernels do it, vectorized.

Two roundings exist in the wild.  gemmlowp's double rounding (SaturatingRoundingDoublingHighMul,
then RoundingDivideByPOT) is what the `ai-edge-litert` 2.3.0 wheel's kernels actually do:
measured on single-op models in tests/interpreter/integer/test_rounding.py (e.g. acc=16474,
multiplier=1309785559, shift=-7: LiteRT gives 79, double rounding 79, single rounding 78)
and on every intermediate tensor of the quantized corpus models in
tests/interpreter/test_quantized_models.py.  It is therefore the default here
(``rounding="double"``).  Builds compiled with ``TFLITE_SINGLE_ROUNDING`` multiply by a
quantized multiplier with one rounding step (``rounding="single"``).  The two differ on
exact ties such as -0.5.

Everything works on numpy arrays with C semantics: int64 intermediates, truncating
division where C divides, arithmetic right shifts, two's-complement wrap on casts.
The formulas follow tflite/kernels/internal/common.{h,cc} and quantization_util.cc.
"""
from __future__ import annotations

import math
from typing import Literal

import numpy as np

try:  # the clip ufunc itself: np.clip's Python wrapper costs four times as much (the
    # float kernels' clamps take it too: kernels/common.py)
    from numpy._core.umath import clip as clip_ufunc
except ImportError:  # numpy < 2
    from numpy.core.umath import clip as clip_ufunc  # type: ignore[no-redef]

Rounding = Literal["single", "double"]
ROUNDINGS: tuple[str, ...] = ("single", "double")
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def clip_into(x: np.ndarray, lo, hi) -> np.ndarray:
    """``np.clip(x, lo, hi, out=x)`` through the clip ufunc (a quarter of np.clip's cost on
    the small arrays of the integer kernels); ``lo``/``hi`` must fit x's dtype."""
    return clip_ufunc(x, lo, hi, out=x)


def check_rounding(rounding: str) -> Rounding:
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be 'single' or 'double', not {rounding!r}")
    return rounding  # type: ignore[return-value]


def round_half_away(x: np.ndarray | float) -> np.ndarray:
    """TfLiteRound / std::round: halves go away from zero (numpy's round goes to even)."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def trunc_div(n: np.ndarray, d: int | np.ndarray) -> np.ndarray:
    """C integer division (toward zero) on int64 arrays."""
    n = np.asarray(n, dtype=np.int64)
    q = np.abs(n) // np.abs(d)
    return np.where((n < 0) != (np.asarray(d) < 0), -q, q)


def quantize_multiplier(real: np.ndarray | float,
                        rounding: Rounding = "double") -> tuple[np.ndarray, np.ndarray]:
    """QuantizeMultiplier: (int32 multiplier with its point at bit 31, shift) per value.

    frexp, round half away from zero, carry 2^31 into the exponent, flush multipliers below
    2^-31 to zero; single-rounding builds also saturate shifts above 30.
    """
    real = np.asarray(real, dtype=np.float64)
    mantissa, shift = np.frexp(real)
    q = round_half_away(mantissa * float(1 << 31)).astype(np.int64)
    shift = shift.astype(np.int64)
    carry = q == (1 << 31)
    q = np.where(carry, q // 2, q)
    shift = np.where(carry, shift + 1, shift)
    tiny = shift < -31
    q = np.where(tiny, 0, q)
    shift = np.where(tiny, 0, shift)
    if rounding == "single":
        big = shift > 30
        q = np.where(big, (1 << 31) - 1, q)
        shift = np.where(big, 30, shift)
    zero = real == 0
    q = np.where(zero, 0, q)
    shift = np.where(zero, 0, shift)
    return q.astype(np.int64), shift.astype(np.int64)


def saturating_rounding_doubling_high_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul on int32 values (as int64 arrays).

    gemmlowp adds a nudge of 2^30 (ab >= 0) or 1 - 2^30 (ab < 0) and divides by 2^31
    truncating toward zero.  For ab < 0 that truncating division of ab + 1 - 2^30 equals
    the floor division of ab + 2^30, which is also what the ab >= 0 case computes, so both
    are one arithmetic shift: (ab + 2^30) >> 31.  The one overflow, a == b == INT32_MIN,
    saturates to INT32_MAX.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    high = (a * b + (1 << 30)) >> 31
    if b.ndim == 0 and int(b) != INT32_MIN:
        return high
    if a.ndim == 0 and int(a) != INT32_MIN:
        return high
    small = b if b.size <= a.size else a
    if small.size and small.min() > INT32_MIN:
        return high
    return np.where((a == b) & (a == INT32_MIN), INT32_MAX, high)


def rounding_divide_by_pot(x: np.ndarray, exponent: np.ndarray | int) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT: divide by 2^exponent, ties away from zero.

    gemmlowp adds one to ``x >> e`` when the remainder ``x & mask`` exceeds ``mask >> 1``
    (plus one for negative x): that is ``(x + 2^(e-1)) >> e`` for x >= 0 and
    ``(x + 2^(e-1) - 1) >> e`` for x < 0, written here as one shift.
    """
    x = np.asarray(x, dtype=np.int64)
    if np.ndim(exponent) == 0:
        e = int(exponent)
        if e == 0:
            return x
        return (x + (x >> 63) + (1 << (e - 1))) >> e
    exponent = np.asarray(exponent, dtype=np.int64)
    half = (np.int64(1) << exponent) >> 1            # 2^(e-1), 0 for e == 0
    neg_mask = -(exponent > 0).astype(np.int64)       # e == 0 divides by one: no nudge
    return (x + ((x >> 63) & neg_mask) + half) >> exponent


_INT32_OR_NARROWER = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16,
                                                    np.int32, np.bool_))


def wrap32(x: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of int64 values to int32 (C int32 arithmetic), kept as int64."""
    return np.asarray(x, dtype=np.int64).astype(np.int32).astype(np.int64)


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier: np.ndarray, shift: np.ndarray,
                                     rounding: Rounding = "double") -> np.ndarray:
    """MultiplyByQuantizedMultiplier for int32 accumulators; broadcasts per channel.

    Double rounding is ``RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x * 2^left,
    multiplier), right)``.  Both steps are floor divisions by powers of two after a nudge
    (see their docstrings), and nested floor divisions by 2^31 and then 2^right are one
    floor division by 2^(31 + right), so the whole is one multiply, one add and one shift:

        (x * multiplier + 2^30 + (2^(right-1) - [high < 0]) * 2^31) >> (31 + right)

    where high < 0 exactly when x * multiplier < -2^30, and the 2^(right-1) and [high < 0]
    terms vanish for right == 0.  Every intermediate stays below 2^63.  The saturating case
    of SaturatingRoundingDoublingHighMul (multiplier == INT32_MIN) takes the step-by-step
    path.
    """
    x = np.asarray(x)
    is_int32 = x.dtype in _INT32_OR_NARROWER  # nothing to wrap
    x = np.asarray(x, dtype=np.int64)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    if rounding == "single":
        total = 31 - shift
        rnd = np.int64(1) << (total - 1)
        return (x * multiplier + rnd) >> total
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    if left.any():
        scaled = wrap32(x * (np.int64(1) << left))
    else:
        scaled = x if is_int32 else wrap32(x)
    if multiplier.size and (multiplier.min() == INT32_MIN or right.max() > 31):
        return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(scaled, multiplier),
                                      right)
    ab = scaled * multiplier
    half = (np.int64(1) << right) >> 1
    offset = (1 << 30) + (half << 31)
    if not right.any():
        return (ab + offset) >> 31
    offset_negative = offset - ((right > 0).astype(np.int64) << 31)
    return (ab + np.where(ab < -(1 << 30), offset_negative, offset)) >> (31 + right)


def requantize_int64(x: np.ndarray, multiplier: int, shift: int,
                     rounding: Rounding = "double") -> np.ndarray:
    """`multiply_by_quantized_multiplier` of ``wrap32(x)`` (an int64 array: C's int32
    accumulator) by one multiplier, as a fresh int64 array: the fused formula in a few
    in-place passes, without the per-channel checks and broadcasts (the tail of the
    binary ops and MEAN: a model's small ones spent more in those than in arithmetic).
    The nudge for x * multiplier < 0 rather than < -2^30 is `Requantizer`'s: in
    between, both give 0."""
    multiplier, shift = int(multiplier), int(shift)
    right = max(-shift, 0)
    if rounding != "double" or multiplier == INT32_MIN or right > 31:
        return np.asarray(multiply_by_quantized_multiplier(wrap32(x), multiplier, shift,
                                                          rounding))
    ab = wrap32(x << shift if shift > 0 else x)  # (a fresh array)
    ab *= multiplier
    if not right:
        ab += 1 << 30
    else:
        nudge = ab >> 63  # -1 where negative: the nudge less 2^31 there
        nudge &= -(1 << 31)
        nudge += (1 << 30) + (1 << (right + 30))
        ab += nudge
    ab >>= 31 + right
    return ab


def multiply_by_quantized_multiplier_int64(x: np.ndarray, multiplier: np.ndarray,
                                           shift: np.ndarray,
                                           rounding: Rounding = "double") -> np.ndarray:
    """The int64-accumulator overload (int16x8 kernels): a 16-bit reduced multiplier.

    Both roundings use the same formula here; the double-rounding build only wraps the
    result to int32 where the single-rounding one asserts it fits.
    """
    x = np.asarray(x, dtype=np.int64)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    reduced = np.where(multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, 0x7FFF)
    total = 15 - shift
    result = (x * reduced + (np.int64(1) << (total - 1))) >> total
    return result if rounding == "single" else wrap32(result)


def requantize(acc: np.ndarray, multiplier, shift, output_zero_point: int, qmin: int, qmax: int,
               dtype, rounding: Rounding = "double", int64_acc: bool = False) -> np.ndarray:
    """acc * M + zero point, clamped to the activation range and cast: every kernel's tail."""
    fn = multiply_by_quantized_multiplier_int64 if int64_acc else multiply_by_quantized_multiplier
    out = fn(acc, multiplier, shift, rounding) + output_zero_point
    return np.clip(out, qmin, qmax).astype(dtype)


def per_tensor_multiplier(input_scale: float, filter_scale: float, output_scale: float,
                          rounding: Rounding = "double") -> tuple[int, int]:
    """GetQuantizedConvolutionMultipler: the input*filter product in float32 first."""
    product = np.float32(input_scale) * np.float32(filter_scale)
    real = float(np.float64(product) / np.float64(np.float32(output_scale)))
    q, s = quantize_multiplier(real, rounding)
    return int(q), int(s)


def per_channel_multipliers(input_scale: float, filter_scales: np.ndarray, output_scale: float,
                            channels: int, rounding: Rounding = "double") -> tuple[np.ndarray, np.ndarray]:
    """PopulateConvolutionQuantizationParams: each channel's scale product in double."""
    scales = np.asarray(filter_scales, dtype=np.float32).astype(np.float64)
    if scales.size == 1:
        scales = np.full(channels, scales[0])
    real = np.float64(np.float32(input_scale)) * scales / np.float64(np.float32(output_scale))
    return quantize_multiplier(real, rounding)


def activation_range(activation: str | None, scale: float, zero_point: int, qmin: int,
                     qmax: int) -> tuple[int, int]:
    """CalculateActivationRangeQuantized: the fused activation's bounds in the output's units.

    LiteRT clamps only for RELU, RELU6 and RELU_N1_TO_1; every other fused activation
    (NONE, RELU_0_TO_1, TANH, SIGN_BIT) leaves the full range [qmin, qmax].
    """

    def quantize(value: float) -> int:
        return int(zero_point + round_half_away(np.float32(value) / np.float32(scale)))

    if activation == "RELU":
        return max(qmin, quantize(0.0)), qmax
    if activation == "RELU6":
        return max(qmin, quantize(0.0)), min(qmax, quantize(6.0))
    if activation == "RELU_N1_TO_1":
        return max(qmin, quantize(-1.0)), min(qmax, quantize(1.0))
    return qmin, qmax


def dtype_range(dtype) -> tuple[int, int]:
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def saturate_cast(values: np.ndarray, dtype) -> np.ndarray:
    """``values`` clamped to ``dtype``'s range and cast: the std::min/std::max and
    static_cast every reference kernel ends with."""
    lo, hi = dtype_range(dtype)
    return np.clip(values, lo, hi).astype(dtype)


def row_layout(shape: tuple[int, ...], per_channel: bool,
               row: int = 4096) -> tuple[tuple[int, ...], int]:
    """How a prepared tail views a channels-last array: (rows shape, pixels per row).

    Per-channel constants are tiled to rows of ``k`` pixels x C channels (about ``row``
    elements, ``k`` dividing the pixel count), so numpy runs long inner loops instead of
    C-long ones; per-tensor tails take the array flat."""
    size = math.prod(shape)
    channels = shape[-1] if shape else 1
    pixels = size // channels if channels else 0
    if not (per_channel and pixels):
        return (size,), 1
    k = max(1, min(pixels, row // channels))
    while pixels % k:
        k -= 1
    return (pixels // k, k * channels), k


class Requantizer:
    """A kernel's tail prepared once for one accumulator shape (channels last):
    MultiplyByQuantizedMultiplier, + output zero point, clamp to [qmin, qmax], cast.

    Same integers as `requantize`, with the per-channel constants of the fused formula (see
    `multiply_by_quantized_multiplier`) laid out once for the whole accumulator: the
    accumulator is viewed as rows of ``k`` pixels x C channels and the constants are tiled to
    one such row, so numpy runs long inner loops instead of C-long ones.  The high < 0
    nudge is taken for x * multiplier < 0 rather than < -2^30: in between, both give 0.
    Values beyond int32 are treated as `multiply_by_quantized_multiplier` treats them
    (double rounding wraps them to int32 first).
    """

    ROW = 4096  # target elements per tiled row

    def __init__(self, multiplier, shift, output_zero_point: int, qmin: int, qmax: int, dtype,
                 shape: tuple[int, ...], rounding: Rounding = "double") -> None:
        self.multiplier = np.asarray(multiplier, dtype=np.int64).reshape(-1)
        self.shift = np.asarray(shift, dtype=np.int64).reshape(-1)
        self.zero_point, self.qmin, self.qmax = int(output_zero_point), int(qmin), int(qmax)
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(d) for d in shape)
        self.rounding = check_rounding(rounding)
        channels = self.shape[-1] if self.shape else 1
        per_channel = self.multiplier.size > 1
        if per_channel and self.multiplier.size != channels:
            raise ValueError(f"{self.multiplier.size} multipliers for {channels} channels")
        right = np.maximum(-self.shift, 0)
        self.fused = (rounding == "double" and not (self.shift > 0).any()
                      and self.multiplier.min(initial=0) > INT32_MIN and right.max(initial=0) <= 31)
        self.rows, k = row_layout(self.shape, per_channel, self.ROW)

        def tile(v):
            v = np.asarray(v, dtype=np.int64)
            return np.tile(v, k) if per_channel else v.reshape(())
        if rounding == "single":
            total = 31 - self.shift
            self.t_mult, self.t_total = tile(self.multiplier), tile(total)
            self.t_round = tile(np.int64(1) << (total - 1))
        elif self.fused:
            half = (np.int64(1) << right) >> 1
            self.t_mult = tile(self.multiplier)
            self.t_offset = tile((1 << 30) + (half << 31))
            self.t_negative = tile(np.where(right > 0, -(1 << 31), 0))
            self.t_total = tile(31 + right)

    def __call__(self, acc: np.ndarray) -> np.ndarray:
        acc = np.asarray(acc)
        if acc.shape != self.shape:
            raise ValueError(f"accumulator shape {list(acc.shape)} is not the prepared "
                             f"{list(self.shape)}")
        if self.rounding == "single":
            out = acc.reshape(self.rows).astype(np.int64) * self.t_mult
            out += self.t_round
            out >>= self.t_total
        elif self.fused:
            x = acc.reshape(self.rows).astype(np.int64) if acc.dtype in _INT32_OR_NARROWER \
                else wrap32(acc).reshape(self.rows)
            out = x * self.t_mult
            nudge = out >> 63
            nudge &= self.t_negative
            nudge += self.t_offset
            out += nudge
            out >>= self.t_total
        else:
            out = multiply_by_quantized_multiplier(acc, self.multiplier, self.shift,
                                                   self.rounding)
        out += self.zero_point
        np.maximum(out, self.qmin, out=out)
        np.minimum(out, self.qmax, out=out)
        return out.astype(self.dtype).reshape(self.shape)


def _clamped_channels(m: np.ndarray, s: np.ndarray, b: np.ndarray, bound: int, zp: int,
                      qmin: int, qmax: int, rounding: Rounding) -> np.ndarray | None:
    """Per channel, the output every accumulator within +-``bound`` gives after the bias
    ``b`` (int32 sums already checked not to wrap), where the requantized ends of that
    range both reach the same clamp (a bias far outside what the sums can reach, as
    efficientnet_lite0's dead channels carry, 2^30): qmin or qmax, NaN elsewhere; None
    when no channel is held.  The requantization is monotonic in the accumulator (each
    rounding step is), so both ends past a clamp hold every value between."""
    ends = np.stack([b - bound, b + bound])
    out = multiply_by_quantized_multiplier(ends, m, s, rounding) + zp
    high, low = (out >= qmax).all(axis=0), (out <= qmin).all(axis=0)
    if not (high.any() or low.any()):
        return None
    return np.where(high, float(qmax), np.where(low, float(qmin), np.nan))


def _per_channel(channels: int, *values: np.ndarray) -> np.ndarray:
    """`FloatRequantizer.per_channel` of these per-channel (or per-tensor) values."""
    return np.ascontiguousarray(
        np.stack([np.resize(np.asarray(v, np.float64), channels) for v in values]))


class FloatRequantizer:
    """`Requantizer`'s integers for float accumulators, computed in float64.

    The conv kernels sum exact integers in float BLAS products; this tail takes such a
    float accumulator ``acc`` (|acc| <= ``acc_bound``), adds the int32 ``bias`` and
    requantizes without converting to integers.  With u = 2^(shift - 31) and
    y = (acc + bias) * multiplier * u, the fused formula of
    `multiply_by_quantized_multiplier` is

        floor(y + 1/2 + sign(y) * 2^(shift - 1))     (double rounding, shift < 0)
        floor(y + 1/2)                                (left shifts, single rounding)

    where the signed term is its [high < 0] nudge (taken for y < 0 as `Requantizer` takes
    it; y == -0.0 gives 0 either way).  Where the activation clamp starts at or above the
    output zero point (RELU, RELU6), every y < 0 ends at the clamp's minimum whichever
    nudge it takes, so the positive one is folded into the constants.  Every value is an
    integer number of u's, so each float64 operation is exact while those integers stay
    below 2^53: `build` checks that (and that the int32 accumulator cannot wrap) for every
    channel, and returns None otherwise, for the caller to take the integer path.
    Float64 ufuncs run about twice as fast as int64 ones, and no conversion to integers is
    needed before the final cast.
    """

    ROW = 8192  # target elements per tiled row (measured: broadcasting over rows costs more)

    #: [4, C] float64: each channel's t_mult, t_bias, t_half and t_const (zeros where the
    #: sign's nudge is folded, which adds nothing: every sum is exact), for a loop that
    #: takes the formula a channel at a time (`compiled_loops.requantize_float`)
    per_channel: np.ndarray

    def __init__(self, t_mult, t_bias, t_half, t_const, zp_after: int, qmin: int,
                 qmax: int, dtype, shape: tuple[int, ...], rows: tuple[int, ...]) -> None:
        #: y = acc * t_mult [+ t_bias + copysign(t_half, y)] + t_const (t_bias and t_half
        #: only where the nudge's sign matters; t_const holds 1/2 and what is folded)
        self.t_mult, self.t_bias, self.t_half, self.t_const = t_mult, t_bias, t_half, t_const
        self.zp_after = zp_after
        self.qmin, self.qmax = qmin, qmax
        self.dtype, self.shape, self.rows = np.dtype(dtype), shape, rows
        self.size = math.prod(shape)

    @classmethod
    def build(cls, multiplier, shift, output_zero_point: int, qmin: int, qmax: int, dtype,
              shape: tuple[int, ...], rounding: Rounding, acc_bound: float,
              bias: np.ndarray | None = None) -> "FloatRequantizer | None":
        """The tail for accumulators of ``shape`` (channels last), or None when float64
        cannot reproduce the integer arithmetic exactly."""
        rounding = check_rounding(rounding)
        mult = np.asarray(multiplier).reshape(-1).astype(np.int64)
        shifts = np.asarray(shift).reshape(-1).astype(np.int64)
        shape = tuple(int(d) for d in shape)
        channels = shape[-1] if shape else 1
        per_channel = mult.size > 1
        if per_channel and mult.size != channels:
            raise ValueError(f"{mult.size} multipliers for {channels} channels")
        biases = np.zeros(channels, np.int64) if bias is None else \
            np.asarray(bias).reshape(-1).astype(np.int64)
        if biases.size != channels:
            raise ValueError(f"{biases.size} biases for {channels} channels")
        if not math.prod(shape):
            return None  # nothing to requantize: the integer path handles empty arrays
        zp = int(output_zero_point)
        bound = math.ceil(acc_bound)
        if bound > INT32_MAX:
            return None
        # one value per channel (each list cycled to n, as a per-tensor one repeats), in
        # int64: every bound below is checked in an order that keeps it under 2^63
        n = max(mult.size, biases.size if bias is not None else 1)
        m, s, b = np.resize(mult, n), np.resize(shifts, n), np.resize(biases, n)
        x = bound + np.abs(b)  # bounds |acc + bias|, the int32 accumulator
        if (x > INT32_MAX).any() or (s > 30).any() or (s < -31).any() or \
                (m == INT32_MIN).any() or (np.abs(m) > INT32_MAX).any():
            return None
        double = rounding == "double"
        if double and ((s > 0) & ((x << np.maximum(s, 0)) > INT32_MAX)).any():
            return None  # the left shift would wrap int32
        fixed = _clamped_channels(m, s, b, bound, zp, int(qmin), int(qmax), rounding)
        held = np.zeros(n, bool) if fixed is None else ~np.isnan(fixed)
        # (held channels take no part in the sums below: y is their clamp's end)
        m = np.where(held, 0, m)
        nudged = double & (s < 0)  # 2^(shift-1) in u's, where double rounding nudges
        exact = x * np.abs(m) + np.where(nudged, 1 << 30, 0) + (np.int64(1) << (30 - s))
        if (np.where(held, 0, exact) > 1 << 53).any():
            return None
        room = (1 << 53) - exact  # the zero point folds into the constant if it fits
        fold_zp = zp == 0 or (abs(zp) < 1 << 53 and bool(
            (held | (abs(zp) <= room >> (31 - s))).all()))
        t_mult = np.ldexp(m.astype(np.float64), s - 31)
        t_bias = np.ldexp((b * m).astype(np.float64), s - 31)
        t_half = np.where(nudged, np.ldexp(1.0, s - 1), 0.0)
        rows, k = row_layout(shape, n > 1, cls.ROW)

        def tile(values: np.ndarray):
            # one value for every channel (a per-tensor multiplier beside a per-channel
            # bias: uint8 models) as a scalar: numpy multiplies by it in half the time
            same = bool((values == values[0]).all())
            return np.tile(values, k) if n > 1 and not same else np.float64(values[0])
        zp_after = 0 if fold_zp else zp
        const = np.full(n, 0.5 + zp if fold_zp else 0.5)
        if held.any():  # y is the clamp's end itself (t_mult is 0 there)
            t_bias[held], t_half[held], const[held] = 0.0, 0.0, fixed[held] - zp_after
        signed = bool(nudged.any()) and qmin < zp
        if signed:
            tail = cls(tile(t_mult), tile(t_bias) if bias is not None else None,
                       tile(t_half), tile(const), zp_after, int(qmin), int(qmax), dtype,
                       shape, rows)
            tail.per_channel = _per_channel(channels, t_mult, t_bias, t_half, const)
            return tail
        # every partial sum below is a multiple of u under the bound checked: exact
        folded = t_bias + t_half + const
        tail = cls(tile(t_mult), None, None, tile(folded), zp_after, int(qmin), int(qmax),
                   dtype, shape, rows)
        zero = np.zeros_like(folded)
        tail.per_channel = _per_channel(channels, t_mult, zero, zero, folded)
        return tail

    def __call__(self, acc: np.ndarray) -> np.ndarray:
        """The tail of ``acc``: of the prepared shape, or a batch of such accumulators
        stacked on the first axis (each requantized as on its own: every step is
        elementwise)."""
        rows, shape = self.rows, self.shape
        if acc.size != self.size:
            if not self.size or acc.size % self.size:
                raise ValueError(f"an accumulator of {acc.size} values for a tail of "
                                 f"shape {list(shape)}")
            rows, shape = (-1,) + rows[1:], (-1,) + shape[1:]
        y = np.multiply(acc.reshape(rows), self.t_mult, dtype=np.float64)
        if self.t_half is not None:
            if self.t_bias is not None:
                y += self.t_bias
            y += np.copysign(self.t_half, y)
        y += self.t_const
        np.floor(y, out=y)
        if self.zp_after:
            y += self.zp_after
        clip_ufunc(y, self.qmin, self.qmax, out=y)
        return y.astype(self.dtype).reshape(shape)
