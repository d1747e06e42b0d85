"""`tflite-viewer diff A B`: summary first, then each difference; exit 0 same, 1 different,
2 bad input; strict JSON; -o FILE and - for stdout."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.cli_runner import run_cli
from tests.conftest import MODELS_DIR
from tflite_viewer.cli import main
from tflite_viewer.edit import ModelDocument, RemoveOperator, SetOption

FLOAT = MODELS_DIR / "small_cnn_dilated_float.tflite"
INT8 = MODELS_DIR / "small_cnn_dilated_int8.tflite"


@pytest.fixture
def edited(tmp_path):
    """small_cnn_dilated_float with one option changed and the SOFTMAX removed."""
    doc = ModelDocument(FLOAT)
    sg = doc.model.subgraphs[0]
    dw = next(o.index for o in sg.operators if o.name == "DEPTHWISE_CONV_2D")
    soft = next(o.index for o in sg.operators if o.name == "SOFTMAX")
    doc.apply(SetOption(0, dw, "depth_multiplier", 2))
    doc.apply(RemoveOperator(0, soft))
    out = tmp_path / "edited.tflite"
    out.write_bytes(doc.to_bytes())
    return out, dw, soft


def test_the_same_model_exits_0(capsys):
    assert main(["diff", str(FLOAT), str(FLOAT)]) == 0
    out = capsys.readouterr().out
    assert "the models are the same" in out


def test_differences_exit_1_summary_first_then_each(edited, capsys):
    path, dw, soft = edited
    assert main(["diff", str(FLOAT), str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("A: ") and lines[1].startswith("B: ")
    assert lines[3].startswith("differences: ") and "operators: " in lines[3]
    body = "\n".join(lines[4:])
    assert f"~ operator {dw} DEPTHWISE_CONV_2D: options.depth_multiplier: 1 -> 2" in body
    assert f"- operator {soft} SOFTMAX: removed" in body


def test_json_is_strict_and_lists_every_difference(edited, capsys):
    path, dw, soft = edited
    assert main(["diff", str(FLOAT), str(path), "--json", "--matches"]) == 1
    text = capsys.readouterr().out
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict {c}"))
    assert doc["same"] is False
    fields = {(d["category"], d["change"], d["field"], (d["a"] or {}).get("index"))
              for d in doc["differences"]}
    assert ("operator", "changed", "options.depth_multiplier", dw) in fields
    assert ("operator", "removed", "", soft) in fields
    assert doc["summary"]["operator"]["removed"] == 1
    ops = {tuple(m["a"]): tuple(m["b"]) for m in doc["matches"]["operators"]}
    assert (0, soft) not in ops and ops[(0, dw)] == (0, dw)
    assert all(m["evidence"]["kind"] in ("name", "signature", "content", "structure",
                                         "position") for m in doc["matches"]["tensors"])


def test_numeric_json_has_metrics_and_the_first_op_where_they_part(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["diff", str(FLOAT), str(INT8), "--numeric", "--samples", "2",
                 "-o", str(out)]) == 1
    text = capsys.readouterr().out
    assert "first op where they part: op 0 CONV_2D" in text
    doc = json.loads(out.read_text())
    numbers = doc["numeric"]
    assert numbers["samples"] == 2 and numbers["first_parting"]["a_op"] == [0, 0]
    row = numbers["tensors"][0]
    assert {"max_abs_error", "relative_error", "cosine", "sqnr_db"} <= set(row["metrics"])


def test_numeric_with_an_inputs_file(tmp_path, capsys):
    from tflite_viewer.model import load_model
    m = load_model(FLOAT)
    t = m.subgraphs[0].tensors[m.subgraphs[0].inputs[0]]
    npz = tmp_path / "in.npz"
    np.savez(npz, **{t.name: np.zeros(t.shape, np.float32)})
    assert main(["diff", str(FLOAT), str(FLOAT), "--numeric", "--inputs", str(npz)]) == 0
    assert "no tensor parts" in capsys.readouterr().out


@pytest.mark.parametrize("args,words", [
    (["diff", "missing.tflite", str(FLOAT)], "missing.tflite: no such file"),
    (["diff", str(FLOAT), "missing.tflite"], "missing.tflite: no such file"),
    (["diff", str(FLOAT), str(FLOAT), "--inputs", "x.npz"], "--inputs needs --numeric"),
    (["diff", str(FLOAT), str(FLOAT), "--numeric", "--samples", "0"], "--samples must be"),
    (["diff", str(FLOAT)], "the following arguments are required"),
    (["diff", str(FLOAT), str(FLOAT), "--numeric", "--inputs", "missing.npz"],
     "missing.npz: no such file"),
])
def test_bad_input_is_one_line_and_exit_2(args, words, capsys):
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and words in err, err


def test_json_to_stdout_with_dash(capsys):
    assert main(["diff", str(FLOAT), str(FLOAT), "-o", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["same"] is True and doc["differences"] == []


def _masked_add(tmp_path, name: str, mask: float):
    """x + [[mask, 0, 1, mask]]: a -inf mask (as attention masks hold) reaches the output."""
    from tests.interpreter.singleop import Input, single_op_model
    const = np.array([[mask, 0.0, 1.0, mask]], np.float32)
    path = tmp_path / name
    path.write_bytes(single_op_model("ADD", [Input((1, 4)), const], [np.float32], "AddOptions",
                                     {}, output_shapes=[(1, 4)]))
    return path


@pytest.mark.parametrize("mask_b, exit_code", [(-np.inf, 0), (-1e30, 1)])
def test_numeric_json_with_infinities_prints_nothing_on_stderr(tmp_path, mask_b, exit_code):
    """Both models hold -inf at the same places: they agree (exit 0), where inf - inf once
    made every metric NaN, the tensors "parted", and numpy printed two RuntimeWarnings.
    Against a finite mask they part (exit 1), still without a warning."""
    a, b = _masked_add(tmp_path, "a.tflite", -np.inf), _masked_add(tmp_path, "b.tflite", mask_b)
    result = run_cli("diff", a, b, "--numeric", "--json")
    assert result.stderr == "" and result.returncode == exit_code
    doc = json.loads(result.stdout, parse_constant=lambda name: pytest.fail(name))
    out = next(t for t in doc["numeric"]["tensors"] if t["name"] == "out0")
    assert out["parted"] == bool(exit_code)
    if not exit_code:
        assert out["metrics"]["max_abs_error"] == 0.0
