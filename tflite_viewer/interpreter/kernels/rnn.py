"""RNN (one step of a basic RNN cell; float or hybrid), BIDIRECTIONAL_SEQUENCE_RNN (float or hybrid)
and LSTM (one step of the full LSTM cell: float, integer 8x8_16, hybrid).  Hidden and cell states are variable tensors the kernels write
back, as TFLite does, so they carry over to the next invocation."""
from __future__ import annotations

import numpy as np

from ..integer import hybrid_rnn as int_hybrid_rnn
from .common import BuiltinOperator as Op, Kernel, activation, apply_activation, option, register, tensor_qparams
from .recurrent import (UnidirectionalSequenceLstm, _data, _time_major, _weights, lstm_sequence,
                        resize_bidirectional_outputs, rnn_sequence)


class _FloatRecurrent(Kernel):
    """Float weights; ``hybrid_weights`` lists the weight inputs that may instead be int8
    (a hybrid cell, as LiteRT's EvalHybrid)."""

    hybrid_weights: tuple[int, ...] = ()

    def check(self, ctx, node):
        for k, i in enumerate(node.inputs):
            if i < 0 or ctx.tensors[i].is_variable:
                continue
            t = ctx.tensors[i]
            if t.type_name == "FLOAT32":
                continue
            if k in self.hybrid_weights and t.type_name == "INT8" and \
                    t.quantization is not None and t.quantization.has_scale:
                continue
            return (f"{node.name} v{node.version} with {t.type_name} input {k}: float32 "
                    "cells" + (" or int8 hybrid weights" if self.hybrid_weights else "")
                    + " only")
        return None


def _hybrid_rnn(ctx, node, x, h, w_k: int, r_k: int, b_k: int, aux_seq=None,
                aux_k: int | None = None):
    """(outputs [T, B, U], last state) of a hybrid RNN over time-major ``x`` from state
    ``h``; ``aux_seq`` (time-major) is multiplied by the int8 weights of input ``aux_k``."""
    w, r = ctx.input(node, w_k), ctx.input(node, r_k)
    act = activation(node)
    aux = None
    if aux_seq is not None:
        a = ctx.input(node, aux_k)
        aux = (aux_seq, a.data, tensor_qparams(a).s)
    return int_hybrid_rnn.rnn_sequence(x, h, w.data, tensor_qparams(w).s, r.data,
                                       tensor_qparams(r).s, ctx.value(node, b_k),
                                       lambda v: apply_activation(v, act),
                                       bool(option(node, "asymmetric_quantize_inputs", False)),
                                       aux)


def _is_hybrid(ctx, node, w_k: int) -> bool:
    return ctx.input(node, w_k).type_name == "INT8"


@register(Op.RNN, versions=(1, 3))
class Rnn(_FloatRecurrent):
    """Inputs: x [batch, input], weights [units, input], recurrent weights [units, units],
    bias [units], hidden state [batch, units] (a variable); output [batch, units].  Int8
    weights make a hybrid cell."""

    hybrid_weights = (1, 2)
    types = "float+hybrid"  # (what the op coverage report shows; check() decides)

    def check(self, ctx, node):
        if ctx.input(node, 3) is None:
            return f"RNN v{node.version} without a bias: LiteRT's kernel requires one"
        return super().check(ctx, node)

    def prepare(self, ctx, node):
        ctx.resize(ctx.output(node, 0), (ctx.input(node, 0).shape[0], ctx.input(node, 1).shape[0]))

    def invoke(self, ctx, node):
        hs = ctx.input(node, 4)
        if _is_hybrid(ctx, node, 1):
            outs, h = _hybrid_rnn(ctx, node, ctx.value(node, 0)[None], hs.data, 1, 2, 3)
        else:
            outs, h = rnn_sequence(ctx.value(node, 0)[None], hs.data, ctx.value(node, 1),
                                   ctx.value(node, 2), _data(ctx, node, 3), activation(node))
        ctx.set_output(hs, h)
        ctx.set_output(ctx.output(node, 0), outs[0])


def _reverse(x: np.ndarray) -> np.ndarray:
    return x[::-1]


