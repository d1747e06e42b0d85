"""The LiteRT cross-check backend: run a model in LiteRT and in this interpreter on the same
inputs and compare every operator output.

>>> from tflite_viewer.interpreter.crosscheck import compare_with_litert
>>> report = compare_with_litert("model.tflite", {"input": x})
>>> report.ok, report.first_divergence
>>> print(report.format_table())

LiteRT runs with ``experimental_preserve_all_tensors=True`` (every intermediate tensor stays
readable) and, by default, its reference kernels (``BUILTIN_REF``), falling back to its
optimized kernels without delegates when the reference kernels cannot run the model.
LiteRT runs in a **child process**: some models make it abort or crash (a reference kernel
aborting in ``allocate_tensors``, a segmentation fault), and that must not take the caller
(a CLI run, the window) down with it.  A crash becomes a `LiteRTCrashError`.

Nothing here imports LiteRT: `litert_available` looks for the ``ai_edge_litert`` package
without importing it (it is only in the ``litert`` and ``test`` extras), and only the
child process imports it.

LiteRT exposes the tensors of the subgraph it ran, not those of the WHILE/IF bodies it
called, so the comparison covers every operator output of the entry subgraph: end to end
and op-isolated, with the metrics and tolerances described in `.comparison`.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import signal as _signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..model import Model, load_model
from ..model.errors import TFLiteViewerError
# the comparison itself lives in .comparison; these names stay importable from here
from .comparison import (DEFAULT_TOLERANCE, DEFAULT_UNITS, KERNELS, MODES,  # noqa: F401
                         OPTIMIZED_UNITS, CrossCheckReport, Error, LiteRTRun, TensorRow,
                         compare_runs, compare_tensor, isolated_run, real_values,
                         resolve_mode, similarity)
from .inputs import complete_inputs, input_specs, positional

DEFAULT_TIMEOUT = 600.0
RESOLVERS = ("BUILTIN_REF", "BUILTIN", "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
#: what a failed BUILTIN_REF run falls back to: LiteRT's optimized kernels, without the
#: default (XNNPACK) delegate, which would hide the intermediate tensors it fuses
FALLBACK_RESOLVER = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"


class LiteRTUnavailableError(TFLiteViewerError):
    """ai-edge-litert is not installed."""


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


def litert_available() -> bool:
    """Whether ai-edge-litert (LiteRT's Python package) is installed; does not import it."""
    try:
        return importlib.util.find_spec("ai_edge_litert") is not None
    except (ImportError, ValueError):
        return False


def require_litert() -> None:
    if not litert_available():
        raise LiteRTUnavailableError(
            "LiteRT is not installed: the cross-check needs the ai-edge-litert package "
            "(pip install 'tflite-viewer[litert]')")


# ------------------------------------------------------------------------------------------
# running LiteRT in a child process
# ------------------------------------------------------------------------------------------
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
                     experimental_preserve_all_tensors=True)
    arrays = [data["i%d" % k] for k in range(len(cfg["names"]))]
    if cfg["signature"] is not None:
        runner = li.get_signature_runner(cfg["signature"])
        outs = runner(**dict(zip(cfg["names"], arrays)))
    else:
        details = {d["index"]: d for d in li.get_input_details()}
        for idx, arr in zip(cfg["tensors"], arrays):
            if tuple(details[idx]["shape"]) != tuple(arr.shape):
                li.resize_tensor_input(idx, arr.shape, strict=False)
        li.allocate_tensors()
        for idx, arr in zip(cfg["tensors"], arrays):
            li.set_tensor(idx, arr)
        li.invoke()
        outs = {d["name"]: li.get_tensor(d["index"]) for d in li.get_output_details()}
    result = {}
    for i in range(cfg["num_tensors"]):
        try:
            a = li.get_tensor(i, cfg["subgraph"])
        except Exception:
            continue
        if a is None or getattr(a, "dtype", None) is None or a.dtype == object:
            continue
        result["t%d" % i] = np.array(a, copy=True)
    names = []
    for k, (name, a) in enumerate(outs.items()):
        a = np.asarray(a)
        if a.dtype != object:
            result["o%d" % k] = a
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


