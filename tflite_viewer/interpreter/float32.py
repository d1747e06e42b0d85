"""Float32 arithmetic as LiteRT's reference kernels do it, to the bit.

LiteRT computes float ops in C++ on ``float``: ``std::exp`` and ``std::pow`` are C's
``expf`` and ``powf``, and its CONV_2D and FULLY_CONNECTED reference loops add one float
product at a time in a fixed order.  numpy differs on each point: its float32 ``exp`` and
``power`` are SIMD approximations (a unit in the last place off on a fifth of ``pow``'s
results on AVX-512 machines), and its matrix products go through BLAS, which blocks the
sum and fuses multiply-adds.  Those differences are a float32 rounding each, but they
compound through a model (BirdNET's POW and LOGISTIC, pose_landmark's convolutions), so
this module gives the kernels what LiteRT's reference computes:

* `expf`, `powf`, `sinf`, `cosf`: the double-precision result rounded to float32 -- C's
  correctly rounded answer -- and, for the elements whose double result lies near a
  float32 rounding midpoint (where the platform's libm may round the other way: within
  1/64 of a unit for ``expf`` and ``powf``, accurate to about a thousandth of a unit, and
  within 0.08 of a unit for ``sinf`` and ``cosf``, whose worst case is 0.56 units), the
  platform libm's own function (through ctypes; without a C library those keep the
  rounded double).  LiteRT's SIN and COS call ``std::sin`` / ``std::cos`` on floats in
  both kernel sets (the wheel imports glibc's ``sinf`` and ``cosf``), and numpy's float32
  ``sin`` and ``cos`` are SIMD approximations a unit off on a tenth of the values.
* `logistic`: reference_ops::Logistic's form: 1 above 16.619047164916992188, ``expf(x)``
  below -9, else ``1 / (1 + expf(-x))``, each step in float32.
* `ordered_matmul`: a matrix product whose every output is the float32 sum of its float32
  products taken in order k = 0, 1, ..., K-1 (reference_ops::Conv's filter_y, filter_x,
  in_channel loop and reference_ops::FullyConnected's depth loop), one rounding per
  product and per addition, no fused multiply-add.  numpy's ``add.reduce`` over the first
  axis of a C-contiguous [K, N] array (N >= 2) adds the rows one after another, so the
  products are made in blocks of K rows and reduced there; a block continues the previous
  one's sum.

These are the formula, the precision and the order of LiteRT's reference kernels, checked
against them in tests/interpreter/test_float32_litert.py.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
from functools import lru_cache
from typing import Callable

import numpy as np

F32 = np.float32
F64 = np.float64

#: a float64 whose lowest 29 mantissa bits lie within this many units of 2**28 (the
#: float32 rounding midpoint) is recomputed by the C library: for ``expf``, 1/128 of a
#: float32 unit in the last place (glibc's expf rounds a double accurate to about 1/650 of
#: a unit: measured on a million arguments against LiteRT, the farthest disagreement with
#: the correctly rounded result lies 0.0015 units from the midpoint)
_MIDPOINT = 1 << 28
_EXP_BAND = 1 << 22
_LOW29 = (1 << 29) - 1
_MAGNITUDE = (1 << 63) - 1
#: the float64 bits of float32's smallest normal value, less one, and of its largest value
_SUBNORMAL_BITS = int(np.array(np.finfo(F32).tiny, F64).view(np.int64)) - 1
_HUGE_BITS = int(np.array(np.finfo(F32).max, F64).view(np.int64))


@lru_cache(maxsize=None)
def _libm():
    """The platform C library's float functions, or None where ctypes finds none."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("m") or None)
        out = {}
        for name, nargs in (("expf", 1), ("powf", 2), ("sinf", 1), ("cosf", 1)):
            fn = getattr(lib, name)
            fn.restype = ctypes.c_float
            fn.argtypes = [ctypes.c_float] * nargs
            out[name] = fn
        return out
    except (OSError, AttributeError, TypeError):  # pragma: no cover - no C library
        return None


