"""LSTM parameters: LiteRT's PopulateQuantizedLstmParams8x8_16 and
PopulatePrecomputedZPTimesWeightsWithBias (`prepare_lstm`), and the node's tensors mapped
onto them (`prepare_from_tensors`, with the input positions the checks share)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import quant_math as qm
from ..common import Rounding, check_rounding, qparams, wrap32
from ..elementwise import checked_log2
from .program import FixedMultiplier

GATE_ORDER = ("i", "f", "c", "o")
COLUMNS = ("i", "f", "o", "c")
COLUMNS_PEEPHOLE = ("i", "f", "c", "o")
_INT32_LIMIT = (1 << 31) - 1


def _f32(x) -> np.float32:
    return np.float32(x)


def _qmul(real: float, rounding: Rounding) -> tuple[int, int]:
    m, e = qm.quantize_multiplier(float(real), rounding)
    return int(m), int(e)


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
    names, cell_scale = _gates(weights, cq, peephole, layer_norm)
    inter = _intermediate_scales(layer_norm, gate_qs)
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
    _gate_products(p, weights, biases, iq, hq, inter, bool(layer_norm))
    _peephole_and_layer_norm(p, peephole, layer_norm, biases, inter)
    if cell_clip > 0:
        v = _f32(_f32(cell_clip) / _f32(cq.s))
        p.cell_clip = int(np.trunc(min(max(v, _f32(-32768.0)), _f32(32767.0))))
    hid = qparams(hidden_q)
    hidden_scale = float(np.float32(2.0 ** -15 / float(np.float64(np.float32(hid.s)))
                                    * 2.0 ** -15))
    p.hidden_scale = _qmul(hidden_scale, rounding)
    p.hidden_zp = hid.zp
    if projection is not None:
        _projection(p, projection, hid, hq, proj_clip,
                    output_q if output_q is not None else output_state_q)
    return p


def _gates(weights: dict, cq, peephole: dict, layer_norm: dict) -> tuple[list[str], int]:
    """The gates present in column order, and the cell state's power-of-two scale, after
    the checks LiteRT's Prepare makes on them."""
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
    return names, cell_scale


def _intermediate_scales(layer_norm: dict, gate_qs) -> dict[str, np.float32]:
    """Each gate's intermediate scale: 2^-12 without layer normalization, else the scale
    of its intermediate tensor."""
    if not layer_norm:
        return {g: _f32(2.0 ** -12) for g in GATE_ORDER}
    if gate_qs is None:
        raise ValueError("layer normalization needs the gate intermediates' quantization")
    return {g: _f32(qparams(q).s) for g, q in zip(GATE_ORDER, gate_qs)}


def _gate_products(p: LstmParams, weights: dict, biases: dict, iq, hq, inter: dict,
                   use_ln: bool) -> None:
    """The input and recurrent sides of every gate, fused into one matrix each with their
    zero-point corrections folded into the biases, and their rescales."""
    rounding, n_cell = p.rounding, p.n_cell
    wx, bx, mx, ex, wh, bh, mh, eh = [], [], [], [], [], [], [], []
    for g in p.names:
        w_x, wq_x, w_h, wq_h = weights[g]
        s = inter[g]
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


def _peephole_and_layer_norm(p: LstmParams, peephole: dict, layer_norm: dict, biases: dict,
                             inter: dict) -> None:
    """The peephole weights with their rescales, and each gate's layer-norm coefficients,
    bias, rescale and variance guard."""
    for g, (w, q) in peephole.items():
        real = float(_f32(2.0 ** p.cell_scale * float(_f32(qparams(q).s)) / float(inter[g])))
        p.peephole[g] = (np.asarray(w).astype(np.int64).reshape(-1), _qmul(real, p.rounding))
    for g, (w, q) in layer_norm.items():
        s = _f32(qparams(q).s)
        guard = max(1, int(np.trunc(_f32(_f32(10000.0) * s))))
        bias = biases.get(g)
        b = np.zeros(p.n_cell, np.int64) if bias is None else np.asarray(bias).astype(np.int64)
        p.layer_norm[g] = (np.asarray(w).astype(np.int64).reshape(-1), b,
                           _qmul(float(s), p.rounding), guard)


