"""The numba loops behind `compiled` (imported only through `compiled.loops`).

Each loop keeps IEEE float32 arithmetic as written: numba compiles without fast-math, so
no product is fused into an addition and no sum is reordered.  Vectorizing across
channels computes every channel's sum in its own lane, in the order the loop names.

An index into an array is written as a slice taken first and then indexed by a ``range``
variable: numba can vectorize that loop, where an index it cannot prove non-negative
(``k + offset``) gets a wraparound check per element and runs 7x slower.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

_OPTIONS = dict(cache=True, nogil=True, boundscheck=False, error_model="numpy")


@njit(**_OPTIONS)
def depthwise_f32(x: np.ndarray, w: np.ndarray, bias: np.ndarray, low: np.float32,
                  high: np.float32, stride_h: int, stride_w: int, dil_h: int, dil_w: int,
                  pad_h: int, pad_w: int, mult: int, y0: int, y1: int,
                  out: np.ndarray) -> None:
    """Output rows ``y0:y1`` of a float32 DEPTHWISE_CONV_2D as reference_ops::DepthwiseConv
    computes them: ``x`` [N, H, W, C], ``w`` [KH, KW, C*mult], ``bias`` [C*mult] (zeros
    when the node has none: the reference adds 0.0f), ``out`` [N, OH, OW, C*mult].

    Each output starts from +0, adds input times filter tap after tap (filter row, then
    column), skipping taps outside the image, then adds the bias and is clamped as
    std::min(std::max(v, low), high) (NaN and -0 pass): the reference kernel's bits."""
    _, height, width, _ = x.shape
    batches = min(x.shape[0], out.shape[0])  # (never past either array)
    kh, kw = w.shape[0], w.shape[1]
    out_w, depth = out.shape[2], out.shape[3]
    for n in range(batches):
        for y in range(y0, y1):
            for ox in range(out_w):
                acc = out[n, y, ox]
                for k in range(depth):
                    acc[k] = np.float32(0.0)
                for i in range(kh):
                    iy = y * stride_h - pad_h + i * dil_h
                    if iy < 0 or iy >= height:
                        continue
                    for j in range(kw):
                        ix = ox * stride_w - pad_w + j * dil_w
                        if ix < 0 or ix >= width:
                            continue
                        a = x[n, iy, ix]
                        tap = w[i, j]
                        if mult == 1:
                            for k in range(depth):
                                acc[k] += a[k] * tap[k]
                        else:  # output channel ic * mult + m reads input channel ic
                            for ic in range(a.shape[0]):
                                v = a[ic]
                                part = acc[ic * mult:(ic + 1) * mult]
                                part_taps = tap[ic * mult:(ic + 1) * mult]
                                for m in range(mult):
                                    part[m] += v * part_taps[m]
                for k in range(depth):
                    v = acc[k] + bias[k]
                    if v < low:
                        v = low
                    if high < v:
                        v = high
                    acc[k] = v


@njit(**_OPTIONS)
def depthwise_rows_f32(x: np.ndarray, tiled: np.ndarray, bias: np.ndarray, low: np.float32,
                       high: np.float32, stride_h: int, dil_h: int, dil_w: int, pad_h: int,
                       pad_w: int, y0: int, y1: int, out: np.ndarray) -> None:
    """`depthwise_f32` at a width stride of 1 and no depth multiplier, a tap at a time over
    a whole output row: ``tiled`` [KH, KW, OW*C] is the filter repeated along the row and
    ``bias`` [OW*C] the bias.  The row's outputs of one tap are one contiguous run of the
    input row, so the loop runs over OW*C values at a time; each output still adds its
    taps in the reference order, and a tap outside the image is skipped (the run is cut
    at the image's edges): the same bits as `depthwise_f32`."""
    _, height, width, depth = x.shape
    batches = min(x.shape[0], out.shape[0])  # (never past either array)
    kh, kw = tiled.shape[0], tiled.shape[1]
    out_w = out.shape[2]
    row = out_w * depth
    for n in range(batches):
        for y in range(y0, y1):
            acc = out[n, y].reshape(row)
            for m in range(row):
                acc[m] = np.float32(0.0)
            for i in range(kh):
                iy = y * stride_h - pad_h + i * dil_h
                if iy < 0 or iy >= height:
                    continue
                source = x[n, iy].reshape(width * depth)
                for j in range(kw):
                    shift = j * dil_w - pad_w  # input column of output column 0
                    first = max(0, -shift)
                    last = min(out_w, width - shift)
                    if first >= last:
                        continue
                    a = source[(first + shift) * depth:(last + shift) * depth]
                    o = acc[first * depth:last * depth]
                    t = tiled[i, j, first * depth:last * depth]
                    for m in range(o.shape[0]):
                        o[m] += a[m] * t[m]
            for m in range(row):
                v = acc[m] + bias[m]
                if v < low:
                    v = low
                if high < v:
                    v = high
                acc[m] = v




