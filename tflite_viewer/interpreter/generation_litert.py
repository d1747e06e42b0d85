"""The generation loop run by LiteRT's builtin kernels, in a child process.

``run MODEL --generate K --compare-litert`` compares our ids with the ones LiteRT's
signature runners give when they run the same loop (`generation`'s module docstring) on
the same plan (`generation_plan`: the prefill chunks, the names, the mask input): the
child transcribes that loop on its own (it imports nothing of tflite_viewer, only numpy
and LiteRT; it builds the causal mask itself), so a mistake in our loop cannot hide in
both.  The kernels are
BUILTIN_WITHOUT_DEFAULT_DELEGATES by default: LiteRT's builtin (optimized) kernels, no
XNNPACK delegate; its reference kernels lack the blockwise INT4 FULLY_CONNECTED path.
Against the interpreter's ``xnnpack`` kernel set the loop runs on BUILTIN, LiteRT's
default interpreter with its XNNPACK delegate, as LiteRT-LM computes on a CPU.
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
from .crosscheck import require_litert
from .litert_process import (LiteRTCrashError, LiteRTError, deleted_afterwards, model_file,
                             refuse_side_files, tidy_litert_message, write_temp)
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
    runners = {key: li.get_signature_runner(key)
               for key in {c[0] for c in cfg["chunks"]} | {cfg["decode"]}}
    details = {key: r.get_input_details() for key, r in runners.items()}
    prompt, steps, kv, mask = cfg["prompt"], cfg["steps"], cfg["kv"], cfg["mask"]
    k = len(prompt)

    def arr(key, name, values):
        d = details[key][name]
        return np.asarray(values).astype(d["dtype"]).reshape(d["shape"])

    def causal(key, first):
        d = details[key][mask]
        rows, cols = d["shape"][-2], d["shape"][-1]
        m = np.zeros((rows, cols), np.float32)
        for r in range(rows):
            m[r, first + r + 1:] = -np.inf
        return m.astype(d["dtype"]).reshape(d["shape"])

    cache = None
    for key, n, start, count in cfg["chunks"]:
        ids = np.zeros(n, np.int64)
        ids[:count] = prompt[start:start + count]
        feed = {cfg["tokens"]: arr(key, cfg["tokens"], ids),
                cfg["position"]: arr(key, cfg["position"], np.arange(start, start + n))}
        if mask:
            feed[mask] = causal(key, start)
        for name in kv:
            feed[name] = cache[name] if cache is not None else \
                np.zeros(details[key][name]["shape"], details[key][name]["dtype"])
        out = runners[key](**feed)
        cache = {name: out[name] for name in kv}
    tokens, logits = [], []
    for i in range(1, steps + 1):
        token = prompt[-1] if i == 1 else tokens[-1]
        pos = k - 2 + i
        key = cfg["decode"]
        feed = {cfg["tokens"]: arr(key, cfg["tokens"], [token]),
                cfg["position"]: arr(key, cfg["position"], [pos])}
        if mask:
            feed[mask] = causal(key, pos)
        feed.update(cache)
        out = runners[key](**feed)
        cache = {name: out[name] for name in kv}
        row = np.asarray(out[cfg["logits"]])
        row = row.reshape(-1, row.shape[-1])[-1]
        tokens.append(int(np.argmax(row)))
        logits.append(row)
    np.save(cfg["out"], np.stack(logits))
    print(json.dumps({"tokens": tokens}))
except BaseException as exc:
    msg = (str(exc) or type(exc).__name__).strip().splitlines()
    sys.stderr.write("\nLITERT-ERROR: " + " ".join(m.strip() for m in msg if m.strip()) + "\n")
    sys.exit(3)
"""


@dataclass(frozen=True)
class LiteRTGeneration:
    """LiteRT's ids and each decode step's logits (as the model gives them, one row per
    step)."""

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
            deleted_afterwards() as temporary:
        if isinstance(model, Model) and getattr(model, "origin", None) is not None:
            m, path = model, write_temp(bytes(np.asarray(model.data, np.uint8)), temporary)
        else:  # a section of a container is written out: LiteRT opens .tflite files
            m, path = model_file(model, temporary)
        refuse_side_files(m)  # LiteRT's Interpreter reads no external buffers
        out = os.path.join(tmp, "logits.npy")
        cfg = {"model": str(path), "resolver": resolver, "prompt": [int(t) for t in prompt],
               "steps": int(steps), "out": out, "chunks": plan.chunks(len(prompt)),
               "decode": plan.decode, "tokens": plan.tokens, "position": plan.position,
               "logits": plan.logits, "kv": list(plan.kv), "mask": plan.mask}
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
