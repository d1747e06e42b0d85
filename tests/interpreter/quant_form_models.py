"""One-op models for the op x activation x weight type x quantization form matrix: every op
with a weight-like input, that input in every tensor type and quantization form
(tools/sweep_quant_forms.py measures LiteRT on them; test_quant_forms_sweep.py checks
this interpreter refuses them or computes them as LiteRT).

A combination is ``(op, act, wtype, form)``: ``act`` the kind of the other tensors
("float": FLOAT32 activations, hybrid when the weight is an integer; "int8": INT8
quantized activations and output; "int16", for PRELU alone, INT16 ones), ``wtype`` a TensorType name of the weight, ``form``
one of `FORMS` (``per-channel:last`` is the weight's last axis).  `build` returns the
model, its runtime inputs, and a float model computing the same op on the weights
dequantized as the form says (None when the form has no meaning, custom and none on an
integer): what "LiteRT computes it meaningfully" is judged against.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tflite_viewer.model.quantization import dequantize_blockwise

from .llm_models import A, Blockwise, Custom, OpSpec, PerChannel, PerTensor, W, write_model

TYPES = ("FLOAT32", "FLOAT16", "INT8", "UINT8", "INT16", "INT4", "INT2")
FORMS = ("none", "per-tensor", "per-channel:0", "per-channel:last", "blockwise", "custom")
ACTS = ("float", "int8")
#: the input's (scale, zero point) of each quantized activations kind ("int16" for PRELU
#: alone: LiteRT's int16 PRELU reads its alpha as INT8)
_ACT_INPUT_Q = {"int8": (0.05, 0), "int16": (0.0002, 0)}
BLOCK = 32
_RANGES = {"INT8": (-127, 128), "UINT8": (0, 256), "INT16": (-1000, 1001), "INT4": (-8, 8),
           "INT2": (-2, 2)}
_ZERO_POINT = {"UINT8": 128}


@dataclass(frozen=True)
class OpForm:
    """How to build one op around its weight: the weight's input position and shape, the
    activation shape, the output shape, options, which ``act`` kinds apply."""

    op: str
    weight_pos: int
    weight_shape: tuple[int, ...]
    x_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    options_type: str | None = None
    options: dict | None = None
    acts: tuple[str, ...] = ACTS
    #: the weight is the op's only tensor input (DEQUANTIZE) / its table (EMBEDDING_LOOKUP)
    kind: str = "weighted"
    #: output channels of a bias (None: the op has none; LiteRT's convolutions need one)
    bias: int | None = None


OPS: dict[str, OpForm] = {f.op: f for f in (
    OpForm("FULLY_CONNECTED", 1, (8, 64), (2, 64), (2, 8), "FullyConnectedOptions", {},
           bias=8),
    OpForm("CONV_2D", 1, (8, 3, 3, 64), (1, 5, 5, 64), (1, 3, 3, 8), "Conv2DOptions",
           {"padding": "VALID", "stride_w": 1, "stride_h": 1}, bias=8),
    OpForm("DEPTHWISE_CONV_2D", 1, (1, 3, 3, 64), (1, 5, 5, 64), (1, 3, 3, 64),
           "DepthwiseConv2DOptions", {"padding": "VALID", "stride_w": 1, "stride_h": 1,
                                      "depth_multiplier": 1}, bias=64),
    OpForm("TRANSPOSE_CONV", 1, (8, 3, 3, 64), (1, 4, 4, 64), (1, 6, 6, 8),
           "TransposeConvOptions", {"padding": "VALID", "stride_w": 1, "stride_h": 1},
           kind="transpose", bias=8),
    OpForm("BATCH_MATMUL", 1, (64, 8), (2, 64), (2, 8), "BatchMatMulOptions", {}),
    OpForm("PRELU", 1, (64,), (2, 64), (2, 64), acts=ACTS + ("int16",)),
    OpForm("EMBEDDING_LOOKUP", 1, (6, 64), (3,), (3, 64), acts=("float",), kind="lookup"),
    OpForm("DEQUANTIZE", 0, (8, 64), (), (8, 64), acts=("float",), kind="dequantize"),
)}


class Skip(Exception):
    """A combination that does not exist (per-channel on the last axis of a rank-1
    weight, an int8 activation with a float weight...)."""


def combos(ops=None):
    """Every (op, act, wtype, form) of the matrix, in a stable order."""
    for name in ops or OPS:
        spec = OPS[name]
        for act in spec.acts:
            for wtype in TYPES:
                for form in FORMS:
                    yield name, act, wtype, form


def _axis(spec: OpForm, form: str) -> int | None:
    if not form.startswith("per-channel"):
        return None
    axis = 0 if form.endswith(":0") else len(spec.weight_shape) - 1
    if form.endswith("last") and axis == 0:
        raise Skip("the weight has one axis: per-channel:last is per-channel:0")
    if spec.weight_shape[axis] == 1:
        raise Skip("one scale on an axis of size 1 is the per-tensor form")
    return axis


def _weight(spec: OpForm, wtype: str, form: str, rng, scale_index: int):
    """(W of the weight, its dequantized float32 values or None, extra tensors).  An UINT8
    weight has zero point 128, but an UINT8 table 0 (LiteRT's lookup requires it)."""
    shape = spec.weight_shape
    if wtype in ("FLOAT32", "FLOAT16"):
        values = (rng.standard_normal(shape) * 0.1).astype(np.float32 if wtype == "FLOAT32"
                                                            else np.float16)
        real = values.astype(np.float32)
    else:
        lo, hi = _RANGES[wtype]
        values = rng.integers(lo, hi, shape).astype(np.uint8 if wtype == "UINT8" else
                                                    np.int16 if wtype == "INT16" else np.int8)
        real = None
    zp = 0 if spec.kind == "lookup" else _ZERO_POINT.get(wtype, 0)
    extra: list = []
    axis = _axis(spec, form)
    if form == "none":
        quant = None
    elif form == "per-tensor":
        quant = PerTensor(0.02, zp)
        if real is None:
            real = ((values.astype(np.float64) - zp) * np.float32(0.02)).astype(np.float32)
    elif axis is not None:
        n = shape[axis]
        scales = (rng.random(n) * 0.03 + 0.005).astype(np.float32)
        quant = PerChannel(scales.tolist(), zp, axis)
        if real is None:
            b = [1] * len(shape)
            b[axis] = n
            real = ((values.astype(np.float64) - zp) * scales.reshape(b)).astype(np.float32)
    elif form == "blockwise":
        if shape[-1] % BLOCK:
            raise Skip("the last axis is not a whole number of blocks")
        scales = (rng.random(shape[:-1] + (shape[-1] // BLOCK,)) * 0.03 + 0.005).astype(np.float16)
        quant = Blockwise(scale_index, BLOCK)
        extra.append(W(scales, name="block_scales"))
        if real is None:
            real = dequantize_blockwise(values, scales, None, BLOCK)
    else:
        quant = Custom()
    return W(values, wtype, quant, name="weight"), real, extra


def _out_scale(spec: OpForm, real, x, rng) -> float:
    """An int8 output scale that holds the op's float result (computed here by the
    float model on the dequantized weight; 0.25 when the weight has no real value)."""
    if real is None:
        return 0.25
    from tflite_viewer.interpreter import Interpreter
    tensors = [A(spec.x_shape, name="x"), W(real), A(spec.out_shape)]
    ins = [0, 1]
    if spec.kind == "transpose":
        tensors = [W(np.array(spec.out_shape, np.int32)), W(real), A(spec.x_shape),
                   A(spec.out_shape)]
        ins = [0, 1, 2]
    runtime = [2] if spec.kind == "transpose" else [0]
    model = write_model(tensors, [OpSpec(spec.op, ins, [3 if spec.kind == "transpose" else 2],
                                         spec.options_type, spec.options)], runtime,
                        [3 if spec.kind == "transpose" else 2])
    interp = Interpreter(model)
    interp.set_inputs([x])
    out = list(interp.invoke().values())[0]
    return float(max(np.max(np.abs(out)), 1e-3) / 100.0)


def _bias(spec: OpForm, act: str, w: W, rng) -> tuple[W | None, W | None]:
    """(the op's bias, its float equivalent): FLOAT32 with float activations, INT32 with
    int8 ones (scale = input scale x weight scale, per channel when the weight is, else
    per tensor; zero when the weight has no usable scale)."""
    if spec.bias is None:
        return None, None
    real = (rng.standard_normal(spec.bias) * 0.1).astype(np.float32)
    if act != "int8":
        return W(real, name="bias"), W(real, name="bias")
    q = w.quant
    if isinstance(q, PerTensor):
        scales = np.full(spec.bias, 0.05 * q.scale)
    elif isinstance(q, PerChannel) and len(q.scales) == spec.bias:
        scales = 0.05 * np.asarray(q.scales)
    else:
        return W(np.zeros(spec.bias, np.int32), "INT32", PerTensor(1.0), name="bias"), \
            W(np.zeros(spec.bias, np.float32), name="bias")
    values = np.round(real / scales).astype(np.int32)
    quant = PerTensor(float(scales[0])) if isinstance(q, PerTensor) else PerChannel(scales.tolist())
    return W(values, "INT32", quant, name="bias"), \
        W((values * scales).astype(np.float32), name="bias")


def build(op: str, act: str, wtype: str, form: str, rng: np.random.Generator
          ) -> tuple[bytes, list[np.ndarray], bytes | None, dict[str, Any]]:
    """(model, runtime inputs, float model on the dequantized weight or None, facts)."""
    spec = OPS[op]
    if act not in spec.acts:
        raise Skip(f"{op} has no {act} configuration")
    if act != "float" and wtype in ("FLOAT32", "FLOAT16"):
        raise Skip(f"an {act} op with a float weight is no configuration of any kernel")
    tensors: list = []
    if spec.kind == "dequantize":
        w, real, extra = _weight(spec, wtype, form, rng, 2)
        tensors = [w, A(spec.out_shape, "FLOAT32", name="out"), *extra]
        model = write_model(tensors, [OpSpec(op, [0], [1])], [], [1])
        # the float reference of DEQUANTIZE is the dequantized weight itself
        return model, [], None, {"real_output": real}
    if spec.kind == "lookup":
        w, real, extra = _weight(spec, wtype, form, rng, 3)
        ids = np.array([0, 5, 2], np.int32)
        model = write_model([A(spec.x_shape, "INT32"), w, A(spec.out_shape, "FLOAT32"), *extra],
                            [OpSpec(op, [0, 1], [2])], [0], [2])
        return model, [ids], None, {"real_output": None if real is None else real[ids]}
    x = rng.standard_normal(spec.x_shape).astype(np.float32)
    qx = _ACT_INPUT_Q.get(act)
    scale_index = 3
    w, real, extra = _weight(spec, wtype, form, rng, scale_index)
    out_q = (_out_scale(spec, real, x, rng) * (100.0 / 30000 if act == "int16" else 1.0), 0) \
        if act != "float" else None
    act_type = {"int8": "INT8", "int16": "INT16"}.get(act, "FLOAT32")
    xt = A(spec.x_shape, act_type, PerTensor(*qx) if qx else None, name="x")
    ot = A(spec.out_shape, act_type, PerTensor(*out_q) if out_q else None, name="out")
    bias, fbias = _bias(spec, act, w, rng)
    if spec.kind == "transpose":
        shape_t = W(np.array(spec.out_shape, np.int32), name="output_shape")
        tensors = [shape_t, w, xt, *extra, ot]  # the scales (if any) at index 3
        inputs_ix = [0, 1, 2]
        runtime = [2]
    else:
        tensors = [xt, w, A((1,), name="unused"), *extra, ot]
        inputs_ix = [0, 1]
        runtime = [0]
    if bias is not None:
        tensors.append(bias)
        inputs_ix.append(len(tensors) - 1)
    out_ix = next(k for k, u in enumerate(tensors) if u is ot)
    model = write_model(tensors, [OpSpec(op, inputs_ix, [out_ix], spec.options_type,
                                         spec.options)], runtime, [out_ix])
    x_in = x
    if qx:
        info = np.iinfo(np.int16 if act == "int16" else np.int8)
        x_in = np.clip(np.round(x / qx[0]) + qx[1], info.min, info.max).astype(info.dtype)
    float_model = None
    if real is not None:
        def at(t) -> int:  # (the dataclasses hold arrays: compare by identity)
            return next(k for k, u in enumerate(tensors) if u is t)

        ftensors = list(tensors)
        ftensors[1] = W(real, name="weight")
        ftensors[at(xt)] = A(spec.x_shape, name="x")
        ftensors[out_ix] = A(spec.out_shape, name="out")
        if bias is not None:
            ftensors[at(bias)] = fbias
        for e in extra:
            ftensors[at(e)] = A((1,), name="unused_scales")
        float_model = write_model(ftensors, [OpSpec(op, inputs_ix, [out_ix], spec.options_type,
                                                    spec.options)], runtime, [out_ix])
    x_float = ((x_in.astype(np.float32) - qx[1]) * qx[0]) if qx else x
    return model, [x_in], float_model, {"float_inputs": [x_float], "out_q": out_q,
                                        "out_type": act_type,
                                        "out_index": out_ix}
