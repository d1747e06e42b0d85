"""No false verdict: every "refused" and "silently wrong" verdict `targets` gives for TFLite
Micro and XNNPACK holds in the runtime it names (tests/targets/audit.py says how each is
checked).  A verdict the runtime contradicts fails here.

CI checks a sample of the corpus chosen to hold every kind of verdict (a kernel TFLM's
resolver lacks, a Prepare that refuses a type, a Prepare that aborts TFLM, stored shapes
TFLM computes into wrongly, a shape a loop counter sets) and the models built for the
purpose (shapes computed at run time, quantization parameters XNNPACK cannot define, a
per-channel DEQUANTIZE, an output with a dimension of 0); the slow tier checks every
corpus model and every single-op case of tests/targets/cases.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.targets import cases, quant_param_models, shape_models
from tests.targets.audit import audit_tflm, audit_xnnpack
from tflite_viewer.model import load_model
from tflite_viewer.targets import analyze

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = sorted(DATA.glob("models/*.tflite")) + sorted(DATA.glob("models/llm/*.tflite")) + \
    sorted(DATA.glob("signal/*.tflite")) + sorted(DATA.glob("mediapipe/*.tflite"))
SAMPLE = {"small_cnn_dilated_int8", "mobilenet_v2_int8", "yamnet_audio_classifier_with_metadata",
          "sparse_conv_fp16", "lstm_float"}
#: single-op cases in the sample: a per-channel DEQUANTIZE (TFLM applies channel 0's scale
#: to all), an output with a dimension of 0 (a dynamic tensor to TFLM)
CASES = ("DEQUANTIZE-q8-perchannel", "RELU-f32-zero-dim")


def _built() -> dict[str, bytes]:
    out = {name: make() for name, make in shape_models.RUN_RIGHT.items()}
    out["reshape_from_input"] = shape_models.reshape_from_input()
    out["reshape_stored_wrong"] = shape_models.reshape_stored_wrong()
    out.update(quant_param_models.cases())
    out.update({name: cases.case(name) for name in CASES})
    return out


def _verdicts(models: dict[str, bytes]) -> int:
    """How many refused verdicts (TFLM and XNNPACK) these models get."""
    n = 0
    for data in models.values():
        report = analyze(load_model(data), ["tflm", "xnnpack"])
        n += sum(o.verdict == "refused" for r in report.results.values() for o in r.ops)
    return n


def _check(models: dict[str, bytes]) -> list:
    checked = audit_tflm(models) + audit_xnnpack(models)
    false = [c for c in checked if c.holds is not True]
    assert not false, "\n".join(f"{c.model} {c.target} sg {c.subgraph} op {c.op} {c.name}: "
                                f"{c.verdict} ({c.how}) does not hold: {c.detail}"
                                for c in false)
    # every verdict was checked (a model-level "runs" check adds none)
    assert sum(c.op >= 0 for c in checked) == _verdicts(models)
    return checked


@pytest.mark.parametrize("path", [p if p.stem in SAMPLE else
                                  pytest.param(p, marks=pytest.mark.slow) for p in CORPUS],
                         ids=lambda p: p.stem)
def test_corpus_verdicts_hold(path):
    _check({path.stem: path.read_bytes()})


def test_built_models_verdicts_hold():
    checked = _check(_built())
    kinds = {(c.target, c.verdict) for c in checked}
    assert kinds >= {("tflm", "silently wrong"), ("tflm", "refused"), ("xnnpack", "refused")}


@pytest.mark.slow
def test_single_op_case_verdicts_hold():
    checked = _check(cases.all_cases())
    assert {(c.target, c.verdict) for c in checked} >= {("tflm", "refused"),
                                                        ("tflm", "silently wrong")}
