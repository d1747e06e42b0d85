"""Shared plumbing of the integer kernels: quantization parameters, windows, exact matmul.

Everything here mirrors a helper of LiteRT's kernel layer (named in each docstring) so the
kernel modules can follow the reference kernels line by line without repeating it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

try:  # einsum's C core: np.einsum's Python layers (a dispatcher and the optimize option
    # it is not given) cost about a microsecond a call, a tenth of a small depthwise layer
    from numpy._core.multiarray import c_einsum
except ImportError:  # numpy < 2
    from numpy.core.multiarray import c_einsum  # type: ignore[no-redef]

from .. import quant_math as qm
from ..padding import compute_out_size, compute_padding, window_geometry  # noqa: F401
from ..quant_math import (Rounding, check_rounding, dtype_range, saturate_cast,  # noqa: F401
                          wrap32)  # (re-exported)

Options = Mapping[str, Any]

#: Exact-integer range of float64 (a float64 BLAS matmul is exact below it).
FLOAT64_EXACT = float(1 << 53)


@dataclass(frozen=True)
class QParams:
    """A tensor's affine quantization: float32 scales and integer zero points (per axis).

    TfLiteTensor keeps ``params.scale``/``params.zero_point`` (the first channel) next to
    the per-channel arrays; :attr:`s` and :attr:`zp` are those scalars.
    """

    scale: np.ndarray
    zero_point: np.ndarray
    quantized_dimension: int = 0

    @property
    def s(self) -> float:
        """The per-tensor scale as the float32 TfLiteTensor::params.scale holds it."""
        return float(np.float32(self.scale.reshape(-1)[0])) if self.scale.size else 0.0

    @property
    def zp(self) -> int:
        return int(self.zero_point.reshape(-1)[0]) if self.zero_point.size else 0

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1


def qparams(q: Any) -> QParams:
    """Coerce ``q`` into :class:`QParams`.

    Accepts a QParams, a ``(scale, zero_point)`` pair (scalars or arrays), or anything with
    ``scale``/``zero_point`` attributes (the reader's ``Quantization``).
    """
    if isinstance(q, QParams):
        return q
    if isinstance(q, tuple) and len(q) in (2, 3):
        scale, zp = q[0], q[1]
        dim = q[2] if len(q) == 3 else 0
    else:
        scale, zp = q.scale, q.zero_point
        dim = getattr(q, "quantized_dimension", 0) or 0
    scale = np.atleast_1d(np.asarray(scale, dtype=np.float32))
    zp = np.atleast_1d(np.asarray(zp, dtype=np.int64))
    if zp.size == 0:
        zp = np.zeros(max(scale.size, 1), dtype=np.int64)
    return QParams(scale, zp, int(dim))


@dataclass(frozen=True)
class RescaleParams:
    """One quantized multiplier for input_scale / output_scale, with both zero points.

    QUANTIZE between integer types and MEAN/SUM prepare exactly this (QuantizeMultiplier
    of double(input_scale) / double(output_scale)), so they share one prepare.
    """
    multiplier: int
    shift: int
    input_zero_point: int
    output_zero_point: int
    rounding: Rounding


def prepare_rescale(input_q, output_q, rounding: Rounding = "double") -> RescaleParams:
    """QuantizeMultiplier(double(s_in) / double(s_out)) and the two zero points."""
    rounding = check_rounding(rounding)
    iq, oq = qparams(input_q), qparams(output_q)
    m, s = qm.quantize_multiplier(float(np.float64(iq.s) / np.float64(oq.s)), rounding)
    return RescaleParams(int(m), int(s), iq.zp, oq.zp, rounding)


@dataclass(frozen=True)
class ScaledBinaryParams:
    """Both inputs' offsets, one quantized multiplier and the fused-activation clamp.

    MUL and DIV prepare exactly these; they differ only in the real multiplier (MUL:
    s1 * s2 / s_out in float32, DIV: s1 / (s2 * s_out) in double), which the caller gives.
    """
    input1_offset: int
    input2_offset: int
    output_offset: int
    multiplier: int
    shift: int
    act_min: int
    act_max: int
    rounding: Rounding
    dtype: np.dtype


def prepare_scaled_binary(q1: QParams, q2: QParams, qo: QParams, real: float, options, dtype,
                          rounding: Rounding) -> ScaledBinaryParams:
    """QuantizeMultiplier(real) and the output type's fused-activation range."""
    m, s = qm.quantize_multiplier(real, rounding)
    dtype = np.dtype(dtype)
    lo, hi = fused_activation_range(activation_of(options), qo, dtype)
    return ScaledBinaryParams(-q1.zp, -q2.zp, qo.zp, int(m), int(s), lo, hi, rounding, dtype)


def f32(x: Any) -> np.float32:
    return np.float32(x)


def fused_activation_range(activation: str | None, output: QParams, dtype) -> tuple[int, int]:
    """CalculateActivationRangeQuantized.

    LiteRT clamps only for RELU, RELU6 and RELU_N1_TO_1; every other fused activation
    (TANH, SIGN_BIT, RELU_0_TO_1) leaves the full type range.
    """
    qmin, qmax = dtype_range(dtype)
    if activation in ("RELU", "RELU6", "RELU_N1_TO_1"):
        return qm.activation_range(activation, output.s, output.zp, qmin, qmax)
    return qmin, qmax


def activation_of(options: Options | None) -> str | None:
    if not options:
        return None
    act = options.get("fused_activation_function")
    return None if act in (None, "NONE", 0) else str(act)


# --------------------------------------------------------------------------- windows

@dataclass(frozen=True)
class Window:
    """Output size and leading padding of a 2-D windowed op (ComputePaddingHeightWidth)."""

    out_h: int
    out_w: int
    pad_h: int
    pad_w: int


def window(options: Options, in_h: int, in_w: int, filt_h: int, filt_w: int,
           dilation: bool = True) -> Window:
    padding = str(options.get("padding", "SAME"))
    sh, sw = int(options.get("stride_h", 1)), int(options.get("stride_w", 1))
    dh = int(options.get("dilation_h_factor", 1)) if dilation else 1
    dw = int(options.get("dilation_w_factor", 1)) if dilation else 1
    return Window(*window_geometry((in_h, in_w), (filt_h, filt_w), (sh, sw), (dh, dw), padding))


def pad_for_window(x: np.ndarray, win: Window, filt_h: int, filt_w: int, sh: int, sw: int,
                   dh: int = 1, dw: int = 1, value: int = 0) -> np.ndarray:
    """Pad an NHWC array so every window of the output lies inside it.

    The reference kernels skip taps outside the image; padding with a value that adds
    nothing to the sum (0 after the input offset, or the type minimum for max pooling)
    gives the same result.
    """
    shape = padded_shape(x.shape, win, filt_h, filt_w, sh, sw, dh, dw)
    if shape is None:
        return x
    out = np.full(shape, value, x.dtype)
    _, h, w, _ = x.shape
    out[:, win.pad_h:win.pad_h + h, win.pad_w:win.pad_w + w, :] = x
    return out


def padded_shape(shape: tuple[int, ...], win: Window, filt_h: int, filt_w: int, sh: int,
                 sw: int, dh: int = 1, dw: int = 1) -> tuple[int, int, int, int] | None:
    """The shape `pad_for_window` pads an NHWC array of ``shape`` to (the input at
    [win.pad_h, win.pad_w] in it), or None when every window lies inside the input."""
    b, h, w, c = shape
    need_h = (win.out_h - 1) * sh + (filt_h - 1) * dh + 1
    need_w = (win.out_w - 1) * sw + (filt_w - 1) * dw + 1
    after_h = max(0, need_h - h - win.pad_h)
    after_w = max(0, need_w - w - win.pad_w)
    if win.pad_h == 0 and win.pad_w == 0 and after_h == 0 and after_w == 0:
        return None
    return (b, win.pad_h + h + after_h, win.pad_w + w + after_w, c)


def patches(xp: np.ndarray, win: Window, filt_h: int, filt_w: int, sh: int, sw: int,
            dh: int = 1, dw: int = 1) -> np.ndarray:
    """im2col view: (B, OH, OW, C, KH, KW) windows of a padded NHWC array (no copy)."""
    eff_h = (filt_h - 1) * dh + 1
    eff_w = (filt_w - 1) * dw + 1
    v = np.lib.stride_tricks.sliding_window_view(xp, (eff_h, eff_w), axis=(1, 2))
    return v[:, : (win.out_h - 1) * sh + 1: sh, : (win.out_w - 1) * sw + 1: sw, :, ::dh, ::dw]


#: im2col gathers through a cached index array for inputs with fewer channels than this
#: (the tap-by-tap copy would move C-long runs) and at most `_GATHER_LIMIT` entries.
_GATHER_CHANNELS = 16
_GATHER_LIMIT = 1 << 20


@lru_cache(maxsize=32)
def _im2col_index(wp: int, c: int, out_h: int, out_w: int, filt_h: int, filt_w: int,
                  sh: int, sw: int, dh: int, dw: int) -> np.ndarray:
    """[OH*OW, KH*KW*C] positions in one flattened padded image of every patch value."""
    oy = np.arange(out_h) * sh
    ox = np.arange(out_w) * sw
    base = (oy[:, None] * wp + ox[None, :]).reshape(-1) * c
    ky, kx, ch = np.meshgrid(np.arange(filt_h) * dh, np.arange(filt_w) * dw, np.arange(c),
                             indexing="ij")
    taps = ((ky * wp + kx) * c + ch).reshape(-1)
    return (base[:, None] + taps[None, :]).astype(np.intp)


def im2col(xp: np.ndarray, win: Window, filt_h: int, filt_w: int, sh: int, sw: int,
           dh: int = 1, dw: int = 1) -> np.ndarray:
    """[B*OH*OW, KH*KW*C] patches (tap-major, channel-minor) of a padded NHWC array, in
    xp's dtype: one gather for few channels, else written one filter tap at a time
    (cheaper than a 6-D transpose)."""
    b, _, wp, c = xp.shape
    oh, ow = win.out_h, win.out_w
    if c < _GATHER_CHANNELS and oh * ow * filt_h * filt_w * c <= _GATHER_LIMIT:
        idx = _im2col_index(wp, c, oh, ow, filt_h, filt_w, sh, sw, dh, dw)
        out = np.empty((b,) + idx.shape, xp.dtype)
        # every index is valid: "wrap" skips take's bounds-checked copy into ``out``
        np.take(xp.reshape(b, -1), idx, axis=1, out=out, mode="wrap")
        return out.reshape(b * oh * ow, -1)
    cols = np.empty((b, oh, ow, filt_h, filt_w, c), dtype=xp.dtype)
    for i in range(filt_h):
        for j in range(filt_w):
            cols[:, :, :, i, j, :] = xp[:, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                                        j * dw:j * dw + (ow - 1) * sw + 1:sw, :]
    return cols.reshape(b * oh * ow, filt_h * filt_w * c)


# --------------------------------------------------------------------------- exact matmul

def int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact integer ``a @ b`` as int64.

    Uses float64 BLAS when every partial sum stays below 2**53 (bounded by
    max|a| * max|b| * K), else int64 matmul.
    """
    k = a.shape[-1]
    if a.size == 0 or b.size == 0:
        return np.matmul(a.astype(np.int64), b.astype(np.int64))
    bound = float(np.abs(a).max()) * float(np.abs(b).max()) * k
    if bound < FLOAT64_EXACT:
        return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.int64)
    return np.matmul(a.astype(np.int64), b.astype(np.int64))


#: Exact-integer range of float32 (a float32 product-sum is exact below it).
FLOAT32_EXACT = float(1 << 24)


def exact_matmul(cols: np.ndarray, mat: np.ndarray, col_bound: float,
                 mat_bound: float, float32_ok: bool = False) -> np.ndarray:
    """Exact ``cols @ mat`` of integer-valued float arrays, as float64 (or, with
    ``float32_ok``, as the float32 product itself when one chunk covers it).

    Every partial sum of one float32 product over ``k`` terms is exact while
    k * col_bound * mat_bound < 2**24, so the contraction is cut into such chunks, each a
    float32 BLAS product (twice as fast as float64), summed exactly in float64; when even
    one term can exceed that, one float64 product (exact below 2**53).
    """
    per = col_bound * mat_bound
    k = mat.shape[0]
    chunk = int(FLOAT32_EXACT // per) if per > 0 else k
    if chunk < 8 or k * per >= FLOAT64_EXACT:
        return cols.astype(np.float64, copy=False) @ mat.astype(np.float64, copy=False)
    c32 = cols.astype(np.float32, copy=False)
    m32 = mat.astype(np.float32, copy=False)
    if chunk >= k:
        product = c32 @ m32
        return product if float32_ok else product.astype(np.float64)
    out = np.zeros((cols.shape[0], mat.shape[1]), np.float64)
    for k0 in range(0, k, chunk):
        out += c32[:, k0:k0 + chunk] @ m32[k0:k0 + chunk]
    return out
