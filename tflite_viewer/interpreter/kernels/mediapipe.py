"""MediaPipe's custom ops: Convolution2DTransposeBias, MaxPoolingWithArgmax2D,
MaxUnpooling2D (float32).

Their custom options are raw C structs, not FlexBuffers: TfLiteTransposeConvParams
(padding, stride_width, stride_height) and TfLitePoolParams (padding, stride_width,
stride_height, filter_width, filter_height, activation), each field an int32; padding
1 = SAME, 2 = VALID.
"""
from __future__ import annotations

import struct

import numpy as np

from .common import Kernel, apply_activation, compute_padding, register, window_geometry

_PADDING = {1: "SAME", 2: "VALID"}
_ACTIVATION = {0: None, 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}


def _raw(node) -> bytes | None:
    """The undecoded custom options (MediaPipe's are C structs, whatever the format says)."""
    if node.op is not None:
        return node.op.custom_options_bytes
    return node.custom_data if isinstance(node.custom_data, (bytes, bytearray)) else None


def _ints(raw, count: int) -> tuple[int, ...]:
    if not isinstance(raw, (bytes, bytearray)) or len(raw) < 4 * count:
        raise ValueError(f"custom options hold {0 if raw is None else len(raw)} bytes; "
                         f"{count} int32 fields expected")
    return struct.unpack_from(f"<{count}i", raw)


def pool_params(raw) -> dict:
    padding, sw, sh, fw, fh, act = _ints(raw, 6)
    if padding not in _PADDING:
        raise ValueError(f"unknown padding {padding}")
    return {"padding": _PADDING[padding], "stride": (sh, sw), "filter": (fh, fw),
            "activation": _ACTIVATION.get(act)}


def transpose_conv_bias(x: np.ndarray, w: np.ndarray, b: np.ndarray, strides, padding: str):
    """MediaPipe's transposed convolution: output (in-1)*stride + k - pad, where SAME pads
    max(0, k - (in-1) % stride - 1) and starts half of it before."""
    n, h, wd, ci = x.shape
    o, kh, kw, _ = w.shape
    sh, sw = strides
    ph = max(0, kh - (h - 1) % sh - 1) if padding == "SAME" else 0
    pw = max(0, kw - (wd - 1) % sw - 1) if padding == "SAME" else 0
    oh, ow = sh * (h - 1) + kh - ph, sw * (wd - 1) + kw - pw
    cols = (x.reshape(-1, ci) @ w.reshape(o * kh * kw, ci).T).reshape(n, h, wd, o, kh, kw)
    full = np.zeros((n, (h - 1) * sh + kh, (wd - 1) * sw + kw, o), np.float32)
    for i in range(kh):
        for j in range(kw):
            full[:, i:i + (h - 1) * sh + 1:sh, j:j + (wd - 1) * sw + 1:sw, :] += cols[..., i, j]
    t, l = ph // 2, pw // 2
    return np.ascontiguousarray(full[:, t:t + oh, l:l + ow]) + b


def max_pool_with_argmax(x: np.ndarray, filt, strides, padding: str, act=None):
    """Max pooling and, per output, the window position of the (first) max as
    ``y * filter_width + x + 0.1`` in float, as MediaPipe stores it."""
    n, h, w, c = x.shape
    fh, fw = filt
    sh, sw = strides
    oh, ow, pt, pl = window_geometry((h, w), (fh, fw), (sh, sw), (1, 1), padding)
    xp = np.pad(x, ((0, 0), (pt, max(0, (oh - 1) * sh + fh - pt - h)),
                    (pl, max(0, (ow - 1) * sw + fw - pl - w)), (0, 0)),
                constant_values=-np.inf)
    best = np.full((n, oh, ow, c), -np.inf, np.float32)
    arg = np.zeros((n, oh, ow, c), np.float32)
    for i in range(fh):
        for j in range(fw):
            tap = xp[:, i:i + (oh - 1) * sh + 1:sh, j:j + (ow - 1) * sw + 1:sw, :]
            better = tap > best
            best = np.where(better, tap, best)
            arg = np.where(better, np.float32(i * fw + j), arg)
    return apply_activation(best, act), arg + np.float32(0.1)


