"""Quantized AVERAGE_POOL_2D and MAX_POOL_2D (uint8, int8, int16).

Mirrors ``reference_integer_ops::AveragePool``/``MaxPool`` (and the uint8 versions of
``reference_ops``): pooling works on raw quantized values, since input and output share
their quantization; the fused activation clamps in the output's units.

Small windows (the usual 2x2 or 3x3) are reduced separably over the whole image, first
over the filter rows (whole input rows at a time), then over the filter columns: fh + fw - 2
whole-array operations; large ones (global pooling) through a strided window view.  Both
visit exactly the in-image taps the reference loops visit (maxima and exact integer sums
do not depend on the order).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import quant_math as qm
from .common import (FLOAT32_EXACT, Options, Window, activation_of, dtype_range,
                     fused_activation_range, pad_for_window, patches, qparams, window)

#: Above this many filter taps a window view beats one whole-image operation per tap.
_TAP_LOOP_LIMIT = 16


@dataclass(frozen=True)
class PoolPlan:
    """What a pooling node's prepare fixes for its input shape: the window geometry, the
    divisor of every output position and the activation range."""

    fh: int
    fw: int
    sh: int
    sw: int
    win: Window
    count: int | np.ndarray  # an int when every window lies wholly inside the image
    act_min: int
    act_max: int
    acc_type: type  # of the integer window sums (large windows)
    sum_type: type  # of the float window sums (small windows): exact and correctly divided
    clamp: bool  # the activation range is narrower than the type's


def taps(x: np.ndarray, out_h: int, out_w: int, fh: int, fw: int, sh: int, sw: int):
    """Every filter tap's strided view of a padded NHWC input: [B, OH, OW, C] each."""
    for i in range(fh):
        for j in range(fw):
            yield x[:, i:i + (out_h - 1) * sh + 1:sh, j:j + (out_w - 1) * sw + 1:sw, :]


def in_image_counts(size: int, out: int, filt: int, stride: int, pad: int) -> np.ndarray:
    """Per output row (or column): how many filter taps fall inside the image, as the
    reference's ``filter_end - filter_start``."""
    origin = np.arange(out, dtype=np.int64) * stride - pad
    return np.minimum(filt, size - origin) - np.maximum(0, -origin)


def _window_counts(in_h: int, in_w: int, win: Window, fh: int, fw: int, sh: int,
                   sw: int) -> int | np.ndarray:
    ch = in_image_counts(in_h, win.out_h, fh, sh, win.pad_h)
    cw = in_image_counts(in_w, win.out_w, fw, sw, win.pad_w)
    if ch.size and cw.size and (ch.min() <= 0 or cw.min() <= 0):
        raise ValueError("an AVERAGE_POOL_2D window lies entirely in the padding "
                         "(LiteRT's reference kernel fails on it)")
    if (ch == fh).all() and (cw == fw).all():
        return fh * fw
    return (ch[:, None] * cw[None, :])[None, :, :, None]


def prepare_pool(input_shape, input_dtype, output_q, options: Options) -> PoolPlan:
    """The per-node constants of both quantized poolings, computed once per input shape."""
    fh, fw = int(options["filter_height"]), int(options["filter_width"])
    sh, sw = int(options.get("stride_h", 1)), int(options.get("stride_w", 1))
    in_h, in_w = int(input_shape[1]), int(input_shape[2])
    win = window(options, in_h, in_w, fh, fw, dilation=False)
    lo, hi = fused_activation_range(activation_of(options), qparams(output_q), input_dtype)
    # |sum| + count/2 below 2**24 keeps float32 sums exact and their correctly rounded
    # quotients by the count on the right side of every integer (as C's division)
    biggest = max(abs(v) for v in dtype_range(input_dtype)) * fh * fw * 1.5
    return PoolPlan(fh, fw, sh, sw, win, _window_counts(in_h, in_w, win, fh, fw, sh, sw),
                    lo, hi, np.int32 if fh * fw < (1 << 15) else np.int64,
                    np.float32 if biggest < FLOAT32_EXACT else np.float64,
                    (lo, hi) != dtype_range(input_dtype))


def _plan(input: np.ndarray, output_q, options: Options, plan: PoolPlan | None) -> PoolPlan:
    return plan if plan is not None else prepare_pool(input.shape, input.dtype, output_q,
                                                      options)


def separable(op, x: np.ndarray, p: PoolPlan) -> np.ndarray:
    """``op`` (np.maximum, np.add) over every window of a padded NHWC input: first over
    the filter rows for all input columns, then over the filter columns; a new array."""
    win = p.win
    rows = (win.out_h - 1) * p.sh + 1
    cols = (win.out_w - 1) * p.sw + 1
    width = cols + p.fw - 1
    acc = x[:, :rows:p.sh, :width]
    if p.fh > 1:
        acc = op(acc, x[:, 1:1 + rows:p.sh, :width])
        for ky in range(2, p.fh):
            op(acc, x[:, ky:ky + rows:p.sh, :width], out=acc)
    if p.fw == 1:
        return np.array(acc[:, :, :cols:p.sw])
    out = op(acc[:, :, :cols:p.sw], acc[:, :, 1:1 + cols:p.sw])
    for kx in range(2, p.fw):
        op(out, acc[:, :, kx:kx + cols:p.sw], out=out)
    return out


def average_pool_2d(input: np.ndarray, output_q=None, options: Options | None = None,
                    plan: PoolPlan | None = None) -> np.ndarray:
    """AVERAGE_POOL_2D: the window sum over in-image taps divided by their count, rounded
    half away from zero with C integer division ((acc +- count/2) / count)."""
    p = _plan(input, output_q, options, plan)
    win = p.win
    if p.fh * p.fw <= _TAP_LOOP_LIMIT:
        # exact float sums; C's truncating (acc +- count/2) / count is the truncation (the
        # final cast) of their float quotient, exact enough not to cross an integer
        x = pad_for_window(input.astype(p.sum_type), win, p.fh, p.fw, p.sh, p.sw)
        acc = separable(np.add, x, p)
        acc += np.copysign(p.sum_type(p.count // 2), acc)  # +0 takes +count/2: 0 either way
        acc /= p.count
        if p.clamp:
            qm.clip_into(acc, p.act_min, p.act_max)
        return acc.astype(input.dtype)
    x = pad_for_window(input.astype(p.acc_type), win, p.fh, p.fw, p.sh, p.sw)
    acc = patches(x, win, p.fh, p.fw, p.sh, p.sw).sum(axis=(-2, -1), dtype=p.acc_type)
    half = p.count // 2
    # C division truncates toward zero: the negative branch divides the magnitude
    avg = np.where(acc > 0, (acc + half) // p.count, -((half - acc) // p.count))
    np.maximum(avg, p.act_min, out=avg)
    np.minimum(avg, p.act_max, out=avg)
    return avg.astype(input.dtype)


def max_pool_2d(input: np.ndarray, output_q=None, options: Options | None = None,
                plan: PoolPlan | None = None) -> np.ndarray:
    """MAX_POOL_2D: the maximum over in-image taps, clamped to the activation range."""
    p = _plan(input, output_q, options, plan)
    win = p.win
    x = pad_for_window(input, win, p.fh, p.fw, p.sh, p.sw, value=np.iinfo(input.dtype).min)
    if p.fh * p.fw <= _TAP_LOOP_LIMIT:
        out = separable(np.maximum, x, p)
    else:
        out = patches(x, win, p.fh, p.fw, p.sh, p.sw).max(axis=(-2, -1))
    if p.clamp:
        qm.clip_into(out, p.act_min, p.act_max)
    return out
