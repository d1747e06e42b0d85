"""The GPU delegate's rules, case by case from the source (no GPU delegate runs here).

Each case is a rule of google-ai-edge/LiteRT ``tflite/tools/versioning/gpu_compatibility.cc``
(``CheckGpuDelegateCompatibility``), ``tflite/delegates/gpu/common/model_builder.cc``
(``NewOperationParser``, the parsers' ``IsSupported``, ``IsAllAllowedTensors``) or
``tflite/delegates/utils.cc`` (``FP16GraphPartitionHelper``, the largest partition), quoted
in the test's docstring, with one operator on each side of it.
"""
from __future__ import annotations

import numpy as np

from tests.interpreter.singleop import Op, graph_model
from tests.interpreter.singleop import T
from tests.targets.cases import build, const, f32, q8
from tflite_viewer.model import load_model
from tflite_viewer.targets import gpu
from tflite_viewer.delegation.facts import ModelFacts
from tflite_viewer.targets.gpu_checks import Signature, Spec, compatibility

F = "FLOAT32"


def sig(op, ins, outs=((F, (1, 4, 4, 8)),), **opts):
    """A signature from (type, dims[, is_const]) inputs and (type, dims) outputs."""
    return Signature(op, [Spec(i[0], tuple(i[1]), len(i) > 2 and bool(i[2])) for i in ins],
                     [Spec(t, tuple(d)) for t, d in outs], opts)


def verdicts(data: bytes) -> list:
    return gpu.analyze(ModelFacts(load_model(data))).ops


# -- gpu_compatibility.cc ---------------------------------------------------------------------
def test_add_broadcast_standard_rules():
    """CheckAddMulBroadcastCompatibility: different ranks (both > 1) broadcast only 3D->4D
    with batch 1, [1,1]->4D with batch 1, or [b,c]->[b,x,y,c]."""
    ok = [((1, 4, 4, 8), (4, 4, 8)), ((1, 4, 4, 8), (1, 1)), ((2, 4, 4, 8), (2, 8)),
          ((1, 4, 4, 8), (8,)), ((1, 4, 4, 8), (1, 4, 4, 8))]
    bad = [((2, 4, 4, 8), (4, 4, 8)), ((1, 4, 4, 8), (4, 8)), ((1, 4, 8), (4, 8))]
    for a, b in ok:
        assert compatibility(sig("ADD", [(F, a), (F, b)])) is None, (a, b)
    for a, b in bad:
        assert "broadcast" in compatibility(sig("ADD", [(F, a), (F, b)])), (a, b)
    assert "two inputs" in compatibility(sig("ADD", [(F, (1, 4))]))


def test_fused_activations():
    """IsActivationSupported: everything but SIGN_BIT."""
    for act in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1", "TANH"):
        s = sig("CONV_2D", [(F, (1, 4, 4, 8)), (F, (8, 1, 1, 8), True)], stride_w=1, stride_h=1,
                dilation_w_factor=1, dilation_h_factor=1, fused_activation_function=act)
        assert compatibility(s) is None, act
    s.options["fused_activation_function"] = "SIGN_BIT"
    assert "SIGN_BIT" in compatibility(s)


def test_convolution_inputs_strides_dilation():
    """CheckConvolutionInputOutput (1 or 2 runtime inputs) and CheckStridesAndDilation."""
    base = dict(stride_w=1, stride_h=1, dilation_w_factor=1, dilation_h_factor=1)
    x, w = (F, (1, 4, 4, 8)), (F, (8, 1, 1, 8), True)
    assert compatibility(sig("CONV_2D", [x, w], **base)) is None
    assert compatibility(sig("CONV_2D", [x, (F, (8, 1, 1, 8))], **base)) is None  # runtime w
    assert "runtime inputs" in compatibility(sig("CONV_2D", [w, w], **base))
    assert "strides" in compatibility(sig("CONV_2D", [x, w], **{**base, "stride_w": 0}))
    assert "dilation" in compatibility(sig("CONV_2D", [x, w], **{**base, "dilation_h_factor": 0}))


def test_depthwise_shape_rules():
    """CheckDepthwiseConvGpuDelegateCompatibility: 4-D tensors, output channels = input
    channels x depth multiplier = filter channels, bias of that size."""
    opts = dict(stride_w=1, stride_h=1, dilation_w_factor=1, dilation_h_factor=1,
                depth_multiplier=2)
    x, w, b = (F, (1, 4, 4, 4)), (F, (1, 3, 3, 8), True), (F, (8,), True)
    out = ((F, (1, 2, 2, 8)),)
    assert compatibility(sig("DEPTHWISE_CONV_2D", [x, w, b], out, **opts)) is None
    assert "depth multiplier" in compatibility(
        sig("DEPTHWISE_CONV_2D", [x, w, b], out, **{**opts, "depth_multiplier": 1}))
    assert "bias" in compatibility(sig("DEPTHWISE_CONV_2D", [x, w, (F, (4,), True)], out,
                                       **opts))
    assert "4-D" in compatibility(sig("DEPTHWISE_CONV_2D", [(F, (4, 4, 4)), w, b], out, **opts))


