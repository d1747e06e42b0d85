"""The building blocks of the LSTM runner's step programs: a program is a flat list of numpy
calls on preallocated buffers (`Call`), run by `run_program`; `FixedMultiplier` is
MultiplyByQuantizedMultiplier as such calls; the lookup tables replace clips, activations
and casts by one ``take`` each."""
from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np

from ...quant_math import Rounding
from .. import fixedpoint16 as fp

I16_MIN, I16_MAX = -32768, 32767


#: one numpy call of a step program: (function, positional arguments)
Call = tuple[Callable[..., object], tuple]


def run_program(calls: list[Call]) -> None:
    """Execute a program of calls: as fast as the same calls written out (measured)."""
    for f, args in calls:
        f(*args)


def filled(v, shape) -> np.ndarray:
    """``v`` as a contiguous int64 array of ``shape``: ufuncs on same-shape operands skip
    broadcasting, and array operands are faster than Python scalars.  Always a copy."""
    out = np.empty(shape, np.int64)
    out[...] = v
    return out


class FixedMultiplier:
    """MultiplyByQuantizedMultiplier with fixed multipliers (one, or one per last-axis
    column), applied in place to int64 arrays holding int32 values, plus a constant.

    Double rounding uses the one-shift form of `quant_math.multiply_by_quantized_multiplier`
    (the negative-product nudge is taken for products below 0 rather than below -2^30: in
    between both give 0); positive shifts first shift and wrap to int32 as C does.  The added
    constant (a zero point) is folded into the rounding offset when that cannot overflow.
    """

    def __init__(self, multiplier, shift, rounding: Rounding, add: int = 0) -> None:
        m = np.asarray(multiplier, np.int64)
        s = np.asarray(shift, np.int64)
        self.left = None
        if rounding == "single":
            total = 31 - s
            off = np.int64(1) << (total - 1)
            self.neg = None
        else:
            if (s > 0).any():
                self.left = np.maximum(s, 0)
            right = np.maximum(-s, 0)
            total = 31 + right
            off = (np.int64(1) << 30) + (((np.int64(1) << right) >> 1) << 31)
            self.neg = np.where(right > 0, -(1 << 31), 0).astype(np.int64) \
                if (right > 0).any() else None
        add = int(add)
        # |x * m| < 2^62 and the offset < 2^(total - 1) + 2^30: room for add * 2^total?
        if add and (abs(add) + 1) << int(total.max()) <= (1 << 62) - (1 << 31):
            off = off + (np.int64(add) << total)
            add = 0
        self.add = add
        self.m = m
        self.off = np.asarray(off, np.int64)
        self.total = np.asarray(total, np.int64)

    def _laid_out(self, shape: tuple[int, ...]) -> tuple:
        """The constants at ``shape`` (None where unused): multiplier, offset, negative
        nudge, left shift, total right shift, added constant."""
        def full(v):
            return None if v is None else filled(v, shape)
        return (full(self.m), full(self.off), full(self.neg), full(self.left),
                full(self.total), full(self.add) if self.add else None)

    def bind(self, shape: tuple[int, ...], premultiplied: bool = False):
        """``fn(x, tmp)``: x <- MBQM(x) + add in place, for arrays of ``shape`` (``tmp``
        scratch of that shape), with every constant laid out at that shape.  With
        ``premultiplied`` x already holds x * multiplier (no left shift allowed)."""
        if premultiplied and self.left is not None:
            raise ValueError("a premultiplied value cannot be shifted left first")
        m, off, neg, left, total, add = self._laid_out(shape)
        mul, plus, rsh, lsh, band = (np.multiply, np.add, np.right_shift, np.left_shift,
                                     np.bitwise_and)

        def apply(x, tmp):
            if left is not None:
                lsh(x, left, out=x)
                x[...] = x.astype(np.int32)
            if not premultiplied:
                mul(x, m, out=x)
            if neg is not None:
                rsh(x, 63, out=tmp)
                band(tmp, neg, out=tmp)
                plus(tmp, off, out=tmp)
                plus(x, tmp, out=x)
            else:
                plus(x, off, out=x)
            rsh(x, total, out=x)
            if add is not None:
                plus(x, add, out=x)
            return x
        return apply

    def program(self, x: np.ndarray, tmp: np.ndarray, premultiplied: bool = False
                ) -> list[Call]:
        """The calls of ``bind(x.shape, premultiplied)(x, tmp)`` on these very arrays, for
        a step program (see `_Runner`): the same arithmetic, no branch left to take."""
        if premultiplied and self.left is not None:
            raise ValueError("a premultiplied value cannot be shifted left first")
        m, off, neg, left, total, add = self._laid_out(x.shape)
        calls: list[Call] = []
        if left is not None:
            calls += [(np.left_shift, (x, left, x)), (wrap32_inplace, (x,))]
        if not premultiplied:
            calls.append((np.multiply, (x, m, x)))
        if neg is not None:
            calls += [(np.right_shift, (x, filled(63, x.shape), tmp)),
                      (np.bitwise_and, (tmp, neg, tmp)), (np.add, (tmp, off, tmp)),
                      (np.add, (x, tmp, x))]
        else:
            calls.append((np.add, (x, off, x)))
        calls.append((np.right_shift, (x, total, x)))
        if add is not None:
            calls.append((np.add, (x, add, x)))
        return calls

    def __call__(self, x: np.ndarray, tmp: np.ndarray) -> np.ndarray:
        """x <- MBQM(x) + add, in place; ``tmp`` is scratch of x's shape."""
        return self.bind(x.shape)(x, tmp)


