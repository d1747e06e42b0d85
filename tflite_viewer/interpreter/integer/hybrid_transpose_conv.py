"""Hybrid TRANSPOSE_CONV (float input, int8 weights), as transpose_conv.cc ``EvalHybrid``
and ``reference_ops::HybridTransposeConv``.

Each batch is quantized asymmetrically to int8 (`hybrid.asymmetric_quantize`, LiteRT's
AsymmetricQuantizeFloats); every (input - offset) * filter product is scattered into the
output (`transpose_conv.col2im_accumulate`), scaled by the output channel's filter scale and
the batch's scaling factor, then the float bias is added.  The kernel adds the scaled
products one by one in float32; here the exact integer sums are scaled once, a difference
of float32 rounding well inside the float tolerance.  The fused activation (a clamp,
through CalculateActivationRange) is the caller's.
"""
from __future__ import annotations

import numpy as np

from ..padding import transpose_conv_padding
from .common import Options
from .hybrid import asymmetric_quantize
from .transpose_conv import col2im_accumulate


def hybrid_transpose_conv(input: np.ndarray, filter: np.ndarray, output_shape,
                          bias: np.ndarray | None, filter_scales: np.ndarray,
                          options: Options) -> np.ndarray:
    """The float output before the activation, for a float NHWC ``input``, an int8 OHWI
    ``filter`` with one scale per output channel or one for all (broadcast, as Prepare
    does), and a float ``bias``."""
    n = input.shape[0]
    q, sf, zp = asymmetric_quantize(np.asarray(input, np.float32).reshape(n, -1))
    x = q.astype(np.int32).reshape(input.shape) - zp.reshape(n, 1, 1, 1)
    kh, kw = filter.shape[1:3]
    output_shape = tuple(int(v) for v in output_shape)
    strides = (int(options.get("stride_h", 1)), int(options.get("stride_w", 1)))
    pads = transpose_conv_padding(str(options.get("padding", "SAME")), output_shape[1:3],
                                  (kh, kw), strides)
    acc = col2im_accumulate(x, filter.astype(np.int32), output_shape, strides, pads)
    scales = np.broadcast_to(np.asarray(filter_scales, np.float32), (filter.shape[0],))
    out = acc.astype(np.float64) * scales.astype(np.float64) * \
        sf.astype(np.float64).reshape(n, 1, 1, 1)
    out = out.astype(np.float32)
    if bias is not None:
        out = out + np.asarray(bias, np.float32).reshape(-1)
    return out
