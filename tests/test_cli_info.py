"""`tflite-viewer info`: the text and JSON contract, and bad input.

The command line runs in this process (`tests.cli_runner`); the usage error runs the
program itself, ``python -m tflite_viewer``, in a subprocess."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cli_runner import run_cli
from tests.conftest import MODELS_DIR
from tests.litert_oracle import litert


def _program(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tflite_viewer", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("name", ["ssd_mobilenet_v1.tflite", "control_flow.tflite",
                                  "mobilenet_v1_0.25_224_quant.tflite"])
def test_info_json_contract_matches_litert(name):
    path = MODELS_DIR / name
    result = run_cli("info", str(path), "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert {"subgraphs", "metadata", "signatures"} <= doc.keys()
    sg = doc["subgraphs"][0]
    assert {"name", "inputs", "outputs", "tensors", "operators"} <= sg.keys()
    it = litert(path)
    ops = it._get_ops_details()
    assert [op["opcode"] for op in sg["operators"]] == [d["op_name"] for d in ops]
    assert [op["inputs"] for op in sg["operators"]] == [list(d["inputs"]) for d in ops]
    details = {d["index"]: d for d in it.get_tensor_details()}
    for t in sg["tensors"]:
        assert {"index", "name", "dtype", "shape"} <= t.keys()
        assert t["name"] == details[t["index"]]["name"]
        assert t["shape"] == list(details[t["index"]]["shape"])
    for op in sg["operators"]:
        assert {"index", "opcode", "version", "inputs", "outputs", "options"} <= op.keys()


def test_info_text_lists_ops_like_the_analyzer():
    result = run_cli("info", str(MODELS_DIR / "control_flow.tflite"))
    assert result.returncode == 0
    assert "Op#0 WHILE(v1)(T#2, T#0, T#1) -> [T#5, T#6, T#7] cond=Subgraph#3 body=Subgraph#4" in result.stdout
    assert "Op#3 IF(v1)(T#9, T#6) -> [T#10] then=Subgraph#2 else=Subgraph#1" in result.stdout


def test_info_shows_metadata_labels_and_findings():
    quant = run_cli("info", str(MODELS_DIR / "mobilenet_v1_0.25_224_quant.tflite"))
    assert "Associated file: labels.txt" in quant.stdout
    assert "NormalizationOptions" in quant.stdout
    person = run_cli("info", str(MODELS_DIR / "person_detect.tflite"))
    assert person.returncode == 0
    assert "tensors[33].quantization: quantized_dimension must be in range [0, 1). Was 3." in person.stdout


@pytest.mark.parametrize("content,expected", [
    (b"", "empty file (0 bytes)"),
    (b"not a model at all, just text", "file identifier"),
    (None, "offset points past the end"),
])
def test_info_bad_input_exits_2_with_one_line(tmp_path, content, expected):
    path = tmp_path / "bad.tflite"
    if content is None:
        content = (MODELS_DIR / "mobilenet_v2_float.tflite").read_bytes()[:3000]
    path.write_bytes(content)
    result = run_cli("info", str(path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in result.stderr


def test_info_missing_file_and_usage_errors_exit_2(tmp_path):
    missing = run_cli("info", str(tmp_path / "nope.tflite"))
    assert missing.returncode == 2 and "nope.tflite: no such file" in missing.stderr
    usage = _program("info")
    assert usage.returncode == 2 and len(usage.stderr.strip().splitlines()) == 1
