"""The analysis end to end: a deliberately wrong scale is found, pairing by graph
position, activation and weight statistics, hybrid and uint8 / int16 models."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.edit import RenameTensor, SetQuantization
from tflite_viewer.model import load_model
from tflite_viewer.quant import analyze
from tflite_viewer.quant.pairing import pair_models

from .helpers import MODELS, MNV2_DYNAMIC, MNV2_FLOAT, SMALL_FLOAT, SMALL_INT8, edited


@pytest.fixture(scope="module")
def wrong_scale():
    """small_cnn_dilated_int8 with the DEPTHWISE_CONV_2D's (op 2) weight scales x3: its
    integer kernel now multiplies by a 3x too large requantization multiplier."""
    q = load_model(SMALL_INT8).subgraphs[0].tensors[10].quantization
    bad = edited(SMALL_INT8, SetQuantization(0, 10, q.scale * 3, q.zero_point, 3))
    return analyze(bad, SMALL_FLOAT, samples=3, per_layer_fallback=True)


def test_wrong_scale_layer_is_ranked_worst(wrong_scale):
    worst = wrong_scale.ranked("sqnr_db")[0]
    assert (worst.op, worst.opcode) == (2, "DEPTHWISE_CONV_2D")
    assert worst.metrics["sqnr_db"] < 0  # more error than signal
    # the op's own error (quantized output vs float computation on the same inputs)
    local = sorted((g.local["sqnr_db"], g.op) for g in wrong_scale.fallback if g.local)
    assert local[0][1] == 2 and local[0][0] < local[1][0] - 20


def test_wrong_scale_layer_has_the_largest_fallback_gain(wrong_scale):
    best = wrong_scale.fallback[0]
    assert (best.op, best.opcode, best.weights) == (2, "DEPTHWISE_CONV_2D", "float model")
    others = [g.gain_db for g in wrong_scale.fallback[1:] if g.gain_db is not None]
    assert best.gain_db > 10 and best.gain_db > max(others) + 10
    assert best.cosine_gain > 0
    # with op 2 in float the outputs are as good as the clean model's
    clean = analyze(SMALL_INT8, SMALL_FLOAT, samples=3)
    assert best.sqnr_db == pytest.approx(clean.outputs["sqnr_db"], abs=1.0)
    assert wrong_scale.errors and {f.rule for f in wrong_scale.errors} == {"bias"}


def test_fallback_is_exact_on_data_movement_ops():
    """Computing a data-movement op in float and requantizing into its own (equal)
    parameters gives the same integers: no gain, no loss."""
    r = analyze(SMALL_INT8, SMALL_FLOAT, samples=1, per_layer_fallback=True)
    moves = [g for g in r.fallback if g.opcode in ("SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND",
                                                   "MAX_POOL_2D", "RESHAPE")]
    assert len(moves) == 4 and all(g.gain_db == 0.0 and g.error is None for g in moves)


def test_pairing_by_graph_position_matches_pairing_by_name():
    qm, fm = load_model(SMALL_INT8), load_model(SMALL_FLOAT)
    by_name = pair_models(qm, fm)
    assert {h for _, h in by_name.tensors.values()} == {"name"}
    renames = [RenameTensor(0, t.index, f"renamed_{t.index}") for t in qm.subgraphs[0].tensors]
    renamed = edited(SMALL_INT8, *renames)
    by_pos = pair_models(renamed, fm)
    assert {q: f for q, (f, _) in by_pos.tensors.items()} == \
        {q: f for q, (f, _) in by_name.tensors.items()}
    assert {h for _, h in by_pos.tensors.values()} == {"position"}
    assert by_pos.unpaired_quantized == [] and by_pos.unpaired_float == []
    assert {q: f for q, (f, _) in by_pos.weights.items()} == \
        {q: f for q, (f, _) in by_name.weights.items()}


def test_unpaired_tensors_are_reported():
    qm = load_model(SMALL_INT8)
    # the float dense layer's output renamed: paired by position instead
    f2 = edited(SMALL_FLOAT, RenameTensor(0, 24, "other"))
    p = pair_models(qm, f2)
    assert (0, 25) in p.tensors and p.tensors[(0, 25)] == ((0, 24), "position")
    p_none = pair_models(qm, load_model(MODELS / "sine_float.tflite"))
    real_q = [(0, t.index) for t in qm.subgraphs[0].tensors
              if not t.is_constant and t.type_name == "INT8"]
    assert sorted(p_none.unpaired_quantized + list(p_none.tensors)) == sorted(real_q)
    assert p_none.unpaired_quantized and p_none.unpaired_float


def test_activation_statistics_by_hand():
    r = analyze(SMALL_INT8, SMALL_FLOAT, samples=2, keep_values=True)
    t = r.tensor(14)  # CONV_2D + RELU output, zero point -128
    a = t.activation
    from tflite_viewer.quant.runner import ModelRunner
    from tflite_viewer.quant.analysis import make_samples
    qm = load_model(SMALL_INT8)
    runs = [ModelRunner(qm).run(s)[(0, 14)].copy() for s in make_samples(qm, load_model(SMALL_FLOAT), count=2)]
    allq = np.concatenate([x.ravel() for x in runs])
    assert a.count == allq.size
    assert a.at_min == np.count_nonzero(allq == -128) and a.at_max == np.count_nonzero(allq == 127)
    assert (a.q_low, a.q_high) == (int(allq.min()), int(allq.max()))
    assert a.q_hist.sum() == allq.size
    d = a.to_dict()
    assert d["unused_fraction"] == pytest.approx(1 - (int(allq.max()) - int(allq.min())) / 255)
    f, deq = t.sample_values
    assert f.shape == deq.shape == (1, 32, 32, 8)


def test_weight_report_by_hand():
    r = analyze(SMALL_INT8, SMALL_FLOAT, samples=1)
    w = next(w for w in r.weights if w.tensor == 13)  # CONV_2D op 0, 8 channels on dim 0
    data = load_model(SMALL_INT8).subgraphs[0].tensors[13].data().astype(np.int64)
    rows = data.reshape(8, -1)
    assert w.channels == 8 and w.axis == 0 and w.ops == [0]
    np.testing.assert_allclose(w.used_fraction, (rows.max(1) - rows.min(1)) / 255)
    assert w.at_max == np.count_nonzero(data == 127) and w.at_min == np.count_nonzero(data == -128)
    scales = load_model(SMALL_INT8).subgraphs[0].tensors[13].quantization.scale
    assert w.scale_outlier_ratio == pytest.approx(scales.max() / np.median(scales))
    assert w.float_tensor == 12 and w.metrics["sqnr_db"] > 40  # rounding error only


def test_tiny_channel_is_reported():
    from tflite_viewer.edit import ReplaceTensorData
    data = load_model(SMALL_INT8).subgraphs[0].tensors[13].data().copy()
    data[3] = 0  # channel 3 all zero
    r = analyze(edited(SMALL_INT8, ReplaceTensorData(0, 13, data)), samples=1)
    assert next(w for w in r.weights if w.tensor == 13).tiny_channels == [3]


def test_hybrid_model():
    from tflite_viewer.quant.fallback import candidate_ops
    qm = load_model(MNV2_DYNAMIC)
    ops = candidate_ops(qm)
    # hybrid ops (float activations, int8 weights) are the fallback candidates
    assert {qm.subgraphs[sg].operators[k].opcode.name for sg, k in ops} == {
        "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}
    chosen = [ops[0], ops[1], ops[-1]]  # the first two hybrid ops and the fully connected one
    r = analyze(qm, MNV2_FLOAT, samples=1, per_layer_fallback=True, fallback_ops=chosen)
    assert len(r.compared()) == 66 and not r.unpaired_quantized
    assert all(t.type_name == "FLOAT32" for t in r.compared())
    assert sorted((g.subgraph, g.op) for g in r.fallback) == sorted(chosen)
    assert all(g.error is None and g.weights == "float model" for g in r.fallback)
    # a hybrid op differs from its float computation (int8 weights, quantized inputs)
    assert all(g.local["sqnr_db"] < 80 for g in r.fallback)
    assert all(w.metrics is not None for w in r.weights)


def test_uint8_and_int16_models_run_without_a_float_model():
    for name in ("mobilenet_v1_0.25_224_quant", "trained_lstm_int8"):
        r = analyze(MODELS / f"{name}.tflite", samples=1)
        kinds = {t.type_name for t in r.tensors if t.activation is not None and t.activation.count}
        assert kinds, name
        assert {"UINT8"} <= kinds if name.startswith("mobilenet") else {"INT16", "INT8"} <= kinds
        assert r.compared() == []
