"""MediaPipe's custom ops (float32): Convolution2DTransposeBias, MaxPoolingWithArgmax2D,
MaxUnpooling2D, and the attention ops of face landmark models: Landmarks2TransformMatrix,
TransformLandmarks and TransformTensorBilinear (mediapipe/util/tflite/operations).

The first three take raw C structs as custom options, not FlexBuffers:
TfLiteTransposeConvParams (padding, stride_width, stride_height) and TfLitePoolParams
(padding, stride_width, stride_height, filter_width, filter_height, activation), each field
an int32; padding 1 = SAME, 2 = VALID.  The attention ops take FlexBuffer maps.

MediaPipe's CPU resolver registers the attention ops' version 2 (3-D landmarks
[1, N, 3], align-corners sampling); version 1, which its GPU delegate and older graphs use,
runs here too (4-D landmarks, TransformTensorBilinear also under its v1 name
"TransformTensor").  Their arithmetic is float32 as in C++, including the places where the
C++ mixes in double constants; MediaPipe publishes no runtime that runs them outside its
graphs, so they are tested against hand computations.
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


# -- attention ops: options -----------------------------------------------------------------
def _flex(node) -> dict:
    data = node.custom_data
    if not isinstance(data, dict):
        raise ValueError(f"{node.name}: custom options must be a FlexBuffer map")
    return data


def _pairs(values) -> list[tuple[int, int]]:
    """MediaPipe's index pairs from a flat list; an odd last index pairs with itself."""
    v = [int(x) for x in (values or [])]
    pairs = [(v[2 * k], v[2 * k + 1]) for k in range(len(v) // 2)]
    if len(v) % 2:
        pairs.append((v[-1], v[-1]))
    return pairs


def _positive(opts: dict, name: str, node, kind=int):
    value = kind(opts.get(name, 0))
    if value <= 0:
        raise ValueError(f"{node.name}: incorrect {name}: {value}")
    return value


def landmarks_matrix_params(node) -> dict:
    """Landmarks2TransformMatrix's options, checked as MediaPipe's Eval checks them."""
    o = _flex(node)
    p = {"left": int(o.get("left_rotation_idx", 0)), "right": int(o.get("right_rotation_idx", 0))}
    if node.version == 1:
        p["subset"] = _pairs(o.get("subset"))
        p["input_hw"] = tuple(int(v) for v in o.get("input_hw", (0, 0)))
        p["output_hw"] = tuple(int(v) for v in o.get("output_hw", (0, 0)))
        p["range"] = _positive(o, "landmarks_range", node)
        p["multiplier"] = np.float32(o.get("bbox_size_multiplier", 0.0))
        if int(o.get("dimensions", 0)) != 3 or p["multiplier"] == 0 or \
                min(p["input_hw"] + p["output_hw"]) <= 0:
            raise ValueError(f"{node.name}: needs dimensions 3, a nonzero "
                             "bbox_size_multiplier and positive input_hw, output_hw")
    else:
        p["subset"] = _pairs(o.get("subset_idxs"))
        p["target"] = np.float32(o.get("target_rotation_radians", 0.0))
        p["out_h"] = _positive(o, "output_height", node)
        p["out_w"] = _positive(o, "output_width", node)
        p["scale_x"] = np.float32(_positive(o, "scale_x", node, float))
        p["scale_y"] = np.float32(_positive(o, "scale_y", node, float))
    if not p["subset"] or min(min(pair) for pair in p["subset"]) < 0 or min(p["left"], p["right"]) < 0:
        raise ValueError(f"{node.name}: the landmark subset is empty or an index is negative")
    return p


# -- attention ops: float32 arithmetic in C++'s order ---------------------------------------
F32 = np.float32


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """MediaPipe's Mat3/Mat4 product: float32 sums over k in order, from 0."""
    acc = np.zeros((a.shape[0], b.shape[1]), F32)
    for k in range(a.shape[1]):
        acc = acc + a[:, k:k + 1] * b[k:k + 1, :]
    return acc


def _rotation(r: np.float32, size: int = 3) -> np.ndarray:
    m = np.eye(size, dtype=F32)
    c, s = np.cos(r, dtype=F32), np.sin(r, dtype=F32)
    m[:2, :2] = [[c, -s], [s, c]]
    return m


def landmarks_to_matrix_v2(landmarks: np.ndarray, p: dict) -> np.ndarray:
    """The 4x4 matrix from the crop (of output_width x output_height pixels) around the
    subset, rotated so that left -> right points at target_rotation_radians."""
    lm = landmarks.reshape(-1, 3).astype(F32)
    left, right = lm[p["left"]], lm[p["right"]]
    rotation = p["target"] - np.arctan2(right[1] - left[1], right[0] - left[0], dtype=F32)
    idx = [i for pair in p["subset"] for i in pair]
    pts = np.stack([lm[idx, 0], lm[idx, 1], np.ones(len(idx), F32)])
    rotated = _matmul(_rotation(rotation), pts)
    lo, hi = rotated.min(axis=1), rotated.max(axis=1)
    width, height = hi[0] - lo[0], hi[1] - lo[1]
    centre = np.array([[(lo[0] + hi[0]) / F32(2)], [(lo[1] + hi[1]) / F32(2)], [lo[2]]], F32)
    crop = _matmul(_rotation(-rotation), centre)[:, 0]
    t = np.eye(4, dtype=F32)
    shift = np.eye(4, dtype=F32)
    shift[0, 3], shift[1, 3] = crop[0], crop[1]
    t = _matmul(t, shift)
    t = _matmul(t, _rotation(-rotation, 4))
    scale = np.diag([p["scale_x"] * width / F32(p["out_w"]),
                     p["scale_y"] * height / F32(p["out_h"]), 1, 1]).astype(F32)
    t = _matmul(t, scale)
    shift2 = np.eye(4, dtype=F32)
    shift2[0, 3], shift2[1, 3] = F32(-1.0 * (p["out_w"] / 2.0)), F32(-1.0 * (p["out_h"] / 2.0))
    return _matmul(t, shift2).reshape(1, 4, 4)


def landmarks_to_matrix_v1(landmarks: np.ndarray, p: dict) -> np.ndarray:
    """Version 1: the inverse transform of a rotated, scaled bounding box of the subset,
    from output pixels to input pixels, in the [1, 4, 4] layout the v1 ops read."""
    lm = landmarks.reshape(-1, 3).astype(F32)
    left, right = lm[p["left"]], lm[p["right"]]
    alpha = -np.arctan((right[1] - left[1]) / (right[0] - left[0]), dtype=F32)
    c, s = np.cos(alpha, dtype=F32), np.sin(alpha, dtype=F32)
    idx = [i for pair in p["subset"] for i in pair]
    x, y = lm[idx, 0], lm[idx, 1]
    rx, ry = x * c - y * s, x * s + y * c
    hi = np.maximum(np.max(rx), F32(-100000)), np.maximum(np.max(ry), F32(-100000))
    lo = np.minimum(np.min(rx), F32(100000)), np.minimum(np.min(ry), F32(100000))
    rng = F32(p["range"])
    bbox = (hi[0] - lo[0]) * p["multiplier"], (hi[1] - lo[1]) * p["multiplier"]
    scale = np.diag([bbox[0] / rng, bbox[1] / rng, 1]).astype(F32)
    mx, my = F32(float(hi[0] + lo[0]) / 2.0), F32(float(hi[1] + lo[1]) / 2.0)
    cn, sn = np.cos(-alpha, dtype=F32), np.sin(-alpha, dtype=F32)
    rmx, rmy = mx * cn - my * sn, mx * sn + my * cn
    rotation = np.array([[cn, -sn, float(rmx / rng) * 2.0 - 1.0],
                         [sn, cn, float(rmy / rng) * 2.0 - 1.0], [0, 0, 1]], F32)
    (ih, iw), (oh, ow) = p["input_hw"], p["output_hw"]
    to_relative = np.array([[2.0 / (ow - 1.0), 0, -1], [0, 2.0 / (oh - 1.0), -1], [0, 0, 1]], F32)
    to_absolute = np.array([[(iw - 1.0) / 2.0, 0, (iw - 1.0) / 2.0],
                            [0, (ih - 1.0) / 2.0, (ih - 1.0) / 2.0], [0, 0, 1]], F32)
    itm = _matmul(_matmul(_matmul(to_absolute, rotation), scale), to_relative)
    out = np.zeros((4, 4), F32)
    out[0, :2], out[0, 3] = itm[0, :2], itm[0, 2]
    out[1, :2], out[1, 3] = itm[1, :2], itm[1, 2]
    out[2, :3] = itm[2]
    out[3, 3] = 1
    return out.reshape(1, 4, 4)


def _dot_xy1(row: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """MediaPipe's DotProduct(row, (x, y, 0, 1)) in float32, left to right."""
    return ((row[0] * x + row[1] * y) + row[2] * F32(0)) + row[3] * F32(1)


def transform_landmarks(landmarks: np.ndarray, matrix: np.ndarray, dims: int,
                        scale: float = 1.0) -> np.ndarray:
    """x, y of every ``dims``-value landmark through the matrix's first two rows (its
    translation times ``scale``); z kept."""
    m = matrix.reshape(-1)[:8].astype(F32)
    xrow, yrow = m[:4].copy(), m[4:8].copy()
    xrow[3], yrow[3] = xrow[3] * F32(scale), yrow[3] * F32(scale)
    lm = landmarks.astype(F32).reshape(-1, dims)
    out = lm.copy()
    out[:, 0] = _dot_xy1(xrow, lm[:, 0], lm[:, 1])
    out[:, 1] = _dot_xy1(yrow, lm[:, 0], lm[:, 1])
    return out.reshape(landmarks.shape)


def transform_tensor_bilinear(x: np.ndarray, matrix: np.ndarray, out_hw: tuple[int, int],
                              channels: int, align_corners: bool) -> np.ndarray:
    """Sample ``x`` [1, H, W, C] at the matrix's image of each output pixel (x, y);
    pixels mapped outside the input are 0, neighbours outside it read as 0."""
    m = matrix.reshape(-1)[:8].astype(F32)
    xrow, yrow = m[:4].copy(), m[4:8].copy()
    if align_corners:  # T -> S * T * A: shift by half a pixel on both sides
        for row in (xrow, yrow):
            row[3] = F32(float(row[3]) + (float(row[0]) * 0.5 + float(row[1]) * 0.5 - 0.5))
    h, w = x.shape[1], x.shape[2]
    oh, ow = out_hw
    oy, ox = np.meshgrid(np.arange(oh, dtype=F32), np.arange(ow, dtype=F32), indexing="ij")
    tx, ty = _dot_xy1(xrow, ox, oy), _dot_xy1(yrow, ox, oy)
    inside = ~((tx < 0) | (tx > F32(w - 1)) | (ty < 0) | (ty > F32(h - 1)))
    fx, fy = np.floor(tx), np.floor(ty)
    ix = np.where(inside, fx, 0).astype(np.int64)
    iy = np.where(inside, fy, 0).astype(np.int64)
    img = x[0, :, :, :channels].astype(F32)

    def read(yy, xx):
        ok = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        v = img[np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]
        return np.where(ok[..., None], v, F32(0)).astype(np.float64)

    q11, q21, q12, q22 = read(iy, ix), read(iy, ix + 1), read(iy + 1, ix), read(iy + 1, ix + 1)
    rc = (tx - fx)[..., None]
    lc = (ty - fy)[..., None]
    rc64, lc64 = rc.astype(np.float64), lc.astype(np.float64)
    # C++: (1.0 - rc) * q in double, rc * q in float, summed in double, stored as float
    upper = ((1.0 - rc64) * q11 + (rc * q21.astype(F32)).astype(np.float64)).astype(F32)
    lower = ((1.0 - rc64) * q12 + (rc * q22.astype(F32)).astype(np.float64)).astype(F32)
    result = ((lc * lower).astype(np.float64) + (1.0 - lc64) * upper).astype(F32)
    return np.where(inside[..., None], result, F32(0))[None]


# -- attention ops: kernels -----------------------------------------------------------------
@register("Landmarks2TransformMatrix", versions=(1, 2))
class Landmarks2TransformMatrix(Kernel):
    """Landmarks -> a [1, 4, 4] crop transform (v1: 4-D landmarks [1, 1, 1, 3N]; v2: 3-D
    landmarks [1, N, 3])."""

    def check(self, ctx, node):
        try:
            landmarks_matrix_params(node)
        except ValueError as exc:
            return str(exc)
        return super().check(ctx, node)

    def init(self, ctx, node):
        return landmarks_matrix_params(node)

    def prepare(self, ctx, node):
        shape = ctx.input(node, 0).shape
        rank = 4 if node.version == 1 else 3
        if len(shape) != rank or int(np.prod(shape)) % 3:
            raise ValueError(f"{node.name} v{node.version}: landmarks must be {rank}-D with "
                             f"3 values per landmark, got {list(shape)}")
        p = node.user_data
        n = int(np.prod(shape)) // 3
        if max(p["left"], p["right"], *(i for pair in p["subset"] for i in pair)) >= n:
            raise ValueError(f"{node.name}: a landmark index is beyond the {n} landmarks")
        ctx.resize(ctx.output(node, 0), (1, 4, 4))

    def invoke(self, ctx, node):
        compute = landmarks_to_matrix_v1 if node.version == 1 else landmarks_to_matrix_v2
        ctx.set_output(ctx.output(node, 0), compute(ctx.value(node, 0), node.user_data))


@register("TransformLandmarks", versions=(1, 2))
class TransformLandmarks(Kernel):
    """Landmarks through a transform matrix (v1: [1, H, W, C] with options dimensions and
    scale; v2: [1, N, 2 or 3])."""

    def init(self, ctx, node):
        if node.version == 1:
            o = node.custom_data if isinstance(node.custom_data, dict) else {}
            return {"dims": int(o.get("dimensions", 3)), "scale": float(o.get("scale", 1.0))}
        return {"dims": None, "scale": 1.0}

    def prepare(self, ctx, node):
        shape = ctx.input(node, 0).shape
        rank = 4 if node.version == 1 else 3
        dims = node.user_data["dims"] or (shape[-1] if len(shape) == 3 else 0)
        if len(shape) != rank or shape[0] != 1 or dims not in (2, 3) or shape[-1] % dims \
                or node.user_data["scale"] == 0 or ctx.input(node, 1).shape is None \
                or int(np.prod(ctx.input(node, 1).shape)) < 8:
            raise ValueError(f"{node.name} v{node.version}: needs {rank}-D landmarks of batch "
                             f"1 with 2 or 3 values each, a nonzero scale and a 4x4 matrix; "
                             f"got {list(shape)}, dimensions {dims}")
        ctx.resize(ctx.output(node, 0), shape)

    def invoke(self, ctx, node):
        x = ctx.value(node, 0)
        dims = node.user_data["dims"] or x.shape[-1]
        out = transform_landmarks(x, ctx.value(node, 1), dims, node.user_data["scale"])
        ctx.set_output(ctx.output(node, 0), out)


class _TransformTensor(Kernel):
    def init(self, ctx, node):
        o = node.custom_data if isinstance(node.custom_data, dict) else {}
        if node.version == 1:
            if o.get("mode", "bilinear") not in ("bilinear", b"bilinear"):
                raise ValueError(f"{node.name}: only bilinear interpolation is supported")
            size = tuple(int(v) for v in o.get("output_size", (0, 0)))
            return {"hw": size, "align_corners": False}
        return {"hw": (int(o.get("output_height", 0)), int(o.get("output_width", 0))),
                "align_corners": True}

    def check(self, ctx, node):
        o = node.custom_data if isinstance(node.custom_data, dict) else {}
        if node.version == 1 and o.get("mode", "bilinear") not in ("bilinear", b"bilinear"):
            return f"{node.name}: mode {o.get('mode')!r}: only bilinear interpolation exists"
        return super().check(ctx, node)

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        declared = tuple(ctx.output(node, 0).model_tensor.shape)
        if len(declared) == 4:  # MediaPipe's kernel keeps the model's output shape
            out = declared
        else:
            out = (1,) + node.user_data["hw"] + (x[3] if len(x) == 4 else 0,)
        if len(x) != 4 or out[0] != 1 or min(out[1:3]) <= 0 or not 0 < out[3] <= x[3]:
            raise ValueError(f"{node.name} v{node.version}: needs a 4-D input and an output "
                             f"[1, h, w, channels <= input's]; got {list(x)} -> {list(out)}")
        ctx.resize(ctx.output(node, 0), out)

    def invoke(self, ctx, node):
        out = ctx.output(node, 0)
        result = transform_tensor_bilinear(ctx.value(node, 0), ctx.value(node, 1),
                                           out.shape[1:3], out.shape[3],
                                           node.user_data["align_corners"])
        ctx.set_output(out, result)


@register("TransformTensorBilinear", versions=(1, 2))
class TransformTensorBilinear(_TransformTensor):
    """Bilinear resampling through a transform matrix (v2: align corners; v1 without)."""


@register("TransformTensor", versions=(1, 1))
class TransformTensor(_TransformTensor):
    """TransformTensorBilinear's version 1 under the name MediaPipe's GPU path gives it."""
