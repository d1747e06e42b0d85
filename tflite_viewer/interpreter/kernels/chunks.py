"""Element-wise kernels over large tensors, a piece at a time.

The integer paths of element-wise kernels (QUANTIZE's requantization, a quantized ADD)
work in int64, as LiteRT's reference code does in its 64-bit products: on a whole tensor
their temporaries take several times its bytes (an INT32 QUANTIZE of 1.34 GB peaked at
13.8 GB).  An element-wise result does not depend on how the elements are split, so an
output of more than `LARGE` elements is computed in pieces of about `CHUNK` elements,
each written into the output as it comes: the kernel's scratch is then bounded
(`budget.SCRATCH_BYTES`) whatever the tensor's size, and every value is the one the
whole-tensor computation gives, to the bit.  Broadcasting inputs are cut along the same
pieces (an axis an input broadcasts is taken whole).
"""
from __future__ import annotations

import math
from typing import Callable, Iterator

import numpy as np

#: elements per piece: a few int64 temporaries of this many elements are the scratch
CHUNK = 1 << 18
#: outputs up to this many elements are computed whole (no per-piece cost on small ones)
LARGE = 2 * CHUNK


def pieces(shape: tuple[int, ...]) -> Iterator[tuple[slice, ...]]:
    """Index tuples (slices only) that cover an array of ``shape`` once, each about
    `CHUNK` elements: blocks of whole trailing rows along the first axis whose rows fit
    in a piece, one index at a time along the axes before it."""
    ndim = len(shape)
    axis = 0
    while axis < ndim and math.prod(shape[axis + 1:]) > CHUNK:
        axis += 1
    if axis == ndim:  # (an empty shape: one piece)
        yield ()
        return
    width = max(1, CHUNK // max(1, math.prod(shape[axis + 1:])))
    for outer in np.ndindex(*shape[:axis]):
        head = tuple(slice(i, i + 1) for i in outer)
        for start in range(0, shape[axis], width):
            yield head + (slice(start, start + width),)


def _piece(array: np.ndarray, index: tuple[slice, ...], ndim: int) -> np.ndarray:
    """``array``'s part for the output's ``index`` under broadcasting (a view)."""
    a = array.reshape((1,) * (ndim - array.ndim) + array.shape)
    return a[tuple(s if a.shape[k] != 1 else slice(None) for k, s in enumerate(index))]


def elementwise(fn: Callable[..., np.ndarray], shape: tuple[int, ...],
                *arrays: np.ndarray) -> np.ndarray:
    """``fn(*arrays)``, whose result has the broadcast ``shape``, computed a piece at a
    time when that shape holds more than `LARGE` elements (see the module docstring)."""
    shape = tuple(int(d) for d in shape)
    if math.prod(shape) <= LARGE:
        return fn(*arrays)
    arrays = tuple(np.asarray(a) for a in arrays)
    out: np.ndarray | None = None
    for index in pieces(shape):
        part = np.asarray(fn(*(_piece(a, index, len(shape)) for a in arrays)))
        if out is None:
            out = np.empty(shape, part.dtype)
        out[index] = part
    assert out is not None
    return out
