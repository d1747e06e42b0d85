"""Float DEPTHWISE_CONV_2D: `DepthwisePlan`, what a node computes with for one input shape.

With compiled kernels (`interpreter.compiled`) one loop adds each output's taps in the
reference kernel's order, skipping those outside the image, and adds the bias and clamps
in cache: LiteRT's reference bits whatever float sums are asked, 3-5 times faster than
numpy's forms on mobilenet_v2's layers.  Without them, the taps are added in one einsum
over views of the padded input (BLAS sums: numpy's order; at a width stride over 1, of its
planes of columns: `WidthTaps`) or one tap at a time over the whole image (the reference
order, its bits).

Between blocks of output rows (the compiled loop) or between taps (the reference order)
the plan calls ``checkpoint(fraction done)``, so that a stop request ends a convolution of
seconds inside it.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import compiled
from ..integer.common import Window, c_einsum
from ..integer.conv import PAD_KEEP_BYTES
from .float_conv import BLOCK_BYTES, Checkpoint, PadBuffer, TiledBias, clamp
from .common import clip_ufunc, infinity


#: channels from which a depthwise convolution of width stride over 1 reads its input
#: itself (numpy's loop runs C values at a time, long enough): mobilenet_v2's 12x12x96
#: layer of stride 2 is 8% faster by planes, its 6x6x192 one 20% slower
PLANE_CHANNELS = 128


class WidthTaps:
    """A depthwise convolution's padded input laid [KW, N, HP, OW, C] for a width stride
    over 1: plane kx holds the padded columns kx, kx + SW, kx + 2 SW ..., one per output
    column, so every tap (ky, kx) is a view whose output rows are OW*C contiguous values
    and one einsum adds all the taps, as at width stride 1 (over the input itself numpy's
    loop runs C values at a time; mobilenet_v2's 48x48x48 layer of stride 2: 59 us, 84 us
    as even and odd columns).  The planes are written straight from the input, a pixel of
    C values at a time as one void element; the border stays zero in a kept buffer."""

    def __init__(self, x_shape: tuple[int, ...], win: Window, padded: tuple | None,
                 kernel: tuple[int, int], strides: tuple[int, int], dh: int) -> None:
        n, h, w, c = x_shape
        (kh, kw), (sh, sw) = kernel, strides
        self.shape = (kw, n, padded[1] if padded is not None else h, win.out_w, c)
        self.rows = slice(win.pad_h, win.pad_h + h)
        #: (plane, its output columns written, the input columns they read) per plane
        self.writes = []
        for kx in range(kw):  # output column o reads input column o * SW + kx - pad_left
            first = max(0, -(-(win.pad_w - kx) // sw))
            last = min(win.out_w - 1, (w - 1 + win.pad_w - kx) // sw)
            if last >= first:
                at = first * sw + kx - win.pad_w
                self.writes.append((kx, slice(first, last + 1),
                                    slice(at, at + (last - first) * sw + 1, sw)))
        self.view = ((kh, kw, n, win.out_h, win.out_w * c), dh, sh)
        self.pixel = np.dtype((np.void, c * 4))
        self._kept: tuple = (None, None)  # (the taps view, the planes' writes) of a kept buffer

    def _planes(self) -> tuple[np.ndarray, list]:
        """A zeroed buffer's taps view and (the pixels each plane writes, the input columns
        they read)."""
        buf = np.zeros(self.shape, np.float32)
        (kh, kw, n, oh, row), dh, sh = self.view
        s_k, s_n, s_h, _, s_c = buf.strides
        taps = np.ndarray((kh, kw, n, oh, row), np.float32, buf, 0,
                          (s_h * dh, s_k, s_n, s_h * sh, s_c))
        taps.flags.writeable = False
        writes = [(buf[kx].view(self.pixel)[:, self.rows, outs, 0], (Ellipsis, cols))
                  for kx, outs, cols in self.writes]
        if buf.nbytes <= PAD_KEEP_BYTES:
            self._kept = (taps, writes)
        return taps, writes

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """[KH, KW, N, OH, OW*C]: every tap's inputs over the planes of ``x`` (float32)."""
        taps, writes = self._kept
        if taps is None:
            taps, writes = self._planes()
        pixels = np.ascontiguousarray(x).view(self.pixel)[..., 0]
        for plane, cols in writes:
            np.copyto(plane, pixels[cols])
        return taps


