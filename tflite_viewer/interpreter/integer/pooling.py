"""Quantized AVERAGE_POOL_2D and MAX_POOL_2D (uint8, int8, int16).

Mirrors ``reference_integer_ops::AveragePool``/``MaxPool`` (and the uint8 versions of
``reference_ops``): pooling works on raw quantized values, since input and output share
their quantization; the fused activation clamps in the output's units.

Small windows (the usual 2x2 or 3x3) are reduced one filter tap at a time over the whole
image, a handful of whole-array operations; large ones (global pooling) through a strided
window view.  Both visit exactly the in-image taps the reference loops visit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import (Options, Window, activation_of, fused_activation_range, pad_for_window,
                     patches, qparams, window)

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
    acc_type: type


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
    return PoolPlan(fh, fw, sh, sw, win, _window_counts(in_h, in_w, win, fh, fw, sh, sw),
                    lo, hi, np.int32 if fh * fw < (1 << 15) else np.int64)


def _plan(input: np.ndarray, output_q, options: Options, plan: PoolPlan | None) -> PoolPlan:
    return plan if plan is not None else prepare_pool(input.shape, input.dtype, output_q,
                                                      options)


def average_pool_2d(input: np.ndarray, output_q, options: Options,
                    plan: PoolPlan | None = None) -> np.ndarray:
    """AVERAGE_POOL_2D: the window sum over in-image taps divided by their count, rounded
    half away from zero with C integer division ((acc +- count/2) / count)."""
    p = _plan(input, output_q, options, plan)
    win = p.win
    x = pad_for_window(input.astype(p.acc_type), win, p.fh, p.fw, p.sh, p.sw)
    if p.fh * p.fw <= _TAP_LOOP_LIMIT:
        each = taps(x, win.out_h, win.out_w, p.fh, p.fw, p.sh, p.sw)
        acc = next(each).copy()
        for tap in each:
            acc += tap
    else:
        acc = patches(x, win, p.fh, p.fw, p.sh, p.sw).sum(axis=(-2, -1), dtype=p.acc_type)
    half = p.count // 2
    # C division truncates toward zero: the negative branch divides the magnitude
    avg = np.where(acc > 0, (acc + half) // p.count, -((half - acc) // p.count))
    np.maximum(avg, p.act_min, out=avg)
    np.minimum(avg, p.act_max, out=avg)
    return avg.astype(input.dtype)


def max_pool_2d(input: np.ndarray, output_q, options: Options,
                plan: PoolPlan | None = None) -> np.ndarray:
    """MAX_POOL_2D: the maximum over in-image taps, clamped to the activation range."""
    p = _plan(input, output_q, options, plan)
    win = p.win
    x = pad_for_window(input, win, p.fh, p.fw, p.sh, p.sw, value=np.iinfo(input.dtype).min)
    if p.fh * p.fw <= _TAP_LOOP_LIMIT:
        each = taps(x, win.out_h, win.out_w, p.fh, p.fw, p.sh, p.sw)
        out = next(each).copy()
        for tap in each:
            np.maximum(out, tap, out=out)
    else:
        out = patches(x, win, p.fh, p.fw, p.sh, p.sw).max(axis=(-2, -1))
    np.maximum(out, p.act_min, out=out)
    np.minimum(out, p.act_max, out=out)
    return out
