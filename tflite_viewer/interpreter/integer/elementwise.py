"""Quantized binary elementwise ops: ADD, SUB, MUL, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM.

ADD/SUB rescale both inputs to a common scale after shifting them left (20 bits for 8-bit
types, 15 for int16) as add.cc/sub.cc Prepare arranges, then rescale the sum
(``AddElementwise``/``SubElementwise`` and their broadcast forms: broadcasting changes
nothing numerically, so numpy broadcasting stands in for ``BroadcastBinaryOpSimple``).
int16 with power-of-two scales and ``pot_scale_int16`` takes the LSTM fixed-point path
(``Add``/``Sub16`` with saturating Q0.15 arithmetic).

With 8-bit inputs each output is a function of two bytes under the node's parameters, so
ADD, SUB, MUL and SQUARED_DIFFERENCE look their results up in a table of all 65,536 input
pairs, computed once per parameters by the same integer arithmetic (`pair_table`), as soon
as the elements they have computed with these parameters reach a quarter of the table's
entries (the table, one vectorized pass over 65,536 pairs, then costs less than what was
already spent): the same integers in about a fifth of the time, for every run after the
first few (analysis re-runs these ops thousands of times; a model's ADD of a few thousand
elements, after a few runs).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from .. import compiled
from .. import quant_math as qm
from .common import (Options, QParams, Rounding, ScaledBinaryParams, activation_of,
                     check_rounding, dtype_range, fused_activation_range,
                     prepare_scaled_binary, qparams, wrap32)


def _mbqm(x: np.ndarray, m: int, s: int, rounding: Rounding) -> np.ndarray:
    return qm.multiply_by_quantized_multiplier(x, m, s, rounding)


#: entries of a `pair_table`
PAIR_TABLE_SIZE = 65536
#: output elements computed with the same parameters that pay for building one: measured
#: on mobilenet_v2_int8's ADDs, the core takes 27 ns an element on 4,608 elements and the
#: table's 65,536 pairs 440 us (7 ns an entry), that is, about 16,000 elements' worth
PAIR_TABLE_AFTER = PAIR_TABLE_SIZE // 4
_pair_elements: dict = {}  # (core, params, dtypes) -> output elements computed so far


@lru_cache(maxsize=512)
def pair_table(core: Callable, params, dtype1: np.dtype, dtype2: np.dtype) -> np.ndarray:
    """``core(x1, x2, params)`` for every pair of 8-bit values: entry ``(b1 << 8) | b2``
    holds the result for the inputs whose bytes are b1 and b2."""
    bits = np.arange(256, dtype=np.uint8)
    x1 = bits.view(dtype1).reshape(256, 1)
    x2 = bits.view(dtype2).reshape(1, 256)
    return np.ascontiguousarray(core(x1, x2, params)).reshape(-1)


def _by_pairs(core: Callable, x1: np.ndarray, x2: np.ndarray, params) -> np.ndarray:
    """``core(x1, x2, params)``, through `pair_table` for 8-bit inputs once the table is
    worth building."""
    if x1.dtype.itemsize != 1 or x2.dtype.itemsize != 1 or x1.dtype.kind not in "iu" \
            or x2.dtype.kind not in "iu":
        return core(x1, x2, params)
    key = (core, params, x1.dtype, x2.dtype)
    spent = _pair_elements.get(key, 0)
    if spent < PAIR_TABLE_AFTER:
        if len(_pair_elements) > 4096:
            _pair_elements.clear()
        _pair_elements[key] = spent + max(x1.size, x2.size)
        return core(x1, x2, params)
    table = pair_table(*key)
    index = x1.view(np.uint8).astype(np.intp)
    index <<= 8
    return np.take(table, index | x2.view(np.uint8))


def checked_log2(x: float) -> tuple[bool, int]:
    """CheckedLog2: (is a power of two within 1e-3 in log2, rounded log2) in float32."""
    x = np.float32(x)
    if x <= 0:
        return False, 0
    with np.errstate(all="ignore"):
        lg = np.float32(np.log(np.float64(x))) * np.float32(1.0 / np.log(np.float32(2.0)))
    rounded = np.float32(qm.round_half_away(lg))
    return bool(abs(np.float32(lg - rounded)) < np.float32(1e-3)), int(rounded)


@dataclass(frozen=True)
class ArithmeticParams:
    """The ArithmeticParams add.cc / sub.cc / squared_difference.cc Prepare fills in."""

    dtype: np.dtype
    left_shift: int
    input1_offset: int
    input2_offset: int
    output_offset: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int
    rounding: Rounding
    pot_int16: bool = False  # the int16 power-of-two (LSTM) path


def _general(iq1: QParams, iq2: QParams, oq: QParams, dtype: np.dtype, left_shift: int,
             act: tuple[int, int], rounding: Rounding, squared: bool = False) -> ArithmeticParams:
    s1, s2, so = iq1.s, iq2.s, oq.s
    twice_max = 2.0 * max(s1, s2)
    real1 = s1 / twice_max
    real2 = s2 / twice_max
    if squared:
        real_out = twice_max * twice_max / float(np.float32((1 << (2 * left_shift)) * np.float32(so)))
    else:
        real_out = twice_max / float(np.float32((1 << left_shift) * np.float32(so)))
    m1, sh1 = (int(v) for v in qm.quantize_multiplier(real1, rounding))
    m2, sh2 = (int(v) for v in qm.quantize_multiplier(real2, rounding))
    mo, sho = (int(v) for v in qm.quantize_multiplier(real_out, rounding))
    return ArithmeticParams(dtype, left_shift, -iq1.zp, -iq2.zp, oq.zp, m1, sh1, m2, sh2, mo,
                            sho, act[0], act[1], rounding)


def prepare_add(input1_q, input2_q, output_q, options: Options, dtype,
                rounding: Rounding = "double") -> ArithmeticParams:
    """add.cc / sub.cc Prepare (identical arithmetic for both ops).

    twice_max_input_scale = 2 * max(s1, s2); input multipliers s_i / twice_max; output
    multiplier twice_max / (2^left_shift * s_out); all through QuantizeMultiplier.
    """
    rounding = check_rounding(rounding)
    iq1, iq2, oq = qparams(input1_q), qparams(input2_q), qparams(output_q)
    dtype = np.dtype(dtype)
    act = fused_activation_range(activation_of(options), oq, dtype)
    if dtype == np.int16 and options.get("pot_scale_int16", True):
        pots = [checked_log2(q.s) for q in (iq1, iq2, oq)]
        if all(ok for ok, _ in pots):
            sh1 = pots[0][1] - pots[2][1]
            sh2 = pots[1][1] - pots[2][1]
            return ArithmeticParams(dtype, 0, 0, 0, 0, 0, sh1, 0, sh2, 0, 0, act[0], act[1],
                                    rounding, pot_int16=True)
    left_shift = 15 if dtype == np.int16 else 20
    return _general(iq1, iq2, oq, dtype, left_shift, act, rounding)


def _scaled_inputs(x1: np.ndarray, x2: np.ndarray, p: ArithmeticParams) -> tuple[np.ndarray, np.ndarray]:
    """Both inputs offset, shifted left and rescaled to the common scale (int64 arrays);
    8-bit inputs read their values from `byte_scaled` (each is a function of one byte)."""
    if x1.dtype.itemsize == 1 and x2.dtype.itemsize == 1 and x1.dtype.kind in "iu" \
            and x2.dtype.kind in "iu":
        first, second = byte_scaled(p, x1.dtype, x2.dtype)
        return first.take(x1.view(np.uint8)), second.take(x2.view(np.uint8))
    return _scaled_each(x1, x2, p)


def _scaled_each(x1: np.ndarray, x2: np.ndarray, p: ArithmeticParams) -> tuple[np.ndarray, np.ndarray]:
    """`_scaled_inputs` computed element by element (the reference kernels' arithmetic)."""
    a = wrap32((x1.astype(np.int64) + p.input1_offset) << p.left_shift)
    b = wrap32((x2.astype(np.int64) + p.input2_offset) << p.left_shift)
    return (_mbqm(a, p.input1_multiplier, p.input1_shift, p.rounding),
            _mbqm(b, p.input2_multiplier, p.input2_shift, p.rounding))


@lru_cache(maxsize=512)
def byte_scaled(p: ArithmeticParams, dtype1: np.dtype, dtype2: np.dtype
                ) -> tuple[np.ndarray, np.ndarray]:
    """`_scaled_each` of every value of two 8-bit inputs: per input, 256 int64 values,
    entry b for the input whose byte is b (a quarter of the per-element cost on a
    model's small ADDs, which never reach `PAIR_TABLE_AFTER`)."""
    bits = np.arange(256, dtype=np.uint8)
    return _scaled_each(bits.view(dtype1), bits.view(dtype2), p)


def compiled_add_or_sub(p: ArithmeticParams, dtype1: np.dtype, dtype2: np.dtype,
                        sign: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """ADD (``sign`` 1) or SUB (-1) of two 8-bit arrays of one shape as one compiled
    lookup, a function of the two arrays: the node's `pair_table` computed once by the
    compiled loop of add.cc's integers (`compiled_loops.add_bytes`, from `byte_scaled`'s
    tables; 0.1 ms against numpy's 0.7), then each output read from it by its two bytes
    (`compiled_loops.lookup_pairs`: 2 against 5 us on 4,608 elements).  None when
    compiled kernels are off, for other types and int16's power-of-two form, and where the
    two scaled inputs could wrap int32 or the output multiplier needs the step-by-step
    rounding (`requantize_table`).  A model's small ADDs spent 10 us each in the numpy
    form's dozen calls."""
    loops = compiled.loops()
    dtypes = {np.dtype(np.int8), np.dtype(np.uint8)}
    if loops is None or p.pot_int16 or np.dtype(dtype1) not in dtypes \
            or np.dtype(dtype2) not in dtypes:
        return None
    table = _compiled_pair_table(loops, p, np.dtype(dtype1), np.dtype(dtype2), sign)
    if table is None:
        return None

    byte = np.zeros(1, np.uint8)
    lookup = compiled.entry(loops.lookup_pairs, byte, byte, table, np.zeros(1, p.dtype))

    def run(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        out = np.empty(x1.shape, p.dtype)
        lookup(np.ascontiguousarray(x1).reshape(-1).view(np.uint8),
               np.ascontiguousarray(x2).reshape(-1).view(np.uint8), table, out.reshape(-1))
        return out
    return run


@lru_cache(maxsize=512)
def _compiled_pair_table(loops, p: ArithmeticParams, dtype1: np.dtype, dtype2: np.dtype,
                         sign: int) -> np.ndarray | None:
    """`compiled_add_or_sub`'s table: entry ``(b1 << 8) | b2`` for the bytes b1, b2."""
    first, second = byte_scaled(p, dtype1, dtype2)
    if int(np.abs(first).max()) + int(np.abs(second).max()) >= 1 << 31:
        return None
    multiply = loops.requantize_table(p.output_multiplier, p.output_shift, 1,
                                      p.rounding == "double")
    if multiply is None:
        return None
    bits = np.arange(256, dtype=np.uint8)
    table = np.empty(PAIR_TABLE_SIZE, p.dtype)
    loops.add_bytes(np.repeat(bits, 256), np.tile(bits, 256), first, second, sign, multiply,
                    p.output_offset, p.act_min, p.act_max, table)
    return table


def _finish(raw: np.ndarray, p: ArithmeticParams) -> np.ndarray:
    out = qm.requantize_int64(raw, p.output_multiplier, p.output_shift, p.rounding)
    out += p.output_offset
    qm.clip_into(out, p.act_min, p.act_max)
    return out.astype(p.dtype)


def _pot_int16(x1: np.ndarray, x2: np.ndarray, p: ArithmeticParams, sign: int) -> np.ndarray:
    """reference_ops::Add (int16, pot_scale) / Sub16: one input is rounding-shifted right,
    then a saturating Q0.15 add or subtract."""
    a = x1.astype(np.int64)
    b = x2.astype(np.int64)
    if p.input1_shift == 0:
        b = qm.rounding_divide_by_pot(b, -p.input2_shift)
    else:
        a = qm.rounding_divide_by_pot(a, -p.input1_shift)
    out = np.clip(a + sign * b, -32768, 32767)
    return np.clip(out, p.act_min, p.act_max).astype(np.int16)


def _add_or_sub(input1: np.ndarray, input2: np.ndarray, input1_q, input2_q, output_q,
                options: Options | None, rounding: Rounding, params: ArithmeticParams | None,
                sign: int) -> np.ndarray:
    """ADD (sign +1) and SUB (-1) share their prepare and their arithmetic but the sign."""
    options = options or {}
    p = params or prepare_add(input1_q, input2_q, output_q, options, input1.dtype, rounding)
    if p.pot_int16:
        return _pot_int16(input1, input2, p, sign)
    return _by_pairs(_add_core if sign > 0 else _sub_core, np.asarray(input1),
                     np.asarray(input2), p)


def _add_core(input1: np.ndarray, input2: np.ndarray, p: ArithmeticParams) -> np.ndarray:
    a, b = _scaled_inputs(input1, input2, p)
    return _finish(a + b, p)


def _sub_core(input1: np.ndarray, input2: np.ndarray, p: ArithmeticParams) -> np.ndarray:
    a, b = _scaled_inputs(input1, input2, p)
    return _finish(a - b, p)


def add(input1: np.ndarray, input2: np.ndarray, input1_q=None, input2_q=None, output_q=None,
        options: Options | None = None, rounding: Rounding = "double",
        params: ArithmeticParams | None = None) -> np.ndarray:
    """Quantized ADD (AddElementwise / BroadcastAdd6DSlow)."""
    return _add_or_sub(input1, input2, input1_q, input2_q, output_q, options, rounding, params, +1)


def sub(input1: np.ndarray, input2: np.ndarray, input1_q=None, input2_q=None, output_q=None,
        options: Options | None = None, rounding: Rounding = "double",
        params: ArithmeticParams | None = None) -> np.ndarray:
    """Quantized SUB (SubElementwise / BroadcastQuantSubSlow, or Sub16 for POT int16)."""
    return _add_or_sub(input1, input2, input1_q, input2_q, output_q, options, rounding, params, -1)


def prepare_squared_difference(input1_q, input2_q, output_q, rounding: Rounding = "double"
                               ) -> ArithmeticParams:
    """squared_difference.cc Prepare (int8): left shift 7, output multiplier
    twice_max^2 / (2^14 * s_out), no fused activation."""
    rounding = check_rounding(rounding)
    lo, hi = dtype_range(np.int8)
    return _general(qparams(input1_q), qparams(input2_q), qparams(output_q), np.dtype(np.int8),
                    7, (lo, hi), rounding, squared=True)


def squared_difference(input1: np.ndarray, input2: np.ndarray, input1_q=None, input2_q=None,
                       output_q=None, rounding: Rounding = "double",
                       params: ArithmeticParams | None = None) -> np.ndarray:
    """Quantized SQUARED_DIFFERENCE (int8): (scaled1 - scaled2)^2 in int32, rescaled."""
    p = params or prepare_squared_difference(input1_q, input2_q, output_q, rounding)
    return _by_pairs(_squared_difference_core, np.asarray(input1), np.asarray(input2), p)


def _squared_difference_core(input1: np.ndarray, input2: np.ndarray,
                             p: ArithmeticParams) -> np.ndarray:
    a, b = _scaled_inputs(input1, input2, p)
    diff = a - b
    return _finish(diff * diff, p)


MulParams = ScaledBinaryParams


def prepare_mul(input1_q, input2_q, output_q, options: Options, dtype,
                rounding: Rounding = "double") -> MulParams:
    """mul.cc Prepare: s1 * s2 / s_out evaluated in float32, then QuantizeMultiplier."""
    rounding = check_rounding(rounding)
    iq1, iq2, oq = qparams(input1_q), qparams(input2_q), qparams(output_q)
    real = float(np.float32(np.float32(iq1.s) * np.float32(iq2.s)) / np.float32(oq.s))
    return prepare_scaled_binary(iq1, iq2, oq, real, options, dtype, rounding)


def mul(input1: np.ndarray, input2: np.ndarray, input1_q=None, input2_q=None, output_q=None,
        options: Options | None = None, rounding: Rounding = "double",
        params: MulParams | None = None) -> np.ndarray:
    """Quantized MUL (MulElementwise / BroadcastMul6DSlow): the int32 product of the
    offset inputs times the quantized multiplier."""
    options = options or {}
    p = params or prepare_mul(input1_q, input2_q, output_q, options, input1.dtype, rounding)
    return _by_pairs(_mul_core, np.asarray(input1), np.asarray(input2), p)


def _mul_core(input1: np.ndarray, input2: np.ndarray, p: MulParams) -> np.ndarray:
    prod = wrap32((input1.astype(np.int64) + p.input1_offset)
                  * (input2.astype(np.int64) + p.input2_offset))
    out = _mbqm(prod, p.multiplier, p.shift, p.rounding) + p.output_offset
    return np.clip(out, p.act_min, p.act_max).astype(p.dtype)


def maximum(input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """MAXIMUM on quantized tensors compares raw values (inputs share the output's
    quantization, as the converter guarantees)."""
    return np.maximum(input1, input2)


def minimum(input1: np.ndarray, input2: np.ndarray) -> np.ndarray:
    """MINIMUM on quantized tensors compares raw values."""
    return np.minimum(input1, input2)
