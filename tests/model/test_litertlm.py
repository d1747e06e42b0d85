"""LiteRT-LM containers: listed, their TFLite sections opened as models and run.

Two sources: containers a test builds from the format's definition (tests/litertlm_writer.py,
the project's generated flatbuffers code) and tests/data/models/llm/tiny_llama.litertlm,
written by LiteRT-LM's own litert-lm-builder 0.18.1 (tools/make_litertlm_sample.py).  The
truth for the sections' contents is what went in (the model files, the side file the
project's writer made); for running, LiteRT on the same model and our interpreter on the
inline original.
"""
from __future__ import annotations

import json
import struct
import zlib

import numpy as np
import pytest

from tests.cli_runner import run_cli
from tests.conftest import MODELS_DIR
from tests.litert_oracle import compiled_model_run, litert
from tests.litertlm_writer import BLOCK, Part, build_container
from tflite_viewer.edit.sidefiles import externalize
from tflite_viewer.edit.tree import unpack
from tflite_viewer.edit.writer import serialize
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.model import ModelFormatError, load_model
from tflite_viewer.model.litertlm import load_container

LLM = MODELS_DIR / "llm"
SINE = MODELS_DIR / "sine_float.tflite"
DECODER = LLM / "tiny_llama_f32.tflite"


def _decoder_parts() -> tuple[bytes, bytes]:
    """tiny_llama_f32 with its weights in the group tflite_weights: (model, weights)."""
    tree = unpack(load_model(DECODER))
    weights = externalize(tree, "tflite_weights")
    return serialize(tree), weights


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    model, weights = _decoder_parts()
    parts = [Part("LlmMetadataProto", b"\x08\x10"),
             Part("SP_Tokenizer", b"not really a sentencepiece model"),
             Part("TFLiteModel", model, {"model_type": "tf_lite_prefill_decode"}),
             Part("TFLiteWeights", weights, {"model_type": "tf_lite_prefill_decode"}),
             Part("TFLiteModel", SINE.read_bytes(), {"model_type": "tf_lite_embedder",
                                                     "layers": 3, "scale": 0.5,
                                                     "fast": True})]
    path = tmp_path_factory.mktemp("litertlm") / "bundle.litertlm"
    path.write_bytes(build_container(parts, {"author": "tests", "layers": 2}))
    return path, parts