def _run_child(model_path: str, arrays: list[np.ndarray], names: list[str],
               tensors: list[int], signature: str | None, subgraph: int, num_tensors: int,
               resolver: str, timeout: float) -> LiteRTRun:
    with tempfile.TemporaryDirectory(prefix="tflite-viewer-litert-") as tmp:
        in_path = os.path.join(tmp, "inputs.npz")
        out_path = os.path.join(tmp, "tensors.npz")
        with open(in_path, "wb") as f:
            np.savez(f, **{f"i{k}": a for k, a in enumerate(arrays)})
        cfg = {"model": model_path, "inputs": in_path, "out": out_path, "resolver": resolver,
               "signature": signature, "names": names, "tensors": tensors,
               "subgraph": subgraph, "num_tensors": num_tensors}
        env = dict(os.environ)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-c", _WORKER, json.dumps(cfg)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=timeout, env=env)
        except subprocess.TimeoutExpired as exc:
            raise LiteRTError(f"LiteRT ({resolver}) did not finish within {timeout:g} s: "
                              "cannot cross-check") from exc
        seconds = time.perf_counter() - t0
        if proc.returncode < 0:
            sig = -proc.returncode
            raise LiteRTCrashError(f"LiteRT crashed on this model (signal {sig}): cannot "
                                   "cross-check", sig,
                                   f"LiteRT {resolver} crashed ({_signal_name(sig)})")
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace")
            marker = err.rfind("LITERT-ERROR: ")
            if marker >= 0:
                why = err[marker + len("LITERT-ERROR: "):].strip()
            else:
                lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
                why = lines[-1] if lines else f"exit status {proc.returncode}"
            why = tidy_litert_message(why)
            raise LiteRTError(f"LiteRT ({resolver}) cannot run this model: {why}",
                              f"LiteRT {resolver} failed: {why}")
        with np.load(out_path, allow_pickle=False) as data:
            found = {k: np.array(data[k]) for k in data.files}
        with open(out_path + ".json") as f:
            out_names = json.load(f)["outputs"]
    tensors_out = {int(k[1:]): v for k, v in found.items() if k.startswith("t")}
    outputs = {name: found[f"o{k}"] for k, name in enumerate(out_names)}
    return LiteRTRun(resolver, subgraph, tensors_out, outputs, seconds)


@contextlib.contextmanager
def _deleted_afterwards():
    """A list for the temporary model files of one call, deleted however the call ends (a
    LiteRT crash must not leave copies of the model behind)."""
    tmp: list[str] = []
    try:
        yield tmp
    finally:
        for p in tmp:
            with contextlib.suppress(OSError):
                os.unlink(p)


def _model_file(model: Model | str | os.PathLike | bytes, tmp: list) -> tuple[Model, str]:
    """The model and a file path LiteRT can open (a temporary file for bytes)."""
    if isinstance(model, Model):
        if model.path is not None:
            return model, str(model.path)
        data = bytes(np.asarray(model.data, dtype=np.uint8))
        return model, _write_temp(data, tmp)
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        return load_model(data), _write_temp(data, tmp)
    return load_model(model), str(Path(model))


