"""A width-stride-2 depthwise convolution's input split into its even and odd columns.

At width stride 2 output column w's tap kx reads padded column 2w + kx: phase kx % 2,
column w + kx // 2 of that phase.  With the phases stored apart, each phase's taps are
one strided view whose output rows are OW*C contiguous values, as at stride 1, and one
einsum per phase adds them; over the interleaved input numpy's loop runs C values at a
time (measured on float32: 3x faster on 16 channels, 1.6x on 48, slower from about 96,
where that loop is long enough).  The float kernel (`kernels.float_depthwise.DepthwisePlan`,
BLAS sums: numpy's order) and the 8-bit ones (exact integer sums, any order the same)
both take it.
"""
from __future__ import annotations

import numpy as np

from .common import Window, c_einsum

#: channels up to which a width-stride-2 depthwise convolution reads phases
PHASE_MAX_CHANNELS = 64
#: phase buffers up to this size are kept between calls (their border stays filled)
PHASE_KEEP_BYTES = 1 << 20


def phases_apply(x_shape: tuple[int, ...], strides: tuple[int, int],
                 dilations: tuple[int, int], multiplier: int) -> bool:
    """Whether a depthwise convolution of this form reads `WidthPhases`."""
    return strides[1] == 2 and dilations[1] == 1 and multiplier == 1 \
        and x_shape[3] <= PHASE_MAX_CHANNELS


class WidthPhases:
    """The padded input as [2, N, HP, ceil(WP / 2), C] (``padded``: the padded shape, or
    None when no window leaves the input), written straight from the input with the
    border at ``fill``; the sums of a depthwise convolution's taps over it."""

    def __init__(self, x_shape: tuple[int, ...], win: Window, padded: tuple | None,
                 kernel: tuple[int, int], row_step: int, dh: int) -> None:
        n, h, w, c = x_shape
        hp, wp = padded[1:3] if padded is not None else (h, w)
        self.shape = (2, n, hp, (wp + 1) // 2, c)
        self.rows = slice(win.pad_h, win.pad_h + h)
        #: (phase, first input column, its column in the phase, count)
        self.writes = []
        for q in (0, 1):
            first = (q - win.pad_w) % 2
            count = (w - first + 1) // 2
            if count > 0:
                self.writes.append((q, first, (first + win.pad_w - q) // 2, count))
        self.kernel, self.row_step, self.dh = kernel, row_step, dh
        self.out = (n, win.out_h, win.out_w, c)
        self._buffer: tuple = (None, None)  # (fill, buffer)

    def split(self, x: np.ndarray, dtype, fill=0) -> np.ndarray:
        """``x`` in ``dtype``, written into its phases (border ``fill``)."""
        kept_fill, buf = self._buffer
        if buf is None or buf.dtype != dtype or kept_fill != fill:
            buf = np.full(self.shape, fill, dtype)
            self._buffer = (fill, buf) if buf.nbytes <= PHASE_KEEP_BYTES else (None, None)
        for q, first, at, count in self.writes:
            buf[q, :, self.rows, at:at + count] = x[:, :, first::2]
        return buf

    def lay(self, taps: np.ndarray) -> list[np.ndarray]:
        """Per phase, its taps of ``taps`` [KH, KW, C] tiled along the output row:
        [KH, taps of the phase, OW*C] (what `sums` takes; kept by the caller)."""
        ow, c = self.out[2], taps.shape[2]
        return [np.tile(taps[:, q::2, None, :], (1, 1, ow, 1)).reshape(self.kernel[0], -1,
                                                                        ow * c)
                for q in (0, 1)]

    def sums(self, buf: np.ndarray, laid: list[np.ndarray]) -> np.ndarray:
        """The taps' sums [N, OH, OW, C] over the phases ``buf``: each phase's taps in one
        einsum, then the two added."""
        n, oh, ow, c = self.out
        s_q, s_n, s_h, s_w, s_c = buf.strides
        out = None
        for q, taps in enumerate(laid):
            if not taps.shape[1]:
                continue
            view = np.ndarray((self.kernel[0], taps.shape[1], n, oh, ow * c), buf.dtype,
                              buf, q * s_q, (s_h * self.dh, s_w, s_n, s_h * self.row_step, s_c))
            part = c_einsum("yxbhr,yxr->bhr", view, taps)
            out = part if out is None else np.add(out, part, out=out)
        return out.reshape(self.out)