def test_fully_connected_rules():
    """Default weights format, at most 2 runtime inputs, no constant input, and
    keep_num_dims only with equal ranks."""
    x, w = (F, (2, 8)), (F, (4, 8), True)
    assert compatibility(sig("FULLY_CONNECTED", [x, w], ((F, (2, 4)),))) is None
    assert "format" in compatibility(sig("FULLY_CONNECTED", [x, w], ((F, (2, 4)),),
                                         weights_format="SHUFFLED4x16INT8"))
    assert "constant input" in compatibility(sig("FULLY_CONNECTED", [(F, (2, 8), True), w],
                                                 ((F, (2, 4)),)))
    assert "more than 2" in compatibility(sig("FULLY_CONNECTED", [x, (F, (4, 8)), (F, (4,))],
                                              ((F, (2, 4)),)))
    assert "keep_num_dims" in compatibility(sig("FULLY_CONNECTED", [(F, (1, 2, 8)), w],
                                                ((F, (2, 4)),), keep_num_dims=True))


def test_pad_reduce_slice_softmax():
    """PAD: 1 runtime input, paddings 4x2 or 3x2; MIRROR_PAD: REFLECT only; reductions:
    constant INT32 axes; SLICE/STRIDED_SLICE: 3-D or 4-D, no ellipsis/new-axis/shrink
    masks; SOFTMAX: beta 1."""
    x = (F, (1, 4, 4, 8))
    assert compatibility(sig("PAD", [x, ("INT32", (4, 2), True)])) is None
    assert "4x2 or 3x2" in compatibility(sig("PAD", [x, ("INT32", (5, 2), True)]))
    assert "REFLECT" in compatibility(sig("MIRROR_PAD", [x, ("INT32", (4, 2), True)],
                                          mode="SYMMETRIC"))
    assert compatibility(sig("MEAN", [x, ("INT32", (2,), True)])) is None
    assert "constant" in compatibility(sig("MEAN", [x, ("INT32", (2,))]))
    assert "INT32" in compatibility(sig("SUM", [x, ("INT64", (2,), True)]))
    idx = ("INT32", (4,), True)
    assert compatibility(sig("STRIDED_SLICE", [x, idx, idx, idx])) is None
    assert "shrink" in compatibility(sig("STRIDED_SLICE", [x, idx, idx, idx], shrink_axis_mask=1))
    assert "3-D or 4-D" in compatibility(sig("SLICE", [(F, (8,)), idx, idx]))
    assert compatibility(sig("SOFTMAX", [x], beta=1.0)) is None
    assert "beta" in compatibility(sig("SOFTMAX", [x], beta=0.5))


def test_cast_and_select_and_elementwise_operands():
    """CAST: BOOL<->float or FLOAT32/INT32 among themselves; SELECT_V2: condition BOOL or
    float, branches the output's shape or scalars; two-operand elementwise ops: 2 runtime
    inputs or 1 runtime and 1 constant."""
    one = (F, (1, 4))
    assert compatibility(sig("CAST", [("BOOL", (1, 4))], ((F, (1, 4)),))) is None
    assert compatibility(sig("CAST", [("INT32", (1, 4))], ((F, (1, 4)),))) is None
    assert "CAST from INT8" in compatibility(sig("CAST", [("INT8", (1, 4))], ((F, (1, 4)),)))
    out = ((F, (1, 4, 4)),)
    three = (F, (1, 4, 4))
    assert compatibility(sig("SELECT_V2", [("BOOL", (1, 4, 4)), three, (F, ())], out)) is None
    assert "condition" in compatibility(sig("SELECT_V2", [("INT32", (1, 4, 4)), three, three],
                                            out))
    assert "2-D if tensor must be constant" in compatibility(
        sig("SELECT_V2", [("BOOL", (4, 4)), (F, (4, 4)), (F, ())], ((F, (4, 4)),)))
    out = ((F, (1, 4)),)
    assert compatibility(sig("SUB", [one, (F, (1, 4), True)], out)) is None
    assert "operand" in compatibility(sig("SUB", [(F, (1, 4), True), (F, (1, 4), True)], out))


def test_custom_ops():
    """Only Convolution2DTransposeBias, MaxPoolingWithArgmax2D, MaxUnpooling2D and Resampler;
    their params come from the C struct in the custom options."""
    s = Signature("CUSTOM", [Spec(F, (1, 4, 4, 2)), Spec(F, (1, 4, 4, 2))], [Spec(F, (1, 4, 4,
                                                                                        2))],
                  {}, "Resampler")
    assert compatibility(s) is None
    s.inputs[1] = Spec(F, (1, 4, 4, 1))
    assert "warp" in compatibility(s)
    s.custom_name = "MyOp"
    assert "MyOp" in compatibility(s)