def _write_temp(data: bytes, tmp: list) -> str:
    fd, path = tempfile.mkstemp(suffix=".tflite", prefix="tflite-viewer-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    tmp.append(path)
    return path


def reference_lacks(model: Model) -> str | None:
    """Why LiteRT's reference kernels cannot be the oracle of ``model`` (None: they can):
    its reference FULLY_CONNECTED has no blockwise path and returns the bias alone for
    blockwise INT4 weights, which its builtin kernel (EvalBlockwise4Bit) computes."""
    for sg in model.subgraphs:
        for op in sg.operators:
            if op.opcode.name != "FULLY_CONNECTED" or len(op.inputs) < 2 or op.inputs[1] < 0:
                continue
            q = sg.tensors[op.inputs[1]].quantization
            if q is not None and q.blockwise is not None:
                return (f"subgraph {sg.index} op {op.index}: LiteRT's reference "
                        "FULLY_CONNECTED has no blockwise path (it returns the bias), so its "
                        "builtin kernels are the oracle")
    return None


def run_litert(model: Model | str | os.PathLike | bytes, inputs: Mapping[str, Any],
               signature: str | None = None, resolver: str = "BUILTIN_REF", *,
               fallback: bool = True, timeout: float = DEFAULT_TIMEOUT) -> LiteRTRun:
    """Run the model in LiteRT (in a child process) on inputs keyed by input name (as
    `tflite_viewer.interpreter.inputs.complete_inputs` gives them).

    With ``fallback`` (the default), a ``BUILTIN_REF`` run that fails or crashes is retried
    with LiteRT's optimized kernels (without delegates) and the run says why; so is a
    model the reference kernels would compute wrong (`reference_lacks`: blockwise weights),
    without trying them.  Raises
    `LiteRTCrashError` when LiteRT crashes, `LiteRTError` when it refuses the model."""
    require_litert()
    if resolver not in RESOLVERS:
        raise ValueError(f"resolver must be one of {', '.join(RESOLVERS)}, not {resolver!r}")
    with _deleted_afterwards() as tmp:
        m, path = _model_file(model, tmp)
        specs = input_specs(m, signature)
        missing = [s.name for s in specs if s.name not in inputs]
        if missing:
            raise ValueError(f"run_litert: no value for input(s) {', '.join(missing)}")
        arrays = [np.asarray(inputs[s.name]) for s in specs]
        subgraph = specs[0].subgraph if specs else (
            m.signature(signature).subgraph_index if signature is not None else 0)
        num_tensors = len(m.subgraphs[subgraph].tensors)
        args = (path, arrays, [s.name for s in specs], [s.tensor for s in specs],
                signature, subgraph, num_tensors)
        why_not_ref = reference_lacks(m) if fallback and resolver == "BUILTIN_REF" else None
        if why_not_ref is not None:  # the reference kernels would compute it wrong
            run = _run_child(*args, FALLBACK_RESOLVER, timeout)
            run.fallback_reason = why_not_ref
            return run
        try:
            return _run_child(*args, resolver, timeout)
        except LiteRTError as exc:
            if not fallback or resolver != "BUILTIN_REF":
                raise
            first = exc
        try:
            run = _run_child(*args, FALLBACK_RESOLVER, timeout)
        except LiteRTCrashError:
            raise
        except LiteRTError as exc:
            if isinstance(first, LiteRTCrashError):
                raise first from exc
            raise
        run.fallback_reason = first.reason
        return run


def compare_with_litert(model_path: Model | str | os.PathLike | bytes,
                        inputs: Mapping[str, Any] | None = None, rounding: str | None = None,
                        resolver: str = "BUILTIN_REF", *, signature: str | None = None,
                        seed: int = 0, tolerance: float = DEFAULT_TOLERANCE,
                        units: int | None = None, mode: str = "auto",
                        hook: Callable[[Any, Any], Any] | None = None,
                        interpreter=None, fallback: bool = True,
                        timeout: float = DEFAULT_TIMEOUT) -> CrossCheckReport:
    """Run the model here and in LiteRT on the same inputs and compare every op output.

    ``inputs`` are keyed by input tensor name, signature input name or ``s{sg}_t{i}``;
    missing ones are seeded from ``seed`` (`seeded_inputs`).  ``rounding`` goes to
    `Interpreter` (None: its default).  ``hook`` is added as an
    "after" hook of the interpreter (``hook(interpreter, event)`` after every op) — a way to
    inspect or perturb our run.  Pass an ``interpreter`` that already ran on the same inputs
    to compare that run instead of making a new one.  Raises `UnsupportedOpError` when this
    interpreter cannot run the model, `LiteRTCrashError` / `LiteRTError` when LiteRT cannot,
    `LiteRTUnavailableError` without ai-edge-litert."""
    require_litert()
    with _deleted_afterwards() as tmp:
        model, path = _model_file(model_path, tmp)
        arrays, _ = complete_inputs(model, inputs or {}, seed, signature)
        if interpreter is None:
            from .interpreter import Interpreter
            interpreter = Interpreter(model) if rounding is None else \
                Interpreter(model, rounding=rounding)
            if hook is not None:
                interpreter.add_hook("after", hook)
            interpreter.invoke(positional(model, arrays, signature), signature=signature)
        elif hook is not None:
            raise ValueError("pass either an interpreter that already ran or a hook, not both")
        run = run_litert(path, arrays, signature, resolver, fallback=fallback, timeout=timeout)
        return compare_runs(interpreter, run, tolerance=tolerance, units=units,
                            model_name=str(model.path or path), mode=mode)
