"""Model Explorer node data: what litert_quantizer's validator writes, from our analysis;
and `PairedCall`, one call's paired measurement."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tflite_viewer.interpreter.inputs import seeded_inputs
from tflite_viewer.model import load_model
from tflite_viewer.quant import analyze
from tflite_viewer.quant.call import PairedCall
from tflite_viewer.quant.explorer import THRESHOLDS, VALIDATOR_METRICS, node_data, validator_row

from . import llm_pairs as lp

Q4 = lp.LLM / "tiny_llama_q4_block32.tflite"


def test_node_data_equals_the_validators_file():
    """Both signatures of the int4 blockwise decoder on the same seeded inputs (the
    analysis's own: seeds 0 and 1 of the float model's inputs): for every metric, the
    file the validator writes (create_json_for_model_explorer of its compare_model) and
    ours have the same thresholds, the same value for every tensor we measure, and the
    tensors only it lists are ones both models hold alike (or that hold no real values)."""
    from litert_quantizer import model_validator
    from litert_quantizer.utils.validation_utils import ValidationErrorMetric
    qbytes = Q4.read_bytes()
    fm = load_model(lp.TINY_FLOAT)
    _, result = lp.validator(lp.TINY_FLOAT, qbytes, lp.signature_inputs(fm, 2))
    report = analyze(qbytes, fm, samples=2, backend="litert", validator_metrics=True)
    theirs_mse = json.loads(model_validator.create_json_for_model_explorer(
        result, metric=ValidationErrorMetric.MSE, threshold=list(THRESHOLDS)))["results"]
    for metric in VALIDATOR_METRICS:
        theirs = json.loads(model_validator.create_json_for_model_explorer(
            result, metric=ValidationErrorMetric(metric), threshold=list(THRESHOLDS)))
        ours = node_data(report, metric)
        assert ours["thresholds"] == theirs["thresholds"]
        assert set(ours["results"]) <= set(theirs["results"])
        for name, v in ours["results"].items():
            want = theirs["results"][name]["value"]
            assert math.isclose(v["value"], want, rel_tol=1e-5, abs_tol=1e-12), (metric, name)
        for name in set(theirs["results"]) - set(ours["results"]):
            assert theirs_mse[name]["value"] == 0, name
        assert len(ours["results"]) > 100


def test_validator_row_by_hand():
    ref = np.array([1.0, -2.0, 0.0, 4.0], np.float32)
    tgt = np.array([1.5, -2.0, 0.5, 3.0], np.float32)
    row = validator_row(ref, tgt)
    assert row["mse"] == pytest.approx((0.25 + 0 + 0.25 + 1) / 4)
    assert row["median_diff_ratio"] == pytest.approx(np.median(
        [0.5 / (1 + 1e-6), 0.0, 0.5 / 1e-6, 1 / (4 + 1e-6)]), rel=1e-6)
    assert row["cosine_similarity"] == pytest.approx(
        float(ref @ tgt) / (np.linalg.norm(ref) * np.linalg.norm(tgt)), rel=1e-6)
    p, q = np.maximum(ref, 0), np.maximum(tgt, 0)
    assert row["kl_divergence"] == pytest.approx(
        float(np.sum(p * np.log((p + 1e-9) / (q + 1e-9)))), rel=1e-5)
    assert row["snr"] == pytest.approx((1 + 4 + 0 + 16) / 4 / (1.5 / 4 + 1e-9), rel=1e-6)
    assert validator_row(np.zeros(0), np.zeros(0)) == dict.fromkeys(VALIDATOR_METRICS, 0.0)


def test_paired_call_measures_as_the_analysis_and_feeds_back():
    """One decode call measured by `PairedCall` is the analysis of that one sample (the
    same code: equal rows); each model's outputs are LiteRT's for that model; a second
    call fed each model's own KV cache measures again."""
    from tests.litert_oracle import litert
    qm, fm = load_model(Q4), load_model(lp.TINY_FLOAT)
    x = seeded_inputs(fm, 4, "decode")
    pc = PairedCall(qm, fm, "decode")
    got = pc.measure(x)
    report = analyze(qm, fm, given=[x], signature="decode", all_entries=False, workers=1)
    compared = report.compared()
    assert compared and all(got.rows[t.key] == t.per_input[0] for t in compared)
    assert got.outputs == pytest.approx(report.outputs["per_input"][0])
    for model, outs in ((Q4, got.quantized), (lp.TINY_FLOAT, got.float)):
        want = litert(model).get_signature_runner("decode")(**x)
        assert set(outs) == set(want)
        np.testing.assert_allclose(outs["logits"], want["logits"], rtol=1e-4, atol=1e-4)
    step = {"tokens": np.array([[7]], np.int32), "input_pos": x["input_pos"] + 1}
    q_next = {**step, **{k: v for k, v in got.quantized.items() if k.startswith("kv_cache")}}
    f_next = {**step, **{k: v for k, v in got.float.items() if k.startswith("kv_cache")}}
    again = pc.measure(q_next, f_next)
    want = litert(Q4).get_signature_runner("decode")(**q_next)
    np.testing.assert_allclose(again.quantized["logits"], want["logits"], rtol=1e-4, atol=1e-4)
    assert again.rows.keys() == got.rows.keys() and again.rows != got.rows