# -- the delegate's own checks, on models -----------------------------------------------------
def test_version_limits_of_the_parsers():
    """CheckMaxSupportedOpVersion: e.g. SOFTMAX up to v2, RESHAPE v1 (whose constant shape
    input is not a runtime input: CheckInputsOutputs counts runtime inputs only)."""
    ok = build(Op("RESHAPE", [f32(1, 4, 6), const([4, 6], np.int32)], [f32(1)]))
    assert verdicts(ok)[0].verdict == "runs"
    for version, verdict in ((2, "runs"), (3, "falls back")):
        data = build(Op("SOFTMAX", [f32(1, 4)], [f32(1)], "SoftmaxOptions", {"beta": 1.0},
                        version=version))
        v = verdicts(data)[0]
        assert v.verdict == verdict, v.reason
    assert "up to v2" in v.reason


def test_allowed_tensor_types_and_rank():
    """IsAllAllowedTensors: non-constant tensors FLOAT32/FLOAT16 (INT8/UINT8 with quantized
    ops on, the default); no tensor of rank 5 or more."""
    assert verdicts(build(Op("RELU", [q8(1, 8)], [q8(1)])))[0].verdict == "runs"
    v = verdicts(build(Op("RELU", [f32(1, 2, 2, 2, 2)], [f32(1)])))[0]
    assert v.verdict == "falls back" and "rank 5" in v.reason
    v = verdicts(build(Op("ADD", [T((1, 4), np.int32), T((1, 4), np.int32)], [T((1,), np.int32)],
                          "AddOptions", {})))[0]
    assert v.verdict == "falls back" and "INT32" in v.reason


def test_comparison_only_before_a_cast_or_select_to_float():
    """ElementwiseOperationParser for logical ops: one consumer, a CAST/SELECT to float;
    CastOperationParser: a CAST from BOOL only of a comparison, and not of a model output."""
    f, b = np.float32, np.bool_
    tensors = [((1, 4), f), ((1, 4), f), ((1, 4), b), ((1, 4), f), ((1, 4), f)]
    # (ADD reads the CAST once: GetTensorInfo counts a reader once per input it fills)
    ops = [Op("LESS", [0, 1], [2]), Op("CAST", [2], [3]), Op("ADD", [3, 0], [4], "AddOptions",
                                                             {})]
    assert [v.verdict for v in verdicts(graph_model(tensors, ops, [0, 1], [4]))] == ["runs"] * 3
    as_output = verdicts(graph_model(tensors[:4], ops[:2], [0, 1], [3]))
    assert as_output[1].verdict == "falls back" and "model output" in as_output[1].reason
    alone = graph_model(tensors[:3], [Op("LESS", [0, 1], [2])], [0, 1], [2])
    v = verdicts(alone)[0]
    assert v.verdict == "falls back" and "CAST or SELECT" in v.reason


def test_only_the_largest_partition_is_kept():
    """GetNodesOfFirstNLargestPartitions(max_delegated_partitions = 1)."""
    f = np.float32
    tensors = [((1, 4), f)] * 5
    ops = [Op("ADD", [0, 0], [1], "AddOptions", {}), Op("L2_NORMALIZATION", [1], [2]),
           Op("ADD", [2, 2], [3], "AddOptions", {}), Op("ADD", [3, 3], [4], "AddOptions", {})]
    result = gpu.analyze(ModelFacts(load_model(graph_model(tensors, ops, [0], [4]))))
    assert [p.ops for p in result.partitions] == [[2, 3]]
    assert result.ops[0].verdict == "falls back" and "largest" in result.ops[0].reason
    assert result.ops[1].verdict == "falls back" and "no L2_NORMALIZATION" in \
        result.ops[1].reason


def test_float16_weights_are_read_directly():
    """FP16GraphPartitionHelper: a DEQUANTIZE of a float16 constant is not taken; when it
    is all that is left out, the whole graph goes (DEQUANTIZE included)."""
    w = np.random.default_rng(0).standard_normal((4, 1, 1, 3)).astype(np.float16)
    f = np.float32
    tensors = [((1, 4, 4, 3), f), (w,), ((4, 1, 1, 3), f), (np.zeros(4, f),), ((1, 4, 4, 4), f)]
    ops = [Op("DEQUANTIZE", [1], [2], version=3),
           Op("CONV_2D", [0, 2, 3], [4], "Conv2DOptions",
              {"padding": "SAME", "stride_w": 1, "stride_h": 1})]
    result = gpu.analyze(ModelFacts(load_model(graph_model(tensors, ops, [0], [4]))))
    assert [v.verdict for v in result.ops] == ["runs", "runs"]
    assert result.partitions[0].inputs == [0, 1, 3]  # the float16 constant, not its output


def test_the_corpus_is_analysed_without_error():
    from pathlib import Path

    for p in sorted((Path(__file__).resolve().parents[1] / "data" / "models").glob("*.tflite")):
        result = gpu.analyze(ModelFacts(load_model(p)))
        # the delegate keeps one partition per subgraph at most
        assert len({q.subgraph for q in result.partitions}) == len(result.partitions)
        assert all(v.reason for v in result.ops if v.verdict != "runs"), p.name
