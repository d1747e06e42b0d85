"""Integer (8x8_16) UNIDIRECTIONAL_SEQUENCE_LSTM against LiteRT, bit for bit.

Randomized single-op models cover CIFG, peephole, layer normalization and projection in
every combination, with cell and projection clips, batch sizes, sequence lengths, sizes
(including projection to fewer outputs than cells, where LiteRT runs the peephole over
``n_output`` values only), both time-major and batch-major layouts and every cell-state
scale LiteRT's tanh handles.  Many ops share one model; each model is invoked several
times in LiteRT (BUILTIN_REF) and in our interpreter, comparing the outputs and both
state tensors after every invoke (the states are variable tensors carried over).

A literal transcription of lstm_eval.cc's step (per gate, per batch row in batch-major
order, generic requantization) checks the optimized core with both roundings.
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter, UnsupportedOpError
from tflite_viewer.interpreter import quant_math as qm
from tflite_viewer.interpreter.integer import fixedpoint as fx
from tflite_viewer.interpreter.integer import fixedpoint16 as fp
from tflite_viewer.interpreter.integer import lstm as il
from tflite_viewer.interpreter.integer.lstm import program
from tflite_viewer.interpreter.integer.common import qparams, wrap32
from tflite_viewer.model import load_model

from .gen import LITERT_ROUNDING
from tests.interpreter.singleop import Op, T, batch_model

GATES = ("i", "f", "c", "o")


def _logu(rng, lo, hi) -> float:
    return float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))


def _variant(rng, cifg=None, peephole=None, ln=None, proj=None, time_major=None):
    pick = lambda v: bool(rng.integers(0, 2)) if v is None else v  # noqa: E731
    return dict(cifg=pick(cifg), peephole=pick(peephole), ln=pick(ln), proj=pick(proj),
                time_major=pick(time_major))


def _case(rng, cifg, peephole, ln, proj, time_major):
    """A random LSTM op with realistic magnitudes (gates neither all saturated nor all
    zero) and the parameters our core takes."""
    B, steps = int(rng.integers(1, 4)), int(rng.integers(1, 6))
    big = rng.integers(0, 4) == 0   # now and then wider layers
    n_in, n_cell = (int(rng.integers(1, 33 if big else 10)) for _ in range(2))
    if not proj:
        n_out = n_cell
    elif peephole:
        n_out = int(rng.integers(1, n_cell + 1))  # LiteRT reads past the weights above
    else:
        n_out = int(rng.integers(1, n_cell + 5))
    s_in, zp_in = _logu(rng, 0.005, 0.05), int(rng.integers(-128, 128))
    s_h, zp_h = _logu(rng, 0.004, 0.03), int(rng.integers(-128, 128))
    cell_scale = int(rng.integers(-15, -8))
    s_hid, zp_hid = _logu(rng, 0.003, 0.02), int(rng.integers(-128, 128))
    if not proj:  # the converter gives the output state the hidden quantization
        s_h, zp_h = (s_hid, zp_hid) if rng.integers(0, 2) else (s_h, zp_h)
    gates = [g for g in GATES if not (cifg and g == "i")]
    ins: list = [None] * 24
    shape = (steps, B, n_in) if time_major else (B, steps, n_in)
    ins[0] = T(shape, np.int8, s_in, zp_in)
    ln_scales = {g: _logu(rng, 2.0 ** -16, 2.0 ** -9) for g in gates}
    for g in gates:
        k = GATES.index(g)
        ins[1 + k] = T.const(rng.integers(-127, 128, (n_cell, n_in)).astype(np.int8),
                             _logu(rng, 0.002, 0.02), 0)
        ins[5 + k] = T.const(rng.integers(-127, 128, (n_cell, n_out)).astype(np.int8),
                             _logu(rng, 0.002, 0.02), 0)
        if ln:  # added after normalization, in units of 2^-10 of the coefficients' scale
            bias = rng.integers(-(1 << 22), 1 << 22, n_cell)
        else:
            bias = rng.integers(-(1 << 14), 1 << 14, n_cell)
        ins[12 + k] = T.const(bias.astype(np.int32), 1e-5, 0)
        if peephole and g != "c":
            ins[9 + ("i", "f", "o").index(g)] = T.const(
                rng.integers(-(1 << 14), 1 << 14, n_cell).astype(np.int16),
                _logu(rng, 2.0 ** -16, 2.0 ** -12), 0)
        if ln:
            ins[20 + k] = T.const(rng.integers(-(1 << 14), 1 << 14, n_cell).astype(np.int16),
                                  ln_scales[g], 0)
    if proj:
        ins[16] = T.const(rng.integers(-127, 128, (n_out, n_cell)).astype(np.int8),
                          _logu(rng, 0.005, 0.05), 0)
        if rng.integers(0, 2):
            ins[17] = T.const(rng.integers(-(1 << 12), 1 << 12, n_out).astype(np.int32),
                              1e-5, 0)
    ins[18] = T((B, n_out), np.int8, s_h, zp_h, variable=True)
    ins[19] = T((B, n_cell), np.int16, 2.0 ** cell_scale, 0, variable=True)
    if not ln and rng.integers(0, 2):  # the 20-input form (no layer norm slots)
        ins = ins[:20]
    cell_clip = 0.0 if rng.integers(0, 2) else float(2.0 ** cell_scale * rng.uniform(2e3, 4e4))
    proj_clip = 0.0 if not proj or rng.integers(0, 2) else float(s_h * rng.uniform(5, 300))
    out_shape = shape[:2] + (n_out,)
    inter = []
    for g in GATES:
        if ln:
            inter.append(T((0,), np.int16, _logu(rng, 2.0 ** -14, 2.0 ** -10), 0))
        else:
            inter.append(T((0,), np.float32))
    inter.append(T((0,), np.int8, s_hid, zp_hid))
    # the output holds the output state's values; LiteRT reads only the scale of the
    # output tensor (for proj_clip), which the converter makes the state's
    s_out = s_h if rng.integers(0, 2) else _logu(rng, 0.004, 0.03)
    op = Op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [T(out_shape, np.int8, s_out, zp_h)],
            "UnidirectionalSequenceLSTMOptions",
            {"fused_activation_function": "TANH", "cell_clip": cell_clip,
             "proj_clip": proj_clip, "time_major": time_major}, 3, intermediates=inter)
    return op, shape


def _cases(seed: int, count: int, **fixed):
    rng = np.random.default_rng(seed)
    return [_case(rng, **_variant(rng, **fixed)) for _ in range(count)]


def _run_against_litert(cases, invokes: int = 3, seed: int = 0) -> int:
    """All cases in one model; ``invokes`` runs with fresh inputs; every output and state
    compared after each.  Returns the number of comparisons."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType

    built = batch_model([op for op, _ in cases])
    model = load_model(built.model)
    sg = model.subgraphs[0]
    li = LiteRT(model_content=built.model,
                experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    li.allocate_tensors()
    ours = Interpreter(built.model, rounding=LITERT_ROUNDING)
    details = li.get_input_details()
    rng = np.random.default_rng(seed)
    compared = 0
    for run in range(invokes):
        xs = [rng.integers(-128, 128, shape).astype(np.int8) for _, shape in cases]
        for d, x in zip(details, xs):
            li.set_tensor(d["index"], x)
        li.invoke()
        ours.invoke(xs)
        for k, op in enumerate(sg.operators):
            for what, idx in (("output", op.outputs[0]), ("output state", op.inputs[18]),
                              ("cell state", op.inputs[19])):
                ref, mine = li.get_tensor(idx), ours.tensor(0, idx)
                assert mine.dtype == ref.dtype and mine.shape == ref.shape, (k, what)
                if not np.array_equal(mine, ref):
                    bad = np.argwhere(mine != ref)[:3].tolist()
                    o = cases[k][0]
                    flags = dict(cifg=o.inputs[1] is None, peephole=o.inputs[11] is not None,
                                 ln=len(o.inputs) == 24 and o.inputs[21] is not None,
                                 proj=o.inputs[16] is not None, options=o.options,
                                 shape=cases[k][1], n_out=o.inputs[18].shape[1])
                    raise AssertionError(
                        f"op {k} {flags} invoke {run} {what}: {int((mine != ref).sum())}/"
                        f"{ref.size} differ, first at {bad}: ours {mine[tuple(bad[0])]} "
                        f"LiteRT {ref[tuple(bad[0])]}")
                compared += 1
    return compared


@pytest.mark.parametrize("seed", range(6))
def test_random_lstms_match_litert_over_several_invokes(seed):
    cases = _cases(1000 + seed, 40)
    assert _run_against_litert(cases, invokes=3, seed=seed) == 40 * 3 * 3


@pytest.mark.parametrize("cifg", [False, True])
@pytest.mark.parametrize("time_major", [False, True])
def test_peephole_with_projection_to_fewer_outputs(cifg, time_major):
    """LiteRT applies the peephole over n_output values per step: one batch row at a
    time (batch-major) or the flat [batch, n_cell] buffer (time-major)."""
    rng = np.random.default_rng(77 + 2 * cifg + time_major)
    cases = []
    while len(cases) < 12:
        op, shape = _case(rng, cifg, True, bool(len(cases) % 2), True, time_major)
        if op.inputs[18].shape[1] < op.inputs[2].shape[0]:  # n_output < n_cell
            cases.append((op, shape))
    assert _run_against_litert(cases, invokes=2, seed=5) == 12 * 2 * 3


def test_every_cell_scale_and_clip():
    """Cell scales 2^-15 .. 2^-9 (tanh with 0 to 6 integer bits), with and without clips,
    plain LSTMs (the trained model's flavour)."""
    rng = np.random.default_rng(4242)
    cases = [_case(rng, False, False, False, False, bool(k % 2)) for k in range(28)]
    scales = [op.inputs[19].scale for op, _ in cases]
    assert {int(np.log2(s)) for s in scales} == set(range(-15, -8))
    assert _run_against_litert(cases, invokes=2, seed=9) == 28 * 2 * 3


def _big(n, rng) -> np.ndarray:
    """int32 values within 2^10 of the int32 limits, alternating in sign."""
    v = (1 << 31) - rng.integers(1, 1 << 10, n)
    return (v * np.where(np.arange(n) % 2, 1, -1)).astype(np.int32)


@pytest.mark.parametrize("where", ["gate", "projection", "layer_norm"])
def test_int32_overflows_as_litert(where):
    """Biases next to the int32 limits (and gate scales above 1, so that
    MultiplyByQuantizedMultiplier shifts left): the matmul accumulators and the left shift
    wrap to int32 as in C, while ApplyLayerNorm's ``rescaled * coefficient + bias``, which
    the C source writes in int32 arithmetic, does not wrap in LiteRT's build (measured:
    wrapping it changes most outputs of these cases)."""
    rng = np.random.default_rng({"gate": 61, "projection": 62, "layer_norm": 63}[where])
    cases = []
    for k in range(20):
        op, shape = _case(rng, bool(k % 2), k % 3 == 0, where == "layer_norm",
                          where == "projection", k % 4 < 2)
        if where == "projection":
            op.inputs[17] = T.const(_big(op.inputs[16].shape[0], rng), 1e-5, 0)
            op.inputs[16].scale = 0.5
        else:
            for j in range(12, 16):
                if op.inputs[j] is not None:
                    op.inputs[j] = T.const(_big(op.inputs[j].shape[0], rng), 1e-5, 0)
        if where == "gate":
            for j in range(1, 9):
                if op.inputs[j] is not None:
                    op.inputs[j].scale = 0.2
        if where == "layer_norm":
            for j in range(20, 24):
                if op.inputs[j] is not None:
                    op.inputs[j] = T.const(np.full(op.inputs[j].shape, 32767, np.int16),
                                           op.inputs[j].scale, 0)
        cases.append((op, shape))
    assert _run_against_litert(cases, invokes=2, seed=3) == 20 * 2 * 3


# -- a literal transcription of lstm_eval.cc, for both roundings ------------------------------
def _mbqm(x, m, e, rounding):
    return qm.multiply_by_quantized_multiplier(wrap32(x), m, e, rounding)


def _ref_layer_norm(v, coef, bias, scale, guard, rounding):
    out = np.empty_like(v)
    n = v.shape[-1]
    for b in range(v.shape[0]):
        row = v[b]
        total, sum_sq = int(row.sum()), int((row * row).sum())
        mean = int(qm.trunc_div(np.int64(total * 1024), n))
        variance = sum_sq * ((1 << 20) // n) - mean * mean
        var2 = int(qm.trunc_div(np.int64(variance), 1 << 20))
        if var2 < 1:
            var2 = guard
        a, s = fx.inv_sqrt_quantized_multiplier_exp(np.array([var2]), -1)
        rescaled = _mbqm(1024 * row - mean, int(a[0]), int(s[0]), rounding)
        val3 = rescaled * coef + bias  # not wrapped to int32: see test_int32_overflows
        val4 = qm.trunc_div(val3 + np.where(val3 > 0, 512, -512), 1024)
        val5 = _mbqm(val4, scale[0], scale[1] + 12, rounding)
        out[b] = np.clip(val5, -32768, 32767)
    return out


def _ref_step(p: il.LstmParams, x, h, c, time_major):
    """LstmStepInteger8x8_16 on flat per-gate buffers [n_batch, n_cell]."""
    rnd, n = p.rounding, p.n_cell
    B = x.shape[0]
    col = {g: k * n for k, g in enumerate(p.names)}
    w_x = p.w_x.T.astype(np.int64)
    w_h = p.w_h[:-1].T.astype(np.int64)
    b_h = p.w_h[-1].astype(np.int64)

    def gate(g, cell, act):
        sl = slice(col[g], col[g] + n)
        acc = np.clip(_mbqm(x.astype(np.int64) @ w_x[sl].T + p.bias_x[sl],
                            p.scale_x[0][sl], p.scale_x[1][sl], rnd), -32768, 32767)
        acc = np.clip(acc + _mbqm(h.astype(np.int64) @ w_h[sl].T + b_h[sl],
                                  p.scale_h[0][sl], p.scale_h[1][sl], rnd), -32768, 32767)
        if g in p.peephole:  # over the first n_output values of the flat buffer
            w, (m, e) = p.peephole[g]
            flat, cflat = acc.reshape(-1).copy(), cell.reshape(-1)
            for k in range(min(B * p.n_output, B * n) if time_major else min(p.n_output, n)):
                prod = int(w[k % p.n_output]) * int(cflat[k])
                flat[k] = min(max(int(_mbqm(np.int64(prod), m, e, rnd)) + int(flat[k]),
                                  -32768), 32767)
            acc = flat.reshape(acc.shape)
        if p.layer_norm:
            coef, bias, scale, guard = p.layer_norm[g]
            acc = _ref_layer_norm(acc, coef, bias, scale, guard, rnd)
        fn = fp.tanh if act == "tanh" else fp.logistic
        return fn(acc, 3)

    i = None if p.cifg else gate("i", c, "sigmoid")
    f = gate("f", c, "sigmoid")
    g = gate("c", c, "tanh")
    c = fp.wrap16(fp.rounding_divide_by_pot(f * c, 15))
    if p.cifg:
        i = fp.wrap16(32767 - f)
    upd = fp.wrap16(fp.rounding_divide_by_pot(i * g, 30 + p.cell_scale))
    c = np.clip(c + upd, -32768, 32767)
    if p.cell_clip > 0:
        c = np.clip(c, -p.cell_clip, p.cell_clip)
    o = gate("o", c, "sigmoid")
    t = fp.tanh(c, 15 + p.cell_scale)
    if p.w_p is None:
        h = np.clip(_mbqm(o * t, *p.hidden_scale, rnd) + p.hidden_zp, -128, 127)
    else:
        hid = np.clip(_mbqm(o * t, *p.hidden_scale, rnd) - p.hidden_zp, -128, 127)
        w_p = p.w_p[:-1].T.astype(np.int64)
        acc = hid @ w_p.T + p.w_p[-1].astype(np.int64)
        h = np.clip(_mbqm(acc, *p.proj_scale, rnd) + p.output_state_zp, -128, 127)
        if p.proj_clip > 0:
            h = np.clip(h, -p.proj_clip, p.proj_clip)
    return h, c


def _ref_sequence(p, x, h, c, time_major):
    if time_major:
        outs = []
        for t in range(x.shape[0]):
            h, c = _ref_step(p, x[t], h, c, True)
            outs.append(h)
        return np.stack(outs).astype(np.int8), h, c
    outs = np.empty(x.shape[:2] + (p.n_output,), np.int64)
    hs, cs = [], []
    for b in range(x.shape[0]):  # LiteRT: one batch row at a time, n_batch = 1
        hb, cb = h[b:b + 1], c[b:b + 1]
        for t in range(x.shape[1]):
            hb, cb = _ref_step(p, x[b, t][None], hb, cb, False)
            outs[b, t] = hb[0]
        hs.append(hb)
        cs.append(cb)
    return outs.astype(np.int8), np.concatenate(hs), np.concatenate(cs)


def _prepare(op: Op, rounding) -> il.LstmParams:
    ins = op.inputs
    q = lambda t: qparams((t.scale, t.zero_point if t.zero_point is not None else 0))  # noqa
    weights, biases, peephole, layer_norm = {}, {}, {}, {}
    for k, g in enumerate(GATES):
        if ins[1 + k] is None:
            continue
        weights[g] = (ins[1 + k].data, q(ins[1 + k]), ins[5 + k].data, q(ins[5 + k]))
        biases[g] = ins[12 + k].data
        if ins[11] is not None and g != "c":
            t = ins[9 + ("i", "f", "o").index(g)]
            peephole[g] = (t.data, q(t))
        if len(ins) == 24 and ins[21] is not None:
            layer_norm[g] = (ins[20 + k].data, q(ins[20 + k]))
    proj = None if ins[16] is None else (ins[16].data, q(ins[16]),
                                         None if ins[17] is None else ins[17].data)
    return il.prepare_lstm(q(ins[0]), weights, biases, q(ins[18]), q(ins[19]),
                           q(op.intermediates[4]), op.options["cell_clip"], rounding,
                           peephole=peephole, layer_norm=layer_norm,
                           gate_qs=[q(t) if t.scale is not None else (1.0, 0)
                                    for t in op.intermediates[:4]],
                           projection=proj, proj_clip=op.options["proj_clip"],
                           output_q=q(op.outputs[0]))


def _assert_matches_transcription(p, x, h, c, time_major: bool, label: str):
    """`lstm_sequence` against `_ref_sequence` on one sequence: outputs, final output and
    cell states equal and of LiteRT's types; returns the final states."""
    outs, h2, c2 = il.lstm_sequence(x, h, c, p, time_major)
    r_outs, r_h, r_c = _ref_sequence(p, x.astype(np.int64), h.astype(np.int64),
                                     c.astype(np.int64), time_major)
    np.testing.assert_array_equal(outs, r_outs, err_msg=label)
    np.testing.assert_array_equal(h2, r_h, err_msg=label)
    np.testing.assert_array_equal(c2, r_c, err_msg=label)
    assert h2.dtype == np.int8 and c2.dtype == np.int16
    return h2, c2


@pytest.mark.parametrize("rounding, every", [
    ("double", 3), ("single", 3),
    pytest.param("double", 1, marks=pytest.mark.slow),
    pytest.param("single", 1, marks=pytest.mark.slow)], ids=["double-sample", "single-sample",
                                                             "double", "single"])
def test_core_matches_a_literal_transcription(rounding, every):
    """60 random LSTMs against the literal transcription, every third in CI's tier (the
    transcription is plain Python: the whole set takes seconds per rounding)."""
    rng = np.random.default_rng(31 if rounding == "double" else 32)
    checked = 0
    for op, shape in _cases(500 + (rounding == "single"), 60)[::every]:
        p = _prepare(op, rounding)
        tm = op.options["time_major"]
        B = shape[1] if tm else shape[0]
        h = rng.integers(-128, 128, (B, p.n_output)).astype(np.int8)
        c = rng.integers(-32768, 32768, (B, p.n_cell)).astype(np.int16)
        for _ in range(2):  # the second run reuses the cached runner
            x = rng.integers(-128, 128, shape).astype(np.int8)
            h, c = _assert_matches_transcription(p, x, h, c, tm, f"outputs {op.options}")
            checked += 1
    assert checked == 2 * len(range(0, 60, every))


@pytest.mark.parametrize("rounding", ["double", "single"])
def test_hidden_scale_above_one(rounding):
    """A hidden intermediate scale below 2^-30 makes the hidden requantization shift
    left, so that its multiplier cannot ride in the cell table (the runner's generic
    hidden path): against the literal transcription, every layout and gate set."""
    rng = np.random.default_rng(41 + (rounding == "single"))
    for k, (op, shape) in enumerate(_cases(700 + (rounding == "single"), 16)):
        op.intermediates[4].scale = 2.0 ** -int(rng.integers(31, 35))
        p = _prepare(op, rounding)
        assert p.hidden_scale[1] > 0
        tm = op.options["time_major"]
        B = shape[1] if tm else shape[0]
        h = rng.integers(-128, 128, (B, p.n_output)).astype(np.int8)
        c = rng.integers(-32768, 32768, (B, p.n_cell)).astype(np.int16)
        x = rng.integers(-128, 128, shape).astype(np.int8)
        _assert_matches_transcription(p, x, h, c, tm, f"case {k} {op.options}")


def _random_multipliers(rng: np.random.Generator, rounding):
    """A [rows, cols] shape and per-column real scales (1e-9 .. 8) with their quantized
    multipliers and exponents."""
    cols = int(rng.integers(1, 6))
    shape = (int(rng.integers(1, 4)), cols)
    real = np.exp(rng.uniform(np.log(1e-9), np.log(8.0), cols))
    m, e = qm.quantize_multiplier(real, rounding)
    return shape, real, m, e


@pytest.mark.parametrize("rounding", ["double", "single"])
def test_fixed_multiplier_program_matches_bind(rounding):
    """The step program's calls compute what the bound function does, in place on the
    given arrays (premultiplied or not)."""
    rng = np.random.default_rng(5)
    for trial in range(100):
        shape, real, m, e = _random_multipliers(rng, rounding)
        fm = il.FixedMultiplier(m, e, rounding, int(rng.integers(-128, 128)))
        pre = fm.left is None and trial % 2 == 1
        x = rng.integers(-40000, 40000, shape) * (m if pre else 1)
        want = fm.bind(shape, pre)(x.copy(), np.empty_like(x))
        got, tmp = x.copy(), np.empty_like(x)
        program.run_program(fm.program(got, tmp, pre))
        np.testing.assert_array_equal(got, want, err_msg=f"{real} {m} {e}")


@pytest.mark.parametrize("rounding", ["double", "single"])
def test_fixed_multiplier_matches_quant_math(rounding):
    rng = np.random.default_rng(3)
    for trial in range(200):
        shape, real, m, e = _random_multipliers(rng, rounding)
        x = rng.integers(-(1 << 31), 1 << 31, shape) if trial % 2 else \
            rng.integers(-40000, 40000, shape)
        add = int(rng.integers(-128, 128)) if trial % 3 else 0
        want = qm.multiply_by_quantized_multiplier(x, m, e, rounding) + add
        got = il.FixedMultiplier(m, e, rounding, add).bind(shape)(x.copy(), np.empty_like(x))
        np.testing.assert_array_equal(got, want, err_msg=f"{real} {m} {e} {add}")


# -- what the kernel refuses (LiteRT fails, or reads out of bounds) ----------------------------
def _refusal(mutate) -> str:
    rng = np.random.default_rng(8)
    op, _ = _case(rng, False, True, False, True, False)
    mutate(op, rng)
    with pytest.raises(UnsupportedOpError) as err:
        Interpreter(batch_model([op]).model)
    return str(err.value)


def test_refusals():
    def outputs_more_than_cells(op, rng):  # peephole reads w[n_out - 1] past n_cell
        n_cell = op.inputs[2].shape[0]
        for k in range(5, 9):
            op.inputs[k] = T.const(np.ones((n_cell, n_cell + 2), np.int8), 0.01, 0)
        op.inputs[16] = T.const(np.ones((n_cell + 2, n_cell), np.int8), 0.01, 0)
        op.inputs[17] = None
        op.inputs[18] = T((op.inputs[18].shape[0], n_cell + 2), np.int8, 0.01, 0, variable=True)
    assert "peephole" in _refusal(outputs_more_than_cells)

    def no_projection(op, rng):
        op.inputs[16] = op.inputs[17] = None  # n_out may differ from n_cell
        op.inputs[9] = op.inputs[10] = op.inputs[11] = None
        n_cell = op.inputs[2].shape[0]
        for k in range(5, 9):
            op.inputs[k] = T.const(np.ones((n_cell, n_cell + 1), np.int8), 0.01, 0)
        op.inputs[18] = T((op.inputs[18].shape[0], n_cell + 1), np.int8, 0.01, 0, variable=True)
    assert "without projection" in _refusal(no_projection)

    def cell_scale(op, rng):
        op.inputs[19].scale = 2.0 ** -7
    assert "2^-7" in _refusal(cell_scale)

    def partial_peephole(op, rng):
        op.inputs[10] = None
    assert "peephole" in _refusal(partial_peephole)

    def per_channel(op, rng):
        w = op.inputs[2]
        op.inputs[2] = T.const(w.data, np.full(w.shape[0], 0.01), 0)
    assert "per-channel" in _refusal(per_channel)


def test_scalar_inv_sqrt_matches_the_vectorized_one():
    rng = np.random.default_rng(12)
    v = np.concatenate([np.arange(0, 3000), rng.integers(0, 1 << 31, 5000),
                        [(1 << 31) - 1, 1 << 29, (1 << 29) - 1, 1 << 27]])
    m, e = fx.inv_sqrt_quantized_multiplier_exp(v, -1)
    for start in range(0, v.size, 50):  # few values at a time: the Python-integer form
        got_m, got_e = fx.inv_sqrt_multipliers(v[start:start + 50], -1)
        np.testing.assert_array_equal(got_m, m[start:start + 50])
        np.testing.assert_array_equal(got_e, e[start:start + 50])


@pytest.mark.parametrize("c_lo, c_hi", [(-32768, 32767), (-1000, 1000), (-1, 1), (0, 0)])
def test_cell_state_table_is_the_clip_it_replaces(c_lo, c_hi):
    """The runner's final cell state: one clipped lookup of the cell index (c + 32768,
    possibly beyond int16 before the saturation) gives the saturated, clipped state, as
    ``clip(index, 32768 + c_lo, 32768 + c_hi) - 32768`` cast to int16 did."""
    rng = np.random.default_rng(13)
    index = np.concatenate([rng.integers(-(1 << 40), 1 << 40, 2000),
                            rng.integers(-70000, 140000, 5000), np.arange(-3, 65540)])
    index = index.reshape(-1, 1)
    want = (np.clip(index, 32768 + c_lo, 32768 + c_hi) - 32768).T.astype(np.int16)
    got = program.cell_state_table(c_lo, c_hi).take(index.T, mode="clip")
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, want)
