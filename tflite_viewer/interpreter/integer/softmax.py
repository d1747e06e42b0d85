"""Quantized SOFTMAX (uint8/int8 -> uint8/int8/int16, int16 -> int16).

8-bit inputs follow ``reference_ops::Softmax``: differences to the row maximum rescaled to
Q5.26 by ``PreprocessSoftmaxScaling``'s multiplier, gemmlowp's ``exp_on_negative_values``,
a Q12.19 sum and its reciprocal from ``GetReciprocal``.  int16 follows
``reference_ops::SoftmaxInt16`` with the exp and 1/(1+x) tables of SoftmaxPrepare.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .. import quant_math as qm
from . import fixedpoint as fp
from .common import Rounding, check_rounding, qparams
from .lut import lut_lookup_int16, lut_populate_int16

SCALED_DIFF_INTEGER_BITS = 5
ACCUMULATION_INTEGER_BITS = 12


@dataclass(frozen=True)
class SoftmaxParams:
    input_multiplier: int
    input_left_shift: int
    diff_min: int
    rounding: Rounding
    exp_lut: np.ndarray | None = None
    one_over_one_plus_x_lut: np.ndarray | None = None
    #: 8-bit inputs: exp_on_negative_values of every possible difference to the row
    #: maximum (indexed by -diff, 0..255), and its Q12.19 term of the sum (0 where the
    #: difference is below diff_min); see `_diff_tables`
    exp_table: np.ndarray | None = None
    sum_table: np.ndarray | None = None
    sum_values: tuple = ()  # sum_table as Python ints (short rows are summed in Python)
    #: 8-bit inputs: a row's outputs depend only on its sum of exps, so each sum met maps
    #: to the output of every possible difference (see `_row_table`)
    row_tables: dict = field(default_factory=dict, compare=False, repr=False)


def preprocess_softmax_scaling(beta: float, input_scale: float, integer_bits: int,
                               rounding: Rounding) -> tuple[int, int]:
    """PreprocessSoftmaxScaling: beta * s_in * 2^(31 - integer_bits), capped below 2^30
    (single-rounding builds) or 2^31 (double), as a multiplier greater than one."""
    cap = (1 << 30) - 1.0 if rounding == "single" else (1 << 31) - 1.0
    real = min(beta * input_scale * (1 << (31 - integer_bits)), cap)
    m, s = qm.quantize_multiplier(real, rounding)
    return int(m), int(s)


def calculate_input_radius(integer_bits: int, left_shift: int, total_signed_bits: int = 31) -> int:
    """CalculateInputRadius: the largest input difference that does not saturate."""
    max_rescaled = (1.0 * ((1 << integer_bits) - 1) * (1 << (total_signed_bits - integer_bits))
                    / (1 << left_shift))
    return int(math.floor(max_rescaled))


@lru_cache(maxsize=1)
def _int16_luts() -> tuple[np.ndarray, np.ndarray]:
    rng = 65535
    exp_lut = lut_populate_int16(10.0 / rng, 32767, 2.0 / rng, 0, math.exp, np.float64)
    inv_lut = lut_populate_int16(1.0 / rng, -32768, 2.0 / rng, 0, lambda v: 1.0 / (1.0 + v),
                                 np.float64)
    return exp_lut, inv_lut


def prepare_softmax(input_q, beta: float, input_dtype, rounding: Rounding = "double"
                    ) -> SoftmaxParams:
    """SoftmaxPrepare (kReference)."""
    rounding = check_rounding(rounding)
    iq = qparams(input_q)
    if np.dtype(input_dtype) == np.int16:
        exp_lut, inv_lut = _int16_luts()
        real = float(np.float32(np.float32(iq.s) * np.float32(beta))) / (10.0 / 65535.0)
        m, s = qm.quantize_multiplier(real, rounding)
        return SoftmaxParams(int(m), int(s), 0, rounding, exp_lut, inv_lut)
    m, s = preprocess_softmax_scaling(float(np.float32(beta)), iq.s, SCALED_DIFF_INTEGER_BITS,
                                      rounding)
    diff_min = -calculate_input_radius(SCALED_DIFF_INTEGER_BITS, s)
    exp_table, sum_table = _diff_tables(m, s, diff_min, rounding)
    return SoftmaxParams(m, s, diff_min, rounding, exp_table=exp_table, sum_table=sum_table,
                         sum_values=tuple(sum_table.tolist()))


def _diff_exps(diff: np.ndarray, multiplier: int, shift: int, diff_min: int,
               rounding: Rounding) -> tuple[np.ndarray, np.ndarray]:
    """The per-element part of reference_ops::Softmax: the difference to the row maximum
    rescaled to Q5.26, its exp (Q0.31), and its Q12.19 contribution to the sum (0 where the
    difference is below diff_min)."""
    rescaled = qm.multiply_by_quantized_multiplier(diff, multiplier, shift, rounding)
    exp = fp.exp_on_negative_values(rescaled, SCALED_DIFF_INTEGER_BITS)
    scaled = fp.rescale(exp, 0, ACCUMULATION_INTEGER_BITS)
    return exp, np.where(diff >= diff_min, scaled, 0)


def _diff_tables(multiplier: int, shift: int, diff_min: int,
                 rounding: Rounding) -> tuple[np.ndarray, np.ndarray]:
    """`_diff_exps` of every difference an 8-bit input can have (0 down to -255), indexed
    by -diff: computed once in prepare, looked up per element (same values, fewer ops)."""
    diffs = -np.arange(256, dtype=np.int64)
    return _diff_exps(diffs, multiplier, shift, diff_min, rounding)


def _softmax_tail(exp: np.ndarray, sum_of_exps: np.ndarray, keep: np.ndarray,
                  output_dtype) -> np.ndarray:
    """reference_ops::Softmax after the sum: its reciprocal (GetReciprocal) times each exp,
    shifted to the output's 1/256 (or 1/65536) scale; dropped differences give the minimum."""
    headroom_plus_one = fp.count_leading_zeros_u32(sum_of_exps)
    num_bits_over_unit = ACCUMULATION_INTEGER_BITS - headroom_plus_one
    shifted_sum_minus_one = fp.wrap32(((sum_of_exps & 0xFFFFFFFF) << headroom_plus_one)
                                      - (1 << 31))
    shifted_scale = fp.one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one)
    out_bits = np.dtype(output_dtype).itemsize * 8
    exponent = num_bits_over_unit + 31 - out_bits
    unsat = fp.rounding_divide_by_pot(fp.mul(shifted_scale, exp), exponent)
    info = np.iinfo(output_dtype)
    out = np.clip(unsat + int(info.min), int(info.min), int(info.max))
    return np.where(keep, out, int(info.min)).astype(output_dtype)