@njit(inline="always", **_OPTIONS)
def _store(acc: np.ndarray, t_mult: np.ndarray, t_bias: np.ndarray, t_half: np.ndarray,
           t_const: np.ndarray, zp_after: float, qmin: float, qmax: float,
           out: np.ndarray) -> None:
    """One position's channels requantized as quant_math.FloatRequantizer computes them
    (its `per_channel` rows): y = acc * t_mult + t_bias, plus t_half with y's sign, plus
    t_const, floored, plus ``zp_after``, clamped to [qmin, qmax] and stored in ``out``
    (``out``'s channels: ``acc`` may be a longer row, padded past them).  Every step is exact in float64 where FloatRequantizer.build gave the rows, so these
    are the integers of MultiplyByQuantizedMultiplier and the reference kernels' clamp.

    Inlined where it is called, with the rows taken once by the caller: called as a
    function per position it ran 3-9x slower."""
    for c in range(out.shape[0]):
        y = np.float64(acc[c]) * t_mult[c] + t_bias[c]
        y += math.copysign(t_half[c], y)
        y = np.floor(y + t_const[c]) + zp_after
        y = max(y, qmin)
        out[c] = min(y, qmax)


_INT32_MIN = -(1 << 31)


def requantize_table(multiplier: np.ndarray, shift: np.ndarray, channels: int,
                     double: bool) -> np.ndarray | None:
    """MultiplyByQuantizedMultiplier per channel as one product, one offset its sign
    picks and one shift (quant_math.multiply_by_quantized_multiplier's fused formula, and
    TFLITE_SINGLE_ROUNDING's): a [5, C] int64 table of each channel's multiplier, left
    shift, offsets (for a product at or above -2^30, and below) and whole right shift, a
    row each (rows the channel loops read as vectors).  None where a channel needs the
    step-by-step double rounding (a multiplier of INT32_MIN, whose doubling high multiply
    saturates, or a right shift over 31)."""
    mult = np.broadcast_to(np.asarray(multiplier, np.int64).reshape(-1), (channels,))
    shifts = np.broadcast_to(np.asarray(shift, np.int64).reshape(-1), (channels,))
    table = np.zeros((5, channels), np.int64)
    table[0] = mult
    if not double:  # (acc * m + 2^(30 - shift)) >> (31 - shift)
        table[2] = table[3] = np.int64(1) << (30 - shifts)
        table[4] = 31 - shifts
        return table
    left, right = np.maximum(shifts, 0), np.maximum(-shifts, 0)
    if np.any(mult == _INT32_MIN) or np.any(right > 31):
        return None
    table[1] = left
    table[2] = (1 << 30) + (((np.int64(1) << right) >> 1) << 31)
    table[3] = table[2] - ((right > 0).astype(np.int64) << 31)
    table[4] = 31 + right
    return table


