"""One-op models with degenerate shapes: a zero dimension, dimensions of one, an input
smaller than the op's window, shapes that do not broadcast, axes out of range, sizes that
do not divide.  What `test_degenerate_shapes.py` runs through the interpreter (every
failure must be a documented error with a message for a person) and
`tools/sweep_degenerate_shapes.py` also gives LiteRT.

`cases()` yields ``(case id, model bytes, runtime inputs)``.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

try:
    from .singleop import Input, single_op_model
except ImportError:  # run from tools/, with tests/interpreter on the path
    from singleop import Input, single_op_model  # type: ignore[no-redef]

F32, I32 = np.float32, np.int32
#: NHWC inputs of the 2-D window ops (3x3 windows): the usual, one smaller than the window,
#: one pixel, a zero height, a zero width, a zero batch
WINDOW_INPUTS = [(1, 5, 5, 3), (1, 2, 2, 3), (1, 1, 1, 3), (1, 0, 5, 3), (1, 5, 0, 3),
                 (0, 5, 5, 3)]
#: shapes of the element-wise ops' operands (pairs for the binary ones)
UNARY_SHAPES = [(0,), (0, 5), (1, 0, 3), (), (1,)]
BINARY_SHAPES = [((0, 3), (0, 3)), ((0, 3), (1, 3)), ((2, 3), (4, 3)), ((1,), (0,)),
                 ((3, 0), (3, 1)), ((), (2, 0))]


def _data(shape, dtype=F32, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(0.5, 2.0, shape).astype(dtype)
    return rng.integers(0, 3, shape).astype(dtype)


def _one(op, x_shapes, consts=(), outputs=(F32,), options_type=None, options=None,
         version=1, dtypes=None) -> tuple[bytes, list[np.ndarray]]:
    """A one-op model: runtime inputs of ``x_shapes`` (then constants ``consts``)."""
    dtypes = dtypes or [F32] * len(x_shapes)
    ins = [Input(s, d) for s, d in zip(x_shapes, dtypes)] + list(consts)
    model = single_op_model(op, ins, list(outputs), options_type, options or {}, version)
    return model, [_data(s, d, k) for k, (s, d) in enumerate(zip(x_shapes, dtypes))]


def _windowed() -> Iterator[tuple[str, bytes, list]]:
    rng = np.random.default_rng(1)
    for padding in ("VALID", "SAME"):
        for x in WINDOW_INPUTS:
            tag = f"{padding}-{'x'.join(map(str, x))}"
            stride = {"stride_w": 1, "stride_h": 1, "padding": padding}
            w = rng.standard_normal((4, 3, 3, 3)).astype(F32)
            b = np.zeros(4, F32)
            yield (f"CONV_2D-{tag}", *_one("CONV_2D", [x], [w, b], options_type="Conv2DOptions",
                                           options=stride))
            dw = rng.standard_normal((1, 3, 3, 3)).astype(F32)
            yield (f"DEPTHWISE_CONV_2D-{tag}",
                   *_one("DEPTHWISE_CONV_2D", [x], [dw, np.zeros(3, F32)],
                         options_type="DepthwiseConv2DOptions",
                         options={**stride, "depth_multiplier": 1}))
            for pool in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"):
                yield (f"{pool}-{tag}", *_one(pool, [x], options_type="Pool2DOptions",
                                              options={**stride, "filter_width": 3,
                                                       "filter_height": 3}))
            out_hw = [max(x[1], 1), max(x[2], 1)] if padding == "SAME" else \
                [max(x[1] + 2, 0), max(x[2] + 2, 0)]
            out_shape = np.array([x[0], *out_hw, 4], I32)
            tw = rng.standard_normal((4, 3, 3, 3)).astype(F32)
            model = single_op_model("TRANSPOSE_CONV", [out_shape, tw, Input(x), np.zeros(4, F32)],
                                    [F32], "TransposeConvOptions", stride)
            yield (f"TRANSPOSE_CONV-{tag}", model, [_data(x)])
    for x in WINDOW_INPUTS:  # the integer kernels (int8, per-channel filter)
        tag = f"int8-VALID-{'x'.join(map(str, x))}"
        yield (f"CONV_2D-{tag}", *_int8("CONV_2D", x, (4, 3, 3, 3), 0, "Conv2DOptions", {}))
        yield (f"DEPTHWISE_CONV_2D-{tag}", *_int8("DEPTHWISE_CONV_2D", x, (1, 3, 3, 3), 3,
                                                  "DepthwiseConv2DOptions",
                                                  {"depth_multiplier": 1}))
        for pool in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
            model = single_op_model(pool, [Input(x, np.int8, (0.05, 0))], [(np.int8, (0.05, 0))],
                                    "Pool2DOptions", {"padding": "VALID", "stride_w": 1,
                                                      "stride_h": 1, "filter_width": 3,
                                                      "filter_height": 3})
            yield (f"{pool}-{tag}", model, [_data(x, np.int8)])
    # a filter larger than its input on one side only, a channel count that does not fit
    w = np.ones((2, 1, 7, 3), F32)
    yield ("CONV_2D-filter-wider", *_one("CONV_2D", [(1, 4, 4, 3)], [w, np.zeros(2, F32)],
                                         options_type="Conv2DOptions",
                                         options={"padding": "VALID", "stride_w": 1,
                                                  "stride_h": 1}))
    yield ("CONV_2D-depth-mismatch", *_one("CONV_2D", [(1, 4, 4, 2)], [np.ones((2, 1, 1, 3), F32),
                                                                       np.zeros(2, F32)],
                                           options_type="Conv2DOptions",
                                           options={"padding": "VALID", "stride_w": 1,
                                                    "stride_h": 1}))
    for x in [(1, 1, 1, 1, 2), (1, 0, 4, 4, 2), (1, 4, 4, 4, 2)]:
        w = np.ones((2, 2, 2, 2, 3), F32)
        yield (f"CONV_3D-VALID-{'x'.join(map(str, x))}",
               *_one("CONV_3D", [x], [w, np.zeros(3, F32)], options_type="Conv3DOptions",
                     options={"padding": "VALID", "stride_d": 1, "stride_w": 1, "stride_h": 1,
                              "dilation_d_factor": 1, "dilation_w_factor": 1,
                              "dilation_h_factor": 1}))


def _int8(op, x, w_shape, axis, options_type, options):
    """An int8 window op with a per-channel int8 filter and an int32 bias."""
    try:
        from .conv_pool_models import _quantized_model
    except ImportError:
        from conv_pool_models import _quantized_model  # type: ignore[no-redef]
    rng = np.random.default_rng(2)
    channels = w_shape[axis]
    w = rng.integers(-127, 128, w_shape).astype(np.int8)
    w_q = (np.full(channels, 0.01), np.zeros(channels, np.int64), axis)
    b = np.zeros(channels, I32)
    b_q = (np.full(channels, 0.0005), np.zeros(channels, np.int64))
    opts = {"padding": "VALID", "stride_w": 1, "stride_h": 1, **options}
    model = _quantized_model(op, [Input(x, np.int8, (0.05, 0)), w, b], np.int8, (0.1, 0),
                             options_type, opts, 3, {1: w_q, 2: b_q})
    return model, [_data(x, np.int8)]


def _matmul() -> Iterator[tuple[str, bytes, list]]:
    w = np.ones((4, 6), F32)
    for x in [(1, 6), (0, 6), (2, 3, 6), (1, 5), (1, 0)]:
        yield (f"FULLY_CONNECTED-{'x'.join(map(str, x))}",
               *_one("FULLY_CONNECTED", [x], [w, np.zeros(4, F32)],
                     options_type="FullyConnectedOptions", options={}))
    for a, b in [((2, 0, 3), (2, 3, 4)), ((2, 3, 0), (2, 0, 4)), ((2, 3, 5), (2, 4, 4)),
                 ((3, 2, 3), (2, 3, 4))]:
        yield (f"BATCH_MATMUL-{a}-{b}", *_one("BATCH_MATMUL", [a, b],
                                               options_type="BatchMatMulOptions", options={}))


def _elementwise() -> Iterator[tuple[str, bytes, list]]:
    for op in ("ADD", "SUB", "MUL", "DIV", "POW", "MAXIMUM", "SQUARED_DIFFERENCE",
               "FLOOR_DIV", "LESS"):
        for a, b in BINARY_SHAPES:
            out = (np.bool_,) if op == "LESS" else (F32,)
            yield (f"{op}-{a}-{b}", *_one(op, [a, b], outputs=out))
    for op in ("LOGISTIC", "TANH", "EXP", "LOG", "SQRT", "RSQRT", "RELU", "SOFTMAX",
               "LOG_SOFTMAX", "L2_NORMALIZATION", "ABS", "NEG", "HARD_SWISH", "GELU"):
        for shape in UNARY_SHAPES:
            options = {"SOFTMAX": ("SoftmaxOptions", {"beta": 1.0})}.get(op, (None, None))
            yield (f"{op}-{shape}", *_one(op, [shape], options_type=options[0],
                                          options=options[1]))


def _reductions() -> Iterator[tuple[str, bytes, list]]:
    for op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"):
        for x, axis in [((0, 4), [0]), ((3, 0), [1]), ((3, 4), [5]), ((3, 4), [-3]),
                        ((0,), [0])]:
            yield (f"{op}-{x}-axis{axis}", *_one(op, [x], [np.array(axis, I32)],
                                                 options_type="ReducerOptions",
                                                 options={"keep_dims": False}))
    for op in ("ARG_MAX", "ARG_MIN"):
        for x, axis in [((3, 0), 1), ((0, 4), 1), ((3, 4), 2)]:
            yield (f"{op}-{x}-axis{axis}",
                   *_one(op, [x], [np.array([axis], I32)], outputs=(I32,),
                         options_type="ArgMaxOptions" if op == "ARG_MAX" else "ArgMinOptions",
                         options={"output_type": "INT32"}))


def _shapes() -> Iterator[tuple[str, bytes, list]]:
    yield ("RESHAPE-mismatch", *_one("RESHAPE", [(2, 3)], [np.array([4, 2], I32)]))
    yield ("RESHAPE-zero-minus1", *_one("RESHAPE", [(0, 3)], [np.array([-1, 0], I32)]))
    yield ("RESHAPE-two-minus1", *_one("RESHAPE", [(2, 3)], [np.array([-1, -1], I32)]))
    yield ("SQUEEZE-not-one", *_one("SQUEEZE", [(2, 3)], options_type="SqueezeOptions",
                                    options={"squeezeDims": [0]}))
    yield ("TRANSPOSE-bad-perm", *_one("TRANSPOSE", [(2, 3)], [np.array([0, 0], I32)]))
    yield ("TRANSPOSE-short-perm", *_one("TRANSPOSE", [(2, 3, 4)], [np.array([1, 0], I32)]))
    for axis in (2, -3):
        yield (f"CONCATENATION-axis{axis}", *_one("CONCATENATION", [(2, 3), (2, 3)],
                                                  options_type="ConcatenationOptions",
                                                  options={"axis": axis}))
    yield ("CONCATENATION-mismatch", *_one("CONCATENATION", [(2, 3), (3, 4)],
                                           options_type="ConcatenationOptions",
                                           options={"axis": 0}))
    yield ("SPLIT-not-dividing", *_split(5))
    yield ("SPLIT-zero", *_split(0))
    yield ("GATHER-out-of-range", *_one("GATHER", [(3, 2)], [np.array([5], I32)],
                                        options_type="GatherOptions", options={"axis": 0}))
    yield ("GATHER-empty-params", *_one("GATHER", [(0, 2)], [np.array([0], I32)],
                                        options_type="GatherOptions", options={"axis": 0}))
    yield ("GATHER-axis", *_one("GATHER", [(3, 2)], [np.array([0], I32)],
                                options_type="GatherOptions", options={"axis": 4}))
    yield ("SLICE-past-end", *_one("SLICE", [(3, 4)], [np.array([1, 1], I32),
                                                       np.array([5, 2], I32)]))
    yield ("SLICE-negative-begin", *_one("SLICE", [(3, 4)], [np.array([-1, 0], I32),
                                                             np.array([1, 2], I32)]))
    yield ("STRIDED_SLICE-zero-stride", *_one("STRIDED_SLICE", [(3, 4)],
                                              [np.array([0, 0], I32), np.array([3, 4], I32),
                                               np.array([0, 1], I32)],
                                              options_type="StridedSliceOptions", options={}))
    yield ("STRIDED_SLICE-empty", *_one("STRIDED_SLICE", [(0, 4)],
                                        [np.array([0, 0], I32), np.array([1, 4], I32),
                                         np.array([1, 1], I32)],
                                        options_type="StridedSliceOptions", options={}))
    yield ("PAD-negative", *_one("PAD", [(2, 3)], [np.array([[0, -1], [1, 1]], I32)]))
    yield ("PAD-wrong-rank", *_one("PAD", [(2, 3)], [np.array([[0, 1]], I32)]))
    yield ("MIRROR_PAD-too-wide", *_one("MIRROR_PAD", [(2, 3)], [np.array([[3, 3], [0, 0]], I32)],
                                        options_type="MirrorPadOptions",
                                        options={"mode": "REFLECT"}))
    yield ("TILE-zero", *_one("TILE", [(2, 3)], [np.array([0, 2], I32)]))
    yield ("TILE-wrong-rank", *_one("TILE", [(2, 3)], [np.array([2], I32)]))
    yield ("EXPAND_DIMS-axis", *_one("EXPAND_DIMS", [(2, 3)], [np.array([5], I32)]))
    yield ("SPACE_TO_BATCH_ND-not-dividing", *_one(
        "SPACE_TO_BATCH_ND", [(1, 5, 5, 1)], [np.array([2, 2], I32),
                                              np.array([[0, 0], [0, 0]], I32)]))
    yield ("BATCH_TO_SPACE_ND-not-dividing", *_one(
        "BATCH_TO_SPACE_ND", [(3, 2, 2, 1)], [np.array([2, 2], I32),
                                              np.array([[0, 0], [0, 0]], I32)]))
    yield ("DEPTH_TO_SPACE-not-dividing", *_one("DEPTH_TO_SPACE", [(1, 2, 2, 3)],
                                                options_type="DepthToSpaceOptions",
                                                options={"block_size": 2}))
    yield ("SPACE_TO_DEPTH-not-dividing", *_one("SPACE_TO_DEPTH", [(1, 3, 3, 1)],
                                                options_type="SpaceToDepthOptions",
                                                options={"block_size": 2}))
    for x in [(1, 0, 4, 2), (1, 4, 4, 2)]:
        for size in ([0, 4], [3, 3]):
            yield (f"RESIZE_BILINEAR-{x}-{size}",
                   *_one("RESIZE_BILINEAR", [x], [np.array(size, I32)],
                         options_type="ResizeBilinearOptions", options={}))
            yield (f"RESIZE_NEAREST_NEIGHBOR-{x}-{size}",
                   *_one("RESIZE_NEAREST_NEIGHBOR", [x], [np.array(size, I32)],
                         options_type="ResizeNearestNeighborOptions", options={}))
    yield ("TOPK_V2-k-too-large", *_one("TOPK_V2", [(2, 3)], [np.array(5, I32)],
                                        outputs=(F32, I32)))
    yield ("TOPK_V2-empty", *_one("TOPK_V2", [(2, 0)], [np.array(1, I32)], outputs=(F32, I32)))
    yield ("CUMSUM-axis", *_one("CUMSUM", [(2, 3)], [np.array(4, I32)],
                                options_type="CumsumOptions", options={}))
    yield ("REVERSE_V2-axis", *_one("REVERSE_V2", [(2, 3)], [np.array([3], I32)]))
    yield ("BROADCAST_TO-incompatible", *_one("BROADCAST_TO", [(2, 3)], [np.array([4, 3], I32)]))
    yield ("GATHER_ND-deep-indices", *_one("GATHER_ND", [(2, 3)], [np.array([[0, 1, 2]], I32)]))
    yield ("ONE_HOT-negative-depth", *_one("ONE_HOT", [(3,)], [np.array(-2, I32),
                                                               np.array(1, F32),
                                                               np.array(0, F32)],
                                           options_type="OneHotOptions", options={"axis": -1},
                                           dtypes=[I32]))
    yield ("PACK-mismatch", *_one("PACK", [(2, 3), (3, 2)], options_type="PackOptions",
                                  options={"values_count": 2, "axis": 0}))
    yield ("UNPACK-zero", *_one("UNPACK", [(0, 3)], outputs=(),
                                options_type="UnpackOptions", options={"num": 0, "axis": 0}))


def _split(n: int):
    model = single_op_model("SPLIT", [np.array(0, I32), Input((n, 3))], [F32, F32],
                            "SplitOptions", {"num_splits": 2})
    return model, [_data((n, 3))]


def cases() -> Iterator[tuple[str, bytes, list[np.ndarray]]]:
    """Every degenerate case (id, model, inputs), in a fixed order."""
    yield from _windowed()
    yield from _matmul()
    yield from _elementwise()
    yield from _reductions()
    yield from _shapes()
