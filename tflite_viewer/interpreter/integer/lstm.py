"""Integer UNIDIRECTIONAL_SEQUENCE_LSTM, 8x8_16: int8 input/output/weights, int16 cell state.

Mirrors ``lstm_eval::EvalInteger8x8_16`` / ``LstmStepInteger8x8_16`` with
unidirectional_sequence_lstm.cc's ``PopulateQuantizedLstmParams8x8_16`` and
``PopulatePrecomputedZPTimesWeightsWithBias`` (LiteRT's unidirectional kernel has no 8x8_8
path: that one belongs to the full LSTM op).  Per step and gate (``i`` absent with CIFG):

* ``gate = clamp16(MBQM(bias_x + W_x (x - zp_x)) )``, then
  ``gate = clamp16(gate + MBQM(W_h (h - zp_h)))`` with the effective scales
  ``s_W * s_x / s_gate`` (``s_gate`` = 2^-12, or the gate intermediate's scale with layer
  normalization; without it the gate bias rides in ``bias_x``);
* peephole (``i``, ``f`` with the old cell, ``o`` with the new one):
  ``gate = clamp16(gate + MBQM(w_p * c, 2^cell_scale * s_p / s_gate))`` - over the first
  ``n_output`` values of each step's flat gate buffer, as LiteRT passes ``n_output`` for
  the vector size (the same as ``n_cell`` unless projection shrinks the output);
* layer normalization (``ApplyLayerNorm``): integer mean and variance, the inverse square
  root as a quantized multiplier, ``* coefficient + bias`` (which the C source writes in
  int32 arithmetic but LiteRT's build does not wrap: measured, so int64 here), rescaled by
  the coefficients' scale into Q3.12;
* gemmlowp's int16 ``logistic`` (i, f, o) or ``tanh`` (c) on Q3.12;
* cell: ``c = clip(sat16(RDBPOT(f * c, 15) + RDBPOT(i * g, 30 + cell_scale)))``;
* hidden: ``o * tanh(c)`` (Q0.15 each) requantized by ``2^-30 / s_hidden``; without
  projection plus the hidden zero point, clamped: the new output state.  With projection
  minus that zero point (LiteRT's b/246629213), clamped to an int8 vector ``v`` that
  ``clamp8(MBQM(bias_p + zp_hidden * rowsum(W_p) + W_p v) + zp_state)`` maps to the output
  state, clipped by the proj clip quantized with the output tensor's scale.

Speed (a step of a small LSTM is a few dozen numpy calls on tiny arrays, ~0.2-0.3 us
each whatever the size, so the call count is what matters): `_Runner` compiles each
sequence length into a flat program of numpy calls on preallocated buffers (16 per step
for a plain LSTM, from some thirty).  The input contributions of every step come from one
matmul and one requantization for the whole sequence.  A step is one float64 matmul of the
output state against every gate's recurrent weights side by side (the effective biases as
an extra row, the requantization multipliers folded in while float64 stays exact), the
double rounding's sign nudge as ``copysign``, the floor division with the step's input
contribution in float64 or int64, one clip and one table lookup for every gate and the
cell state's scaled form (`_scaled`: its products with Q0.15 gates round as
RoundingDivideByPOT without a sign test), the cell update as one product ``[i, f] * [g, c]``
plus one add and one shift, one lookup of the new cell state's tanh (times the hidden
multiplier) with its rounding addend, and four calls to the new output state.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .. import quant_math as qm
from . import fixedpoint as fx
from . import fixedpoint16 as fp
from .common import Rounding, check_rounding, qparams, wrap32
from .elementwise import checked_log2

GATE_ORDER = ("i", "f", "c", "o")
COLUMNS = ("i", "f", "o", "c")
COLUMNS_PEEPHOLE = ("i", "f", "c", "o")
I16_MIN, I16_MAX = -32768, 32767
_INT32_LIMIT = (1 << 31) - 1


def _f32(x) -> np.float32:
    return np.float32(x)


def _qmul(real: float, rounding: Rounding) -> tuple[int, int]:
    m, e = qm.quantize_multiplier(float(real), rounding)
    return int(m), int(e)


#: one numpy call of a step program: (function, positional arguments)
Call = tuple[Callable[..., object], tuple]


def _run(calls: list[Call]) -> None:
    """Execute a program of calls: as fast as the same calls written out (measured)."""
    for f, args in calls:
        f(*args)


def _full(v, shape) -> np.ndarray:
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
            return None if v is None else _full(v, shape)
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
            calls += [(np.left_shift, (x, left, x)), (_wrap32_inplace, (x,))]
        if not premultiplied:
            calls.append((np.multiply, (x, m, x)))
        if neg is not None:
            calls += [(np.right_shift, (x, _full(63, x.shape), tmp)),
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


@dataclass
class LayerNormParams:
    """ApplyLayerNorm's constants for a run of consecutive gates (k gates of n cells)."""

    coef: np.ndarray      # int64 [k, n] (int16 coefficients)
    bias: np.ndarray      # int64 [k, n] (int32 gate biases, zero when absent)
    scale: object         # MBQM(., layer_norm_scale_a, layer_norm_scale_b + 12) per gate,
    #                       bound to [batch, k, n] (FixedMultiplier.bind)
    guard: np.ndarray     # int64 [k] variance guards


@dataclass
class LstmParams:
    names: list[str] = field(default_factory=list)   # gates present, in column order
    n_input: int = 0
    n_cell: int = 0
    n_output: int = 0
    # input side: [n_input, G*n_cell] float64, int32 effective biases, per-column scales
    w_x: np.ndarray | None = None
    bias_x: np.ndarray | None = None
    scale_x: tuple[np.ndarray, np.ndarray] | None = None
    x_fold: tuple | None = None   # (W_x and bias rows times m, offset, nudge, shift)
    # recurrent side: [n_output + 1, G*n_cell] float64, the last row the effective biases
    w_h: np.ndarray | None = None
    wrap_h: bool = False
    h_bound: np.ndarray | None = None   # per column: |bias_h| + 128 * sum |W_h| >= |dot|
    scale_h: tuple[np.ndarray, np.ndarray] | None = None   # per column
    req_h: FixedMultiplier | None = None
    peephole: dict[str, tuple[np.ndarray, tuple[int, int]]] = field(default_factory=dict)
    layer_norm: dict[str, tuple[np.ndarray, np.ndarray, tuple[int, int], int]] = \
        field(default_factory=dict)
    cell_scale: int = -12
    cell_clip: int = 0
    hidden_scale: tuple[int, int] = (0, 0)
    hidden_zp: int = 0
    # projection: [n_cell + 1, n_output] float64 (last row the effective bias)
    w_p: np.ndarray | None = None
    wrap_p: bool = False
    proj_scale: tuple[int, int] = (0, 0)
    output_state_zp: int = 0
    proj_clip: int = 0
    rounding: Rounding = "double"
    _runners: dict = field(default_factory=dict, repr=False)

    @property
    def cifg(self) -> bool:
        return "i" not in self.names


def _effective(w_scale, act_scale, inter) -> float:
    """``w_scale * act_scale / intermediate_scale`` in float32, as LiteRT computes it."""
    return float(_f32(_f32(_f32(w_scale) * _f32(act_scale)) / _f32(inter)))


