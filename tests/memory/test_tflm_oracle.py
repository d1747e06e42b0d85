"""TFLite Micro itself is the oracle: for every corpus model and every built model that TFLM
runs, the head we compute equals the "Arena allocation head" its RecordingMicroAllocator
prints, in bytes, exactly; so do the tail categories computed from the model.  Every model
TFLM refuses is listed with the reason TFLM gives."""
from __future__ import annotations

from pathlib import Path

import flatbuffers
import pytest

from tests.memory.models import BUILT
from tests.micro_oracle import tflm_arenas
from tflite_viewer.memory import plan_tflm, tflm_scratch
from tflite_viewer.model import load_model
from tflite_viewer.schema import schema_generated as S

DATA = Path(__file__).resolve().parents[1] / "data" / "models"
CORPUS = sorted(p.name for p in DATA.glob("*.tflite"))

#: corpus models TFLM does not run, and the words of its refusal
TFLM_REFUSES = {
    # float16 weights DEQUANTIZE'd at run time: TFLM dequantizes int8/int16/uint8 only
    "face_detection_short_range.tflite": "dequantize_common.cc",
    "hand_landmark_lite.tflite": "dequantize_common.cc",
    "mobilenet_v2_fp16.tflite": "dequantize_common.cc",
    "palm_detection_lite.tflite": "dequantize_common.cc",
    # hybrid (float activations, int8 weights): "Hybrid models are not supported"
    "lstm_dynamic.tflite": "Input type: FLOAT32 with filter type: INT8 not supported",
    "mobilenet_v1_0.25_224_quant.tflite": "Hybrid models are not supported",
    "mobilenet_v2_dynamic.tflite": "Hybrid models are not supported",
    "ssd_mobilenet_v1.tflite": "Hybrid models are not supported",
    # ops TFLM has no kernel for
    "sparse_conv_float.tflite": "DENSIFY",
    "sparse_conv_fp16.tflite": "DENSIFY",
    "yamnet_audio_classifier_with_metadata.tflite": "RFFT2D",
    # SOFTMAX's Prepare aborts (SIGABRT, no message) on its int8 input scale of 7.8e-9;
    # the model without that last operator is compared below (mobilenet_v2_int8_prefix)
    "mobilenet_v2_int8.tflite": "TFLM aborted",
}


def _without_last_op(data: bytes) -> bytes:
    m = S.ModelT.InitFromPackedBuf(data, 0)
    sg = m.subgraphs[0]
    sg.operators = sg.operators[:-1]
    sg.outputs = [int(sg.operators[-1].outputs[0])]
    m.signatureDefs = []
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _built() -> dict[str, bytes]:
    out = {name: make() for name, make in BUILT.items()}
    out["mobilenet_v2_int8_prefix"] = _without_last_op(
        (DATA / "mobilenet_v2_int8.tflite").read_bytes())
    return out


@pytest.fixture(scope="module")
def oracle() -> dict[str, tuple[bytes, dict]]:
    models = {name: (DATA / name).read_bytes() for name in CORPUS}
    models.update(_built())
    names = list(models)
    reports = tflm_arenas([models[n] for n in names])
    return {n: (models[n], r) for n, r in zip(names, reports)}


def _compare(data: bytes, report: dict) -> None:
    plan = plan_tflm(load_model(data), pointer_bytes=8)  # the Python package is a 64-bit host
    assert "error" not in report, report["error"]
    assert plan.head_bytes == report["head"]
    assert plan.problems == []
    cats = report["categories"]
    assert plan.tail_parts["TfLiteEvalTensor"] == cats["TfLiteEvalTensor data"][1]
    assert plan.tail_parts["NodeAndRegistration"] == cats["NodeAndRegistration struct"][1]
    variables = cats.get("TfLiteTensor variable buffer data", (0, 0, 0))[1]
    assert plan.tail_parts["variables"] == variables
    assert plan.tail_bytes <= report["tail"]  # a lower bound: kernels' own data is not counted


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_head_equals_tflm(oracle, name):
    data, report = oracle[name]
    if name in TFLM_REFUSES:
        assert "error" in report, f"TFLM now runs {name}: compare it and drop it from the list"
        assert TFLM_REFUSES[name] in report["error"]
        assert plan_tflm(load_model(data)).head_bytes > 0  # we still describe the plan
        return
    _compare(data, report)


@pytest.mark.parametrize("name", sorted(BUILT) + ["mobilenet_v2_int8_prefix"])
def test_built_head_equals_tflm(oracle, name):
    data, report = oracle[name]
    _compare(data, report)


SCRATCH_MODELS = ["add_n_float", "add_n_int8", "mean_int8", "mean_float", "sum_int16",
                  "reduce_max_int8", "reduce_min_float", "mirror_pad", "svdf_float",
                  "transpose_conv_int8", "transpose_conv_int16", "conv_int4", "depthwise_int4",
                  "fully_connected_int4", "detection_postprocess"]


@pytest.mark.parametrize("name", SCRATCH_MODELS)
def test_each_scratch_rule_decides_the_head(oracle, name, monkeypatch):
    """Without the kernel's scratch buffers the head would differ from TFLM's, so the
    equality above checks the rule (sizes and order), not just the tensors."""
    data, report = oracle[name]
    monkeypatch.setattr(tflm_scratch, "RULES", {})
    assert plan_tflm(load_model(data), pointer_bytes=8).head_bytes != report["head"]


def test_var_handle_outputs_are_not_planned(oracle, monkeypatch):
    """VAR_HANDLE's Prepare gives its output data (the resource id): planning those 4-byte
    tensors too would put 32 more bytes in microwakeword's head than TFLM's."""
    from tflite_viewer.memory import tflm
    data, report = oracle["microwakeword_alexa.tflite"]
    monkeypatch.setattr(tflm, "VAR_HANDLE", -1)
    assert plan_tflm(load_model(data), pointer_bytes=8).head_bytes == report["head"] + 32


def test_keyword_int8_svdf_scratch_decides_the_head(oracle, monkeypatch):
    data, report = oracle["keyword_scrambled_8bit.tflite"]
    monkeypatch.setattr(tflm_scratch, "RULES", {})
    assert plan_tflm(load_model(data), pointer_bytes=8).head_bytes != report["head"]
