"""LiteRT's GPU compatibility rules, operator by operator.

A transcription of ``CheckGpuDelegateCompatibility`` (google-ai-edge/LiteRT,
``tflite/tools/versioning/gpu_compatibility.cc``) over an operator signature as the GPU
delegate builds it at run time (``GetOpSignature``: each tensor's type, dimensions and
whether it is a constant), with the standard broadcast rules the delegate uses (the
offline analyzer assumes the enhanced ones).  Returns why an operator is not compatible,
or None.

No GPU delegate runs on this machine (the wheel's model analyzer is a stub and its WebGPU
accelerator finds no adapter), so these rules are tested case by case from the source
(tests/targets/test_gpu_rules.py), not against a running delegate.
"""
from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_TYPE_SIZE = {"FLOAT32": 4, "FLOAT16": 2, "INT32": 4, "UINT8": 1, "INT64": 8, "BOOL": 1,
              "INT16": 2, "COMPLEX64": 8, "INT8": 1, "FLOAT64": 8, "COMPLEX128": 16,
              "UINT64": 8, "UINT32": 4, "UINT16": 2, "BFLOAT16": 2}


@dataclass
class Spec:
    type: str  # "NOTYPE" for an omitted optional input
    dims: tuple[int, ...] = ()
    is_const: bool = False


@dataclass
class Signature:
    op: str  # builtin name
    inputs: list[Spec]
    outputs: list[Spec]
    options: dict[str, Any] | None = None  # None: no params struct (never for ops with one)
    custom_name: str = ""
    custom_data: bytes | None = None
    version: int = 1
    extra: dict[str, Any] = field(default_factory=dict)


def _runtime_inputs(s: Signature) -> int:
    return sum(1 for i in s.inputs if not i.is_const and i.type != "NOTYPE")


def _io(s: Signature, runtime_inputs: int, outputs: int) -> str | None:
    n = _runtime_inputs(s)
    if n != runtime_inputs:
        return f"expected {runtime_inputs} runtime input(s), the node has {n}"
    if len(s.outputs) != outputs:
        return f"expected {outputs} output(s), the node has {len(s.outputs)}"
    return None


def _io_const(s: Signature, runtime_inputs: int, consts: int, outputs: int) -> str | None:
    n = sum(1 for i in s.inputs if i.is_const)
    if n != consts:
        return f"expected {consts} constant input(s), the node has {n}"
    return _io(s, runtime_inputs, outputs)


def _activation(act: str | None) -> str | None:
    """IsActivationSupported: every fused activation but SIGN_BIT."""
    return "fused activation SIGN_BIT is not implemented" if act == "SIGN_BIT" else None


def _opt(s: Signature, name: str, default: Any = 0) -> Any:
    return (s.options or {}).get(name, default)


def _strides(h: int, w: int) -> str | None:
    return None if h > 0 and w > 0 else f"incorrect strides {h}x{w}"


def _conv_io(s: Signature) -> str | None:
    n = _runtime_inputs(s)
    if not 1 <= n <= 2:
        return f"expected 1 or 2 runtime inputs, the node has {n}"
    if len(s.outputs) != 1:
        return f"expected 1 output, the node has {len(s.outputs)}"
    if n == 1 and len(s.inputs) < 2:
        return "the weights input is missing"
    return None


def _custom_struct(s: Signature, fields: int) -> list[int] | None:
    if not s.custom_data:
        return None
    raw = (bytes(s.custom_data) + bytes(4 * fields))[:4 * fields]
    return list(struct.unpack(f"<{fields}i", raw))


def _pooling(s: Signature) -> str | None:
    if s.custom_data is not None or s.op == "CUSTOM":
        params = _custom_struct(s, 6)
        if params is None:
            return "unable to retrieve custom_initial_data"
        why = _io(s, 1, 2)
        _, sw, sh, fw, fh, act = params
        act_name = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH",
                    5: "SIGN_BIT", 6: "SIGMOID"}.get(act, "NONE")
    else:
        why = _io(s, 1, 1)
        sw, sh = _opt(s, "stride_w"), _opt(s, "stride_h")
        fw, fh = _opt(s, "filter_width"), _opt(s, "filter_height")
        act_name = _opt(s, "fused_activation_function", "NONE")
    if why:
        return why
    if fh <= 0 or fw <= 0:
        return f"incorrect kernel {fh}x{fw}"
    return _strides(sh, sw) or _activation(act_name)


