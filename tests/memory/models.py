"""Small models that exercise each rule of the TFLM planner: every reference kernel that
asks for scratch buffers, control flow, a RESHAPE with -1, ties between equal sizes.

Each is built with the test model builder (tests/interpreter/singleop.py) and is one TFLM
runs, so tests compare our head with TFLM's own.
"""
from __future__ import annotations

import numpy as np
from flatbuffers import flexbuffers

from tests.interpreter.singleop import Op, graph_model
from tflite_viewer.schema import schema_generated as S

F32, I8, I16, I32 = np.float32, np.int8, np.int16, np.int32
Q = (0.05, 0)


def _with_int4(model: bytes, tensor: int) -> bytes:
    """``model`` with an int8 constant tensor turned into a packed INT4 one."""
    m = S.ModelT.InitFromPackedBuf(model, 0)
    t = m.subgraphs[0].tensors[tensor]
    values = np.frombuffer(bytes(m.buffers[t.buffer].data), dtype=np.int8)
    lo = (values[0::2] & 0x0F).astype(np.uint8)
    hi = np.zeros_like(lo)
    hi[: values[1::2].size] = (values[1::2] & 0x0F).astype(np.uint8)
    m.buffers[t.buffer].data = np.frombuffer((lo | (hi << 4)).tobytes(), np.uint8)
    t.type = S.TensorType.INT4
    import flatbuffers
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def add_n(dtype=F32) -> bytes:
    q = (Q,) if dtype == I8 else ()
    t = [((1, 8, 8, 4), dtype, *q)] * 4 + [((1, 8, 8, 4), dtype, *q)]
    ops = [Op("ADD_N", [0, 1, 2], [3]), Op("ADD_N", [3, 0], [4])]
    return graph_model(t, ops, [0, 1, 2], [4])


def reduce(op: str, dtype, keep: bool = True) -> bytes:
    q = (Q,) if dtype in (I8, I16) else ()
    out = (1, 1, 1, 8) if keep else (1, 8)
    t = [((1, 6, 5, 8), dtype, *q), (np.array([1, 2], I32),), (out, dtype, *q)]
    return graph_model(t, [Op(op, [0, 1], [2], "ReducerOptions", {"keep_dims": keep})], [0], [2])


def mirror_pad() -> bytes:
    pads = np.array([[0, 0], [1, 1], [2, 2], [0, 0]], I32)
    t = [((1, 4, 5, 3), F32), (pads,), ((1, 6, 9, 3), F32)]
    ops = [Op("MIRROR_PAD", [0, 1], [2], "MirrorPadOptions", {"mode": "REFLECT"})]
    return graph_model(t, ops, [0], [2])


