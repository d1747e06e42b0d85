"""LiteRT's CPU runtime: our verdict against LiteRT's own op resolver, and the runtime
version against the converter's min_runtime_version."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.interpreter.singleop import single_op_model
from tests.litert_oracle import litert
from tests.targets import cases
from tflite_viewer.edit.runtime_version import runtime_less, version_key
from tflite_viewer.model import load_model
from tflite_viewer.targets import analyze, litert as litert_target
from tflite_viewer.delegation.facts import ModelFacts

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
ALL = sorted(MODELS.glob("*.tflite")) + sorted(MODELS.parent.glob("signal/*.tflite")) + sorted(
    MODELS.parent.glob("mediapipe/*.tflite"))
CRASHES_LITERT = {"keyword_scrambled_8bit"}  # heap corruption inside LiteRT 2.3.0


def resolver_accepts(model: bytes) -> tuple[bool, str]:
    """Does LiteRT's interpreter resolve every operator?  Construction resolves builtins;
    an unresolved custom op surfaces at allocation.  Other failures (person_detect's
    quantization parameters) are not the resolver's."""
    try:
        litert(model, preserve=False).allocate_tensors()
    except (RuntimeError, ValueError) as exc:
        msg = str(exc)
        resolver = ("Didn't find op" in msg or "unresolved custom op" in msg.lower()
                    or "Op builtin_code out of range" in msg)
        return not resolver, msg
    return True, ""


@pytest.mark.parametrize("path", [p for p in ALL if p.stem not in CRASHES_LITERT],
                         ids=lambda p: p.stem)
def test_corpus_resolver_agrees(path):
    data = path.read_bytes()
    accepted, why = resolver_accepts(data)
    result = litert_target.analyze(ModelFacts(load_model(data)))
    refused = [o for o in result.ops if o.verdict == "refused"]
    assert accepted == (not refused), (why, refused[:1])


def test_single_op_cases_resolve():
    """LiteRT built every case (that is how cases.py computes their shapes)."""
    for name, data in cases.all_cases().items():
        result = litert_target.analyze(ModelFacts(load_model(data)))
        assert all(o.verdict == "runs" for o in result.ops), name


@pytest.mark.parametrize("op,version", [("ADD", 7), ("CONV_2D", 9), ("SOFTMAX", 5)])
def test_a_version_past_the_resolver_is_refused_as_litert_refuses_it(op, version):
    import numpy as np

    from tests.interpreter.singleop import Input

    opts = {"ADD": ("AddOptions", [Input((1, 4)), Input((1, 4))]),
            "SOFTMAX": ("SoftmaxOptions", [Input((1, 4))]),
            "CONV_2D": ("Conv2DOptions", [Input((1, 3, 3, 1)), np.ones((1, 1, 1, 1), np.float32),
                                          np.zeros(1, np.float32)])}[op]
    data = single_op_model(op, opts[1], [np.float32], opts[0], {}, version=version)
    accepted, why = resolver_accepts(data)
    assert not accepted and "Didn't find op" in why
    v = litert_target.analyze(ModelFacts(load_model(data))).ops[0]
    assert v.verdict == "refused" and f"version {version}" in v.reason


def test_unresolved_custom_op_is_refused():
    import numpy as np

    from tests.interpreter.singleop import Input

    data = single_op_model("CUSTOM", [Input((1, 4))], [np.float32], custom_code="MyOp")
    assert not resolver_accepts(data)[0]
    v = litert_target.analyze(ModelFacts(load_model(data))).ops[0]
    assert v.verdict == "refused" and "MyOp" in v.reason


# -- the runtime version ---------------------------------------------------------------------
def stamped(model) -> str | None:
    entry = model.metadata_entry("min_runtime_version")
    return entry.decoded() if entry is not None else None


CONVERTED = [p for p in sorted(MODELS.glob("*.tflite"))
             if stamped(load_model(p)) and p.stem in {
                 "control_flow", "lstm_dynamic", "lstm_float", "mobilenet_v2_dynamic",
                 "mobilenet_v2_float", "mobilenet_v2_fp16", "mobilenet_v2_int8",
                 "multi_signature", "small_cnn_dilated_float", "small_cnn_dilated_int8",
                 "sparse_conv_float", "sparse_conv_fp16"}]


def test_the_converted_models_are_stamped():
    assert len(CONVERTED) >= 10


@pytest.mark.parametrize("path", CONVERTED, ids=lambda p: p.stem)
def test_required_runtime_equals_the_converters_stamp(path):
    """The converter (TF's) wrote min_runtime_version with the same table: ours agrees."""
    model = load_model(path)
    assert litert_target.required_runtime(ModelFacts(model)) == stamped(model)


@pytest.mark.parametrize("path", CONVERTED, ids=lambda p: p.stem)
def test_at_the_stamped_runtime_everything_runs_and_just_below_something_does_not(path):
    model = load_model(path)
    stamp = stamped(model)
    at = analyze(model, ["litert"], runtime=stamp).results["litert"]
    assert all(o.verdict == "runs" for o in at.ops)
    major, minor, patch = version_key(stamp)
    below = f"{major}.{minor - 1}.0" if minor else f"{major - 1}.99.0"
    assert runtime_less(below, stamp)
    under = analyze(model, ["litert"], runtime=below).results["litert"]
    refused = [o for o in under.ops if o.verdict == "refused"]
    assert refused and all(f"needs runtime" in o.reason for o in refused)


def test_runtime_versions_are_checked():
    model = load_model(MODELS / "sine_float.tflite")
    with pytest.raises(ValueError, match="not like"):
        analyze(model, ["litert"], runtime="two")
    assert analyze(model, ["litert"], runtime="2.14").runtime == "2.14.0"