def _broadcast(a: Spec, b: Spec) -> str | None:
    """CheckAddMulBroadcastCompatibility, standard flags."""
    if len(a.dims) > 1 and len(b.dims) > 1 and len(a.dims) != len(b.dims):
        longer, shorter = (a.dims, b.dims) if len(a.dims) >= len(b.dims) else (b.dims, a.dims)
        ok = ((len(longer) == 4 and len(shorter) == 3 and longer[0] == 1)
              or (len(longer) == 4 and len(shorter) == 2 and longer[0] == 1
                  and shorter[0] == 1 and shorter[1] == 1)
              or (len(longer) == 4 and len(shorter) == 2 and longer[0] == shorter[0]
                  and longer[3] == shorter[1]))
        if not ok:
            return f"no broadcast between {list(a.dims)} and {list(b.dims)}"
    return None


def _elementwise_1(s: Signature) -> str | None:
    return _io_const(s, 1, 0, 1)


def _elementwise_2(s: Signature) -> str | None:
    if _io_const(s, 2, 0, 1) and _io_const(s, 1, 1, 1):
        return "the op handles only 1 or 2 operands"
    if s.op in ("DIV", "SUB"):
        return _activation(_opt(s, "fused_activation_function", "NONE"))
    return None


def _axes_const(s: Signature, idx: int) -> str | None:
    axes = s.inputs[idx]
    if not axes.is_const:
        return f"{s.op} needs constant axes"
    if axes.type != "INT32":
        return f"{s.op} needs INT32 axes, not {axes.type}"
    return None


def _reduce(s: Signature) -> str | None:
    return _io_const(s, 1, 1, 1) or _axes_const(s, 1)


def _depthwise(s: Signature) -> str | None:
    why = _conv_io(s)
    if why:
        return why
    why = (_strides(_opt(s, "stride_h"), _opt(s, "stride_w"))
           or (None if _opt(s, "dilation_h_factor") > 0 and _opt(s, "dilation_w_factor") > 0
               else "incorrect dilation")
           or _activation(_opt(s, "fused_activation_function", "NONE")))
    if why:
        return why
    x, w, y = s.inputs[0], s.inputs[1], s.outputs[0]
    bias = s.inputs[2] if len(s.inputs) > 2 else None
    for t, what in ((x, "input"), (w, "filter"), (y, "output")):
        if len(t.dims) != 4:
            return f"{what} is not 4-D"
    if x.dims[0] != y.dims[0]:
        return "input and output batch differ"
    if w.dims[3] != y.dims[3]:
        return "filter and output channels differ"
    if y.dims[3] != x.dims[3] * _opt(s, "depth_multiplier"):
        return "output channels != input channels x depth multiplier"
    if bias is not None and _count(bias.dims) != y.dims[3]:
        return "bias size != output channels"
    return None


