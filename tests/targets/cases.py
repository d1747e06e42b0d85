"""Single-operator models, one per op and type (and per option or shape that a target's rules
treat differently), built for the targets' oracles: LiteRT's default XNNPACK delegate and
TFLite Micro's interpreter each get every model, and our verdict must agree with theirs.

Output shapes are not worked out by hand: each model is built once with placeholder output
shapes, LiteRT (no delegate) prepares it, and the model is rebuilt with the shapes LiteRT
computed, so every tensor in the file has the shape a runtime gives it.  A case LiteRT
cannot prepare is a mistake in this catalogue and raises.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import lru_cache

import numpy as np

from tests.interpreter.singleop import Op, T, batch_model

F32, F16, I32, I64, U8, I8, I16, BOOL = (np.float32, np.float16, np.int32, np.int64, np.uint8,
                                         np.int8, np.int16, np.bool_)
_RNG = np.random.default_rng(31)


def f32(*shape) -> T:
    return T(shape, F32)


def q8(*shape, scale=0.05, zp=0) -> T:
    return T(shape, I8, scale, zp)


def qu8(*shape, scale=0.05, zp=128) -> T:
    return T(shape, U8, scale, zp)


def q16(*shape, scale=0.001) -> T:
    return T(shape, I16, scale, 0)


def const(data, dtype=F32, scale=None, zp=None, qdim=0) -> T:
    arr = np.asarray(data, dtype=dtype)
    return T.const(arr, scale, zp, qdim)


def weights(shape, dtype=F32, scale=None, qdim=0) -> T:
    """Random constant weights: float, or quantized (per-channel when ``scale`` is a list)."""
    if np.dtype(dtype).kind == "f":
        return const(_RNG.standard_normal(shape), dtype)
    info = np.iinfo(dtype)
    data = _RNG.integers(max(info.min, -100), min(info.max, 100) + 1, size=shape)
    zp = 0 if np.isscalar(scale) else [0] * len(scale)
    return const(data, dtype, scale, zp, qdim)


def _litert_shapes(model: bytes) -> list[tuple[int, ...]]:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    it = Interpreter(model_content=model, experimental_op_resolver_type=OpResolverType.
                     BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    return [tuple(int(d) for d in o["shape"]) for o in it.get_output_details()]


def build(op: Op) -> bytes:
    """The model of one operator, its output shapes as LiteRT computes them."""
    first = batch_model([op]).model
    shapes = _litert_shapes(first)
    outs = [replace(t, shape=s) for t, s in zip(op.outputs, shapes)]
    return batch_model([replace(op, outputs=outs)]).model


# -- the catalogue -----------------------------------------------------------------------------
def _float_types():
    return {"f32": (f32, F32), "q8": (q8, I8), "qu8": (qu8, U8)}


def _unary_cases() -> Iterator[tuple[str, Op]]:
    for op in ("ABS", "CEIL", "COS", "ELU", "EXP", "FLOOR", "GELU", "HARD_SWISH", "LOG",
               "LOGISTIC", "NEG", "RELU", "RELU6", "RELU_N1_TO_1", "ROUND", "RSQRT", "SIN",
               "SQRT", "SQUARE", "TANH"):
        yield f"{op}-f32", Op(op, [f32(1, 4, 4, 3)], [f32(1)])
    yield "LOGISTIC-q8", Op("LOGISTIC", [q8(1, 4, 4, 3)], [q8(1, scale=1 / 256, zp=-128)])
    for op in ("TANH", "ELU", "RELU", "ABS", "HARD_SWISH", "RSQRT"):
        yield f"{op}-q8", Op(op, [q8(1, 4, 4, 3)], [q8(1, scale=1 / 128)])
    for op in ("LOGISTIC", "TANH", "RELU"):
        yield f"{op}-qu8", Op(op, [qu8(1, 4, 4, 3)], [qu8(1, scale=1 / 256, zp=0)])
    for op in ("LOGISTIC", "TANH"):
        yield f"{op}-q16", Op(op, [q16(1, 8)], [T((1,), I16, 1 / 32768, 0)])
    yield "RELU-f32-rank7", Op("RELU", [f32(1, 1, 2, 1, 2, 1, 2)], [f32(1)])
    yield "RELU-f32-rank6", Op("RELU", [f32(1, 1, 2, 1, 2, 2)], [f32(1)])
    yield "RELU-f32-zero-dim", Op("RELU", [f32(1, 0, 3)], [f32(1)])
    yield "RELU-f32-scalar", Op("RELU", [f32()], [f32()])
    for alpha in (0.2, 0.0, -0.5):
        yield f"LEAKY_RELU-f32-alpha{alpha}", Op("LEAKY_RELU", [f32(1, 8)], [f32(1)],
                                                "LeakyReluOptions", {"alpha": alpha})
    yield "LEAKY_RELU-q8", Op("LEAKY_RELU", [q8(1, 8)], [q8(1)], "LeakyReluOptions",
                              {"alpha": 0.2})
    yield "LEAKY_RELU-q8-scale", Op("LEAKY_RELU", [q8(1, 8, scale=1.0)], [q8(1, scale=1e-4)],
                                    "LeakyReluOptions", {"alpha": 0.2})
    yield "DEQUANTIZE-q8", Op("DEQUANTIZE", [q8(1, 8)], [f32(1)])
    yield "DEQUANTIZE-qu8", Op("DEQUANTIZE", [qu8(1, 8)], [f32(1)], version=1)
    yield "DEQUANTIZE-q16", Op("DEQUANTIZE", [q16(1, 8)], [f32(1)], version=4)
    yield "DEQUANTIZE-f16", Op("DEQUANTIZE", [T((1, 8), F16)], [f32(1)], version=3)
    yield "DEQUANTIZE-q8-perchannel", Op(
        "DEQUANTIZE", [T((2, 4), I8, [0.1, 0.2], [0, 0], quantized_dimension=0)], [f32(1)],
        version=4)
    yield "QUANTIZE-f32-q8", Op("QUANTIZE", [f32(1, 8)], [q8(1)])
    yield "QUANTIZE-f32-qu8", Op("QUANTIZE", [f32(1, 8)], [qu8(1)])
    yield "QUANTIZE-f32-q16", Op("QUANTIZE", [f32(1, 8)], [q16(1)], version=4)
    yield "QUANTIZE-q8-q8", Op("QUANTIZE", [q8(1, 8)], [q8(1, scale=0.1, zp=3)], version=2)
    yield "QUANTIZE-q8-q8-scale", Op("QUANTIZE", [q8(1, 8, scale=1.0)], [q8(1, scale=1e-3)],
                                     version=2)
    yield "QUANTIZE-qu8-q8", Op("QUANTIZE", [qu8(1, 8)], [q8(1)], version=2)


def _binary_cases() -> Iterator[tuple[str, Op]]:
    opts = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions"}
    for op in ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE"):
        ot = opts.get(op)
        for tname, (mk, _) in _float_types().items():
            if tname != "f32" and op in ("DIV", "SQUARED_DIFFERENCE"):
                continue
            yield f"{op}-{tname}", Op(op, [mk(1, 4, 4, 3), mk(1, 4, 4, 3)], [mk(1)], ot,
                                      {} if ot else None)
        yield f"{op}-f32-bcast", Op(op, [f32(1, 4, 4, 3), f32(3)], [f32(1)], ot,
                                    {} if ot else None)
        yield f"{op}-i32", Op(op, [T((1, 4), I32), T((1, 4), I32)], [T((1,), I32)], ot,
                              {} if ot else None)
    for act in ("RELU", "RELU6", "RELU_N1_TO_1", "TANH", "SIGN_BIT"):
        yield f"ADD-f32-{act}", Op("ADD", [f32(1, 8), f32(1, 8)], [f32(1)], "AddOptions",
                                   {"fused_activation_function": act})
    yield "MUL-f32-TANH", Op("MUL", [f32(1, 8), f32(1, 8)], [f32(1)], "MulOptions",
                             {"fused_activation_function": "TANH"})
    yield "ADD-f32-rank7", Op("ADD", [f32(1, 1, 2, 1, 2, 1, 2), f32(1, 1, 2, 1, 2, 1, 2)],
                              [f32(1)], "AddOptions", {})
    yield "ADD-q8-scale", Op("ADD", [q8(1, 8, scale=1.0), q8(1, 8)], [q8(1, scale=1e-4)],
                             "AddOptions", {})
    yield "ADD-q16", Op("ADD", [q16(1, 8), q16(1, 8)], [q16(1)], "AddOptions",
                        {"pot_scale_int16": False}, version=3)
    yield "MUL-q8-scale", Op("MUL", [q8(1, 8, scale=1e-3), q8(1, 8, scale=1e-3)],
                             [q8(1, scale=1.0)], "MulOptions", {})
    yield "ADD-f32-const", Op("ADD", [f32(1, 8), const(np.ones((1, 8)))], [f32(1)],
                              "AddOptions", {})
    yield "PRELU-f32-const", Op("PRELU", [f32(1, 4, 4, 3), const(np.full((1, 1, 3), 0.2))],
                                [f32(1)])
    yield "PRELU-f32-dynamic", Op("PRELU", [f32(1, 4, 4, 3), f32(1, 1, 3)], [f32(1)])
    yield "PRELU-q8", Op("PRELU", [q8(1, 4, 4, 3), const(np.full((1, 1, 3), 20), I8, 0.01, 0)],
                         [q8(1)])


def _conv_cases() -> Iterator[tuple[str, Op]]:
    conv = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
    x = f32(1, 6, 6, 4)
    yield "CONV_2D-f32", Op("CONV_2D", [x, weights((8, 3, 3, 4)), weights((8,))], [f32(1)],
                            "Conv2DOptions", conv)
    yield "CONV_2D-f32-dynamic-filter", Op("CONV_2D", [x, f32(8, 3, 3, 4), weights((8,))],
                                           [f32(1)], "Conv2DOptions", conv)
    for act in ("RELU6", "TANH", "SIGN_BIT"):
        yield f"CONV_2D-f32-{act}", Op("CONV_2D", [x, weights((8, 3, 3, 4)), weights((8,))],
                                       [f32(1)], "Conv2DOptions",
                                       {**conv, "fused_activation_function": act})
    yield "CONV_2D-f32-dilated", Op("CONV_2D", [x, weights((8, 3, 3, 4)), weights((8,))],
                                    [f32(1)], "Conv2DOptions",
                                    {**conv, "dilation_w_factor": 2, "dilation_h_factor": 2})
    yield "CONV_2D-f32-grouped", Op("CONV_2D", [x, weights((8, 3, 3, 2)), weights((8,))],
                                    [f32(1)], "Conv2DOptions", conv, version=6)
    wq = weights((8, 3, 3, 4), I8, [0.01] * 8)
    bq = const(_RNG.integers(-100, 100, 8), I32, [0.0005] * 8, [0] * 8)
    yield "CONV_2D-q8", Op("CONV_2D", [q8(1, 6, 6, 4, scale=0.05), wq, bq],
                           [q8(1, scale=0.1)], "Conv2DOptions", conv, version=3)
    yield "CONV_2D-q8-pertensor", Op(
        "CONV_2D", [q8(1, 6, 6, 4), weights((8, 3, 3, 4), I8, 0.01),
                    const(np.zeros(8), I32, 0.0005, 0)], [q8(1, scale=0.1)], "Conv2DOptions",
        conv, version=3)
    yield "CONV_2D-qu8", Op("CONV_2D", [qu8(1, 6, 6, 4),
                                        const(_RNG.integers(0, 255, (8, 3, 3, 4)), U8, 0.01, 128),
                                        const(np.zeros(8), I32, 0.0005, 0)],
                            [qu8(1, scale=0.1)], "Conv2DOptions", conv)
    yield "CONV_2D-hybrid", Op("CONV_2D", [x, weights((8, 3, 3, 4), I8, [0.01] * 8),
                                           weights((8,))], [f32(1)], "Conv2DOptions", conv,
                               version=5)
    yield "CONV_2D-q16x8", Op("CONV_2D", [q16(1, 6, 6, 4), wq,
                                          const(np.zeros(8), I64, [1e-6] * 8, [0] * 8)],
                              [q16(1, scale=0.01)], "Conv2DOptions", conv, version=4)
    dw = {"padding": "VALID", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1}
    yield "DEPTHWISE_CONV_2D-f32", Op("DEPTHWISE_CONV_2D", [x, weights((1, 3, 3, 4)),
                                                            weights((4,))], [f32(1)],
                                      "DepthwiseConv2DOptions", dw)
    yield "DEPTHWISE_CONV_2D-f32-mult2", Op("DEPTHWISE_CONV_2D", [x, weights((1, 3, 3, 8)),
                                                                  weights((8,))], [f32(1)],
                                            "DepthwiseConv2DOptions",
                                            {**dw, "depth_multiplier": 2})
    yield "DEPTHWISE_CONV_2D-q8", Op(
        "DEPTHWISE_CONV_2D", [q8(1, 6, 6, 4), weights((1, 3, 3, 4), I8, [0.01] * 4, qdim=3),
                              const(np.zeros(4), I32, [0.0005] * 4, [0] * 4)],
        [q8(1, scale=0.1)], "DepthwiseConv2DOptions", dw, version=3)
    yield "DEPTHWISE_CONV_2D-hybrid", Op(
        "DEPTHWISE_CONV_2D", [x, weights((1, 3, 3, 4), I8, [0.01] * 4, qdim=3), weights((4,))],
        [f32(1)], "DepthwiseConv2DOptions", dw, version=6)
    yield "DEPTHWISE_CONV_2D-f32-TANH", Op(
        "DEPTHWISE_CONV_2D", [x, weights((1, 3, 3, 4)), weights((4,))], [f32(1)],
        "DepthwiseConv2DOptions", {**dw, "fused_activation_function": "TANH"})
    tc = {"padding": "SAME", "stride_w": 2, "stride_h": 2}
    yield "TRANSPOSE_CONV-f32", Op("TRANSPOSE_CONV", [const([1, 8, 8, 2], I32),
                                                      weights((2, 3, 3, 4)), f32(1, 4, 4, 4)],
                                   [f32(1)], "TransposeConvOptions", tc)
    yield "TRANSPOSE_CONV-f32-bias", Op("TRANSPOSE_CONV",
                                        [const([1, 8, 8, 2], I32), weights((2, 3, 3, 4)),
                                         f32(1, 4, 4, 4), weights((2,))], [f32(1)],
                                        "TransposeConvOptions", tc, version=3)
    yield "TRANSPOSE_CONV-f32-kernel-lt-stride", Op(
        "TRANSPOSE_CONV", [const([1, 12, 12, 2], I32), weights((2, 2, 2, 4)), f32(1, 4, 4, 4)],
        [f32(1)], "TransposeConvOptions", {**tc, "stride_w": 3, "stride_h": 3})


def _fc_cases() -> Iterator[tuple[str, Op]]:
    yield "FULLY_CONNECTED-f32", Op("FULLY_CONNECTED", [f32(2, 8), weights((4, 8)),
                                                        weights((4,))], [f32(1)],
                                    "FullyConnectedOptions", {})
    yield "FULLY_CONNECTED-f32-nobias", Op("FULLY_CONNECTED", [f32(2, 8), weights((4, 8)), None],
                                           [f32(1)], "FullyConnectedOptions", {})
    yield "FULLY_CONNECTED-f32-dynamic", Op("FULLY_CONNECTED", [f32(2, 8), f32(4, 8), None],
                                            [f32(1)], "FullyConnectedOptions", {})
    yield "FULLY_CONNECTED-f32-keepdims", Op("FULLY_CONNECTED",
                                             [f32(1, 3, 8), weights((4, 8)), weights((4,))],
                                             [f32(1)], "FullyConnectedOptions",
                                             {"keep_num_dims": True}, version=5)
    yield "FULLY_CONNECTED-q8", Op("FULLY_CONNECTED",
                                   [q8(2, 8), weights((4, 8), I8, 0.01),
                                    const(np.zeros(4), I32, 0.0005, 0)], [q8(1, scale=0.1)],
                                   "FullyConnectedOptions", {}, version=4)
    yield "FULLY_CONNECTED-qu8", Op("FULLY_CONNECTED",
                                    [qu8(2, 8), const(_RNG.integers(0, 255, (4, 8)), U8, 0.01,
                                                      128),
                                     const(np.zeros(4), I32, 0.0005, 0)], [qu8(1, scale=0.1)],
                                    "FullyConnectedOptions", {})
    yield "FULLY_CONNECTED-hybrid", Op("FULLY_CONNECTED", [f32(2, 8), weights((4, 8), I8, 0.01),
                                                           weights((4,))], [f32(1)],
                                       "FullyConnectedOptions", {}, version=3)
    yield "FULLY_CONNECTED-q16x8", Op("FULLY_CONNECTED",
                                      [q16(2, 8), weights((4, 8), I8, 0.01),
                                       const(np.zeros(4), I64, 1e-5, 0)], [q16(1, scale=0.01)],
                                      "FullyConnectedOptions", {}, version=7)


def _pool_reduce_cases() -> Iterator[tuple[str, Op]]:
    for op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        for name, (mk, _) in _float_types().items():
            yield f"{op}-{name}", Op(op, [mk(1, 8, 8, 3)], [mk(1)], "Pool2DOptions",
                                     {"padding": "VALID", "stride_w": 2, "stride_h": 2,
                                      "filter_width": 2, "filter_height": 2})
        yield f"{op}-f32-stride-gt-filter", Op(op, [f32(1, 8, 8, 3)], [f32(1)], "Pool2DOptions",
                                               {"padding": "VALID", "stride_w": 3, "stride_h": 3,
                                                "filter_width": 2, "filter_height": 2})
        yield f"{op}-f32-1x1-stride2", Op(op, [f32(1, 8, 8, 3)], [f32(1)], "Pool2DOptions",
                                          {"padding": "VALID", "stride_w": 2, "stride_h": 2,
                                           "filter_width": 1, "filter_height": 1})
        yield f"{op}-f32-1x1", Op(op, [f32(1, 8, 8, 3)], [f32(1)], "Pool2DOptions",
                                  {"padding": "SAME", "stride_w": 1, "stride_h": 1,
                                   "filter_width": 1, "filter_height": 1})
    for op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"):
        for name, (mk, _) in _float_types().items():
            if op == "REDUCE_PROD" and name == "qu8":
                continue  # LiteRT's kernel refuses it
            yield f"{op}-{name}", Op(op, [mk(1, 4, 4, 3), const([1, 2], I32)], [mk(1)],
                                     "ReducerOptions", {"keep_dims": True})
        yield f"{op}-f32-dynamic-axes", Op(op, [f32(1, 4, 4, 3), T((2,), I32)], [f32(1)],
                                           "ReducerOptions", {"keep_dims": False})


def _shape_cases() -> Iterator[tuple[str, Op]]:
    yield "RESHAPE-f32-const", Op("RESHAPE", [f32(1, 4, 6), const([4, 6], I32)], [f32(1)])
    yield "RESHAPE-f32-options", Op("RESHAPE", [f32(1, 4, 6)], [f32(1)], "ReshapeOptions",
                                    {"new_shape": [24]})
    yield "RESHAPE-f32-dynamic", Op("RESHAPE", [f32(1, 4, 6), T((2,), I32)], [f32(1)])
    yield "RESHAPE-q8", Op("RESHAPE", [q8(1, 4, 6), const([4, 6], I32)], [q8(1)])
    yield "RESHAPE-q8-requant", Op("RESHAPE", [q8(1, 4, 6), const([4, 6], I32)],
                                   [q8(1, scale=0.5)])
    yield "RESHAPE-i32", Op("RESHAPE", [T((1, 4, 6), I32), const([4, 6], I32)], [T((1,), I32)])
    yield "RESHAPE-f32-rank7", Op("RESHAPE", [f32(2, 12), const([1, 1, 2, 1, 2, 3, 2], I32)],
                                  [f32(1)])
    yield "PAD-f32", Op("PAD", [f32(1, 4, 4, 3), const([[0, 0], [1, 1], [2, 2], [0, 0]], I32)],
                        [f32(1)])
    yield "PAD-q8", Op("PAD", [q8(1, 4, 4, 3), const([[0, 0], [1, 1], [2, 2], [0, 0]], I32)],
                       [q8(1)])
    yield "PAD-f32-dynamic", Op("PAD", [f32(1, 4, 4, 3), T((4, 2), I32)], [f32(1)])
    yield "PAD-f32-int64", Op("PAD", [f32(1, 4), const([[0, 0], [1, 1]], I64)], [f32(1)],
                              version=2)
    yield "PADV2-f32", Op("PADV2", [f32(1, 4), const([[0, 0], [1, 1]], I32), const(0.5)],
                          [f32(1)])
    yield "TRANSPOSE-f32", Op("TRANSPOSE", [f32(2, 3, 4), const([2, 0, 1], I32)], [f32(1)])
    yield "TRANSPOSE-q8", Op("TRANSPOSE", [q8(2, 3, 4), const([2, 0, 1], I32)], [q8(1)])
    yield "TRANSPOSE-f32-dynamic-perm", Op("TRANSPOSE", [f32(2, 3, 4), T((3,), I32)], [f32(1)])
    yield "CONCATENATION-f32", Op("CONCATENATION", [f32(1, 4), f32(1, 3)], [f32(1)],
                                  "ConcatenationOptions", {"axis": 1})
    yield "CONCATENATION-q8", Op("CONCATENATION", [q8(1, 4), q8(1, 3)], [q8(1)],
                                 "ConcatenationOptions", {"axis": 1})
    yield "CONCATENATION-qu8-mixed", Op("CONCATENATION", [qu8(1, 4), qu8(1, 3, scale=0.1)],
                                        [qu8(1)], "ConcatenationOptions", {"axis": 1})
    yield "CONCATENATION-f32-6", Op("CONCATENATION", [f32(1, 2)] * 6, [f32(1)],
                                    "ConcatenationOptions", {"axis": 1})
    yield "CONCATENATION-i32", Op("CONCATENATION", [T((1, 2), I32), T((1, 2), I32)],
                                  [T((1,), I32)], "ConcatenationOptions", {"axis": 1})
    yield "SLICE-f32", Op("SLICE", [f32(2, 6, 4), const([0, 1, 0], I32), const([2, 3, 4], I32)],
                          [f32(2, 3, 4)])
    yield "SLICE-f32-size-minus1", Op("SLICE", [f32(2, 6, 4), const([0, 1, 0], I32),
                                                const([-1, 3, 4], I32)], [f32(2, 3, 4)])
    yield "SLICE-f32-dynamic", Op("SLICE", [f32(2, 6, 4), T((3,), I32), const([2, 3, 4], I32)],
                                  [f32(2, 3, 4)])
    sopts = {"begin_mask": 0, "end_mask": 0}
    yield "STRIDED_SLICE-f32", Op("STRIDED_SLICE", [f32(2, 6, 4), const([0, 1, 0], I32),
                                                    const([2, 5, 4], I32), const([1, 1, 1], I32)],
                                  [f32(1)], "StridedSliceOptions", sopts)
    yield "STRIDED_SLICE-f32-stride2", Op("STRIDED_SLICE",
                                          [f32(2, 6, 4), const([0, 1, 0], I32),
                                           const([2, 5, 4], I32), const([1, 2, 1], I32)],
                                          [f32(1)], "StridedSliceOptions", sopts)
    yield "STRIDED_SLICE-f32-shrink", Op("STRIDED_SLICE",
                                         [f32(2, 6, 4), const([0, 1, 0], I32),
                                          const([1, 5, 4], I32), const([1, 1, 1], I32)],
                                         [f32(1)], "StridedSliceOptions",
                                         {**sopts, "shrink_axis_mask": 1})
    yield "SPLIT-f32", Op("SPLIT", [const(1, I32), f32(2, 6)], [f32(1), f32(1)],
                          "SplitOptions", {"num_splits": 2})
    yield "SPLIT-f32-6", Op("SPLIT", [const(1, I32), f32(2, 6)], [f32(1)] * 6,
                            "SplitOptions", {"num_splits": 6})
    yield "SPLIT_V-f32", Op("SPLIT_V", [f32(2, 6), const([2, 4], I32), const(1, I32)],
                            [f32(1), f32(1)], "SplitVOptions", {"num_splits": 2})
    yield "SPACE_TO_DEPTH-f32", Op("SPACE_TO_DEPTH", [f32(1, 4, 4, 2)], [f32(1)],
                                   "SpaceToDepthOptions", {"block_size": 2})
    yield "DEPTH_TO_SPACE-f32", Op("DEPTH_TO_SPACE", [f32(1, 2, 2, 8)], [f32(1)],
                                   "DepthToSpaceOptions", {"block_size": 2})
    yield "RESIZE_BILINEAR-f32", Op("RESIZE_BILINEAR", [f32(1, 4, 4, 3), const([8, 8], I32)],
                                    [f32(1)], "ResizeBilinearOptions", {})
    yield "RESIZE_BILINEAR-q8", Op("RESIZE_BILINEAR", [q8(1, 4, 4, 3), const([8, 8], I32)],
                                   [q8(1)], "ResizeBilinearOptions", {}, version=2)
    yield "RESIZE_NEAREST_NEIGHBOR-f32", Op("RESIZE_NEAREST_NEIGHBOR",
                                            [f32(1, 4, 4, 3), const([8, 8], I32)], [f32(1)],
                                            "ResizeNearestNeighborOptions", {})
    yield "SOFTMAX-f32", Op("SOFTMAX", [f32(1, 10)], [f32(1)], "SoftmaxOptions", {"beta": 1.0})
    yield "SOFTMAX-f32-beta", Op("SOFTMAX", [f32(1, 10)], [f32(1)], "SoftmaxOptions",
                                 {"beta": 0.5})
    yield "SOFTMAX-q8", Op("SOFTMAX", [q8(1, 10)], [T((1,), I8, 1 / 256, -128)],
                           "SoftmaxOptions", {"beta": 1.0}, version=2)
    yield "EXPAND_DIMS-f32", Op("EXPAND_DIMS", [f32(2, 3), const([0], I32)], [f32(1)])
    yield "SQUEEZE-f32", Op("SQUEEZE", [f32(1, 3, 1)], [f32(1)], "SqueezeOptions", {})
    yield "BATCH_MATMUL-f32", Op("BATCH_MATMUL", [f32(2, 3, 4), f32(2, 4, 5)], [f32(1)],
                                 "BatchMatMulOptions", {})
    yield "BATCH_MATMUL-f32-const", Op("BATCH_MATMUL", [f32(2, 3, 4), weights((4, 5))],
                                       [f32(1)], "BatchMatMulOptions", {})
    yield "BATCH_MATMUL-q8", Op("BATCH_MATMUL", [q8(2, 3, 4), q8(2, 4, 5)], [q8(1, scale=0.1)],
                                "BatchMatMulOptions", {}, version=2)


def _other_cases() -> Iterator[tuple[str, Op]]:
    yield "GATHER-f32", Op("GATHER", [f32(5, 3), const([0, 2], I32)], [f32(1)],
                           "GatherOptions", {"axis": 0})
    yield "CAST-f32-i32", Op("CAST", [f32(1, 4)], [T((1,), I32)])
    yield "ARG_MAX-f32", Op("ARG_MAX", [f32(1, 4), const([1], I32)], [T((1,), I32)],
                            "ArgMaxOptions", {"output_type": "INT32"})
    yield "L2_NORMALIZATION-f32", Op("L2_NORMALIZATION", [f32(1, 4)], [f32(1)],
                                     "L2NormOptions", {})
    yield "LESS-f32", Op("LESS", [f32(1, 4), f32(1, 4)], [T((1,), BOOL)])
    yield "TILE-f32", Op("TILE", [f32(1, 4), const([2, 1], I32)], [f32(1)])
    yield "ZEROS_LIKE-f32", Op("ZEROS_LIKE", [f32(1, 4)], [f32(1)])
    yield "SHAPE-f32", Op("SHAPE", [f32(1, 4)], [T((1,), I32)], "ShapeOptions",
                          {"out_type": "INT32"})


def _int16_cases() -> Iterator[tuple[str, Op]]:
    """The int16x8 paths TFLite Micro has (and XNNPACK has not)."""
    for op in ("RELU", "RELU6"):
        yield f"{op}-q16", Op(op, [q16(1, 8)], [q16(1)])
    yield "SUB-q16", Op("SUB", [q16(1, 8), q16(1, 8)], [q16(1)], "SubOptions",
                        {"pot_scale_int16": False}, version=3)
    yield "MUL-q16", Op("MUL", [q16(1, 8), q16(1, 8)], [q16(1)], "MulOptions", {}, version=4)
    yield "MEAN-q16", Op("MEAN", [q16(1, 4, 4, 3), const([1, 2], I32)], [q16(1)],
                         "ReducerOptions", {"keep_dims": True}, version=3)
    yield "SOFTMAX-q16", Op("SOFTMAX", [q16(1, 10)], [T((1,), I16, 1 / 32768, 0)],
                            "SoftmaxOptions", {"beta": 1.0}, version=3)
    yield "SOFTMAX-q8-q16", Op("SOFTMAX", [q8(1, 10)], [T((1,), I16, 1 / 65536, -32768)],
                               "SoftmaxOptions", {"beta": 1.0}, version=2)
    yield "SOFTMAX-q8-tiny-scale", Op("SOFTMAX", [q8(1, 10, scale=1e-9)],
                                      [T((1,), I8, 1 / 256, -128)], "SoftmaxOptions",
                                      {"beta": 1.0}, version=2)
    for op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        yield f"{op}-q16", Op(op, [q16(1, 8, 8, 3)], [q16(1)], "Pool2DOptions",
                              {"padding": "VALID", "stride_w": 2, "stride_h": 2,
                               "filter_width": 2, "filter_height": 2}, version=3)
    yield "TRANSPOSE-q16", Op("TRANSPOSE", [q16(2, 3, 4), const([2, 0, 1], I32)], [q16(1)],
                              version=5)
    yield "CONCATENATION-q16", Op("CONCATENATION", [q16(1, 4), q16(1, 3)], [q16(1)],
                                  "ConcatenationOptions", {"axis": 1}, version=3)
    yield "RESHAPE-q16", Op("RESHAPE", [q16(1, 4, 6), const([4, 6], I32)], [q16(1)])
    yield "STRIDED_SLICE-q16", Op("STRIDED_SLICE", [q16(2, 6, 4), const([0, 1, 0], I32),
                                                    const([2, 5, 4], I32),
                                                    const([1, 1, 1], I32)],
                                  [q16(1)], "StridedSliceOptions", {}, version=4)
    yield "QUANTIZE-q16-q8", Op("QUANTIZE", [q16(1, 8)], [q8(1)], version=2)
    yield "DEPTHWISE_CONV_2D-q16x8", Op(
        "DEPTHWISE_CONV_2D", [q16(1, 6, 6, 4), weights((1, 3, 3, 4), I8, [0.01] * 4, qdim=3),
                              const(np.zeros(4), I64, [1e-5] * 4, [0] * 4)],
        [q16(1, scale=0.01)], "DepthwiseConv2DOptions",
        {"padding": "VALID", "stride_w": 1, "stride_h": 1, "depth_multiplier": 1}, version=5)


def _micro_cases() -> Iterator[tuple[str, Op]]:
    """Operators TFLite Micro registers (and some it does not), in its common types."""
    yield "L2_POOL_2D-f32", Op("L2_POOL_2D", [f32(1, 8, 8, 3)], [f32(1)], "Pool2DOptions",
                               {"padding": "VALID", "stride_w": 2, "stride_h": 2,
                                "filter_width": 2, "filter_height": 2})
    yield "LOG_SOFTMAX-f32", Op("LOG_SOFTMAX", [f32(1, 10)], [f32(1)], "LogSoftmaxOptions", {})
    yield "ADD_N-f32", Op("ADD_N", [f32(1, 4), f32(1, 4), f32(1, 4)], [f32(1)],
                          "AddNOptions", {})
    yield "ADD_N-i32", Op("ADD_N", [T((1, 4), I32), T((1, 4), I32)], [T((1,), I32)],
                          "AddNOptions", {})
    yield "FLOOR_DIV-f32", Op("FLOOR_DIV", [f32(1, 4), f32(1, 4)], [f32(1)])
    yield "FLOOR_MOD-i32", Op("FLOOR_MOD", [T((1, 4), I32), T((1, 4), I32)], [T((1,), I32)])
    yield "ARG_MIN-q8", Op("ARG_MIN", [q8(1, 4), const([1], I32)], [T((1,), I32)],
                           "ArgMinOptions", {"output_type": "INT32"}, version=2)
    yield "ARG_MAX-f32-i64", Op("ARG_MAX", [f32(1, 4), const([1], I32)], [T((1,), I64)],
                                "ArgMaxOptions", {"output_type": "INT64"})
    yield "EQUAL-bool", Op("EQUAL", [T((1, 4), BOOL), T((1, 4), BOOL)], [T((1,), BOOL)])
    yield "GREATER-i32", Op("GREATER", [T((1, 4), I32), T((1, 4), I32)], [T((1,), BOOL)])
    yield "LOGICAL_AND-bool", Op("LOGICAL_AND", [T((1, 4), BOOL), T((1, 4), BOOL)],
                                 [T((1,), BOOL)])
    yield "LOGICAL_NOT-bool", Op("LOGICAL_NOT", [T((1, 4), BOOL)], [T((1,), BOOL)])
    yield "SELECT_V2-f32", Op("SELECT_V2", [T((1, 4), BOOL), f32(1, 4), f32(1, 4)], [f32(1)])
    yield "CUMSUM-f32", Op("CUMSUM", [f32(2, 4), const(1, I32)], [f32(1)], "CumsumOptions", {})
    yield "FILL-f32", Op("FILL", [const([2, 3], I32), const(1.5)], [f32(1)])
    yield "ZEROS_LIKE-i32", Op("ZEROS_LIKE", [T((1, 4), I32)], [T((1,), I32)])
    yield "BROADCAST_TO-f32", Op("BROADCAST_TO", [f32(1, 4), const([3, 4], I32)], [f32(1)],
                                 version=2)
    yield "GATHER_ND-f32", Op("GATHER_ND", [f32(3, 4), const([[0], [2]], I32)], [f32(1)])
    yield "MIRROR_PAD-f32", Op("MIRROR_PAD", [f32(1, 4, 4, 1),
                                              const([[0, 0], [1, 1], [1, 1], [0, 0]], I32)],
                               [f32(1)], "MirrorPadOptions", {"mode": "REFLECT"})
    yield "REVERSE_V2-f32", Op("REVERSE_V2", [f32(2, 4), const([1], I32)], [f32(1)])
    yield "EMBEDDING_LOOKUP-f32", Op("EMBEDDING_LOOKUP", [const([0, 2], I32), weights((4, 3))],
                                     [f32(1)])
    yield "HARD_SWISH-q8-out", Op("HARD_SWISH", [q8(1, 8)], [q8(1, scale=0.02)])
    yield "DEPTH_TO_SPACE-q8", Op("DEPTH_TO_SPACE", [q8(1, 2, 2, 8)], [q8(1)],
                                  "DepthToSpaceOptions", {"block_size": 2})
    yield "SPACE_TO_BATCH_ND-f32", Op("SPACE_TO_BATCH_ND", [f32(1, 4, 4, 1), const([2, 2], I32),
                                                            const([[0, 0], [0, 0]], I32)],
                                      [f32(1)])
    yield "BATCH_TO_SPACE_ND-f32", Op("BATCH_TO_SPACE_ND", [f32(4, 2, 2, 1), const([2, 2], I32),
                                                            const([[0, 0], [0, 0]], I32)],
                                      [f32(1)])
    yield "PACK-f32", Op("PACK", [f32(1, 4), f32(1, 4)], [f32(1)], "PackOptions",
                         {"values_count": 2, "axis": 0})
    yield "UNPACK-f32", Op("UNPACK", [f32(2, 4)], [f32(1), f32(1)], "UnpackOptions",
                           {"num": 2, "axis": 0})
    yield "SPLIT-q8", Op("SPLIT", [const(1, I32), q8(2, 6)], [q8(1), q8(1)],
                         "SplitOptions", {"num_splits": 2}, version=2)
    yield "CAST-i32-f32", Op("CAST", [T((1, 4), I32)], [f32(1)])
    yield "CAST-f32-i64", Op("CAST", [f32(1, 4)], [T((1,), I64)])
    yield "SQUARE-f32-const", Op("SQUARE", [f32(2, 3)], [f32(1)])
    yield "RANGE-i32", Op("RANGE", [const(0, I32), const(6, I32), const(1, I32)],
                          [T((1,), I32)])
    yield "WHERE-bool", Op("WHERE", [T((2, 3), BOOL)], [T((1, 2), I64)])


CATALOGUE: tuple[Callable[[], Iterator[tuple[str, Op]]], ...] = (
    _unary_cases, _binary_cases, _conv_cases, _fc_cases, _pool_reduce_cases, _shape_cases,
    _other_cases, _int16_cases, _micro_cases)


@lru_cache(maxsize=1)
def all_cases() -> dict[str, bytes]:
    """Every case of the catalogue, built (cached: several test modules share them)."""
    out: dict[str, bytes] = {}
    for gen in CATALOGUE:
        for name, op in gen():
            assert name not in out, name
            out[name] = build(op)
    return out


def case(name: str) -> bytes:
    """One case of the catalogue, built (without building the rest)."""
    for gen in CATALOGUE:
        for n, op in gen():
            if n == name:
                return build(op)
    raise KeyError(name)
