"""`memory` on an LLM decoder: not a TFLite Micro model, said once, and LiteRT's arenas.

tiny_llama_f32 (litert-torch's export: prefill_8 and decode signatures carrying the KV
cache, composites' decompositions in subgraphs 2..12) used to get TFLM's plan by default,
its peak "at step -1" and 31 lines of "scratch buffer in a subgraph TFLM never plans".
"""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.cli_runner import run_cli
from tests.conftest import CORPUS, MODELS_DIR
from tflite_viewer.memory import plan_litert, plan_tflm
from tflite_viewer.memory.decoder import llm_decoder
from tflite_viewer.model import load_model

LLM = sorted((MODELS_DIR / "llm").glob("*.tflite"))
DECODER = MODELS_DIR / "llm" / "tiny_llama_f32.tflite"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_cli("memory", *args)


@pytest.mark.parametrize("path", LLM, ids=lambda p: p.name)
def test_every_llm_export_is_a_decoder(path):
    model = load_model(path)
    why = llm_decoder(model)
    keys = [s.key for s in model.signature_defs]
    named = ", ".join(keys[:-1]) + " and " + keys[-1]
    assert why is not None and f"signatures {named} carry" in why and "KV cache of 4" in why


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_no_other_corpus_model_is_a_decoder(path):
    """multi_signature has two signatures (encode, decode) but carries no state."""
    assert llm_decoder(load_model(path)) is None


def test_a_decoder_gets_litert_arenas_by_default_said_once():
    default = _cli(str(DECODER), "--no-timeline")
    litert = _cli(str(DECODER), "--no-timeline", "--target", "litert")
    assert default.returncode == litert.returncode == 0, default.stderr
    lines = default.stdout.splitlines()
    assert lines[0] == "tiny_llama_f32.tflite: LiteRT arenas (builtin kernels without " \
                       "delegates, 64-byte tensor alignment)"
    assert [ln for ln in lines if "not a TFLite Micro model" in ln] == [lines[1]]
    # the rest is what --target litert prints (which says it too, once)
    assert lines[2:] == litert.stdout.splitlines()[2:]
    assert "step -1" not in default.stdout and "never plans" not in default.stdout
    doc = json.loads(_cli(str(DECODER), "--json").stdout)
    assert doc["target"] == "litert" and "LLM decoder" in doc["why_target"]
    assert doc["arena"]["head_bytes"] == plan_litert(load_model(DECODER)).head_bytes


def test_tflm_as_asked_on_a_decoder_says_where_the_peak_is_in_words():
    result = _cli(str(DECODER), "--no-timeline", "--target", "tflm")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "not a TFLite Micro model: TFLM's plan follows, as asked" in out
    peak = next(ln for ln in out.splitlines() if ln.startswith("  peak:"))
    assert "step -1" not in peak
    assert "which no control flow reaches from subgraph 0" in peak
    problems = [ln for ln in out.splitlines() if ln.startswith("  problem:")]
    scratch = [p for p in problems if "scratch buffers in subgraphs" in p]
    assert len(scratch) == 1 and "and 6 more" in scratch[0]
    plan = plan_tflm(load_model(DECODER))
    assert plan.arena.peak_step == -1  # (the figure stays TFLM's: JSON keeps it)
    assert sum("scratch" in p for p in plan.problems) == 1


def test_models_for_tflm_keep_tflm_by_default():
    result = _cli(str(MODELS_DIR / "multi_signature.tflite"), "--json")
    doc = json.loads(result.stdout)
    assert doc["target"] == "tflm" and doc["why_target"] is None
