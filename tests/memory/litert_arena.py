"""Where LiteRT put each tensor: its data address after a run, read through the Python
interpreter (``Interpreter.tensor``), in a child process (a model LiteRT crashes on cannot
take pytest down; one child serves a whole list, a new one continues after a crash).

LiteRT reports no arena size, but every tensor of its non-persistent arena points into one
block, so the addresses minus the block's start are the planner's offsets.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, sys
import numpy as np
from ai_edge_litert import interpreter as I
for job in json.loads(sys.stdin.read()):
    print("START " + str(job["id"]), flush=True)
    if job["path"] is None:  # the harness's own check: a child that dies inside a job
        import ctypes
        ctypes.string_at(0)
    try:
        it = I.Interpreter(model_path=job["path"], experimental_op_resolver_type=
                           I.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        it.allocate_tensors()
        for d in it.get_input_details():
            zeros = np.zeros(d["shape"], d["dtype"])
            it.set_tensor(d["index"], zeros + 1 if d["dtype"] == np.int32 else zeros)
        it.invoke()
        addresses = {}
        for i in job["tensors"]:
            try:
                addresses[i] = it.tensor(i)().__array_interface__["data"][0]
            except ValueError:
                addresses[i] = None
        temporaries = []
        for i in range(job["n"], it._interpreter.NumTensors(0)):
            try:
                temporaries.append([int(v) for v in it._interpreter.TensorSize(i, 0)])
            except ValueError:
                temporaries.append(None)
        out = {"addresses": addresses, "temporaries": temporaries}
    except Exception as exc:
        out = {"error": str(exc).replace("\n", " ")}
    print("RESULT " + json.dumps(out), flush=True)
"""


def litert_addresses_many(jobs: list[tuple[bytes | None, list[int], int]]) -> list[dict]:
    """For each (model, tensors, number of model tensors): ``{"addresses": {tensor: address
    or None}, "temporaries": [shape, ...]}`` of subgraph 0 after allocating and running
    once on zeros (int32 inputs: ones), or ``{"error": text}``.  A model of None makes the
    child segfault there (to test that a crash is reported and the list goes on)."""
    results: list[dict | None] = [None] * len(jobs)
    with tempfile.TemporaryDirectory() as tmp:
        specs = []
        for i, (data, tensors, n) in enumerate(jobs):
            path = Path(tmp) / f"m{i}.tflite"
            if data is not None:
                path.write_bytes(data)
            specs.append({"id": i, "path": None if data is None else str(path),
                          "tensors": tensors, "n": n})
        todo = specs
        while todo:
            proc = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(todo),
                                  capture_output=True, text=True, timeout=600)
            current = None
            for line in proc.stdout.splitlines():
                if line.startswith("START "):
                    current = int(line[6:])
                elif line.startswith("RESULT ") and current is not None:
                    out = json.loads(line[7:])
                    if "addresses" in out:
                        out["addresses"] = {int(k): v for k, v in out["addresses"].items()}
                    results[current] = out
                    current = None
            if current is not None:  # the child died inside this model
                results[current] = {"error": f"LiteRT crashed (exit {proc.returncode})"}
            todo = [s for s in todo if results[s["id"]] is None]
            if todo and proc.returncode == 0:  # pragma: no cover - nothing was reported
                raise RuntimeError(proc.stderr[-2000:])
    return results  # type: ignore[return-value]


def litert_addresses(model: bytes, tensors: list[int], n_tensors: int) -> dict:
    """`litert_addresses_many` of one model; raises RuntimeError when LiteRT fails."""
    out = litert_addresses_many([(model, tensors, n_tensors)])[0]
    if "error" in out:
        raise RuntimeError(out["error"])
    return out
