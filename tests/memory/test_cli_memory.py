"""`tflite-viewer memory`: the JSON contract against TFLM's own head, the text report,
writing to a file, bad input; `edit --reorder/--offline-plan` confirmed by `memory`."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cli_runner import run_cli
from tests.conftest import MODELS_DIR
from tests.micro_oracle import tflm_arenas


def _program(*args: str) -> subprocess.CompletedProcess:
    """The program itself, ``python -m tflite_viewer`` (the other tests run `run_cli`)."""
    return subprocess.run([sys.executable, "-m", "tflite_viewer", *args], capture_output=True,
                          text=True, timeout=120)


def _strict(text: str):
    def refuse(value):
        raise ValueError(f"non-standard JSON constant {value}")
    return json.loads(text, parse_constant=refuse)


def test_tflm_json_contract_and_head_from_tflm():
    path = MODELS_DIR / "person_detect.tflite"
    result = run_cli("memory", str(path), "--target", "tflm", "--json", "--pointer-size", "8")
    assert result.returncode == 0, result.stderr
    doc = _strict(result.stdout)
    assert doc["target"] == "tflm"
    arena = doc["arena"]
    assert arena["head_bytes"] == tflm_arenas([path.read_bytes()])[0]["head"]
    assert isinstance(arena["tail_bytes"], int)
    s, k = arena["peak_op"]
    assert s == 0 and 0 <= k < 31
    for t in doc["tensors"]:
        assert {"subgraph", "index", "offset", "size", "first", "last"} <= t.keys()
        assert t["offset"] + t["size"] <= arena["head_bytes"]
    # the tensors live at the peak reach the top of the head
    live = doc["live_at_peak"]
    assert max(t["offset"] + t["size"] for t in live) == arena["head_bytes"]
    assert arena["peak_live_bytes"] == sum(t["size"] for t in live)


def test_litert_json_has_the_same_contract():
    result = run_cli("memory", str(MODELS_DIR / "sine_float.tflite"), "--target", "litert",
                  "--json")
    assert result.returncode == 0, result.stderr
    doc = _strict(result.stdout)
    assert doc["target"] == "litert" and doc["arena"]["head_bytes"] > 0
    assert {"subgraph", "index", "offset", "size", "first", "last"} <= doc["tensors"][0].keys()


def test_text_report_names_the_peak_and_draws_the_timeline():
    result = run_cli("memory", str(MODELS_DIR / "person_detect.tflite"))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "head (planned tensors and scratch):       55,296 bytes" in out
    assert "peak: step 3, subgraphs[0].operators[2] CONV_2D" in out
    assert "<- peak" in out and "offline plan: none" in out


def test_output_file_and_dash(tmp_path):
    out = tmp_path / "plan.json"
    result = run_cli("memory", str(MODELS_DIR / "sine_float.tflite"), "-o", str(out))
    assert result.returncode == 0 and result.stdout.startswith("sine_float.tflite: TFLite Micro")
    assert _strict(out.read_text())["arena"]["head_bytes"] == 128
    result = _program("memory", str(MODELS_DIR / "sine_float.tflite"), "--json", "-o", "-")
    assert _strict(result.stdout)["arena"]["head_bytes"] == 128


@pytest.mark.parametrize("args, words", [
    (["missing.tflite"], "missing.tflite: no such file"),
    ([str(MODELS_DIR / "sine_float.tflite"), "--target", "gpu"], "invalid choice"),
    ([str(MODELS_DIR / "sine_float.tflite"), "--target", "litert", "--what-if"], "--what-if"),
])
def test_bad_input_exits_2_with_one_line(args, words):
    result = run_cli("memory", *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and words in result.stderr


def test_truncated_model_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes((MODELS_DIR / "sine_float.tflite").read_bytes()[:300])
    result = run_cli("memory", str(bad))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_what_if_then_edit_reorder_then_memory_confirms(tmp_path):
    src = MODELS_DIR / "lstm_float.tflite"
    what = _strict(run_cli("memory", str(src), "--what-if", "--json").stdout)["what_if"]
    assert what["saved_bytes"] > 0
    out = tmp_path / "reordered.tflite"
    result = run_cli("edit", str(src), "-o", str(out), "--reorder", f"{what['subgraph']}:memory",
                     "--offline-plan")
    assert result.returncode == 0, result.stderr
    doc = _strict(run_cli("memory", str(out), "--json").stdout)
    assert doc["arena"]["head_bytes"] == what["head_bytes"]
    assert doc["offline"]["valid"] is True
    pointer8 = _strict(run_cli("memory", str(out), "--json", "--pointer-size", "8").stdout)
    assert tflm_arenas([out.read_bytes()])[0]["head"] == pointer8["arena"]["head_bytes"]
