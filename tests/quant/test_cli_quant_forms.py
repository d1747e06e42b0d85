"""`quant` on the forms LLM exports use: blockwise, float16, weight-only; `--signature`,
`--model-explorer`, and a model the interpreter cannot run (its files analysed alone)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tflite_viewer.cli import main
from tflite_viewer.quant import analyze
from tflite_viewer.quant.explorer import node_data

from .llm_pairs import CONVERTER, LLM, TINY_FLOAT
from .test_weight_forms import _blockwise, _float_model

Q4 = LLM / "tiny_llama_q4_block32.tflite"


def _run(capsys, *args):
    rc = main(["quant", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_blockwise_decoder_is_analysed_per_signature(capsys):
    """The issue: exit 2, "nothing in it is quantized".  Now: the INT4 blockwise weights
    with their worst block, and a table per signature, named by signature."""
    rc, out, err = _run(capsys, Q4, "--float", TINY_FLOAT, "--samples", "1")
    assert rc == 0 and "Traceback" not in err
    assert "19 x INT4 blockwise (block 32), dynamic" in out
    assert "activations of signature 'prefill_8'" in out
    assert "activations of signature 'decode'" in out
    assert "model outputs of signature 'decode' (subgraph 1)" in out
    assert out.count(" b32 ") == 19 and "block [" in out


@pytest.mark.parametrize("form", ["fp16", "dynamic"])
def test_converter_float16_and_dynamic_pairs(tmp_path, capsys, form):
    rc, _, _ = _run(capsys, CONVERTER / f"conv_net_{form}.tflite", "--float",
                    CONVERTER / "conv_net_float.tflite", "--samples", "1", "-o",
                    tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert rc == 0 and data["weights"] and data["tensors"]
    for w in data["weights"]:  # (an exact weight's SQNR is +inf: null, its error 0)
        m = w["metrics"]
        assert m["sqnr_db"] > 30 if m["sqnr_db"] is not None else m["max_abs_error"] == 0
    if form == "fp16":
        assert {w["form"]["form"] for w in data["weights"]} == {"float16"}


def test_weight_only_int8_weights_have_an_sqnr(tmp_path, capsys):
    """The issue: weight-only int8's weight SQNR showed "-"."""
    rc, out, _ = _run(capsys, LLM / "tiny_llama_q8_wo.tflite", "--float", TINY_FLOAT,
                      "--samples", "1", "-o", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert rc == 0 and len(data["weights"]) == 19
    assert all(w["form"]["usage"] == "weight-only" and 40 < w["metrics"]["sqnr_db"] < 60
               and w["worst"]["unit"] == "channel" for w in data["weights"])


def test_signature_analyses_that_signature_alone(tmp_path, capsys):
    rc, out, _ = _run(capsys, Q4, "--float", TINY_FLOAT, "--samples", "2", "--signature",
                      "decode", "-o", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert rc == 0 and "prefill_8" not in out
    assert [(o["signature"], len(o["per_input"])) for o in data["entry_outputs"]] == [
        ("decode", 2)]
    measured = [t for t in data["tensors"] if t["metrics"] is not None]
    assert measured and {t["signature"] for t in measured} == {"decode"}


def test_model_explorer_file_is_the_node_data(tmp_path, capsys):
    """--model-explorer writes `explorer.node_data` of the analysis the command runs (its
    format and numbers are litert_quantizer's: test_explorer.py); several metrics go to
    one file each, named as the validator names its files per metric."""
    out = tmp_path / "me.json"
    rc, _, _ = _run(capsys, Q4, "--float", TINY_FLOAT, "--samples", "1", "--signature",
                    "decode", "--model-explorer", out)
    assert rc == 0
    report = analyze(Q4, TINY_FLOAT, samples=1, signature="decode", all_entries=False,
                     validator_metrics=True)
    assert json.loads(out.read_text()) == json.loads(json.dumps(node_data(report, "mse")))
    rc, _, _ = _run(capsys, Q4, "--float", TINY_FLOAT, "--samples", "1", "--signature",
                    "decode", "--model-explorer", out, "--model-explorer-metric", "snr",
                    "--model-explorer-metric", "cosine_similarity")
    assert rc == 0
    snr = json.loads((tmp_path / "me_snr.json").read_text())
    assert snr == json.loads(json.dumps(node_data(report, "snr")))
    assert (tmp_path / "me_cosine_similarity.json").exists()


@pytest.mark.parametrize("args,needle", [
    (["--signature", "nope"], "no signature 'nope' (signatures: prefill_8, decode)"),
    (["--model-explorer", "x.json"], "--model-explorer needs --float"),
    (["--float", TINY_FLOAT, "--model-explorer-metric", "snr"],
     "--model-explorer-metric needs --model-explorer"),
])
def test_bad_arguments_exit_2(args, needle, capsys):
    rc, _, err = _run(capsys, Q4, *args)
    assert rc == 2 and needle in err and err.count("\n") == 1


def test_a_float_model_is_refused(capsys):
    rc, _, err = _run(capsys, TINY_FLOAT)
    assert rc == 2 and "nothing in it is quantized" in err and err.count("\n") == 1


def test_a_model_the_interpreter_refuses_has_its_files_analysed(tmp_path, capsys):
    """INT2 blockwise FULLY_CONNECTED (litert_quantizer's dynamic_wi2b32_afp32): LiteRT
    computes it wrongly and this interpreter refuses it; `quant` still reports the
    weights (their SQNR per block), says on stderr why nothing ran, and exits 0; a gate
    that needs the run exits 2."""
    model, real = _blockwise(2, 64)
    q, f = tmp_path / "q.tflite", tmp_path / "f.tflite"
    q.write_bytes(model)
    f.write_bytes(_float_model())
    rc, out, err = _run(capsys, q, "--float", f, "--samples", "1", "-o", tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert rc == 0 and "analysing the files alone" in err and err.count("\n") == 1
    assert "INT2 with blockwise" in data["not_run"] and "not run:" in out
    [w] = data["weights"]
    assert w["worst"]["unit"] == "block" and np.isfinite(w["metrics"]["sqnr_db"])
    assert data["tensors"] == [] and data["entry_outputs"] == []
    rc, _, err = _run(capsys, q, "--float", f, "--fail-below-sqnr", "10")
    assert rc == 2 and "INT2 with blockwise" in err
