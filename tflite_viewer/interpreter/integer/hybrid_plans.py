"""Hybrid CONV_2D and DEPTHWISE_CONV_2D prepared for one input shape: what a kernel's
``bind`` hands the input to.

`hybrid.conv_2d` and `hybrid.depthwise_conv_2d` read the options, compute the window and
build the tail's scale and bias arrays on every call: on mobilenet_v2_dynamic's small
layers that was two thirds of each node's 25-30 us.  The functions here do that once and
keep, per call, only what depends on the input: its quantization, the exact integer sums
and the compiled float tail (`compiled_loops.scale_rows`), in the same steps as the
one-call forms, so the same bits (tests/interpreter/test_compiled_kernels.py and
test_vnni_kernels.py check both against LiteRT, bound and invoked).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from .. import compiled
from .common import Options, exact_matmul, im2col, pad_for_window, window
from .hybrid import (asymmetric_quantize, asymmetric_row_params, compiled_taps, scale_tail,
                     symmetric_quantize)

Fn = Callable[[np.ndarray], np.ndarray]


def _geometry(options: Options) -> tuple[int, int, int, int]:
    return (int(options.get("stride_h", 1)), int(options.get("stride_w", 1)),
            int(options.get("dilation_h_factor", 1)), int(options.get("dilation_w_factor", 1)))


def conv_2d_fn(input_shape: tuple[int, ...], filter: np.ndarray, bias: np.ndarray | None,
               options: Options, fmat: np.ndarray,
               scales: tuple[np.ndarray, bool]) -> Fn | None:
    """`hybrid.conv_2d` of inputs of ``input_shape`` with this filter (``fmat`` its
    `hybrid.conv_filter_matrix`, ``scales`` its `hybrid.filter_scales`) and bias, as a
    function of the input; None for a grouped convolution or a tail the compiled loop
    does not take."""
    out_ch, kh, kw, depth = filter.shape
    b, h, w, in_ch = (int(d) for d in input_shape)
    channel_scale, per_channel = scales
    tail = scale_tail(channel_scale if per_channel else np.ones(out_ch, np.float32), bias,
                 options, out_ch)
    if in_ch != depth or tail is None:
        return None
    sh, sw, dh, dw = _geometry(options)
    win = window(options, h, w, kh, kw)
    pointwise = kh == 1 and kw == 1 and (win.pad_h, win.pad_w) == (0, 0)
    shape = (b, win.out_h, win.out_w, out_ch)
    tensor_scale = channel_scale[0]

    def run(input: np.ndarray) -> np.ndarray:
        flat = input.reshape(b, -1)
        if per_channel:  # (EvalHybridPerChannel: asymmetric input)
            q, sf, offset = asymmetric_quantize(flat, as_float=True)
        else:
            q, sf = symmetric_quantize(flat, as_float=True)
            offset = None
            sf = (sf * tensor_scale).astype(np.float32)
        x = q.reshape(input.shape)  # (float32 integers, a fresh array)
        if offset is not None and offset.any():
            x -= offset.astype(np.float32).reshape(b, 1, 1, 1)
        if pointwise:
            xs = x[:, :(win.out_h - 1) * sh + 1:sh, :(win.out_w - 1) * sw + 1:sw, :]
            cols = np.ascontiguousarray(xs).reshape(-1, in_ch)
        else:
            cols = im2col(pad_for_window(x, win, kh, kw, sh, sw, dh, dw, 0), win, kh, kw,
                          sh, sw, dh, dw)
        acc = exact_matmul(cols, fmat, 255.0, 128.0, float32_ok=True)
        return tail(acc.reshape(shape), sf)
    products = compiled.vnni()
    if products is None or not per_channel or b != 1:
        return run
    return _byte_conv(products, run, filter, tail, win, pointwise, (sh, sw, dh, dw), shape)


def _byte_conv(products, run: Fn, filter: np.ndarray, tail, win, pointwise: bool,
               geometry: tuple[int, int, int, int], shape: tuple[int, ...]) -> Fn:
    """`conv_2d_fn`'s per-channel form of one batch with its sums in VNNI byte products
    (`compiled_vnni`): the input quantized straight to int8 (`quantize_bytes`), its
    patches padded with the zero point, the sums of (q - zero point) * filter taken from
    each channel's start of -(128 + zero point) times its filter sum (the product reads
    q + 128), then the same float tail; a row with inf or nan takes ``run``."""
    out_ch, kh, kw, depth = filter.shape
    sh, sw, dh, dw = geometry
    rows = filter.reshape(out_ch, -1)
    weights = products.pack_weights(rows, signed_input=True)
    filter_sums = np.zeros(weights.start.size, np.int32)
    filter_sums[:out_ch] = rows.sum(axis=1, dtype=np.int64)
    one = np.ones(1, np.float32)

    def run_bytes(input: np.ndarray) -> np.ndarray:
        quantized = quantize_bytes(input)
        if quantized is None:
            return run(input)
        q, scale, zero_point = quantized
        if pointwise:
            cols = q[:, :(win.out_h - 1) * sh + 1:sh, :(win.out_w - 1) * sw + 1:sw, :]
            cols = np.ascontiguousarray(cols).reshape(-1, depth)
        else:
            cols = im2col(pad_for_window(q, win, kh, kw, sh, sw, dh, dw, zero_point), win,
                          kh, kw, sh, sw, dh, dw)
        start = weights.start - np.int32(zero_point) * filter_sums  # (exact in int32)
        acc = products.product(cols, weights._replace(start=start))
        return tail(acc.reshape((1,) + acc.shape), one * scale).reshape(shape)
    return run_bytes


def quantize_bytes(x: np.ndarray) -> tuple[np.ndarray, np.float32, int] | None:
    """`hybrid.asymmetric_quantize` of one batch as (int8 values of x's shape, scaling
    factor, zero point): the same steps (`hybrid.asymmetric_row_params`, then
    `compiled_loops.neon_quantize_row` into int8), or None for inf or nan."""
    lo, hi = x.min(), x.max()
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    q = np.empty(x.shape, np.int8)
    if lo == 0 and hi == 0:
        q.fill(0)
        return q, np.float32(1), 0
    scale, inv, zero_point = asymmetric_row_params(lo, hi)
    compiled.loops().neon_quantize_row(np.ascontiguousarray(x).reshape(-1), inv,
                                       np.float32(zero_point), q.reshape(-1))
    return q, scale, zero_point


def depthwise_conv_2d_fn(input_shape: tuple[int, ...], filter: np.ndarray,
                         bias: np.ndarray | None, options: Options,
                         scales: tuple[np.ndarray, bool],
                         taps: tuple[np.ndarray, np.ndarray]) -> Fn | None:
    """`hybrid.depthwise_conv_2d` of inputs of ``input_shape`` (one batch) with this
    filter (``taps`` its `hybrid.depthwise_filter_taps` for the output's width,
    ``scales`` its `hybrid.filter_scales`) and bias, as a function of the input; None for
    batches, where the sums are float64 or a tail the compiled loops do not take.

    The one-call form multiplies the sums by (channel scale * batch scale), one float32
    product per channel, not by each in turn: the tail gets that product as its channel
    scale and 1 as the batch's (a multiplication by 1 changes no value)."""
    _, kh, kw, out_ch = filter.shape
    b, h, w, in_ch = (int(d) for d in input_shape)
    win = window(options, h, w, kh, kw)
    tail = scale_tail(np.ones(out_ch, np.float32), bias, options, out_ch)
    if b != 1 or tail is None or taps[0].dtype != np.float32 \
            or taps[1].shape[1] != win.out_w * out_ch:
        return None
    sh, sw, dh, dw = _geometry(options)
    mult = out_ch // in_ch
    channel_scale, one = scales[0], np.ones(1, np.float32)

    def run(input: np.ndarray) -> np.ndarray:
        q, sf, offset = asymmetric_quantize(input.reshape(1, -1), as_float=True)
        x = q.reshape(input.shape)
        if offset.any():
            x -= offset.astype(np.float32).reshape(1, 1, 1, 1)
        acc = compiled_taps(x, taps, win, (kh, kw), (sh, sw), (dh, dw), mult)
        return tail(acc, one, (channel_scale * sf[0]).astype(np.float32))
    return run
