"""The command line's contract (DESIGN, "Command line"; docs/cli.md), across every entry point.

* Bad input: every subcommand and the window's entry point, on a missing file, a folder,
  an empty file, a text file and a truncated model, exit 2 with exactly one line on
  stderr, nothing on stdout, and the same words for the same file (one helper makes them);
  the window without a display too.
* Output: ``--json`` prints strict JSON on stdout, ``-o -`` writes the product to stdout
  (the same document as ``--json`` for the report commands), ``-o FILE`` writes it to the
  file and leaves the text report on stdout; two documents for stdout is exit 2.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.cli_runner import run_cli
from tests.conftest import MODELS_DIR
from tflite_viewer.cli import SUBCOMMANDS, main
from tflite_viewer.ui import platform_check

ROOT = Path(__file__).resolve().parents[1]
FLOAT = MODELS_DIR / "small_cnn_dilated_float.tflite"
INT8 = MODELS_DIR / "small_cnn_dilated_int8.tflite"
CONTROL_FLOW = MODELS_DIR / "control_flow.tflite"


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def _bad_file(kind: str, tmp: Path) -> Path:
    path = tmp / f"{kind}.tflite"
    if kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("a plain text file, not a model\n")
    elif kind == "truncated":
        path.write_bytes(FLOAT.read_bytes()[:4000])
    else:
        assert kind == "missing"
    return path


# the expected words, from the spec of each case (the identifier is bytes 4..8 of the file)
EXPECTED = {
    "missing": "{p}: no such file",
    "directory": "{p}: is a directory, not a model",
    "empty": "{p}: empty file (0 bytes), not a model",
    "text": '{p}: file identifier is "ain ", expected "TFL3": not a TFLite model',
    "truncated": "{p}: not a valid TFLite model: ",
}


def _entry_points(model: Path, tmp: Path) -> dict[str, tuple[str, list[str]]]:
    """name -> (the prefix of its error line, its arguments), the model as ``model``."""
    return {
        "info": ("tflite-viewer info", ["info", str(model)]),
        "layout": ("tflite-viewer layout", ["layout", str(model)]),
        "run": ("tflite-viewer run", ["run", str(model)]),
        "run --generate": ("tflite-viewer run", ["run", str(model), "--generate", "2"]),
        "render": ("tflite-viewer render", ["render", str(model), "-o", str(tmp / "g.svg")]),
        "edit": ("tflite-viewer edit", ["edit", str(model), "-o", str(tmp / "e.tflite")]),
        "quant": ("tflite-viewer quant", ["quant", str(model)]),
        "quant --float": ("tflite-viewer quant", ["quant", str(INT8), "--float", str(model)]),
        "quantize": ("tflite-viewer quantize", ["quantize", str(model), "-o", str(tmp / "q.tflite")]),
        "memory": ("tflite-viewer memory", ["memory", str(model)]),
        "targets": ("tflite-viewer targets", ["targets", str(model)]),
        "diff": ("tflite-viewer diff", ["diff", str(model), str(INT8)]),
        "diff B": ("tflite-viewer diff", ["diff", str(INT8), str(model)]),
        "window": ("tflite-viewer", [str(model)]),
        "window --screenshot": ("tflite-viewer", [str(model), "--screenshot", str(tmp / "s.png")]),
    }


def test_every_model_subcommand_is_covered():
    # ops is the one subcommand without a model argument (its output is tested below)
    assert {n.split()[0] for n in _entry_points(FLOAT, Path("."))} == \
        (set(SUBCOMMANDS) - {"ops"}) | {"window"}


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_bad_model_files_give_one_line_and_exit_2_everywhere(kind, tmp_path, capsys):
    path = _bad_file(kind, tmp_path)
    messages = {}
    for name, (prefix, args) in _entry_points(path, tmp_path).items():
        rc = main(args)
        out, err = capsys.readouterr()
        assert rc == 2, (name, err)
        assert out == "", (name, out)
        assert err.count("\n") == 1 and err.endswith("\n"), (name, err)
        head = f"{prefix}: error: "
        assert err.startswith(head), (name, err)
        messages[name] = err[len(head):-1]
    want = EXPECTED[kind].format(p=path)
    assert all(m.startswith(want) for m in messages.values()), messages
    assert len(set(messages.values())) == 1, messages  # the same words from every entry point
    if kind == "truncated":
        assert "the file looks truncated" in messages["info"]
    assert not list(tmp_path.glob("[gse].*")), "nothing is written on bad input"


@pytest.mark.parametrize("kind", ["missing", "directory", "empty"])
def test_other_input_files_use_the_same_words(kind, tmp_path, capsys):
    path = _bad_file(kind, tmp_path).with_suffix("")
    if kind == "directory":
        path.mkdir(exist_ok=True)
    elif kind == "empty":
        path.write_bytes(b"")
    words = {"missing": f"{path}: no such file", "directory": f"{path}: is a directory, not a",
             "empty": f"{path}: empty file (0 bytes), not a"}[kind]
    for args in (["run", str(FLOAT), "--inputs", str(path)],
                 ["quant", str(INT8), "--inputs", str(path)],
                 [str(FLOAT), "--screenshot", str(tmp_path / "s.png"), "--run-to", "1",
                  "--inputs", str(path)]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err, (args, err)


def test_a_mistyped_subcommand_is_named(capsys):
    assert main(["inof", "x.tflite"]) == 2
    assert capsys.readouterr().err == \
        "tflite-viewer: error: 'inof' is not a subcommand (did you mean info?)\n"
    assert main(["qaunt"]) == 2
    assert "(did you mean quant?)" in capsys.readouterr().err
    assert main(["xyzzy"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a subcommand (info, run," in err


def test_the_window_without_a_display_is_one_line(monkeypatch, capsys):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert main([str(FLOAT)]) == 2
    assert capsys.readouterr().err == f"tflite-viewer: error: {platform_check.NO_DISPLAY}\n"
    # its usage is checked first: --run-to without --screenshot
    assert main([str(FLOAT), "--run-to", "3"]) == 2
    assert capsys.readouterr().err == "tflite-viewer: error: --run-to goes with --screenshot OUT.png\n"


def test_the_window_without_a_display_in_a_real_process():
    """What issue 27 saw: Qt's SIGABRT (exit 134) with its multi-line message."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["PYTHONPATH"] = str(ROOT)
    for args in ([str(FLOAT)], [], [str(FLOAT), "--run-to", "3"]):
        r = subprocess.run([sys.executable, "-m", "tflite_viewer", *args], env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("tflite-viewer: error: ")
        assert r.stdout == ""


# ------------------------------------------------------------------------------------------
# --json, -o FILE, -o -
# ------------------------------------------------------------------------------------------
REPORTS = {  # the report commands: -o writes the same JSON document --json prints
    "info": (["info", str(CONTROL_FLOW)], "Model "),
    "layout": (["layout", str(CONTROL_FLOW), "--subgraph", "4"], "subgraph 4: "),
    "run": (["run", str(CONTROL_FLOW)], "Model "),
    "quant": (["quant", str(INT8), "--samples", "1"], "model: "),
    "ops": (["ops"], "op "),
    "memory": (["memory", str(CONTROL_FLOW)], "control_flow.tflite: TFLite Micro arena"),
    "targets": (["targets", str(CONTROL_FLOW)], "target "),
}
VOLATILE = {"milliseconds"}  # a run's own duration differs from run to run


def _stable(doc):
    return {k: v for k, v in doc.items() if k not in VOLATILE} if isinstance(doc, dict) else doc


@pytest.mark.parametrize("name", list(REPORTS))
def test_json_and_output_files_agree(name, tmp_path, capsys):
    args, text_start = REPORTS[name]
    assert main([*args, "--json"]) == 0
    printed = _strict(capsys.readouterr().out)
    assert main([*args, "-o", "-"]) == 0
    assert _stable(_strict(capsys.readouterr().out)) == _stable(printed)
    out_file = tmp_path / "doc.json"
    assert main([*args, "-o", str(out_file)]) == 0
    text = capsys.readouterr().out
    assert _stable(_strict(out_file.read_text())) == _stable(printed)
    assert text.startswith(text_start) or text_start in text.splitlines()[0], text[:200]
    assert main([*args, "--json", "-o", str(tmp_path / "both.json")]) == 0
    assert _stable(_strict(capsys.readouterr().out)) == _stable(printed)
    assert _stable(_strict((tmp_path / "both.json").read_text())) == _stable(printed)


def test_an_output_folder_that_does_not_exist_is_said_before_any_work(tmp_path, capsys):
    for args in (["info", str(FLOAT), "-o", str(tmp_path / "no" / "x.json")],
                 ["render", str(FLOAT), "-o", str(tmp_path / "no" / "x.svg")],
                 ["edit", str(FLOAT), "-o", str(tmp_path / "no" / "x.tflite")],
                 [str(FLOAT), "--screenshot", str(tmp_path / "no" / "x.png")]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no such folder" in err, err


def test_two_documents_for_stdout_is_a_usage_error(capsys):
    for args in (["edit", str(FLOAT), "-o", "-", "--json"],
                 ["quant", str(INT8), "--json", "--csv", "-"],
                 ["run", str(FLOAT), "--json", "--dump-all", "-"],
                 ["render", str(FLOAT), "-o", "-", "--format", "svg", "--json"]):
        assert main(args) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and "would each write to stdout" in err


def _cli(*args: str) -> subprocess.CompletedProcess:
    """The program itself, ``python -m tflite_viewer``: its stdout's bytes, as a pipe gets
    them (the products written to ``-o -``); the files they are checked against come from
    `run_cli`, in this process."""
    return subprocess.run([sys.executable, "-m", "tflite_viewer", *args], capture_output=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_edit_writes_the_model_to_stdout(tmp_path):
    args = ["edit", str(FLOAT), "--description", "piped"]
    piped = _cli(*args, "-o", "-")
    assert piped.returncode == 0 and piped.stderr == b"", piped.stderr
    assert run_cli(*args, "-o", str(tmp_path / "e.tflite")).returncode == 0
    assert piped.stdout == (tmp_path / "e.tflite").read_bytes()
    from tflite_viewer.model import load_model
    assert load_model(piped.stdout).description == "piped"
    shown = run_cli(*args, "-o", str(tmp_path / "f.tflite"), "--json")
    doc = _strict(shown.stdout)
    assert doc["output"] == str(tmp_path / "f.tflite") and doc["edits"][0]["description"]


def test_render_writes_the_image_to_stdout(tmp_path):
    piped = _cli("render", str(CONTROL_FLOW), "--subgraph", "4", "-o", "-", "--format", "png")
    assert piped.returncode == 0 and piped.stderr == b"", piped.stderr
    assert piped.stdout.startswith(b"\x89PNG\r\n\x1a\n")
    shown = run_cli("render", str(CONTROL_FLOW), "--subgraph", "4", "-o",
                    str(tmp_path / "g.png"), "--json")
    doc = _strict(shown.stdout)
    assert doc == {"output": str(tmp_path / "g.png"), "format": "png",
                   "bytes": (tmp_path / "g.png").stat().st_size, "subgraph": 4}
    assert (tmp_path / "g.png").read_bytes() == piped.stdout
    no_format = run_cli("render", str(CONTROL_FLOW), "-o", "-")
    assert no_format.returncode == 2 and no_format.stderr.count("\n") == 1


def test_run_dumps_every_tensor_to_stdout(tmp_path):
    piped = _cli("run", str(CONTROL_FLOW), "--dump-all", "-")
    assert piped.returncode == 0, piped.stderr
    assert run_cli("run", CONTROL_FLOW, "--dump-all", tmp_path / "d.npz").returncode == 0
    import io
    with np.load(io.BytesIO(piped.stdout)) as a, np.load(tmp_path / "d.npz") as b:
        assert sorted(a.files) == sorted(b.files) and len(a.files) > 10
        for k in a.files:
            assert np.array_equal(a[k], b[k])


def test_quant_writes_its_csv_to_stdout(tmp_path, capsys):
    assert main(["quant", str(INT8), "--samples", "1", "--csv", "-"]) == 0
    out = capsys.readouterr().out
    assert main(["quant", str(INT8), "--samples", "1", "--csv", str(tmp_path / "t.csv")]) == 0
    assert out == (tmp_path / "t.csv").read_text() and out.startswith("subgraph,")


def test_run_json_names_why_an_output_has_a_top_k(tmp_path, capsys):
    dump = tmp_path / "d.npz"
    assert main(["run", str(MODELS_DIR / "mobilenet_v2_float.tflite"), "--json",
                 "--dump-all", str(dump)]) == 0
    (output,) = _strict(capsys.readouterr().out)["outputs"]
    assert output["top_k_reason"] == "10 classes, a SOFTMAX output"
    with np.load(dump) as d:
        scores = d[f"s0_t{output['tensor']}"].reshape(-1)
    assert [t["index"] for t in output["top_k"]] == \
        np.argsort(-scores, kind="stable")[:5].tolist()


@pytest.mark.parametrize("model", ["ssd_mobilenet_v1.tflite", "palm_detection_lite.tflite",
                                   "multi_signature.tflite"])
def test_no_top_k_for_outputs_that_are_not_a_classifiers(model, capsys):
    """ssd's class ids, palm's per-anchor scores [1, 2016, 1] and a LOGISTIC vector are no
    classifier's scores: no top-k."""
    assert main(["run", str(MODELS_DIR / model)]) == 0
    assert "top-" not in capsys.readouterr().out


_ENTRY_CHILD = r"""
import gc, sys
import tflite_viewer.cli as cli
seen = {}
def fake_main(argv=None):
    seen["threshold"] = gc.get_threshold()[0]
    seen["frozen_before"] = gc.get_freeze_count()
    return 3
cli.main = fake_main
code = cli.entry(sys.argv[1:])
print(code, seen["threshold"], seen["frozen_before"], gc.get_freeze_count() > 0)
"""


@pytest.mark.parametrize("argv, threshold", [(["info", "x.tflite"], 20_000), ([], 700)])
def test_the_program_collects_cycles_less_often_and_not_at_exit(argv, threshold):
    """`entry` (the console script, ``python -m tflite_viewer``) runs a subcommand with the
    cyclic collector's first threshold raised (the window keeps Python's 700), returns
    main's code, and freezes what is left so the exit does not walk it."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _ENTRY_CHILD, *argv], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    code, seen, frozen_before, frozen_after = out.stdout.split()
    assert (int(code), int(seen), int(frozen_before), frozen_after) == (3, threshold, 0, "True")


def test_the_console_script_and_python_m_run_the_program():
    import tomllib
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"tflite-viewer": "tflite_viewer.cli:entry"}
    assert "entry()" in (root / "tflite_viewer" / "__main__.py").read_text()