def svdf_float() -> bytes:
    rng = np.random.default_rng(0)
    batch, inp, filters, memory, rank = 2, 10, 8, 4, 2
    t = [((batch, inp), F32), (rng.standard_normal((filters, inp)).astype(F32),),
         (rng.standard_normal((filters, memory)).astype(F32),),
         (np.zeros(filters // rank, F32),), ((batch, memory * filters), F32, "variable"),
         ((batch, filters // rank), F32)]
    return graph_model(t, [Op("SVDF", [0, 1, 2, 3, 4], [5], "SVDFOptions", {"rank": rank})],
                       [0], [5])


def transpose_conv(dtype) -> bytes:
    rng = np.random.default_rng(1)
    w = rng.integers(-5, 5, (4, 3, 3, 2)).astype(I8 if dtype != F32 else F32)
    qx = (Q,) if dtype != F32 else ()
    qw = ((np.full(4, 0.02, F32), np.zeros(4, np.int64), 0),) if dtype != F32 else ()
    bias_t = {F32: F32, I8: I32, I16: I16}[dtype]
    bias = np.zeros(4, bias_t)
    qb = ((np.full(4, 0.001, F32), np.zeros(4, np.int64), 0),) if dtype != F32 else ()
    t = [(np.array([1, 8, 8, 4], I32),), (w, *qw), ((1, 4, 4, 2), dtype, *qx), (bias, *qb),
         ((1, 8, 8, 4), dtype, *qx)]
    return graph_model(t, [Op("TRANSPOSE_CONV", [0, 1, 2, 3], [4], "TransposeConvOptions",
                              {"padding": "SAME", "stride_w": 2, "stride_h": 2})], [2], [4])


def int4_filter(op: str) -> bytes:
    rng = np.random.default_rng(2)
    if op == "FULLY_CONNECTED":
        w = rng.integers(-7, 7, (6, 10)).astype(I8)
        t = [((1, 10), I8, Q), (w, (np.full(1, 0.02, F32), np.zeros(1, np.int64), 0)),
             (np.zeros(6, I32), (np.full(1, 0.001, F32), np.zeros(1, np.int64), 0)),
             ((1, 6), I8, Q)]
        ops = [Op(op, [0, 1, 2], [3], "FullyConnectedOptions", {})]
        return _with_int4(graph_model(t, ops, [0], [3]), 1)
    channels = 4
    shape = (channels, 3, 3, 3) if op == "CONV_2D" else (1, 3, 3, channels)
    w = rng.integers(-7, 7, shape).astype(I8)
    axis = 0 if op == "CONV_2D" else 3
    qw = (np.full(channels, 0.02, F32), np.zeros(channels, np.int64), axis)
    qb = (np.full(channels, 0.001, F32), np.zeros(channels, np.int64), 0)
    x = (1, 6, 6, 3) if op == "CONV_2D" else (1, 6, 6, channels)
    t = [(x, I8, Q), (w, qw), (np.zeros(channels, I32), qb), ((1, 6, 6, channels), I8, Q)]
    opts = {"padding": "SAME", "stride_w": 1, "stride_h": 1}
    kind = "Conv2DOptions"
    if op == "DEPTHWISE_CONV_2D":
        kind, opts = "DepthwiseConv2DOptions", dict(opts, depth_multiplier=1)
    return _with_int4(graph_model(t, [Op(op, [0, 1, 2], [3], kind, opts)], [0], [3]), 1)


def detection_postprocess() -> bytes:
    n, classes = 20, 3
    rng = np.random.default_rng(4)
    anchors = np.concatenate([rng.uniform(0.2, 0.8, (n, 2)), rng.uniform(0.1, 0.3, (n, 2))],
                             axis=1).astype(F32)
    opts = {"max_detections": 5, "max_classes_per_detection": 1, "detections_per_class": 4,
            "use_regular_nms": False, "nms_score_threshold": 0.3, "nms_iou_threshold": 0.5,
            "num_classes": classes, "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0,
            "w_scale": 5.0}
    t = [((1, n, 4), F32), ((1, n, classes + 1), F32), (anchors,), ((1, 5, 4), F32),
         ((1, 5), F32), ((1, 5), F32), ((1,), F32)]
    data = graph_model(t, [Op("CUSTOM", [0, 1, 2], [3, 4, 5, 6],
                              custom_code="TFLite_Detection_PostProcess")], [0, 1], [3, 4, 5, 6])
    m = S.ModelT.InitFromPackedBuf(data, 0)
    m.subgraphs[0].operators[0].customOptions = list(flexbuffers.Dumps(opts))
    import flatbuffers
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def reshape_minus_one() -> bytes:
    t = [((1, 4, 4, 3), F32), (np.array([1, -1], I32),), ((1, -1), F32), ((1, 48), F32)]
    ops = [Op("RESHAPE", [0, 1], [2], "ReshapeOptions", {"new_shape": [1, -1]}),
           Op("RELU", [2], [3])]
    return graph_model(t, ops, [0], [3])


def if_model() -> bytes:
    """IF choosing between two branches of different sizes, then a consumer."""
    main = [((1,), np.bool_), ((1, 16), F32), ((1, 16), F32), ((1, 16), F32)]
    ops = [Op("IF", [0, 1], [2], "IfOptions", {"then_subgraph_index": 1,
                                               "else_subgraph_index": 2}),
           Op("RELU", [2], [3])]
    then = ([((1, 16), F32), ((1, 64), F32), ((1, 16), F32),
             (np.array([0, 0], I32),), (np.array([1, 16], I32),)],
            [Op("CONCATENATION", [0, 0, 0, 0], [1], "ConcatenationOptions", {"axis": 1}),
             Op("SLICE", [1, 3, 4], [2])], [0], [2])
    other = ([((1, 16), F32), ((1, 16), F32)], [Op("RELU6", [0], [1])], [0], [1])
    return graph_model(main, ops, [0, 1], [3], [then, other])


def residual(n_ops: int = 48, seed: int = 0) -> bytes:
    """CONV_2D/ADD with skip connections: many equal sizes, so ties decide offsets."""
    import benchmarks.synthetic_models as synth
    return synth.residual_model(n_ops, seed=seed, channels=4)


def branches() -> bytes:
    """Two independent branches joined at the end: the order of the branches' operators
    decides how much memory is live at once (what `reorder` improves)."""
    t = [((1, 32, 32, 4), F32)]            # 0 input
    t += [((1, 32, 32, 16), F32)] * 2      # 1, 2: branch A (big)
    t += [((1, 32, 32, 4), F32)] * 2       # 3, 4: branch A shrinks
    t += [((1, 32, 32, 16), F32)] * 2      # 5, 6: branch B (big)
    t += [((1, 32, 32, 4), F32)] * 2       # 7, 8
    t += [((1, 32, 32, 8), F32)]           # 9 concat
    pad = (np.array([[0, 0], [0, 0], [0, 0], [6, 6]], I32),)
    t += [pad]                              # 10
    sl_b, sl_s = (np.array([0, 0, 0, 0], I32),), (np.array([1, 32, 32, 4], I32),)
    t += [sl_b, sl_s]                       # 11, 12
    ops = [Op("PAD", [0, 10], [1]), Op("PAD", [0, 10], [5]),
           Op("RELU", [1], [2]), Op("RELU", [5], [6]),
           Op("SLICE", [2, 11, 12], [3]), Op("SLICE", [6, 11, 12], [7]),
           Op("RELU", [3], [4]), Op("RELU", [7], [8]),
           Op("CONCATENATION", [4, 8], [9], "ConcatenationOptions", {"axis": 3})]
    return graph_model(t, ops, [0], [9])


BUILT = {
    "add_n_float": lambda: add_n(F32),
    "add_n_int8": lambda: add_n(I8),
    "mean_int8": lambda: reduce("MEAN", I8),
    "mean_float": lambda: reduce("MEAN", F32, keep=False),
    "sum_int16": lambda: reduce("SUM", I16),
    "reduce_max_int8": lambda: reduce("REDUCE_MAX", I8),
    "reduce_min_float": lambda: reduce("REDUCE_MIN", F32, keep=False),
    "mirror_pad": mirror_pad,
    "svdf_float": svdf_float,
    "transpose_conv_float": lambda: transpose_conv(F32),
    "transpose_conv_int8": lambda: transpose_conv(I8),
    "transpose_conv_int16": lambda: transpose_conv(I16),
    "conv_int4": lambda: int4_filter("CONV_2D"),
    "depthwise_int4": lambda: int4_filter("DEPTHWISE_CONV_2D"),
    "fully_connected_int4": lambda: int4_filter("FULLY_CONNECTED"),
    "detection_postprocess": detection_postprocess,
    "reshape_minus_one": reshape_minus_one,
    "if_branches": if_model,
    "residual_48": residual,
    "branches": branches,
}


# -- graphs for LiteRT's ArenaPlanner -------------------------------------------------------

def litert_in_place() -> bytes:
    """RESHAPE/EXPAND_DIMS/SQUEEZE share their input; ADD/MUL/SOFTMAX share one when it is
    their input's last reader; a second reader prevents it."""
    t = [((1, 8, 8, 4), F32), ((1, 8, 8, 4), F32), (np.array([1, 256], I32),),
         ((1, 256), F32), ((1, 256), F32), ((1, 256), F32), ((1, 256), F32),
         (np.array([0], I32),), ((1, 1, 256), F32), ((1, 256), F32), ((1, 256), F32)]
    ops = [Op("RELU", [0], [1]),
           Op("RESHAPE", [1, 2], [3], "ReshapeOptions", {"new_shape": [1, 256]}),
           Op("ADD", [3, 3], [4], "AddOptions", {}),          # t3 read twice here
           Op("MUL", [4, 3], [5], "MulOptions", {}),          # last reader of t4 and t3
           Op("SOFTMAX", [5], [6], "SoftmaxOptions", {"beta": 1.0}),
           Op("EXPAND_DIMS", [6, 7], [8]),
           Op("SQUEEZE", [8], [9], "SqueezeOptions", {"squeeze_dims": [0]}),
           Op("RELU6", [9], [10])]
    return graph_model(t, ops, [0], [10])


def litert_ties(pieces: int = 20) -> bytes:
    """SPLIT into many equal tensors created at one node: std::sort's order among them (it
    is not stable) decides their offsets."""
    t = [((1, 4, 4, pieces * 2), F32), (np.array(3, I32),)]
    t += [((1, 4, 4, 2), F32)] * pieces            # 2 .. pieces+1: split outputs
    t += [((1, 4, 4, 2), F32)] * pieces            # relu outputs
    t += [((1, 4, 4, pieces * 2), F32)]
    split = list(range(2, 2 + pieces))
    relu = list(range(2 + pieces, 2 + 2 * pieces))
    order = [(k * 7) % pieces for k in range(pieces)]  # read them in a scrambled order
    ops = [Op("SPLIT", [1, 0], split, "SplitOptions", {"num_splits": pieces})]
    ops += [Op("RELU", [split[k]], [relu[k]]) for k in order]
    ops += [Op("CONCATENATION", relu, [2 + 2 * pieces], "ConcatenationOptions", {"axis": 3})]
    return graph_model(t, ops, [0], [2 + 2 * pieces])


def litert_constant_folding() -> bytes:
    """SHAPE is computed at Prepare (persistent, outside the arena), so RESHAPE's shape is
    known; DEQUANTIZE of a constant keeps its result in the persistent arena."""
    w = np.linspace(-1, 1, 64).astype(np.float16).reshape(1, 64)
    t = [((1, 8, 8), F32), ((3,), I32), ((1, 8, 8), F32), (w,), ((1, 64), F32),
         ((1, 64), F32), (np.array([1, 64], I32),), ((1, 64), F32)]
    ops = [Op("RELU", [0], [2]), Op("SHAPE", [2], [1], "ShapeOptions", {"out_type": "INT32"}),
           Op("DEQUANTIZE", [3], [4]),
           Op("RESHAPE", [2, 6], [5], "ReshapeOptions", {"new_shape": [1, 64]}),
           Op("ADD", [5, 4], [7], "AddOptions", {})]
    return graph_model(t, ops, [0], [7, 1])


def litert_dynamic() -> bytes:
    """TILE with multiples from an input: its output is dynamic, so LiteRT plans the nodes
    after it when the model runs, around what is still live."""
    t = [((1, 16), F32), ((2,), I32), ((1, 16), F32), ((1, 16), F32), ((1, 16), F32),
         ((1, 16), F32), ((1, 16), F32)]
    ops = [Op("RELU", [0], [2]), Op("TILE", [2, 1], [3]), Op("RELU", [3], [4]),
           Op("RELU6", [2], [5]), Op("ADD", [4, 5], [6], "AddOptions", {})]
    return graph_model(t, ops, [0, 1], [6])


LITERT_BUILT = {
    "in_place": litert_in_place,
    "ties": litert_ties,
    "constant_folding": litert_constant_folding,
    "dynamic": litert_dynamic,
    "branches": branches,
    "mirror_pad": mirror_pad,
    "if_branches": if_model,  # subgraph 0 only: IF's outputs are dynamic in LiteRT
}
