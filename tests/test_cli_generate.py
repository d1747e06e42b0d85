"""`tflite-viewer run MODEL --generate K [--prompt IDS] [--loop FIELD=VALUE] [--json]`: the
K ids equal LiteRT's builtin kernels running the loop (tests/interpreter/test_generation's
transcription), --compare-litert says so itself, and misuse is one line and exit 2."""
from __future__ import annotations

import json

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
    (["--generate", "2", "--prompt", ",".join(["1"] * 9)], "more than any prefill"),
    (["--generate", "31", "--prompt", "1,2,3"], "the KV cache holds 32 positions"),
    (["--generate", "2", "--loop", "colour=red"], "FIELD=VALUE"),
    (["--generate", "2", "--loop", "kv=kv_cache_k_*"], "none of tokens, position or KV"),
])
def test_misuse_is_one_line_and_exit_2(args, message, capsys):
    rc = main(["run", str(LLM / "tiny_llama_f32.tflite"), *args])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.startswith("tflite-viewer run: error: ") and err.count("\n") == 1
    assert message in err


def test_a_model_that_is_no_decoder(capsys):
    assert main(["run", str(MODELS_DIR / "mobilenet_v2_float.tflite"), "--generate", "3"]) == 2
    assert "no signature named prefill*" in capsys.readouterr().err
