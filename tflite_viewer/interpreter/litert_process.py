"""Running LiteRT in a child process, for the cross-check (`crosscheck`) and the LiteRT
side of a generation loop (`generation_litert`).

Some models make LiteRT abort or crash (a reference kernel aborting in
``allocate_tensors``, a segmentation fault), and that must not take the caller (a CLI run,
the window) down with it: `run_child` runs the model in a fresh Python process and reads
back the tensors it kept, a crash becoming a `LiteRTCrashError` and a refusal a
`LiteRTError` whose message `tidy_litert_message` makes readable.  The model files it
needs (a temporary copy of a model given as bytes) are deleted however the call ends
(`deleted_afterwards`).  Only the child imports LiteRT.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import signal as _signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..model import Model, load_model
from ..model.errors import TFLiteViewerError
from .crosscheck_report import LiteRTRun


class LiteRTError(TFLiteViewerError):
    """LiteRT could not run the model (it raised an error); ``reason`` says why, briefly."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


class LiteRTCrashError(LiteRTError):
    """The LiteRT child process died on a signal (abort, segmentation fault)."""

    def __init__(self, message: str, signal_number: int | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message, reason)
        self.signal = signal_number


# The child's program. It imports nothing of tflite_viewer, only numpy and LiteRT.
_WORKER = r"""
import json, sys, traceback
import numpy as np
cfg = json.loads(sys.argv[1])
try:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    data = np.load(cfg["inputs"], allow_pickle=True)
    li = Interpreter(model_path=cfg["model"],
                     experimental_op_resolver_type=getattr(OpResolverType, cfg["resolver"]),
                     experimental_preserve_all_tensors=cfg["preserve"])
    runner = li.get_signature_runner(cfg["signature"]) if cfg["signature"] is not None else None
    # tensors LiteRT hands out as objects (RESOURCE and VARIANT handles, strings) are never
    # read: get_tensor on a resource variable's handle is a segmentation fault
    details = {d["index"]: d for d in li.get_tensor_details(cfg["subgraph"])}
    readable = [i for i in range(cfg["num_tensors"])
                if i in details and details[i]["dtype"] is not np.object_
                and np.dtype(details[i]["dtype"]) != np.dtype(object)]
    result, names = {}, []
    for step in range(cfg["steps"]):
        arrays = [data["s%d_i%d" % (step, k)] for k in range(len(cfg["names"]))]
        if runner is not None:
            outs = runner(**dict(zip(cfg["names"], arrays)))
        else:
            inputs = {d["index"]: d for d in li.get_input_details()}
            if step == 0:
                for idx, arr in zip(cfg["tensors"], arrays):
                    if tuple(inputs[idx]["shape"]) != tuple(arr.shape):
                        li.resize_tensor_input(idx, arr.shape, strict=False)
                li.allocate_tensors()
            for idx, arr in zip(cfg["tensors"], arrays):
                li.set_tensor(idx, arr)
            li.invoke()
            outs = {d["name"]: li.get_tensor(d["index"]) for d in li.get_output_details()}
        # keeping every tensor: all of them; an exposed copy: its outputs and inputs (every
        # other tensor's memory may have been reused by then)
        if cfg["preserve"]:
            wanted = readable
        else:
            wanted = sorted({d["index"] for d in li.get_output_details()}
                            | set(cfg["tensors"])) if runner is None else sorted(
                {int(i) for i in cfg["exposed"]} | set(cfg["tensors"]))
        for i in wanted:
            if i not in readable:
                continue
            try:
                a = li.get_tensor(i, cfg["subgraph"])
            except Exception:
                continue
            if a is None or getattr(a, "dtype", None) is None or a.dtype == object:
                continue
            result["s%d_t%d" % (step, i)] = np.array(a, copy=True)
        # the composites' decompositions it called once each: their tensors too
        for g in (cfg["inner"] if cfg["preserve"] else []):
            for d in li.get_tensor_details(g):
                if d["dtype"] is np.object_ or np.dtype(d["dtype"]) == np.dtype(object):
                    continue
                try:
                    a = li.get_tensor(d["index"], g)
                except Exception:
                    continue
                if a is not None and getattr(a, "dtype", None) is not None and a.dtype != object:
                    result["s%d_g%d_t%d" % (step, g, d["index"])] = np.array(a, copy=True)
        names = []
        for k, (name, a) in enumerate(outs.items()):
            a = np.asarray(a)
            if a.dtype != object:
                result["s%d_o%d" % (step, k)] = a
                names.append(name)
    with open(cfg["out"], "wb") as f:
        np.savez(f, **result)
    with open(cfg["out"] + ".json", "w") as f:
        json.dump({"outputs": names}, f)
except BaseException as exc:
    msg = (str(exc) or type(exc).__name__).strip().splitlines()
    sys.stderr.write("\nLITERT-ERROR: " + " ".join(m.strip() for m in msg if m.strip()) + "\n")
    sys.stderr.flush()
    sys.exit(3)
"""