def prepare_lstm(input_q, weights: dict, biases: dict, output_state_q, cell_state_q,
                 hidden_q, cell_clip: float, rounding: Rounding = "double", *,
                 peephole: dict | None = None, layer_norm: dict | None = None,
                 gate_qs=None, projection=None, proj_clip: float = 0.0,
                 output_q=None) -> LstmParams:
    """PopulateQuantizedLstmParams8x8_16 + PopulatePrecomputedZPTimesWeightsWithBias.

    ``weights`` maps gate -> (input weights, their quantization, recurrent weights, theirs);
    ``biases`` gate -> int32 bias (or None); ``peephole`` gate ("i", "f", "o") -> (int16
    weights, quantization); ``layer_norm`` gate -> (int16 coefficients, quantization), with
    ``gate_qs`` the quantization of the four gate intermediates; ``projection`` = (int8
    weights [n_output, n_cell], quantization, int32 bias or None); ``output_q`` the output
    tensor's quantization (what LiteRT quantizes ``proj_clip`` with)."""
    rounding = check_rounding(rounding)
    peephole = peephole or {}
    layer_norm = layer_norm or {}
    iq, hq, cq = qparams(input_q), qparams(output_state_q), qparams(cell_state_q)
    ok, cell_scale = checked_log2(cq.s)
    if not ok:
        raise ValueError(f"cell state scale {cq.s} is not a power of two")
    if not 0 <= 15 + cell_scale <= 6:
        raise ValueError(f"cell state scale 2^{cell_scale}: LiteRT's ApplyTanh takes 0 to 6 "
                         "integer bits (cell scales 2^-15 to 2^-9)")
    names = [g for g in GATE_ORDER if g in weights]
    if names not in (list(GATE_ORDER), list(GATE_ORDER[1:])):
        raise ValueError(f"LSTM gates {names}: need f, c, o and optionally i")
    # column order of the fused gates (see _Runner): the cell gate next to the cell state,
    # the output gate last when a peephole makes it wait for the new cell state
    names = [g for g in (COLUMNS_PEEPHOLE if peephole else COLUMNS) if g in weights]
    if set(peephole) not in (set(), {"f", "o"} | ({"i"} & set(names))):
        raise ValueError(f"peephole weights for {sorted(peephole)}: need i (unless CIFG), f, o")
    if set(layer_norm) not in (set(), set(names)):
        raise ValueError(f"layer norm coefficients for {sorted(layer_norm)}: need every gate")
    use_ln = bool(layer_norm)
    inter = [_f32(2.0 ** -12)] * 4
    if use_ln:
        if gate_qs is None:
            raise ValueError("layer normalization needs the gate intermediates' quantization")
        inter = [_f32(qparams(q).s) for q in gate_qs]
    slot = {g: k for k, g in enumerate(GATE_ORDER)}
    n_cell = weights["f"][0].shape[0]
    n_input = weights["f"][0].shape[1]
    n_output = weights["f"][2].shape[1]
    if projection is None and n_output != n_cell:
        raise ValueError(f"{n_output} outputs for {n_cell} cells without projection")
    if peephole and n_output > n_cell:
        raise ValueError(f"peephole with {n_output} outputs > {n_cell} cells: LiteRT reads "
                         "past the peephole weights")
    p = LstmParams(names=names, n_input=n_input, n_cell=n_cell, n_output=n_output,
                   cell_scale=cell_scale, rounding=rounding)

    wx, bx, mx, ex, wh, bh, mh, eh = [], [], [], [], [], [], [], []
    for g in names:
        w_x, wq_x, w_h, wq_h = weights[g]
        s = inter[slot[g]]
        m, e = _qmul(_effective(qparams(wq_x).s, iq.s, s), rounding)
        mx.append(np.full(n_cell, m, np.int64))
        ex.append(np.full(n_cell, e, np.int64))
        m, e = _qmul(_effective(qparams(wq_h).s, hq.s, s), rounding)
        mh.append(np.full(n_cell, m, np.int64))
        eh.append(np.full(n_cell, e, np.int64))
        w_x = np.asarray(w_x).astype(np.int64)
        w_h = np.asarray(w_h).astype(np.int64)
        bias = biases.get(g)
        b = np.zeros(n_cell, np.int64) if bias is None or use_ln \
            else np.asarray(bias).astype(np.int64)
        # MatrixScalarMultiplyAccumulate: int32 row sums times -zp, added in int32
        bx.append(wrap32(b + wrap32(w_x.sum(axis=1) * -iq.zp)))
        bh.append(wrap32(w_h.sum(axis=1) * -hq.zp))
        wx.append(w_x)
        wh.append(w_h)
    p.w_x = np.ascontiguousarray(np.concatenate(wx, axis=0).T.astype(np.float64))
    p.bias_x = np.concatenate(bx)
    p.scale_x = (np.concatenate(mx), np.concatenate(ex))
    fm = FixedMultiplier(*p.scale_x, rounding)
    bound = np.abs(p.bias_x) + 128 * np.abs(p.w_x).sum(axis=0)   # >= |bias + W_x x|
    # the runner adds the double rounding's nudge (2^30) to the products in float64
    if fm.left is None and bound.max() <= _INT32_LIMIT and \
            float((bound * p.scale_x[0]).max()) + 2.0 ** 30 < 2.0 ** 53:
        w = np.concatenate([p.w_x, p.bias_x[None, :].astype(np.float64)], axis=0)
        p.x_fold = (w * p.scale_x[0].astype(np.float64)[None, :], fm.off, fm.neg, fm.total)
    bias_h = np.concatenate(bh)
    w_h_all = np.concatenate(wh, axis=0)
    p.w_h = np.ascontiguousarray(np.concatenate([w_h_all.T, bias_h[None, :]], axis=0)
                                 .astype(np.float64))
    # int32 accumulation in C: wrap only if bias + dot can leave int32
    p.h_bound = np.abs(bias_h) + 128 * np.abs(w_h_all).sum(axis=1)
    p.wrap_h = bool(p.h_bound.max(initial=0) > _INT32_LIMIT)
    p.scale_h = (np.concatenate(mh), np.concatenate(eh))
    p.req_h = FixedMultiplier(*p.scale_h, rounding)

    for g, (w, q) in peephole.items():
        real = float(_f32(2.0 ** cell_scale * float(_f32(qparams(q).s)) / float(inter[slot[g]])))
        p.peephole[g] = (np.asarray(w).astype(np.int64).reshape(-1), _qmul(real, rounding))
    for g, (w, q) in layer_norm.items():
        s = _f32(qparams(q).s)
        guard = max(1, int(np.trunc(_f32(_f32(10000.0) * s))))
        bias = biases.get(g)
        b = np.zeros(n_cell, np.int64) if bias is None else np.asarray(bias).astype(np.int64)
        p.layer_norm[g] = (np.asarray(w).astype(np.int64).reshape(-1), b,
                           _qmul(float(s), rounding), guard)

    if cell_clip > 0:
        v = _f32(_f32(cell_clip) / _f32(cq.s))
        p.cell_clip = int(np.trunc(min(max(v, _f32(-32768.0)), _f32(32767.0))))
    hid = qparams(hidden_q)
    hidden_scale = float(np.float32(2.0 ** -15 / float(np.float64(np.float32(hid.s))) * 2.0 ** -15))
    p.hidden_scale = _qmul(hidden_scale, rounding)
    p.hidden_zp = hid.zp

    if projection is not None:
        w_p, wq_p, b_p = projection
        w_p = np.asarray(w_p).astype(np.int64)
        b = np.zeros(n_output, np.int64) if b_p is None else np.asarray(b_p).astype(np.int64)
        bias_p = wrap32(b + wrap32(w_p.sum(axis=1) * hid.zp))
        p.w_p = np.ascontiguousarray(np.concatenate([w_p.T, bias_p[None, :]], axis=0)
                                     .astype(np.float64))
        p.wrap_p = bool(np.abs(bias_p).max(initial=0) + 128 * np.abs(w_p).sum(axis=1).max(
            initial=0) > _INT32_LIMIT)
        p.proj_scale = _qmul(_effective(qparams(wq_p).s, hid.s, hq.s), rounding)
        p.output_state_zp = hq.zp
        if proj_clip > 0:
            oq = qparams(output_q if output_q is not None else output_state_q)
            v = _f32(_f32(proj_clip) / _f32(oq.s))
            p.proj_clip = int(np.trunc(min(max(v, _f32(-128.0)), _f32(127.0))))
    return p


