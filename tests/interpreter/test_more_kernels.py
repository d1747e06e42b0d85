"""Selection, spectral, recurrent and MediaPipe kernels: against LiteRT where it has the
op, else against values computed by hand."""
from __future__ import annotations

import struct

import numpy as np
import pytest
from flatbuffers import flexbuffers

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.kernels import mediapipe as mp
from tflite_viewer.interpreter.kernels.recurrent import LstmWeights, lstm_sequence

from .singleop import (Input, Op, assert_matches_litert, graph_model, run_litert, run_ours,
                       single_op_model)

F32, I32 = np.float32, np.int32


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(F32)


def test_topk():
    x = _x(3, 10)
    x[0, 3] = x[0, 7]  # a tie: the lower index comes first
    assert_matches_litert(single_op_model("TOPK_V2", [Input(x.shape), np.array(4, I32)], [F32, I32]), [x])


def _boxes(n, seed):
    rng = np.random.default_rng(seed)
    c = rng.uniform(0, 1, (n, 2))
    s = rng.uniform(0.05, 0.4, (n, 2))
    return np.concatenate([c - s / 2, c + s / 2], axis=1).astype(F32), rng.uniform(0, 1, n).astype(F32)


@pytest.mark.parametrize("seed", range(5))
def test_non_max_suppression_v4_v5(seed):
    boxes, scores = _boxes(30, seed)
    m4 = single_op_model("NON_MAX_SUPPRESSION_V4", [Input(boxes.shape), Input(scores.shape),
                                                    np.array(10, I32), np.array(0.4, F32),
                                                    np.array(0.2, F32)], [I32, I32])
    assert_matches_litert(m4, [boxes, scores])
    m5 = single_op_model("NON_MAX_SUPPRESSION_V5", [Input(boxes.shape), Input(scores.shape),
                                                    np.array(10, I32), np.array(0.5, F32),
                                                    np.array(0.1, F32), np.array(0.3, F32)],
                         [I32, F32, I32])
    assert_matches_litert(m5, [boxes, scores])


def test_rfft2d_and_complex_parts():
    x = _x(2, 6, 8)
    model = single_op_model("RFFT2D", [Input(x.shape), np.array([4, 8], I32)], [np.complex64])
    assert_matches_litert(model, [x], reference=False)
    out = run_ours(model, [x])[0]
    np.testing.assert_allclose(out, np.fft.rfft2(x[:, :4, :], s=(4, 8)), rtol=1e-5, atol=1e-5)
    c = (x + 1j * _x(2, 6, 8, seed=1)).astype(np.complex64)
    for op in ("COMPLEX_ABS", "REAL", "IMAG"):
        assert_matches_litert(single_op_model(op, [Input(c.shape, np.complex64)], [F32]), [c],
                              reference=False)


@pytest.mark.parametrize("regular", [False, True])
def test_detection_postprocess(regular):
    n, classes = 40, 3
    rng = np.random.default_rng(4)
    enc = (rng.standard_normal((1, n, 4)) * 0.5).astype(F32)
    scores = rng.uniform(0, 1, (1, n, classes + 1)).astype(F32)
    anchors = np.concatenate([rng.uniform(0.2, 0.8, (n, 2)), rng.uniform(0.1, 0.3, (n, 2))],
                             axis=1).astype(F32)
    opts = {"max_detections": 6, "max_classes_per_detection": 2, "detections_per_class": 4,
            "use_regular_nms": regular, "nms_score_threshold": 0.3, "nms_iou_threshold": 0.5,
            "num_classes": classes, "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0,
            "w_scale": 5.0}
    model = single_op_model("CUSTOM", [Input(enc.shape), Input(scores.shape), anchors],
                            [F32, F32, F32, F32], custom_code="TFLite_Detection_PostProcess",
                            custom_options=flexbuffers.Dumps(opts))
    ref = run_litert(model, [enc, scores], reference=False)
    ours = run_ours(model, [enc, scores])
    count = int(ref[3][0])
    assert int(ours[3][0]) == count > 0
    assert all(a.shape == b.shape for a, b in zip(ours, ref))
    # LiteRT leaves the rows past the detection count uninitialised; we zero them
    rows = count if regular else count * opts["max_classes_per_detection"]
    for a, b in zip(ours[:3], ref[:3]):
        np.testing.assert_allclose(a[:, :rows], b[:, :rows], rtol=1e-5, atol=1e-6)
    assert not ours[2][:, rows:].any()


