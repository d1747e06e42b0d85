"""TensorFlow Lite Micro: our verdict agrees with the tflite_micro Python interpreter.

The oracle either runs a model (AllocateTensors prepares every operator, invoke succeeds)
or fails, naming in its log the operator it could not resolve, prepare or run.  Every
corpus model (each in a child process: TFLM aborts on some models and loops on one) and
every single-op case.  Where TFLM runs a model LiteRT also runs, the outputs are compared.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.litert_oracle import litert
from tests.targets import cases
from tests.targets.oracles import (litert_outputs, micro_inputs, outputs_close,
                                   tflm_run_isolated, tflm_run_many)
from tflite_viewer.model import load_model
from tflite_viewer.targets import tflm
from tflite_viewer.delegation.facts import ModelFacts
from tflite_viewer.targets.tflm import SILENT, first_failure

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = sorted(DATA.glob("models/*.tflite")) + sorted(DATA.glob("signal/*.tflite")) + sorted(
    DATA.glob("mediapipe/*.tflite"))
# TFLM prepares every operator of this model, but its invoke never returns (checked by hand
# with a 60 s limit): the Keras LSTM lowered to WHILE loops slices with sizes the loop
# counter sets, and TFLM computes those slices into their stored shapes.  Our verdict: every
# kernel prepares, and those SLICEs compute something else ("Silently wrong").
INVOKE_HANGS = {"lstm_float"}


def verdict(model: bytes):
    result = tflm.analyze(ModelFacts(load_model(model)))
    return result, [o for o in result.ops if o.verdict == "refused"]


def _agree(name: str, model: bytes, theirs) -> None:
    result, refused = verdict(model)
    if theirs.ok:  # runs, or runs computing something else (checked on the outputs)
        assert all(o.reason.startswith(SILENT) for o in refused), (name, refused[0].reason)
        return
    assert refused, (name, theirs.log[-400:])
    if theirs.log.startswith("crashed"):
        assert "aborts" in first_failure(result.ops).reason, name
        return
    first = first_failure(result.ops)
    if theirs.index is not None:  # "Node OP (number N) failed to prepare/invoke"
        assert (first.index, first.op) == (theirs.index, theirs.op), (name, theirs.log)
    elif theirs.op is not None:  # a kernel it could not resolve: named by its code
        assert first.op == theirs.op or (theirs.op == "CUSTOM" and first.reason.find(
            "custom op") >= 0), (name, first, theirs.log)


@pytest.fixture(scope="module")
def corpus_results() -> dict:
    """Every corpus model but the one whose invoke never returns, in one child process
    (restarted after a model TFLM aborts on), with `micro_inputs` as inputs."""
    return tflm_run_many({p.stem: p.read_bytes() for p in CORPUS
                          if p.stem not in INVOKE_HANGS})


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_corpus_verdict_agrees_with_tflm(path, corpus_results):
    data = path.read_bytes()
    if path.stem in INVOKE_HANGS:
        theirs = tflm_run_isolated(str(path), timeout=60, invoke_seconds=3)
        assert theirs.timed_out and theirs.prepared
        _, refused = verdict(data)
        assert refused and all(o.reason.startswith(SILENT) for o in refused)
        assert {o.op for o in refused} == {"SLICE"}
        return
    _agree(path.stem, data, corpus_results[path.stem])


def test_a_model_tflm_aborts_on_is_refused_with_why(corpus_results):
    """mobilenet_v2_int8: TFLM's SOFTMAX prepare hits TFLITE_CHECK_GT and aborts the
    process (the input scale is too small for its multiplier)."""
    path = DATA / "models" / "mobilenet_v2_int8.tflite"
    theirs = corpus_results[path.stem]
    assert not theirs.ok and theirs.log.startswith("crashed")
    result, refused = verdict(path.read_bytes())
    assert [(o.index, o.op) for o in refused] == [(64, "SOFTMAX")]
    assert "aborts" in refused[0].reason


@pytest.fixture(scope="module")
def micro_results() -> dict:
    return tflm_run_many(cases.all_cases())


def test_every_single_op_case_agrees(micro_results):
    for name, data in cases.all_cases().items():
        _agree(name, data, micro_results[name])


def test_single_op_cases_cover_both_verdicts(micro_results):
    ran = sum(1 for r in micro_results.values() if r.ok)
    assert 60 <= ran <= len(micro_results) - 40, ran


def _check_outputs(name: str, data: bytes, outputs: list, ref: list) -> bool:
    """TFLM's outputs against LiteRT's, as our verdict predicts: the same where every
    operator runs without a warning; different where we say TFLM computes something else
    for sure; either where we warn that an output's shape depends on run-time values (the
    stored shape may be right), or where TFLM keeps a stale stored shape: it then reads
    arena bytes no kernel wrote, left over from earlier runs in the process, and a
    near-uniform classifier output (such as small_cnn_dilated_int8's -102/-103 logits) can
    come out equal by chance (tests/targets/test_verdict_audit.py checks that operator's own
    output instead)."""
    same = all(outputs_close(a, b) for a, b in zip(outputs, ref))
    result, refused = verdict(data)
    warned = [o for o in result.ops if o.warning]
    definite = [o for o in refused if "TFLM does not resize tensors" not in o.reason]
    if same:
        assert not definite, (name, [o.reason for o in definite])
    else:
        assert refused or warned, (name, "TFLM computes something else and we said it runs")
    return bool(refused or warned)


# Where TFLM runs them, these corpus models' outputs are compared with LiteRT's.
COMPARED = ["control_flow", "micro_speech_quantized", "mobilenet_v1_0.25_224_1_default_1",
            "mobilenet_v2_float", "movie_review", "multi_signature", "sine_float",
            "small_cnn_dilated_float", "small_cnn_dilated_int8", "trained_lstm",
            "trained_lstm_int8"]


@pytest.mark.parametrize("stem", COMPARED)
def test_where_tflm_runs_its_outputs_match_litert(stem, corpus_results):
    path = DATA / "models" / f"{stem}.tflite"
    data = path.read_bytes()
    inputs = micro_inputs(data)
    theirs = corpus_results[stem]
    assert theirs.ok, theirs.log[-300:]
    ref = litert_outputs(data, inputs)
    assert len(ref) == len(theirs.outputs)
    _check_outputs(stem, data, theirs.outputs, ref)


def test_single_op_outputs_match_litert_where_both_run(micro_results):
    """Every case both run, with the same inputs, gives LiteRT's outputs (int: within one
    step, float: within 1e-4 of the range), except where our verdict says TFLM computes
    something else; there they differ."""
    compared = silent = 0
    for name, data in cases.all_cases().items():
        theirs = micro_results[name]
        if not theirs.ok:
            continue
        inputs = micro_inputs(data)
        li = litert(data, preserve=False)
        li.allocate_tensors()
        for d, x in zip(li.get_input_details(), inputs):
            li.set_tensor(d["index"], x)
        try:
            li.invoke()
        except RuntimeError:  # LiteRT refuses these input values (a slice out of range)
            continue
        ref = [li.get_tensor(d["index"]) for d in li.get_output_details()]
        silent += _check_outputs(name, data, theirs.outputs, ref)
        compared += 1
    assert compared >= 60 and silent >= 1
