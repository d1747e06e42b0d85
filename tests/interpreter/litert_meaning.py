"""Does LiteRT 2.3.0 compute a model *with meaning*?  The judge of the refusal audits
(test_refusal_audit.py, tools/sweep_quant_forms.py).

A refusal of this interpreter is false when LiteRT's builtin kernels
(BUILTIN_WITHOUT_DEFAULT_DELEGATES) load the same model, run it, and give outputs that are
finite and plausibly the op's real result.  `judge` decides that on any one-subgraph
model:

* LiteRT runs the model in a forked child (some combinations abort LiteRT or corrupt its
  heap: an INT8 ADD whose input scale is 0 fails a CHECK in its Prepare), so a crash is
  a verdict ("refuses"), not the end of the suite.
* The model's *float twin* is the same graph with every quantized integer tensor made
  FLOAT32 and given its real values (constants dequantized, runtime inputs dequantized,
  outputs FLOAT32), and every float tensor's quantization parameters dropped (LiteRT's
  float kernels never read them), and FLOAT16 tensors widened to FLOAT32.  An INT8,
  UINT8, INT16 or sub-byte tensor without parameters holds plain integers: the twin
  computes on them in float too (INT32, INT64 and BOOL tensors stay as they are: LiteRT's
  integer kernels define their results).  A tensor in a form whose values have no real meaning
  outside the runtime that wrote them (custom or multi-axis details) keeps its stored
  integers as its values; an INT8, UINT8, INT16 or sub-byte tensor with such details makes
  the verdict "wrong" (no real value to judge by).  LiteRT runs the twin too: its output is the op's real result.
* "runs": LiteRT's output, dequantized by the output tensor's own parameters, is within
  3% of the real result's range (clamped to what the output can hold) plus two of the
  output's quantization steps (the noise of
  quantized arithmetic is below that; ignored scales, zeros or the bias alone are far
  above).  Integer and boolean outputs without parameters (indices, comparisons) must
  agree on 90% of their values (the quantized inputs may break a tie differently).
  "wrong": it runs without meaning.  "unjudged": LiteRT runs the model but not its twin
  (an op defined on integers only), so no real result exists to judge by.
"""
from __future__ import annotations

import faulthandler
import os
import pickle
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tflite_viewer.edit.tree import ModelTree
from tflite_viewer.edit.writer import serialize
from tflite_viewer.model import ModelFormatError, load_model
from tflite_viewer.model.quantization import dequantize_blockwise
from tflite_viewer.schema import schema_generated as S

from .llm_models import litert_run

BUILTIN = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"
#: LiteRT's result "runs" within this fraction of the real result's range
MEANINGFUL = 0.03
_QUANTIZED = {"INT8", "UINT8", "INT16", "INT4", "INT2", "UINT4", "INT32", "INT64"}
#: the types kernels compute as quantized: without parameters their values are plain
#: integers, and the twin computes on those in float
_SMALL = {"INT8", "UINT8", "INT16", "INT4", "INT2", "UINT4"}


class LiteRTFailed(RuntimeError):
    """LiteRT refused the model, failed to run it, or crashed (the message says which)."""


@dataclass(frozen=True)
class Verdict:
    status: str  # "runs" (with meaning), "wrong" (without), "refuses", "unjudged"
    note: str


def run_forked(model: bytes, inputs: Sequence[np.ndarray],
               resolver: str = BUILTIN) -> dict[int, np.ndarray]:
    """Every tensor LiteRT holds after a run (`llm_models.litert_run`), computed in a
    forked child so that an abort or a corrupted heap stays there."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, send the result or the error, leave at once
        os.close(read)
        faulthandler.disable()  # (a crash is the verdict, not a trace on the suite's stderr)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        try:
            result = ("ok", litert_run(model, inputs, resolver))
        except BaseException as exc:  # noqa: BLE001 - everything is reported to the parent
            result = ("error", str(exc))
        with os.fdopen(write, "wb") as f:
            pickle.dump(result, f)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        raise LiteRTFailed(f"LiteRT crashed (child status {status})")
    kind, value = pickle.loads(data)
    if kind == "error":
        raise LiteRTFailed(value.splitlines()[0] if value else "LiteRT failed")
    return value


def rel(a, b) -> float:
    """max |a - b| over the largest |b| (at least 1e-6); inf on a shape mismatch or NaN."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a64.shape != b64.shape:
        return float("inf")
    scale = max(1e-6, float(np.max(np.abs(b64), initial=0.0)))
    with np.errstate(invalid="ignore"):
        d = np.abs(a64 - b64)
    return float(np.max(np.where(np.isnan(d), np.inf, d), initial=0.0)) / scale


