"""Kernel modules; importing this package registers every kernel (see registration.py)."""
from . import (activations, control_flow, conv, detection, elementwise, image, matmul,  # noqa: F401
               mediapipe, pooling, spectral,
               quantize, recurrent, reduce, shape_ops, pad_tile, unary_math,
               data_ops, segment_ops, stablehlo, stablehlo_control,
               stablehlo_gather, conv3d, rnn, hashtable, random_ops, reduce_window, indexing,
               text_ops, embedding)
from . import signal  # noqa: F401  (TFLite Micro's signal library: custom ops Signal*)