_RUN_TOGETHER = re.compile(
    r"\.(?=[A-Za-z_])(?!(?:tflite|cc|h|py|so|npz|npy|json|txt|bin|pb)\b)")
_NUMBER = re.compile(r"\d+")


def tidy_litert_message(text: str, limit: int = 600) -> str:
    """LiteRT's error reporter runs its messages together ("... Was 3.Tensor 33 has ...")
    and repeats one per tensor: split them into sentences, fold repeats that differ only
    in their numbers ("Tensor 33 has ... (also 36, 40, ...: 14 in all)"), and cut only
    between sentences."""
    pieces: list[str] = []
    for part in _RUN_TOGETHER.split(" ".join(text.split())):
        part = part.strip()
        if not part:
            continue
        pieces.append(part)
    groups: dict[str, list[str]] = {}
    for p in pieces:
        p = p if p.endswith((".", "!", "?", ":")) else p + "."
        groups.setdefault(_NUMBER.sub("#", p), []).append(p)
    out = []
    for sentences in groups.values():
        first = sentences[0]
        if len(sentences) > 1:
            firsts = _NUMBER.findall(first)
            others = []
            for other in sentences[1:]:
                nums = _NUMBER.findall(other)
                diff = [b for a, b in zip(firsts, nums) if a != b]
                if diff and diff[0] not in others:
                    others.append(diff[0])
            if others:
                shown = ", ".join(others[:8]) + (", ..." if len(others) > 8 else "")
                first = first.rstrip(".") + f" (also {shown}: {len(sentences)} in all)."
            else:
                first += f" [{len(sentences)} times]"
        out.append(first)
    message = ""
    for k, sentence in enumerate(out):
        candidate = (message + " " + sentence).strip()
        if len(candidate) > limit and message:
            return message + f" (and {len(out) - k} more message{'s' if len(out) - k > 1 else ''})"
        message = candidate
    return message


def _signal_name(number: int) -> str:
    try:
        return _signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


#: how LiteRT keeps the intermediate tensors for the comparison: every tensor, or an
#: exposed copy of the model (every operator output made a model output)
PRESERVE, EXPOSED = "preserve", "exposed"
LITERT_MODES = ("auto", PRESERVE, EXPOSED)