try:   # the clip ufunc: one call (np.clip is a Python wrapper, maximum + minimum two calls)
    from numpy._core.umath import clip as _clip
except ImportError:   # numpy < 2
    from numpy.core.umath import clip as _clip

#: regions of the gate table, each indexed by an int16 value + 32768
R_CELL, R_SIGMOID, R_TANH, R_ONE_MINUS = range(4)
REGION = 1 << 16


def _scaled(v: np.ndarray) -> np.ndarray:
    """``v * 2^15 - [v < 0]``: for y in [0, 32767] (a Q0.15 gate value),
    ``floor((y * scaled(v) + 2^(s - 1) * 2^15) / 2^(s + 15))`` is RoundingDivideByPOT(y * v,
    s): the subtracted ``y / 2^15 < 1`` is the -1 that rounds negative ties away from zero
    (y = 0 gives 0 either way), so the cell update needs no sign test."""
    v = np.asarray(v, np.int64)
    return (v << 15) - (v < 0)


@lru_cache(maxsize=None)
def _gate_table() -> np.ndarray:
    """Every activation a step looks up at once, by region (index: int16 value + 32768 +
    region * 2^16): R_CELL the cell state `_scaled`, R_SIGMOID logistic (Q3.12 -> Q0.15),
    R_TANH tanh (Q3.12 -> Q0.15) `_scaled`, R_ONE_MINUS ``32767 - logistic`` (the CIFG
    input gate, LiteRT's Sub1Vector).  int64, for direct use."""
    sig = fp.activation_table("logistic", 3).astype(np.int64)
    t = np.concatenate([_scaled(np.arange(I16_MIN, I16_MAX + 1)), sig,
                        _scaled(fp.activation_table("tanh", 3)), I16_MAX - sig])
    t.setflags(write=False)
    return t


