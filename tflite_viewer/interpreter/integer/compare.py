"""Quantized comparisons: EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL.

Why a module of its own: two quantized tensors cannot be compared through their stored
integers (different scales and zero points make 10 on one side mean 0.3 and on the other
-1.2), and LiteRT does not compare the real values either.  comparisons.cc
(``ComparisonQuantized``) maps every element of each input to an int32 on its own: subtract
the zero point, shift left by 8 bits, multiply by the input's *own* scale as a quantized
multiplier (``QuantizeMultiplierSmallerThanOneExp``, applied with
``MultiplyByQuantizedMultiplierSmallerThanOneExp``), and compares those int32 values.  The
result is ``round(real * 256)`` on each side, so the comparison has a resolution of 1/256
in real units: real values closer than that compare equal, and with scales below 1/256
neighbouring codes of one tensor already collapse (0.001 * 5 and 0.0005 * 5 are EQUAL).
This module reproduces that bit for bit (``rounding`` as everywhere: gemmlowp's double
rounding of the ai-edge-litert 2.3.0 wheel by default, or ``"single"``).

What the wheel does, measured on single-op models (tests/interpreter/integer/test_compare.py):

* uint8 and int8 always take the rescaling path.  Without quantization (scale 0), with
  per-channel parameters (the legacy ``params.scale`` is then 0) or with a scale of exactly
  1.0 (``QuantizeMultiplierGreaterThanOne`` requires > 1) LiteRT aborts; we refuse those.
* A scale above 1 gets a positive shift, which
  ``MultiplyByQuantizedMultiplierSmallerThanOneExp`` hands to gemmlowp's
  ``RoundingDivideByPOT`` as a negative exponent: undefined behaviour in C++, and the
  x86-64 wheel really does give two answers.  Its vectorized loop shifts with ``psrad``
  (a count above 31 fills with the sign bit) and its scalar remainder loop with ``sar``
  (count modulo 32), so equal elements of one tensor rescale differently by their position
  in the loop (nine uint8 234s with scale 839445.375 and zero point 213 give 1, eight
  times, then 2).  There is nothing bit-exact to reproduce: with double rounding we refuse
  scales above 1.  Single-rounding builds
  use ``MultiplyByQuantizedMultiplier``, which handles the positive shift properly.
* int16: EQUAL and NOT_EQUAL rescale quantized inputs like the 8-bit types and compare
  unquantized ones raw -- except NOT_EQUAL, whose unquantized int16 case writes nothing
  (the output keeps whatever the arena held); we refuse that.  LESS, LESS_EQUAL, GREATER
  and GREATER_EQUAL compare int16 raw whatever the quantization says.
* Broadcasting goes through ``BroadcastBinaryOpSimple``, which aborts above 8 dimensions
  (same-shape inputs take a flat loop with no limit); we refuse that too, for every type.

Broadcasting changes nothing numerically, so numpy broadcasting stands in for the loop.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import quant_math as qm
from .common import QParams, Rounding, check_rounding, qparams

#: The comparison each op applies to the two (rescaled) values.
OPS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "EQUAL": np.equal, "NOT_EQUAL": np.not_equal, "LESS": np.less,
    "LESS_EQUAL": np.less_equal, "GREATER": np.greater, "GREATER_EQUAL": np.greater_equal,
}
#: Bits the offset inputs are shifted left by before rescaling (comparisons.cc).
LEFT_SHIFT = 8
#: BroadcastBinaryOpSimple's kMaxRank: broadcasting beyond it aborts in LiteRT.
MAX_BROADCAST_RANK = 8
_INT16_RESCALED = frozenset({"EQUAL", "NOT_EQUAL"})


@dataclass(frozen=True)
class ComparisonParams:
    """What ``ComparisonQuantized`` puts in ComparisonParams (``scaled``: whether the op
    rescales at all, False for LiteRT's raw int16 comparisons)."""

    op: str
    scaled: bool
    left_shift: int = LEFT_SHIFT
    input1_offset: int = 0
    input1_multiplier: int = 0
    input1_shift: int = 0
    input2_offset: int = 0
    input2_multiplier: int = 0
    input2_shift: int = 0
    rounding: Rounding = "double"


def _check_op(op: str) -> str:
    if op not in OPS:
        raise ValueError(f"not a comparison: {op!r}")
    return op


def comparison_multiplier(scale: float, which: str,
                          rounding: Rounding = "double") -> tuple[int, int]:
    """comparisons.cc's QuantizeMultiplier of one input's scale: the SmallerThanOneExp
    form below 1, the GreaterThanOne form above; the cases where LiteRT aborts raise."""
    s = float(np.float32(scale))  # params.scale is a float, widened to double
    if not np.isfinite(s) or s <= 0.0:
        raise ValueError(f"{which} has scale {s:g}: LiteRT's quantized comparison needs a "
                         "positive scale (it aborts in QuantizeMultiplier)")
    if s == 1.0:
        raise ValueError(f"{which} has scale 1.0: LiteRT's quantized comparison aborts "
                         "(QuantizeMultiplierGreaterThanOne requires a multiplier above 1)")
    m, shift = (int(v) for v in qm.quantize_multiplier(s, rounding))
    if shift > 0 and rounding == "double":
        raise ValueError(f"{which} has scale {s:g} > 1: LiteRT's quantized comparison then "
                         "divides by a negative power of two (undefined behaviour; the "
                         "x86-64 wheel's vector and scalar loops give different answers)")
    return m, shift


def _legacy(q, which: str) -> QParams:
    """The tensor's legacy per-tensor parameters (TfLiteTensor::params)."""
    q = qparams(q)
    if q.scale.size != 1:
        raise ValueError(f"{which} has {q.scale.size} per-channel scales: LiteRT's comparison "
                         "reads the per-tensor params.scale, which is then 0, and aborts")
    return q


def prepare_comparison(op: str, dtype, input1_q, input2_q, quantized: bool = True,
                       rounding: Rounding = "double") -> ComparisonParams:
    """The node's parameters, as comparisons.cc's Eval chooses them for an integer ``dtype``.

    ``input1_q``/``input2_q``: the inputs' quantization (QParams, (scale, zero point) pairs,
    or reader Quantization); ``quantized``: whether input 1 has quantization parameters at
    all (LiteRT looks at input 1 only).  Raises where LiteRT aborts or writes nothing.
    """
    op = _check_op(op)
    rounding = check_rounding(rounding)
    dtype = np.dtype(dtype)
    if dtype == np.int16:
        if op not in _INT16_RESCALED:
            return ComparisonParams(op, False, rounding=rounding)
        if not quantized:
            if op == "NOT_EQUAL":
                raise ValueError("NOT_EQUAL on INT16 inputs without quantization: LiteRT "
                                 "writes no output for it (only quantized int16 is handled)")
            return ComparisonParams(op, False, rounding=rounding)
    elif dtype not in (np.dtype(np.uint8), np.dtype(np.int8)):
        raise ValueError(f"no quantized comparison for {dtype.name}")
    q1, q2 = _legacy(input1_q, "input 1"), _legacy(input2_q, "input 2")
    m1, s1 = comparison_multiplier(q1.s, "input 1", rounding)
    m2, s2 = comparison_multiplier(q2.s, "input 2", rounding)
    return ComparisonParams(op, True, LEFT_SHIFT, -q1.zp, m1, s1, -q2.zp, m2, s2, rounding)


def rescale(x: np.ndarray, offset: int, multiplier: int, shift: int,
            left_shift: int = LEFT_SHIFT, rounding: Rounding = "double") -> np.ndarray:
    """One input's int32 comparison values (as int64): ``(x + offset) << left_shift``
    through MultiplyByQuantizedMultiplierSmallerThanOneExp."""
    shifted = (np.asarray(x).astype(np.int64) + offset) * (1 << left_shift)
    shifted = shifted.astype(np.int32).astype(np.int64)  # int32 arithmetic in C
    if rounding == "double" and shift > 0:
        raise ValueError("a positive shift makes LiteRT's double-rounding "
                         "RoundingDivideByPOT undefined")
    # double: RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x, m), -shift);
    # single: MultiplyByQuantizedMultiplier, which also takes positive shifts
    return qm.multiply_by_quantized_multiplier(shifted, multiplier, shift, rounding)


def check_broadcast_rank(shape1, shape2) -> None:
    """Refuse what LiteRT aborts on: broadcasting (shapes differ) above 8 dimensions."""
    s1, s2 = tuple(shape1), tuple(shape2)
    rank = max(len(s1), len(s2))
    if s1 != s2 and rank > MAX_BROADCAST_RANK:
        raise ValueError(f"broadcasting {list(s1)} with {list(s2)}: LiteRT's comparisons "
                         f"broadcast at most {MAX_BROADCAST_RANK} dimensions (it aborts "
                         "beyond)")


def compare(op: str, input1: np.ndarray, input2: np.ndarray, input1_q=None, input2_q=None,
            rounding: Rounding = "double", params: ComparisonParams | None = None,
            quantized: bool = True) -> np.ndarray:
    """A comparison of two integer tensors as LiteRT's kernel computes it (bool array)."""
    input1, input2 = np.asarray(input1), np.asarray(input2)
    if input1.dtype != input2.dtype:
        raise TypeError(f"comparison of {input1.dtype.name} with {input2.dtype.name}: LiteRT "
                        "requires inputs of one type")
    check_broadcast_rank(input1.shape, input2.shape)
    p = params or prepare_comparison(op, input1.dtype, input1_q, input2_q, quantized, rounding)
    fn = OPS[p.op]
    if not p.scaled:
        return np.asarray(fn(input1, input2), dtype=np.bool_)
    a = rescale(input1, p.input1_offset, p.input1_multiplier, p.input1_shift, p.left_shift,
                p.rounding)
    b = rescale(input2, p.input2_offset, p.input2_multiplier, p.input2_shift, p.left_shift,
                p.rounding)
    return np.asarray(fn(a, b), dtype=np.bool_)
