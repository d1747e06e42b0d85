"""Integer (quantized) numerical cores of the interpreter, bit for bit as LiteRT computes.

One module per op family; each exposes plain numpy functions taking the input arrays, the
quantization parameters (a ``(scale, zero_point)`` pair, a :class:`QParams` or the reader's
``Quantization``), the op's options dict and ``rounding``, plus ``prepare_*`` functions
that compute once what the kernel's Prepare caches per node.

Rounding: ``rounding="double"`` (gemmlowp SaturatingRoundingDoublingHighMul followed by
RoundingDivideByPOT) is what the ai-edge-litert 2.3.0 wheel's reference kernels do
(see tests/interpreter/integer/test_rounding.py); ``"single"`` reproduces builds compiled with
TFLITE_SINGLE_ROUNDING.  FULLY_CONNECTED's LiteRT reference kernel rescales with double
precision floats instead (``fully_connected(..., float_scales=True)``, the default).
"""
from . import (batch_matmul, compare, concat_pad, conv, elementwise,  # noqa: F401
               fixedpoint, fixedpoint16, fully_connected, hybrid, hybrid_lstm, l2norm, lstm,
               lut, pooling, quantize, reduce, resize, softmax, svdf, transpose_conv)
from .common import QParams, qparams  # noqa: F401
