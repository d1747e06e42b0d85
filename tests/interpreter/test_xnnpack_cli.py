"""`run --kernels xnnpack` from the command line: the cross-check against LiteRT's default
interpreter (BUILTIN) at tolerance 0, generation with --compare-litert, what the report
says of XNNPACK's partitions, and the refusals (one line, exit 2)."""
from __future__ import annotations

import json

import pytest

from tests.conftest import MODELS_DIR
from tflite_viewer.cli import main

LLM = MODELS_DIR / "llm"
Q8 = str(LLM / "qwen3_transposed_q8.tflite")


def test_crosscheck_against_the_default_path_is_exact_where_litert_holds_values(capsys):
    """Every tensor LiteRT's default interpreter holds (a partition's outputs, the ops it
    leaves to its own kernels) has its bits; the tensors a partition keeps to itself are
    compared nowhere (LiteRT never writes them)."""
    code = main(["run", Q8, "--signature", "decode", "--kernels", "xnnpack", "--compare-litert",
                 "--tolerance", "0", "--tolerance-units", "0", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["kernels"] == "xnnpack"
    check = doc["crosscheck"]
    assert check["resolver"] == "BUILTIN" and check["ok"]
    compared = [r for r in check["rows"] if r["max_abs"] is not None]
    hidden = [r for r in check["rows"] if r["note"] == "LiteRT gave no value"]
    assert compared and hidden
    assert all(r["exact"] for r in compared)
    assert {r["opcode"] for r in hidden} >= {"FULLY_CONNECTED", "SOFTMAX", "BATCH_MATMUL"}
    assert [r for r in compared if r["opcode"] == "FULLY_CONNECTED"][-1]["name"] \
        == "decode_logits_output"
    assert doc["xnnpack"]["ops"] == 375 and doc["xnnpack"]["partitions"] == 45
    assert doc["xnnpack"]["builtin_here"] == []


def test_generate_compares_with_the_default_path(capsys):
    assert main(["run", Q8, "--generate", "4", "--prompt", "7", "--bos", "1",
                 "--kernels", "xnnpack", "--compare-litert", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["litert"]["resolver"] == "BUILTIN"
    assert doc["litert"]["same"] and doc["litert"]["logits_bit_exact"]
    assert doc["tokens"] == doc["litert"]["tokens"] == [91, 201, 241, 45]
    assert main(["run", Q8, "--generate", "4", "--prompt", "7", "--bos", "1",
                 "--kernels", "xnnpack"]) == 0
    text = capsys.readouterr().out
    assert "LiteRT's default path (XNNPACK's kernels where its delegate takes an op)" in text
    assert "XNNPACK takes" not in text or "every one computed as XNNPACK does" in text


def test_the_report_names_ops_computed_as_litert_s_builtin_kernels(capsys):
    """mobilenet_v2's convolutions, and its MEAN over height and width (XNNPACK's
    discontiguous reduction), are XNNPACK's and not reproduced here: the report says so
    rather than passing their builtin results off as XNNPACK's."""
    assert main(["run", str(MODELS_DIR / "mobilenet_v2_float.tflite"), "--kernels", "xnnpack",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = {r["name"] for r in doc["xnnpack"]["builtin_here"]}
    assert names == {"CONV_2D", "DEPTHWISE_CONV_2D", "MEAN"}


@pytest.mark.parametrize("args,message", [
    (["--generate", "2"], "XNNPACK cannot define weight tensor 49"),
])
def test_a_model_the_delegate_cannot_define_is_refused(args, message, capsys):
    code = main(["run", str(LLM / "qwen3_transposed_q4_block32.tflite"), "--kernels", "xnnpack",
                 *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_an_unknown_kernel_set_is_refused(capsys):
    assert main(["run", Q8, "--kernels", "xnnpak"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'xnnpak'" in err and "'xnnpack'" in err