try:   # the clip ufunc: one call (np.clip is a Python wrapper, maximum + minimum two calls)
    from numpy._core.umath import clip as clip_ufunc
except ImportError:   # numpy < 2
    from numpy.core.umath import clip as clip_ufunc

#: regions of the gate table, each indexed by an int16 value + 32768
R_CELL, R_SIGMOID, R_TANH, R_ONE_MINUS = range(4)
REGION = 1 << 16


def scaled(v: np.ndarray) -> np.ndarray:
    """``v * 2^15 - [v < 0]``: for y in [0, 32767] (a Q0.15 gate value),
    ``floor((y * scaled(v) + 2^(s - 1) * 2^15) / 2^(s + 15))`` is RoundingDivideByPOT(y * v,
    s): the subtracted ``y / 2^15 < 1`` is the -1 that rounds negative ties away from zero
    (y = 0 gives 0 either way), so the cell update needs no sign test."""
    v = np.asarray(v, np.int64)
    return (v << 15) - (v < 0)


@lru_cache(maxsize=None)
def gate_table() -> np.ndarray:
    """Every activation a step looks up at once, by region (index: int16 value + 32768 +
    region * 2^16): R_CELL the cell state `scaled`, R_SIGMOID logistic (Q3.12 -> Q0.15),
    R_TANH tanh (Q3.12 -> Q0.15) `scaled`, R_ONE_MINUS ``32767 - logistic`` (the CIFG
    input gate, LiteRT's Sub1Vector).  int64, for direct use."""
    sig = fp.activation_table("logistic", 3).astype(np.int64)
    t = np.concatenate([scaled(np.arange(I16_MIN, I16_MAX + 1)), sig,
                        scaled(fp.activation_table("tanh", 3)), I16_MAX - sig])
    t.setflags(write=False)
    return t


@lru_cache(maxsize=64)
def cell_table(integer_bits: int, c_lo: int, c_hi: int, multiplier: int, offset: int,
               nudge: int, with_cell: bool) -> np.ndarray:
    """[2 or 3, 65536] by the new cell state's index ``c + 32768`` (lookups along axis 1
    fill contiguous planes; in 'clip' mode they saturate an unclipped sum to int16; the
    columns clip c to [c_lo, c_hi]):
    ``tanh(c) * multiplier`` (FixedPoint<int16, integer_bits> -> Q0.15, times the hidden
    requantization multiplier when that is folded in), the rounding addend of that
    requantization (``offset``, plus ``nudge`` where the product is negative: the sign of
    o * tanh(c) is tanh's, o >= 0), and with ``with_cell`` c itself (for the peephole)."""
    c = np.clip(np.arange(I16_MIN, I16_MAX + 1), c_lo, c_hi)
    t = fp.activation_table("tanh", integer_bits).astype(np.int64)[c - I16_MIN] * multiplier
    cols = [t, offset + nudge * (t < 0)] + ([c] if with_cell else [])
    table = np.ascontiguousarray(np.stack(cols).astype(np.int64))
    table.setflags(write=False)
    return table


@lru_cache(maxsize=16)
def cell_state_table(c_lo: int, c_hi: int) -> np.ndarray:
    """int16 [65536]: the saved cell state for a cell index ``c + 32768`` (what the runner
    keeps), saturated to int16 by ``take(mode="clip")`` and clipped to [c_lo, c_hi] by the
    values: one lookup instead of a clip, an add and a cast."""
    table = np.clip(np.arange(REGION) + I16_MIN, c_lo, c_hi).astype(np.int16)
    table.setflags(write=False)
    return table


def clamp(x: np.ndarray, lo: int, hi: int) -> np.ndarray:
    np.maximum(x, lo, out=x)
    np.minimum(x, hi, out=x)
    return x


def wrap32_inplace(x: np.ndarray) -> None:
    x[...] = x.astype(np.int32)
