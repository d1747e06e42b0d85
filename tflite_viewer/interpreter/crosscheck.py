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

Error metric, per operator output of the entry subgraph (LiteRT exposes the tensors of the
subgraph it ran, not those of the WHILE/IF bodies it called):

* floats: ``max|ours - LiteRT|`` and that relative to the range of LiteRT's tensor,
  ``max|a - b| / max(max(b) - min(b), tiny)`` (when LiteRT's tensor is constant, its
  magnitude ``max|b|`` stands in for the range); within tolerance when at most ``tolerance``;
* integers (quantized or not) and bools: the largest difference in units (integer steps);
  within tolerance when at most ``units``.

Each op output gets two errors.  **End to end**: our whole run against LiteRT's whole run,
so differences that compound along the graph show up where they grow.  **Op-isolated**:
our kernel is run once more on LiteRT's *own* input tensors for that op, so a kernel
difference is not confused with an accumulated one (a per-op check like Polygraphy's).
The report says which kernels it compared against (`CrossCheckReport.kernels`).  By
default (``mode="auto"``) pass/fail is decided end to end against the reference kernels
and op-isolated when the reference kernels could not run the model and LiteRT's optimized
kernels stood in; those round some requantizations differently, so integer outputs then
get a default tolerance of `OPTIMIZED_UNITS` unit.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import signal as _signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from ..model import Model, load_model
from ..model.errors import TFLiteViewerError
from .inputs import complete_inputs, input_specs, positional

DEFAULT_TOLERANCE = 1e-5
DEFAULT_UNITS = 0
DEFAULT_TIMEOUT = 600.0
TINY = 1e-30
RESOLVERS = ("BUILTIN_REF", "BUILTIN", "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
#: what a failed BUILTIN_REF run falls back to: LiteRT's optimized kernels, without the
#: default (XNNPACK) delegate, which would hide the intermediate tensors it fuses
FALLBACK_RESOLVER = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"
_CONTROL_FLOW = {"WHILE", "IF", "CALL_ONCE", "CALL"}


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


#: how a report names the kernels LiteRT ran
KERNELS = {"BUILTIN_REF": "reference kernels (BUILTIN_REF)",
           "BUILTIN": "optimized kernels with the default delegate (BUILTIN)",
           "BUILTIN_WITHOUT_DEFAULT_DELEGATES": "optimized kernels "
                                                "(BUILTIN_WITHOUT_DEFAULT_DELEGATES)"}
MODES = ("auto", "end-to-end", "isolated")
#: integer tolerance when comparing with LiteRT's optimized kernels, which round some
#: requantizations differently from the reference kernels this interpreter follows
OPTIMIZED_UNITS = 1


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


@dataclass
class LiteRTRun:
    """What a LiteRT run gave: every readable tensor of the subgraph it ran, its outputs."""

    resolver: str
    subgraph: int
    tensors: dict[int, np.ndarray]
    outputs: dict[str, np.ndarray]
    seconds: float
    fallback_reason: str | None = None  # why the requested resolver was not used


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


def run_litert(model: Model | str | os.PathLike | bytes, inputs: Mapping[str, Any],
               signature: str | None = None, resolver: str = "BUILTIN_REF", *,
               fallback: bool = True, timeout: float = DEFAULT_TIMEOUT) -> LiteRTRun:
    """Run the model in LiteRT (in a child process) on inputs keyed by input name (as
    `tflite_viewer.interpreter.inputs.complete_inputs` gives them).

    With ``fallback`` (the default), a ``BUILTIN_REF`` run that fails or crashes is retried
    with LiteRT's optimized kernels (without delegates) and the run says why.  Raises
    `LiteRTCrashError` when LiteRT crashes, `LiteRTError` when it refuses the model."""
    require_litert()
    if resolver not in RESOLVERS:
        raise ValueError(f"resolver must be one of {', '.join(RESOLVERS)}, not {resolver!r}")
    tmp: list[str] = []
    try:
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
    finally:
        for p in tmp:
            try:
                os.unlink(p)
            except OSError:
                pass


# ------------------------------------------------------------------------------------------
# comparing
# ------------------------------------------------------------------------------------------
@dataclass
class Error:
    """How far one of our tensors is from LiteRT's."""

    max_abs: float | None = None    # real units (dequantized for quantized tensors)
    relative: float | None = None   # floats: max|a-b| / range of LiteRT's tensor
    units: int | None = None        # integers: largest difference in integer steps
    ok: bool = True
    note: str = ""                  # why it was not compared, or what went wrong

    @property
    def compared(self) -> bool:
        return self.max_abs is not None or self.units is not None

    def text(self, kind: str) -> str:
        if kind == "float" and self.relative is not None:
            return f"rel {self.relative:.3g}"
        if self.units is not None:
            return f"{self.units} unit{'s' if self.units != 1 else ''}"
        return "-"


@dataclass
class TensorRow:
    """One operator output compared with LiteRT: end to end (our whole run against
    LiteRT's) and op-isolated (our kernel fed LiteRT's own input tensors)."""

    subgraph: int
    op: int
    opcode: str
    output: int               # which output of the op
    tensor: int
    name: str
    type_name: str
    shape: tuple[int, ...] | None
    kind: str                 # "float", "quantized", "integer", "bool"
    max_abs: float | None = None    # end to end, real units (dequantized when quantized)
    relative: float | None = None   # end to end, floats: max|a-b| / range of LiteRT's
    units: int | None = None        # end to end, integers: largest difference in steps
    ok: bool = True                 # within tolerance in the report's mode
    note: str = ""            # why it was not compared, or what went wrong
    e2e_ok: bool = True
    isolated: Error | None = None   # None: not computed (control flow, no LiteRT inputs)
    cosine: float | None = None     # end to end, on real values
    sqnr_db: float | None = None    # end to end: 10 log10(sum ref^2 / sum (ours - ref)^2)
    exact: bool | None = None       # end to end: the same bits

    @property
    def compared(self) -> bool:
        return self.max_abs is not None or self.units is not None

    def error_text(self) -> str:
        return Error(self.max_abs, self.relative, self.units).text(self.kind)

    def isolated_text(self) -> str:
        if self.isolated is None:
            return "-"
        return self.isolated.text(self.kind) if self.isolated.compared else "-"


@dataclass
class CrossCheckReport:
    """Every operator output of the run's entry subgraph, ours against LiteRT's."""

    model: str
    subgraph: int
    signature: str | None
    resolver: str
    rows: list[TensorRow]
    tolerance: float
    units: int
    fallback_reason: str | None = None
    rounding: str = ""
    litert_seconds: float = 0.0
    our_outputs: dict[str, np.ndarray | None] = field(default_factory=dict)
    litert_outputs: dict[str, np.ndarray] = field(default_factory=dict)
    mode: str = "end-to-end"  # which error decides `ok`: "end-to-end" or "isolated"
    litert_tensors: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def kernels(self) -> str:
        """Which LiteRT kernels the comparison ran against, in words."""
        return "LiteRT's " + KERNELS.get(self.resolver, self.resolver)

    @property
    def failures(self) -> list[TensorRow]:
        return [r for r in self.rows if not r.ok]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def first_divergence(self) -> TensorRow | None:
        """The first op output (in execution order) outside the tolerance."""
        bad = self.failures
        return bad[0] if bad else None

    def divergence_text(self) -> str:
        row = self.first_divergence
        if row is None:
            return "no divergence"
        err = row.isolated if self.mode == "isolated" and row.isolated is not None \
            and row.isolated.compared else Error(row.max_abs, row.relative, row.units, row.ok,
                                                 row.note)
        what = err.note or (f"relative error {err.relative:.3g} > {self.tolerance:g}"
                            if row.kind == "float" and err.relative is not None
                            else f"{err.units} units > {self.units}")
        return (f"first divergence: subgraph {row.subgraph} op {row.op} ({row.opcode}) output "
                f"{row.output}, tensor {row.tensor} {row.name!r}: {what} ({self.mode})")

    def _count(self, isolated: bool) -> tuple[int, int, str]:
        """(compared, within tolerance, largest error) of one kind of comparison."""
        compared = ok = 0
        worst_units, worst_rel = 0, 0.0
        for r in self.rows:
            e = r.isolated if isolated else Error(r.max_abs, r.relative, r.units, r.e2e_ok)
            if e is None or not e.compared:
                continue
            compared += 1
            ok += bool(e.ok)
            if e.units is not None and r.kind != "float":
                worst_units = max(worst_units, e.units)
            elif e.relative is not None:
                worst_rel = max(worst_rel, e.relative)
        worst = []
        if worst_units:
            worst.append(f"{worst_units} unit{'s' if worst_units != 1 else ''}")
        if worst_rel:
            worst.append(f"rel {worst_rel:.3g}")
        return compared, ok, ", ".join(worst) or "0"

    def summary(self) -> str:
        parts = []
        for label, iso in (("op-isolated", True), ("end-to-end", False)):
            compared, ok, worst = self._count(iso)
            if compared:
                parts.append(f"{label}: {ok} of {compared} op outputs within tolerance "
                             f"(largest error {worst})")
        head = f"against {self.kernels}, deciding on the {self.mode} error: " + "; ".join(parts)
        not_compared = sum(1 for r in self.rows if not r.compared and r.ok)
        if not_compared:
            head += f" ({not_compared} not compared)"
        return head + ("" if self.ok else "; " + self.divergence_text())

    def format_table(self, max_name: int = 40) -> str:
        lines = [f"LiteRT cross-check against {self.kernels}, subgraph {self.subgraph}"
                 + (f" (signature {self.signature!r})" if self.signature else "")
                 + f", {self.mode} comparison, tolerance rel {self.tolerance:g} / "
                   f"{self.units} unit{'s' if self.units != 1 else ''}"]
        if self.fallback_reason:
            lines.append(f"  (the reference kernels were not used: {self.fallback_reason})")
        if self.mode == "isolated":
            lines.append("  op-isolated: each op is fed LiteRT's own input tensors, so a "
                         "kernel difference is not confused with an accumulated one")
        header = (f"  {'op':>4}  {'opcode':<24} {'tensor':<{max_name + 6}} {'dtype':<8} "
                  f"{'shape':<18} {'max|diff|':>10} {'end-to-end':>12} {'isolated':>12}  status")
        lines.append(header)
        for r in self.rows:
            name = r.name if len(r.name) <= max_name else "..." + r.name[-(max_name - 3):]
            shape = "?" if r.shape is None else str(list(r.shape)).replace(" ", "")
            diff = "-" if r.max_abs is None else f"{r.max_abs:.3g}"
            status = "ok" if r.ok else "DIVERGES"
            if r.note:
                status += f" ({r.note})"
            tensor = f"T#{r.tensor} {name}"
            lines.append(f"  {r.op:>4}  {r.opcode:<24} {tensor:<{max_name + 6}} "
                         f"{r.type_name:<8} {shape:<18} {diff:>10} {r.error_text():>12} "
                         f"{r.isolated_text():>12}  {status}")
        lines.append(self.summary())
        return "\n".join(lines)


def _kind(t) -> str:
    dt = t.dtype
    if dt is None:
        return "other"
    if dt.kind in "fc":
        return "float"
    if dt.kind == "b":
        return "bool"
    q = t.quantization
    if q is not None and q.has_scale:
        return "quantized"
    return "integer"


def _float_error(ours: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """(max|a - b|, that relative to the range of b); equal NaNs and equal infinities
    count as equal, any other NaN or infinity as an infinite error."""
    complex_ = ours.dtype.kind == "c" or ref.dtype.kind == "c"
    a = ours.astype(np.complex128 if complex_ else np.float64)
    b = ref.astype(a.dtype)
    with np.errstate(all="ignore"):
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        diff = np.where(same, 0.0, np.abs(a - b))
        diff = np.where(np.isnan(diff), np.inf, diff)
        max_abs = float(diff.max()) if diff.size else 0.0
        fb = b[np.isfinite(b)]
        if fb.size == 0:
            scale = 0.0
        elif complex_:
            scale = float(np.abs(fb).max())
        else:
            scale = float(fb.max() - fb.min()) or float(np.abs(fb).max())
    return max_abs, max_abs / max(scale, TINY)


def real_values(t, a: np.ndarray) -> np.ndarray:
    """Dequantized values of an integer tensor with per-tensor or per-channel parameters
    (float64), or the values as float64."""
    q = t.quantization
    if q is not None and q.has_scale and a.dtype.kind in "iu":
        scale = np.asarray(q.scale, np.float64).ravel()
        zp = np.asarray(q.zero_point, np.float64).ravel()
        if zp.size == 0:
            zp = np.zeros_like(scale)
        if scale.size > 1 and a.ndim:
            shape = [1] * a.ndim
            shape[int(q.quantized_dimension)] = scale.size
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        return (a.astype(np.float64) - zp) * scale
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def similarity(ours: np.ndarray, ref: np.ndarray) -> tuple[float | None, float | None]:
    """(cosine similarity, SQNR in dB) of two real-valued arrays; SQNR is +inf when they
    are equal, cosine None when either is all zeros, both None with non-finite values."""
    a = np.abs(ours) if ours.dtype.kind == "c" else ours
    b = np.abs(ref) if ref.dtype.kind == "c" else ref
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    if not (np.isfinite(a).all() and np.isfinite(b).all()) or a.size == 0:
        return None, None
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    cosine = float(np.dot(a, b) / (na * nb)) if na > 0 and nb > 0 else None
    noise = float(np.sum((a - b) ** 2))
    signal = float(np.sum(b ** 2))
    if noise == 0:
        sqnr = float("inf")
    elif signal == 0:
        sqnr = float("-inf")
    else:
        sqnr = 10.0 * float(np.log10(signal / noise))
    return cosine, sqnr


def compare_tensor(t, kind: str, ours: np.ndarray | None, ref: np.ndarray | None,
                   tolerance: float, units: int) -> Error:
    """Our value of tensor ``t`` against LiteRT's (see the module docstring's metric)."""
    if ref is None:
        return Error(note="LiteRT gave no value")
    if ours is None:
        return Error(ok=False, note="not computed by the interpreter")
    if ours.dtype == object:
        return Error(note="strings: not compared")
    if tuple(ours.shape) != tuple(ref.shape):
        return Error(ok=False, note=f"shape {list(ours.shape)} vs LiteRT {list(ref.shape)}")
    if kind == "float" or ref.dtype.kind in "fc":
        max_abs, rel = _float_error(ours, ref)
        return Error(max_abs, rel, None, rel <= tolerance)
    u = int(np.abs(ours.astype(np.int64) - ref.astype(np.int64)).max()) if ours.size else 0
    max_abs = float(u)
    q = t.quantization
    if kind == "quantized" and q is not None and q.scale.size == 1:
        max_abs = float(u * float(q.scale[0]))
    return Error(max_abs, None, u, u <= units)


def isolated_run(interpreter, litert: LiteRTRun, node) -> dict[int, np.ndarray] | str:
    """Our kernel of ``node`` run on LiteRT's own input tensors: its outputs by tensor
    index, or why it cannot be run that way.  Our tensors are restored afterwards."""
    sg = interpreter.subgraphs[litert.subgraph]
    if node.registration.kernel.calls_subgraphs:
        return "control flow: not isolated"
    feed = {}
    for i in node.inputs:
        if i < 0:
            continue
        t = sg.tensors[i]
        if t.is_constant:
            continue
        if t.is_variable:
            return "variable input: not isolated"
        ref = litert.tensors.get(i)
        if ref is None:
            return "LiteRT gave no input value"
        if t.dtype is not None and ref.dtype != t.dtype:
            return f"LiteRT's input t{i} is {ref.dtype}"
        feed[i] = ref
    touched = set(feed) | {o for o in node.outputs if o >= 0}
    saved = {i: (sg.tensors[i].data, sg.tensors[i].shape) for i in touched}
    try:
        for i, ref in feed.items():
            t = sg.tensors[i]
            if t.shape != ref.shape:
                t.shape = ref.shape
            t.data = np.array(ref, copy=True)
        try:
            with np.errstate(all="ignore"):
                sg.prepare_node(node)
                node.kernel.invoke(sg, node)
        except Exception as exc:  # noqa: BLE001 - reported in the row
            return f"our kernel failed on LiteRT's inputs: {exc}"
        return {o: np.array(sg.tensors[o].data, copy=True) for o in node.outputs
                if o >= 0 and sg.tensors[o].data is not None}
    finally:
        for i, (data, shape) in saved.items():
            t = sg.tensors[i]
            if t.shape != shape and shape is not None:
                t.shape = shape
            t.data = data
        try:
            sg.prepare_node(node)
        except Exception:  # noqa: BLE001 - the next run re-prepares anyway
            pass


def resolve_mode(mode: str, litert: LiteRTRun) -> str:
    """"auto": end to end against the reference kernels, op-isolated otherwise."""
    if mode not in MODES:
        raise ValueError(f"comparison mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "auto":
        return "end-to-end" if litert.resolver == "BUILTIN_REF" else "isolated"
    return mode


def compare_runs(interpreter, litert: LiteRTRun, *, tolerance: float = DEFAULT_TOLERANCE,
                 units: int | None = None, model_name: str = "",
                 mode: str = "auto") -> CrossCheckReport:
    """Compare every op output of the interpreter's entry subgraph (after a run) with a
    LiteRT run of the same subgraph on the same inputs, end to end and op-isolated.

    ``mode`` says which error decides pass or fail (`resolve_mode`).  ``units`` defaults to
    0 against the reference kernels and to `OPTIMIZED_UNITS` against optimized ones."""
    mode = resolve_mode(mode, litert)
    if units is None:
        units = DEFAULT_UNITS if litert.resolver == "BUILTIN_REF" else OPTIMIZED_UNITS
    sgi = litert.subgraph
    sg = interpreter.subgraphs[sgi]
    msg = sg.model_subgraph
    read = set(sg.outputs)
    for op in msg.operators:
        read.update(i for i in op.inputs if i >= 0)
    rows: list[TensorRow] = []
    for ni in sg.execution_plan:
        node = sg.nodes[ni]
        isolated = None
        for k, ti in enumerate(node.outputs):
            if ti < 0:
                continue
            if node.name in _CONTROL_FLOW and ti not in read:
                continue  # LiteRT leaves unread pass-through outputs of a WHILE unwritten
            t = sg.tensors[ti]
            kind = _kind(t)
            row = TensorRow(sgi, node.index, node.name, k, ti, t.name, t.type_name,
                            None if t.data is None else tuple(t.data.shape), kind)
            rows.append(row)
            ours, ref = t.data, litert.tensors.get(ti)
            e2e = compare_tensor(t, kind, ours, ref, tolerance, units)
            row.max_abs, row.relative, row.units = e2e.max_abs, e2e.relative, e2e.units
            row.e2e_ok, row.note = e2e.ok, e2e.note
            if e2e.compared:
                row.exact = bool(np.array_equal(ours, ref, equal_nan=ours.dtype.kind in "fc"))
                row.cosine, row.sqnr_db = similarity(real_values(t, ours), real_values(t, ref))
            if ref is not None:
                if isolated is None:
                    isolated = isolated_run(interpreter, litert, node)
                if isinstance(isolated, str):
                    row.isolated = Error(note=isolated)
                else:
                    row.isolated = compare_tensor(t, kind, isolated.get(ti), ref, tolerance,
                                                  units)
            iso = row.isolated
            row.ok = iso.ok if mode == "isolated" and iso is not None and iso.compared \
                else row.e2e_ok
    return CrossCheckReport(model_name, sgi, interpreter.signature, litert.resolver, rows,
                            float(tolerance), int(units), litert.fallback_reason,
                            interpreter.rounding, litert.seconds, interpreter.outputs(),
                            litert.outputs, mode, litert.tensors)


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
    tmp: list[str] = []
    try:
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
    finally:
        for p in tmp:
            try:
                os.unlink(p)
            except OSError:
                pass
