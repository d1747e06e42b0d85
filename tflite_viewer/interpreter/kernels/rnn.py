"""RNN (one step of a basic RNN cell), BIDIRECTIONAL_SEQUENCE_RNN and LSTM (one step of the
full LSTM cell), float32.  Hidden and cell states are variable tensors the kernels write
back, as TFLite does, so they carry over to the next invocation."""
from __future__ import annotations

import numpy as np

from .common import BuiltinOperator as Op, Kernel, activation, option, register
from .recurrent import _data, _time_major, _weights, lstm_sequence, rnn_sequence


class _FloatRecurrent(Kernel):
    """Float weights only: hybrid (quantized weights) recurrent cells are refused."""

    name = ""

    def check(self, ctx, node):
        for k, i in enumerate(node.inputs):
            if i >= 0 and ctx.tensors[i].type_name not in ("FLOAT32",) and \
                    not ctx.tensors[i].is_variable:
                return (f"{node.name} v{node.version} with {ctx.tensors[i].type_name} input "
                        f"{k}: only float32 cells run here (hybrid weights not yet)")
        return None


@register(Op.RNN, versions=(1, 3))
class Rnn(_FloatRecurrent):
    """Inputs: x [batch, input], weights [units, input], recurrent weights [units, units],
    bias [units], hidden state [batch, units] (a variable); output [batch, units]."""

    def check(self, ctx, node):
        if ctx.input(node, 3) is None:
            return f"RNN v{node.version} without a bias: LiteRT's kernel requires one"
        return super().check(ctx, node)

    def prepare(self, ctx, node):
        ctx.resize(ctx.output(node, 0), (ctx.input(node, 0).shape[0], ctx.input(node, 1).shape[0]))

    def invoke(self, ctx, node):
        hs = ctx.input(node, 4)
        outs, h = rnn_sequence(ctx.value(node, 0)[None], hs.data, ctx.value(node, 1),
                               ctx.value(node, 2), _data(ctx, node, 3), activation(node))
        ctx.set_output(hs, h)
        ctx.set_output(ctx.output(node, 0), outs[0])


def _reverse(x: np.ndarray) -> np.ndarray:
    return x[::-1]


@register(Op.BIDIRECTIONAL_SEQUENCE_RNN, versions=(1, 3))
class BidirectionalSequenceRnn(_FloatRecurrent):
    """Inputs: x, forward weights, recurrent weights, bias, hidden state (1-4), backward
    ones (5-8), auxiliary input and weights (9-11, not supported); outputs forward and
    backward sequences, or one merged sequence (``merge_outputs``)."""

    def check(self, ctx, node):
        if len(node.inputs) > 9 and node.inputs[9] >= 0:
            return "BIDIRECTIONAL_SEQUENCE_RNN with an auxiliary input: not implemented"
        return super().check(ctx, node)

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        fw, bw = ctx.input(node, 1).shape[0], ctx.input(node, 5).shape[0]
        if option(node, "merge_outputs", False):
            ctx.resize(ctx.output(node, 0), tuple(x[:-1]) + (fw + bw,))
        else:
            ctx.resize(ctx.output(node, 0), tuple(x[:-1]) + (fw,))
            ctx.resize(ctx.output(node, 1), tuple(x[:-1]) + (bw,))

    def invoke(self, ctx, node):
        tm = bool(option(node, "time_major", True))
        x = _time_major(ctx.value(node, 0), tm)
        act = activation(node)
        results = []
        for base, rev in ((1, False), (5, True)):
            hs = ctx.input(node, base + 3)
            seq = _reverse(x) if rev else x
            outs, h = rnn_sequence(seq, hs.data, ctx.value(node, base), ctx.value(node, base + 1),
                                   _data(ctx, node, base + 2), act)
            ctx.set_output(hs, h)
            results.append(_reverse(outs) if rev else outs)
        if option(node, "merge_outputs", False):
            ctx.set_output(ctx.output(node, 0), _time_major(np.concatenate(results, -1), tm))
        else:
            ctx.set_output(ctx.output(node, 0), _time_major(results[0], tm))
            ctx.set_output(ctx.output(node, 1), _time_major(results[1], tm))


@register(Op.LSTM, versions=(1, 4))
class Lstm(_FloatRecurrent):
    """The full LSTM kernel (24 inputs as UNIDIRECTIONAL_SEQUENCE_LSTM's, one time step):
    x [batch, input] -> output [batch, output]; CIFG, peepholes, projection, layer norm,
    cell and projection clipping.  The BASIC kernel type (5 inputs) is refused."""

    def check(self, ctx, node):
        if option(node, "kernel_type", "FULL") not in ("FULL", 0):
            return f"LSTM v{node.version} with the BASIC kernel type: not implemented"
        return super().check(ctx, node)

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        ctx.resize(ctx.output(node, 0), tuple(x[:-1]) + (ctx.input(node, 18).shape[-1],))

    def invoke(self, ctx, node):
        hs, cs = ctx.input(node, 18), ctx.input(node, 19)
        wts = _weights(ctx, node, 1, 12, 16, 20 if len(node.inputs) > 20 else None)
        outs, h, c = lstm_sequence(ctx.value(node, 0)[None], hs.data, cs.data, wts,
                                   activation(node), float(option(node, "cell_clip", 0.0)),
                                   float(option(node, "proj_clip", 0.0)))
        ctx.set_output(hs, h)
        ctx.set_output(cs, c)
        ctx.set_output(ctx.output(node, 0), outs[0])
