"""`tflite-viewer run MODEL --generate K [--prompt IDS] [--loop FIELD=VALUE] [--json]`: the
K ids equal LiteRT's builtin kernels running the loop (tests/interpreter/test_generation's
transcription), --compare-litert says so itself, and misuse is one line and exit 2."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tests.interpreter.kv_decoder_models import KV_NAMES, PREFILL, kv_decoder_model
from tests.interpreter.test_generation import PROMPT, litert_loop
from tflite_viewer.cli import main

LLM = MODELS_DIR / "llm"
KV = [f"kv_cache_{a}_{layer}" for a in "kv" for layer in range(2)]


def _strip(doc):
    """The document without its timings."""
    if isinstance(doc, dict):
        return {k: _strip(v) for k, v in doc.items() if k != "milliseconds"}
    if isinstance(doc, list):
        return [_strip(v) for v in doc]
    return doc


@pytest.mark.parametrize("form", ["q8", "q4_block32"])
def test_generate_prints_the_ids_litert_generates(form, capsys):
    path = LLM / f"tiny_llama_{form}.tflite"
    ref, _ = litert_loop(path, PROMPT, 8, KV)
    assert main(["run", str(path), "--generate", "8", "--prompt", "5,17,42", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tokens"] == ref and doc["prompt"] == PROMPT
    assert [c["call"] for c in doc["calls"]] == ["prefill"] + [f"decode #{i}" for i in range(1, 9)]
    assert doc["plan"]["kv"] == KV and doc["plan"]["prefill"] == "prefill_8"
    assert main(["run", str(path), "--generate", "8", "--prompt", "5,17,42"]) == 0
    text = capsys.readouterr().out
    assert f"Tokens: {' '.join(map(str, ref))}\n" in text
    assert "decode #3  decode: token" in text
    assert main(["run", str(path), "--generate", "8", "--prompt", "5,17,42", "-o", "-"]) == 0
    assert _strip(json.loads(capsys.readouterr().out)) == _strip(doc)


def test_compare_litert_runs_the_loop_on_litert_and_agrees(tmp_path, capsys):
    path = tmp_path / "decoder.tflite"
    path.write_bytes(kv_decoder_model(0))
    ref, _ = litert_loop(path, [3, 1], 5, KV_NAMES, prefill=f"prefill_{PREFILL}")
    assert main(["run", str(path), "--generate", "5", "--prompt", "3,1", "--compare-litert",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tokens"] == ref == doc["litert"]["tokens"] and doc["litert"]["same"]
    assert doc["litert"]["resolver"] == "BUILTIN_WITHOUT_DEFAULT_DELEGATES"


def test_the_loop_set_by_hand(capsys):
    path = LLM / "tiny_llama_f32.tflite"
    assert main(["run", str(path), "--generate", "2", "--loop", "kv=kv_cache_*",
                 "--loop", "decode=decode", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["prompt"] == [1] and len(doc["tokens"]) == 2  # the default prompt


@pytest.mark.parametrize("args, message", [
    (["--prompt", "1,2"], "--prompt goes with --generate K"),
    (["--loop", "kv=x"], "--loop goes with --generate K"),
    (["--generate", "0"], "at least one token"),
    (["--generate", "2", "--signature", "decode"], "--signature does not go with --generate"),
    (["--generate", "2", "--prompt", "a,b"], "token ids separated by commas"),
    (["--generate", "2", "--prompt", ",".join(["1"] * 33)],
     "prefilled by 'prefill_8' at positions 32..39: the KV cache holds 32"),
    (["--generate", "31", "--prompt", "1,2,3"], "the KV cache holds 32 positions"),
    (["--generate", "2", "--loop", "colour=red"], "FIELD=VALUE"),
    (["--generate", "2", "--loop", "kv=kv_cache_k_*"],
     "also takes 'kv_cache_v_0' [1, 32, 2, 16] FLOAT32, 'kv_cache_v_1' [1, 32, 2, 16] FLOAT32, "
     "which is none of tokens, position or KV cache, nor a causal mask"),
    (["--bos", "1"], "--bos goes with --generate K"),
    (["--logits", "x.npy"], "--logits goes with --generate K"),
    (["--generate", "2", "--bos", "-1"], "--bos -1: a token id"),
    (["--generate", "2", "--logits", "/no/such/folder/x.npy"], "no such folder"),
    (["--generate", "2", "--logits", "-", "--json"], "would each write to stdout"),
])
def test_misuse_is_one_line_and_exit_2(args, message, capsys):
    rc = main(["run", str(LLM / "tiny_llama_f32.tflite"), *args])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.startswith("tflite-viewer run: error: ") and err.count("\n") == 1
    assert message in err


def test_a_model_that_is_no_decoder(capsys):
    assert main(["run", str(MODELS_DIR / "mobilenet_v2_float.tflite"), "--generate", "3"]) == 2
    assert "no signature named 'decode' (signatures: serving_default)" in \
        capsys.readouterr().err


def test_bos_chunks_and_logits_file(tmp_path, capsys):
    """A prompt of 20 ids with BOS 1 before them: 21 ids, prefilled in prefill_16 from 0
    and prefill_8 from 16 (LiteRT-LM's split); --logits holds each decode step's logits,
    whose argmax is the step's id, as LiteRT computes them."""
    path = LLM / "qwen3_transposed_f32.tflite"
    prompt = list(range(60, 80))
    out = tmp_path / "logits.npy"
    assert main(["run", str(path), "--generate", "4", "--prompt", ",".join(map(str, prompt)),
                 "--bos", "1", "--logits", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["prompt"] == [1, *prompt] and doc["bos"] == 1
    assert [(c["call"], c["signature"], c["position"]) for c in doc["calls"][:2]] == \
        [("prefill 1/2", "prefill_16", 0), ("prefill 2/2", "prefill_8", 16)]
    logits = np.load(out)
    assert logits.dtype == np.float32 and logits.shape == (4, 256)
    assert doc["logits"] == {"file": str(out), "shape": [4, 256]}
    assert list(np.argmax(logits, axis=1)) == doc["tokens"]
    ref, ref_logits = litert_loop(path, [1, *prompt], 4, KV,
                                  chunks=[("prefill_16", 0), ("prefill_8", 16)])
    assert doc["tokens"] == ref
    assert np.abs(logits - ref_logits).max() <= 1e-5 * np.abs(ref_logits).max()


def test_logits_to_stdout(capsysbinary):
    path = LLM / "tiny_llama_q8.tflite"
    assert main(["run", str(path), "--generate", "2", "--logits", "-"]) == 0
    logits = np.load(io.BytesIO(capsysbinary.readouterr().out))
    assert logits.shape == (2, 256) and logits.dtype == np.float32


def test_the_json_says_what_each_input_was_fed(capsys):
    path = LLM / "gemma3_f32.tflite"
    assert main(["run", str(path), "--generate", "2", "--prompt", "5,17,42", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan["mask"] == "mask" and plan["context"] == 32
    assert plan["prefills"] == [{"signature": "prefill_8", "tokens": 8},
                                {"signature": "prefill_16", "tokens": 16}]
    assert plan["kv_positions_axis"] == {"kv_cache_k_0": 2, "kv_cache_k_1": 2,
                                         "kv_cache_v_0": 3, "kv_cache_v_1": 3}
    feeds = {(f["signature"], f["input"]): f for f in plan["feeds"]}
    assert len(feeds) == 3 * 7  # every input of the three signatures
    mask = feeds[("prefill_16", "mask")]
    assert (mask["shape"], mask["dtype"], mask["role"]) == ([1, 1, 16, 32], "FLOAT32", "mask")
    assert "-inf after it" in mask["fed"]
    assert feeds[("decode", "kv_cache_v_1")]["shape"] == [1, 1, 16, 32]


@pytest.mark.parametrize("name", ["gemma3_f32", "phi2_f32"])
def test_compare_litert_with_the_mask_fed_and_a_chunked_prompt(name, capsys):
    path = LLM / f"{name}.tflite"
    prompt = ",".join(str(i) for i in range(100, 120))
    assert main(["run", str(path), "--generate", "5", "--prompt", prompt, "--bos", "2",
                 "--compare-litert", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["litert"]["same"] and doc["litert"]["tokens"] == doc["tokens"]
    assert doc["litert"]["logits_max_difference"] < 1e-4
    assert isinstance(doc["litert"]["logits_bit_exact"], bool)
