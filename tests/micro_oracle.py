"""TensorFlow Lite Micro's Python interpreter as the source of truth where LiteRT cannot run
a model (keyword_scrambled_8bit's int8-state SVDF crashes LiteRT 2.3.0)."""
from __future__ import annotations

import numpy as np


def tflm(model: bytes):
    """A TFLM interpreter that keeps every tensor (``GetTensor``) after invoke."""
    from tflite_micro.python.tflite_micro import runtime

    return runtime.Interpreter.from_bytes(
        model, arena_size=max(1 << 20, 20 * len(model)),
        intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors)


def tflm_tensor(interp, index: int) -> np.ndarray:
    """Tensor ``index`` of subgraph 0 as last computed."""
    entry = interp.GetTensor(index, 0)
    return np.asarray(entry["tensor_data"]).reshape(tuple(entry["shape"]))


# -- the arena TFLM plans (RecordingMicroAllocator) --------------------------------------

_ARENA_CHILD = r"""
import sys
from tflite_micro.python.tflite_micro import runtime
data = open(sys.argv[1], "rb").read()
try:
    interp = runtime.Interpreter.from_bytes(data, arena_size=int(sys.argv[2]))
except Exception as exc:
    sys.stderr.write("PYTHON-ERROR " + str(exc).replace("\n", " ") + "\n")
    sys.exit(3)
interp.print_allocations()
if len(sys.argv) > 3:
    interp.invoke()
    sys.stderr.write("INVOKED\n")
"""


def tflm_arena(model: bytes, arena_size: int = 256 << 20, invoke: bool = False,
               timeout: float = 120.0) -> dict:
    """What TFLM's RecordingMicroAllocator reports for ``model``: ``{"head", "tail",
    "total", "categories": {name: (used, requested, count)}, "log"}``, or
    ``{"error": text, "log": ...}`` when TFLM refuses the model.

    ``MicroPrintf`` writes to the C stderr, which Python cannot redirect, so the
    interpreter runs in a child process (a model TFLM crashes on cannot take pytest down).
    """
    import re
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.tflite"
        path.write_bytes(model)
        argv = [sys.executable, "-c", _ARENA_CHILD, str(path), str(arena_size)]
        if invoke:
            argv.append("invoke")
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    log = proc.stderr
    found = {k: int(v) for k, v in re.findall(
        r"Arena allocation (head|tail|total) (\d+) bytes", log)}
    if proc.returncode != 0 or "head" not in found:
        lines = [ln for ln in log.splitlines() if ln.strip()]
        return {"error": " | ".join(lines[-6:]) or f"exit {proc.returncode}", "log": log}
    cats = {m[0]: (int(m[1]), int(m[2]), int(m[3])) for m in re.findall(
        r"'([^']+)' used (\d+) bytes with alignment overhead \(requested (\d+) bytes for (\d+)",
        log)}
    return {**found, "categories": cats, "log": log, "invoked": "INVOKED" in log}
