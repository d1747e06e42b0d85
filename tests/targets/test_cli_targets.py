"""`tflite-viewer targets`: the JSON contract, the text table, errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tflite_viewer.cli import main
from tests.targets.oracles import xnnpack_partitions

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
CNN = MODELS / "small_cnn_dilated_int8.tflite"


def strict_loads(text: str):
    def no(value):
        raise AssertionError(f"non-standard JSON constant {value}")
    return json.loads(text, parse_constant=no)


def run_cli(capsys, *args) -> tuple[int, str, str]:
    code = main(["targets", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_contract(capsys):
    code, out, err = run_cli(capsys, CNN, "--json")
    assert code == 0 and err == ""
    doc = strict_loads(out)
    assert set(doc["targets"]) == {"litert", "xnnpack", "gpu", "tflm"}
    for name, t in doc["targets"].items():
        assert isinstance(t["partitions"], list) and isinstance(t["ops"], list)
        assert len(t["ops"]) == 13
        for op in t["ops"]:
            assert {"subgraph", "index", "verdict", "reason"} <= set(op)
            assert op["verdict"] in ("runs", "falls back", "refused")
            assert op["subgraph"] == 0 and 0 <= op["index"] < 13
        for p in t["partitions"]:
            assert set(p) >= {"subgraph", "ops", "inputs", "outputs"}
    # the file's indices, LiteRT's partitions
    xnn = doc["targets"]["xnnpack"]["partitions"]
    assert [(p["inputs"], p["outputs"]) for p in xnn] == xnnpack_partitions(CNN.read_bytes())


def test_json_and_output_to_stdout_at_once_is_a_usage_error(capsys):
    code, out, err = run_cli(capsys, CNN, "--json", "-o", "-")
    assert code == 0 and list(strict_loads(out)["targets"])  # -o - with --json: one document
    code, out, err = run_cli(capsys, CNN, "--json", "-o", "/no/such/dir/x.json")
    assert code == 2 and "no such folder" in err


def test_target_selection_and_output_file(capsys, tmp_path):
    out_file = tmp_path / "t.json"
    code, out, _ = run_cli(capsys, CNN, "--target", "tflm", "--target", "xnnpack", "-o",
                           out_file)
    assert code == 0
    doc = strict_loads(out_file.read_text())
    assert list(doc["targets"]) == ["tflm", "xnnpack"]
    assert "Operators that do not run everywhere" in out  # the table still goes to stdout
    code, out, _ = run_cli(capsys, CNN, "--target", "gpu", "-o", "-")
    assert list(strict_loads(out)["targets"]) == ["gpu"]


def test_text_table_names_what_does_not_run(capsys):
    code, out, _ = run_cli(capsys, CNN)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["target", "runs", "falls", "back"]
    row = next(line for line in lines if " SPACE_TO_BATCH_ND " in line)
    # litert, xnnpack, gpu, tflm (TFLM runs it into a stored shape that is wrong)
    assert row.split()[3:] == ["runs", "CPU", "CPU", "NO"]
    assert "xnnpack: XNNPACK has no SPACE_TO_BATCH_ND" in out
    assert "tflm: Silently wrong: tensor 15 is stored as [1, 18, 18, 8]" in out


def test_fixes_in_the_json(capsys, tmp_path):
    """A fused TANH XNNPACK refuses comes with the split, and the clearing, as edits."""
    from tests.targets import cases

    path = tmp_path / "conv_tanh.tflite"
    path.write_bytes(cases.all_cases()["CONV_2D-f32-TANH"])
    code, out, _ = run_cli(capsys, path, "--target", "xnnpack", "--json")
    op = strict_loads(out)["targets"]["xnnpack"]["ops"][0]
    assert op["verdict"] == "falls back" and "TANH" in op["reason"]
    split, clear = op["fixes"]
    assert split["applicable"] and split["edits"][0].startswith("Split the fused activation")
    assert clear["applicable"] and "fused_activation_function" in clear["edits"][0]


@pytest.mark.parametrize("args,needle", [
    (["nope.tflite"], "nope.tflite: no such file"),
    ([CNN, "--target", "npu"], "invalid choice"),
    ([CNN, "--runtime", "two"], "not like 2.14.0"),
])
def test_bad_input_exits_2_with_one_line(capsys, args, needle):
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and needle in err
    assert err.startswith("tflite-viewer targets: error: ")


def test_a_truncated_model_exits_2(capsys, tmp_path):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(CNN.read_bytes()[:200])
    code, out, err = run_cli(capsys, bad)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "truncated" in err


@pytest.mark.parametrize("args, needle", [
    (["--target", "xnnpack"], "--target goes with --screenshot OUT.png"),
    (["--screenshot", "x.png", "--target", "npu"], "--target npu: one of litert, xnnpack, gpu, tflm"),
])
def test_the_window_target_option_is_checked_before_qt(capsys, tmp_path, args, needle):
    args = [a if a != "x.png" else str(tmp_path / "x.png") for a in args]
    code = main([str(MODELS / "sine_float.tflite"), *args])  # the window's command line
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.strip().endswith(needle) and err.count("\n") == 1
    assert not (tmp_path / "x.png").exists()
