"""Every subgraph is analysed: loop bodies (lstm_dynamic vs lstm_float: a hybrid
FULLY_CONNECTED inside a WHILE body) and a second signature's subgraph (multi_signature).

Truth: numpy on LiteRT's preserved tensors.  LiteRT keeps a WHILE body's tensors of the
last iteration only, but the LSTM writes every iteration's h into the sequence its WHILE
returns to subgraph 0, so the body's history (all 20 iterations) is checked against that.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from tflite_viewer.edit import ReplaceTensorData
from tflite_viewer.model import load_model
from tflite_viewer.quant import analyze
from tflite_viewer.quant.analysis import make_samples
from tflite_viewer.quant.metrics import METRICS
from tflite_viewer.quant.report import op_values, rows, to_csv

from .helpers import MODELS, edited, numpy_metrics

LSTM_FLOAT = MODELS / "lstm_float.tflite"
LSTM_DYNAMIC = MODELS / "lstm_dynamic.tflite"
MULTI_SIG = MODELS / "multi_signature.tflite"
BODY, BODY2 = 2, 4          # the two LSTM layers' WHILE bodies
H_HISTORY, SEQUENCE = 44, 15  # body: h written per step; subgraph 0: WHILE's sequence output
LAST_H, H2_LAST = 33, 21     # second body: h per step; subgraph 0: its last h


def _close(a, b, rel=2e-3, sqnr_abs=0.05, abs_=1e-6, key=""):
    if a is None or b is None:
        return a is b
    if math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=rel, abs_tol=sqnr_abs if key == "sqnr_db" else abs_)


def _litert_run(path, x):
    from tests.litert_oracle import litert
    li = litert(path)
    li.allocate_tensors()
    li.set_tensor(li.get_input_details()[0]["index"], np.asarray(x, np.float32))
    li.invoke()
    return li


@pytest.fixture(scope="module")
def lstm():
    report = analyze(LSTM_DYNAMIC, LSTM_FLOAT, samples=2, per_layer_fallback=True,
                     keep_values=True)
    samples = make_samples(load_model(LSTM_DYNAMIC), load_model(LSTM_FLOAT), count=2)
    return report, samples


def test_loop_bodies_are_compared(lstm):
    report, _ = lstm
    compared = {t.subgraph for t in report.compared()}
    assert {0, BODY, BODY2} <= compared
    # tensor identities carry the subgraph (subgraph 0 has no tensor 44)
    t = report.tensor(H_HISTORY, BODY)
    assert (t.subgraph, t.float_subgraph, t.float_tensor) == (BODY, BODY, H_HISTORY)
    assert report.tensor(H_HISTORY, 0) is None
    # the loop conditions' real tensors are their own inputs (values the caller's tensors
    # carry): not recorded, so not compared, and reported as such (no metrics)
    for cond in (1, 3):
        assert all(t.metrics is None for t in report.tensors if t.subgraph == cond)


def test_body_history_equals_numpy_on_litert_sequence(lstm):
    """The body's h over all 20 iterations vs the float model's: every metric equals numpy
    on the sequence LiteRT's WHILE returns (same values, same order), per sample."""
    report, samples = lstm
    body = report.tensor(H_HISTORY, BODY)
    assert body.metrics["num_elements"] == 20 * 16
    last = report.tensor(LAST_H, BODY2)
    for s, sample in enumerate(samples):
        ql, fl = _litert_run(LSTM_DYNAMIC, sample[0]), _litert_run(LSTM_FLOAT, sample[0])
        ref = numpy_metrics(fl.get_tensor(SEQUENCE), ql.get_tensor(SEQUENCE), None)
        for k in METRICS:
            assert _close(body.per_input[s][k], ref[k], key=k), (s, k, body.per_input[s][k], ref[k])
        # LiteRT keeps the body's last iteration: our history's last step is it
        if s == 0:
            f_hist, q_hist = last.sample_values
            assert f_hist.shape == (20, 1, 1, 8)
            np.testing.assert_allclose(q_hist[-1].reshape(-1), ql.get_tensor(H2_LAST).reshape(-1),
                                       atol=2e-6)
            np.testing.assert_allclose(f_hist[-1].reshape(-1), fl.get_tensor(H2_LAST).reshape(-1),
                                       atol=2e-6)
            np.testing.assert_allclose(body.sample_values[1][-1].reshape(-1),
                                       ql.get_tensor(H_HISTORY, BODY).reshape(-1), atol=2e-6)


def test_body_weights_and_fallback(lstm):
    """The int8 weight lives in the first body: its error against the float weight by
    hand; the hybrid FULLY_CONNECTED of that body is the only quantized op, so computing
    it in float makes the outputs equal the float model's (an infinite gain)."""
    report, _ = lstm
    [w] = report.weights
    assert (w.subgraph, w.float_subgraph, w.tensor, w.float_tensor) == (BODY, BODY, 16, 10)
    qt = load_model(LSTM_DYNAMIC).subgraphs[BODY].tensors[16]
    q = qt.quantization
    deq = (qt.data().astype(np.float64) - q.zero_point.reshape(-1, 1)) * q.scale.reshape(-1, 1)
    ref = numpy_metrics(load_model(LSTM_FLOAT).subgraphs[BODY].tensors[10].data(), deq, None)
    for k in METRICS:
        assert _close(w.metrics[k], ref[k], rel=1e-9, sqnr_abs=1e-9, abs_=1e-12, key=k), k
    [g] = report.fallback
    assert (g.subgraph, g.op, g.opcode, g.weights, g.error) == (
        BODY, 2, "FULLY_CONNECTED", "float model", None)
    assert g.gain_db == math.inf and g.sqnr_db == math.inf
    # its own error, over all iterations, is the body's FULLY_CONNECTED output error
    assert g.local["num_elements"] == 20 * 64 and 30 < g.local["sqnr_db"] < 60


