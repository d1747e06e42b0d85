"""Float convolutions at the speed of BLAS: CONV_2D as im2col in bounded blocks, and
TRANSPOSE_CONV as products in bounded blocks scattered into the output.

A whole im2col of a large convolution is KH*KW times its input: 377 MB for a 3x3
convolution of a [1, 256, 256, 160] image, which BLAS then reads once from memory.  Here
the patches of a block of output rows (about `BLOCK_BYTES`, in the core's L2 cache) are
copied from a strided view of the padded input -- one copy per block, whose runs are KW*C
values long when the filter is not dilated across -- multiplied by the filter matrix into
the output rows themselves, and the bias and the clamping activation are applied to the
block while it is in cache.  A 1x1 convolution of stride 1 multiplies the input rows in
place, without a copy.

DEPTHWISE_CONV_2D is `float_depthwise.DepthwisePlan`; both pad into a buffer their plan
keeps when it is small (`PadBuffer`).

Each output's sum involves only its own patch, so with ``reference`` products
(`float32.ordered_matmul`) blocking the rows changes no value: every output is LiteRT's
reference kernel's bits.  BLAS rounds as its kernels for a block's shape do, a float32
rounding or so from the reference either way.

Between two blocks (and between two taps of a reference-order depthwise convolution) the
plans call ``checkpoint(fraction done)``, the kernel's `Subgraph.checkpoint`: a stop
request or a run past its time budget ends a convolution of seconds there, within a
block, and the progress moves within the op.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..float32 import ordered_matmul
from ..integer.common import Window, padded_shape
from ..integer.conv import PAD_KEEP_BYTES
from .common import clip_ufunc, infinity

#: bytes of one block of patches (and of the products of TRANSPOSE_CONV): measured (CPU
#: time) on mrz_seg's 3x3 convolutions of 160 and 192 channels and nmp's 3x39 of 8, 1 MiB
#: blocks run at the speed of one BLAS product of the already made whole im2col; 256 KiB
#: blocks 0-7% slower, 4 MiB blocks 5-26% slower
BLOCK_BYTES = 1 << 20

Product = Callable[[np.ndarray, np.ndarray], np.ndarray]
#: ``ctx.checkpoint`` (`Subgraph.checkpoint`): called between blocks with the share done
Checkpoint = Callable[[float], None]


def product_for(reference: bool, *arrays: np.ndarray) -> Product | None:
    """`ordered_matmul` when ``reference`` sums are asked and every array is float32 (its
    bits are LiteRT's reference kernels'), else None: BLAS's ``np.matmul``."""
    if reference and all(a.dtype == np.float32 for a in arrays):
        return ordered_matmul
    return None