def _present(node, k: int) -> bool:
    return len(node.inputs) > k and node.inputs[k] >= 0


@register(Op.BIDIRECTIONAL_SEQUENCE_RNN, versions=(1, 3))
class BidirectionalSequenceRnn(_FloatRecurrent):
    """Inputs: x, forward weights, recurrent weights, bias, hidden state (1-4), backward
    ones (5-8), auxiliary input (9) and forward and backward auxiliary weights (10, 11);
    outputs forward and backward sequences, or one merged sequence (``merge_outputs``).

    With the auxiliary weights, each cell adds aux x A^T (stacking with cross links); an
    auxiliary input without them is the backward cell's input instead of x (stacking
    without cross links), time major only: LiteRT's batch-major loops read x for both
    cells and ignore it.  LiteRT steps through the auxiliary input with the input's row
    size, so it must match the input's shape (refused otherwise).

    Int8 weights (all of them) make a hybrid cell, as LiteRT's EvalHybrid, including its
    time-major quirk: EvalHybrid wraps the forward and backward passes in an extra
    ``for t < max_time`` loop, so each direction runs over the whole sequence max_time
    times, its state carried from pass to pass; the outputs are the last pass's.
    (Time-major, merged outputs, symmetric quantization crashes LiteRT: its RnnBatchStep
    offsets the null zero-point pointer per batch row; the same rule is followed here.)"""

    hybrid_weights = (1, 2, 5, 6, 10, 11)
    types = "float+hybrid"

    def check(self, ctx, node):
        why = self._aux_problem(ctx, node)
        if why:
            return why
        kinds = {ctx.input(node, k).type_name for k in self.hybrid_weights
                 if _present(node, k)}
        if len(kinds) > 1:
            return (f"BIDIRECTIONAL_SEQUENCE_RNN v{node.version}: weights of types "
                    f"{sorted(kinds)}; LiteRT reads all four as the forward weights' type")
        return super().check(ctx, node)

    @staticmethod
    def _aux_problem(ctx, node) -> str | None:
        """What bidirectional_sequence_rnn.cc's Prepare refuses, or reads out of bounds."""
        fw_aux, bw_aux = _present(node, 10), _present(node, 11)
        name = f"BIDIRECTIONAL_SEQUENCE_RNN v{node.version}"
        if fw_aux != bw_aux:
            return f"{name}: forward and backward auxiliary weights come together"
        if not _present(node, 9):
            return f"{name}: auxiliary weights without an auxiliary input" if fw_aux else None
        x, aux = ctx.input(node, 0).shape, ctx.input(node, 9).shape
        if tuple(aux) != tuple(x):
            return (f"{name}: auxiliary input {list(aux)} differs from the input {list(x)} "
                    "(LiteRT steps through it with the input's sizes)")
        if fw_aux:
            for k, base in ((10, 1), (11, 5)):
                if tuple(ctx.input(node, k).shape) != tuple(ctx.input(node, base).shape):
                    return f"{name}: auxiliary weights {k} not of input weights {base}'s shape"
        return None

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        resize_bidirectional_outputs(ctx, node, x, ctx.input(node, 1).shape[0],
                                     ctx.input(node, 5).shape[0])

    def invoke(self, ctx, node):
        tm = bool(option(node, "time_major", True))
        x = _time_major(ctx.value(node, 0), tm)
        aux = _time_major(ctx.value(node, 9), tm) if _present(node, 9) else None
        cross = _present(node, 10)  # aux weights: aux feeds both cells; else the bw input
        act = activation(node)
        hybrid = _is_hybrid(ctx, node, 1)
        passes = x.shape[0] if hybrid and tm else 1  # EvalHybrid's extra time loop
        results = []
        for base, aux_k, rev in ((1, 10, False), (5, 11, True)):
            hs = ctx.input(node, base + 3)
            # the backward cell reads the auxiliary input only time major: LiteRT's
            # batch-major loops read x for both cells
            seq = aux if rev and aux is not None and not cross and tm else x
            aux_seq = aux if cross else None
            if rev:
                seq = _reverse(seq)
                aux_seq = None if aux_seq is None else _reverse(aux_seq)
            h = hs.data
            for _ in range(passes):
                if hybrid:
                    outs, h = _hybrid_rnn(ctx, node, seq, h, base, base + 1, base + 2,
                                          aux_seq, aux_k)
                else:
                    w, s_in = ctx.value(node, base), seq
                    if aux_seq is not None:  # x W^T + aux A^T as one product
                        w = np.concatenate([w, ctx.value(node, aux_k)], axis=1)
                        s_in = np.concatenate([seq, aux_seq], axis=-1)
                    outs, h = rnn_sequence(s_in, h, w, ctx.value(node, base + 1),
                                           _data(ctx, node, base + 2), act)
            ctx.set_output(hs, h)
            results.append(_reverse(outs) if rev else outs)
        if option(node, "merge_outputs", False):
            ctx.set_output(ctx.output(node, 0), _time_major(np.concatenate(results, -1), tm))
        else:
            ctx.set_output(ctx.output(node, 0), _time_major(results[0], tm))
            ctx.set_output(ctx.output(node, 1), _time_major(results[1], tm))


