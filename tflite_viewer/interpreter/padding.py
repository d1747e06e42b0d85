"""Output sizes and padding of windowed ops (conv, depthwise, transpose conv, pooling), as
LiteRT's tflite/kernels/padding.h computes them; the float and the integer kernels both
use these.

LiteRT refuses a stride, dilation or filter size below 1 in Prepare (conv and depthwise
through ComputePaddingHeightWidthChecked, pooling with TF_LITE_ENSURE(stride > 0)), so
`compute_out_size` raises ValueError for them; the interpreter reports that as the op's
ExecutionError.
"""
from __future__ import annotations


def effective_filter_size(filt: int, dilation: int) -> int:
    """ComputeEffectiveFilterSize: the extent of a dilated filter."""
    return (filt - 1) * dilation + 1


def compute_out_size(padding: str, size: int, filt: int, stride: int, dilation: int = 1) -> int:
    """ComputeOutSizeChecked (SAME: ceil(size/stride); VALID: with the dilated filter, at
    least 0)."""
    if stride <= 0 or dilation <= 0 or filt <= 0:
        raise ValueError(f"invalid stride {stride}, dilation {dilation} or filter size {filt}")
    if padding == "SAME":
        return (size + stride - 1) // stride
    if padding == "VALID":
        return max((size + stride - effective_filter_size(filt, dilation)) // stride, 0)
    raise ValueError(f"unsupported padding {padding!r}")


def compute_padding(stride: int, dilation: int, in_size: int, filt: int, out_size: int) -> int:
    """ComputePadding: the leading pad (the trailing one takes the odd pixel)."""
    total = (out_size - 1) * stride + effective_filter_size(filt, dilation) - in_size
    return max(total, 0) // 2


def window_geometry(in_hw: tuple[int, int], filt_hw: tuple[int, int], strides: tuple[int, int],
                    dilations: tuple[int, int], padding: str) -> tuple[int, int, int, int]:
    """ComputePaddingHeightWidth: (out_h, out_w, pad_top, pad_left) of a 2-D window op."""
    oh = compute_out_size(padding, in_hw[0], filt_hw[0], strides[0], dilations[0])
    ow = compute_out_size(padding, in_hw[1], filt_hw[1], strides[1], dilations[1])
    return (oh, ow, compute_padding(strides[0], dilations[0], in_hw[0], filt_hw[0], oh),
            compute_padding(strides[1], dilations[1], in_hw[1], filt_hw[1], ow))
