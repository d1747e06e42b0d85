"""Each spec rule found on a model made defective on purpose (with the project's editor),
and not on the clean corpus (or explained there)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tflite_viewer.edit import ReplaceTensorData, SetQuantization
from tflite_viewer.model import load_model
from tflite_viewer.quant import check_spec

from .helpers import MODELS, SMALL_INT8, edited, tree_edited

# small_cnn_dilated_int8: tensor 14 = CONV_2D op 0 output [1,32,32,8], 15 = SPACE_TO_BATCH_ND
# op 1 output, 13 = op 0 weights (8 per-channel scales, dim 0), 11 = op 0 bias, 9 = CONV_2D
# op 5 weights [16,3,3,8] (dim 0)


def _rules(model):
    return Counter(f.rule for f in check_spec(model) if f.severity == "error")


def _q(model, t):
    return model.subgraphs[0].tensors[t].quantization


@pytest.fixture(scope="module")
def clean():
    return load_model(SMALL_INT8)


def test_weight_zero_point(clean):
    q = _q(clean, 13)
    bad = edited(SMALL_INT8, SetQuantization(0, 13, q.scale, np.full(8, 3), 0))
    hit = [f for f in check_spec(bad) if f.rule == "weight-zero-point"]
    assert len(hit) == 1 and hit[0].op == 0 and hit[0].tensor == 13
    assert hit[0].values["zero_points"][:2] == [3, 3]


def test_weight_narrow_range_is_a_warning(clean):
    w = clean.subgraphs[0].tensors[13].data().copy()
    w.flat[5] = -128
    bad = edited(SMALL_INT8, ReplaceTensorData(0, 13, w))
    hit = [f for f in check_spec(bad) if f.rule == "weight-narrow-range"]
    assert len(hit) == 1 and hit[0].severity == "warning" and hit[0].values["count"] == 1


def test_per_channel_on_the_wrong_dimension(clean):
    q = _q(clean, 9)
    bad = edited(SMALL_INT8, SetQuantization(0, 9, q.scale[:8], np.zeros(8, int), 3))
    hit = [f for f in check_spec(bad) if f.rule == "per-channel-dimension"]
    assert [(f.op, f.tensor, f.values["dimension"], f.values["allowed"]) for f in hit] == [
        (5, 9, 3, 0)]


def test_per_channel_activation(clean):
    bad = edited(SMALL_INT8, SetQuantization(0, 14, np.full(8, 0.0122), np.full(8, -128), 3))
    hit = [f for f in check_spec(bad) if f.rule == "per-channel-dimension"]
    assert any(f.tensor == 14 and f.op is None for f in hit)


def test_bias_scale(clean):
    q = _q(clean, 11)
    bad = edited(SMALL_INT8, SetQuantization(0, 11, q.scale * 1.01, q.zero_point, 0))
    hit = [f for f in check_spec(bad) if f.rule == "bias"]
    assert len(hit) == 1 and hit[0].op == 0 and hit[0].tensor == 11
    assert hit[0].values["relative_error"] == pytest.approx(0.01, rel=1e-3)
    # the clean model's bias scales are within the tolerance
    assert not [f for f in check_spec(clean) if f.rule == "bias"]


def test_bias_zero_point(clean):
    q = _q(clean, 11)
    bad = edited(SMALL_INT8, SetQuantization(0, 11, q.scale, np.full(8, 2), 0))
    assert any("zero point" in f.message for f in check_spec(bad) if f.rule == "bias")


def test_same_params_on_a_data_movement_op(clean):
    bad = edited(SMALL_INT8, SetQuantization(0, 15, [0.02], [-128]))
    hit = [f for f in check_spec(bad) if f.rule == "same-params"]
    assert [f.op for f in hit] == [1] and "SPACE_TO_BATCH_ND" in hit[0].message
    # LiteRT agrees: its Prepare refuses the model
    from tests.litert_oracle import litert
    from tflite_viewer.edit import ModelDocument
    doc = ModelDocument(SMALL_INT8)
    doc.apply(SetQuantization(0, 15, [0.02], [-128]))
    with pytest.raises(RuntimeError):
        litert(doc.to_bytes()).allocate_tensors()


def _set(tensor, **fields):
    def change(m):
        qt = m.subgraphs[0].tensors[tensor].quantization
        for k, v in fields.items():
            setattr(qt, k, v)
    return change


def test_scale_not_positive():
    bad = load_model(tree_edited(SMALL_INT8, _set(14, scale=[-0.5])))
    hit = [f for f in check_spec(bad) if f.rule == "scale-positive"]
    assert [(f.tensor, f.values["scales"]) for f in hit] == [(14, [-0.5])]
    nan = load_model(tree_edited(SMALL_INT8, _set(14, scale=[float("nan")])))
    assert any(f.rule == "scale-positive" and f.tensor == 14 for f in check_spec(nan))


def test_zero_point_out_of_range():
    bad = load_model(tree_edited(SMALL_INT8, _set(14, zeroPoint=[200])))
    hit = [f for f in check_spec(bad) if f.rule == "zero-point-range"]
    assert [(f.tensor, f.values["zero_points"], f.values["range"]) for f in hit] == [
        (14, [200], [-128, 127])]


def test_int16_activation_zero_point():
    def change(m):
        t = m.subgraphs[0].tensors[14]
        t.type = 7  # INT16
        t.quantization.zeroPoint = [5]
    bad = load_model(tree_edited(SMALL_INT8, change))
    hit = [f for f in check_spec(bad) if f.rule == "int16-zero-point"]
    assert [(f.tensor, f.values["zero_point"]) for f in hit] == [(14, 5)]


CLEAN = ["small_cnn_dilated_int8", "mobilenet_v2_int8", "mobilenet_v2_dynamic",
         "mobilenet_v1_0.25_224_quant", "ssd_mobilenet_v1", "micro_speech_quantized",
         "yamnet_audio_classifier_with_metadata", "trained_lstm_int8",
         "mobilenet_v2_float", "small_cnn_dilated_float"]


@pytest.mark.parametrize("name", CLEAN)
def test_clean_corpus_has_no_findings(name):
    assert check_spec(load_model(MODELS / f"{name}.tflite")) == []


def test_person_detect_is_explained_litert_refuses_it_for_that_reason():
    findings = check_spec(load_model(MODELS / "person_detect.tflite"))
    assert {f.rule for f in findings} == {"per-channel-dimension"}
    first = findings[0]
    assert first.tensor == 33 and first.values["dimension"] == 3  # a rank-1 bias, dimension 3
    from tests.litert_oracle import litert
    with pytest.raises(ValueError, match="quantized_dimension must be in range"):
        litert(MODELS / "person_detect.tflite").allocate_tensors()


def test_keyword_scrambled_is_explained():
    # a TFLite Micro model: its int16 SVDF state has zero point -32768 (Micro's kernels
    # accept that; the spec asks 0), and five int8 FC weights use -128
    findings = check_spec(load_model(MODELS / "keyword_scrambled_8bit.tflite"))
    assert Counter((f.rule, f.severity) for f in findings) == {
        ("int16-zero-point", "error"): 1, ("weight-narrow-range", "warning"): 5}
    data = load_model(MODELS / "keyword_scrambled_8bit.tflite").subgraphs[0].tensors
    for f in findings:
        if f.rule == "weight-narrow-range":
            assert int(np.count_nonzero(data[f.tensor].data() == -128)) == f.values["count"]