def _count(dims: Sequence[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _fully_connected(s: Signature) -> str | None:
    if not s.inputs:
        return "expected at least 1 input"
    if _opt(s, "weights_format", "DEFAULT") != "DEFAULT":
        return f"weights format {_opt(s, 'weights_format')} is not supported"
    if _runtime_inputs(s) > 2:
        return "more than 2 runtime inputs"
    if s.inputs[0].is_const:
        return "a constant input is not supported"
    if _opt(s, "keep_num_dims", False):
        if not s.outputs:
            return "expected at least 1 output"
        if len(s.inputs[0].dims) != len(s.outputs[0].dims):
            return "keep_num_dims with input and output ranks that differ"
    return None


def _gather(s: Signature) -> str | None:
    if _io_const(s, 2, 0, 1) and _io_const(s, 1, 1, 1):
        return "the op handles only 1 or 2 operands"
    if len(s.inputs[1].dims) != 1:
        return "only 1-D indices"
    return None if s.inputs[1].type == "INT32" else "only INT32 indices"


def _pad(s: Signature) -> str | None:
    if s.op == "MIRROR_PAD" and _opt(s, "mode", "REFLECT") != "REFLECT":
        return "mirror padding other than REFLECT"
    why = _io(s, 1, 1)
    if why:
        return why
    if len(s.inputs) < 2:
        return "the paddings input is missing"
    p = s.inputs[1]
    if len(p.dims) != 2:
        return f"paddings tensor is {len(p.dims)}-D, not 2-D"
    if p.dims[0] not in (3, 4) or p.dims[1] != 2:
        return f"paddings shape {list(p.dims)}, not 4x2 or 3x2"
    return None


def _slice_like(s: Signature, need: int) -> str | None:
    if len(s.inputs) < need:
        return f"{s.op} needs {need} inputs"
    if len(s.inputs[0].dims) not in (3, 4):
        return f"{s.op} handles 3-D or 4-D tensors only"
    return None


def _strided_slice(s: Signature) -> str | None:
    for mask in ("ellipsis_mask", "new_axis_mask", "shrink_axis_mask"):
        if _opt(s, mask):
            return f"{mask} is not supported"
    return _slice_like(s, 4)


def _lstm(s: Signature) -> str | None:
    kind = _opt(s, "kernel_type", "FULL")
    act = _opt(s, "fused_activation_function", "NONE")
    if kind == "FULL":
        if len(s.inputs) not in (20, 24):
            return f"expected 20 or 24 inputs, the node has {len(s.inputs)}"
        if len(s.outputs) != 1:
            return f"expected 1 output, the node has {len(s.outputs)}"
        return None if act in ("TANH", "SIGMOID") else f"activation {act}"
    why = _io_const(s, 3, 2, 4)
    if why:
        return why
    if s.outputs[3].dims and s.outputs[3].dims[-1] % 4:
        return "activation depth is not a multiple of 4"
    if act != "TANH":
        return f"activation {act} (only TANH)"
    if _opt(s, "cell_clip", 0.0) or _opt(s, "proj_clip", 0.0):
        return "cell_clip or proj_clip is set"
    return None


def _cast(s: Signature) -> str | None:
    why = _io(s, 1, 1)
    if why:
        return why
    a, b = s.inputs[0].type, s.outputs[0].type
    if (a == "BOOL" and b in ("FLOAT16", "FLOAT32")) or (a in ("FLOAT16", "FLOAT32")
                                                         and b == "BOOL"):
        return None
    if a in ("FLOAT32", "INT32") and b in ("FLOAT32", "INT32"):
        return None
    return f"CAST from {a} to {b}"


def _select(s: Signature) -> str | None:
    if len(s.inputs) != 3 or len(s.outputs) != 1:
        return "expected 3 inputs and 1 output"
    bad = "the condition must be BOOL or float, the branches the output's shape or scalars"
    cond, yes, no = s.inputs
    out = s.outputs[0].dims
    if cond.type not in ("BOOL", "FLOAT16", "FLOAT32"):
        return bad
    if cond.dims:
        off = len(out) - len(cond.dims)
        if off < 0 or any(c != out[off + i] and c != 1 for i, c in enumerate(cond.dims)):
            return bad
    for t, what in ((yes, "if"), (no, "else")):
        if t.dims and t.dims != out and (len(t.dims) > 1 or t.dims[0] > 1):
            return bad
        if not t.is_const and len(t.dims) == 2:
            return f"a 2-D {what} tensor must be constant"
    return None


def _custom(s: Signature) -> str | None:
    if s.custom_name == "Convolution2DTransposeBias":
        if len(s.inputs) < 2:
            return "the weights input is missing"
        params = _custom_struct(s, 3)
        return ("unable to retrieve custom_initial_data" if params is None
                else _strides(params[2], params[1]))
    if s.custom_name == "MaxPoolingWithArgmax2D":
        return _pooling(s)
    if s.custom_name == "MaxUnpooling2D":
        why = _io(s, 2, 1)
        params = _custom_struct(s, 5)
        if why or params is None:
            return why or "unable to retrieve custom_initial_data"
        _, sw, sh, fw, fh = params
        return (f"incorrect kernel {fh}x{fw}" if fh <= 0 or fw <= 0 else _strides(sh, sw))
    if s.custom_name == "Resampler":
        why = _io(s, 2, 1)
        if why:
            return why
        src, warp = s.inputs[0], s.inputs[1]
        if len(src.dims) != 4 or len(warp.dims) != 4:
            return "src or warp is not 4-D"
        if src.dims[0] != warp.dims[0]:
            return "src and warp batch differ"
        return "warp has fewer than 2 channels" if warp.dims[3] < 2 else None
    return f"custom op {s.custom_name!r} is not supported"


def _ok(_s: Signature) -> None:
    return None


def _add(s: Signature) -> str | None:
    if len(s.inputs) != 2:
        return "ADD requires two inputs"
    return _broadcast(s.inputs[0], s.inputs[1])


def _mul(s: Signature) -> str | None:
    if len(s.inputs) != 2:
        return "MUL requires two inputs"
    a, b = s.inputs
    if len(a.dims) != len(b.dims):
        why = _broadcast(a, b)
        if why:
            return why
    return _activation(_opt(s, "fused_activation_function", "NONE"))


def _conv2d(s: Signature) -> str | None:
    return (_conv_io(s) or _strides(_opt(s, "stride_h"), _opt(s, "stride_w"))
            or (None if _opt(s, "dilation_h_factor") > 0 and _opt(s, "dilation_w_factor") > 0
                else "incorrect dilation")
            or _activation(_opt(s, "fused_activation_function", "NONE")))


def _block(name: str):
    def check(s: Signature) -> str | None:
        why = _io(s, 1, 1)
        if why:
            return why
        bs = _opt(s, "block_size")
        if bs == 1:
            return f"{name} block_size 1 is a no-op"
        return f"{name} block_size must be > 1" if bs < 1 else None
    return check


def _dequantize(s: Signature) -> str | None:
    if len(s.inputs) != 1 or len(s.outputs) != 1:
        return "expected 1 input and 1 output"
    return "INT16 dequantization is not supported" if s.inputs[0].type == "INT16" else None


def _bitcast(s: Signature) -> str | None:
    why = _io(s, 1, 1)
    if why:
        return why
    a, b = s.inputs[0], s.outputs[0]
    sa, sb = _TYPE_SIZE.get(a.type), _TYPE_SIZE.get(b.type)
    if sa is None or sb is None:
        return "could not size the types"
    if sa == sb:
        return None if a.dims == b.dims else "same element size but shapes differ"
    big, small, sbig, ssmall = (a.dims, b.dims, sa, sb) if sa > sb else (b.dims, a.dims, sb, sa)
    if len(big) + 1 != len(small) or big != small[:-1] or small[-1] * ssmall != sbig:
        return "shapes do not match the element sizes"
    return None


def _resize(s: Signature) -> str | None:
    why = _io(s, 1, 1)
    if why:
        return why
    if s.op == "RESIZE_BILINEAR" and _opt(s, "align_corners", False) and _opt(
            s, "half_pixel_centers", False):
        return "align_corners with half_pixel_centers"
    return None


def _cumsum(s: Signature) -> str | None:
    if len(s.inputs) != 2 or len(s.outputs) != 1:
        return "expects 2 inputs and 1 output"
    x, axis = s.inputs
    if (x.type not in ("FLOAT16", "FLOAT32") or s.outputs[0].type != x.type
            or axis.type != "INT32" or not axis.is_const):
        return "input/output must be float and the axis a constant INT32"
    return None


def _one_hot(s: Signature) -> str | None:
    if len(s.inputs) != 4 or len(s.outputs) != 1:
        return "expects 4 inputs and 1 output"
    bad = "indices INT32; on/off constant float scalars; axis -1 or the last"
    idx = s.inputs[0]
    if idx.type != "INT32":
        return bad
    axis = _opt(s, "axis", -1)
    n = len(idx.dims)
    if axis != -1 and (n == 0 or axis != idx.dims[n - 1]):
        return bad
    for i in range(n - 1):
        if not (n > 3 and i == 0) and idx.dims[i] != 1:
            return f"non-singleton dimension {i}"
    on, off = s.inputs[2], s.inputs[3]
    if on.type != "FLOAT32" or off.type != "FLOAT32":
        return bad
    if not on.is_const or not off.is_const or len(on.dims) > 1 or len(off.dims) > 1:
        return bad
    if (on.dims and on.dims[0] > 1) or (off.dims and off.dims[0] > 1):
        return bad
    return None


def _embedding(s: Signature) -> str | None:
    if len(s.inputs) != 2 or len(s.outputs) != 1:
        return "expects 2 inputs and 1 output"
    ids, value = s.inputs
    out = s.outputs[0]
    if len(ids.dims) != 1:
        return "ids must be 1-D"
    if len(value.dims) < 2 or len(value.dims) != len(out.dims):
        return "values and output ranks"
    if any(value.dims[i] != out.dims[i] for i in range(1, len(out.dims))):
        return "values and output shapes differ"
    if value.type not in ("INT8", "INT4", "INT2", "FLOAT32"):
        return f"values of type {value.type}"
    return None


def _dynamic_update_slice(s: Signature) -> str | None:
    if len(s.inputs) != 3:
        return "requires 3 inputs"
    operand, update, start = s.inputs
    if operand.type != update.type:
        return "array and update types differ"
    if len(start.dims) != 1:
        return "start indices must be 1-D"
    if start.type != "INT32":
        return "start indices must be INT32"
    return None if len(update.dims) == len(operand.dims) else "ranks differ"


COMPAT = {
    "ADD": _add, "ADD_N": lambda s: None if len(s.inputs) == 2 else "ADD_N takes 2 inputs only",
    "AVERAGE_POOL_2D": _pooling, "MAX_POOL_2D": _pooling,
    "BATCH_MATMUL": lambda s: None if len(s.inputs) == 2 and len(s.outputs) == 1
    else "expected 2 inputs and 1 output",
    "BITCAST": _bitcast, "CAST": _cast, "CONCATENATION": _ok, "CONV_2D": _conv2d,
    "CUMSUM": _cumsum, "DENSIFY": lambda s: _io(s, 0, 1),
    "DEPTHWISE_CONV_2D": _depthwise, "DEPTH_TO_SPACE": _block("DEPTH_TO_SPACE"),
    "DEQUANTIZE": _dequantize, "EMBEDDING_LOOKUP": _embedding,
    "DYNAMIC_UPDATE_SLICE": _dynamic_update_slice, "FULLY_CONNECTED": _fully_connected,
    "GATHER": _gather, "HARD_SWISH": lambda s: _io(s, 1, 1), "LSTM": _lstm,
    "MEAN": _reduce, "MUL": _mul, "PACK": _ok, "ONE_HOT": _one_hot,
    "QUANTIZE": lambda s: _io(s, 1, 1), "RELU_N1_TO_1": _ok, "PRELU": _ok,
    "RESHAPE": lambda s: _io(s, 1, 1), "SELECT": _select, "SELECT_V2": _select,
    "SLICE": lambda s: _slice_like(s, 3),
    "SOFTMAX": lambda s: None if _opt(s, "beta", 0.0) == 1 else "beta != 1",
    "SPACE_TO_DEPTH": _block("SPACE_TO_DEPTH"), "SPLIT": _ok, "SPLIT_V": _ok,
    "STRIDED_SLICE": _strided_slice, "TILE": lambda s: _io(s, 1, 1),
    "TOPK_V2": lambda s: _io(s, 1, 2), "TRANSPOSE": lambda s: _io(s, 1, 1),
    "TRANSPOSE_CONV": lambda s: _conv_io(s) or _strides(_opt(s, "stride_h"),
                                                       _opt(s, "stride_w")),
    "RESIZE_BILINEAR": _resize, "RESIZE_NEAREST_NEIGHBOR": _resize,
    "RELU": _ok, "RELU6": _ok, "LEAKY_RELU": _ok,
    **{op: _reduce for op in ("REDUCE_ANY", "REDUCE_ALL", "REDUCE_MAX", "REDUCE_MIN",
                              "REDUCE_PROD", "SUM")},
    "PAD": _pad, "PADV2": _pad, "MIRROR_PAD": _pad,
    "REVERSE_V2": lambda s: _io_const(s, 1, 1, 1) or _axes_const(s, 1),
    **{op: _elementwise_1 for op in ("ABS", "CEIL", "COS", "ELU", "EXP", "FLOOR", "GELU", "LOG",
                                     "LOGICAL_NOT", "LOGISTIC", "NEG", "ROUND", "RSQRT",
                                     "SIGN", "SIN", "SQRT", "SQUARE", "TANH")},
    **{op: _elementwise_2 for op in ("ATAN2", "DIV", "EQUAL", "FLOOR_DIV", "FLOOR_MOD",
                                     "GREATER", "GREATER_EQUAL", "LOGICAL_AND", "LOGICAL_OR",
                                     "LESS", "LESS_EQUAL", "MAXIMUM", "MINIMUM", "NOT_EQUAL",
                                     "POW", "RIGHT_SHIFT", "STABLEHLO_REMAINDER",
                                     "STABLEHLO_SHIFT_LEFT", "SQUARED_DIFFERENCE", "SUB")},
    "CUSTOM": _custom,
}


def compatibility(s: Signature) -> str | None:
    """CheckGpuDelegateCompatibility: why ``s`` is not GPU compatible, or None."""
    check = COMPAT.get(s.op)
    if check is None:
        return f"{s.op} is not supported"
    try:
        return check(s)
    except (IndexError, TypeError) as exc:
        return f"malformed operator ({type(exc).__name__})"