@njit(inline="always", **_OPTIONS)
def _wrap32(v: int) -> int:
    """C's int32 of an int64 (two's complement wrap)."""
    return ((v + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


@njit(inline="always", **_OPTIONS)
def _requantize_int(acc: int, mult: int, left: int, offset: int, offset_negative: int,
                    right: int) -> int:
    """MultiplyByQuantizedMultiplier of C's int32 of ``acc`` by one column of a
    `requantize_table`."""
    ab = _wrap32(_wrap32(acc) << left) * mult
    return (ab + (offset_negative if ab < -(1 << 30) else offset)) >> right


@njit(inline="always", **_OPTIONS)
def _store_int(acc: np.ndarray, bias: np.ndarray, table: np.ndarray, output_offset: int,
               qmin: int, qmax: int, out: np.ndarray) -> None:
    """`_store` in integers, where the float formula cannot be exact (a bias near 2^30
    that wraps C's int32 accumulator): ``acc`` plus ``bias`` [C] wrapped to int32,
    MultiplyByQuantizedMultiplier by `requantize_table`'s columns, offset, clamped."""
    mult, left, offset, offset_negative, right = table[0], table[1], table[2], table[3], \
        table[4]
    for c in range(acc.shape[0]):
        v = _requantize_int(np.int64(acc[c]) + bias[c], mult[c], left[c], offset[c],
                            offset_negative[c], right[c]) + output_offset
        v = max(v, qmin)
        out[c] = min(v, qmax)


@njit(**_OPTIONS)
def add_bytes(x1: np.ndarray, x2: np.ndarray, first: np.ndarray, second: np.ndarray,
              sign: int, table: np.ndarray, output_offset: int, qmin: int, qmax: int,
              out: np.ndarray) -> None:
    """An 8-bit ADD (``sign`` 1) or SUB (-1) of two inputs of one size, as add.cc's and
    sub.cc's reference kernels: each input's byte (``x1``, ``x2`` uint8, flat) through its
    table of offset, shifted and rescaled values (integer/elementwise.byte_scaled), their
    int32 sum or difference requantized by `requantize_table`'s one column, offset and
    clamped into ``out`` (int8 or uint8, flat)."""
    mult, left, offset, offset_negative, right = table[0, 0], table[1, 0], table[2, 0], \
        table[3, 0], table[4, 0]
    for i in range(out.shape[0]):
        v = _requantize_int(first[x1[i]] + sign * second[x2[i]], mult, left, offset,
                            offset_negative, right) + output_offset
        v = max(v, qmin)
        out[i] = min(v, qmax)


@njit(**_OPTIONS)
def requantize_float(acc: np.ndarray, rows: np.ndarray, zp_after: float, qmin: float,
                     qmax: float, out: np.ndarray) -> None:
    """The 8-bit tail over ``acc`` [P, C] (exact integer sums, float or int; or [P, C']
    with rows padded past the C channels) into ``out`` [P, C] (int8 or uint8): `_store` of
    each position, ``rows`` a FloatRequantizer's `per_channel`."""
    t_mult, t_bias, t_half, t_const = rows[0], rows[1], rows[2], rows[3]
    for r in range(acc.shape[0]):
        _store(acc[r], t_mult, t_bias, t_half, t_const, zp_after, qmin, qmax, out[r])


@njit(**_OPTIONS)
def depthwise_int(x: np.ndarray, taps: np.ndarray, rows: np.ndarray, table: np.ndarray,
                  bias: np.ndarray, input_offset: int, zp_after: float, qmin: float,
                  qmax: float, stride_h: int, stride_w: int,
                  dil_h: int, dil_w: int, pad_h: int, pad_w: int, mult: int, y0: int,
                  y1: int, out: np.ndarray) -> None:
    """Output rows ``y0:y1`` of an 8-bit DEPTHWISE_CONV_2D as reference_integer_ops'
    DepthwiseConvPerChannel (and the uint8 kernel) compute them: ``x`` [N, H, W, C] int8
    or uint8, ``taps`` [KH, KW, C*mult] int32 (the filter plus its offset).  Each output's
    int32 accumulator (C's: a store wraps as it does) adds (input + input offset) * tap for
    the taps inside the image, and is requantized with the bias: by `_store` (``rows`` a
    FloatRequantizer's `per_channel` with the bias in it), or, where ``table`` (a
    `requantize_table`) has columns, by `_store_int` with ``bias`` [C] int64."""
    _, height, width, _ = x.shape
    batches = min(x.shape[0], out.shape[0])  # (never past either array)
    kh, kw = taps.shape[0], taps.shape[1]
    out_w, depth = out.shape[2], out.shape[3]
    t_mult, t_bias, t_half, t_const = rows[0], rows[1], rows[2], rows[3]
    exact = table.shape[1] > 0
    acc = np.empty(depth, np.int32)
    for n in range(batches):
        for y in range(y0, y1):
            for ox in range(out_w):
                for k in range(depth):
                    acc[k] = 0
                for i in range(kh):
                    iy = y * stride_h - pad_h + i * dil_h
                    if iy < 0 or iy >= height:
                        continue
                    for j in range(kw):
                        ix = ox * stride_w - pad_w + j * dil_w
                        if ix < 0 or ix >= width:
                            continue
                        a = x[n, iy, ix]
                        t = taps[i, j]
                        if mult == 1:
                            for k in range(depth):
                                acc[k] += (np.int32(a[k]) + np.int32(input_offset)) * t[k]
                        else:  # output channel ic * mult + m reads input channel ic
                            for ic in range(a.shape[0]):
                                v = np.int32(a[ic]) + np.int32(input_offset)
                                part = acc[ic * mult:(ic + 1) * mult]
                                part_taps = t[ic * mult:(ic + 1) * mult]
                                for m in range(mult):
                                    part[m] += v * part_taps[m]
                if exact:
                    _store_int(acc, bias, table, int(zp_after), int(qmin), int(qmax),
                               out[n, y, ox])
                else:
                    _store(acc, t_mult, t_bias, t_half, t_const, zp_after, qmin, qmax,
                           out[n, y, ox])


@njit(**_OPTIONS)
def depthwise_rows_int(x: np.ndarray, tiled: np.ndarray, rows: np.ndarray, table: np.ndarray,
                       bias: np.ndarray, input_offset: int, zp_after: float, qmin: float,
                       qmax: float, stride_h: int, stride_w: int, dil_h: int, dil_w: int,
                       pad_h: int, pad_w: int, y0: int, y1: int, out: np.ndarray) -> None:
    """`depthwise_int` without a depth multiplier, a tap at a time over a whole output row
    (as `depthwise_rows_f32`): ``tiled`` [KH, KW, OW*C] int32 is the offset filter
    repeated along the row.  At a width stride of 1 a tap's inputs for the row are one run
    of the input row; at a stride s the input row is first split into its s phases
    (columns q*s + p), in which they are one run again.  The same integers as
    `depthwise_int`, whose loop per output pixel ran 2-3x slower at stride 2."""
    _, height, width, depth = x.shape
    batches = min(x.shape[0], out.shape[0])  # (never past either array)
    kh, kw = tiled.shape[0], tiled.shape[1]
    out_w = out.shape[2]
    row = out_w * depth
    t_mult, t_bias, t_half, t_const = rows[0], rows[1], rows[2], rows[3]
    exact = table.shape[1] > 0
    offset = np.int32(input_offset)
    acc = np.empty(row, np.int32)
    span = (width + stride_w - 1) // stride_w  # columns of the longest phase
    phases = np.empty((stride_w, span * depth), x.dtype)
    for n in range(batches):
        for y in range(y0, y1):
            for m in range(row):
                acc[m] = 0
            for i in range(kh):
                iy = y * stride_h - pad_h + i * dil_h
                if iy < 0 or iy >= height:
                    continue
                if stride_w > 1:
                    source = x[n, iy]
                    for p in range(stride_w):
                        phase = phases[p]
                        for q in range((width - p + stride_w - 1) // stride_w):
                            pixel = source[q * stride_w + p]
                            into = phase[q * depth:(q + 1) * depth]
                            for k in range(depth):
                                into[k] = pixel[k]
                for j in range(kw):
                    shift_w = j * dil_w - pad_w  # input column of output column 0
                    # output columns whose input column ox * stride_w + shift_w is inside
                    first = max(0, (stride_w - 1 - shift_w) // stride_w)
                    last = min(out_w, (width - shift_w + stride_w - 1) // stride_w)
                    if first >= last:
                        continue
                    if stride_w == 1:
                        a = x[n, iy].reshape(width * depth)[(first + shift_w) * depth:
                                                            (last + shift_w) * depth]
                    else:  # column ox * s + shift_w is column ox + lead of phase p
                        p = shift_w % stride_w
                        lead = (shift_w - p) // stride_w
                        a = phases[p, (first + lead) * depth:(last + lead) * depth]
                    o = acc[first * depth:last * depth]
                    t = tiled[i, j, first * depth:last * depth]
                    for m in range(o.shape[0]):
                        o[m] += (np.int32(a[m]) + offset) * t[m]
            for ox in range(out_w):
                if exact:
                    _store_int(acc[ox * depth:(ox + 1) * depth], bias, table, int(zp_after),
                               int(qmin), int(qmax), out[n, y, ox])
                else:
                    _store(acc[ox * depth:(ox + 1) * depth], t_mult, t_bias, t_half, t_const,
                           zp_after, qmin, qmax, out[n, y, ox])


@njit(**_OPTIONS)
def neon_quantize_row(x: np.ndarray, inv: np.float32, zero_point: np.float32,
                      out: np.ndarray) -> None:
    """One row's values of LiteRT's NeonAsymmetricQuantizeFloats (integer/hybrid.py's
    `asymmetric_quantize`) in one pass: y = x * inv in float32, rounded as NEON_2_SSE's
    vector RoundToNearest for the first multiple of 8 values (trunc(y + copysign(0.5,
    y)), the addition in float32) and as TfLiteRound for the rest (half away from zero,
    exact in float64), plus the zero point in float32, clamped to [-128, 127]; stored in
    ``out`` as float32."""
    n = x.shape[0]
    vector = n // 8 * 8
    half = np.float32(0.5)
    for k in range(n):
        y = x[k] * inv
        if k < vector:
            q = np.float32(np.trunc(y + (half if y >= 0 else -half)))
        else:
            wide = np.float64(y)
            q = np.float32(math.copysign(np.floor(abs(wide) + 0.5), wide))
        q = q + zero_point
        if q < np.float32(-128.0):
            q = np.float32(-128.0)
        if q > np.float32(127.0):
            q = np.float32(127.0)
        out[k] = q


@njit(**_OPTIONS)
def lookup_pairs(x1: np.ndarray, x2: np.ndarray, table: np.ndarray, out: np.ndarray) -> None:
    """``out[i] = table[(x1[i] << 8) | x2[i]]`` (``x1``, ``x2`` uint8, flat): a binary
    8-bit op's results read from the table of every pair of input bytes."""
    for i in range(out.shape[0]):
        out[i] = table[(np.intp(x1[i]) << 8) | np.intp(x2[i])]


@njit(**_OPTIONS)
def sum_requantized(x: np.ndarray, subtract: int, table: np.ndarray, output_offset: int,
                    qmin: int, qmax: int, out: np.ndarray) -> None:
    """reference_ops::QuantizedMeanOrSum over the middle axis of ``x`` [N, R, C] (8-bit):
    each channel's sum over the R rows, less ``subtract`` (the input zero point times R),
    wrapped to C's int32 and requantized by `requantize_table`'s one column (MEAN's
    multiplier has 1/R folded in), offset and clamped into ``out`` [N, C]."""
    mult, left, offset, offset_negative, right = table[0, 0], table[1, 0], table[2, 0], \
        table[3, 0], table[4, 0]
    channels = x.shape[2]
    acc = np.empty(channels, np.int64)
    for n in range(min(x.shape[0], out.shape[0])):
        for c in range(channels):
            acc[c] = 0
        for r in range(x.shape[1]):
            row = x[n, r]
            for c in range(channels):
                acc[c] += row[c]
        target = out[n]
        for c in range(channels):
            v = _requantize_int(acc[c] - subtract, mult, left, offset, offset_negative,
                                right) + output_offset
            v = max(v, qmin)
            target[c] = min(v, qmax)


def warm_up() -> None:
    """Call every loop once on tiny arrays of the types the kernels pass, so that this
    process holds their machine code (compiled, or read from numba's cache): a process
    about to fork workers calls it (`compiled.warm`), or each worker would import numba
    and load the code itself."""
    table = requantize_table(np.array([1 << 30]), np.array([-1]), 1, True)
    for dtype in (np.int8, np.uint8):
        sum_requantized(np.zeros((1, 4, 3), dtype), 0, table, 0, -128, 127,
                        np.empty((1, 3), dtype))
        add_bytes(np.zeros(3, np.uint8), np.zeros(3, np.uint8), np.zeros(256, np.int64),
                  np.zeros(256, np.int64), 1, table, 0, -128, 127, np.empty(3, dtype))
        lookup_pairs(np.zeros(3, np.uint8), np.zeros(3, np.uint8), np.zeros(9, dtype),
                     np.empty(3, dtype))
    f32, f64 = np.float32, np.float64
    x = np.zeros((1, 3, 3, 2), f32)
    out = np.empty((1, 3, 3, 2), f32)
    taps, bias = np.zeros((3, 3, 2), f32), np.zeros(2, f32)
    low, high = f32(-np.inf), f32(np.inf)
    depthwise_f32(x, taps, bias, low, high, 1, 2, 1, 1, 1, 1, 1, 0, 3, out)
    depthwise_rows_f32(x, np.zeros((3, 3, 6), f32), np.zeros(6, f32), low, high, 1, 1, 1,
                       1, 1, 0, 3, out)
    rows, no_table = np.zeros((4, 2), f64), np.zeros((5, 0), np.int64)
    for quantized in (np.empty(9, f32), np.empty(9, np.int8)):
        neon_quantize_row(np.zeros(9, f32), f32(1.0), f32(0.0), quantized)
    sums = (np.zeros((1, 9, 2), f32), np.zeros((1, 9, 2), f64), np.zeros((1, 9, 16), np.int32))
    for acc in sums:  # (int32: VNNI's padded rows, integer/hybrid_plans.py)
        scale_rows(acc, bias, np.ones(1, f32), bias, True, low, high, np.empty((1, 9, 2), f32))
    for dtype in (np.int8, np.uint8):
        q_out = np.empty((1, 3, 3, 2), dtype)
        sums = (np.zeros((9, 2), f32), np.zeros((9, 2), f64), np.zeros((9, 16), np.int32))
        for acc in sums:  # (int32: VNNI's padded rows, compiled_vnni.product)
            requantize_float(acc, rows, 0.0, -128.0, 127.0, q_out.reshape(9, 2))
        q_in, int_taps = np.zeros((1, 3, 3, 2), dtype), np.zeros((3, 3, 2), np.int32)
        depthwise_int(q_in, int_taps, rows, no_table, np.zeros(2, np.int64), 0, 0.0, -128.0,
                      127.0, 1, 2, 1, 1, 1, 1, 1, 0, 3, q_out)
        depthwise_rows_int(q_in, np.zeros((3, 3, 6), np.int32), rows, no_table,
                           np.zeros(2, np.int64), 0, 0.0, -128.0, 127.0, 1, 1, 1, 1, 1, 1, 0,
                           3, q_out)


@njit(**_OPTIONS)
def scale_rows(acc: np.ndarray, channel_scale: np.ndarray, batch_scale: np.ndarray,
               bias: np.ndarray, add_bias: bool, low: np.float32, high: np.float32,
               out: np.ndarray) -> None:
    """The hybrid kernels' float tail (integer/hybrid.py's `_scaled_output`) in one pass:
    ``acc`` [B, P, C] (float32, float64 or int32 sums; or rows padded past ``out``'s C
    channels) as float32, times the channel's scale,
    times the batch row's scale, plus the bias when ``add_bias`` (adding nothing keeps a
    -0), clamped as std::min(std::max(v, low), high); each step a float32 operation in
    numpy's order, so the same bits."""
    for b in range(acc.shape[0]):
        s = batch_scale[b]
        for p in range(acc.shape[1]):
            a = acc[b, p]
            o = out[b, p]
            for c in range(o.shape[0]):
                v = np.float32(a[c]) * channel_scale[c]
                v = v * s
                if add_bias:
                    v = v + bias[c]
                if v < low:
                    v = low
                if high < v:
                    v = high
                o[c] = v
