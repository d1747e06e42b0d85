"""`tflite-viewer quant Q --float F --generate K`: the JSON other tools read, the text, the
progress on stderr, and every bad input refused with exit 2 and one line."""
from __future__ import annotations

import json

import pytest

from tflite_viewer.cli import main
from tflite_viewer.interpreter.generation import find_plan
from tflite_viewer.interpreter.generation_litert import litert_generate
from tflite_viewer.model import load_model
from tflite_viewer.quant.generation import analyze_generation

from . import llm_pairs as lp
from .test_cli_quant import _strict

Q4 = str(lp.LLM / "tiny_llama_q4_block32.tflite")
F32 = str(lp.TINY_FLOAT)
PROMPT = [5, 17, 42]
BASE = ["quant", Q4, "--float", F32, "--generate", "8", "--prompt", "5,17,42"]


def test_json_is_the_issue_s_shape_with_litert_s_tokens(capsys, tmp_path):
    assert main([*BASE, "--json", "-o", str(tmp_path / "out.json")]) == 0
    out = capsys.readouterr()
    doc = _strict(out.out)
    assert doc == _strict((tmp_path / "out.json").read_text())
    g = doc["generation"]
    plan = find_plan(load_model(F32), len(PROMPT))
    assert g["float_tokens"] == litert_generate(load_model(F32), plan, PROMPT, 8).tokens
    assert g["quantized_tokens"] == litert_generate(load_model(Q4), plan, PROMPT, 8).tokens
    assert g["first_divergence"] == 5
    assert [s["step"] for s in g["steps"]] == list(range(8))
    for s, f, q in zip(g["steps"], g["float_tokens"], g["quantized_tokens"]):
        assert (s["float_token"], s["quantized_token"]) == (f, q)
        assert isinstance(s["logits_sqnr_db"], float) and s["kl"] >= 0
        sqnr = [o["sqnr_db"] for o in s["worst_ops"]]
        measured = [v for v in sqnr if v is not None]  # null: equal outputs, listed last
        assert sqnr == measured + [None] * (len(sqnr) - len(measured))
        assert measured == sorted(measured) and len(measured) > 100
        assert {"subgraph", "op", "opcode", "tensor"} <= set(s["worst_ops"][0])
    assert "[0/9] prefill" in out.err and "[9/9] done" in out.err


def test_text_and_teacher_forcing(capsys):
    assert main([*BASE, "--teacher-forcing"]) == 0
    text = capsys.readouterr().out
    ga = analyze_generation(Q4, F32, PROMPT, 8, teacher_forcing=True)
    assert "both fed the float model's tokens (teacher forcing)" in text
    assert "First divergence: step 5 (position 7): float 86, quantized 219" in text
    assert f"Quantized tokens: {' '.join(map(str, ga.quantized_tokens))}" in text
    rows = [ln.split() for ln in text.splitlines() if ln[:4].strip().isdigit()]
    assert [int(r[0]) for r in rows] == list(range(8))
    assert [r[5] for r in rows] == ["DIFF" if i == 5 else "same" for i in range(8)]
    assert [float(r[6]) for r in rows] == pytest.approx(list(ga.logits_sqnr), abs=0.006)


@pytest.mark.parametrize("args, message", [
    (["quant", Q4, "--generate", "2"], "--generate needs --float"),
    (["quant", Q4, "--float", F32, "--teacher-forcing"], "--teacher-forcing goes with"),
    (["quant", Q4, "--float", F32, "--prompt", "1,2"], "--prompt goes with --generate"),
    ([*BASE, "--samples", "3"], "--samples does not go with --generate"),
    ([*BASE, "--per-layer-fallback"], "--per-layer-fallback does not go with"),
    ([*BASE, "--signature", "decode"], "--signature does not go with"),
    (["quant", Q4, "--float", F32, "--generate", "0"], "generate at least one token"),
    (["quant", Q4, "--float", F32, "--generate", "40"], "KV cache holds 32 positions"),
    ([*BASE[:-1], "5,x"], "token ids separated by commas"),
    ([*BASE, "--bos", "-2"], "BOS id -2"),
    ([*BASE, "--loop", "decode"], "FIELD=VALUE"),
    ([*BASE, "--timeout", "-1"], "timeout must be > 0"),
    ([*BASE, "--timeout", "0.000001"], "time budget of 1e-06 s"),
    (["quant", Q4, "--float", F32, "--timeout", "5"], "--timeout goes with --generate"),
    (["quant", str(lp.CONVERTER / "conv_net_int8.tflite"), "--float",
      str(lp.CONVERTER / "conv_net_float.tflite"), "--generate", "2"],
     "no signature named 'decode'"),
    (["quant", Q4, "--float", str(lp.LLM / "qwen3_transposed_f32.tflite"), "--generate", "2"],
     "do not match|loops differ"),
    (["quant", F32, "--float", F32, "--generate", "2"], "nothing in it is quantized"),
    (["quant", F32, "--float", Q4, "--generate", "2"], "nothing in it is quantized"),
    (["quant", Q4, "--float", F32, "--generate", "x"], "argument --generate: invalid int"),
    ([*BASE[:-1], ""], "the prompt needs at least one token id"),
    ([*BASE[:-1], "-3"], "prompt token id -3 is not a non-negative int32"),
    ([*BASE[:-1], "99999999999"], "not a non-negative int32"),
    ([*BASE[:-1], "5,256"], r"token id 256 is outside the model's vocabulary \(ids 0..255"),
    ([*BASE, "--bos", "256"], "token id 256 is outside the model's vocabulary"),
    ([*BASE, "--bos", "x"], "argument --bos: invalid int"),
    ([*BASE, "--loop", "nope=1"], "FIELD one of prefill, decode"),
    ([*BASE, "--loop", "decode=nope"], "no signature 'nope'"),
    ([*BASE, "--loop", "context=0"], "KV cache holds 0 positions"),
    ([*BASE, "--timeout", "nan"], "timeout must be > 0"),
    ([*BASE, "--timeout", "x"], "argument --timeout: invalid float"),
    ([*BASE, "--float-sums", "bogus"], "argument --float-sums: invalid choice"),
    ([*BASE, "--images", "."], "--images does not go with --generate"),
    ([*BASE, "--inputs", "in.npz"], "--inputs does not go with --generate"),
    ([*BASE, "--csv", "out.csv"], "--csv does not go with --generate"),
    ([*BASE, "--fail-below-sqnr", "3"], "--fail-below-sqnr does not go with --generate"),
    ([*BASE, "--model-explorer", "me.json"], "--model-explorer does not go with"),
    ([*BASE, "--model-explorer-metric", "mse"], "--model-explorer-metric does not go"),
    (["quant", "no_such.tflite", "--float", F32, "--generate", "2"], "no_such.tflite: no such"),
    (["quant", Q4, "--float", "no_such.tflite", "--generate", "2"], "no_such.tflite: no such"),
    (["quant", Q4, "--float", __file__, "--generate", "2"], "not a TFLite model"),
    ([*BASE, "--json", "-o", "no_such_folder/out.json"], "no such folder"),
])
def test_bad_input_exits_2_with_one_line(capsys, args, message):
    assert main(args) == 2
    out = capsys.readouterr()
    assert out.out == ""
    lines = [ln for ln in out.err.strip().splitlines() if not ln.startswith("[")]  # progress
    assert len(lines) == 1 and lines[0].startswith("tflite-viewer quant: error: ")
    import re
    assert re.search(message, lines[0]), lines[0]