def max_unpooling(x: np.ndarray, indices: np.ndarray, filt, strides, padding: str):
    """Scatter each value to the window position its index names (out of range: dropped)."""
    n, h, w, c = x.shape
    fh, fw = filt
    sh, sw = strides
    oh, ow = h * fh, w * fw
    pt = compute_padding(sh, 1, oh, fh, h) if padding == "SAME" else 0
    pl = compute_padding(sw, 1, ow, fw, w) if padding == "SAME" else 0
    idx = indices.astype(np.int64)
    oy = np.arange(h)[None, :, None, None] * sh - pt + idx // fw
    ox = np.arange(w)[None, None, :, None] * sw - pl + idx % fw
    out = np.zeros((n, oh, ow, c), np.float32)
    ok = (oy >= 0) & (oy < oh) & (ox >= 0) & (ox < ow)
    b = np.broadcast_to(np.arange(n)[:, None, None, None], x.shape)
    ch = np.broadcast_to(np.arange(c)[None, None, None, :], x.shape)
    out[b[ok], oy[ok], ox[ok], ch[ok]] = x[ok]
    return out


@register("Convolution2DTransposeBias", versions=(1, 1 << 30))
class Convolution2DTransposeBias(Kernel):
    def init(self, ctx, node):
        padding, sw, sh = _ints(_raw(node), 3)
        return {"padding": _PADDING.get(padding, "VALID"), "stride": (sh, sw)}

    def prepare(self, ctx, node):
        x, w = ctx.input(node, 0).shape, ctx.input(node, 1).shape
        sh, sw = node.user_data["stride"]
        same = node.user_data["padding"] == "SAME"
        ph = max(0, w[1] - (x[1] - 1) % sh - 1) if same else 0
        pw = max(0, w[2] - (x[2] - 1) % sw - 1) if same else 0
        ctx.resize(ctx.output(node, 0), (x[0], sh * (x[1] - 1) + w[1] - ph,
                                         sw * (x[2] - 1) + w[2] - pw, w[0]))

    def invoke(self, ctx, node):
        out = transpose_conv_bias(ctx.value(node, 0), ctx.value(node, 1), ctx.value(node, 2),
                                  node.user_data["stride"], node.user_data["padding"])
        ctx.set_output(ctx.output(node, 0), out)


@register("MaxPoolingWithArgmax2D", versions=(1, 1 << 30))
class MaxPoolingWithArgmax2D(Kernel):
    def init(self, ctx, node):
        return pool_params(_raw(node))

    def prepare(self, ctx, node):
        p = node.user_data
        x = ctx.input(node, 0).shape
        oh, ow, _, _ = window_geometry(x[1:3], p["filter"], p["stride"], (1, 1), p["padding"])
        for o in node.outputs:
            ctx.resize(ctx.tensors[o], (x[0], oh, ow, x[3]))

    def invoke(self, ctx, node):
        p = node.user_data
        out, idx = max_pool_with_argmax(ctx.value(node, 0), p["filter"], p["stride"],
                                        p["padding"], p["activation"])
        ctx.set_output(ctx.output(node, 0), out)
        ctx.set_output(ctx.output(node, 1), idx)


@register("MaxUnpooling2D", versions=(1, 1 << 30))
class MaxUnpooling2D(Kernel):
    def init(self, ctx, node):
        return pool_params(_raw(node))

    def prepare(self, ctx, node):
        p = node.user_data
        x = ctx.input(node, 0).shape
        ctx.resize(ctx.output(node, 0), (x[0], x[1] * p["filter"][0], x[2] * p["filter"][1], x[3]))

    def invoke(self, ctx, node):
        p = node.user_data
        ctx.set_output(ctx.output(node, 0), max_unpooling(ctx.value(node, 0), ctx.value(node, 1),
                                                          p["filter"], p["stride"], p["padding"]))
