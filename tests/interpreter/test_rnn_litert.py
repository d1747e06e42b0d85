"""RNN, BIDIRECTIONAL_SEQUENCE_RNN and LSTM (one step) against LiteRT, over two invocations
so the variable states carry over."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter, UnsupportedOpError

from .singleop import Op, graph_model, rel_error

F32 = np.float32


def _twice(model: bytes, inputs: list[list[np.ndarray]], reference: bool = True):
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType
    li = LiteRT(model_content=model, experimental_op_resolver_type=(
        OpResolverType.BUILTIN_REF if reference else OpResolverType.BUILTIN))
    li.allocate_tensors()
    ours = Interpreter(model)
    for xs in inputs:
        for d, x in zip(li.get_input_details(), xs):
            li.set_tensor(d["index"], x)
        li.invoke()
        theirs = [li.get_tensor(d["index"]) for d in li.get_output_details()]
        mine = list(ours.invoke(xs).values())
        assert len(mine) == len(theirs)
        for a, b in zip(mine, theirs):
            assert a.shape == b.shape
            assert rel_error(a, b) <= 1e-5


class _Tensors(list):
    def add(self, spec) -> int:
        self.append(spec)
        return len(self) - 1


@pytest.mark.parametrize("act", ["NONE", "RELU", "TANH", "RELU6"])
@pytest.mark.parametrize("bias", [True, False])
def test_rnn(act, bias):
    """Without a bias LiteRT's Prepare fails ("Tensor at index 3 was optional but was
    expected"): the model is refused here too."""
    rng = np.random.default_rng(1)
    B, I, U = 2, 3, 4
    t = _Tensors([((B, I), F32)])
    ins = [0, t.add(((rng.standard_normal((U, I)) * .5).astype(F32),)),
           t.add(((rng.standard_normal((U, U)) * .5).astype(F32),)),
           t.add((rng.standard_normal(U).astype(F32),)) if bias else -1,
           t.add(((B, U), F32, "variable"))]
    out = t.add(((B, U), F32))
    model = graph_model(t, [Op("RNN", ins, [out], "RNNOptions",
                               {"fused_activation_function": act})], [0], [out])
    if not bias:
        with pytest.raises(UnsupportedOpError, match="bias"):
            Interpreter(model)
        return
    _twice(model, [[rng.standard_normal((B, I)).astype(F32)] for _ in range(3)])


@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("act", ["TANH", "RELU"])
def test_bidirectional_sequence_rnn(merge, time_major, act):
    rng = np.random.default_rng(2)
    T, B, I, U = 4, 2, 3, 5
    shape = (T, B, I) if time_major else (B, T, I)
    t = _Tensors([(shape, F32)])
    ins = [0]
    for _ in range(2):
        ins += [t.add(((rng.standard_normal((U, I)) * .5).astype(F32),)),
                t.add(((rng.standard_normal((U, U)) * .5).astype(F32),)),
                t.add((rng.standard_normal(U).astype(F32),)),
                t.add(((B, U), F32, "variable"))]
    ins += [-1, -1, -1]
    oshape = shape[:-1]
    outs = [t.add((oshape + (2 * U if merge else U,), F32))]
    if not merge:
        outs.append(t.add((oshape + (U,), F32)))
    model = graph_model(t, [Op("BIDIRECTIONAL_SEQUENCE_RNN", ins, outs,
                               "BidirectionalSequenceRNNOptions",
                               {"time_major": time_major, "merge_outputs": merge,
                                "fused_activation_function": act})], [0], outs)
    _twice(model, [[rng.standard_normal(shape).astype(F32)] for _ in range(2)], reference=False)


@pytest.mark.parametrize("cifg,peephole,projection,layer_norm", [
    (False, False, False, False), (True, False, False, False), (False, True, False, False),
    (False, False, True, False), (False, True, True, True), (True, True, True, True)])
