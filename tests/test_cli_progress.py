"""Progress on stderr: the printer `quant`, `quantize` and `run` share, and `run`'s use of
it (on a terminal, or with --progress; never on its own when stdout carries JSON)."""
from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from tests.conftest import MODELS_DIR
from tflite_viewer.cli.common import ProgressPrinter
from tflite_viewer.model import load_model


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tflite_viewer", "run", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_on_a_terminal_one_line_is_rewritten_and_ended_at_the_total():
    out = _Terminal()
    printer = ProgressPrinter(out)
    for done in range(4):
        printer(done, 3, f"op {done}")
    assert out.getvalue() == "".join(f"\r[{d}/3] {f'op {d}':70}" for d in range(4)) + "\n"
    out = _Terminal()
    printer = ProgressPrinter(out)
    printer(1, 3, "x" * 100)  # cut to the width; left open ...
    printer.end()  # ... until the work stops short of its total
    assert out.getvalue() == f"\r[1/3] {'x' * 70}\n"


def test_elsewhere_a_line_per_tenth_also_when_reports_are_sparse():
    out = io.StringIO()
    printer = ProgressPrinter(out)
    for done in range(101):  # every step, as quant's samples
        printer(done, 100, "m")
    assert out.getvalue().splitlines() == [f"[{d}/100] m" for d in range(0, 101, 10)]
    out = io.StringIO()
    printer = ProgressPrinter(out)
    for done in (0, 7, 13, 14, 26, 100):  # timed reports, as run's
        printer(done, 100, "m")
    assert [ln.split("]")[0] for ln in out.getvalue().splitlines()] == [
        "[0/100", "[13/100", "[26/100", "[100/100"]


def test_run_progress_lines_reach_the_plans_total():
    model = MODELS_DIR / "palm_detection_lite.tflite"
    n_ops = len(load_model(model).subgraphs[0].operators)
    r = _run(model, "--progress")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == f"[0/{n_ops}] subgraph 0 op 0 (DEQUANTIZE)"
    assert lines[-1].startswith(f"[{n_ops}/{n_ops}] done in ")
    done = [int(ln[1:ln.index("/")]) for ln in lines]
    assert done == sorted(done) and all(ln.startswith("[") for ln in lines)
    assert r.stdout.startswith("Model ")  # the report itself, on stdout as ever


def test_run_prints_no_progress_off_a_terminal_unless_asked():
    model = MODELS_DIR / "control_flow.tflite"
    quiet = _run(model)
    assert quiet.returncode == 0 and quiet.stderr == ""
    asked = _run(model, "--progress", "--json")  # stderr only: stdout stays one document
    assert asked.returncode == 0
    assert json.loads(asked.stdout)["ops"] > 0
    assert asked.stderr.splitlines()[-1].startswith("[4/4] done in ")


def test_progress_does_not_go_with_generate():
    r = _run(MODELS_DIR / "control_flow.tflite", "--generate", "2", "--progress")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "tflite-viewer run: error: --progress goes with a single run, not --generate (its "
        "report lists every call)"]


def _run_on_a_terminal(*args: str) -> tuple[int, str, str]:
    """`run` with its stderr on a pseudo-terminal (stdout a pipe): (exit code, stdout,
    what the terminal received)."""
    import os
    import pty
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "tflite_viewer", "run", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    received = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        received += chunk
    os.close(master)
    stdout = proc.stdout.read()
    return proc.wait(timeout=300), stdout, received.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_on_a_terminal_run_shows_progress_unless_stdout_carries_json():
    model = MODELS_DIR / "control_flow.tflite"
    code, stdout, terminal = _run_on_a_terminal(model)
    assert code == 0 and stdout.startswith("Model ")
    assert terminal.startswith("\r[0/4] subgraph 0 op 0 (WHILE)")
    assert terminal.rstrip().split("\r")[-1].startswith("[4/4] done in ")
    code, stdout, terminal = _run_on_a_terminal(model, "--json")
    assert code == 0 and json.loads(stdout)["ops"] > 0 and terminal == ""
