"""One-op models of the ops with a simple signature (unary, binary, comparison, reduction,
data movement), in each tensor type: FLOAT32, FLOAT16, INT8/UINT8/INT16 quantized per
tensor, INT32, INT64, BOOL.  tools/sweep_op_types.py runs them by LiteRT and here;
test_refusal_audit.py gives their tensors every quantization form.

`build(op, tname, rng)` returns the model (tests/interpreter/singleop.py's writer) and
its runtime inputs.
"""
from __future__ import annotations

import numpy as np

from .singleop import Input, single_op_model

TYPES = {"FLOAT32": (np.float32, None), "FLOAT16": (np.float16, None),
         "INT8": (np.int8, (0.05, 3)), "UINT8": (np.uint8, (0.05, 128)),
         "INT16": (np.int16, (0.001, 0)), "INT32": (np.int32, None), "INT64": (np.int64, None),
         "BOOL": (np.bool_, None)}
UNARY = ["ABS", "CEIL", "COS", "ELU", "EXP", "FLOOR", "HARD_SWISH", "LOG", "LOGISTIC", "NEG",
         "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "ROUND", "RSQRT", "SIGN", "SIN",
         "SQRT", "SQUARE", "TANH", "GELU", "ZEROS_LIKE", "LOG_SOFTMAX", "SOFTMAX",
         "LOGICAL_NOT", "L2_NORMALIZATION", "LEAKY_RELU"]
BINARY = ["ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "POW", "FLOOR_DIV", "FLOOR_MOD",
          "SQUARED_DIFFERENCE", "LOGICAL_AND", "LOGICAL_OR", "PRELU"]
COMPARE = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]
REDUCE = ["SUM", "MEAN", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "REDUCE_ANY",
          "REDUCE_ALL", "ARG_MAX", "ARG_MIN", "CUMSUM"]
MOVE = ["RESHAPE", "TRANSPOSE", "REVERSE_V2", "SLICE", "GATHER", "TILE", "PAD", "PADV2",
        "EXPAND_DIMS", "SQUEEZE", "CONCATENATION", "PACK", "UNPACK", "SPLIT", "BROADCAST_TO",
        "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "MIRROR_PAD", "GATHER_ND", "SELECT_V2",
        "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND", "STRIDED_SLICE", "SHAPE", "RANK", "WHERE",
        "SCATTER_ND", "DYNAMIC_UPDATE_SLICE", "FILL", "REVERSE_SEQUENCE"]
OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions",
           "SOFTMAX": "SoftmaxOptions", "LOG_SOFTMAX": None, "LEAKY_RELU": "LeakyReluOptions",
           "GELU": "GeluOptions", "SUM": "ReducerOptions", "MEAN": "ReducerOptions",
           "REDUCE_MAX": "ReducerOptions", "REDUCE_MIN": "ReducerOptions",
           "REDUCE_PROD": "ReducerOptions", "REDUCE_ANY": "ReducerOptions",
           "REDUCE_ALL": "ReducerOptions", "CONCATENATION": "ConcatenationOptions",
           "PACK": "PackOptions", "UNPACK": "UnpackOptions", "SPLIT": "SplitOptions",
           "DEPTH_TO_SPACE": "DepthToSpaceOptions", "SPACE_TO_DEPTH": "SpaceToDepthOptions",
           "MIRROR_PAD": "MirrorPadOptions", "GATHER": "GatherOptions",
           "STRIDED_SLICE": "StridedSliceOptions", "SHAPE": "ShapeOptions",
           "CUMSUM": "CumsumOptions", "ARG_MAX": "ArgMaxOptions", "ARG_MIN": "ArgMinOptions",
           "SQUEEZE": "SqueezeOptions", "REVERSE_SEQUENCE": "ReverseSequenceOptions"}
OPT_VALUES = {"SoftmaxOptions": {"beta": 1.0}, "LeakyReluOptions": {"alpha": 0.2},
              "ReducerOptions": {"keep_dims": False}, "ConcatenationOptions": {"axis": 1},
              "PackOptions": {"values_count": 2, "axis": 0},
              "UnpackOptions": {"num": 2, "axis": 0}, "SplitOptions": {"num_splits": 2},
              "DepthToSpaceOptions": {"block_size": 2}, "SpaceToDepthOptions": {"block_size": 2},
              "MirrorPadOptions": {"mode": "REFLECT"}, "GatherOptions": {"axis": 1},
              "StridedSliceOptions": {}, "ShapeOptions": {"out_type": "INT32"},
              "CumsumOptions": {}, "ArgMaxOptions": {"output_type": "INT32"},
              "ArgMinOptions": {"output_type": "INT32"}, "SqueezeOptions": {"squeeze_dims": [0]},
              "ReverseSequenceOptions": {"seq_dim": 1, "batch_dim": 0}, "GeluOptions": {}}


def _value(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 2).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(int(info.min), -100), min(int(info.max), 100)
    if dtype == np.uint8:
        lo, hi = 100, 160
    return rng.integers(lo, hi, shape).astype(dtype)