def _has_meaning(t) -> bool:
    """Whether a tensor's parameters give its integers real values (affine or blockwise)."""
    q = t.quantization
    return q is not None and (q.blockwise is not None or (q.details is None and q.has_scale))


def real_values(t, values: np.ndarray) -> np.ndarray:
    """A tensor's stored values as real values: dequantized when its parameters give them
    a meaning, the stored numbers as floats otherwise."""
    q = t.quantization
    if t.type_name not in _QUANTIZED or q is None or not _has_meaning(t):
        return np.asarray(values).astype(np.float32)
    if q.blockwise is not None:
        scale_t, zp_t = t.block_tensors()
        return dequantize_blockwise(values, scale_t.values(), None if zp_t is None
                                    else zp_t.values(), q.blockwise.block_size)
    return q.dequantize(np.asarray(values))


def float_twin(model: bytes, inputs: Sequence[np.ndarray]) -> tuple[bytes, list[np.ndarray]]:
    """The model's float twin and its inputs (see the module docstring)."""
    ours = load_model(model)
    sg = ours.subgraphs[0]
    tree = S.ModelT.InitFromPackedBuf(model, 0)
    tsg = tree.subgraphs[0]
    twin_inputs = list(inputs)
    for t, spec in zip(sg.tensors, tsg.tensors):
        quantized = t.type_name in _QUANTIZED and t.quantization is not None \
            and not t.quantization.is_empty
        if t.type_name.startswith("FLOAT"):
            spec.quantization = None
        if not quantized and t.type_name not in _SMALL and t.type_name != "FLOAT16":
            continue
        spec.type, spec.quantization = S.TensorType.FLOAT32, None
        if t.is_constant:
            buf = S.BufferT()
            real = real_values(t, t.values()).astype(np.float32)
            if t.sparsity is not None:  # keep the sparse layout: its stored values only
                k = int(np.asarray(t.data()).size)
                order = t.sparsity.densify(np.arange(1, k + 1, dtype=np.int64), t.shape,
                                           "twin").reshape(-1)
                stored = np.flatnonzero(order)
                real = real.reshape(-1)[stored[np.argsort(order[stored])]]
            buf.data = np.frombuffer(real.tobytes(), np.uint8)
            tree.buffers.append(buf)
            spec.buffer = len(tree.buffers) - 1
        elif t.index in sg.inputs:
            k = list(sg.inputs).index(t.index)
            twin_inputs[k] = real_values(t, inputs[k])
    return serialize(ModelTree(tree)), twin_inputs


def _step(t) -> float:
    """The largest real step between two stored values of an output: its largest scale
    (per tensor, per channel or per block), a quarter for plain small integers (two of
    them are the half unit of rounding: a plain integer result is exact), 0 for floats."""
    q = t.quantization
    if t.type_name in _QUANTIZED and _has_meaning(t):
        if q.blockwise is not None:
            scale_t, _ = t.block_tensors()
            return float(np.max(np.abs(scale_t.values().astype(np.float64))))
        return float(np.max(np.abs(q.scale)))
    return 0.25 if t.type_name in _SMALL else 0.0