class _StepInput:
    """A [batch, input] tensor seen as the batch-major sequence [batch, 1, input]."""

    def __init__(self, t) -> None:
        self._t = t

    def __getattr__(self, name):
        return getattr(self._t, name)

    @property
    def shape(self):
        shape = tuple(self._t.shape)
        return shape[:1] + (1,) + shape[1:]


class _OneStep:
    """The kernel context with input 0 seen as a one-step sequence (for the checks and
    preparation of UNIDIRECTIONAL_SEQUENCE_LSTM's cores); everything else passes through."""

    def __init__(self, ctx, node) -> None:
        self._ctx, self._node = ctx, node

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def input(self, node, k):
        t = self._ctx.input(node, k)
        return _StepInput(t) if k == 0 and t is not None else t

    def resize(self, tensor, shape):
        if tensor is self._ctx.output(self._node, 0):
            shape = tuple(shape)[:1] + tuple(shape)[2:]  # [batch, 1, output] -> [batch, output]
        self._ctx.resize(tensor, shape)


@register(Op.LSTM, versions=(1, 4))
class Lstm(UnidirectionalSequenceLstm):
    """The full LSTM kernel: UNIDIRECTIONAL_SEQUENCE_LSTM's 24 inputs and cores (float,
    integer 8x8_16 with its 5 intermediates, hybrid int8 weights) for one time step,
    x [batch, input] -> output [batch, output].  The BASIC kernel type (5 inputs) is
    refused."""

    def check(self, ctx, node):
        if option(node, "kernel_type", "FULL") not in ("FULL", 0):
            return f"LSTM v{node.version} with the BASIC kernel type: not implemented"
        x = ctx.input(node, 0)
        if x is None or x.shape is None or len(x.shape) != 2:
            return f"LSTM v{node.version}: the input must be [batch, input]"
        # the sequence kernel's rules, on the input seen as a sequence of one step
        return super().check(_OneStep(ctx, node), node)

    def prepare(self, ctx, node):
        super().prepare(_OneStep(ctx, node), node)  # LSTMOptions has no time_major: False

    def invoke(self, ctx, node):
        hs, cs = ctx.input(node, 18), ctx.input(node, 19)
        x = ctx.value(node, 0)
        if isinstance(node.user_data, tuple):  # integer or hybrid core, [batch, 1, input]
            sequence, params, _ = node.user_data
            outs, h, c = sequence(x[None], hs.data, cs.data, params, True)  # time major
            out = outs[0]
        else:
            wts = _weights(ctx, node, 1, 12, 16, 20 if len(node.inputs) > 20 else None)
            outs, h, c = lstm_sequence(x[None], hs.data, cs.data, wts, activation(node),
                                       float(option(node, "cell_clip", 0.0)),
                                       float(option(node, "proj_clip", 0.0)))
            out = outs[0]
        ctx.set_output(hs, h)
        ctx.set_output(cs, c)
        ctx.set_output(ctx.output(node, 0), out)