def _near_midpoint(wide: np.ndarray, band, edges: bool = True) -> np.ndarray:
    """Flat indices of the float64 values (1-D, contiguous) whose float32 rounding the C
    library may decide otherwise: within ``band`` (an int, or one per value) of a float32
    rounding midpoint in units of 2**-29 of a float32 unit, and with ``edges`` also those
    nonzero in float32's subnormal range or past its largest value (where the float32
    grid is not the one the test assumes, or the choice is between that value and inf)."""
    bits = wide.view(np.int64)
    if isinstance(band, int):  # one band: (low bits - (2**28 - band)) mod 2**29 < 2 band
        offset = np.subtract(bits, _MIDPOINT - band, dtype=np.int64)
        np.bitwise_and(offset, _LOW29, out=offset)
        near = offset < 2 * band
    else:
        offset = np.subtract(bits, _MIDPOINT, dtype=np.int64)
        np.bitwise_and(offset, _LOW29, out=offset)  # (low bits - 2**28) mod 2**29
        near = np.minimum(offset, _LOW29 + 1 - offset) < band  # distance to the midpoint
    if edges:
        magnitude = np.bitwise_and(bits, _MAGNITUDE)
        near |= (magnitude >= _HUGE_BITS)
        np.subtract(magnitude, 1, out=magnitude)
        near |= magnitude.view(np.uint64) < _SUBNORMAL_BITS
    return near.nonzero()[0]  # (np.flatnonzero's wrappers cost more than the search)


def _fix(out: np.ndarray, idx: np.ndarray, name: str, *args: np.ndarray) -> np.ndarray:
    """``out`` (1-D) with its elements ``idx`` recomputed by the C library's ``name`` on
    the float32 arguments ``args`` (1-D, of out's size)."""
    if idx.size:
        lib = _libm()
        if lib is not None:
            fn = lib[name]
            cols = [a[idx].tolist() for a in args]
            out[idx] = [fn(*vals) for vals in zip(*cols)]
    return out


#: the largest float32 argument of ``expf`` with a finite result
_EXP_LIMIT = 88.72283935546875


def expf(x: np.ndarray) -> np.ndarray:
    """C's ``expf`` of a float32 array (a new array of its shape)."""
    x = np.asarray(x)
    flat = x.reshape(-1)
    if flat.size and np.maximum.reduce(flat) > _EXP_LIMIT:
        with np.errstate(over="ignore"):  # C's expf overflows to inf quietly
            return _expf(flat).reshape(x.shape)
    return _expf(flat).reshape(x.shape)


#: float32's smallest normal value and its largest, as Python floats
_TINY = float(np.finfo(F32).tiny)
_HUGE = float(np.finfo(F32).max)


def _expf(flat: np.ndarray, edges: bool = True) -> np.ndarray:
    """expf of a 1-D float32 array; ``edges=False`` when no result can be subnormal or
    infinite (arguments within [-87, 88]).  Otherwise the edges are looked for element
    by element only when the smallest and largest results say one may be there (exp is
    never negative; a NaN or a zero makes the look too)."""
    wide = np.exp(flat, dtype=F64)  # (the float32 arguments widened exactly)
    if edges and wide.size:
        edges = not (np.minimum.reduce(wide) >= _TINY and np.maximum.reduce(wide) < _HUGE)
    return _fix(wide.astype(F32), _near_midpoint(wide, _EXP_BAND, edges), "expf", flat)


#: glibc's powf rounds a double whose error grows with |y * log2(x)| (the logarithm's
#: error scaled by the exponent): measured against LiteRT on three million arguments, the
#: farthest disagreement lies 0.0013 units from the midpoint per unit of |y log2 x|; the
#: band allowed is 1/128 of a unit per unit of (1 + |y log2 x|), up to the whole unit
_POW_BAND_PER_UNIT = float(1 << 22)


