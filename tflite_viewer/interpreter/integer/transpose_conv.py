"""Quantized TRANSPOSE_CONV: uint8 per-tensor, int8 per-channel, int16x8 (int32 or int64 bias).

Mirrors ``reference_ops::TransposeConv`` (uint8: ``(x + input_offset) * (f + filter_offset)``)
and ``reference_integer_ops::TransposeConv`` (int8 and int16: ``(x + input_offset) * f``,
symmetric filters), with the multipliers of transpose_conv.cc Prepare
(``PopulateConvolutionQuantizationParams``, as for CONV_2D).  The reference kernels scatter
every input pixel times the filter into a zeroed scratch buffer; here one exact matmul
gives every (pixel, tap) product and one strided add per filter tap scatters them (col2im).

The scratch buffer is int32 for 8-bit inputs and for int16 inputs whose
``quantized_bias_type`` is INT32 (then requantized with the 32-bit
MultiplyByQuantizedMultiplier); otherwise int16 inputs accumulate in int64 and use the
16-bit reduced multiplier overload.  The padding is that of the forward convolution
output -> input (``ComputePaddingHeightWidth`` on the output size, no dilation).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import quant_math as qm
from ..padding import scatter_taps, transpose_conv_padding
from .common import (Options, Rounding, activation_of, check_rounding,
                     fused_activation_range, int_matmul, qparams, wrap32)
from .conv import FilterParams, filter_multipliers


@dataclass(frozen=True)
class TransposeConvParams(FilterParams):
    int64_scratch: bool  # int16 inputs without an INT32 quantized_bias_type


def prepare_transpose_conv(input_q, filter_q, output_q, options: Options, input_dtype,
                           channels: int, rounding: Rounding = "double",
                           quantized_bias_type: str | None = None) -> TransposeConvParams:
    """transpose_conv.cc Prepare for quantized inputs (uint8, int8, int16)."""
    rounding = check_rounding(rounding)
    iq, fq, oq = qparams(input_q), qparams(filter_q), qparams(output_q)
    dtype = np.dtype(input_dtype)
    mult, shift, filter_offset = filter_multipliers(iq, fq, oq, dtype, channels, rounding)
    lo, hi = fused_activation_range(activation_of(options), oq, dtype)
    bias_type = quantized_bias_type or options.get("quantized_bias_type")
    int64_scratch = dtype == np.int16 and str(bias_type) != "INT32"
    return TransposeConvParams(dtype, mult, shift, -iq.zp, filter_offset, oq.zp, lo, hi,
                               rounding, int64_scratch=int64_scratch)


def col2im_accumulate(input_off: np.ndarray, filt: np.ndarray, output_shape, strides,
                      pads) -> np.ndarray:
    """sum over (input pixel, tap) of input * filter scattered into the output, as int64.

    ``input_off`` is the NHWC input with its offset applied, ``filt`` the OHWI filter with
    its offset; contributions falling outside the output are dropped, as the kernel does.
    """
    n, h, w, ci = input_off.shape
    o, kh, kw, _ = filt.shape
    _, oh, ow, _ = (int(v) for v in output_shape)
    prod = int_matmul(input_off.reshape(-1, ci), filt.reshape(o * kh * kw, ci).T)
    return scatter_taps(prod.reshape(n, h, w, o, kh, kw), strides, pads, (oh, ow))


def transpose_conv(input: np.ndarray, filter: np.ndarray, output_shape, bias: np.ndarray | None,
                   input_q=None, filter_q=None, output_q=None, options: Options | None = None,
                   rounding: Rounding = "double", params: TransposeConvParams | None = None,
                   quantized_bias_type: str | None = None) -> np.ndarray:
    """TRANSPOSE_CONV of an NHWC input with an OHWI filter into ``output_shape`` (NHWC)."""
    options = options or {}
    out_ch, kh, kw, _ = filter.shape
    p = params or prepare_transpose_conv(input_q, filter_q, output_q, options, input.dtype,
                                         out_ch, rounding, quantized_bias_type)
    output_shape = tuple(int(v) for v in output_shape)
    strides = (int(options.get("stride_h", 1)), int(options.get("stride_w", 1)))
    pads = transpose_conv_padding(str(options.get("padding", "SAME")), output_shape[1:3],
                                  (kh, kw), strides)
    x = input.astype(np.int32) + p.input_offset
    f = filter.astype(np.int32) + p.filter_offset
    acc = col2im_accumulate(x, f, output_shape, strides, pads)
    if not p.int64_scratch:
        acc = wrap32(acc)
    if bias is not None:
        acc = acc + bias.astype(np.int64).reshape(-1)
    return qm.requantize(acc if p.int64_scratch else wrap32(acc), p.multiplier, p.shift,
                         p.output_offset, p.act_min, p.act_max, p.input_dtype, p.rounding,
                         int64_acc=p.int64_scratch)
