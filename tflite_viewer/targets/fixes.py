"""What to change: the well-known rewrites that let an operator run on a target.

Each suggestion says what to do; where the editor can do it as it is, it carries the edit
commands (`Fix.edits`), which the window offers as an edit and a script can apply with
`ModelDocument.apply`:

* a fused activation a delegate does not fuse (XNNPACK's TANH): split it out into an
  operator of its own (`SplitFusedActivation`), or clear it, which is what LiteRT's CPU
  kernels compute anyway (they apply only clamps);
* a model input with an unknown dimension where the target needs static shapes (the GPU
  delegate, TFLite Micro): fix it at the stored size (`SetTensorShape`);
* a tensor of too high a rank whose extra dimensions are 1: reshape it lower;
* a shape, axes or paddings input computed from values the file already fixes: fold it
  into a constant;
* types the target lacks: full int8 quantization instead of hybrid or UINT8, float32 or
  int8 weights instead of float16;
* weights with a block or channel scale of 0, which XNNPACK cannot define: a positive scale
  for those blocks, their weights set to 0, which computes the zeros LiteRT's kernels
  compute with a scale of 0 (`ReplaceTensorData`, `SetQuantization`).
"""
from __future__ import annotations

import re

import numpy as np

from ..edit.commands import (ReplaceTensorData, SetOption, SetQuantization, SetTensorShape,
                             SplitFusedActivation)
from ..edit.commands.activation import INTERNAL_ACTIVATION
from ..edit.shape_commands import UpdateStoredShapes
from ..delegation.facts import ModelFacts, SubgraphFacts
from .verdict import RUNS, Fix, OpVerdict, TargetResult

_RANK_LIMIT = {"xnnpack": 6, "gpu": 4}


def _activation_fixes(f: SubgraphFacts, v: OpVerdict, target: str) -> list[Fix]:
    act = (f.options(v.index) or {}).get("fused_activation_function")
    if "fused activation" not in v.reason or act in (None, "NONE"):
        return []
    if act == "SIGN_BIT":
        return [Fix("SIGN_BIT has no operator of its own: compute it with SIGN or LESS "
                    "after this operator, and clear the fused activation")]
    if v.op in INTERNAL_ACTIVATION:  # it acts inside the cell: neither split nor clear
        return []
    out = f.outputs[v.index]
    clear = Fix(f"or clear the fused {act}: the same numbers LiteRT's CPU kernels give",
                [SetOption(v.subgraph, v.index, "fused_activation_function", "NONE")])
    is_float = bool(out) and f.type(out[0]) in ("FLOAT32", "FLOAT16")
    split = Fix(f"split the fused {act} out into a {act} operator of its own ({target} "
                f"runs {act} alone); LiteRT's CPU kernels skip a fused {act} on {v.op}, so "
                "this computes what the option asks for",
                [SplitFusedActivation(v.subgraph, v.index)] if is_float else [])
    return [split, clear]


def _rank_fix(f: SubgraphFacts, v: OpVerdict, limit: int) -> list[Fix]:
    ts = [t for t in f.inputs[v.index] + f.outputs[v.index] if t >= 0 and f.rank(t) > limit]
    if not ts or "rank" not in v.reason:
        return []
    t = ts[0]
    shape = f.shapes[t]
    squeezed = [d for d in shape if d != 1]
    if len(squeezed) <= limit:
        new = [1] * (limit - len(squeezed)) + squeezed
        return [Fix(f"tensor {t} {list(shape)} has size-1 dimensions: reshape it to "
                    f"{new} ({limit}-D) around this operator")]
    return [Fix(f"tensor {t} {list(shape)} needs {len(squeezed)} dimensions of size > 1: "
                f"split the computation along one of them (at most {limit}-D here)")]