def build(op: str, tname: str, rng):
    """(model bytes, runtime inputs) for op on tensors of type tname, or None."""
    dtype, q = TYPES[tname]
    x = _value(rng, dtype, (2, 4, 4, 2) if op in ("DEPTH_TO_SPACE", "SPACE_TO_DEPTH",
                                                  "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND")
               else (2, 3, 4))
    if op in ("SQRT", "RSQRT", "LOG", "POW") and dtype != np.bool_:
        x = np.abs(x) + (np.array(1, dtype) if np.dtype(dtype).kind != "u" else 0)
    i32 = np.int32
    opts = OPTIONS.get(op)
    ovals = OPT_VALUES.get(opts)
    inp = Input(x.shape, dtype, q)
    out = (dtype, q) if q else dtype
    extra: list = []
    runtime = [x]
    if op in UNARY:
        ins, outs = [inp], [out]
    elif op in BINARY:
        y = _value(rng, dtype, (4,) if op != "PRELU" else (4,))
        if op in ("DIV", "FLOOR_DIV", "FLOOR_MOD") and np.dtype(dtype).kind in "iu":
            y = np.where(y == 0, 1, y).astype(dtype)
        if op == "POW":
            y = np.abs(y) % 3
        ins, outs = [inp, Input(y.shape, dtype, q)], [out]
        runtime = [x, y]
    elif op in COMPARE:
        y = _value(rng, dtype, (4,))
        ins, outs, runtime = [inp, Input(y.shape, dtype, q)], [np.bool_], [x, y]
    elif op in REDUCE:
        ins = [inp, np.array([1] if op != "CUMSUM" else 1, i32)]
        outs = [np.int32 if op.startswith("ARG") else out]
    else:
        table = {
            "RESHAPE": ([np.array([4, 6], i32)], [out]),
            "TRANSPOSE": ([np.array([2, 0, 1], i32)], [out]),
            "REVERSE_V2": ([np.array([1], i32)], [out]),
            "SLICE": ([np.array([0, 1, 1], i32), np.array([2, 2, -1], i32)], [out]),
            "GATHER": ([np.array([2, 0], i32)], [out]),
            "TILE": ([np.array([1, 2, 1], i32)], [out]),
            "PAD": ([np.array([[0, 1], [1, 0], [0, 0]], i32)], [out]),
            "PADV2": ([np.array([[0, 1], [1, 0], [0, 0]], i32), np.zeros((), dtype)], [out]),
            "EXPAND_DIMS": ([np.array(1, i32)], [out]),
            "SQUEEZE": ([], [out]),
            "CONCATENATION": ([], [out]),
            "PACK": ([], [out]),
            "UNPACK": ([], [out, out]),
            "SPLIT": (None, [out, out]),
            "BROADCAST_TO": ([np.array([2, 2, 3, 4], i32)], [out]),
            "DEPTH_TO_SPACE": ([], [out]), "SPACE_TO_DEPTH": ([], [out]),
            "MIRROR_PAD": ([np.array([[0, 1], [1, 0], [0, 0]], i32)], [out]),
            "GATHER_ND": ([np.array([[1, 2], [0, 0]], i32)], [out]),
            "SELECT_V2": (None, [out]),
            "BATCH_TO_SPACE_ND": ([np.array([1, 2], i32), np.zeros((2, 2), i32)], [out]),
            "SPACE_TO_BATCH_ND": ([np.array([2, 2], i32), np.zeros((2, 2), i32)], [out]),
            "STRIDED_SLICE": ([np.array([0, 1, 0], i32), np.array([2, 3, 4], i32),
                               np.array([1, 1, 2], i32)], [out]),
            "SHAPE": ([], [np.int32]), "RANK": ([], [np.int32]), "WHERE": ([], [np.int64]),
            "SCATTER_ND": (None, [out]),
            "DYNAMIC_UPDATE_SLICE": (None, [out]),
            "FILL": (None, [out]),
            "REVERSE_SEQUENCE": ([np.array([2, 1], i32)], [out]),
        }
        extra, outs = table[op]
        if op == "SQUEEZE":
            x = x[:1]
            inp = Input(x.shape, dtype, q)
            runtime = [x]
        if op in ("CONCATENATION", "PACK"):
            ins, runtime = [inp, Input(x.shape, dtype, q)], [x, x]
        elif op == "SPLIT":
            x = x[:, :2]
            ins, runtime = [np.array(1, i32), Input(x.shape, dtype, q)], [x]
        elif op == "SELECT_V2":
            ins, runtime = [Input((4,), np.bool_), inp, Input(x.shape, dtype, q)], \
                [np.array([True, False, True, False]), x, x]
        elif op == "SCATTER_ND":
            ins, runtime = [np.array([[1], [0]], i32), Input((2, 3, 4), dtype, q),
                            np.array([3, 3, 4], i32)], [x]
        elif op == "DYNAMIC_UPDATE_SLICE":
            ins, runtime = [inp, Input((1, 2, 2), dtype, q), np.array([1, 0, 1], i32)], \
                [x, x[:1, :2, :2]]
        elif op == "FILL":
            ins, runtime = [np.array([2, 3], i32), Input((), dtype, q)], [x.reshape(-1)[:1].reshape(())]
        else:
            ins = [inp] + extra
    return single_op_model(op, ins, outs, opts, ovals), runtime
