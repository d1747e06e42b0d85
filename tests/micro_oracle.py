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
import os, sys
from tflite_micro.python.tflite_micro import runtime
arena, invoke = int(sys.argv[1]), sys.argv[2] == "1"
for path in sys.argv[3:]:
    os.write(2, ("=== MODEL " + path + "\n").encode())
    data = open(path, "rb").read()
    interp = None
    try:
        interp = runtime.Interpreter.from_bytes(data, arena_size=arena)
        interp.print_allocations()
        if invoke:
            interp.invoke()
            os.write(2, b"INVOKED\n")
    except Exception as exc:
        os.write(2, ("PYTHON-ERROR " + str(exc).replace("\n", " ") + "\n").encode())
    interp = None
    os.write(2, b"=== DONE\n")
"""


def _parse(log: str) -> dict:
    import re
    found = {k: int(v) for k, v in re.findall(
        r"Arena allocation (head|tail|total) (\d+) bytes", log)}
    if "head" not in found or "PYTHON-ERROR" in log:
        lines = [ln for ln in log.splitlines() if ln.strip()]
        return {"error": " | ".join(lines[-6:]) or "no output", "log": log}
    cats = {m[0]: (int(m[1]), int(m[2]), int(m[3])) for m in re.findall(
        r"'([^']+)' used (\d+) bytes with alignment overhead \(requested (\d+) bytes for (\d+)",
        log)}
    return {**found, "categories": cats, "log": log, "invoked": "INVOKED" in log}


def tflm_arenas(models: list[bytes], arena_size: int = 256 << 20, invoke: bool = False,
                timeout: float = 300.0) -> list[dict]:
    """What TFLM's RecordingMicroAllocator reports for each model: ``{"head", "tail",
    "total", "categories": {name: (used, requested, count)}, "log"}``, or
    ``{"error": text, "log": ...}`` when TFLM refuses (or aborts on) the model.

    ``MicroPrintf`` writes to the C stderr, which Python cannot redirect, so TFLM runs in a
    child process (one for the whole list; a model TFLM aborts on is reported as an error
    and the rest run in a new child), which also keeps a crash from taking pytest down.
    """
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    results: list[dict | None] = [None] * len(models)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, data in enumerate(models):
            path = Path(tmp) / f"m{i}.tflite"
            path.write_bytes(data)
            paths.append(str(path))
        start = 0
        while start < len(models):
            proc = subprocess.run([sys.executable, "-c", _ARENA_CHILD, str(arena_size),
                                   "1" if invoke else "0", *paths[start:]],
                                  capture_output=True, text=True, timeout=timeout)
            chunks = proc.stderr.split("=== MODEL ")[1:]
            for chunk in chunks:
                i = paths.index(chunk.split("\n", 1)[0])
                body = chunk.split("\n", 1)[1] if "\n" in chunk else ""
                if "=== DONE" in body:
                    results[i] = _parse(body.split("=== DONE")[0])
                else:  # the child died inside this model
                    results[i] = {"error": f"TFLM aborted (exit {proc.returncode}): "
                                           + " | ".join(body.strip().splitlines()[-3:]),
                                  "log": body}
            done = [r is not None for r in results]
            start = done.index(False) if False in done else len(models)
            if not chunks:  # pragma: no cover - the child could not even start
                raise RuntimeError(proc.stderr[-2000:])
    return results  # type: ignore[return-value]


def tflm_arena(model: bytes, **kwargs) -> dict:
    """`tflm_arenas` of one model."""
    return tflm_arenas([model], **kwargs)[0]
