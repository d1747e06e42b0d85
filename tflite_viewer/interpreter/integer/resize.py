"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR on quantized (and float) NHWC tensors.

Neither op requantizes: the output takes the input's integer values (LiteRT checks only
the types).  RESIZE_NEAREST_NEIGHBOR is ``reference_ops::ResizeNearestNeighbor``: a gather
at ``GetNearestNeighbor`` indices (float32 scale, TfLiteRound for align_corners).
RESIZE_BILINEAR follows resize_bilinear.cc's kReference dispatch:

* int8 and int16: ``ResizeBilinearInteger``, fixed point with 10 fractional bits
  (``scale_10``), four int64 products summed, ``(sum +- 2^19) / 2^20`` truncated;
* uint8 (and float): the float ``ResizeBilinear`` template: the weights
  ``1 - (y - y0)`` etc. in float32, summed left to right, plus the template's
  ``rounding_offset`` (0.5 for integer types), then ``static_cast`` (truncation).
"""
from __future__ import annotations

import numpy as np

from ..quant_math import round_half_away, trunc_div


def _float_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def nearest_indices(out_size: int, in_size: int, align_corners: bool,
                    half_pixel_centers: bool) -> np.ndarray:
    """GetNearestNeighbor for every output index."""
    scale = _float_scale(in_size, out_size, align_corners)
    offset = np.float32(0.5) if half_pixel_centers else np.float32(0)
    v = (np.arange(out_size, dtype=np.float32) + offset) * scale
    idx = round_half_away(v) if align_corners else np.floor(v)
    idx = np.minimum(idx.astype(np.int64), in_size - 1)
    if half_pixel_centers:
        idx = np.maximum(idx, 0)
    return idx


def resize_nearest_neighbor(x: np.ndarray, size, align_corners: bool = False,
                            half_pixel_centers: bool = False) -> np.ndarray:
    oh, ow = (int(v) for v in size)
    _, h, w, _ = x.shape
    ys = nearest_indices(oh, h, align_corners, half_pixel_centers)
    xs = nearest_indices(ow, w, align_corners, half_pixel_centers)
    return x[:, ys][:, :, xs]


def _interpolation_values_10(out_size: int, in_size: int, align_corners: bool,
                             half_pixel_centers: bool):
    """ComputeInterpolationValues (integer): (scaled value in 1/1024, lower, upper)."""
    if align_corners and out_size > 1:
        scale_10 = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale_10 = ((1 << 10) * in_size + out_size // 2) // out_size
    v = np.arange(out_size, dtype=np.int64)
    if half_pixel_centers:
        scaled = v * scale_10 + scale_10 // 2 - (1 << 9)
    else:
        scaled = v * scale_10
    lower = np.maximum(trunc_div(scaled, 1 << 10), 0)
    upper = np.minimum(trunc_div(scaled + (1 << 10) - 1, 1 << 10), in_size - 1)
    return scaled, lower, upper


def _resize_bilinear_integer(x: np.ndarray, oh: int, ow: int, align_corners: bool,
                             half_pixel_centers: bool) -> np.ndarray:
    _, h, w, _ = x.shape
    ys, y0, y1 = _interpolation_values_10(oh, h, align_corners, half_pixel_centers)
    xs, x0, x1 = _interpolation_values_10(ow, w, align_corners, half_pixel_centers)
    one = 1 << 10
    wy1 = (ys - one * y0)[None, :, None, None]
    wy0 = one - wy1
    wx1 = (xs - one * x0)[None, None, :, None]
    wx0 = one - wx1
    v = x.astype(np.int64)
    r0, r1 = v[:, y0], v[:, y1]
    total = (r0[:, :, x0] * wy0 * wx0 + r1[:, :, x0] * wy1 * wx0 +
             r0[:, :, x1] * wy0 * wx1 + r1[:, :, x1] * wy1 * wx1)
    rnd = np.where(total > 0, 1 << 19, -(1 << 19))
    out = trunc_div(total + rnd, 1 << 20)
    return out.astype(x.dtype)  # static_cast: wraps like C


def _interpolation_values_float(out_size: int, in_size: int, align_corners: bool,
                                half_pixel_centers: bool):
    scale = _float_scale(in_size, out_size, align_corners)
    v = np.arange(out_size, dtype=np.float32)
    if half_pixel_centers:
        s = (v + np.float32(0.5)) * scale - np.float32(0.5)
    else:
        s = v * scale
    lower = np.maximum(np.floor(s), 0).astype(np.int64)
    upper = np.minimum(np.ceil(s).astype(np.int64), in_size - 1)
    return s.astype(np.float32), lower, upper


def _resize_bilinear_float(x: np.ndarray, oh: int, ow: int, align_corners: bool,
                           half_pixel_centers: bool) -> np.ndarray:
    """The float template: input(y0,x0)*(1-dy)*(1-dx) + input(y1,x0)*dy*(1-dx) +
    input(y0,x1)*(1-dy)*dx + input(y1,x1)*dy*dx, each step in float32 and in that order.
    The first product of each term is made on the input's columns (as many as the output's
    rows times the input's width), then gathered to the output's columns and multiplied by
    the column weights tiled along a row, which computes the same values in a third of the
    time on deeplabv3's 33x33 to 257x257 resize."""
    n, h, w, c = x.shape
    ys, y0, y1 = _interpolation_values_float(oh, h, align_corners, half_pixel_centers)
    xs, x0, x1 = _interpolation_values_float(ow, w, align_corners, half_pixel_centers)
    one = np.float32(1)
    dy = (ys - y0.astype(np.float32))[None, :, None, None]
    dx = xs - x0.astype(np.float32)
    v = x.astype(np.float32, copy=False)
    top, bottom = v[:, y0] * (one - dy), v[:, y1] * dy  # [N, OH, W, C]
    left, right = np.repeat(one - dx, c), np.repeat(dx, c)  # per (column, channel)
    total = np.take(top, x0, axis=2).reshape(n, oh, ow * c)
    total *= left
    for rows, cols, weight in ((bottom, x0, left), (top, x1, right), (bottom, x1, right)):
        term = np.take(rows, cols, axis=2).reshape(n, oh, ow * c)
        term *= weight
        total += term
    total = total.reshape(n, oh, ow, c)
    if x.dtype.kind == "f":
        return total.astype(x.dtype, copy=False)
    return np.trunc(total + np.float32(0.5)).astype(np.int64).astype(x.dtype)


def resize_bilinear(x: np.ndarray, size, align_corners: bool = False,
                    half_pixel_centers: bool = False) -> np.ndarray:
    """RESIZE_BILINEAR of an NHWC tensor to ``size`` = (height, width)."""
    oh, ow = (int(v) for v in size)
    if x.dtype in (np.int8, np.int16):
        return _resize_bilinear_integer(x, oh, ow, align_corners, half_pixel_centers)
    return _resize_bilinear_float(x, oh, ow, align_corners, half_pixel_centers)