def _blocks(n: int, oh: int, ow: int, per_position: int) -> list[tuple[int, ...]]:
    """(first row, last row, image, y0, y1, x0, x1) of each block of output positions:
    whole output rows while one fits in `BLOCK_BYTES` of ``per_position`` bytes each,
    else pieces of one row."""
    rows = BLOCK_BYTES // max(1, ow * per_position)
    out = []
    for b in range(n):
        base = b * oh * ow
        if rows >= 1:
            for y0 in range(0, oh, rows):
                y1 = min(oh, y0 + rows)
                out.append((base + y0 * ow, base + y1 * ow, b, y0, y1, 0, ow))
            continue
        step = max(1, BLOCK_BYTES // max(1, per_position))
        for y in range(oh):
            for x0 in range(0, ow, step):
                x1 = min(ow, x0 + step)
                out.append((base + y * ow + x0, base + y * ow + x1, b, y, y + 1, x0, x1))
    return out


class PadBuffer:
    """An NHWC input padded with zeros for its windows: copied into a buffer kept between
    calls when it takes at most `PAD_KEEP_BYTES` (its border stays zero), else into a
    fresh one.  Nothing a plan returns refers to the buffer."""

    def __init__(self, x_shape: tuple[int, ...], geometry: tuple[int, int, int, int],
                 kernel: tuple[int, int], strides: tuple[int, int],
                 dilations: tuple[int, int]) -> None:
        self.win = Window(*geometry)
        self.shape = padded_shape(tuple(x_shape), self.win, *kernel, *strides, *dilations)
        self.buffer: np.ndarray | None = None
        self._interior: np.ndarray | None = None  # the kept buffer's view of the input

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if self.shape is None:  # every window inside the input
            return np.ascontiguousarray(x)
        buf = self.buffer
        if buf is None or buf.dtype != x.dtype:
            buf = np.zeros(self.shape, x.dtype)
            self.buffer = buf if buf.nbytes <= PAD_KEEP_BYTES else None
            _, h, w, _ = x.shape
            inside = buf[:, self.win.pad_h:self.win.pad_h + h, self.win.pad_w:self.win.pad_w + w]
            self._interior = inside if self.buffer is not None else None
        else:
            inside = self._interior
        np.copyto(inside, x)
        return buf


#: a bias tiled over output rows takes at most this size: added as a whole array it takes
#: a pass at memory speed, where numpy's broadcast of a bias of C values along the rows
#: runs its loop C values at a time (4x on 16 channels)
BIAS_KEEP_BYTES = 1 << 14


def clamp(out: np.ndarray, bias: np.ndarray | None, bounds: tuple | None) -> None:
    """The bias added and the activation's bounds (low, high or None) applied in place.

    One np.clip, a fifth of the time of np.maximum then np.minimum (whose NaN handling is
    slower), and C's std::min(std::max(x, low), high) to the bit: -0 stays -0, as in
    LiteRT (np.maximum(-0.0, 0.0) gives +0), and NaN stays NaN.  ``bias`` broadcasts
    against ``out`` (a bias per channel), or is a `TiledBias` of it whose length divides
    the size of ``out`` (C-contiguous): added to ``out`` seen as rows of that length."""
    if bias is not None:
        if bias.size != out.shape[-1]:
            out = out.reshape(-1, bias.size)  # a view: ``out`` is contiguous
        np.add(out, bias, out=out)
    if bounds is not None:
        high = bounds[1]
        clip_ufunc(out, bounds[0], infinity(out.dtype) if high is None else high, out=out)


class TiledBias:
    """A per-channel bias repeated over R rows of channels, R the largest divisor of
    ``rows`` (a count every block of rows is a multiple of) whose tile takes at
    most `BIAS_KEEP_BYTES`; made once per bias array.  Added to a block of output rows
    seen as rows of R*C values it gives the values of the broadcast bias, one addition
    per element, at a whole array's speed (`clamp`)."""

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self._kept: tuple[np.ndarray | None, np.ndarray | None] = (None, None)

    def __call__(self, bias: np.ndarray | None) -> np.ndarray | None:
        if bias is None:
            return None
        source, tiled = self._kept
        if source is not bias:
            flat = bias.reshape(-1)
            most = max(1, BIAS_KEEP_BYTES // max(1, flat.nbytes))
            reps = max(d for d in range(1, min(most, self.rows) + 1) if self.rows % d == 0) \
                if self.rows > 0 else 1
            tiled = np.tile(flat, reps) if reps > 1 else flat
            self._kept = (bias, tiled)
        return tiled


class ConvPlan:
    """What a float CONV_2D of one input shape computes with, made once when the node is
    prepared: the geometry, the blocks of output positions and how their patches are
    read.  ``geometry`` is `window_geometry` (out_h, out_w, pad_top, pad_left)."""

    def __init__(self, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                 strides: tuple[int, int], dilations: tuple[int, int],
                 geometry: tuple[int, int, int, int]) -> None:
        n, h, wd, c = x_shape
        o, kh, kw, ci = w_shape
        oh, ow, pt, pl = geometry
        self.x_shape, self.out_shape = tuple(x_shape), (n, oh, ow, o)
        self.kernel, self.strides, self.dilations = (kh, kw), strides, dilations
        self.groups = c // ci
        self.k = kh * kw * c  # one row of patches
        #: a 1x1 window of stride 1 without padding: the input rows are the patches
        self.pointwise = (kh, kw, pt, pl) == (1, 1, 0, 0) and strides == (1, 1) \
            and (oh, ow) == (h, wd)
        #: one window covering the whole undilated input once: the image is the patch
        self.whole = (oh, ow, pt, pl, kh, kw, dilations) == (1, 1, 0, 0, h, wd, (1, 1))
        self.blocks = _blocks(n, oh, ow, self.k * 4)
        self.block_rows = max(r1 - r0 for r0, r1, *_ in self.blocks) if self.blocks else 0
        # (every block's row count a multiple of the tile's rows)
        self.bias_rows = TiledBias(n if self.whole else
                                   math.gcd(*(r1 - r0 for r0, r1, *_ in self.blocks)))
        self.pad = PadBuffer(x_shape, geometry, (kh, kw), strides, dilations)
        self._view: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
        #: the output columns a 1x1 product of few rows is taken in (`_rows_product`)
        self.columns = _column_slices(n * oh * ow, self.k, o) if self.pointwise else None

    def product(self, w_matrix: np.ndarray, bias: np.ndarray | None, bounds: tuple | None,
                dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray] | None:
        """`__call__` with this filter matrix, bias and bounds and BLAS sums, as a function
        of the input alone, for a 1x1 plan of one block (the input rows times the matrix,
        the tiled bias, the clip: the same numpy calls, without the per-call lookups);
        None for other plans."""
        if not (self.pointwise and len(self.blocks) == 1 and self.groups == 1):
            return None
        k, shape, columns = self.k, self.out_shape, self.columns
        tiled = self.bias_rows(bias)
        low = None if bounds is None else bounds[0]
        high = None if bounds is None else infinity(dtype) if bounds[1] is None \
            else bounds[1]  # (``dtype``: the output's)
        per_row = 0 if tiled is None else tiled.size
        matmul, add = np.matmul, np.add

        def run(x: np.ndarray) -> np.ndarray:
            out = matmul(x.reshape(-1, k), w_matrix) if columns is None \
                else _rows_product(x.reshape(-1, k), w_matrix, columns)
            if per_row:
                rows = out.reshape(-1, per_row)
                add(rows, tiled, out=rows)
            if low is not None:
                clip_ufunc(out, low, high, out=out)
            return out.reshape(shape)
        return run

    def _patches(self, x: np.ndarray) -> np.ndarray:
        """A strided view of the padded input: each output position's patch in the
        filter's order, made once for a kept buffer.  Undilated across it is
        [N, OH, OW, KH] runs of KW*C values, each run one element of a void dtype of that
        size: numpy's copy of it is a loop over whole runs (3x faster than over runs of 9
        floats, a 3x3 filter on 3 channels, and as fast on long runs); dilated across it
        is [N, OH, OW, KH, KW, C] values."""
        xp = self.pad(x)
        base, view = self._view
        if base is xp:
            return view
        (kh, kw), (sh, sw), (dh, dw) = self.kernel, self.strides, self.dilations
        n, oh, ow, _ = self.out_shape
        c = self.x_shape[3]
        s_n, s_h, s_w, s_c = xp.strides
        if dw == 1:
            # np.ndarray over xp's memory: the runs of neighbouring windows overlap
            view = np.ndarray((n, oh, ow, kh), np.dtype((np.void, kw * c * xp.itemsize)),
                              xp, 0, (s_n, s_h * sh, s_w * sw, s_h * dh))
            view.flags.writeable = False
        else:
            view = as_strided(xp, (n, oh, ow, kh, kw, c),
                              (s_n, s_h * sh, s_w * sw, s_h * dh, s_w * dw, s_c),
                              writeable=False)
        self._view = (xp, view) if xp is self.pad.buffer else (None, None)
        return view

    def __call__(self, x: np.ndarray, w_matrix: np.ndarray, bias: np.ndarray | None = None,
                 bounds: tuple | None = None, product: Product | None = None,
                 checkpoint: Checkpoint | None = None) -> np.ndarray:
        """The convolution of ``x`` (of the planned shape) by ``w_matrix`` [KH*KW*C/groups,
        O] (`filter_matrix`), plus ``bias``, clamped to ``bounds`` (low, high or None):
        [N, OH, OW, O].  ``product`` multiplies a block of patches by the filter matrix
        (None: BLAS); ``checkpoint`` is called between blocks (module docstring)."""
        bias = self.bias_rows(bias)
        if self.pointwise and len(self.blocks) == 1 and self.groups == 1 and product is None:
            out = _rows_product(x.reshape(-1, self.k), w_matrix, self.columns)  # (one block)
            clamp(out, bias, bounds)
            return out.reshape(self.out_shape)
        dtype = np.result_type(x, w_matrix)
        out = np.empty(self.out_shape, dtype)
        flat = out.reshape(-1, self.out_shape[3])
        total = flat.shape[0]
        if self.whole or self.pointwise:
            rows = x.reshape(self.out_shape[0], -1) if self.whole else x.reshape(-1, self.k)
            for r0, r1, *_ in (((0, rows.shape[0]),) if self.whole else self.blocks):
                if r0 and checkpoint is not None:
                    checkpoint(r0 / total)
                self._block(rows[r0:r1], w_matrix, flat[r0:r1], bias, bounds, product)
            return out
        patches = self._patches(x)
        buffer = np.empty((self.block_rows, self.k), x.dtype)
        for r0, r1, b, y0, y1, x0, x1 in self.blocks:
            if r0 and checkpoint is not None:
                checkpoint(r0 / total)
            cols = buffer[:r1 - r0]
            part = patches[b, y0:y1, x0:x1]
            np.copyto(cols.view(part.dtype).reshape(part.shape), part)
            self._block(cols, w_matrix, flat[r0:r1], bias, bounds, product)
        return out

    def _block(self, cols: np.ndarray, w_matrix: np.ndarray, out: np.ndarray,
               bias: np.ndarray | None, bounds: tuple | None, product: Product | None) -> None:
        """One block of output rows: patches times the filter, bias (per channel, or
        tiled: `TiledBias`), clamp, in place."""
        if self.groups == 1:
            if product is None:
                np.matmul(cols, w_matrix, out=out)
            else:
                out[...] = product(cols, w_matrix)
        else:
            _grouped(cols, w_matrix, out, self.groups, self.kernel, product)
        clamp(out, bias, bounds)


#: M*N*K up to which the BLAS numpy ships (OpenBLAS) multiplies float32 matrices with its
#: kernels for small matrices, without packing; above it, a product of few rows packs the
#: whole filter first: measured on this project's machine, [9, 112] x [112, 1280]
#: (mobilenet_v2's last 1x1 convolution) 45 us whole, 29 us as two products of 640 columns
SMALL_PRODUCT = 1_000_000
#: rows up to which a product over `SMALL_PRODUCT` is taken in pieces of columns (with more
#: rows the packing pays for itself: [2304, 27] x [27, 48] is fastest whole)
FEW_ROWS = 64


def _column_slices(rows: int, k: int, o: int) -> list[slice] | None:
    """The fewest equal pieces of the ``o`` output columns that keep each product of a
    [rows, k] block within `SMALL_PRODUCT`, for products of at most `FEW_ROWS` rows over
    it; None for the product taken whole."""
    if rows > FEW_ROWS or rows * k * o <= SMALL_PRODUCT or o < 2:
        return None
    parts = min(o, -(-rows * k * o // SMALL_PRODUCT))
    step = -(-o // parts)
    return [slice(c, min(o, c + step)) for c in range(0, o, step)]


def _rows_product(rows: np.ndarray, w_matrix: np.ndarray,
                  columns: list[slice] | None) -> np.ndarray:
    """``rows @ w_matrix``, one BLAS product per piece of columns (`_column_slices`),
    each written straight into its columns of the result."""
    if columns is None:
        return np.matmul(rows, w_matrix)
    out = np.empty((rows.shape[0], w_matrix.shape[1]), np.result_type(rows, w_matrix))
    for cols in columns:
        np.matmul(rows, w_matrix[:, cols], out=out[:, cols])
    return out


def _grouped(cols: np.ndarray, w_matrix: np.ndarray, out: np.ndarray, groups: int,
             kernel: tuple[int, int], product: Product | None) -> None:
    """A grouped convolution's block: each group's channels of the patches times its
    filters (``w_matrix`` [KH*KW*I, O], output channels in group order)."""
    taps = kernel[0] * kernel[1]
    per = cols.reshape(cols.shape[0], taps, groups, -1)
    og = out.shape[1] // groups
    for g in range(groups):
        sub = np.ascontiguousarray(per[:, :, g, :]).reshape(cols.shape[0], -1)
        wg = w_matrix[:, g * og:(g + 1) * og]
        out[:, g * og:(g + 1) * og] = (product or np.matmul)(sub, np.ascontiguousarray(wg))


def transpose_filter(w: np.ndarray) -> np.ndarray:
    """A TRANSPOSE_CONV filter [O, KH, KW, I] as the matrix [I, KH*KW*O] its products take
    (tap-major, output channel minor: each tap's products are contiguous runs of O)."""
    o, kh, kw, ci = w.shape
    return np.ascontiguousarray(w.transpose(3, 1, 2, 0).reshape(ci, kh * kw * o))


def transpose_conv(x: np.ndarray, w_matrix: np.ndarray, kernel: tuple[int, int],
                   strides: tuple[int, int], pads: tuple[int, int],
                   out_shape: tuple[int, int, int, int],
                   checkpoint: Checkpoint | None = None) -> np.ndarray:
    """TRANSPOSE_CONV (col2im): each input pixel times every filter tap, added into the
    output at stride less the leading pads; contributions outside the output dropped.
    The products of a block of input rows (about `BLOCK_BYTES`) are made by one BLAS
    product with ``w_matrix`` (`transpose_filter`) and added tap by tap; ``checkpoint``
    is called between blocks."""
    n, h, wd, ci = x.shape
    kh, kw = kernel
    (sh, sw), (pt, pl) = strides, pads
    on, oh, ow, o = out_shape
    dtype = np.result_type(x, w_matrix)
    full = np.zeros((n, max((h - 1) * sh + kh, pt + oh), max((wd - 1) * sw + kw, pl + ow), o),
                    dtype)
    rows_per = max(1, BLOCK_BYTES // max(1, wd * kh * kw * o * 4))
    for b in range(n):
        for y0 in range(0, h, rows_per):
            if (b or y0) and checkpoint is not None:
                checkpoint((b * h + y0) / (n * h))
            y1 = min(h, y0 + rows_per)
            prods = (x[b, y0:y1].reshape(-1, ci) @ w_matrix).reshape(y1 - y0, wd, kh, kw, o)
            for i in range(kh):
                rows = full[b, y0 * sh + i:(y1 - 1) * sh + i + 1:sh]
                for j in range(kw):
                    rows[:, j:j + (wd - 1) * sw + 1:sw] += prods[:, :, i, j]
    return np.ascontiguousarray(full[:, pt:pt + oh, pl:pl + ow, :])