class DepthwisePlan:
    """What a float DEPTHWISE_CONV_2D of one input shape computes with: the padding and,
    for BLAS sums, the view of every tap over the padded input (made once for a kept
    buffer; for a width stride over 1 over its `WidthTaps`) and the filter laid along the
    output row (kept for the filter array)."""

    def __init__(self, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                 strides: tuple[int, int], dilations: tuple[int, int],
                 geometry: tuple[int, int, int, int]) -> None:
        self.x_shape = tuple(x_shape)
        self.kernel, self.strides, self.dilations = tuple(w_shape[1:3]), strides, dilations
        self.mult = w_shape[3] // x_shape[3]
        self.pad = PadBuffer(x_shape, geometry, self.kernel, strides, dilations)
        self.bias_rows = TiledBias(self.pad.win.out_h * self.pad.win.out_w)
        self._view: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
        self._filter: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
        self._compiled: tuple = (None, None)  # ((filter, bias, bounds), `compiled`'s loop)
        #: a width stride over 1, undilated across, no multiplier, under `PLANE_CHANNELS`
        #: channels: the input read by planes
        self.width_taps = WidthTaps(self.x_shape, self.pad.win, self.pad.shape, self.kernel,
                                    strides, dilations[0]) \
            if strides[1] > 1 and dilations[1] == 1 and self.mult == 1 \
            and x_shape[3] < PLANE_CHANNELS else None

    def _taps(self, xp: np.ndarray) -> np.ndarray:
        """[KH, KW, N, OH, OW*C] (width stride 1: each output row's values contiguous) or
        [KH, KW, N, OH, OW, C]: every tap's inputs, a read-only view of ``xp``."""
        base, view = self._view
        if base is xp:
            return view
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.strides, self.dilations
        win, (n, _, _, c) = self.pad.win, xp.shape
        s_n, s_h, s_w, s_c = xp.strides
        if sw == 1:
            shape, steps = (kh, kw, n, win.out_h, win.out_w * c), (s_h * sh, s_c)
        else:
            shape, steps = (kh, kw, n, win.out_h, win.out_w, c), (s_h * sh, s_w * sw, s_c)
        # np.ndarray over xp's memory: as_strided's own wrapping costs more than the
        # einsum of a small tensor
        view = np.ndarray(shape, xp.dtype, xp, 0, (s_h * dh, s_w * dw, s_n) + steps)
        view.flags.writeable = False
        self._view = (xp, view) if xp is self.pad.buffer and self.mult == 1 else (None, None)
        return view

    def _weights(self, w: np.ndarray) -> np.ndarray:
        """The filter as the einsum of `_taps` or `WidthTaps` takes it: [KH, KW, OW*C]
        tiled along the row (width stride 1, or planes), else [KH, KW, OW, C] broadcast
        (a view)."""
        source, laid = self._filter
        if source is not w:
            (kh, kw), ow, oc = self.kernel, self.pad.win.out_w, w.shape[3]
            taps = w.reshape(kh, kw, 1, oc)
            laid = np.tile(taps, (1, 1, ow, 1)).reshape(kh, kw, ow * oc) \
                if self.strides[1] == 1 or self.width_taps is not None \
                else np.broadcast_to(taps, (kh, kw, ow, oc))
            self._filter = (w, laid)
        return laid

    def compiled(self, w: np.ndarray, bias: np.ndarray | None, bounds: tuple | None
                 ) -> Callable[[np.ndarray, Checkpoint | None], np.ndarray] | None:
        """The compiled loop (`compiled_loops.depthwise_f32`, or its row form at a width
        stride of 1 without a multiplier) with this float32 filter, bias and bounds, as a
        function of a float32 input and a checkpoint; None when compiled kernels are off.

        It adds the taps in the reference kernel's order and skips those outside the
        image, so its values are LiteRT's reference bits whatever sums are asked, at
        numpy's einsum speed or better (`compiled`).  When a checkpoint is given, the
        output rows are computed in blocks of about a million multiply-adds
        (`BLOCK_BYTES` of them), and it is called between blocks."""
        loops = compiled.loops()
        if loops is None:
            return None
        source, kept = self._compiled
        if source is not None and source[0] is w and source[1] is bias and source[2] == bounds:
            return kept
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.strides, self.dilations
        win, depth = self.pad.win, w.shape[3]
        shape = (self.x_shape[0], win.out_h, win.out_w, depth)
        taps = np.ascontiguousarray(w.reshape(kh, kw, depth))
        b = np.zeros(depth, np.float32) if bias is None \
            else np.ascontiguousarray(bias.reshape(depth), np.float32)
        low = np.float32(-np.inf if bounds is None else bounds[0])
        high = np.float32(np.inf if bounds is None or bounds[1] is None else bounds[1])
        rows_form = sw == 1 and self.mult == 1
        if rows_form:
            taps = np.ascontiguousarray(np.tile(taps, (1, 1, win.out_w)))
            b = np.tile(b, win.out_w)
        per_row = max(1, shape[0] * win.out_w * depth * kh * kw)
        block = max(1, BLOCK_BYTES // per_row)

        def rows(x: np.ndarray, out: np.ndarray, y0: int, y1: int) -> None:
            if rows_form:
                loops.depthwise_rows_f32(x, taps, b, low, high, sh, dh, dw, win.pad_h,
                                         win.pad_w, y0, y1, out)
            else:
                loops.depthwise_f32(x, taps, b, low, high, sh, sw, dh, dw, win.pad_h,
                                    win.pad_w, self.mult, y0, y1, out)

        def run(x: np.ndarray, checkpoint: Checkpoint | None) -> np.ndarray:
            x = np.ascontiguousarray(x)
            out = np.empty((x.shape[0],) + shape[1:], np.float32)
            if checkpoint is None or block >= win.out_h:
                rows(x, out, 0, win.out_h)
                return out
            for y0 in range(0, win.out_h, block):
                if y0:
                    checkpoint(y0 / win.out_h)
                rows(x, out, y0, min(win.out_h, y0 + block))
            return out
        self._compiled = ((w, bias, bounds), run)
        return run

    def product(self, w: np.ndarray, bias: np.ndarray | None, bounds: tuple | None,
                dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray] | None:
        """`__call__` of float32 inputs with this float32 filter, bias and bounds and BLAS
        sums, as a function of the input alone: the taps' einsum (over the `WidthTaps` planes at a width stride over 1), the
        tiled bias, the clip, with the filter laid and the views made once (``dtype``:
        the output's).  None with a depth multiplier or another type."""
        if w.dtype != np.float32 or dtype != np.float32:
            return None
        loop = self.compiled(w, bias, bounds)
        if loop is not None:
            return lambda x: loop(x, None)
        if self.mult != 1:
            return None
        win = self.pad.win
        shape = (self.x_shape[0], win.out_h, win.out_w, w.shape[3])
        tiled = self.bias_rows(bias)
        per_row = 0 if tiled is None else tiled.size
        low = None if bounds is None else bounds[0]
        high = None if bounds is None else infinity(dtype) if bounds[1] is None else bounds[1]
        pad, add, weights = self.pad, np.add, self._weights(w)
        if self.width_taps is not None:
            planes = self.width_taps
            sums = lambda x: c_einsum("yxbhr,yxr->bhr", planes(x), weights)  # noqa: E731
        else:
            spec = "yxbhr,yxr->bhr" if self.strides[1] == 1 else "yxbhwc,yxwc->bhwc"
            taps = self._taps

            def sums(x: np.ndarray) -> np.ndarray:
                return c_einsum(spec, taps(pad(x)), weights)

        def run(x: np.ndarray) -> np.ndarray:
            out = sums(x).reshape(shape)
            if per_row:
                rows = out.reshape(-1, per_row)
                add(rows, tiled, out=rows)
            if low is not None:
                clip_ufunc(out, low, high, out=out)
            return out
        return run

    def __call__(self, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None,
                 bounds: tuple | None = None, reference: bool = True,
                 checkpoint: Checkpoint | None = None) -> np.ndarray:
        """[N, OH, OW, C*M]: the taps of ``w`` [1, KH, KW, C*M] over ``x``, plus ``bias``,
        clamped to ``bounds``; tap after tap in the reference order when ``reference`` or
        not float32 (``checkpoint`` called between taps), else in one einsum (numpy's
        order)."""
        if x.dtype == w.dtype == np.float32 and (bias is None or bias.dtype == np.float32):
            loop = self.compiled(w, bias, bounds)
            if loop is not None:
                return loop(x, checkpoint)
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.strides, self.dilations
        win = self.pad.win
        shape = (x.shape[0], win.out_h, win.out_w, w.shape[3])
        if self.width_taps is not None and not reference and x.dtype == w.dtype == np.float32:
            out = c_einsum("yxbhr,yxr->bhr", self.width_taps(x), self._weights(w)).reshape(shape)
            clamp(out.reshape(shape[0], -1, shape[3]), self.bias_rows(bias), bounds)
            return out
        xp = self.pad(x)
        if self.mult > 1:
            xp = np.repeat(xp, self.mult, axis=3)
        if reference or xp.dtype != np.float32 or w.dtype != np.float32:
            out = np.zeros(shape, np.result_type(x, w))
            tmp = np.empty_like(out)
            for i in range(kh):
                for j in range(kw):
                    if (i or j) and checkpoint is not None:
                        checkpoint((i * kw + j) / (kh * kw))
                    tap = xp[:, i * dh:i * dh + (win.out_h - 1) * sh + 1:sh,
                             j * dw:j * dw + (win.out_w - 1) * sw + 1:sw, :]
                    np.multiply(tap, w[0, i, j], out=tmp)
                    out += tmp
        else:
            spec = "yxbhr,yxr->bhr" if sw == 1 else "yxbhwc,yxwc->bhwc"
            out = c_einsum(spec, self._taps(xp), self._weights(w)).reshape(shape)
        clamp(out.reshape(shape[0], -1, shape[3]), self.bias_rows(bias), bounds)
        return out