def powf(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's ``powf`` of two float32 arrays, broadcast (std::pow on floats)."""
    a, b = np.asarray(a), np.asarray(b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    a1, b1 = np.broadcast_to(a, shape).reshape(-1), np.broadcast_to(b, shape).reshape(-1)
    with np.errstate(all="ignore"):  # C's pow says nothing on overflow, NaN or log(0)
        a64, b64 = a1.astype(F64), b1.astype(F64)
        wide = np.power(a64, b64)
        out = wide.astype(F32)
        band = np.abs(np.log2(np.abs(a64)) * b64)
        band += 1.0
        band *= _POW_BAND_PER_UNIT
        np.minimum(band, float(1 << 28), out=band)
        np.nan_to_num(band, copy=False, nan=float(1 << 28))
    return _fix(out, _near_midpoint(wide, band), "powf", a1, b1).reshape(shape)


#: glibc's sinf and cosf round a double accurate to about 0.06 of a float32 unit (their
#: documented worst case is 0.56 units): measured against LiteRT on 786,432 arguments per
#: function (uniform in [-10, 10] and [-1e4, 1e4], and near 0), the farthest disagreement
#: with the correctly rounded result lies 0.0605 units from the midpoint; the band allowed
#: is 0.078 units (5 * 2**23 of 2**29), about a sixth of the elements
_TRIG_BAND = 5 << 23


def _trig(x: np.ndarray, wide_fn, name: str) -> np.ndarray:
    """C's ``sinf`` / ``cosf`` of a float32 or float16 array (float16: computed on the
    float32 value and rounded to float16, as LiteRT's half kernels do)."""
    x = np.asarray(x)
    flat = x.reshape(-1).astype(F32, copy=False)
    with np.errstate(invalid="ignore"):  # sin(inf) is NaN quietly, as in C
        wide = wide_fn(flat, dtype=F64)
    out = _fix(wide.astype(F32), _near_midpoint(wide, _TRIG_BAND), name, flat)
    return out.reshape(x.shape).astype(x.dtype, copy=False)


def sinf(x: np.ndarray) -> np.ndarray:
    """C's ``sinf`` of a float32 array (std::sin on floats: LiteRT's SIN)."""
    return _trig(x, np.sin, "sinf")


def cosf(x: np.ndarray) -> np.ndarray:
    """C's ``cosf`` of a float32 array (std::cos on floats: LiteRT's COS)."""
    return _trig(x, np.cos, "cosf")


#: reference_ops::Logistic's cut-offs: above, the result is 1; below, exp(x) alone
LOGISTIC_UPPER = F32(16.619047164916992188)
LOGISTIC_LOWER = F32(-9.0)
_ONE = F32(1.0)
_ZERO = F32(0.0)
_NINE = F32(9.0)


def logistic(x: np.ndarray) -> np.ndarray:
    """reference_ops::Logistic on float32 (a new array): ``1 / (1 + expf(-x))`` in float32
    between the cut-offs, ``expf(x)`` below -9 and 1 above 16.619047164916992188."""
    x = np.asarray(x)
    flat = x.reshape(-1)
    # (fmin/fmax: a NaN element must not hide the others)
    low = bool(flat.size) and np.fmin.reduce(flat) < LOGISTIC_LOWER
    # min(-x, 9), widened (only where an element is below the lower cut-off, whose result
    # is replaced below): exp of the rest cannot overflow; where -x is below -87 (a
    # subnormal exp) x is above the upper cut-off and replaced too, so only the rounding
    # midpoints need a look.  (The argument negated and bounded in float64 is the float32
    # one widened: both steps are exact; `_expf` of the float32 argument takes the same
    # exp of the same double.)
    wide = np.negative(flat, dtype=F64)
    if low:
        np.minimum(wide, 9.0, out=wide)
    np.exp(wide, out=wide)
    out = wide.astype(F32)
    near = _near_midpoint(wide, _EXP_BAND, False)
    if near.size:
        lib = _libm()
        if lib is not None:  # C's expf of min(-x, 9) (Python's min keeps a NaN, as numpy's)
            fn = lib["expf"]
            out[near] = [fn(min(v, 9.0)) for v in np.negative(flat[near]).tolist()]
    np.add(_ONE, out, out=out)
    np.divide(_ONE, out, out=out)
    if low:
        below = flat < LOGISTIC_LOWER
        out[below] = _expf(flat[below])
    if flat.size and np.fmax.reduce(flat) > LOGISTIC_UPPER:
        out[flat > LOGISTIC_UPPER] = _ONE
    return out.reshape(x.shape)


#: elements of one block of products (4 MiB of float32) and at most of the sums a block
#: adds to (256 KiB, in the core's cache): a block is four numpy calls for about a million
#: multiply-adds (measured on the corpus models' convolutions, benchmarks/float32_sums.py)
_BLOCK = 1 << 20
_SUMS = 1 << 16


def _sequential_sum(products: np.ndarray) -> np.float32:
    """The float32 sum of a 1-D float32 array added left to right (``add.accumulate`` is
    sequential by definition; ``add.reduce`` of one row would be pairwise)."""
    if not products.size:
        return F32(0.0)
    products = np.array(products, F32)
    products[0] += _ZERO  # from +0, as the reference's ``float total = 0.f``
    return np.add.accumulate(products, dtype=F32)[-1]


def ordered_matmul(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``a`` [M, K] times ``w`` [K, O], both float32, each output the float32 sum of
    ``a[m, k] * w[k, o]`` over k = 0 .. K-1 in that order (see the module docstring).

    The products of a block of taps and a block of rows are laid out [k, rows, O] (or
    [k, O, rows] when the rows outnumber the outputs, so that the contiguous axis is the
    long one) and reduced over k; a block's first product is added to the sum so far (or
    to +0) before the reduction, so the blocks continue one sum."""
    m, k = a.shape
    o = w.shape[1]
    if m == 0 or o == 0 or k == 0:
        return np.zeros((m, o), F32)
    transposed = m > o
    at = np.ascontiguousarray(a.T)  # [K, M]: a row of products per k
    if m * o == 1:  # one output: reduce over a single column would be pairwise
        return np.full((1, 1), _sequential_sum(at[:, 0] * w[:, 0]), F32)
    if m * o * k <= _BLOCK:  # one block (small layers: two calls), the sum from +0
        # order="C": the products laid out [k, ...] whatever the layout of ``w`` (a
        # transposed view would make k the contiguous axis, and the sum over it pairwise)
        if transposed:
            return np.add.reduce(np.multiply(w[:, :, None], at[:, None, :], order="C"),
                                 axis=0, initial=_ZERO).T
        return np.add.reduce(np.multiply(at[:, :, None], w[:, None, :], order="C"), axis=0,
                             initial=_ZERO)
    if w.flags.f_contiguous and not w.flags.c_contiguous:  # [O, K] rows, transposed
        return _ordered_matmul_rows(a, at, w.T)
    out = np.empty((o, m) if transposed else (m, o), F32)
    rows_per = max(1, min(m, _SUMS // o))
    if rows_per < m and (m - rows_per * (m // rows_per)) * o == 1:
        rows_per += 1  # no last block of a single output (see above)
    taps = max(1, _BLOCK // (rows_per * o))
    block = np.empty((min(taps, k), o, rows_per) if transposed else
                     (min(taps, k), rows_per, o), F32)
    for r0 in range(0, m, rows_per):
        r1 = min(m, r0 + rows_per)
        acc = out[:, r0:r1] if transposed else out[r0:r1]
        for k0 in range(0, k, taps):
            k1 = min(k, k0 + taps)
            # the products, each one float32 rounding (einsum's outer products are
            # numpy's fastest way to lay them out; a zero product may come out +0 where
            # the multiplication gives -0, which no sum from +0 can tell apart)
            if transposed:
                p = block[:k1 - k0, :, :r1 - r0]
                np.einsum("ko,kr->kor", w[k0:k1], at[k0:k1, r0:r1], out=p)
            else:
                p = block[:k1 - k0, :r1 - r0]
                np.einsum("kr,ko->kro", at[k0:k1, r0:r1], w[k0:k1], out=p)
            # the sum so far, or +0 (the reference's ``float total = 0.f``)
            if k0:
                np.add(acc, p[0], out=p[0])
                np.add.reduce(p, axis=0, out=acc)
            else:
                np.add.reduce(p, axis=0, out=acc, initial=_ZERO)
    return out.T if transposed else out


#: outputs per block when the weights come as rows ([O, K], FULLY_CONNECTED's layout): a
#: block of products [taps, 64] is written transposed from 64 contiguous weight rows, whose
#: cache lines stay in L1 across the taps (measured on a 2048 x 5632 decoder product:
#: 16 ms, against 84 ms for the whole-width blocks and 4 ms on a contiguous [K, O] copy)
_OUT_BLOCK = 64
#: taps per block on that path: [2048, 64] float32 is 512 KiB, in the core's L2
_TAP_BLOCK = 2048
#: rows up to which that path multiplies each row by the weights' rows in place of
#: copying each block of weights transposed once for all rows
_FEW_ROWS = 4


def _out_blocks(o: int) -> list[tuple[int, int]]:
    """[start, end) blocks of ``_OUT_BLOCK`` outputs, none of a single output (a block of
    one output is a 1-D reduction, which numpy sums pairwise)."""
    bounds = list(range(0, o, _OUT_BLOCK)) + [o]
    if len(bounds) > 2 and bounds[-1] - bounds[-2] == 1:
        del bounds[-2]
    return list(zip(bounds[:-1], bounds[1:]))


def _ordered_matmul_rows(a: np.ndarray, at: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`ordered_matmul` of ``a`` [M, K] by the weights given as C-contiguous ``rows``
    [O, K] (``at`` is ``a`` transposed, contiguous), never copying the weights whole: the
    products of a few outputs at a time are laid out [k, outputs] straight from their
    rows (one row of ``a``) or from a transposed copy of those rows (many rows of ``a``,
    each block copied once), then summed over k in order, block after block of taps
    continuing each sum from +0."""
    m, k = a.shape
    o = rows.shape[0]
    out = np.empty((m, o), F32)
    blocks = _out_blocks(o)
    widest = max(e - s for s, e in blocks)
    if m > _FEW_ROWS:
        block = np.empty((k, widest), F32)
        for o0, o1 in blocks:
            wt = block[:, :o1 - o0]
            np.copyto(wt, rows[o0:o1].T)
            out[:, o0:o1] = ordered_matmul(a, wt)
        return out
    taps = min(k, _TAP_BLOCK)
    block = np.empty((taps, widest), F32)
    for o0, o1 in blocks:
        for r in range(m):
            acc = out[r, o0:o1]
            for k0 in range(0, k, taps):
                k1 = min(k, k0 + taps)
                p = block[:k1 - k0, :o1 - o0]
                np.multiply(rows[o0:o1, k0:k1], a[r, k0:k1], out=p.T)
                if k0:  # the sum so far, then this block's taps in order
                    np.add(acc, p[0], out=p[0])
                    np.add.reduce(p, axis=0, out=acc)
                else:  # from +0, the reference's ``float total = 0.f``
                    np.add.reduce(p, axis=0, out=acc, initial=_ZERO)
    return out


def last_of_sums(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """The float32 sums of ``x`` along ``axis``, each added one element after another from
    the first.  The axis is moved first into a C-contiguous [K, rest] copy, whose rows
    ``add.reduce`` adds in order when ``rest`` holds two or more (along a contiguous axis it
    would sum pairwise); one sum is taken with ``add.accumulate``, sequential by
    definition.  From +0 instead is this plus +0: the two differ only on an
    all-negative-zero sum."""
    x = np.asarray(x, F32)
    axis %= x.ndim
    rest = x.shape[:axis] + x.shape[axis + 1:]
    if math.prod(rest) < 2:
        return np.add.accumulate(x.reshape(-1), dtype=F32)[-1:].reshape(rest)
    rows = np.ascontiguousarray(np.moveaxis(x, axis, 0)).reshape(x.shape[axis], -1)
    return np.add.reduce(rows, axis=0).reshape(rest)


def ordered_sum(x: np.ndarray, axes: tuple[int, ...], keepdims: bool = False,
                from_first: bool = False) -> np.ndarray:
    """The float32 sum of ``x`` over ``axes``, each output adding its elements one at a
    time in memory order: as reference_ops::Mean and ReduceGeneric do (from +0, their
    zeroed accumulators) or, with ``from_first``, as the builtin kernels' optimized_ops
    Reduce does (its first element, then the others): `ordered_sum_plan` of x's shape."""
    x = np.asarray(x, F32)
    return ordered_sum_plan(x.shape, axes, keepdims, from_first)(x)


def ordered_sum_plan(shape: tuple[int, ...], axes, keepdims: bool = False,
                     from_first: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    """`ordered_sum` of float32 arrays of ``shape`` as a function of the array alone, the
    axes and the way of adding worked out once (a bound MEAN's whole call is then two or
    three numpy calls).

    The kept axes are moved first and the reduced ones last, flattened to [N, K], and
    `last_of_sums` adds each row in order (the reduced indices in C order are the
    elements' memory order)."""
    ndim = len(shape)
    axes = tuple(sorted(a % ndim for a in axes)) if ndim else ()
    kept = [a for a in range(ndim) if a not in axes]
    out_shape = tuple(1 if a in axes else d for a, d in enumerate(shape)) if keepdims \
        else tuple(shape[a] for a in kept)
    k = math.prod(shape[a] for a in axes)
    n = math.prod(shape[a] for a in kept)
    if k == 0 or n == 0:
        return lambda x: np.zeros(out_shape, F32)
    if axes and n >= 2 and n == math.prod(shape[axes[-1] + 1:]) \
            and axes == tuple(range(axes[0], axes[-1] + 1)):
        # the reduced axes lead, one block, the kept ones after: x is [K, N] as it lies,
        # whose rows add.reduce adds in order (`last_of_sums` without its copy)
        def total(x: np.ndarray) -> np.ndarray:
            return np.add.reduce(x.reshape(k, n), axis=0)
    else:
        order = None if kept == list(range(len(kept))) else kept + list(axes)

        def total(x: np.ndarray) -> np.ndarray:
            rows = x if order is None else np.transpose(x, order)
            return last_of_sums(rows.reshape(n, k), axis=1)

    def run(x: np.ndarray) -> np.ndarray:
        out = total(x)
        if not from_first:
            out += _ZERO
        return out.reshape(out_shape)
    return run
