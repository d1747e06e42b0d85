"""Where LiteRT put each tensor: its data address after a run, read through the Python
interpreter (``Interpreter.tensor``), in a child process (a bad model cannot crash pytest).

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
data = open(sys.argv[1], "rb").read()
it = I.Interpreter(model_content=data,
                   experimental_op_resolver_type=I.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
it.allocate_tensors()
for d in it.get_input_details():
    x = np.ones(d["shape"], d["dtype"]) if d["dtype"] == np.int32 else np.zeros(d["shape"], d["dtype"])
    it.set_tensor(d["index"], x)
it.invoke()
n_model = int(sys.argv[2])
addresses = {}
for i in json.loads(sys.argv[3]):
    try:
        addresses[i] = it.tensor(i)().__array_interface__["data"][0]
    except ValueError:
        addresses[i] = None
temporaries = []
for i in range(n_model, it._interpreter.NumTensors(0)):
    try:
        shape = [int(v) for v in it._interpreter.TensorSize(i, 0)]
    except ValueError:
        shape = None
    temporaries.append(shape)
print(json.dumps({"addresses": addresses, "temporaries": temporaries}))
"""


def litert_addresses(model: bytes, tensors: list[int], n_tensors: int) -> dict:
    """``{"addresses": {tensor: address or None}, "temporaries": [shape, ...]}`` of
    subgraph 0 after allocating and running once on zeros (int32 inputs: ones)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.tflite"
        path.write_bytes(model)
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(n_tensors),
                               json.dumps(tensors)], capture_output=True, text=True,
                              timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["addresses"] = {int(k): v for k, v in out["addresses"].items()}
    return out
