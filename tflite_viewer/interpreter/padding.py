"""Output sizes and padding of windowed ops (conv, depthwise, transpose conv, pooling), as
LiteRT's tflite/kernels/padding.h computes them, and transpose convolution's scatter of
products into its output; the float and the integer kernels both use these.

LiteRT refuses a stride, dilation or filter size below 1 in Prepare (conv and depthwise
through ComputePaddingHeightWidthChecked, pooling with TF_LITE_ENSURE(stride > 0)), so
`compute_out_size` raises ValueError for them; the interpreter reports that as the op's
ExecutionError.  Conv and depthwise also refuse a VALID window longer than their input
(`window_geometry` with ``op``: a `KernelError` naming the shapes).
"""
from __future__ import annotations

import numpy as np

from .errors import KernelError


def effective_filter_size(filt: int, dilation: int) -> int:
    """ComputeEffectiveFilterSize: the extent of a dilated filter."""
    return (filt - 1) * dilation + 1


def compute_out_size(padding: str, size: int, filt: int, stride: int, dilation: int = 1) -> int:
    """ComputeOutSize (SAME: ceil(size/stride); VALID: with the dilated filter), 0 where
    LiteRT's checked form fails (a window larger than the input, see `out_size_checked`)."""
    out = out_size_checked(padding, size, filt, stride, dilation)
    return 0 if out is None else out


def out_size_checked(padding: str, size: int, filt: int, stride: int,
                     dilation: int = 1) -> int | None:
    """ComputeOutSizeChecked: the output size, or None where LiteRT's check fails (VALID
    padding with the dilated filter longer than the input by a stride or more: the C
    division truncates toward zero, so a shortfall under one stride still gives 0)."""
    if stride <= 0 or dilation <= 0 or filt <= 0:
        raise ValueError(f"invalid stride {stride}, dilation {dilation} or filter size {filt}")
    if padding == "SAME":
        value = size + stride - 1
    elif padding == "VALID":
        value = size + stride - effective_filter_size(filt, dilation)
    else:
        raise ValueError(f"unsupported padding {padding!r}")
    out = value // stride if value >= 0 else -(-value // stride)  # C's truncation
    return None if out < 0 else out


def compute_padding(stride: int, dilation: int, in_size: int, filt: int, out_size: int) -> int:
    """ComputePadding: the leading pad (the trailing one takes the odd pixel)."""
    total = (out_size - 1) * stride + effective_filter_size(filt, dilation) - in_size
    return max(total, 0) // 2


def window_geometry(in_hw: tuple[int, int], filt_hw: tuple[int, int], strides: tuple[int, int],
                    dilations: tuple[int, int], padding: str,
                    op: str | None = None) -> tuple[int, int, int, int]:
    """ComputePaddingHeightWidth: (out_h, out_w, pad_top, pad_left) of a 2-D window op.

    With ``op`` (the op's name) it is ComputePaddingHeightWidthChecked, what CONV_2D and
    DEPTHWISE_CONV_2D prepare with: a window that does not fit the input is a
    `KernelError` saying so with the shapes.  Without, as the pooling kernels compute it:
    the width is checked first, and a failed check leaves that size and the ones not yet
    computed at 0 (a failed width: both 0; a failed height: the height)."""
    sizes = [out_size_checked(padding, in_hw[k], filt_hw[k], strides[k], dilations[k])
             for k in (0, 1)]
    if None in sizes and op is not None:
        k = sizes.index(None)
        raise _window_too_large(op, ("height", "width")[k], in_hw[k], filt_hw[k],
                                strides[k], dilations[k], padding)
    if sizes[1] is None:
        sizes = [0, 0]
    oh, ow = sizes[0] or 0, sizes[1]
    return (oh, ow, compute_padding(strides[0], dilations[0], in_hw[0], filt_hw[0], oh),
            compute_padding(strides[1], dilations[1], in_hw[1], filt_hw[1], ow))


def _window_too_large(op: str, side: str, size: int, filt: int, stride: int, dilation: int,
                      padding: str) -> Exception:
    extent = effective_filter_size(filt, dilation)
    dilated = f"{extent} ({filt} taps at dilation {dilation})" if dilation > 1 else str(extent)
    return KernelError(f"{op}: the input's {side} {size} is smaller than the filter's "
                       f"{side} {dilated} with {padding} padding and stride {stride}: no "
                       "window fits, and LiteRT's Prepare refuses it")


def transpose_conv_padding(padding: str, out_hw: tuple[int, int], filt_hw: tuple[int, int],
                           strides: tuple[int, int]) -> tuple[int, int]:
    """(pad_top, pad_left) of TRANSPOSE_CONV: the padding of the forward convolution that
    maps its output back to its input (ComputePaddingHeightWidth, dilation 1)."""
    fh = compute_out_size(padding, out_hw[0], filt_hw[0], strides[0])
    fw = compute_out_size(padding, out_hw[1], filt_hw[1], strides[1])
    return (compute_padding(strides[0], 1, out_hw[0], filt_hw[0], fh),
            compute_padding(strides[1], 1, out_hw[1], filt_hw[1], fw))


def scatter_taps(products: np.ndarray, strides: tuple[int, int], pads: tuple[int, int],
                 out_hw: tuple[int, int]) -> np.ndarray:
    """TRANSPOSE_CONV's col2im: ``products`` [N, H, W, O, KH, KW] (each input pixel times
    each filter tap) added into the [N, OH, OW, O] output at stride, less the leading pads;
    contributions outside the output are dropped, as the kernel does."""
    n, h, w, o, kh, kw = products.shape
    (sh, sw), (pt, pl), (oh, ow) = strides, pads, out_hw
    full = np.zeros((n, max((h - 1) * sh + kh, pt + oh), max((w - 1) * sw + kw, pl + ow), o),
                    dtype=products.dtype)
    for i in range(kh):
        for j in range(kw):
            full[:, i:i + (h - 1) * sh + 1:sh, j:j + (w - 1) * sw + 1:sw, :] += products[..., i, j]
    return full[:, pt:pt + oh, pl:pl + ow, :]
