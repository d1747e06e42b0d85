"""Recurrent ops (float): UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM,
UNIDIRECTIONAL_SEQUENCE_RNN, SVDF.

State tensors are variable tensors: the kernels write the final states back into them, so
they carry over to the next invocation, as in TFLite (until `reset_variables`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .activations import logistic
from ..integer import lstm as int_lstm, svdf as int_svdf
from ..integer import hybrid_lstm as int_hybrid_lstm
from ..integer import hybrid_rnn as int_hybrid_rnn
from .common import (BuiltinOperator as Op, Kernel, activation, apply_activation, kind, option,
                     register, rounding, tensor_qparams)


@dataclass
class LstmWeights:
    """One direction's LSTM parameters (None where the model omits them)."""

    w_i: np.ndarray | None
    w_f: np.ndarray
    w_c: np.ndarray
    w_o: np.ndarray
    r_i: np.ndarray | None
    r_f: np.ndarray
    r_c: np.ndarray
    r_o: np.ndarray
    p_i: np.ndarray | None = None
    p_f: np.ndarray | None = None
    p_o: np.ndarray | None = None
    b_i: np.ndarray | None = None
    b_f: np.ndarray | None = None
    b_c: np.ndarray | None = None
    b_o: np.ndarray | None = None
    proj_w: np.ndarray | None = None
    proj_b: np.ndarray | None = None
    ln_i: np.ndarray | None = None
    ln_f: np.ndarray | None = None
    ln_c: np.ndarray | None = None
    ln_o: np.ndarray | None = None


def _layer_norm(x: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = np.square(x - mean).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-8)


def _gate(x, h, c, w, r, p, b, ln, act):
    z = x @ w.T + h @ r.T
    if p is not None and c is not None:
        z = z + p * c
    if ln is not None:
        z = _layer_norm(z) * ln
    if b is not None:
        z = z + b
    return act(z)


def _plain(wts: LstmWeights) -> bool:
    """No CIFG, peepholes, layer normalization or projection: the four gates are one
    product of the stacked weights (`lstm_sequence_stacked`)."""
    return (wts.w_i is not None and wts.r_i is not None and wts.p_i is None and wts.p_f is None
            and wts.p_o is None and wts.ln_i is None and wts.ln_f is None and wts.ln_c is None
            and wts.ln_o is None and wts.proj_w is None)