def _decode_inputs(model, seed=0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sig = model.signature("decode")
    sg = model.subgraphs[sig.subgraph_index]
    out = {}
    for m in sig.inputs:
        t = sg.tensors[m.tensor_index]
        if m.name == "tokens":
            out[m.name] = rng.integers(0, 30, t.shape).astype(t.dtype)
        elif m.name == "input_pos":
            out[m.name] = np.full(t.shape, 3, t.dtype)
        else:
            out[m.name] = rng.standard_normal(t.shape).astype(t.dtype) * 0.1
    return out


def test_sections_are_listed_with_their_types_ranges_and_items(built):
    path, parts = built
    c = load_container(path)
    assert c.version == (1, 7, 0)
    assert c.system_metadata == {"author": "tests", "layers": 2}
    assert [s.type_name for s in c.sections] == [p.kind for p in parts]
    for s, p in zip(c.sections, parts):
        assert s.begin % BLOCK == 0 and s.size == len(p.data)
        assert c.section_data(s.index).tobytes() == p.data
        assert s.items == p.items
    assert [s.index for s in c.model_sections] == [2, 4]
    assert c.sections[4].label == f"4: TFLiteModel embedder ({len(parts[4].data):,} bytes)"


def test_each_tflite_section_opens_as_a_model_in_place(built):
    path, parts = built
    c = load_container(path)
    sine = c.open_model(4)
    assert np.shares_memory(sine.data, c.data)  # a view on the mapped container
    assert sine.data.tobytes() == SINE.read_bytes() and sine.findings == []
    assert str(sine.origin) == f"bundle.litertlm [{c.sections[4].label}]"
    decoder = c.open_model(2)
    assert decoder.findings == []
    ext = [t for t in decoder.subgraphs[0].tensors if t.external_buffer]
    assert ext and all("section 3 (TFLiteWeights) of bundle.litertlm" in t.data_location
                       for t in ext)
    assert np.shares_memory(ext[0].data(), c.data)
    # load_model opens the first TFLite section, or the one asked for
    assert load_model(path).data.tobytes() == parts[2].data
    assert load_model(path, section=4).data.tobytes() == parts[4].data
    with pytest.raises(KeyError, match="section 1 of bundle.litertlm is SP_Tokenizer"):
        c.open_model(1)


def test_sections_run_as_litert_runs_the_models_they_hold(built):
    path, _ = built
    c = load_container(path)
    sine = c.open_model(4)
    x = np.array([[1.25]], np.float32)
    ref = litert(sine.data.tobytes())
    ref.allocate_tensors()
    ref.set_tensor(ref.get_input_details()[0]["index"], x)
    ref.invoke()
    ours = Interpreter(sine).invoke([x])
    np.testing.assert_allclose(next(iter(ours.values())),
                               ref.get_tensor(ref.get_output_details()[0]["index"]), rtol=1e-6)
    decoder = c.open_model(2)
    inline = load_model(DECODER)
    inputs = _decode_inputs(inline)
    ours = Interpreter(decoder).invoke(inputs, signature="decode")
    ours_inline = Interpreter(inline).invoke(inputs, signature="decode")
    for key, value in ours_inline.items():
        assert ours[key].tobytes() == value.tobytes()
    runner = litert(DECODER, resolver="BUILTIN", preserve=False).get_signature_runner("decode")
    theirs = runner(**inputs)
    for key, value in theirs.items():
        np.testing.assert_allclose(ours[key], value, rtol=1e-4, atol=1e-5)


def test_weights_section_is_what_litert_reads_as_the_side_file(tmp_path, built):
    """The TFLiteWeights section, written out as the side file 'tflite_weights' next to the
    section's model, is what LiteRT's CompiledModel runs to the inline model's outputs."""
    path, _ = built
    c = load_container(path)
    (tmp_path / "decoder.tflite").write_bytes(c.section_data(2).tobytes())
    (tmp_path / "tflite_weights").write_bytes(c.section_data(3).tobytes())
    inputs = _decode_inputs(load_model(DECODER), seed=2)
    theirs = compiled_model_run(tmp_path / "decoder.tflite", inputs, signature="decode")
    theirs_inline = compiled_model_run(DECODER, inputs, signature="decode")
    ours = Interpreter(c.open_model(2)).invoke(inputs, signature="decode")
    for key, value in theirs_inline.items():
        assert theirs[key].tobytes() == value.tobytes()
        np.testing.assert_allclose(ours[key], value, rtol=1e-3, atol=1e-4)


def test_a_container_litert_lm_builder_wrote_opens():
    """tiny_llama.litertlm: made by litert-lm-builder from the inputs
    tools/make_litertlm_sample.py gives it, which this test makes again."""
    c = load_container(LLM / "tiny_llama.litertlm")
    assert c.version[0] == 1
    assert c.system_metadata["author"] == "tflite-viewer tests"
    assert c.system_metadata["layers"] == 2 and "uuid" in c.system_metadata
    assert [(s.type_name, s.model_type) for s in c.sections] == [
        ("LlmMetadataProto", None), ("HF_Tokenizer_Zlib", None),
        ("TFLiteModel", "tf_lite_prefill_decode"), ("TFLiteWeights", "tf_lite_prefill_decode"),
        ("TFLiteModel", "tf_lite_embedder")]
    raw = c.section_data(1).tobytes()
    (size,) = struct.unpack_from("<Q", raw, 0)
    tokenizer = json.loads(zlib.decompress(raw[8:]))
    assert len(zlib.decompress(raw[8:])) == size and tokenizer["model"]["vocab"]["hello"] == 3
    tree = unpack(load_model(LLM / "tiny_llama_q4_block32.tflite"))
    weights = externalize(tree, "tflite_weights")
    assert c.section_data(2).tobytes() == serialize(tree)
    assert c.section_data(3).tobytes() == weights
    assert c.section_data(4).tobytes() == SINE.read_bytes()
    decoder = c.open_model(2)
    inline = load_model(LLM / "tiny_llama_q4_block32.tflite")
    inputs = _decode_inputs(inline, seed=3)
    ours = Interpreter(decoder).invoke(inputs, signature="decode")
    for key, value in Interpreter(inline).invoke(inputs, signature="decode").items():
        assert ours[key].tobytes() == value.tobytes()


@pytest.mark.parametrize("damage, where", [
    (lambda b: b"LITERTLX" + b[8:], r"header: .* does not start with LITERTLM"),
    (lambda b: b[:8] + struct.pack("<I", 2) + b[12:], r"header\.version: format 2\.7\.0"),
    (lambda b: b[:24] + struct.pack("<Q", 10**9) + b[32:], r"header\.end: the header ends at"),
    (lambda b: b[:20], r"header: .* holds 20 bytes"),
    (lambda b: b[:-100], r"sections\[4\]\.end_offset: .* past the end .* truncated"),
    (lambda b: b[:40] + b"\xff" * 40 + b[80:], r"^header"),
])
def test_bad_containers_give_located_errors(built, damage, where):
    path, _ = built
    data = damage(path.read_bytes())
    with pytest.raises(ModelFormatError, match=where):
        load_container(data)


def test_a_bad_tflite_section_is_named(tmp_path):
    data = build_container([Part("TFLiteModel", b"TFL3" * 20, {"model_type": "tf_lite_x"})])
    with pytest.raises(ModelFormatError, match=r"^sections\[0\] \(TFLiteModel\)"):
        load_model(data)
    empty = build_container([Part("SP_Tokenizer", b"x")])
    with pytest.raises(ModelFormatError, match="holds no TFLiteModel section"):
        load_model(empty)


def test_cli_info_lists_sections_and_describes_the_chosen_one(built):
    path, _ = built

    def info(*extra):
        return run_cli("info", path, *extra)
    text = info()
    assert text.returncode == 0, text.stderr
    assert "Container bundle.litertlm: LiteRT-LM 1.7.0, 5 sections" in text.stdout
    assert "  3: TFLiteWeights prefill_decode" in text.stdout
    assert "Section 2 (TFLiteModel prefill_decode)" in text.stdout
    doc = json.loads(info("--section", "4", "--json").stdout)
    assert doc["container"]["section"] == 4
    assert [s["type"] for s in doc["container"]["sections"]][:3] == [
        "LlmMetadataProto", "SP_Tokenizer", "TFLiteModel"]
    assert doc["subgraphs"][0]["operators"][0]["opcode"] == "FULLY_CONNECTED"
    bad = info("--section", "1")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "SP_Tokenizer" in bad.stderr


def test_a_section_saved_as_tflite_takes_its_weights_section_as_side_file(tmp_path, built):
    from tflite_viewer.edit.commands import RenameTensor
    from tflite_viewer.edit.document import ModelDocument
    path, parts = built
    doc = ModelDocument(load_container(path).open_model(2))
    doc.apply(RenameTensor(0, 0, "renamed_input"))
    out = doc.save(tmp_path / "decoder.tflite")
    assert (tmp_path / "tflite_weights").read_bytes() == parts[3].data
    saved = load_model(out)
    assert saved.findings == [] and saved.subgraphs[0].tensors[0].name == "renamed_input"
    inputs = _decode_inputs(saved, seed=4)
    ours = Interpreter(saved).invoke(inputs, signature="decode")
    for key, value in Interpreter(load_model(DECODER)).invoke(inputs, signature="decode").items():
        assert ours[key].tobytes() == value.tobytes()