def test_unidirectional_sequence_rnn():
    x = _x(2, 5, 3)
    w, r, b = _x(4, 3, seed=1), _x(4, 4, seed=2) * 0.3, _x(4, seed=3)
    tensors = [((2, 5, 3), F32), (w,), (r,), (b,), ((2, 4), F32, "variable"), ((2, 5, 4), F32)]
    model = graph_model(tensors, [Op("UNIDIRECTIONAL_SEQUENCE_RNN", [0, 1, 2, 3, 4], [5],
                                     "SequenceRNNOptions", {"time_major": False,
                                                            "fused_activation_function": "TANH"})],
                        [0], [5])
    assert_matches_litert(model, [x])


def test_svdf_keeps_state_across_runs():
    batch, inp, filters, memory, rank = 2, 3, 4, 5, 2
    wf, wt, b = _x(filters, inp, seed=1), _x(filters, memory, seed=2), _x(filters // rank, seed=3)
    tensors = [((batch, inp), F32), (wf,), (wt,), (b,), ((batch, filters * memory), F32, "variable"),
               ((batch, filters // rank), F32)]
    model = graph_model(tensors, [Op("SVDF", [0, 1, 2, 3, 4], [5], "SVDFOptions",
                                     {"rank": rank, "fused_activation_function": "RELU"})], [0], [5])
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType
    li = LiteRT(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    li.allocate_tensors()
    ours = Interpreter(model)
    for step in range(4):
        x = _x(batch, inp, seed=10 + step)
        li.set_tensor(li.get_input_details()[0]["index"], x)
        li.invoke()
        ref = li.get_tensor(li.get_output_details()[0]["index"])
        out = list(ours.invoke([x]).values())[0]
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_lstm_cifg_peephole_projection_against_a_plain_loop():
    """The LSTM core on hand-unrolled equations (CIFG, peepholes, projection, clipping)."""
    rng = np.random.default_rng(0)
    T, B, I, C, O = 3, 2, 4, 5, 3
    W = {k: rng.standard_normal((C, I)).astype(F32) * 0.5 for k in "fco"}
    R = {k: rng.standard_normal((C, O)).astype(F32) * 0.5 for k in "fco"}
    P = {k: rng.standard_normal(C).astype(F32) * 0.5 for k in "fo"}
    bias = {k: rng.standard_normal(C).astype(F32) for k in "fco"}
    proj = rng.standard_normal((O, C)).astype(F32)
    wts = LstmWeights(None, W["f"], W["c"], W["o"], None, R["f"], R["c"], R["o"], None, P["f"],
                      P["o"], None, bias["f"], bias["c"], bias["o"], proj, None)
    x = rng.standard_normal((T, B, I)).astype(F32)
    h0, c0 = np.zeros((B, O), F32), np.zeros((B, C), F32)
    outs, h, c = lstm_sequence(x, h0, c0, wts, "TANH", cell_clip=0.8, proj_clip=0.0)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    hh, cc = h0.astype(np.float64), c0.astype(np.float64)
    for t in range(T):
        f = sig(x[t] @ W["f"].T + hh @ R["f"].T + P["f"] * cc + bias["f"])
        g = np.tanh(x[t] @ W["c"].T + hh @ R["c"].T + bias["c"])
        cc = np.clip(f * cc + (1 - f) * g, -0.8, 0.8)
        o = sig(x[t] @ W["o"].T + hh @ R["o"].T + P["o"] * cc + bias["o"])
        hh = (o * np.tanh(cc)) @ proj.T
        np.testing.assert_allclose(outs[t], hh, rtol=1e-5, atol=1e-5)


def _pool_options(padding, stride, filt, act=0):
    return struct.pack("<6i", {"SAME": 1, "VALID": 2}[padding], stride[1], stride[0], filt[1], filt[0], act)


def test_mediapipe_max_pool_argmax_and_unpooling_by_hand():
    x = np.array([[1, 5, 2, 0], [3, 4, 8, 7], [0, 0, 1, 1], [9, 0, 1, 2]], F32).reshape(1, 4, 4, 1)
    opts = _pool_options("VALID", (2, 2), (2, 2))
    model = single_op_model("CUSTOM", [Input(x.shape)], [F32, F32], custom_code="MaxPoolingWithArgmax2D",
                            custom_options=opts)
    out, idx = run_ours(model, [x])
    np.testing.assert_array_equal(out[0, :, :, 0], [[5, 8], [9, 2]])
    np.testing.assert_allclose(idx[0, :, :, 0], [[1.1, 2.1], [2.1, 3.1]], rtol=1e-6)
    un = single_op_model("CUSTOM", [Input(out.shape), Input(idx.shape)], [F32], custom_code="MaxUnpooling2D",
                         custom_options=opts)
    back = run_ours(un, [out, idx])[0]
    expect = np.zeros((4, 4), F32)
    expect[0, 1], expect[1, 2], expect[3, 0], expect[3, 3] = 5, 8, 9, 2
    np.testing.assert_array_equal(back[0, :, :, 0], expect)


def test_mediapipe_transpose_conv_bias_by_loops():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 3, 4, 2)).astype(F32)
    w = rng.standard_normal((3, 3, 3, 2)).astype(F32)
    b = rng.standard_normal(3).astype(F32)
    for padding in ("SAME", "VALID"):
        opts = struct.pack("<3i", {"SAME": 1, "VALID": 2}[padding], 2, 2)
        model = single_op_model("CUSTOM", [Input(x.shape), w, b], [F32],
                                custom_code="Convolution2DTransposeBias", custom_options=opts)
        out = run_ours(model, [x])[0]
        # direct loops over the definition
        ph = max(0, 3 - (3 - 1) % 2 - 1) if padding == "SAME" else 0
        pw = max(0, 3 - (4 - 1) % 2 - 1) if padding == "SAME" else 0
        oh, ow = 2 * 2 + 3 - ph, 2 * 3 + 3 - pw
        ref = np.tile(b, (1, oh, ow, 1)).astype(np.float64)
        for iy in range(3):
            for ix in range(4):
                for fy in range(3):
                    for fx in range(3):
                        oy, ox = iy * 2 - ph // 2 + fy, ix * 2 - pw // 2 + fx
                        if 0 <= oy < oh and 0 <= ox < ow:
                            ref[0, oy, ox] += w[:, fy, fx, :] @ x[0, iy, ix]
        assert out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert mp.pool_params(_pool_options("SAME", (1, 2), (3, 3), 1))["activation"] == "RELU"


@pytest.mark.parametrize("act", ["NONE", "TANH", "RELU6"])
def test_unidirectional_sequence_lstm_activations(act):
    """With activation NONE LiteRT multiplies the output gate by the cell gate (its scratch
    is never overwritten with the activated cell state); the others by act(c)."""
    T, B, I, C = 4, 2, 3, 5
    rng = np.random.default_rng(8)
    w = lambda *s: (rng.standard_normal(s) * 0.5).astype(F32)  # noqa: E731
    tensors = [((B, T, I), F32)]

    def add(spec):
        tensors.append(spec)
        return len(tensors) - 1

    op_inputs = [0] + [add((w(C, I),)) for _ in range(4)] + [add((w(C, C),)) for _ in range(4)]
    op_inputs += [-1, -1, -1] + [add((w(C),)) for _ in range(4)] + [-1, -1]
    op_inputs += [add(((B, C), F32, "variable")) for _ in range(2)]
    outs = [add(((B, T, C), F32))]
    model = graph_model(tensors, [Op("UNIDIRECTIONAL_SEQUENCE_LSTM", op_inputs, outs,
                                     "UnidirectionalSequenceLSTMOptions",
                                     {"fused_activation_function": act, "time_major": False})],
                        [0], outs)
    assert_matches_litert(model, [w(B, T, I)])


@pytest.mark.parametrize("merge", [False, True])
def test_bidirectional_sequence_lstm(merge):
    T, B, I, C = 4, 2, 3, 5
    rng = np.random.default_rng(7)
    w = lambda *s: (rng.standard_normal(s) * 0.5).astype(F32)  # noqa: E731
    tensors = [((T, B, I), F32)]
    inputs = [0]

    def add(spec):
        tensors.append(spec)
        return len(tensors) - 1

    op_inputs = [0]
    for _direction in range(2):
        op_inputs += [add((w(C, I),)) for _ in range(4)]        # input weights
        op_inputs += [add((w(C, C),)) for _ in range(4)]        # recurrent weights
        op_inputs += [-1, -1, -1]                               # no peepholes
        op_inputs += [add((w(C),)) for _ in range(4)]           # biases
        op_inputs += [-1, -1]                                   # no projection
    op_inputs += [add(((B, C), F32, "variable")) for _ in range(4)]  # fw h, c, bw h, c
    op_inputs += [-1] * 9                                       # no auxiliary input
    outs = [add(((T, B, 2 * C if merge else C), F32))]
    if not merge:
        outs.append(add(((T, B, C), F32)))
    model = graph_model(tensors, [Op("BIDIRECTIONAL_SEQUENCE_LSTM", op_inputs, outs,
                                     "BidirectionalSequenceLSTMOptions",
                                     {"fused_activation_function": "TANH", "merge_outputs": merge,
                                      "time_major": True})], inputs, outs)
    assert_matches_litert(model, [w(T, B, I)])