def test_subgraph_in_rows_json_csv_and_overlay(lstm):
    report, _ = lstm
    r = next(r for r in rows(report) if r["subgraph"] == BODY and r["tensor"] == H_HISTORY)
    assert r["float_subgraph"] == BODY
    js = report.to_dict()
    assert any(t["subgraph"] == BODY and t["tensor"] == H_HISTORY for t in js["tensors"])
    assert js["fallback"][0]["subgraph"] == BODY
    header, *lines = to_csv(report).splitlines()
    cols = header.split(",")
    assert cols[:2] == ["subgraph", "tensor"]
    assert any(line.split(",")[:2] == [str(BODY), str(H_HISTORY)] for line in lines)
    body_ops = op_values(report, "sqnr_db", subgraph=BODY)
    main_ops = op_values(report, "sqnr_db", subgraph=0)
    assert 2 in body_ops and set(main_ops) <= {0, 1, 2, 3, 4}
    assert body_ops[2] == pytest.approx(report.tensor(19, BODY).metrics["sqnr_db"])


def _perturbed_multi_signature():
    """multi_signature with both signatures' weights rounded to 1/8: an error to measure
    in each subgraph."""
    m = load_model(MULTI_SIG)
    changes = [ReplaceTensorData(sg, 1, np.round(m.subgraphs[sg].tensors[1].data() * 8) / 8)
               for sg in (0, 1)]
    return edited(MULTI_SIG, *changes)


@pytest.mark.parametrize("backend", ["litert", "interpreter"])
def test_second_signature_equals_numpy_on_litert(backend):
    """The 'encode' signature's subgraph (1) is not called by subgraph 0: it runs as its
    own entry on seeded samples for its inputs; every metric equals numpy on the tensors
    LiteRT's signature runner preserves."""
    from tests.litert_oracle import litert
    approx = _perturbed_multi_signature()
    report = analyze(approx, MULTI_SIG, samples=2, backend=backend)
    # subgraph 0 runs as the signature that runs it, and is named so
    assert [(o["signature"], o["subgraph"]) for o in report.entry_outputs] == [
        ("decode", 0), ("encode", 1)]
    assert report.outputs is report.entry_outputs[0]
    enc = [t for t in report.compared() if t.subgraph == 1]
    assert sorted(t.tensor for t in enc) == [0, 2]
    fm = load_model(MULTI_SIG)
    from tflite_viewer.quant.samples import seeded_samples
    samples = seeded_samples(fm, 2, 0, "encode")
    for s, sample in enumerate(samples):
        refs = {}
        for name, model in (("f", MULTI_SIG), ("q", approx.data)):
            li = litert(model if name == "f" else bytes(np.asarray(model, np.uint8)))
            li.get_signature_runner("encode")(x=np.asarray(sample[0], np.float32))
            refs[name] = li.get_tensor(2, 1)
        ref = numpy_metrics(refs["f"], refs["q"], None)
        out = report.tensor(2, 1)
        assert out.per_input[s]["sqnr_db"] < 60  # the rounding is measured
        for k in METRICS:
            assert _close(out.per_input[s][k], ref[k], key=k), (backend, s, k)
        assert _close(report.entry_outputs[1]["per_input"][s]["sqnr_db"], ref["sqnr_db"],
                      key="sqnr_db")


def test_given_samples_feed_the_chosen_signature():
    """A debugger session on the 'encode' signature: its inputs feed that entry (one
    sample), subgraph 0 still runs, on seeded samples; the encode tensors' metrics equal
    numpy on LiteRT's signature runner with exactly those inputs."""
    from tests.litert_oracle import litert
    approx = _perturbed_multi_signature()
    x = np.array([[0.5, -1.0, 2.0, 0.25]], np.float32)
    report = analyze(approx, MULTI_SIG, samples=3, given=[{"x": x}], signature="encode")
    assert report.samples == 1
    assert [(o["signature"], len(o["per_input"])) for o in report.entry_outputs] == [
        ("encode", 1), ("decode", 3)]
    refs = []
    for model in (MULTI_SIG, bytes(np.asarray(approx.data, np.uint8))):
        li = litert(model)
        li.get_signature_runner("encode")(x=x)
        refs.append(li.get_tensor(2, 1))
    ref = numpy_metrics(refs[0], refs[1], None)
    [got] = report.tensor(2, 1).per_input
    for k in METRICS:
        assert _close(got[k], ref[k], key=k), k


def test_spec_rule_found_in_a_loop_body():
    """The body's int8 weight given zero point 3 (the editor): the finding names subgraph
    2, its FULLY_CONNECTED and the tensor; the clean model has none."""
    from tflite_viewer.edit import SetQuantization
    from tflite_viewer.quant import check_spec
    assert check_spec(load_model(LSTM_DYNAMIC)) == []
    q = load_model(LSTM_DYNAMIC).subgraphs[BODY].tensors[16].quantization
    bad = edited(LSTM_DYNAMIC, SetQuantization(BODY, 16, q.scale, np.full(q.scale.size, 3), 0))
    [f] = [f for f in check_spec(bad) if f.rule == "weight-zero-point"]
    assert (f.subgraph, f.op, f.tensor) == (BODY, 2, 16) and f.values["zero_points"][0] == 3