def _projection(p: LstmParams, projection, hid, hq, proj_clip: float, clip_q) -> None:
    """The projection matrix with its zero-point corrected bias, its rescale, and the
    clip (quantized with ``clip_q``, the output's quantization)."""
    w_p, wq_p, b_p = projection
    w_p = np.asarray(w_p).astype(np.int64)
    b = np.zeros(p.n_output, np.int64) if b_p is None else np.asarray(b_p).astype(np.int64)
    bias_p = wrap32(b + wrap32(w_p.sum(axis=1) * hid.zp))
    p.w_p = np.ascontiguousarray(np.concatenate([w_p.T, bias_p[None, :]], axis=0)
                                 .astype(np.float64))
    p.wrap_p = bool(np.abs(bias_p).max(initial=0) + 128 * np.abs(w_p).sum(axis=1).max(
        initial=0) > _INT32_LIMIT)
    p.proj_scale = _qmul(_effective(qparams(wq_p).s, hid.s, hq.s), p.rounding)
    p.output_state_zp = hq.zp
    if proj_clip > 0:
        oq = qparams(clip_q)
        v = _f32(_f32(proj_clip) / _f32(oq.s))
        p.proj_clip = int(np.trunc(min(max(v, _f32(-128.0)), _f32(127.0))))


#: input positions: input and recurrent weights, peepholes, biases, layer norm (per gate)
W_X = {"i": 1, "f": 2, "c": 3, "o": 4}
W_H = {"i": 5, "f": 6, "c": 7, "o": 8}
PEEP = {"i": 9, "f": 10, "o": 11}
BIAS = {"i": 12, "f": 13, "c": 14, "o": 15}
LN = {"i": 20, "f": 21, "c": 22, "o": 23}
PROJ_W, PROJ_B, STATE_H, STATE_C = 16, 17, 18, 19


def uses_layer_norm(inputs) -> bool:
    """As LiteRT's Prepare: 24 inputs with the forget gate's coefficients present."""
    return len(inputs) == 24 and inputs[LN["f"]] is not None


def prepare_from_tensors(inputs, intermediates, output, options, qparams_of,
                         rounding: Rounding = "double") -> LstmParams:
    """`prepare_lstm` from the node's runtime tensors (``qparams_of`` maps a tensor to its
    QParams; absent inputs are None)."""
    def const(k: int) -> tuple:
        """Input ``k``'s values and quantization."""
        return inputs[k].data, qparams_of(inputs[k])

    weights, biases, peephole, layer_norm = {}, {}, {}, {}
    for g in GATE_ORDER:
        if inputs[W_X[g]] is None:
            continue
        weights[g] = const(W_X[g]) + const(W_H[g])
        biases[g] = None if inputs[BIAS[g]] is None else inputs[BIAS[g]].data
    if inputs[PEEP["o"]] is not None:
        peephole = {g: const(k) for g, k in PEEP.items() if g in weights}
    gate_qs = None
    if uses_layer_norm(inputs):
        layer_norm = {g: const(LN[g]) for g in weights}
        gate_qs = [qparams_of(t) for t in intermediates[:4]]
    projection = None
    if inputs[PROJ_W] is not None:
        pb = inputs[PROJ_B]
        projection = const(PROJ_W) + (None if pb is None else pb.data,)

    def clip(key: str) -> float:
        return float(options.get(key) or 0.0)

    return prepare_lstm(qparams_of(inputs[0]), weights, biases, qparams_of(inputs[STATE_H]),
                        qparams_of(inputs[STATE_C]), qparams_of(intermediates[4]),
                        clip("cell_clip"), rounding, peephole=peephole, layer_norm=layer_norm,
                        gate_qs=gate_qs, projection=projection, proj_clip=clip("proj_clip"),
                        output_q=qparams_of(output))
