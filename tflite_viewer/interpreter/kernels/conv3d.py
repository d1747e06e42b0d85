"""CONV_3D and CONV_3D_TRANSPOSE (float32, NDHWC), with TFLite's SAME/VALID padding.

CONV_3D: filter [D, H, W, in, out], optional bias [out], fused activation.
CONV_3D_TRANSPOSE: inputs (output shape [5], filter [D, H, W, out, in], input, bias?); the
padding is the one a CONV_3D from the output shape to the input shape would use.
"""
from __future__ import annotations

import numpy as np

from ..padding import compute_out_size, compute_padding
from .common import (BuiltinOperator as Op, apply_activation, as_int_list, clamp_activation,
                     define, option)
from .conv import check_image
from .data_ops import types_check


def _geometry(node) -> tuple[tuple[int, int, int], tuple[int, int, int], str]:
    strides = tuple(int(option(node, f"stride_{a}", 1)) for a in ("d", "h", "w"))
    dil = tuple(int(option(node, f"dilation_{a}_factor", 1)) for a in ("d", "h", "w"))
    return strides, dil, str(option(node, "padding", "SAME"))


def conv3d(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, strides, dilations,
           padding: str, act: str | None = None) -> np.ndarray:
    """NDHWC convolution: windows gathered per filter tap, one contraction per tap."""
    n, size, c = x.shape[0], x.shape[1:4], x.shape[4]
    fsize, out_c = w.shape[:3], w.shape[4]
    if w.shape[3] != c:
        raise ValueError(f"filter takes {w.shape[3]} channels, input has {c}")
    outs = [compute_out_size(padding, size[i], fsize[i], strides[i], dilations[i]) for i in range(3)]
    pads = [compute_padding(strides[i], dilations[i], size[i], fsize[i], outs[i]) for i in range(3)]
    need = [(outs[i] - 1) * strides[i] + (fsize[i] - 1) * dilations[i] + 1 if outs[i] else 0
            for i in range(3)]
    xp = np.zeros((n,) + tuple(max(need[i], pads[i] + size[i]) for i in range(3)) + (c,),
                  np.float64)
    xp[:, pads[0]:pads[0] + size[0], pads[1]:pads[1] + size[1], pads[2]:pads[2] + size[2]] = x
    out = np.zeros((n,) + tuple(outs) + (out_c,), np.float64)
    w64 = w.astype(np.float64)
    for kd in range(fsize[0]):
        for kh in range(fsize[1]):
            for kw in range(fsize[2]):
                d0, h0, w0 = kd * dilations[0], kh * dilations[1], kw * dilations[2]
                patch = xp[:, d0:d0 + (outs[0] - 1) * strides[0] + 1:strides[0],
                           h0:h0 + (outs[1] - 1) * strides[1] + 1:strides[1],
                           w0:w0 + (outs[2] - 1) * strides[2] + 1:strides[2]]
                out += patch @ w64[kd, kh, kw]
    if bias is not None:
        out += bias
    return apply_activation(out.astype(x.dtype), act)


def _conv3d_shape(ctx, node):
    check_image("CONV_3D", ctx.input(node, 0), 1, 3)
    x, w = ctx.input(node, 0).shape, ctx.input(node, 1).shape
    strides, dil, padding = _geometry(node)
    return [(x[0],) + tuple(compute_out_size(padding, x[1 + i], w[i], strides[i], dil[i])
                            for i in range(3)) + (w[4],)]


def _conv3d(ctx, node):
    strides, dil, padding = _geometry(node)
    b = ctx.input(node, 2)
    return conv3d(ctx.value(node, 0), ctx.value(node, 1), None if b is None else b.data,
                  strides, dil, padding, clamp_activation(node))


define(Op.CONV_3D, (1, 1), _conv3d, _conv3d_shape, types="any",
       check=types_check("CONV_3D", {0: ("FLOAT32",), 1: ("FLOAT32",)}))


def conv3d_transpose(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out_shape,
                     strides, dilations, padding: str, act: str | None = None) -> np.ndarray:
    """Each input value spread over the output through the filter (the gradient of
    CONV_3D), cropped by the padding CONV_3D would use from ``out_shape``."""
    out_shape = tuple(as_int_list(out_shape))
    fsize = w.shape[:3]
    size = out_shape[1:4]
    outs = [compute_out_size(padding, size[i], fsize[i], strides[i], dilations[i]) for i in range(3)]
    if tuple(outs) != tuple(x.shape[1:4]) or out_shape[0] != x.shape[0] \
            or out_shape[4] != w.shape[3] or w.shape[4] != x.shape[4]:
        raise ValueError(f"output shape {list(out_shape)} does not fit input "
                         f"{list(x.shape)} and filter {list(w.shape)}")
    pads = [compute_padding(strides[i], dilations[i], size[i], fsize[i], outs[i])
            for i in range(3)]
    span = [(x.shape[1 + i] - 1) * strides[i] + (fsize[i] - 1) * dilations[i] + 1
            for i in range(3)]
    full = np.zeros((x.shape[0],) + tuple(max(span[i], pads[i] + size[i]) for i in range(3))
                    + (out_shape[4],), np.float64)
    x64 = x.astype(np.float64)
    w64 = w.astype(np.float64)
    n_d, n_h, n_w = x.shape[1:4]
    for kd in range(fsize[0]):
        for kh in range(fsize[1]):
            for kw in range(fsize[2]):
                d0, h0, w0 = kd * dilations[0], kh * dilations[1], kw * dilations[2]
                full[:, d0:d0 + (n_d - 1) * strides[0] + 1:strides[0],
                     h0:h0 + (n_h - 1) * strides[1] + 1:strides[1],
                     w0:w0 + (n_w - 1) * strides[2] + 1:strides[2]] += \
                    x64 @ w64[kd, kh, kw].T
    out = full[:, pads[0]:pads[0] + size[0], pads[1]:pads[1] + size[1],
               pads[2]:pads[2] + size[2]]
    if bias is not None:
        out = out + bias
    return apply_activation(np.ascontiguousarray(out).astype(x.dtype), act)


def _conv3dt_shape(ctx, node):
    shape = ctx.known_value(node, 0)
    return None if shape is None else [tuple(as_int_list(shape))]


def _conv3dt(ctx, node):
    strides, dil, padding = _geometry(node)
    b = ctx.input(node, 3)
    return conv3d_transpose(ctx.value(node, 2), ctx.value(node, 1),
                            None if b is None else b.data, ctx.value(node, 0), strides, dil,
                            padding, clamp_activation(node))


define(Op.CONV_3D_TRANSPOSE, (1, 1), _conv3dt, _conv3dt_shape, types="any",
       check=types_check("CONV_3D_TRANSPOSE", {0: ("INT32",), 1: ("FLOAT32",),
                                               2: ("FLOAT32",)}))
