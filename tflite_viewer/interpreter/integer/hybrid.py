"""Hybrid kernels: float activations, int8 weights (dynamic-range quantized models).

The float input is quantized on the fly, one scale per batch, as
``tensor_utils::SymmetricQuantizeFloats`` (``q = round(x * 127 / max|x|)``) or
``AsymmetricQuantizeFloats`` (an int8 zero point from the batch's [min(0, x), max(0, x)]
range) do in LiteRT's x86 build, which runs their NEON versions through NEON_2_SSE (a
float32 span, rounding before the zero point is added; see `asymmetric_quantize`); the
int8 products are accumulated exactly and the accumulator is scaled back
in float32 (batch scale times the filter's per-channel scale), plus the float bias, then
the fused activation clamps.  The outputs are floats, bit-exact with LiteRT's reference
kernels (tests/interpreter/integer/test_hybrid.py) for weights in the int8 spec's [-127, 127]: the
2.3.0 x86 build's SSE dot product (per-tensor CONV_2D, FULLY_CONNECTED) negates a weight of
-128 into -128 against a negative input value; we compute the exact product.

* CONV_2D: conv.cc ``EvalHybrid`` (per-tensor filter scale: symmetric input,
  ``optimized_ops::HybridConv``) and ``EvalHybridPerChannel`` (asymmetric input,
  ``reference_ops::HybridConvPerChannel``).
* DEPTHWISE_CONV_2D: depthwise_conv.cc ``EvalHybridPerChannel`` (asymmetric input,
  ``reference_integer_ops::DepthwiseConvHybridPerChannel``).
* FULLY_CONNECTED: fully_connected.cc ``EvalHybridDense`` (symmetric, or asymmetric when
  the option ``asymmetric_quantize_inputs`` is set; per-channel or per-tensor filter).
"""
from __future__ import annotations

import math
import threading
from typing import Callable

import numpy as np

from .. import compiled
from ..quant_math import clip_into
from .common import (FLOAT32_EXACT, FLOAT64_EXACT, Options, activation_of, exact_matmul,
                     im2col, int_matmul, pad_for_window, patches, qparams, window)
from .conv import depthwise_taps

FLOAT_RANGES = {"RELU": (0.0, np.inf), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0)}


def _round_f32(x: np.ndarray) -> np.ndarray:
    """TfLiteRound on float32 values: halves away from zero, in float32."""
    x = np.asarray(x, np.float32)
    # sign(x) * floor(|x| + 0.5): float32 addition rounds symmetrically, so adding
    # copysign(0.5, x) and truncating gives the same values in fewer passes
    return np.trunc(x + np.copysign(np.float32(0.5), x))


def _neon_round(y: np.ndarray) -> np.ndarray:
    """The rounding of LiteRT's quantizers, per row of float32 ``y`` [rows, n].

    LiteRT's x86 build runs the NEON tensor_utils through NEON_2_SSE: the first multiple of
    8 values of a row go through the vector RoundToNearest, trunc(y +- 0.5) with the
    addition rounded in float32 (`_round_f32`), the rest through TfLiteRound, which is
    exact (0.49999997 gives 0, not 1)."""
    vec = y.shape[1] // 8 * 8
    if vec == y.shape[1]:
        return _round_f32(y)
    out = np.empty(y.shape, np.float32)
    out[:, :vec] = _round_f32(y[:, :vec])
    tail = y[:, vec:].astype(np.float64)  # |y| + 0.5 is exact in float64
    out[:, vec:] = np.sign(tail) * np.floor(np.abs(tail) + 0.5)
    return out