@pytest.mark.parametrize("act", ["TANH", "RELU6"])
def test_lstm_step(cifg, peephole, projection, layer_norm, act):
    rng = np.random.default_rng(3)
    B, I, C = 2, 3, 4
    O = 3 if projection else C
    w = lambda *s: (rng.standard_normal(s) * 0.5).astype(F32)  # noqa: E731
    t = _Tensors([((B, I), F32)])
    ins = [0]
    ins += [-1 if (cifg and k == 0) else t.add((w(C, I),)) for k in range(4)]
    ins += [-1 if (cifg and k == 0) else t.add((w(C, O),)) for k in range(4)]
    ins += [-1 if (not peephole or (cifg and k == 0)) else t.add((w(C),)) for k in range(3)]
    ins += [-1 if (cifg and k == 0) else t.add((w(C),)) for k in range(4)]
    ins += [t.add((w(O, C),)), t.add((w(O),))] if projection else [-1, -1]
    ins += [t.add(((B, O), F32, "variable")), t.add(((B, C), F32, "variable"))]
    if layer_norm:
        ins += [-1 if (cifg and k == 0) else t.add((w(C),)) for k in range(4)]
    out = t.add(((B, O), F32))
    model = graph_model(t, [Op("LSTM", ins, [out], "LSTMOptions",
                               {"fused_activation_function": act, "cell_clip": 3.0,
                                "proj_clip": 2.0 if projection else 0.0}, version=1)],
                        [0], [out])
    _twice(model, [[w(B, I)] for _ in range(3)], reference=False)


def _int8_weights(rng, shape):
    w = rng.integers(-127, 128, shape).astype(np.int8)
    return (w, (float(rng.uniform(0.002, 0.02)), 0))


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("act", ["TANH", "RELU"])
@pytest.mark.parametrize("seed", range(3))
def test_hybrid_rnn(asymmetric, act, seed):
    rng = np.random.default_rng(10 + seed)
    B, I, U = 2, 5, 4
    t = _Tensors([((B, I), F32)])
    ins = [0, t.add(_int8_weights(rng, (U, I))), t.add(_int8_weights(rng, (U, U))),
           t.add((rng.standard_normal(U).astype(F32),)), t.add(((B, U), F32, "variable"))]
    out = t.add(((B, U), F32))
    model = graph_model(t, [Op("RNN", ins, [out], "RNNOptions",
                               {"fused_activation_function": act,
                                "asymmetric_quantize_inputs": asymmetric}, version=3)], [0], [out])
    xs = [[rng.standard_normal((B, I)).astype(F32)] for _ in range(3)]
    xs[1][0][0] = 0.0  # an all-zero row
    _twice(model, xs)


def test_hybrid_bidirectional_sequence_rnn_is_refused():
    rng = np.random.default_rng(5)
    T, B, I, U = 3, 2, 4, 3
    t = _Tensors([((T, B, I), F32)])
    ins = [0]
    for _ in range(2):
        ins += [t.add(_int8_weights(rng, (U, I))), t.add(_int8_weights(rng, (U, U))),
                t.add((rng.standard_normal(U).astype(F32),)), t.add(((B, U), F32, "variable"))]
    ins += [-1, -1, -1]
    outs = [t.add(((T, B, 2 * U), F32))]
    model = graph_model(t, [Op("BIDIRECTIONAL_SEQUENCE_RNN", ins, outs,
                               "BidirectionalSequenceRNNOptions",
                               {"time_major": True, "merge_outputs": True,
                                "fused_activation_function": "TANH"}, version=3)], [0], outs)
    with pytest.raises(UnsupportedOpError, match="INT8 input 1"):
        Interpreter(model)


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("time_major", [False, True])
def test_hybrid_unidirectional_sequence_rnn(asymmetric, time_major):
    rng = np.random.default_rng(21)
    T, B, I, U = 4, 2, 5, 3
    shape = (T, B, I) if time_major else (B, T, I)
    t = _Tensors([(shape, F32)])
    ins = [0, t.add(_int8_weights(rng, (U, I))), t.add(_int8_weights(rng, (U, U))),
           t.add((rng.standard_normal(U).astype(F32),)), t.add(((B, U), F32, "variable"))]
    out = t.add((shape[:-1] + (U,), F32))
    model = graph_model(t, [Op("UNIDIRECTIONAL_SEQUENCE_RNN", ins, [out], "SequenceRNNOptions",
                               {"time_major": time_major, "fused_activation_function": "TANH",
                                "asymmetric_quantize_inputs": asymmetric}, version=3)],
                        [0], [out])
    _twice(model, [[rng.standard_normal(shape).astype(F32)] for _ in range(2)])
