"""Spectral ops: RFFT2D (float32 -> complex64) and COMPLEX_ABS, REAL, IMAG."""
from __future__ import annotations

import numpy as np

from .common import BuiltinOperator as Op, as_int_list, define, same_shape


def rfft2d(x: np.ndarray, fft_length) -> np.ndarray:
    """Real 2-D FFT over the last two axes, cropped or zero-padded to ``fft_length``."""
    fh, fw = (int(v) for v in fft_length)
    return np.fft.rfft2(x.astype(np.float64), s=(fh, fw)).astype(np.complex64)


def _rfft_shape(ctx, node):
    fl = ctx.known_value(node, 1)
    if fl is None:
        return None
    fh, fw = as_int_list(fl)
    return [tuple(ctx.input(node, 0).shape[:-2]) + (fh, fw // 2 + 1)]


define(Op.RFFT2D, (1, 1), lambda ctx, node: rfft2d(ctx.value(node, 0), ctx.value(node, 1)),
       _rfft_shape)
define(Op.COMPLEX_ABS, (1, 1), lambda ctx, node: np.abs(ctx.value(node, 0)), same_shape)
define(Op.REAL, (1, 1), lambda ctx, node: np.real(ctx.value(node, 0)), same_shape)
define(Op.IMAG, (1, 1), lambda ctx, node: np.imag(ctx.value(node, 0)), same_shape)
