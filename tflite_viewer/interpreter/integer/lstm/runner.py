"""The LSTM runner: `lstm_sequence` compiles a sequence length into a step program (see
program.py) once and runs it; `input_parts` computes every step's input contribution at
once."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import quant_math as qm
from .. import fixedpoint as fx
from ..common import Rounding, wrap32
from .parameters import LayerNormParams, LstmParams
from .program import (I16_MAX, I16_MIN, R_ONE_MINUS, R_SIGMOID, R_TANH, REGION, Call,
                      FixedMultiplier, cell_state_table, cell_table, clamp, clip_ufunc, filled,
                      gate_table, run_program, wrap32_inplace)


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
    `scaled` form, which rides along as an extra row), the cell update as one product
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
        self.cell_state = cell_state_table(self.c_lo, self.c_hi)
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
        return filled(np.broadcast_to(v, (rows,))[:, None], (rows, self.B))

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
            self.lo, self.hi = filled(I16_MIN, (cols, B)), filled(I16_MAX, (cols, B))
            self.idx = np.zeros((ke + n, B), np.int64)   # [early gates..., cell state]
            self.cslot = self.idx[ke:]
            self.offsets = self._rows(self.lut[:ke], ke)
            self.c_lo_i = filled(-I16_MIN + self.c_lo, nb)
            self.c_hi_i = filled(-I16_MIN + self.c_hi, nb)
            self.craw = np.empty(nb, np.int64)
        n_act = 4 if self.late else 5
        self.act = np.zeros((n_act * n, B), np.int64)
        self.prod_y = self.act[:2 * n].reshape(2, n, B)    # [i, f]
        self.prod_x = self.act[-2 * n:].reshape(2, n, B)   # [g, c] (scaled)
        self.prod = np.empty((2, n, B), np.int64)
        c_shift = 30 + p.cell_scale
        # RDBPOT(i * g, 30 + cell_scale), RDBPOT(f * c, 15) + 32768 (the index offset)
        self.prod_off = filled(np.array([1 << (c_shift + 14),
                                        (1 << 29) - (I16_MIN << 30)])[:, None, None], (2, n, B))
        self.prod_shift = filled(np.array([c_shift + 15, 30])[:, None, None], (2, n, B))
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
            table = cell_table(15 + p.cell_scale, self.c_lo, self.c_hi, int(hid.m),
                               int(hid.off), nudge, self.late)
            self.h_shift = filled(hid.total, nb)
            self.h_add = filled(hid.add, nb) if hid.add else None
        else:
            table = cell_table(15 + p.cell_scale, self.c_lo, self.c_hi, 1, 0, 0, self.late)
        self.cell_take = table.take
        self.cellv = np.zeros((table.shape[0], n, B), np.int64)
        self.tanh_c, self.h_nudge = self.cellv[0], self.cellv[1]
        self.cell = self.cellv[2] if self.late else None
        self.ph, self.ph_tmp = np.empty(nb, np.int64), np.empty(nb, np.int64)
        self.lo8, self.hi8 = filled(-128, nb), filled(127, nb)
        if projection:
            self.hp = np.ones((B, n + 1), np.int64)   # the hidden state, then 1
            bo = (B, p.n_output)
            self.pf = np.empty(bo, np.float64)
            self.pi, self.ptmp = np.empty(bo, np.int64), np.empty(bo, np.int64)
            self.req_proj = FixedMultiplier(*p.proj_scale, p.rounding, p.output_state_zp)
            o_lo, o_hi = -128, 127
            if p.proj_clip > 0:
                o_lo, o_hi = max(o_lo, -p.proj_clip), min(o_hi, p.proj_clip)
            self.o_lo, self.o_hi = filled(o_lo, bo), filled(o_hi, bo)

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
        self.pp_lo, self.pp_hi = filled(I16_MIN, (kp, n, B)), filled(I16_MAX, (kp, n, B))
        fm = FixedMultiplier(*p.peephole["o"][1], p.rounding)
        self.po_pre = fm.left is None
        self.po_w = place(p.peephole["o"][0]) * (fm.m if self.po_pre else 1)
        self.po_req = fm
        self.t1, self.t2 = np.empty(nb, np.int64), np.empty(nb, np.int64)
        self.o_off = filled(-I16_MIN + REGION * R_SIGMOID, nb)

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
            calls.append((wrap32_inplace, (acc,)))
        return calls + self.req_h.program(acc, self.tmp) + [(np.add, (acc, part, acc))]

    def _activation_calls(self, first: bool) -> list[Call]:
        """The clamp, peephole (i, f on the old cell state), layer norm and one lookup of
        the early gates, plus the cell state's scaled form."""
        table = gate_table()
        n, B, ke = self.n, self.B, self.k_early * self.n
        acc = self.acc
        if self.biased:
            lo, hi = (self.lo0, self.hi0) if first else (self.lo, self.hi)
            return [(clip_ufunc, (acc, lo, hi, acc)), (table.take, (acc, None, self.act, "clip"))]
        calls: list[Call] = [(clip_ufunc, (acc, self.lo, self.hi, acc))]
        if self.p.peephole:
            calls.append((np.multiply, (self.pp_w, self.cell[None], self.pp_buf)))
            calls += self.pp_req.program(self.pp_buf, self.pp_tmp, self.pp_pre)
            calls += [(np.add, (self.pp_view, self.pp_buf, self.pp_view)),
                      (clip_ufunc, (self.pp_view, self.pp_lo, self.pp_hi, self.pp_view))]
        if self.p.layer_norm:
            calls.append((_layer_norm, (self._ln_view(acc[:ke]), self.ln_early,
                                        self.p.rounding)))
        lut0 = n if self.p.cifg else 0
        calls += [(np.add, (acc[:ke], self.offsets, self.idx[:ke])),
                  (table.take, (self.idx, None, self.act[lut0:], "clip"))]
        if self.p.cifg:   # Sub1Vector
            calls.append((np.subtract, (filled(I16_MAX, (n, B)), self.act[n:2 * n],
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
                        (clip_ufunc, (self.craw, self.c_lo_i, self.c_hi_i, self.cslot)),
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
                  (clip_ufunc, (late, self.lo[ke:], self.hi[ke:], late))]
        if self.p.layer_norm:
            calls.append((_layer_norm, (self._ln_view(late), self.ln_late, self.p.rounding)))
        return calls + [(np.add, (late, self.o_off, self.t1)),
                        (gate_table().take, (self.t1, None, self.o, "clip"))]

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
            return calls + [(clip_ufunc, (ph, self.lo8, self.hi8, h_next.T))]
        pi = self.pi
        calls += [(clip_ufunc, (ph, self.lo8, self.hi8, self.hp[:, :-1].T)),
                  (np.dot, (self.hp, self.p.w_p, self.pf)), (np.copyto, (pi, self.pf, "unsafe"))]
        if self.p.wrap_p:
            calls.append((wrap32_inplace, (pi,)))
        calls += self.req_proj.program(pi, self.ptmp)
        return calls + [(clip_ufunc, (pi, self.o_lo, self.o_hi, h_next))]

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
            return filled(self._select(np.broadcast_to(v, (p_cols,))), shape)
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
                        (clip_ufunc, (out, filled(I16_MIN, shape), filled(I16_MAX, shape), out))]

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
                    (np.add, (parts, filled(0, parts.shape) + (lut + self.part_round_f),
                              parts))]
        calls: list[Call] = []
        if self.fold:   # (part + lut) << shift + round
            calls += [(np.left_shift, (contrib, filled(self.part_shift, contrib.shape), contrib)),
                      (np.add, (contrib, filled((lut << self.part_shift) + self.part_round,
                                                contrib.shape), contrib))]
        elif self.biased:
            calls.append((np.add, (contrib, filled(lut, contrib.shape), contrib)))
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
            run_program(seq.input_calls)
        else:
            parts = input_parts(self.p, x.reshape(steps * self.B, -1))
            seq.contrib[...] = self._select(parts)
        run_program(seq.layout_calls)
        seq.hist[0, :, :-1] = h
        self.cslot[...] = c.T
        self.cslot -= I16_MIN
        if self.cell is not None:   # the first step's peephole reads the unclipped state
            self.cell[...] = c.T
        run_program(seq.calls)
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
    return clamp(out, I16_MIN, I16_MAX)


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