def stack_weights(wts: LstmWeights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Input and recurrent weights of the gates i, f, c, o side by side, transposed
    ([I, 4U], [O, 4U]), and their biases ([4U], zeros where omitted)."""
    w_t = np.ascontiguousarray(np.concatenate([wts.w_i, wts.w_f, wts.w_c, wts.w_o]).T)
    r_t = np.ascontiguousarray(np.concatenate([wts.r_i, wts.r_f, wts.r_c, wts.r_o]).T)
    u = wts.w_f.shape[0]
    b = np.concatenate([np.zeros(u, np.float32) if v is None else v
                        for v in (wts.b_i, wts.b_f, wts.b_c, wts.b_o)])
    return w_t.astype(np.float32, copy=False), r_t.astype(np.float32, copy=False), b


def lstm_sequence_stacked(x: np.ndarray, h: np.ndarray, c: np.ndarray,
                          stacked: tuple[np.ndarray, np.ndarray, np.ndarray],
                          act: str | None = "TANH", cell_clip: float = 0.0,
                          reverse: bool = False):
    """`lstm_sequence` for plain LSTMs (see `_plain`) as a compiled step.

    The input's contribution to every gate of every step is one product computed before
    the loop (the input does not depend on the state), so a step is one recurrent product
    and the gate arithmetic: about a dozen numpy calls instead of forty.
    """
    w_t, r_t, b = stacked
    steps_n, batch = x.shape[0], x.shape[1]
    u = r_t.shape[1] // 4
    xw = (x.reshape(steps_n * batch, -1) @ w_t).reshape(steps_n, batch, 4 * u)
    xw += b
    outs = np.empty((steps_n, batch, u), dtype=np.float32)
    tanh_cell = act == "TANH"
    steps = range(steps_n - 1, -1, -1) if reverse else range(steps_n)
    # the gate pre-activations and their logistic in two buffers every step reuses, their
    # gate views taken once (a step computes the values of `logistic` and fresh arrays)
    z = np.empty((batch, 4 * u), np.float32)
    s = np.empty((batch, 4 * u), np.float32)
    z_g = z[:, 2 * u:3 * u]
    s_i, s_f, s_o = s[:, :u], s[:, u:2 * u], s[:, 3 * u:]
    one = np.ones((), np.float32)
    for t in steps:
        np.add(h @ r_t, xw[t], out=z)
        np.negative(z, out=s)
        np.exp(s, out=s)
        np.add(one, s, out=s)
        np.divide(one, s, out=s)
        g = np.tanh(z_g) if tanh_cell else apply_activation(np.array(z_g, copy=True), act)
        c = np.multiply(s_f, c)  # f * c + i * g
        c += s_i * g
        if cell_clip > 0:  # np.clip's values, without its Python wrapper (a step's costliest call)
            np.minimum(np.maximum(c, -cell_clip, out=c), cell_clip, out=c)
        if act in (None, "NONE"):  # see lstm_sequence: LiteRT multiplies by g then
            h = s_o * g
        elif tanh_cell:
            h = np.tanh(c)
            h *= s_o
        else:
            h = s_o * apply_activation(np.array(c), act)
        outs[t] = h
    return outs, h.astype(np.float32, copy=False), c.astype(np.float32, copy=False)


def lstm_sequence(x: np.ndarray, h: np.ndarray, c: np.ndarray, wts: LstmWeights,
                  act: str | None = "TANH", cell_clip: float = 0.0, proj_clip: float = 0.0,
                  reverse: bool = False):
    """Run a (time-major) sequence [T, B, I]; returns (outputs [T, B, O], h, c)."""
    def cell_act(v):
        return apply_activation(np.array(v, copy=True), act)
    outs = np.empty((x.shape[0], h.shape[0], h.shape[1]), dtype=np.float32)
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    for t in steps:
        xt = x[t]
        f = _gate(xt, h, c, wts.w_f, wts.r_f, wts.p_f, wts.b_f, wts.ln_f, logistic)
        if wts.w_i is None:  # CIFG: the input gate is coupled to the forget gate
            i = 1 - f
        else:
            i = _gate(xt, h, c, wts.w_i, wts.r_i, wts.p_i, wts.b_i, wts.ln_i, logistic)
        g = _gate(xt, h, None, wts.w_c, wts.r_c, None, wts.b_c, wts.ln_c, cell_act)
        c = f * c + i * g
        if cell_clip > 0:
            c = np.clip(c, -cell_clip, cell_clip)
        o = _gate(xt, h, c, wts.w_o, wts.r_o, wts.p_o, wts.b_o, wts.ln_o, logistic)
        # LiteRT's CalculateLstmOutputFloat activates the cell state into the cell gate's
        # scratch; with activation NONE nothing is written, so it multiplies by g, not c
        m = o * (g if act in (None, "NONE") else cell_act(c))
        if wts.proj_w is not None:
            m = m @ wts.proj_w.T
            if wts.proj_b is not None:
                m = m + wts.proj_b
            if proj_clip > 0:
                m = np.clip(m, -proj_clip, proj_clip)
        h = m.astype(np.float32)
        outs[t] = h
    return outs, h, c.astype(np.float32)


def _data(ctx, node, k):
    t = ctx.input(node, k)
    return None if t is None else t.data


def _weights(ctx, node, base: int, bias: int, proj: int, ln: int | None) -> LstmWeights:
    d = lambda k: _data(ctx, node, k)  # noqa: E731
    return LstmWeights(
        d(base), d(base + 1), d(base + 2), d(base + 3), d(base + 4), d(base + 5),
        d(base + 6), d(base + 7), d(base + 8), d(base + 9), d(base + 10),
        d(bias), d(bias + 1), d(bias + 2), d(bias + 3), d(proj), d(proj + 1),
        *((d(ln), d(ln + 1), d(ln + 2), d(ln + 3)) if ln is not None else (None,) * 4))


def _time_major(x: np.ndarray, time_major: bool) -> np.ndarray:
    return x if time_major else np.swapaxes(x, 0, 1)


@register(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, versions=(1, 4))
class UnidirectionalSequenceLstm(Kernel):
    """Inputs: x, 4 input weights, 4 recurrent weights, 3 peepholes, 4 biases, projection
    weights and bias, output state, cell state, 4 layer-norm coefficients.

    Float, and integer 8x8_16 (int8 input and weights, int16 cell state, 5 intermediates:
    integer/lstm.py, bit-exact with LiteRT's EvalInteger8x8_16) with CIFG, peephole,
    projection and layer normalization.  Hybrid (float32 input and states, int8 weights:
    integer/hybrid_lstm.py, LiteRT's EvalHybrid) with CIFG, peephole, projection and
    layer normalization."""

    types = "float+int8+hybrid"

    def check(self, ctx, node):
        if option(node, "diagonal_recurrent_tensors", False):
            return "UNIDIRECTIONAL_SEQUENCE_LSTM with diagonal recurrent tensors: not implemented"
        why = super().check(ctx, node)
        if not why and kind(ctx, node) == "hybrid":
            return int_hybrid_lstm.unsupported_reason(
                [ctx.input(node, k) for k in range(len(node.inputs))], node.builtin_data,
                f"UNIDIRECTIONAL_SEQUENCE_LSTM v{node.version} (hybrid)")
        if why or kind(ctx, node) != "int8":
            return why
        return int_lstm.unsupported_reason(
            [ctx.input(node, k) for k in range(len(node.inputs))],
            [ctx.tensors[i] for i in node.intermediates], ctx.output(node, 0),
            node.builtin_data, f"UNIDIRECTIONAL_SEQUENCE_LSTM v{node.version} with INT8 input")

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        n_out = ctx.input(node, 18).shape[-1]
        ctx.resize(ctx.output(node, 0), tuple(x[:-1]) + (n_out,))
        tm = bool(option(node, "time_major", False))
        # integer and hybrid nodes keep (the core's lstm_sequence, its parameters, time
        # major), so that invoke only runs it
        if kind(ctx, node) == "hybrid":
            ts = [ctx.input(node, k) for k in range(len(node.inputs))]
            node.user_data = (int_hybrid_lstm.lstm_sequence, int_hybrid_lstm.prepare_hybrid_lstm(
                [None if t is None else t.data for t in ts],
                [0.0 if t is None else tensor_qparams(t).s for t in ts], node.builtin_data), tm)
            return
        if kind(ctx, node) == "int8":
            node.user_data = (int_lstm.lstm_sequence, int_lstm.prepare_from_tensors(
                [ctx.input(node, k) for k in range(len(node.inputs))],
                [ctx.tensors[i] for i in node.intermediates], ctx.output(node, 0),
                node.builtin_data, tensor_qparams, rounding(ctx)), tm)
        else:  # float: the stacked gate weights, made on first use (`_stacked`)
            node.user_data = {"arrays": None, "stacked": None}

    def invoke(self, ctx, node):
        if isinstance(node.user_data, tuple):  # integer or hybrid: prepared parameters
            sequence, params, tm = node.user_data
            hs, cs = ctx.input(node, 18), ctx.input(node, 19)
            outs, h, c = sequence(ctx.value(node, 0), hs.data, cs.data, params, tm)
            ctx.set_output(hs, h)   # a variable of another rank takes its own shape
            ctx.set_output(cs, c)
            ctx.set_output(ctx.output(node, 0), outs)
            return
        tm = bool(option(node, "time_major", False))
        x = _time_major(ctx.value(node, 0), tm)
        hs, cs = ctx.input(node, 18), ctx.input(node, 19)
        wts = _weights(ctx, node, 1, 12, 16, 20 if len(node.inputs) > 20 else None)
        stacked = _stacked(node, wts) if x.dtype == np.float32 and _plain(wts) else None
        if stacked is not None:
            outs, h, c = lstm_sequence_stacked(x, hs.data, cs.data, stacked, activation(node),
                                               float(option(node, "cell_clip", 0.0)))
        else:
            outs, h, c = lstm_sequence(x, hs.data, cs.data, wts, activation(node),
                                       float(option(node, "cell_clip", 0.0)),
                                       float(option(node, "proj_clip", 0.0)))
        ctx.set_output(hs, h)
        ctx.set_output(cs, c)
        ctx.set_output(ctx.output(node, 0), _time_major(outs, tm))


def _stacked(node, wts: LstmWeights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`stack_weights` of a float node, cached on it while its weight arrays are the same
    ones (an edited or computed weight tensor is stacked again)."""
    arrays = (wts.w_i, wts.w_f, wts.w_c, wts.w_o, wts.r_i, wts.r_f, wts.r_c, wts.r_o,
              wts.b_i, wts.b_f, wts.b_c, wts.b_o)
    cache = node.user_data
    if cache["arrays"] is None or any(a is not b for a, b in zip(arrays, cache["arrays"])):
        cache["arrays"], cache["stacked"] = arrays, stack_weights(wts)
    return cache["stacked"]


@register(Op.BIDIRECTIONAL_SEQUENCE_LSTM, versions=(1, 3))
class BidirectionalSequenceLstm(Kernel):
    """48 inputs: x, forward weights (1-17), backward weights (18-34), forward states
    (35, 36), backward states (37, 38), auxiliary input and weights (39-47)."""

    def check(self, ctx, node):
        if len(node.inputs) > 39 and node.inputs[39] >= 0:
            return "BIDIRECTIONAL_SEQUENCE_LSTM with an auxiliary input: not implemented"
        return super().check(ctx, node)

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        resize_bidirectional_outputs(ctx, node, x, ctx.input(node, 35).shape[-1],
                                     ctx.input(node, 37).shape[-1])

    def invoke(self, ctx, node):
        tm = bool(option(node, "time_major", True))
        x = _time_major(ctx.value(node, 0), tm)
        act = activation(node)
        clip = float(option(node, "cell_clip", 0.0)), float(option(node, "proj_clip", 0.0))
        results = []
        for base, bias, proj, hs_k, rev in ((1, 12, 16, 35, False), (18, 29, 33, 37, True)):
            hs, cs = ctx.input(node, hs_k), ctx.input(node, hs_k + 1)
            outs, h, c = lstm_sequence(x, hs.data, cs.data, _weights(ctx, node, base, bias, proj, None),
                                       act, clip[0], clip[1], reverse=rev)
            ctx.set_output(hs, h)
            ctx.set_output(cs, c)
            results.append(outs)
        if option(node, "merge_outputs", False):
            ctx.set_output(ctx.output(node, 0), _time_major(np.concatenate(results, -1), tm))
        else:
            ctx.set_output(ctx.output(node, 0), _time_major(results[0], tm))
            ctx.set_output(ctx.output(node, 1), _time_major(results[1], tm))


def rnn_sequence(x, h, w, r, b, act):
    outs = np.empty((x.shape[0], h.shape[0], w.shape[0]), dtype=np.float32)
    for t in range(x.shape[0]):
        z = x[t] @ w.T + h @ r.T
        if b is not None:
            z = z + b
        h = apply_activation(z.astype(np.float32), act)
        outs[t] = h
    return outs, h


@register(Op.UNIDIRECTIONAL_SEQUENCE_RNN, versions=(1, 3))
class UnidirectionalSequenceRnn(Kernel):
    """Inputs: x, weights [units, input], recurrent weights, bias, hidden state; int8
    weights make a hybrid cell (integer/hybrid_rnn.py)."""

    types = "float+hybrid"

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        ctx.resize(ctx.output(node, 0), tuple(x[:-1]) + (ctx.input(node, 1).shape[0],))

    def invoke(self, ctx, node):
        tm = bool(option(node, "time_major", False))
        x = _time_major(ctx.value(node, 0), tm)
        hs = ctx.input(node, 4)
        w, r = ctx.input(node, 1), ctx.input(node, 2)
        if w.type_name == "INT8":
            act = activation(node)
            outs, h = int_hybrid_rnn.rnn_sequence(
                x, hs.data, w.data, tensor_qparams(w).s, r.data, tensor_qparams(r).s, ctx.value(node, 3),
                lambda v: apply_activation(v, act),
                bool(option(node, "asymmetric_quantize_inputs", False)))
        else:
            outs, h = rnn_sequence(x, hs.data, ctx.value(node, 1), ctx.value(node, 2),
                                   _data(ctx, node, 3), activation(node))
        ctx.set_output(hs, h)
        ctx.set_output(ctx.output(node, 0), _time_major(outs, tm))


def svdf_step(x, state, w_feature, w_time, bias, rank: int, act):
    """One SVDF step: shift the memory, add the new feature column, filter over time, sum
    each unit's `rank` filters.  ``state`` is [batch, filters, memory]."""
    state = np.concatenate([state[:, :, 1:], (x @ w_feature.T)[:, :, None]], axis=2)
    scratch = np.einsum("bfm,fm->bf", state, w_time)
    out = scratch.reshape(x.shape[0], -1, rank).sum(axis=2)
    if bias is not None:
        out = out + bias
    return apply_activation(out.astype(np.float32), act), state


@register(Op.SVDF, versions=(1, 4))
class Svdf(Kernel):
    """Inputs: x [batch, input], feature weights [filters, input], time weights
    [filters, memory], bias [units], state [batch, filters * memory].

    Float, and full integer (int8 input, int8 feature weights, int32 bias: integer/svdf.py)
    with either int16 time weights and state, as LiteRT's EvalIntegerSVDF, or int8 time
    weights and state (with a state zero point), as TFLite Micro's
    EvalIntegerSvdfReference<int8_t>.  LiteRT crashes on the int8 flavour (it reads those
    buffers as int16, past their end); TFLM is its reference.  Mixed int8/int16 time
    weights and state are refused (TFLM would read one as the other's type)."""

    types = "float+int8"

    def check(self, ctx, node):
        why = super().check(ctx, node)
        if why or kind(ctx, node) != "int8":
            return why
        wt, st = ctx.input(node, 2), ctx.input(node, 4)
        pair = (wt.type_name, "none" if st is None else st.type_name)
        if pair == ("INT8", "INT8"):
            return None  # TFLM: any fused activation, none applied (integer/svdf.py)
        if pair != ("INT16", "INT16"):
            return (f"SVDF v{node.version} with INT8 input needs INT16 or INT8 time weights "
                    f"and state of the same type (got {pair[0]} and {pair[1]})")
        if option(node, "fused_activation_function", "NONE") != "RELU":
            return f"SVDF v{node.version} with INT8 input supports only the RELU activation"
        return None

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        filters = ctx.input(node, 1).shape[0]
        rank = int(option(node, "rank", 1))
        if rank <= 0 or filters % rank:
            raise ValueError(f"{filters} filters are not a multiple of rank {rank}")
        ctx.resize(ctx.output(node, 0), (x[0], filters // rank))
        if kind(ctx, node) == "int8":
            micro = ctx.input(node, 4).type_name == "INT8"  # TFLM's flavour (integer/svdf.py)
            prep = int_svdf.prepare_svdf_micro if micro else int_svdf.prepare_svdf
            node.user_data = prep(*(tensor_qparams(ctx.input(node, k)) for k in (0, 1, 2, 4)),
                                  tensor_qparams(ctx.output(node, 0)), rounding(ctx))
        else:
            node.user_data = None

    def invoke(self, ctx, node):
        x = ctx.value(node, 0)
        if node.user_data is not None:
            st = ctx.input(node, 4)
            out, state = int_svdf.svdf(x, ctx.value(node, 1), ctx.value(node, 2),
                                       _data(ctx, node, 3), st.data, int(option(node, "rank", 1)),
                                       node.user_data)
            ctx.set_output(st, state.reshape(st.shape))
            ctx.set_output(ctx.output(node, 0), out)
            return
        wf, wt = ctx.value(node, 1), ctx.value(node, 2)
        st = ctx.input(node, 4)
        state = st.data.reshape(x.shape[0], wf.shape[0], wt.shape[1])
        out, state = svdf_step(x, state, wf, wt, _data(ctx, node, 3), int(option(node, "rank", 1)),
                               activation(node))
        ctx.set_output(st, state.reshape(st.shape))
        ctx.set_output(ctx.output(node, 0), out)


def resize_bidirectional_outputs(ctx, node, x_shape, fw: int, bw: int) -> None:
    """A bidirectional sequence op's outputs: one [..., fw + bw] with merge_outputs, else
    a forward [..., fw] and a backward [..., bw]."""
    lead = tuple(x_shape[:-1])
    if option(node, "merge_outputs", False):
        ctx.resize(ctx.output(node, 0), lead + (fw + bw,))
    else:
        ctx.resize(ctx.output(node, 0), lead + (fw,))
        ctx.resize(ctx.output(node, 1), lead + (bw,))