#: Up to this many rows, rows are finished through `_row_table` one by one.
_FEW_ROWS = 16
#: Bound on the sums remembered per node.
_ROW_TABLES_MAX = 4096


def _row_table(p: SoftmaxParams, sum_of_exps: int, output_dtype) -> np.ndarray:
    """The outputs of a row whose wrapped sum of exps is ``sum_of_exps``, for every
    difference to the row maximum (indexed by -diff): `_softmax_tail` of the whole exp
    table at once, remembered, so a one-row softmax (a classifier's head) costs a lookup."""
    key = (sum_of_exps, output_dtype)
    table = p.row_tables.get(key)
    if table is None:
        keep = -np.arange(p.exp_table.size) >= p.diff_min
        table = _softmax_tail(p.exp_table, np.array(sum_of_exps, np.int64), keep, output_dtype)
        if len(p.row_tables) >= _ROW_TABLES_MAX:
            p.row_tables.clear()
        p.row_tables[key] = table
    return table


#: Few rows up to this long are summed in Python (below it numpy's per-call cost dominates).
_SHORT_ROW = 32


def _softmax_short_rows(rows: list[list[int]], p: SoftmaxParams, output_dtype) -> np.ndarray:
    """`_softmax_8bit`'s few-row path on rows given as Python ints: the row maximum and the
    wrapped int32 sum of table terms in Python, then one row-table lookup per row (for a
    single row that lookup is the output: [n], which the caller reshapes)."""
    out = np.empty((len(rows), len(rows[0])), output_dtype) if len(rows) > 1 else None
    terms = p.sum_values
    for r, values in enumerate(rows):
        top = max(values)
        minus_diff = [top - v for v in values]
        total = sum([terms[d] for d in minus_diff])
        total = ((total + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)  # C's int32 wrap
        table = _row_table(p, total, output_dtype)
        if out is None:
            return table.take(minus_diff)
        out[r] = table[minus_diff]
    return out


def _softmax_8bit(x: np.ndarray, p: SoftmaxParams, output_dtype) -> np.ndarray:
    if p.exp_table is not None and x.size and x.size // x.shape[-1] <= _FEW_ROWS:
        if x.shape[-1] <= _SHORT_ROW and p.sum_values:
            rows = x.reshape(-1, x.shape[-1]).tolist()
            return _softmax_short_rows(rows, p, output_dtype).reshape(x.shape)
        v = x.astype(np.int32).reshape(-1, x.shape[-1])
        minus_diff = v.max(axis=-1, keepdims=True) - v  # 0..255
        sums = fp.wrap32(p.sum_table[minus_diff].sum(axis=-1))
        out = np.empty(v.shape, output_dtype)
        for r, total in enumerate(sums.tolist()):
            out[r] = _row_table(p, total, output_dtype)[minus_diff[r]]
        return out.reshape(x.shape)
    v = x.astype(np.int64)
    diff = v - v.max(axis=-1, keepdims=True)
    keep = diff >= p.diff_min
    if p.exp_table is not None:
        exp, terms = p.exp_table[-diff], p.sum_table[-diff]
    else:
        exp, terms = _diff_exps(diff, p.input_multiplier, p.input_left_shift, p.diff_min,
                                p.rounding)
    sum_of_exps = fp.wrap32(terms.sum(axis=-1, keepdims=True))
    return _softmax_tail(exp, sum_of_exps, keep, output_dtype)


def _softmax_int16(x: np.ndarray, p: SoftmaxParams) -> np.ndarray:
    v = x.astype(np.int64)
    diff = v - v.max(axis=-1, keepdims=True)
    scaled = qm.multiply_by_quantized_multiplier(diff, p.input_multiplier, p.input_left_shift,
                                                 p.rounding)
    sym = np.clip(scaled + 32767, -32768, 32767)
    exp = lut_lookup_int16(sym, p.exp_lut).astype(np.int64)
    total = fp.wrap32(exp.sum(axis=-1, keepdims=True))
    headroom_plus_one = fp.count_leading_zeros_u32(total)
    shifted = ((total << (headroom_plus_one - 1)) + (1 << 13)) >> 14
    sym_sum = np.clip(fp.wrap32(shifted) - ((1 << 15) + (1 << 16)), -32768, 32767)
    reciprocal = lut_lookup_int16(sym_sum, p.one_over_one_plus_x_lut).astype(np.int64)
    right_shift = 31 - headroom_plus_one
    result = (exp * reciprocal + (np.int64(1) << (right_shift - 1))) >> right_shift
    return np.clip(result, 0, 32767).astype(np.int16)


def prepared_softmax(p: SoftmaxParams, input_dtype, output_dtype
                     ) -> Callable[[np.ndarray], np.ndarray]:
    """`softmax` of inputs of ``input_dtype`` with prepared params, as one function of the
    input (what a node keeps from prepare, so that an invoke does no dispatch)."""
    if np.dtype(input_dtype) == np.int16:
        return lambda x: _softmax_int16(x, p)
    output_dtype = np.dtype(output_dtype)
    return lambda x: _softmax_8bit(x, p, output_dtype)


def softmax(x: np.ndarray, input_q, beta: float = 1.0, output_dtype=None,
            rounding: Rounding = "double", params: SoftmaxParams | None = None) -> np.ndarray:
    """Quantized SOFTMAX over the last axis.

    8-bit outputs have scale 1/256 and zero point at the type minimum; int16 outputs
    scale 1/32768 and zero point 0 (SoftmaxPrepare checks these).
    """
    output_dtype = np.dtype(output_dtype or x.dtype)
    p = params or prepare_softmax(input_q, beta, x.dtype, rounding)
    if x.dtype == np.int16:
        return _softmax_int16(x, p)
    return _softmax_8bit(x, p, output_dtype)


# ----------------------------------------------------------------------------- LOG_SOFTMAX

LOG_SOFTMAX_OUTPUT_INTEGER_BITS = 4


@dataclass(frozen=True)
class LogSoftmaxParams:
    input_multiplier: int
    input_left_shift: int
    reverse_multiplier: int
    reverse_shift: int  # the exponent PreprocessLogSoftmaxScalingExp returns
    diff_min: int
    rounding: Rounding


def prepare_log_softmax(input_q, rounding: Rounding = "double") -> LogSoftmaxParams:
    """LogSoftmaxPrepare (kReference): beta 1, ``PreprocessLogSoftmaxScalingExp`` with 5
    integer bits (the input multiplier of softmax and the reciprocal of its scaling)."""
    rounding = check_rounding(rounding)
    iq = qparams(input_q)
    m, s = preprocess_softmax_scaling(1.0, iq.s, SCALED_DIFF_INTEGER_BITS, rounding)
    real_reverse = float(1 << (31 - s)) / float(m)
    rm, rs = qm.quantize_multiplier(real_reverse, rounding)
    diff_min = -calculate_input_radius(SCALED_DIFF_INTEGER_BITS, s)
    return LogSoftmaxParams(m, s, int(rm), int(rs), diff_min, rounding)


def log_softmax(x: np.ndarray, input_q=None, rounding: Rounding = "double",
                params: LogSoftmaxParams | None = None) -> np.ndarray:
    """Quantized LOG_SOFTMAX over the last axis (uint8 or int8).

    Follows ``reference_ops::LogSoftmax`` (uint8) and ``reference_integer_ops::LogSoftmax``
    (int8): differences to the row maximum in Q5.26, a Q12.19 sum of their exps, its log in
    Q5.26, and ``diff - log(sum)`` rescaled to the output's 16/256 scale with zero point at
    the type maximum (255 or 127); differences too negative to represent give the minimum.
    """
    p = params or prepare_log_softmax(input_q, rounding)
    info = np.iinfo(x.dtype)
    v = x.astype(np.int64)
    diff = v - v.max(axis=-1, keepdims=True)
    keep = diff >= p.diff_min
    diff_q5 = qm.multiply_by_quantized_multiplier(diff, p.input_multiplier, p.input_left_shift,
                                                  p.rounding)
    exp = fp.exp_on_negative_values(diff_q5, SCALED_DIFF_INTEGER_BITS)
    scaled = fp.rescale(exp, 0, ACCUMULATION_INTEGER_BITS)
    sum_of_exps = fp.wrap32(np.where(keep, scaled, 0).sum(axis=-1, keepdims=True))
    log_sum = fp.log_x_for_x_greater_than_or_equal_to_1(
        sum_of_exps, ACCUMULATION_INTEGER_BITS, SCALED_DIFF_INTEGER_BITS)
    shifted = fp.wrap32(log_sum + qm.INT32_MIN)
    adjusted_diff_min = np.maximum(p.diff_min - 1, qm.multiply_by_quantized_multiplier(
        shifted, p.reverse_multiplier, p.reverse_shift, p.rounding))
    valid = diff > adjusted_diff_min
    exponent = 31 - SCALED_DIFF_INTEGER_BITS - LOG_SOFTMAX_OUTPUT_INTEGER_BITS
    out = fp.rounding_divide_by_pot(fp.wrap32(diff_q5 - log_sum), exponent) + int(info.max)
    out = np.clip(out, int(info.min), int(info.max))
    return np.where(valid, out, int(info.min)).astype(x.dtype)