def symmetric_quantize(x: np.ndarray, as_float: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """SymmetricQuantizeFloats per row of ``x`` [batches, n]: (int8 values, float32 scale).

    range = max(|min|, |max|); scale = range / 127; q = round(x * (127 / range)) clamped to
    [-127, 127] (all in float32, rounded as `_neon_round`); an all-zero row gets scale 1.
    ``as_float``: the same integers as a fresh float32 array, zeros +0.0 (what the
    convolutions sum: no int8 copy converted back).
    """
    x = np.asarray(x, np.float32)
    rng = np.maximum(np.abs(x.min(axis=1)), np.abs(x.max(axis=1))).astype(np.float32)
    zero = rng == 0
    safe = np.where(zero, np.float32(1), rng)
    scale = np.where(zero, np.float32(1), safe / np.float32(127)).astype(np.float32)
    inv = (np.float32(127) / safe).astype(np.float32)
    q = _neon_round(x * inv[:, None])
    clip_into(q, np.float32(-127), np.float32(127))
    if as_float:  # the rounding's -0.0 as the int8 value's +0.0 (x + 0 is +0 for x = -0)
        q += np.float32(0)
    q = np.where(zero[:, None], 0, q)
    return (q if as_float else q.astype(np.int8)), scale


def asymmetric_quantize(x: np.ndarray,
                        as_float: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AsymmetricQuantizeFloats per row: (int8 values, float32 scale, int32 zero point),
    as the NEON kernel LiteRT's x86 build runs (NeonAsymmetricQuantizeFloats).

    The range [rmin, rmax] = [min(0, x), max(0, x)] maps onto [-128, 127]: the span
    rmax - rmin is a float32 subtraction (the portable kernel subtracts in double), the
    scale span / 255 is in double and the zero point comes from it (from whichever end has
    the smaller error, rounded, clamped); the scaling factor is that scale rounded to
    float32, its inverse (float)(1.0 / sf), and q = round(x * inv) + zp: rounded
    (`_neon_round`) before the zero point is added, then clamped.  A row of zeros gets
    scale 1, zero point 0.  ``as_float``: the values as a fresh float32 array, as
    `symmetric_quantize` gives them.
    """
    x = np.asarray(x, np.float32)
    if x.shape[0] == 1 and x.size:
        row = _asymmetric_quantize_row(x)
        if row is not None:
            return (row[0] if as_float else row[0].astype(np.int8)), row[1], row[2]
    rmin = np.minimum(np.float32(0), x.min(axis=1)).astype(np.float32)
    rmax = np.maximum(np.float32(0), x.max(axis=1)).astype(np.float32)
    same = rmin == rmax
    span = (rmax - rmin).astype(np.float32).astype(np.float64)
    scale = np.where(same, 1.0, span / 255.0)
    lo = rmin.astype(np.float64) / scale
    hi = rmax.astype(np.float64) / scale
    zp_d = np.where(128.0 + np.abs(lo) < 127.0 + np.abs(hi), -128.0 - lo, 127.0 - hi)
    rounded = np.sign(zp_d) * np.floor(np.abs(zp_d) + 0.5)
    zp = np.where(zp_d <= -128.0, -128, np.where(zp_d >= 127.0, 127, rounded))
    zp = np.where(same, 0, zp).astype(np.int32)
    scale32 = np.where(same, np.float32(1), scale.astype(np.float32)).astype(np.float32)
    inv = (1.0 / scale32.astype(np.float64)).astype(np.float32)
    q = _neon_round(x * inv[:, None]) + zp[:, None].astype(np.float32)
    clip_into(q, np.float32(-128), np.float32(127))
    if same.any():
        q = np.where(same[:, None], 0, q)
    return (q if as_float else q.astype(np.int8)), scale32, zp


def asymmetric_row_params(lo_x: np.float32, hi_x: np.float32) -> tuple[np.float32, np.float32, int]:
    """(scaling factor, its float32 inverse, zero point) of a finite row whose least and
    greatest values are ``lo_x`` and ``hi_x`` (not both zero): `asymmetric_quantize`'s
    per-row steps as scalars.  The double steps are Python floats (IEEE doubles); the one
    float32 subtraction is done in double and rounded once to float32, which gives the
    float32 result (a double has more than twice float32's precision plus two bits, so the
    second rounding never changes the first's value) without numpy scalar arithmetic,
    which costs a few hundred nanoseconds an operation."""
    rmin = min(0.0, float(lo_x))
    rmax = max(0.0, float(hi_x))
    scale = float(np.float32(rmax - rmin)) / 255.0
    lo, hi = rmin / scale, rmax / scale
    zp_d = -128.0 - lo if 128.0 + abs(lo) < 127.0 + abs(hi) else 127.0 - hi
    if zp_d <= -128.0:
        zp = -128
    elif zp_d >= 127.0:
        zp = 127
    else:
        zp = int(math.copysign(math.floor(abs(zp_d) + 0.5), zp_d))
    scale32 = np.float32(scale)
    return scale32, np.float32(1.0 / float(scale32)), zp


def _asymmetric_quantize_row(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """`asymmetric_quantize` of one finite row [1, n] (None for a row with inf or nan),
    with the per-row scalars computed as scalars (`asymmetric_row_params`): the same
    values, in a third of the numpy calls, which is what a recurrent step pays for; the
    values as a fresh float32 array."""
    lo_x, hi_x = x.min(), x.max()
    if not (math.isfinite(lo_x) and math.isfinite(hi_x)):
        return None
    if lo_x == 0 and hi_x == 0:
        return (np.zeros(x.shape, np.float32), np.ones(1, np.float32), np.zeros(1, np.int32))
    scale32, inv, zp = asymmetric_row_params(lo_x, hi_x)
    loops = compiled.loops()
    if loops is not None:  # the same steps in one pass
        q = np.empty(x.shape, np.float32)
        loops.neon_quantize_row(np.ascontiguousarray(x).reshape(-1), inv, np.float32(zp),
                                q.reshape(-1))
    else:
        q = _neon_round(x * inv)
        q += np.float32(zp)
        clip_into(q, np.float32(-128), np.float32(127))
    return q, np.array([scale32], np.float32), np.array([zp], np.int32)


def activate(out: np.ndarray, options: Options) -> np.ndarray:
    """The hybrid kernels' fused activation of a float32 output."""
    act = activation_of(options)
    if act in FLOAT_RANGES:
        lo, hi = FLOAT_RANGES[act]
        out = np.maximum(out, np.float32(lo))
        if np.isfinite(hi):
            out = np.minimum(out, np.float32(hi))
    elif act == "TANH":
        out = np.tanh(out)
    elif act == "SIGN_BIT":
        out = np.signbit(out).astype(np.float32)
    return out.astype(np.float32)


def filter_scales(filter_q, channels: int) -> tuple[np.ndarray, bool]:
    """(per output channel float32 scales, per-channel?) of an int8 filter (kernels keep
    it per node: the conversions cost a small node a tenth of its time)."""
    fq = qparams(filter_q)
    scales = fq.scale.astype(np.float32)
    if scales.size > 1 and np.any(scales != scales[0]):
        return scales, True
    return np.full(channels, scales[0], np.float32), False


def conv_filter_matrix(filter: np.ndarray) -> np.ndarray:
    """An OHWI int8 filter as a float32 [KH*KW*I, O] matrix (exact), what `conv_2d`
    multiplies by; kernels cache it per node."""
    return np.ascontiguousarray(filter.astype(np.float32).reshape(filter.shape[0], -1).T)


def conv_2d(input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None, filter_q,
            options: Options, fmat: np.ndarray | None = None,
            scales: tuple[np.ndarray, bool] | None = None) -> np.ndarray:
    """Hybrid CONV_2D (float NHWC input, int8 OHWI filter, float bias).

    The integer sums are exact float products (|q - zp| <= 255, |w| <= 128; see
    common.exact_matmul).  ``fmat`` is `conv_filter_matrix` and ``scales``
    `filter_scales` (caches)."""
    out_ch, kh, kw, in_ch_f = filter.shape
    b, h, w, in_ch = input.shape
    groups = in_ch // in_ch_f
    scales, per_channel = scales or filter_scales(filter_q, out_ch)
    flat = input.reshape(b, -1)
    if per_channel or groups != 1:
        q, sf, offset = asymmetric_quantize(flat, as_float=groups == 1)
    else:
        q, sf = symmetric_quantize(flat, as_float=True)
        offset = np.zeros(b, np.int32)
        sf = (sf * scales[0]).astype(np.float32)
    sh, sw = int(options.get("stride_h", 1)), int(options.get("stride_w", 1))
    dh = int(options.get("dilation_h_factor", 1))
    dw = int(options.get("dilation_w_factor", 1))
    win = window(options, h, w, kh, kw)
    if groups == 1:
        x = q.reshape(input.shape)  # (float32 integers, a fresh array)
        if offset.any():
            x -= offset.astype(np.float32).reshape(b, 1, 1, 1)
        if kh == 1 and kw == 1 and (win.pad_h, win.pad_w) == (0, 0):
            xs = x[:, :(win.out_h - 1) * sh + 1:sh, :(win.out_w - 1) * sw + 1:sw, :]
            cols = np.ascontiguousarray(xs).reshape(-1, in_ch)
        else:
            cols = im2col(pad_for_window(x, win, kh, kw, sh, sw, dh, dw, 0), win, kh, kw,
                          sh, sw, dh, dw)
        if fmat is None:
            fmat = conv_filter_matrix(filter)
        acc = exact_matmul(cols, fmat, 255.0, 128.0, float32_ok=True)
        acc = acc.reshape(b, win.out_h, win.out_w, out_ch)
    else:
        x = q.reshape(input.shape).astype(np.int32) - offset.reshape(b, 1, 1, 1)
        xp = pad_for_window(x, win, kh, kw, sh, sw, dh, dw, 0)
        cols = patches(xp, win, kh, kw, sh, sw, dh, dw)
        n = win.out_h * win.out_w
        cols = cols.reshape(b, win.out_h, win.out_w, groups, in_ch_f, kh, kw)
        cols = cols.transpose(3, 0, 1, 2, 5, 6, 4).reshape(groups, b * n, kh * kw * in_ch_f)
        f = filter.astype(np.int32).reshape(groups, out_ch // groups, kh * kw * in_ch_f)
        acc = int_matmul(cols, f.transpose(0, 2, 1))  # G, B*N, O/G
        acc = acc.transpose(1, 0, 2).reshape(b, win.out_h, win.out_w, out_ch)
    factors = [scales] if per_channel or groups != 1 else []
    out = _compiled_scaled_output(acc, scales if factors else None, sf, bias, options)
    if out is not None:
        return out
    return _scaled_output(acc, factors + [sf.reshape(b, 1, 1, 1)], bias, options)


def _compiled_scaled_output(acc: np.ndarray, channel_scale: np.ndarray | None,
                            batch_scale: np.ndarray, bias: np.ndarray | None,
                            options: Options) -> np.ndarray | None:
    """`_scaled_output` with a per-channel and a per-batch factor in one compiled pass
    (`scale_tail`; a missing per-channel factor is a multiplication by 1, which changes no
    value); None when compiled kernels are off or the activation is not a clamp."""
    channels = acc.shape[-1]
    tail = scale_tail(np.ones(channels, np.float32) if channel_scale is None
                      else channel_scale, bias, options, channels)
    return None if tail is None else tail(acc, batch_scale)


def scale_tail(channel_scale: np.ndarray, bias: np.ndarray | None, options: Options,
               channels: int) -> Callable[..., np.ndarray] | None:
    """`_scaled_output` (sums times a channel's scale, times the batch's, plus the bias,
    clamped) as one compiled pass (`compiled_loops.scale_rows`: the same float32 steps),
    with its arrays built once: a function of the sums [B, OH, OW, C] (or [B, P, C'],
    rows padded past C: VNNI's) giving [B, ..., C], the batch scales [B] and, optionally,
    a channel scale other than ``channel_scale``; None when compiled kernels are off or
    the activation is not a clamp."""
    loops = compiled.loops()
    act = activation_of(options)  # (None for NONE)
    if loops is None or (act is not None and act not in FLOAT_RANGES):
        return None
    low, high = (np.float32(v) for v in FLOAT_RANGES.get(act, (-np.inf, np.inf)))
    per_channel = np.ascontiguousarray(channel_scale, np.float32)
    added = np.zeros(channels, np.float32) if bias is None \
        else np.ascontiguousarray(bias, np.float32).reshape(channels)
    has_bias = bias is not None

    def scale(acc: np.ndarray, batch_scale: np.ndarray,
              channel_scale: np.ndarray | None = None) -> np.ndarray:
        b = acc.shape[0]
        out = np.empty(acc.shape[:-1] + (channels,), np.float32)
        loops.scale_rows(np.ascontiguousarray(acc).reshape(b, -1, acc.shape[-1]),
                         per_channel if channel_scale is None else channel_scale,
                         np.ascontiguousarray(batch_scale, np.float32).reshape(b), added,
                         has_bias, low, high, out.reshape(b, -1, channels))
        return out
    return scale


def _scaled_output(acc: np.ndarray, factors: list[np.ndarray], bias: np.ndarray | None,
                   options: Options) -> np.ndarray:
    """``acc * factors[0] * factors[1] ... + bias`` in float32, left to right, then the
    fused activation: in place on ``acc`` as float32 (a fresh array of the caller's; each
    in-place step rounds as the written-out expression's), the clamps as one clip, which
    keeps -0.0 as C's std::min(std::max(x, lo), hi) does (np.maximum gives +0.0)."""
    out = acc.astype(np.float32, copy=False)
    for factor in factors:
        out *= factor
    if bias is not None:
        out += bias.astype(np.float32, copy=False).reshape(-1)
    act = activation_of(options)
    if act in FLOAT_RANGES:
        lo, hi = FLOAT_RANGES[act]
        return clip_into(out, np.float32(lo), np.float32(hi))
    return activate(out, options)


def depthwise_conv_2d(input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None,
                      filter_q, options: Options,
                      scales: tuple[np.ndarray, bool] | None = None,
                      taps: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Hybrid DEPTHWISE_CONV_2D (float NHWC input, int8 1HW(C*M) filter, float bias):
    always the per-channel kernel with asymmetric input quantization.

    One multiply-add per filter tap in float32, exact while 255 * 128 * taps < 2**24
    (else float64).  ``taps`` is `depthwise_filter_taps` of the filter (a cache; taken
    where its type and output width are this call's)."""
    _, kh, kw, out_ch = filter.shape
    b, h, w, in_ch = input.shape
    mult = out_ch // in_ch
    scales = (scales or filter_scales(filter_q, out_ch))[0]  # (``scales``: a cache)
    q, sf, offset = asymmetric_quantize(input.reshape(b, -1), as_float=True)
    ftype = np.float32 if 255.0 * 128.0 * kh * kw < FLOAT32_EXACT else np.float64
    x = q.reshape(input.shape).astype(ftype, copy=False)
    if offset.any():
        x -= offset.astype(ftype).reshape(b, 1, 1, 1)
    sh, sw = int(options.get("stride_h", 1)), int(options.get("stride_w", 1))
    dh = int(options.get("dilation_h_factor", 1))
    dw = int(options.get("dilation_w_factor", 1))
    win = window(options, h, w, kh, kw)
    if taps is None or taps[0].dtype != ftype or taps[1].shape[1] != win.out_w * out_ch:
        taps = depthwise_filter_taps(filter, win.out_w)
    acc = compiled_taps(x, taps, win, (kh, kw), (sh, sw), (dh, dw), mult)
    if acc is None:
        xp = pad_for_window(x, win, kh, kw, sh, sw, dh, dw, 0)
        if mult > 1:
            xp = np.repeat(xp, mult, axis=3)  # output channel ic * mult + m reads channel ic
        acc = depthwise_taps(xp, taps[0], win, kh, kw, sh, sw, dh, dw, tiled=taps[1])
    scale = (scales[None, :] * sf[:, None]).astype(np.float32)  # pcs * batch scale
    return _scaled_output(acc, [scale.reshape(b, 1, 1, out_ch)], bias, options)


def compiled_taps(x: np.ndarray, taps: tuple[np.ndarray, np.ndarray], win,
                   kernel: tuple[int, int], strides: tuple[int, int],
                   dilations: tuple[int, int], mult: int) -> np.ndarray | None:
    """`depthwise_taps` of the offset input ``x`` (float32 integers) by the compiled float
    loop (`compiled_loops.depthwise_f32`, or its row form), unpadded, with no bias and no
    clamp: every sum is an exact integer, so its order changes nothing.  None when
    compiled kernels are off or the sums are float64."""
    loops = compiled.loops()
    if loops is None or x.dtype != np.float32:
        return None
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilations
    ftaps, tiled = taps
    out_ch = ftaps.shape[1]
    out = np.empty((x.shape[0], win.out_h, win.out_w, out_ch), np.float32)
    low, high = np.float32(-np.inf), np.float32(np.inf)
    x = np.ascontiguousarray(x)
    if sw == 1 and mult == 1:
        loops.depthwise_rows_f32(x, tiled.reshape(kh, kw, -1),
                                 np.zeros(tiled.shape[1], np.float32), low, high, sh, dh, dw,
                                 win.pad_h, win.pad_w, 0, win.out_h, out)
    else:
        loops.depthwise_f32(x, ftaps.reshape(kh, kw, out_ch), np.zeros(out_ch, np.float32),
                            low, high, sh, sw, dh, dw, win.pad_h, win.pad_w, mult, 0,
                            win.out_h, out)
    return out


def depthwise_filter_taps(filter: np.ndarray, out_w: int) -> tuple[np.ndarray, np.ndarray]:
    """A 1HW(C*M) int8 filter as `depthwise_taps` takes it for outputs ``out_w`` wide:
    ([KH*KW, C*M] in the sums' float type, that tiled to [KH*KW, out_w*C*M]); the kernel
    keeps it per node (the tiling cost a small layer a tenth of its time)."""
    _, kh, kw, out_ch = filter.shape
    ftype = np.float32 if 255.0 * 128.0 * kh * kw < FLOAT32_EXACT else np.float64
    ftaps = filter.astype(ftype).reshape(kh * kw, out_ch)
    return ftaps, np.tile(ftaps, (1, out_w))


def fully_connected(input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None, filter_q,
                    options: Options, out_shape) -> np.ndarray:
    """Hybrid FULLY_CONNECTED (EvalHybridDense): output = bias + (sum q*w - zp * rowsum(w))
    * batch scale * filter scale, then the activation; all-zero inputs give the bias."""
    return HybridDense(filter, bias, filter_q, options)(input, out_shape)


_SCRATCH = threading.local()


def _rows_scratch(n: int) -> np.ndarray:
    """A float32 work array of at least ``n`` values, reused by this thread: the blocks of
    rows converted for each product (fresh arrays would cost page faults every time)."""
    buf = getattr(_SCRATCH, "rows", None)
    if buf is None or buf.size < n:
        buf = _SCRATCH.rows = np.empty(n, np.float32)
    return buf


def exact_slices(q_abs: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """[start, end) slices of K, each as long as it can be, over which the column-wise
    largest |q| (``q_abs``, one per k, each at most ``limit``) sums to at most ``limit``:
    a float32 product of such a slice of q by weights |w| <= 128 is exact (`HybridDense`)."""
    k = int(q_abs.size)
    if k == 0:
        return [(0, 0)]
    sums = np.cumsum(q_abs, dtype=np.int64)
    out, start, base = [], 0, 0
    while start < k:
        end = max(start + 1, int(np.searchsorted(sums, base + limit, side="right")))
        out.append((start, end))
        start, base = end, int(sums[end - 1])
    return out


class HybridDense:
    """`fully_connected` with what depends only on the filter, bias and options computed
    once: a constant filter's product prepared at load (the fused Keras LSTM loops call it
    every time step).  Calling it computes exactly what `fully_connected` does.

    ``keep_copies`` (the default) keeps the filter's int32 and float copies that make each
    call one matrix product: 16 bytes per weight (a big filter's made at its second call).
    Without it (a weight too large for the interpreter's `weights.WeightCache`) nothing is copied: each call converts a block of
    rows at a time (``rows(start, stop)`` gives them: an array's slices, or rows unpacked
    from a packed constant) and sums their exact integer products by float32 products over
    slices of K short enough to be exact; the integers, and so the outputs, are the same."""

    #: bytes per weight the copies of ``keep_copies`` take (int32, float64, float32)
    COPY_BYTES = 16
    #: filters of at least this many weights (4 MB of float32 copies) are copied at the
    #: second call, not at the first (a 2048 x 2048 filter: 20 ms of copies, at its first
    #: call as long as the product read from its rows)
    COPY_LATER_VALUES = 1 << 20
    _called = False

    def __init__(self, filter: np.ndarray | None, bias: np.ndarray | None, filter_q,
                 options: Options, keep_copies: bool = True, rows=None,
                 shape: tuple[int, int] | None = None) -> None:
        self.units, self.accum = filter.shape if filter is not None else shape
        self.options = options
        fq = qparams(filter_q)
        self.per_channel = fq.scale.size > 1
        self.tensor_scale = np.float32(fq.scale[0])
        self.channel_scales = fq.scale.astype(np.float32)[None, :]
        self.asymmetric = bool(options.get("asymmetric_quantize_inputs", False))
        self.bias_row = None if bias is None else bias.astype(np.float32).reshape(1, -1)
        act = activation_of(options)
        self.plain = act in (None, "NONE")
        # added even without a bias: 0 + (-0.0) is +0.0, as `__call__`'s zeros + product
        self.row_offset = (np.zeros((1, self.units), np.float32) if self.bias_row is None
                           else self.bias_row)
        self.rows = rows if rows is not None else (lambda a, b: filter[a:b])
        self.w_t = self.w64_t = self.w32_t = self.row_sums = None
        #: the filter whose copies the second call makes (None: none to make): the first
        #: call reads a big filter's rows as they are, so a model run once (a decode step
        #: from the command line) never pays for copies only later calls gain from; a
        #: small filter's copies cost next to nothing and are made at once
        self._copy_later = filter if keep_copies else None
        if keep_copies and filter.size < self.COPY_LATER_VALUES:
            self._make_copies()

    def _make_copies(self) -> None:
        """The int32, float64 and float32 copies that make a call one matrix product."""
        filter, self._copy_later = self._copy_later, None
        w = filter.astype(np.int32)
        self.w_t = w.T
        self.row_sums = w.sum(axis=1, dtype=np.int64)[None, :]
        # int_matmul's float64 product is exact while max|q| * max|w| * K < 2**53 (|q| <= 128)
        w_max = float(np.abs(w).max()) if w.size else 0.0
        self.w64_t = (np.ascontiguousarray(w.T.astype(np.float64))
                      if w.size and 128.0 * w_max * self.accum < FLOAT64_EXACT else None)
        # a float32 product of the shifted input row (|q - zp| <= 255) and the weights is
        # exact while no partial sum can pass 2**24, whatever order BLAS adds in
        self.w32_t = (np.ascontiguousarray(w.T.astype(np.float32))
                      if w.size and 255.0 * w_max * self.accum < FLOAT32_EXACT else None)

    #: weights converted to float32 at once: 4 MB, which stay in cache for the product
    BLOCK_VALUES = 1 << 20

    def _blocks(self) -> list[tuple[int, int]]:
        step = max(1, self.BLOCK_VALUES // max(1, self.accum))
        return [(n0, min(self.units, n0 + step)) for n0 in range(0, self.units, step)]

    #: the largest sum of |q| over one slice of K whose float32 products with weights
    #: |w| <= 128 (int8, or unpacked int4) keep every partial sum, in whatever order BLAS
    #: adds them, below 2**24, where every integer is exact
    Q_SUM_EXACT = (int(FLOAT32_EXACT) - 1) // 128

    def _dot_by_rows(self, q: np.ndarray) -> np.ndarray:
        """The exact int64 products q @ filter^T of integer rows ``q`` (|q| <= 255), a
        block of filter rows at a time: float32 products over slices of K exact for these
        rows (`exact_slices`: a decode row's activations usually make it one slice),
        summed exactly in float64."""
        qf = q.astype(np.float32)
        m = qf.shape[0]
        out = np.empty((self.units, m), np.float64)
        slices = exact_slices(np.abs(q).max(axis=0) if m else np.zeros(self.accum, np.int64),
                              self.Q_SUM_EXACT)
        blocks = self._blocks()
        work = _rows_scratch(max(n1 - n0 for n0, n1 in blocks) * self.accum)
        for n0, n1 in blocks:
            wb = work[:(n1 - n0) * self.accum].reshape(n1 - n0, self.accum)
            np.copyto(wb, self.rows(n0, n1), casting="unsafe")  # int8 -> float32: exact
            if len(slices) == 1:
                out[n0:n1] = wb @ qf.T
                continue
            acc = np.zeros((n1 - n0, m), np.float64)
            for k0, k1 in slices:
                acc += wb[:, k0:k1] @ qf[:, k0:k1].T
            out[n0:n1] = acc
        return out.T.astype(np.int64)

    def row(self, x: np.ndarray) -> np.ndarray | None:
        """The product of one finite, nonzero float32 row [1, accum] with no fused
        activation, in a third of `__call__`'s numpy calls (None: take `__call__`).

        The same numbers: the row's quantization scalars are computed as
        `_asymmetric_quantize_row` (or `symmetric_quantize`) computes them; adding the zero
        point, clamping to the int8 range and subtracting ``zp * rowsum(w)`` after the
        product equals clamping the rounded values to [-128 - zp, 127 - zp] before it
        (all small integers, exact in float32); and the integer sums are exact in float32
        (``w32_t``), so the float32 accumulator is the int32 one.  A recurrent step pays
        for every call."""
        if self._copy_later is not None:
            self._make_copies()
        if self.w32_t is None or not self.plain or x.shape[0] != 1:
            return None
        f32 = np.float32
        lo_x, hi_x = np.minimum.reduce(x, axis=None), np.maximum.reduce(x, axis=None)
        if not (math.isfinite(lo_x) and math.isfinite(hi_x)) or (lo_x == 0 and hi_x == 0):
            return None
        if self.asymmetric:
            sf, inv, zp = asymmetric_row_params(lo_x, hi_x)
            q_lo, q_hi = -128 - zp, 127 - zp
        else:
            rng = max(abs(lo_x), abs(hi_x))
            sf, inv = rng / f32(127), f32(127) / rng
            q_lo, q_hi = -127, 127
        q = _neon_round(x * inv)
        # np.clip's values (the row is finite) without its Python wrapper
        np.minimum(np.maximum(q, f32(q_lo), out=q), f32(q_hi), out=q)
        acc = q @ self.w32_t
        if self.per_channel:
            acc *= (np.asarray([sf], f32)[:, None] * self.channel_scales).astype(f32)
        else:
            acc *= f32(sf * self.tensor_scale)
        acc += self.row_offset
        return acc

    def __call__(self, input: np.ndarray, out_shape) -> np.ndarray:
        if self._copy_later is not None and self._called:
            self._make_copies()  # the second call: for it and every later one
        self._called = True
        x = np.asarray(input, np.float32).reshape(-1, self.accum)
        batches = x.shape[0]
        if batches == 1 and self._copy_later is None:  # (the first call reads rows)
            out = self.row(x)
            if out is not None:
                return out.reshape(out_shape)
        out = np.zeros((batches, self.units), np.float32)
        if self.bias_row is not None:
            out = out + self.bias_row
        if not np.any(x):
            return activate(out, self.options).reshape(out_shape)
        if self.asymmetric:
            q, sf, offset = asymmetric_quantize(x)
        else:
            q, sf = symmetric_quantize(x)
            offset = np.zeros(batches, np.int32)
        if not self.per_channel:
            sf = (sf * self.tensor_scale).astype(np.float32)
        if self.w_t is None:  # no copies (yet) kept: the filter a block of rows at a time, by
            # the shifted input: sum (q - zp) w is sum q w - zp rowsum(w), exactly
            dot = self._dot_by_rows(np.asarray(q, np.int32) - offset.astype(np.int32)[:, None])
        else:
            if self.w64_t is not None and q.size:  # int_matmul's exact float64 product
                dot = np.matmul(q.astype(np.float64), self.w64_t).astype(np.int64)
            else:
                dot = int_matmul(q.astype(np.int32), self.w_t)
            dot = dot - self.row_sums * offset.astype(np.int64)[:, None]
        scale = sf[:, None]
        if self.per_channel:
            scale = (scale * self.channel_scales).astype(np.float32)
        out = (out + dot.astype(np.float32) * scale).astype(np.float32)
        return activate(out, self.options).reshape(out_shape)
