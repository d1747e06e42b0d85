"""The memory budget bounds the run in the process, not each tensor alone (`budget`):
seeded inputs, the interpreter's tensors (its copies of the inputs included) and the
kernels' scratch together.  Checked in a child process under an address-space limit
(RLIMIT_AS, as ``ulimit -v`` sets it) on a model whose one input is large: the run either
finishes within the limit, peaking within three times its largest tensor above where it
started, or ends with the documented budget error on one line, never a kill or a
traceback."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tflite_viewer.interpreter.inputs import complete_inputs
from tflite_viewer.interpreter.budget import run_reserve
from tflite_viewer.interpreter.errors import AllocationError
from tflite_viewer.model import load_model

from .singleop import Input, single_op_model

# imports what the run needs, then limits its own address space to what it maps now plus
# ``extra`` bytes, runs the command line and writes its resident peaks (KiB) to ``report``
CHILD = r"""
import json, resource, sys
import numpy
import tflite_viewer.cli.run, tflite_viewer.interpreter, tflite_viewer.interpreter.outputs
from tflite_viewer.cli import main
extra, report = int(sys.argv[1]), sys.argv[2]
with open("/proc/self/statm") as f:
    mapped = int(f.read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (mapped + extra, mapped + extra))
start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
code = main(sys.argv[3:])
with open(report, "w") as f:
    json.dump({"start": start, "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}, f)
sys.exit(code)
"""


def _requantize_model(tmp_path, input_bytes: int):
    """INT32[n] -> QUANTIZE -> INT8[n]: the issue's shape of model (one requantization of
    a large integer input), its output a quarter of its input."""
    n = input_bytes // 4
    path = tmp_path / "big_input.tflite"
    path.write_bytes(single_op_model("QUANTIZE", [Input((n,), np.int32, (0.5, 0))],
                                     [(np.int8, (0.25, 0))], output_shapes=[(n,)]))
    return path


def _run(tmp_path, model, extra: int, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / "peaks.json"
    report.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(extra), str(report), "run",
                           str(model), *args], capture_output=True, text=True, timeout=900)
    peaks = json.loads(report.read_text()) if report.exists() else {}
    return proc, peaks


def _one_budget_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])  # not killed
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "allocation limit of" in lines[0] and "Unable to allocate" not in lines[0]
    return lines[0]


def _check_budget(tmp_path, size: int) -> None:
    model = _requantize_model(tmp_path, size)
    # room for the run: it finishes, within three times its largest tensor (the input)
    proc, peaks = _run(tmp_path, model, 4 * size + (256 << 20))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    assert "INT8[" in proc.stdout
    grown = (peaks["peak"] - peaks["start"]) * 1024
    assert grown <= 3 * size, (grown, size)
    # a budget below what the run holds together: refused before anything is made
    limit = 2 * size
    line = _one_budget_line(_run(tmp_path, model, 4 * size + (256 << 20),
                                 "--max-memory", str(limit))[0])
    assert f"allocation limit of {limit:,} bytes" in line and "--max-memory" in line
    # an address space too small for it: the default budget follows ``ulimit -v``
    _one_budget_line(_run(tmp_path, model, 3 * size // 2)[0])


def test_a_run_stays_within_its_budget_and_the_address_space(tmp_path):
    _check_budget(tmp_path, 64 << 20)


@pytest.mark.slow
def test_a_run_with_a_1_gb_input_stays_within_its_budget(tmp_path):
    _check_budget(tmp_path, 1 << 30)


def test_the_inputs_count_with_the_tensors_against_the_budget(tmp_path):
    """A budget each part fits but not their sum: the inputs (64 MiB) with the
    interpreter's tensors (80 MiB, its copy of the input included) and the scratch."""
    model = load_model(_requantize_model(tmp_path, 64 << 20).read_bytes())
    tensors = (64 << 20) + (16 << 20)
    complete_inputs(model, {}, max_bytes=100 << 20)  # the inputs alone fit
    with pytest.raises(AllocationError, match="with the 150,994,944 bytes of the run.s tensors"):
        complete_inputs(model, {}, max_bytes=100 << 20, reserved=run_reserve(tensors))
    assert run_reserve(tensors) == tensors + (64 << 20)
    assert run_reserve(1000) == 9000  # a small model's scratch: eight times its tensors


def test_the_debug_session_counts_its_inputs_with_its_tensors(tmp_path):
    """The window's runs (the Qt-free `DebugSession`): the same budget, its interpreter's."""
    from tflite_viewer.interpreter import Interpreter
    from tflite_viewer.interpreter.session import DebugSession
    model = load_model(_requantize_model(tmp_path, 16 << 20).read_bytes())
    fits = Interpreter(model, max_allocation_bytes=200 << 20)
    assert DebugSession(model, interpreter=fits).inputs["in0"].nbytes == 16 << 20
    tight = Interpreter(model, max_allocation_bytes=48 << 20)  # its tensors (20 MiB) fit
    with pytest.raises(AllocationError, match="allocation limit of 50,331,648 bytes"):
        DebugSession(model, interpreter=tight)


def test_memory_refused_to_a_kernel_is_the_budget_error_naming_the_op():
    from types import SimpleNamespace

    from tflite_viewer.interpreter.errors import ExecutionError, op_failure
    sg, node = SimpleNamespace(index=0, name="main"), SimpleNamespace(index=3, name="QUANTIZE")
    err = op_failure(sg, node, MemoryError("Unable to allocate 2.00 GiB"))
    assert isinstance(err, AllocationError) and not isinstance(err, ExecutionError)
    assert str(err).startswith("subgraph 0 (main), op 3 (QUANTIZE): out of memory")
    assert isinstance(op_failure(sg, node, ValueError("bad")), ExecutionError)


def test_the_analysis_samples_count_together(monkeypatch):
    """`quant`'s seeded samples: each is made within the budget left by those before it."""
    from tflite_viewer.quant import samples
    from tests.conftest import MODELS_DIR
    model = load_model(MODELS_DIR / "small_cnn_dilated_int8.tflite")
    reserved = []
    real = samples.seeded_inputs

    def spy(*args, **kwargs):
        reserved.append(kwargs.get("reserved", 0))
        return real(*args, **kwargs)

    monkeypatch.setattr(samples, "seeded_inputs", spy)
    made = samples.seeded_samples(model, 3)
    per_sample = sum(np.asarray(a).nbytes for a in made[0])  # (dequantized: float64)
    assert reserved == [0, per_sample, 2 * per_sample]
