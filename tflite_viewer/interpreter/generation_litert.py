"""The generation loop run by LiteRT's builtin kernels, in a child process.

``run MODEL --generate K --compare-litert`` compares our ids with the ones LiteRT's
signature runners give when they run the same loop (`generation`'s module docstring):
the child transcribes that loop on its own (it imports nothing of tflite_viewer, only numpy
and LiteRT), so a mistake in our loop cannot hide in both.  The kernels are
BUILTIN_WITHOUT_DEFAULT_DELEGATES: LiteRT's builtin (optimized) kernels, no XNNPACK
delegate; its reference kernels lack the blockwise INT4 FULLY_CONNECTED path.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..model import Model
from .crosscheck import (LiteRTCrashError, LiteRTError, _deleted_afterwards, _model_file,
                         _refuse_side_files, _write_temp, require_litert,
                         tidy_litert_message)
from .generation import GenerationPlan

RESOLVER = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"

# The child's program: the loop, transcribed from the definition, on LiteRT's runners.
_CHILD = r"""
import json, sys
import numpy as np
cfg = json.loads(sys.argv[1])
try:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    li = Interpreter(model_path=cfg["model"],
                     experimental_op_resolver_type=getattr(OpResolverType, cfg["resolver"]))
    prefill = li.get_signature_runner(cfg["prefill"])
    decode = li.get_signature_runner(cfg["decode"])
    pre_in, dec_in = prefill.get_input_details(), decode.get_input_details()
    prompt, steps, kv = cfg["prompt"], cfg["steps"], cfg["kv"]
    k = len(prompt)

    def arr(details, name, values):
        d = details[name]
        return np.asarray(values).astype(d["dtype"]).reshape(d["shape"])

    n = int(np.prod(pre_in[cfg["tokens"]]["shape"]))
    ids = np.zeros(n, np.int64)
    ids[:k] = prompt
    feed = {cfg["tokens"]: arr(pre_in, cfg["tokens"], ids),
            cfg["position"]: arr(pre_in, cfg["position"], np.arange(n))}
    for name in kv:
        feed[name] = np.zeros(pre_in[name]["shape"], pre_in[name]["dtype"])
    out = prefill(**feed)
    cache = {name: out[name] for name in kv}
    tokens, logits = [], []
    for i in range(1, steps + 1):
        token = prompt[-1] if i == 1 else tokens[-1]
        pos = k - 1 if i == 1 else k - 2 + i
        feed = {cfg["tokens"]: arr(dec_in, cfg["tokens"], [token]),
                cfg["position"]: arr(dec_in, cfg["position"], [pos])}
        feed.update(cache)
        out = decode(**feed)
        cache = {name: out[name] for name in kv}
        row = np.asarray(out[cfg["logits"]])
        row = row.reshape(-1, row.shape[-1])[-1]
        tokens.append(int(np.argmax(row)))
        logits.append(row.astype(np.float64))
    np.save(cfg["out"], np.stack(logits))
    print(json.dumps({"tokens": tokens}))
except BaseException as exc:
    msg = (str(exc) or type(exc).__name__).strip().splitlines()
    sys.stderr.write("\nLITERT-ERROR: " + " ".join(m.strip() for m in msg if m.strip()) + "\n")
    sys.exit(3)
"""


@dataclass(frozen=True)
class LiteRTGeneration:
    """LiteRT's ids and each decode step's logits (float64, one row per step)."""

    tokens: list[int]
    logits: np.ndarray
    resolver: str = RESOLVER


def litert_generate(model: Model | str | os.PathLike, plan: GenerationPlan,
                    prompt: Sequence[int], steps: int, timeout: float = 600.0,
                    resolver: str = RESOLVER) -> LiteRTGeneration:
    """Run the loop with LiteRT in a child process (a `LiteRTError` when it cannot, a
    `LiteRTCrashError` when it crashes)."""
    require_litert()
    with tempfile.TemporaryDirectory(prefix="tflite-viewer-generate-") as tmp, \
            _deleted_afterwards() as temporary:
        if isinstance(model, Model) and getattr(model, "origin", None) is not None:
            m, path = model, _write_temp(bytes(np.asarray(model.data, np.uint8)), temporary)
        else:  # a section of a container is written out: LiteRT opens .tflite files
            m, path = _model_file(model, temporary)
        _refuse_side_files(m)  # LiteRT's Interpreter reads no external buffers
        out = os.path.join(tmp, "logits.npy")
        cfg = {"model": str(path), "resolver": resolver, "prompt": [int(t) for t in prompt],
               "steps": int(steps), "out": out, **{k: v for k, v in plan.to_dict().items()
                                                     if k != "context"}}
        env = dict(os.environ)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        try:
            proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cfg)],
                                  stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            raise LiteRTError(f"LiteRT did not finish the loop within {timeout:g} s") from exc
        if proc.returncode < 0:
            raise LiteRTCrashError(f"LiteRT crashed running the loop (signal "
                                   f"{-proc.returncode})", -proc.returncode)
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace")
            marker = err.rfind("LITERT-ERROR: ")
            why = err[marker + len("LITERT-ERROR: "):].strip() if marker >= 0 else \
                (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            raise LiteRTError(f"LiteRT cannot run the loop: {tidy_litert_message(why)}")
        lines = [ln for ln in proc.stdout.decode().splitlines() if ln.startswith("{")]
        tokens = json.loads(lines[-1])["tokens"]
        return LiteRTGeneration(tokens, np.load(out), resolver)