def run_child(model_path: str, steps: list[list[np.ndarray]], names: list[str],
               tensors: list[int], signature: str | None, subgraph: int, num_tensors: int,
               resolver: str, timeout: float, preserve: bool = True,
               exposed: list[int] | None = None,
               inner: list[int] | None = None) -> list[LiteRTRun]:
    """One LiteRT child process invoking the model once per entry of ``steps`` (the
    state of resource variables carries from one invocation to the next); a `LiteRTRun`
    per invocation."""
    label = resolver if preserve else f"{resolver}, exposed copy"
    with tempfile.TemporaryDirectory(prefix="tflite-viewer-litert-") as tmp:
        in_path = os.path.join(tmp, "inputs.npz")
        out_path = os.path.join(tmp, "tensors.npz")
        with open(in_path, "wb") as f:
            np.savez(f, **{f"s{j}_i{k}": a for j, arrays in enumerate(steps)
                           for k, a in enumerate(arrays)})
        cfg = {"model": model_path, "inputs": in_path, "out": out_path, "resolver": resolver,
               "signature": signature, "names": names, "tensors": tensors,
               "subgraph": subgraph, "num_tensors": num_tensors, "preserve": preserve,
               "steps": len(steps), "exposed": exposed or [], "inner": inner or []}
        env = dict(os.environ)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-c", _WORKER, json.dumps(cfg)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            raise LiteRTError(f"LiteRT ({label}) did not finish within {timeout:g} s: "
                              "cannot cross-check") from exc
        seconds = time.perf_counter() - t0
        if proc.returncode < 0:
            sig = -proc.returncode
            raise LiteRTCrashError(f"LiteRT crashed on this model (signal {sig}): cannot "
                                   "cross-check", sig,
                                   f"LiteRT {label} crashed ({_signal_name(sig)})")
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace")
            marker = err.rfind("LITERT-ERROR: ")
            if marker >= 0:
                why = err[marker + len("LITERT-ERROR: "):].strip()
            else:
                lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
                why = lines[-1] if lines else f"exit status {proc.returncode}"
            why = tidy_litert_message(why)
            raise LiteRTError(f"LiteRT ({label}) cannot run this model: {why}",
                              f"LiteRT {label} failed: {why}")
        with np.load(out_path, allow_pickle=False) as data:
            found = {k: np.array(data[k]) for k in data.files}
        with open(out_path + ".json") as f:
            out_names = json.load(f)["outputs"]
    runs = []
    for j in range(len(steps)):
        head = f"s{j}_"
        tensors_out = {int(k[len(head) + 1:]): v for k, v in found.items()
                       if k.startswith(head + "t")}
        inner_out: dict[int, dict[int, np.ndarray]] = {}
        for k, v in found.items():
            if k.startswith(head + "g"):
                g, t = k[len(head) + 1:].split("_t")
                inner_out.setdefault(int(g), {})[int(t)] = v
        outputs = {name: found[f"{head}o{k}"] for k, name in enumerate(out_names)
                   if f"{head}o{k}" in found}
        run = LiteRTRun(resolver, subgraph, tensors_out, outputs, seconds / len(steps),
                        inner=inner_out)
        run.mode = PRESERVE if preserve else EXPOSED
        runs.append(run)
    return runs


@contextlib.contextmanager
def deleted_afterwards():
    """A list for the temporary model files of one call, deleted however the call ends (a
    LiteRT crash must not leave copies of the model behind)."""
    tmp: list[str] = []
    try:
        yield tmp
    finally:
        for p in tmp:
            with contextlib.suppress(OSError):
                os.unlink(p)


def model_file(model: Model | str | os.PathLike | bytes, tmp: list) -> tuple[Model, str]:
    """The model and a file path LiteRT can open (a temporary file for bytes)."""
    if isinstance(model, Model):
        if model.path is not None:
            return model, str(model.path)
        data = bytes(np.asarray(model.data, dtype=np.uint8))
        return model, write_temp(data, tmp)
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        return load_model(data), write_temp(data, tmp)
    return load_model(model), str(Path(model))


def refuse_side_files(m: Model) -> None:
    """LiteRT's Interpreter, the cross-check's reference, does not read external buffers
    (it reports "Input tensor N lacks data"): say so in the user's terms."""
    n = sum(int((sg.external_buffer_ids != 0).sum()) for sg in m.subgraphs)
    if n:
        names = ", ".join(g.name for g in m.external_buffer_groups) or "its side files"
        raise LiteRTError(f"LiteRT's Interpreter does not read external buffers: {n} "
                          f"tensor(s) of this model keep their data in {names}; the "
                          "cross-check needs a model with its weights inline",
                          "LiteRT's Interpreter does not read side files")


def write_temp(data: bytes, tmp: list) -> str:
    fd, path = tempfile.mkstemp(suffix=".tflite", prefix="tflite-viewer-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    tmp.append(path)
    return path