def _computed_input_fix(f: SubgraphFacts, v: OpVerdict) -> list[Fix]:
    if "computed at run time" not in v.reason:
        return []
    try:
        t = int(v.reason.split(" is computed")[0].split()[-1])
    except ValueError:
        return []
    if f.value_known(t):
        return [Fix(f"tensor {t} is computed only from constants and static shapes: fold it "
                    "into a constant (re-convert with constant folding, or let the shapes be "
                    "static)")]
    return []


def _type_fixes(v: OpVerdict, target: str) -> list[Fix]:
    r = v.reason
    if "hybrid" in r or ("FLOAT32" in r and "INT8 weights" in r):
        return [Fix("quantize the activations too (full int8 post-training quantization), "
                    "or keep float weights: hybrid operators do not run here")]
    if target == "tflm" and "UINT8" in r:
        return [Fix("quantize to INT8 instead of UINT8 (TFLite Micro's kernels are int8)")]
    if target == "tflm" and "FLOAT16" in r:
        return [Fix("store the weights as float32, or quantize them to int8: TFLite Micro "
                    "has no float16")]
    if "beta" in r and v.op == "SOFTMAX":
        return [Fix("fold beta into the layer before (scale its weights) and set beta to 1")]
    if "without bias" in r:
        return [Fix("give the operator a zero bias of the output channels' size")]
    if "needs runtime" in r:
        return [Fix("ship a runtime at least that new, or avoid the feature that raised the "
                    "op version (see the version rules in the Properties panel)")]
    if target == "tflm" and "TFLM does not resize tensors" in r:
        return [Fix("write the computed shapes into the file (see this target's changes: "
                    "one edit for every such tensor)")]
    if "largest partition" in r:
        return [Fix("make the operators between this group and the delegated one run on the "
                    "GPU, or raise max_delegated_partitions in the delegate's options")]
    return []


_GIVE = re.compile(r"tensor (\d+) is stored as \[[^\]]*\] but the values that set its shape "
                   r"give \[([^\]]*)\]")


def _value_shape_fix(f: SubgraphFacts, v: OpVerdict) -> list[Fix]:
    """TFLM computes into a stored shape that the file's values contradict: store the
    shape they give, or, where a run's values decide part of it, restructure."""
    m = _GIVE.search(v.reason)
    if m is None:
        return []
    t, dims = int(m.group(1)), m.group(2).split(", ") if m.group(2) else []
    if "?" in dims:
        return [Fix(f"tensor {t}'s shape changes with values only a run knows ({m.group(2)}): "
                    "TFLM cannot compute it right; make the shape static (slice with constant "
                    "sizes, unroll the loop)")]
    shape = tuple(int(d) for d in dims)
    return [Fix(f"store tensor {t}'s shape as {list(shape)}, the one its values give",
                [UpdateStoredShapes({(v.subgraph, t): shape})])]


_DEFINE = re.compile(r"cannot define tensor (\d+) \(")