def _meaningless(sg) -> str | None:
    """Why a model's quantized values have no real value to judge by: a small integer
    tensor with custom or multi-axis details (their meaning is the writing runtime's)."""
    for t in sg.tensors:
        q = t.quantization
        if t.type_name in _SMALL and q is not None and q.details is not None \
                and q.blockwise is None:
            return (f"tensor {t.index} has {q.form} parameters: its values have no real "
                    "value to judge by")
    return None


def _clamped(t, ref: np.ndarray) -> np.ndarray:
    """The real result as a quantized output can hold it: clamped to the range its type
    and per-tensor parameters represent (saturation is part of the op's meaning)."""
    q = t.quantization
    if t.type_name not in ("INT8", "UINT8", "INT16") or q is None or q.details is not None \
            or q.scale.size != 1 or ref.dtype.kind != "f" or not float(q.scale[0]) > 0:
        return ref  # (a zero scale represents 0 alone: nothing the real result clamps to)
    info = np.iinfo({"INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16}[t.type_name])
    zp = float(q.zero_point[0]) if q.zero_point.size else 0.0
    lo, hi = sorted(((info.min - zp) * float(q.scale[0]), (info.max - zp) * float(q.scale[0])))
    return np.clip(ref, lo, hi)


def _agreement(got: np.ndarray, ref: np.ndarray, step: float, fp16: bool = False
               ) -> float | None:
    """None when LiteRT's real output agrees with the real result, else how far off (as a
    fraction of the real result's range)."""
    if got.shape != ref.shape:
        return float("inf")
    if ref.dtype.kind in "biu" and got.dtype.kind in "biu":
        return None if ref.size == 0 or np.mean(got == ref) >= 0.9 else 1.0
    g64, r64 = got.astype(np.float64), ref.astype(np.float64)
    finite = np.isfinite(r64)
    same = (g64 == r64) | (np.isnan(g64) & np.isnan(r64))
    if not np.all(np.isfinite(g64[finite])) or not np.all(same[~finite]):
        return float("inf")  # a non-finite value where the real one is finite, or not it
    scale = float(np.max(np.abs(r64[finite]), initial=0.0))
    with np.errstate(invalid="ignore"):
        diff = np.where(finite, np.abs(g64 - r64), 0.0)
    worst = float(np.max(diff, initial=0.0))
    tol = MEANINGFUL * scale + 2 * step + (2e-3 * scale if fp16 else 0.0)
    return None if worst <= tol else worst / max(scale, 1e-6)


def judge(model: bytes, inputs: Sequence[np.ndarray],
          outs: dict[int, np.ndarray] | None = None) -> Verdict:
    """What LiteRT 2.3.0's builtin kernels do with a one-subgraph model; ``outs``:
    `run_forked`'s result on these inputs when the caller has it already."""
    if outs is None:
        try:
            outs = run_forked(model, inputs)
        except LiteRTFailed as exc:
            return Verdict("refuses", str(exc)[:160])
    sg = load_model(model).subgraphs[0]
    why = _meaningless(sg)
    if why is not None:
        return Verdict("wrong", why)
    try:
        twin, twin_inputs = float_twin(model, inputs)
    except ModelFormatError as exc:  # (parameters that fit no value of their tensor)
        return Verdict("wrong", f"no real values: {exc.reason}")
    try:
        ref = run_forked(twin, twin_inputs)
    except LiteRTFailed as exc:
        return Verdict("unjudged", f"LiteRT runs it but not its float twin: {str(exc)[:120]}")
    for o in sg.outputs:
        t = sg.tensors[o]
        got = outs.get(o)
        if got is None or ref.get(o) is None:
            return Verdict("unjudged", f"LiteRT holds no value of output {o}")
        step = _step(t)
        plain = t.type_name not in _QUANTIZED or not _has_meaning(t)
        try:
            real = got if plain and got.dtype.kind in "biu" and ref[o].dtype.kind in "biu" \
                else real_values(t, got)
        except ModelFormatError as exc:  # (a shape computed at run time that they misfit)
            return Verdict("wrong", f"output {o}: its parameters do not fit LiteRT's "
                           f"values: {exc.reason}")
        off = _agreement(real, _clamped(t, ref[o]), step, t.type_name == "FLOAT16")
        if off is not None:
            what = "all zeros" if got.size and not np.any(got) else \
                f"{off:.2g} of the real result's range away from it"
            return Verdict("wrong", f"output {o}: {what}")
    return Verdict("runs", "")


# -- the weights matrix (quant_form_models.py) ----------------------------------------
def _output(model: bytes, outs: dict, facts: dict) -> np.ndarray:
    """The op's output from a tensor dict, as float32 real values."""
    o = load_model(model).subgraphs[0].outputs[0]
    value = outs[o]
    q = facts.get("out_q")
    if q is not None:
        return (value.astype(np.float32) - q[1]) * q[0]
    return value.astype(np.float32)


def _weight_left_out(model: bytes, got: np.ndarray, ref: np.ndarray, facts: dict
                     ) -> str | None:
    """What a meaningless result is, when it is something simple: all zeros, the op's
    bias alone (the weights' product left out), or a PRELU's output that is 0 on every
    negative input where the real one is not (the alpha left out: RELU's output), as the
    op's real output values.  A result the weight does not enter has no meaning however
    near the float result a small weight puts it (an INT2 alpha's slopes are a few
    hundredths: RELU is within 3% of that PRELU's range)."""
    if not np.any(got):
        return "its output is all zeros"
    sg = load_model(model).subgraphs[0]
    op = sg.operators[0]
    step = facts["out_q"][0] if facts.get("out_q") is not None else 1e-6
    if op.opcode.builtin_name == "PRELU" and facts.get("float_inputs"):
        neg = np.broadcast_to(facts["float_inputs"][0] < 0, got.shape)
        if np.any(np.abs(ref[neg]) > step) and not np.any(got[neg]):
            return "its output is RELU's: 0 on every negative input, the alpha left out"
    if op.opcode.builtin_name not in ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D") \
            or len(op.inputs) < 3 or op.inputs[2] < 0 or sg.tensors[op.inputs[2]].data() is None:
        return None
    bias_t = sg.tensors[op.inputs[2]]
    bias = bias_t.dequantized() if bias_t.quantization is not None and \
        bias_t.quantization.has_scale else bias_t.data().astype(np.float32)
    return "its output is the bias alone: the weights' product is zero" if np.allclose(
        got, np.broadcast_to(bias, got.shape), atol=step, rtol=1e-5) else None


def judge_weight(model: bytes, inputs, float_model: bytes | None, facts: dict) -> Verdict:
    """What LiteRT's builtin kernels do with one combination of the weights matrix
    (quant_form_models.build: the model, its inputs, the float model on the dequantized
    weight, the facts): "runs" within `MEANINGFUL` of the float model's range, "wrong"
    (saying what it computes when that is simple: zeros, the bias alone, RELU's output for
    a PRELU, which is "wrong" however near: `_weight_left_out`) or "refuses"."""
    try:
        outs = run_forked(model, inputs)
    except LiteRTFailed as exc:
        return Verdict("refuses", str(exc)[:120])
    got = _output(model, outs, facts)
    if facts.get("real_output") is not None:
        ref = facts["real_output"]
    elif float_model is not None:
        ref = _output(float_model, run_forked(float_model, facts["float_inputs"]), {})
    else:
        return Verdict("wrong", "its parameters give the values no real meaning: no scale, "
                       "or custom details")
    q = facts.get("out_q")
    if q is not None:  # a quantized output holds the real result clamped to its range
        info = np.iinfo(np.int16 if facts.get("out_type") == "INT16" else np.int8)
        ref = np.clip(ref, (info.min - q[1]) * q[0], (info.max - q[1]) * q[0])
    err = rel(got, ref)
    simple = _weight_left_out(model, got, ref, facts)
    if err <= MEANINGFUL and simple is None:
        return Verdict("runs", f"{err:.2g} of the float result")
    return Verdict("wrong", (f"{simple}; " if simple else "") +
                   f"{err:.2g} of the float result's range away from it")