@lru_cache(maxsize=64)
def _cell_table(integer_bits: int, c_lo: int, c_hi: int, multiplier: int, offset: int,
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
def _cell_state_table(c_lo: int, c_hi: int) -> np.ndarray:
    """int16 [65536]: the saved cell state for a cell index ``c + 32768`` (what the runner
    keeps), saturated to int16 by ``take(mode="clip")`` and clipped to [c_lo, c_hi] by the
    values: one lookup instead of a clip, an add and a cast."""
    table = np.clip(np.arange(REGION) + I16_MIN, c_lo, c_hi).astype(np.int16)
    table.setflags(write=False)
    return table


def _clamp(x: np.ndarray, lo: int, hi: int) -> np.ndarray:
    np.maximum(x, lo, out=x)
    np.minimum(x, hi, out=x)
    return x


def _wrap32_inplace(x: np.ndarray) -> None:
    x[...] = x.astype(np.int32)


def _trunc_div_pot(a: np.ndarray, e: int) -> np.ndarray:
    """C's division of int64 values by 2^e (toward zero)."""
    return (a + ((a >> 63) & ((1 << e) - 1))) >> e


def _layer_norm(v: np.ndarray, ln: LayerNormParams, rounding: Rounding) -> None:
    """ApplyLayerNorm over the last axis of ``v`` [batch, k gates, n] (int16 values held
    in int64), in place."""
    n = v.shape[-1]
    total = v.sum(axis=-1)
    sum_sq = np.einsum("bkn,bkn->bk", v, v)
    mean = qm.trunc_div(total * 1024, n)                 # int64 / int, then int32
    variance = _trunc_div_pot(sum_sq * ((1 << 20) // n) - mean * mean, 20)
    variance = np.where(variance < 1, ln.guard[None, :], variance)
    inv_m, inv_e = fx.inv_sqrt_multipliers(variance, -1)
    shifted = 1024 * v - mean[..., None]
    rescaled = qm.multiply_by_quantized_multiplier(shifted, inv_m[..., None], inv_e[..., None],
                                                   rounding)
    val3 = rescaled * ln.coef + ln.bias   # int64: LiteRT's build does not wrap (measured)
    val3 += np.where(val3 > 0, 512, -512)
    val4 = _trunc_div_pot(val3, 10)
    ln.scale(val4, val3)
    np.clip(val4, I16_MIN, I16_MAX, out=v)


#: the largest recurrent shift for float gates (see `_Runner._recurrent_setup`)
_FLOAT_GATES_MAX_SHIFT = 34


@dataclass
class _Sequence:
    """A runner's buffers and programs for sequences of one length: the inputs
    [T, B, n_input + 1] in float64 (then 1.0 for the bias row), the clamped input
    contributions [T * B, columns] (the steps read them as `_layout_calls` lays them
    out, in place or, for float gates, into a float64 copy), the output states
    [T + 1, B, n_output + 1] (int64: row t is the state before step t, then 1 for the
    bias row of the matmul), the calls that compute the
    contributions (None: `input_parts` does) and those that lay them out for the steps,
    and the steps' calls."""

    x: np.ndarray
    contrib: np.ndarray
    hist: np.ndarray
    input_calls: list[Call] | None
    layout_calls: list[Call]
    calls: list[Call]


class _Runner:
    """Runs ``p`` on ``batch`` rows as a program: every step is a fixed list of numpy calls
    on preallocated buffers (its arguments bound per step, so no branch, attribute lookup
    or copy of a step's input remains), compiled once per sequence length.

    Per step: one float64 matmul of the output state against every gate's recurrent
    weights (the effective biases as an extra row and, when exact, the requantization
    multipliers folded in), the rounding and the step's input contribution in one floor
    shift, one clip and one table lookup for every gate activation (and the cell state's
    `_scaled` form, which rides along as an extra row), the cell update as one product
    ``[i, f] * [g, c]`` rounded by one add and one shift, and one lookup of the new cell
    state's tanh (times the hidden multiplier) and rounding addend.

    After the matmul (whose operands are batch-major) every buffer is [rows, batch]:
    gate-major, so that each gate's block is contiguous for any batch size (ufuncs on
    strided views cost twice as much).  The activations live in ``act``
    [(4|5) n, batch]: ``[i, f, (o,) g, c]``.  Without peephole or layer normalization
    ("biased") the accumulators carry their table offsets, so that the clip directly
    yields indices, and CIFG's input gate is a copy of the forget gate's column looked up
    as ``32767 - logistic``; the raw cell sum stays in the accumulators' last block,
    clipped (sat16 and the cell clip) with the gates.  Otherwise peephole and layer norm
    run on plain int16 accumulators."""

    def __init__(self, p: LstmParams, batch: int, time_major: bool) -> None:
        self.p, self.B, self.n = p, batch, p.n_cell
        self.time_major = time_major
        self.late = bool(p.peephole)         # the output gate waits for the new cell state
        self.biased = not p.peephole and not p.layer_norm
        dup = self.biased and p.cifg
        self.cols = (["i"] if dup else []) + list(p.names)   # the matmul's gate columns
        n = self.n
        k = p.names.index("f")
        self.src = np.r_[k * n:(k + 1) * n, :len(p.names) * n] if dup else None
        self.k_early = len(self.cols) - 1 if self.late else len(self.cols)
        regions = [R_ONE_MINUS if dup and j == 0 else R_TANH if g == "c" else R_SIGMOID
                   for j, g in enumerate(self.cols)]
        self.lut = np.repeat(-I16_MIN + REGION * np.array(regions, np.int64), n)
        self.c_lo, self.c_hi = I16_MIN, I16_MAX
        if p.cell_clip > 0:
            self.c_lo, self.c_hi = max(I16_MIN, -p.cell_clip), min(I16_MAX, p.cell_clip)
        self.cell_state = _cell_state_table(self.c_lo, self.c_hi)
        self._recurrent_setup()
        self.float_inputs = self._float_inputs_ok()
        self._buffers()
        self._seqs: dict[int, _Sequence] = {}

    # -- setup ---------------------------------------------------------------------------
    def _select(self, v: np.ndarray) -> np.ndarray:
        """Per-column values of ``p`` for the matmul's columns."""
        return np.asarray(v) if self.src is None else np.asarray(v)[..., self.src]

    def _rows(self, v, rows: int | None = None) -> np.ndarray:
        """Per-row constants (one per gate column, or ``rows``) laid out at [rows, batch]."""
        v = np.asarray(v)
        rows = len(self.cols) * self.n if rows is None else rows
        return _full(np.broadcast_to(v, (rows,))[:, None], (rows, self.B))

    def _recurrent_setup(self) -> None:
        """The recurrent weights and their requantization.  Folded: W_h * m is exact in
        float64 while |dot * m| + 2^30 < 2^53; the step's contribution (an integer, < 2^18
        with its table offset) enters the floor shift as contribution * 2^shift (< 2^62
        for shifts up to 44), the rounding offset with it, and the double rounding's
        negative-product nudge as ``copysign(2^30, dot)`` added in float64.

        With table offsets ("biased") and shifts up to 34 the whole floor division runs in
        float64 ("float gates"): the weights carry m / 2^shift too (exact: a power of two),
        the contribution plus the offsets and the rounding offset / 2^shift (0.5) is added
        in float64, and the conversion to int64 truncates.  The sum is exact below 2^19 in
        magnitude (multiples of 2^-34), and where it is not, it lies beyond the clip bounds
        (0 .. 2^18) either way; truncation floors every value the clip does not raise to its
        lower bound (>= 2^16 for the gates)."""
        p = self.p
        m, e = self._select(p.scale_h[0]), self._select(p.scale_h[1])
        fm = FixedMultiplier(m, e, p.rounding)
        w_h = self._select(p.w_h)
        bound = self._select(p.h_bound)
        self.fold = (fm.left is None and not p.wrap_h
                     and float((bound * m).max(initial=0)) + 2.0 ** 30 < 2.0 ** 53
                     and int(fm.total.max()) <= 44)
        cols = w_h.shape[1]
        self.part_shift = self.part_round = self.nudge = None
        self.w_h = np.ascontiguousarray(w_h)
        if not self.fold:   # generic MBQM on the [rows, batch] accumulators
            self.req_h = FixedMultiplier(m[:, None], e[:, None], p.rounding)
            self.float_gates = False
            return
        self.w_h = w_h * m.astype(np.float64)[None, :]
        nudge = np.zeros(cols) if fm.neg is None else \
            np.broadcast_to(np.where(fm.neg != 0, 2.0 ** 30, 0.0), (cols,))
        self.part_shift = np.broadcast_to(fm.total, (cols,)).astype(np.int64)
        self.part_round = np.broadcast_to(fm.off, (cols,)) - nudge.astype(np.int64)
        if fm.neg is not None:
            self.nudge = nudge
        self.float_gates = self.biased and int(fm.total.max()) <= _FLOAT_GATES_MAX_SHIFT
        if self.float_gates:
            scale = 2.0 ** -self.part_shift.astype(np.float64)
            self.w_h = self.w_h * scale[None, :]
            self.part_round_f = self.part_round * scale   # 0.5
            if self.nudge is not None:
                self.nudge = self.nudge * scale

    def _float_inputs_ok(self) -> bool:
        """Whether the input contributions can be computed in float64 too (for float
        gates, `_float_input_calls`): |W_x x + bias| * m plus the nudge (2^30) and the
        rounding offset (below 2^(shift - 1) + 2^30) stay below 2^53."""
        if not self.float_gates or self.p.x_fold is None:
            return False
        w, off, neg, total = self.p.x_fold
        bound = 128.0 * np.abs(w[:-1]).sum(axis=0) + np.abs(w[-1])
        return float(bound.max()) + 2.0 ** 31 + 2.0 ** (int(np.max(total)) - 1) < 2.0 ** 53

    def _buffers(self) -> None:
        """Scratch buffers and the constants of every stage, at their operands' shapes."""
        p, B, n = self.p, self.B, self.n
        cols, ke = len(self.cols) * n, self.k_early * n
        nb = (n, B)
        self.dotf = np.empty((B, cols), np.float64)   # batch-major, as np.dot writes it
        self.sf = np.empty((B, cols), np.float64)
        if self.nudge is not None:
            self.nudge = np.ascontiguousarray(np.broadcast_to(self.nudge, (B, cols)))
        if self.fold and not self.float_gates:
            self.shift = self._rows(self.part_shift)
        self.tmp = np.empty((cols, B), np.int64)
        if self.biased:   # [gates..., raw cell sum]: one clip and one lookup for all
            self.acc = np.zeros((cols + n, B), np.int64)
            self.acc_g, self.cslot = self.acc[:cols], self.acc[cols:]
            lo = np.concatenate([self.lut + I16_MIN, np.full(n, -I16_MIN + self.c_lo)])
            hi = np.concatenate([self.lut + I16_MAX, np.full(n, -I16_MIN + self.c_hi)])
            self.lo, self.hi = self._rows(lo, cols + n), self._rows(hi, cols + n)
            # the initial cell state is not clipped (LiteRT clips only updated states)
            lo[cols:], hi[cols:] = 0, I16_MAX - I16_MIN
            self.lo0, self.hi0 = self._rows(lo, cols + n), self._rows(hi, cols + n)
        else:
            self.acc = self.acc_g = np.zeros((cols, B), np.int64)
            self.lo, self.hi = _full(I16_MIN, (cols, B)), _full(I16_MAX, (cols, B))
            self.idx = np.zeros((ke + n, B), np.int64)   # [early gates..., cell state]
            self.cslot = self.idx[ke:]
            self.offsets = self._rows(self.lut[:ke], ke)
            self.c_lo_i = _full(-I16_MIN + self.c_lo, nb)
            self.c_hi_i = _full(-I16_MIN + self.c_hi, nb)
            self.craw = np.empty(nb, np.int64)
        n_act = 4 if self.late else 5
        self.act = np.zeros((n_act * n, B), np.int64)
        self.prod_y = self.act[:2 * n].reshape(2, n, B)    # [i, f]
        self.prod_x = self.act[-2 * n:].reshape(2, n, B)   # [g, c] (scaled)
        self.prod = np.empty((2, n, B), np.int64)
        c_shift = 30 + p.cell_scale
        # RDBPOT(i * g, 30 + cell_scale), RDBPOT(f * c, 15) + 32768 (the index offset)
        self.prod_off = _full(np.array([1 << (c_shift + 14),
                                        (1 << 29) - (I16_MIN << 30)])[:, None, None], (2, n, B))
        self.prod_shift = _full(np.array([c_shift + 15, 30])[:, None, None], (2, n, B))
        self.o = self.act[2 * n:3 * n] if not self.late else np.empty(nb, np.int64)
        self._hidden_setup()
        self._peephole_setup()
        self.ln_early = self._ln(self.cols[:self.k_early]) if p.layer_norm else None
        self.ln_late = self._ln(["o"]) if p.layer_norm and self.late else None

    def _hidden_setup(self) -> None:
        """CalculateLstmOutputInteger8x8_16's constants: the cell table (the hidden
        multiplier folded into tanh when it needs no left shift: < 2^46) and the bounds."""
        p, B, n = self.p, self.B, self.n
        nb = (n, B)
        projection = p.w_p is not None
        self.hid = hid = FixedMultiplier(*p.hidden_scale, p.rounding,
                                         -p.hidden_zp if projection else p.hidden_zp)
        self.premultiplied = hid.left is None
        if self.premultiplied:
            nudge = 0 if hid.neg is None else int(np.asarray(hid.neg).min())
            table = _cell_table(15 + p.cell_scale, self.c_lo, self.c_hi, int(hid.m),
                                int(hid.off), nudge, self.late)
            self.h_shift = _full(hid.total, nb)
            self.h_add = _full(hid.add, nb) if hid.add else None
        else:
            table = _cell_table(15 + p.cell_scale, self.c_lo, self.c_hi, 1, 0, 0, self.late)
        self.cell_take = table.take
        self.cellv = np.zeros((table.shape[0], n, B), np.int64)
        self.tanh_c, self.h_nudge = self.cellv[0], self.cellv[1]
        self.cell = self.cellv[2] if self.late else None
        self.ph, self.ph_tmp = np.empty(nb, np.int64), np.empty(nb, np.int64)
        self.lo8, self.hi8 = _full(-128, nb), _full(127, nb)
        if projection:
            self.hp = np.ones((B, n + 1), np.int64)   # the hidden state, then 1
            bo = (B, p.n_output)
            self.pf = np.empty(bo, np.float64)
            self.pi, self.ptmp = np.empty(bo, np.int64), np.empty(bo, np.int64)
            self.req_proj = FixedMultiplier(*p.proj_scale, p.rounding, p.output_state_zp)
            o_lo, o_hi = -128, 127
            if p.proj_clip > 0:
                o_lo, o_hi = max(o_lo, -p.proj_clip), min(o_hi, p.proj_clip)
            self.o_lo, self.o_hi = _full(o_lo, bo), _full(o_hi, bo)

    def _peephole_setup(self) -> None:
        """Peephole weights per position: LiteRT runs VectorBatchVectorCwiseProductAccumulate
        with n_output as the vector size, over one batch row (batch-major) or over the
        flat [batch * n_cell] buffer (time-major).  The multipliers are folded into the
        weights (|w * m * c| < 2^15 * 2^31 * 2^15) unless they shift left."""
        p, B, n = self.p, self.B, self.n
        if not p.peephole:
            return
        nb = (n, B)

        def place(w):   # [n, batch]
            m = np.zeros((B, n), np.int64)
            if self.time_major:
                k = np.arange(min(B * p.n_output, B * n))
                m.reshape(-1)[k] = w[k % p.n_output]
            else:
                m[:, :min(p.n_output, n)] = w[:min(p.n_output, n)]
            return np.ascontiguousarray(m.T)
        early = [g for g in self.cols[:self.k_early] if g != "c"]   # i (unless CIFG), f
        kp = len(early)
        fm = FixedMultiplier(np.array([p.peephole[g][1][0] for g in early])[:, None, None],
                             np.array([p.peephole[g][1][1] for g in early])[:, None, None],
                             p.rounding)
        self.pp_pre = fm.left is None
        w = np.stack([place(p.peephole[g][0]) for g in early])
        self.pp_w = w * fm.m if self.pp_pre else w
        self.pp_req = fm
        self.pp_buf, self.pp_tmp = np.empty((kp, n, B), np.int64), np.empty((kp, n, B), np.int64)
        self.pp_view = self.acc[:kp * n].reshape(kp, n, B)
        self.pp_lo, self.pp_hi = _full(I16_MIN, (kp, n, B)), _full(I16_MAX, (kp, n, B))
        fm = FixedMultiplier(*p.peephole["o"][1], p.rounding)
        self.po_pre = fm.left is None
        self.po_w = place(p.peephole["o"][0]) * (fm.m if self.po_pre else 1)
        self.po_req = fm
        self.t1, self.t2 = np.empty(nb, np.int64), np.empty(nb, np.int64)
        self.o_off = _full(-I16_MIN + REGION * R_SIGMOID, nb)

    def _ln(self, gates: list[str]) -> LayerNormParams:
        p, B, n = self.p, self.B, self.n
        return LayerNormParams(
            np.stack([p.layer_norm[g][0] for g in gates]),
            np.stack([p.layer_norm[g][1] for g in gates]),
            FixedMultiplier(np.array([p.layer_norm[g][2][0] for g in gates])[:, None],
                            np.array([p.layer_norm[g][2][1] + 12 for g in gates])[:, None],
                            p.rounding).bind((B, len(gates), n)),
            np.array([p.layer_norm[g][3] for g in gates], np.int64))

    def _ln_view(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` [k n, batch] as `_layer_norm` takes it: a [batch, k, n] view."""
        v = rows.reshape(-1, self.n, self.B).transpose(2, 0, 1)
        if not np.shares_memory(v, rows):
            raise AssertionError("views must alias their buffers")
        return v

    # -- the step program ------------------------------------------------------------------
    def _gate_calls(self, part: np.ndarray, h_prev: np.ndarray) -> list[Call]:
        """Every gate: clamp16(input part + MBQM(bias_h + W_h h)), before the clamp."""
        acc, dotf = self.acc_g, self.dotf
        calls: list[Call] = [(np.dot, (h_prev, self.w_h, dotf))]
        if self.nudge is not None:
            calls += [(np.copysign, (self.nudge, dotf, self.sf)), (np.add, (dotf, self.sf, dotf))]
        if self.float_gates:   # part = contribution + table offset + rounding offset
            return calls + [(np.add, (dotf, part, dotf)), (np.copyto, (acc, dotf.T, "unsafe"))]
        calls.append((np.copyto, (acc, dotf.T, "unsafe")))
        if self.fold:   # part = (contribution << shift) + rounding offset - nudge
            return calls + [(np.add, (acc, part, acc)), (np.right_shift, (acc, self.shift, acc))]
        if self.p.wrap_h:   # int32 accumulation in C
            calls.append((_wrap32_inplace, (acc,)))
        return calls + self.req_h.program(acc, self.tmp) + [(np.add, (acc, part, acc))]

    def _activation_calls(self, first: bool) -> list[Call]:
        """The clamp, peephole (i, f on the old cell state), layer norm and one lookup of
        the early gates, plus the cell state's scaled form."""
        table = _gate_table()
        n, B, ke = self.n, self.B, self.k_early * self.n
        acc = self.acc
        if self.biased:
            lo, hi = (self.lo0, self.hi0) if first else (self.lo, self.hi)
            return [(_clip, (acc, lo, hi, acc)), (table.take, (acc, None, self.act, "clip"))]
        calls: list[Call] = [(_clip, (acc, self.lo, self.hi, acc))]
        if self.p.peephole:
            calls.append((np.multiply, (self.pp_w, self.cell[None], self.pp_buf)))
            calls += self.pp_req.program(self.pp_buf, self.pp_tmp, self.pp_pre)
            calls += [(np.add, (self.pp_view, self.pp_buf, self.pp_view)),
                      (_clip, (self.pp_view, self.pp_lo, self.pp_hi, self.pp_view))]
        if self.p.layer_norm:
            calls.append((_layer_norm, (self._ln_view(acc[:ke]), self.ln_early,
                                        self.p.rounding)))
        lut0 = n if self.p.cifg else 0
        calls += [(np.add, (acc[:ke], self.offsets, self.idx[:ke])),
                  (table.take, (self.idx, None, self.act[lut0:], "clip"))]
        if self.p.cifg:   # Sub1Vector
            calls.append((np.subtract, (_full(I16_MAX, (n, B)), self.act[n:2 * n],
                                        self.act[:n])))
        return calls

    def _cell_calls(self) -> list[Call]:
        """UpdateLstmCellInteger: c = RDBPOT(i * g, 30 + cell_scale) + RDBPOT(f * c, 15),
        saturated and clipped; then the new state's tanh and rounding addend."""
        prod = self.prod
        calls: list[Call] = [(np.multiply, (self.prod_y, self.prod_x, prod)),
                             (np.add, (prod, self.prod_off, prod)),
                             (np.right_shift, (prod, self.prod_shift, prod))]
        if self.biased:   # clipped by the next step's gate clip and by the table's rows
            return calls + [(np.add, (prod[0], prod[1], self.cslot)),
                            (self.cell_take, (self.cslot, 1, self.cellv, "clip"))]
        return calls + [(np.add, (prod[0], prod[1], self.craw)),
                        (_clip, (self.craw, self.c_lo_i, self.c_hi_i, self.cslot)),
                        (self.cell_take, (self.cslot, 1, self.cellv, "clip"))]

    def _late_calls(self) -> list[Call]:
        """The output gate after the cell update: peephole on the new cell state."""
        if not self.late:
            return []
        ke = self.k_early * self.n
        late = self.acc[ke:]
        calls: list[Call] = [(np.multiply, (self.po_w, self.cell, self.t1))]
        calls += self.po_req.program(self.t1, self.t2, self.po_pre)
        calls += [(np.add, (late, self.t1, late)),
                  (_clip, (late, self.lo[ke:], self.hi[ke:], late))]
        if self.p.layer_norm:
            calls.append((_layer_norm, (self._ln_view(late), self.ln_late, self.p.rounding)))
        return calls + [(np.add, (late, self.o_off, self.t1)),
                        (_gate_table().take, (self.t1, None, self.o, "clip"))]

    def _hidden_calls(self, h_next: np.ndarray) -> list[Call]:
        """CalculateLstmOutputInteger8x8_16 (and the projection): the new output state,
        clipped into ``h_next`` [batch, n_output], a row of the state history: the next
        step's matmul operand (np.dot of int64 by float64 converts as fast as a separate
        copy, one call less)."""
        ph = self.ph
        calls: list[Call] = [(np.multiply, (self.tanh_c, self.o, ph))]
        if self.premultiplied:
            calls += [(np.add, (ph, self.h_nudge, ph)), (np.right_shift, (ph, self.h_shift, ph))]
            if self.h_add is not None:
                calls.append((np.add, (ph, self.h_add, ph)))
        else:
            calls += self.hid.program(ph, self.ph_tmp)
        if self.p.w_p is None:
            return calls + [(_clip, (ph, self.lo8, self.hi8, h_next.T))]
        pi = self.pi
        calls += [(_clip, (ph, self.lo8, self.hi8, self.hp[:, :-1].T)),
                  (np.dot, (self.hp, self.p.w_p, self.pf)), (np.copyto, (pi, self.pf, "unsafe"))]
        if self.p.wrap_p:
            calls.append((_wrap32_inplace, (pi,)))
        calls += self.req_proj.program(pi, self.ptmp)
        return calls + [(_clip, (pi, self.o_lo, self.o_hi, h_next))]

    def _step_calls(self, part: np.ndarray, h_prev: np.ndarray, h_next: np.ndarray,
                    first: bool) -> list[Call]:
        """One LstmStepInteger8x8_16: ``part`` the step's input contributions (as
        `_layout_calls` lays them out), ``h_prev``/``h_next`` rows of the state history."""
        return (self._gate_calls(part, h_prev) + self._activation_calls(first)
                + self._cell_calls() + self._late_calls() + self._hidden_calls(h_next))

    # -- running -------------------------------------------------------------------------
    def _sequence(self, steps: int) -> _Sequence:
        seq = self._seqs.get(steps)
        if seq is None:
            if len(self._seqs) >= 4:
                self._seqs.pop(next(iter(self._seqs)))
            B, p = self.B, self.p
            cols = len(self.cols) * self.n
            x = np.ones((steps, B, p.n_input + 1), np.float64)
            contrib = np.empty((steps * B, cols), np.int64)
            if self.float_gates:   # added to the batch-major matmul result
                parts = np.empty((steps, B, cols), np.float64)
            elif B == 1:           # [cols, 1] rows: the same memory
                parts = contrib.reshape(steps, cols, 1)
            else:
                parts = np.empty((steps, cols, B), np.int64)
            hist = np.ones((steps + 1, B, p.n_output + 1), np.int64)
            calls = [c for t in range(steps)
                     for c in self._step_calls(parts[t], hist[t], hist[t + 1, :, :-1], t == 0)]
            inputs = self._input_calls(x.reshape(steps * B, -1), contrib, parts)
            layout = [] if self.float_inputs else self._layout_calls(contrib, parts)
            seq = self._seqs[steps] = _Sequence(x, contrib, hist, inputs, layout, calls)
        return seq

    def _input_calls(self, x: np.ndarray, out: np.ndarray, parts: np.ndarray
                     ) -> list[Call] | None:
        """clamp16(MBQM(bias_x + W_x x)) for every row of ``x`` [rows, n_input + 1] at once
        into ``out`` [rows, columns], when the requantization folds into the weights
        (``p.x_fold``; its double-rounding nudge added in float64 as on the recurrent
        side), else None.  For float gates the floor division runs in float64 too and the
        result goes straight into ``parts`` (`_float_input_calls`)."""
        if self.p.x_fold is None:
            return None
        w, off, neg, total = self.p.x_fold
        shape, p_cols = out.shape, w.shape[1]

        def col(v):
            return _full(self._select(np.broadcast_to(v, (p_cols,))), shape)
        w = self._select(w)
        pf, sf = np.empty(shape, np.float64), np.empty(shape, np.float64)
        nudge = np.zeros(shape, np.int64) if neg is None else \
            np.where(col(neg) != 0, 1 << 30, 0)
        shift = col(total)
        if self.float_inputs:
            return self._float_input_calls(x, w, nudge, col(off), shift, parts)
        calls: list[Call] = [(np.dot, (x, np.ascontiguousarray(w), pf))]
        if neg is not None:
            calls += [(np.copysign, (nudge.astype(np.float64), pf, sf)), (np.add, (pf, sf, pf))]
        return calls + [(np.copyto, (out, pf, "unsafe")), (np.add, (out, col(off) - nudge, out)),
                        (np.right_shift, (out, shift, out)),
                        (_clip, (out, _full(I16_MIN, shape), _full(I16_MAX, shape), out))]

    def _float_input_calls(self, x, w, nudge, off, shift, parts) -> list[Call]:
        """The input contributions for float gates, all in float64: the weights carry
        1 / 2^shift (exact), the nudge and the rounding offset scale with them, so that
        ``floor`` is the floor shift; then clamp16 and the gate offsets (the table's and
        the recurrent side's 0.5, see `_recurrent_setup`) - into ``parts`` [T, B, columns]."""
        scale = 2.0 ** -shift.astype(np.float64)
        flat = parts.reshape(-1, parts.shape[-1])
        pf, sf = np.empty_like(flat), np.empty_like(flat)
        calls: list[Call] = [(np.dot, (x, np.ascontiguousarray(w * scale[0]), pf))]
        if nudge.any():
            calls += [(np.copysign, (nudge * scale, pf, sf)), (np.add, (pf, sf, pf))]
        lo, hi = np.full(flat.shape, float(I16_MIN)), np.full(flat.shape, float(I16_MAX))
        # fmax and fmin: faster than the float clip (which minds NaNs: there are none)
        return calls + [(np.add, (pf, (off - nudge) * scale, pf)), (np.floor, (pf, pf)),
                        (np.fmax, (pf, lo, pf)), (np.fmin, (pf, hi, pf)),
                        (np.add, (pf, np.zeros(flat.shape) + (self.lut + self.part_round_f),
                                  flat))]

    def _layout_calls(self, contrib: np.ndarray, parts: np.ndarray) -> list[Call]:
        """Lay the clamped input contributions ``contrib`` [T * B, columns] out as the gate
        calls take them: plus the table offsets (biased), shifted, with the rounding offset
        (folded), into ``parts``: [T, B, columns] float64 for float gates, else
        [T, columns, B] (``contrib``'s memory when B is 1)."""
        lut = self.lut if self.biased else np.zeros_like(self.lut)
        if self.float_gates:
            return [(np.copyto, (parts.reshape(contrib.shape), contrib)),
                    (np.add, (parts, _full(0, parts.shape) + (lut + self.part_round_f),
                              parts))]
        calls: list[Call] = []
        if self.fold:   # (part + lut) << shift + round
            calls += [(np.left_shift, (contrib, _full(self.part_shift, contrib.shape), contrib)),
                      (np.add, (contrib, _full((lut << self.part_shift) + self.part_round,
                                               contrib.shape), contrib))]
        elif self.biased:
            calls.append((np.add, (contrib, _full(lut, contrib.shape), contrib)))
        if not np.shares_memory(parts, contrib):
            steps, cols, B = parts.shape
            calls.append((np.copyto, (parts, contrib.reshape(steps, B, cols).transpose(0, 2, 1))))
        return calls

    def run(self, x: np.ndarray, h: np.ndarray, c: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every step of ``x`` [T, B, n_input] (int8) from states ``h`` [B, n_output] and
        ``c`` [B, n_cell]: (int8 outputs [T, B, n_output], the final int8 output state
        [B, n_output], the final int16 cell state [B, n_cell]), all new arrays."""
        steps = x.shape[0]
        if not steps:
            return (np.empty((0, self.B, self.p.n_output), np.int8),
                    np.array(h, np.int8), np.array(c, np.int16))
        seq = self._seqs.get(steps) or self._sequence(steps)
        if seq.input_calls is not None:
            seq.x[..., :-1] = x
            _run(seq.input_calls)
        else:
            parts = input_parts(self.p, x.reshape(steps * self.B, -1))
            seq.contrib[...] = self._select(parts)
        _run(seq.layout_calls)
        seq.hist[0, :, :-1] = h
        self.cslot[...] = c.T
        self.cslot -= I16_MIN
        if self.cell is not None:   # the first step's peephole reads the unclipped state
            self.cell[...] = c.T
        _run(seq.calls)
        outs = seq.hist[1:, :, :-1].astype(np.int8)
        return outs, outs[-1].copy(), self.cell_state.take(self.cslot.T, mode="clip")


def _runner(p: LstmParams, batch: int, time_major: bool) -> _Runner:
    key = (batch, bool(time_major) and bool(p.peephole) and p.n_output != p.n_cell)
    r = p._runners.get(key)
    if r is None:
        r = p._runners[key] = _Runner(p, batch, time_major)
    return r


def input_parts(p: LstmParams, x: np.ndarray) -> np.ndarray:
    """Every gate's input contribution ``clamp16(MBQM(bias_x + W_x x))`` for all rows of
    ``x`` [rows, n_input] at once (it does not depend on the recurrent state): [rows, G*n]."""
    if p.x_fold is not None:   # (x, 1) @ ([W_x; bias] * m): the products, exact
        w, off, neg, total = p.x_fold
        xe = np.ones((x.shape[0], p.n_input + 1), np.float64)
        xe[:, :-1] = x
        out = (xe @ w).astype(np.int64)
        if neg is not None:
            nudge = out >> 63
            nudge &= neg
            nudge += off
            out += nudge
        else:
            out += off
        out >>= total
    else:
        dot = (np.asarray(x, np.float64) @ p.w_x).astype(np.int64)
        acc = wrap32(dot + p.bias_x)
        out = qm.multiply_by_quantized_multiplier(acc, p.scale_x[0], p.scale_x[1], p.rounding)
    return _clamp(out, I16_MIN, I16_MAX)


def lstm_sequence(x: np.ndarray, h: np.ndarray, c: np.ndarray, p: LstmParams,
                  time_major: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run [T, B, I] (time_major) or [B, T, I]: (int8 outputs, final int8 output state
    [B, n_output], final int16 cell state [B, n_cell]).

    Batch rows are independent, so batch-major input (which LiteRT runs one batch row at
    a time) is run like time-major input, all rows per step; only the peephole's vector
    size quirk depends on the layout, and the runner places the peephole weights for it."""
    seq = x if time_major else x.swapaxes(0, 1)
    batch = seq.shape[1]
    r = _runner(p, batch, time_major)
    outs, h_new, cell = r.run(seq, np.asarray(h).reshape(batch, -1),
                              np.asarray(c).reshape(batch, -1))
    return (outs if time_major else outs.swapaxes(0, 1)), h_new, cell


# -- the kernel's view: LiteRT's Prepare checks and the tensors -> parameters mapping ------
#: input positions: input and recurrent weights, peepholes, biases, layer norm (per gate)
_W_X = {"i": 1, "f": 2, "c": 3, "o": 4}
_W_H = {"i": 5, "f": 6, "c": 7, "o": 8}
_PEEP = {"i": 9, "f": 10, "o": 11}
_BIAS = {"i": 12, "f": 13, "c": 14, "o": 15}
_LN = {"i": 20, "f": 21, "c": 22, "o": 23}
_PROJ_W, _PROJ_B, _STATE_H, _STATE_C = 16, 17, 18, 19


def _quantized(t) -> bool:
    q = getattr(t, "quantization", None)
    return q is not None and q.scale.size > 0


def _uses_layer_norm(inputs) -> bool:
    """As LiteRT's Prepare: 24 inputs with the forget gate's coefficients present."""
    return len(inputs) == 24 and inputs[_LN["f"]] is not None


def unsupported_reason(inputs, intermediates, output, options, name: str) -> str | None:
    """Why the integer 8x8_16 kernel cannot run this node (LiteRT's Prepare would fail,
    read out of bounds, or its results depend on something this core does not model),
    or None.  ``inputs``/``intermediates`` are runtime tensors (None where absent)."""
    if len(inputs) not in (20, 24):
        return f"{name} needs 20 or 24 inputs (got {len(inputs)})"
    x = inputs[0]
    if x.shape is None or len(x.shape) != 3:
        return f"{name} needs a rank-3 input"
    if len(intermediates) != 5:
        return f"{name} needs 5 intermediate tensors (got {len(intermediates)})"
    hs, cs = inputs[_STATE_H], inputs[_STATE_C]
    if hs is None or cs is None:
        return f"{name} needs output and cell state tensors"
    if cs.type_name != "INT16":
        return f"{name} needs an INT16 cell state"
    if hs.type_name != "INT8":
        return f"{name} needs an INT8 output state"
    for g in GATE_ORDER:
        for k in (_W_X[g], _W_H[g]):
            t = inputs[k]
            if t is None:
                if g != "i":
                    return f"{name}: input {k} (gate {g} weights) is missing"
                continue
            if t.type_name != "INT8" or len(t.shape) != 2:
                return f"{name}: input {k} must be 2-D INT8 weights (got {t.type_name})"
            if t.quantization is not None and t.quantization.scale.size > 1:
                return (f"{name}: per-channel weights (input {k}): LiteRT's integer LSTM "
                        "reads the per-tensor scale, which is 0 for them")
    cifg = inputs[_W_X["i"]] is None
    if cifg != (inputs[_W_H["i"]] is None):
        return f"{name}: input gate weights must be all present or all absent"
    n_cell, n_output = inputs[_W_X["f"]].shape[0], inputs[_W_H["f"]].shape[1]
    for g in GATE_ORDER:
        b = inputs[_BIAS[g]]
        if g == "i" and cifg:
            if b is not None:
                return f"{name}: a CIFG LSTM has no input gate bias"
            continue
        if b is None or b.type_name != "INT32":
            return f"{name}: gate {g} needs an INT32 bias"
    peep = {g: inputs[k] for g, k in _PEEP.items()}
    use_peephole = peep["o"] is not None
    need = {g for g in ("i", "f", "o") if not (g == "i" and cifg)}
    if use_peephole or any(t is not None for t in peep.values()):
        if any(peep[g] is None for g in need):
            return f"{name}: peephole weights must be all present or all absent"
        if any(peep[g].type_name != "INT16" for g in need):
            return f"{name}: peephole weights must be INT16"
        if n_output > n_cell:
            return (f"{name}: peephole with {n_output} outputs > {n_cell} cells: LiteRT "
                    "reads past the peephole weights")
    if _uses_layer_norm(inputs):
        for g in GATE_ORDER:
            t = inputs[_LN[g]]
            if g == "i" and cifg:
                if t is not None:
                    return f"{name}: a CIFG LSTM has no input layer norm coefficients"
                continue
            if t is None or t.type_name != "INT16":
                return f"{name}: layer norm needs INT16 coefficients for gate {g}"
        if not all(_quantized(t) for t in intermediates[:4]):
            return f"{name}: layer normalization needs quantized gate intermediates"
    pw, pb = inputs[_PROJ_W], inputs[_PROJ_B]
    if pw is None:
        if pb is not None:
            return f"{name}: projection bias without projection weights"
        if n_output != n_cell:
            return f"{name}: {n_output} outputs for {n_cell} cells without projection"
    else:
        if pw.type_name != "INT8" or tuple(pw.shape) != (n_output, n_cell):
            return f"{name}: projection weights must be INT8 [{n_output}, {n_cell}]"
        if pw.quantization is not None and pw.quantization.scale.size > 1:
            return f"{name}: per-channel projection weights"
        if pb is not None and pb.type_name != "INT32":
            return f"{name}: projection bias must be INT32"
    if not _quantized(intermediates[4]):
        return f"{name}: the hidden intermediate tensor needs quantization"
    if not _quantized(output) or not _quantized(cs) or not _quantized(hs):
        return f"{name}: output and state tensors need quantization"
    ok, cell_scale = checked_log2(float(np.float32(cs.quantization.scale.reshape(-1)[0])))
    if not ok:
        return f"{name}: the cell state scale is not a power of two"
    if not 0 <= 15 + cell_scale <= 6:
        return (f"{name}: cell state scale 2^{cell_scale}: LiteRT's ApplyTanh handles scales "
                "2^-15 to 2^-9 only")
    return None


def prepare_from_tensors(inputs, intermediates, output, options, tq,
                         rounding: Rounding = "double") -> LstmParams:
    """`prepare_lstm` from the node's runtime tensors (``tq`` maps a tensor to QParams)."""
    d = lambda k: inputs[k]  # noqa: E731
    weights, biases, peephole, layer_norm = {}, {}, {}, {}
    for g in GATE_ORDER:
        if d(_W_X[g]) is None:
            continue
        weights[g] = (d(_W_X[g]).data, tq(d(_W_X[g])), d(_W_H[g]).data, tq(d(_W_H[g])))
        biases[g] = None if d(_BIAS[g]) is None else d(_BIAS[g]).data
    if d(_PEEP["o"]) is not None:
        for g, k in _PEEP.items():
            if g in weights:
                peephole[g] = (d(k).data, tq(d(k)))
    gate_qs = None
    if _uses_layer_norm(inputs):
        for g in weights:
            layer_norm[g] = (d(_LN[g]).data, tq(d(_LN[g])))
        gate_qs = [tq(t) for t in intermediates[:4]]
    projection = None
    if d(_PROJ_W) is not None:
        pb = d(_PROJ_B)
        projection = (d(_PROJ_W).data, tq(d(_PROJ_W)), None if pb is None else pb.data)
    opt = lambda k: float(options.get(k) or 0.0)  # noqa: E731
    return prepare_lstm(tq(d(0)), weights, biases, tq(d(_STATE_H)), tq(d(_STATE_C)),
                        tq(intermediates[4]), opt("cell_clip"), rounding,
                        peephole=peephole, layer_norm=layer_norm, gate_qs=gate_qs,
                        projection=projection, proj_clip=opt("proj_clip"), output_q=tq(output))