def _zero_scale_fix(f: SubgraphFacts, v: OpVerdict) -> list[Fix]:
    """XNNPACK cannot define weights with a scale of 0 in some block or channel.  Those
    blocks dequantize to 0 in LiteRT's kernels, so setting their weights to 0 and their
    scale to a positive one changes no value and lets the delegate build its partition.
    Offered as edits for float-input operators (weight-only and dynamic-range
    quantization: the bias is float, its scale not tied to the weights')."""
    m = _DEFINE.search(v.reason)
    if m is None or "scale" not in v.reason:
        return []
    t = int(m.group(1))
    quant, weights = f.quant(t), f.values(t)
    x = f.inputs[v.index][0] if f.inputs[v.index] else -1
    if quant is None or weights is None or x < 0 or f.type(x) not in ("FLOAT32", "FLOAT16"):
        return [Fix(f"give tensor {t}'s zero-scale blocks or channels a positive scale (and "
                    "their weights 0), or requantize the layer")]
    if quant.details == "BlockwiseQuantization":
        s = f.block_scales(t)
        scales = f.values(s)
        if scales is None or scales.ndim != weights.ndim or np.any(scales < 0):
            return []
        zero = scales == 0
        rows = np.repeat(zero, weights.shape[-1] // max(scales.shape[-1], 1), axis=-1)
        edit = ReplaceTensorData(v.subgraph, s, np.where(zero, _positive(scales),
                                                         scales).astype(scales.dtype))
        what = f"{int(zero.sum())} block(s) of tensor {t} (scales in tensor {s})"
    else:
        scales = np.asarray(quant.scale, np.float64)
        if np.any(scales < 0) or weights.ndim == 0:
            return []
        zero = scales == 0
        axis = quant.quantized_dimension if len(scales) > 1 else 0
        shape = [1] * weights.ndim
        shape[axis] = -1
        rows = np.broadcast_to(zero.reshape(shape) if len(scales) > 1 else zero,
                               weights.shape)
        edit = SetQuantization(v.subgraph, t, np.where(zero, _positive(scales), scales).tolist(),
                               list(quant.zero_point), quant.quantized_dimension)
        what = f"{int(zero.sum())} channel(s) of tensor {t}"
    edits = [edit]
    if np.any(weights[rows] != 0):
        edits.insert(0, ReplaceTensorData(v.subgraph, t, np.where(rows, 0, weights).astype(
            weights.dtype)))
    return [Fix(f"give the {what} whose scale is 0 a positive scale and zero weights: they "
                "compute the same zeros, and XNNPACK can define the tensor", edits)]


def _positive(scales: np.ndarray) -> float:
    """A scale for the zero-scale blocks: the smallest positive one beside them, else 1."""
    good = scales[scales > 0]
    return float(good.min()) if good.size else 1.0


def stored_shape_fixes(facts: ModelFacts) -> list[Fix]:
    """TFLM computes into the stored shapes: write the shapes the operators compute."""
    from .tflm import shape_mismatches

    found = shape_mismatches(facts)
    if not found:
        return []
    shapes = {(m.subgraph, m.tensor): m.inferred for m in found}
    return [Fix(f"write the shapes the operators compute into the {len(shapes)} tensor(s) "
                "stored with placeholder sizes (TFLM does not resize tensors)",
                [UpdateStoredShapes(shapes)])]


def dynamic_input_fixes(facts: ModelFacts, target: str) -> list[Fix]:
    """Model inputs with an unknown dimension, for targets that need static shapes."""
    out = []
    for s in range(len(facts)):
        f = facts[s]
        for t in f.graph_inputs:
            if f.dynamic(t):
                shape = list(f.shapes[t])
                out.append(Fix(f"input {f.names[t]!r} (subgraph {s}, tensor {t}) has unknown "
                               f"dimensions {list(f.signatures[t])}; {target} needs static "
                               f"shapes: fix it at {shape}",
                               [SetTensorShape(s, t, shape, shape_signature=None)]))
    return out


def attach(facts: ModelFacts, result: TargetResult) -> None:
    """Add the rewrites that apply to every operator that does not run."""
    for v in result.ops:
        if v.verdict == RUNS:
            continue
        f = facts[v.subgraph]
        try:
            fixes = (_activation_fixes(f, v, result.name)
                     + _rank_fix(f, v, _RANK_LIMIT.get(result.name, 99))
                     + _computed_input_fix(f, v)
                     + _type_fixes(v, result.name)
                     + (_zero_scale_fix(f, v) if result.name == "xnnpack" else [])
                     + (_value_shape_fix(f, v) if result.name == "tflm" else []))
        except (IndexError, KeyError, TypeError, ValueError, AttributeError):
            fixes = []  # a malformed operator: its verdict says so, no rewrite applies
        v.fixes.extend(fixes)
    if result.name == "tflm":
        result.fixes.extend(stored_shape_fixes(facts))
    if result.name in ("gpu", "tflm"):
        result.fixes.extend(dynamic_input_fixes(facts, result.name))
