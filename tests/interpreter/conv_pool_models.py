"""Random one-op conv and pool models, one per op x type configuration x version, in the
configurations LiteRT's kernels take (conv.cc, depthwise_conv.cc, transpose_conv.cc,
conv3d.cc, conv3d_transpose.cc, pooling.cc): what tools/sweep_op_types.py sweeps and
test_conv_pool_types_litert.py checks.

Configurations (``CONFIGS``): FLOAT32; UINT8 (per-tensor weights); INT8 with per-tensor
or per-channel weights; int16x8 (INT16 activations, INT8 per-channel weights) with an
INT64 or an INT32 bias; INT8 activations with INT4 weights; hybrid (FLOAT32 activations,
INT8 weights per tensor or per channel).  Pools take FLOAT32, UINT8, INT8, INT16.
"""
from __future__ import annotations

import flatbuffers
import numpy as np

from tflite_viewer.schema import schema_generated as S

try:
    from .singleop import Input, single_op_model
except ImportError:  # run from tools/sweep_op_types.py, with tests/interpreter on the path
    from singleop import Input, single_op_model  # type: ignore[no-redef]

F32, I32, I64 = np.float32, np.int32, np.int64
CONV = ["CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "CONV_3D", "CONV_3D_TRANSPOSE"]
POOL = ["AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"]
CONV_CONFIGS = ["FLOAT32", "UINT8", "INT8", "INT8_PER_CHANNEL", "INT16x8", "INT16x8_BIAS32",
                "INT8_INT4_WEIGHTS", "HYBRID", "HYBRID_PER_CHANNEL"]
POOL_CONFIGS = ["FLOAT32", "UINT8", "INT8", "INT16"]
#: the versions LiteRT's builtin resolver registers (litert_builtins.py)
VERSIONS = {"CONV_2D": 8, "DEPTHWISE_CONV_2D": 7, "TRANSPOSE_CONV": 5, "CONV_3D": 1,
            "CONV_3D_TRANSPOSE": 1, "AVERAGE_POOL_2D": 3, "MAX_POOL_2D": 3, "L2_POOL_2D": 1}


def configs(op: str) -> list[str]:
    return POOL_CONFIGS if op in POOL else CONV_CONFIGS


def _act(rng) -> str:
    """A fused activation: the clamps, and two the conv and pool kernels do not apply
    (CalculateActivationRange leaves them unbounded)."""
    return str(rng.choice(["NONE", "RELU", "RELU6", "RELU_N1_TO_1", "TANH", "SIGN_BIT"]))


def _activation_quant(rng, dtype):
    """A random (scale, zero_point) for an activation tensor of ``dtype`` (int16:
    symmetric, as the 16x8 kernels require)."""
    if dtype == np.int16:
        return (float(rng.uniform(2e-4, 1e-3)), 0)
    if dtype == np.uint8:
        return (float(rng.uniform(0.01, 0.05)), int(rng.integers(100, 156)))
    return (float(rng.uniform(0.01, 0.05)), int(rng.integers(-20, 20)))


def _ints(rng, dtype, shape, lo=None, hi=None):
    info = np.iinfo(dtype)
    return rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1,
                        shape).astype(dtype)


def _weights(rng, config: str, shape, channel_axis: int):
    """(weights constant, its (scale, zero point[, axis]) or None) for ``config``."""
    channels = shape[channel_axis]
    if config == "FLOAT32":
        return (rng.standard_normal(shape) * 0.5).astype(F32), None
    per_channel = config in ("INT8_PER_CHANNEL", "INT16x8", "INT16x8_BIAS32",
                             "HYBRID_PER_CHANNEL")
    if config == "UINT8":
        return _ints(rng, np.uint8, shape), (float(rng.uniform(0.005, 0.02)),
                                             int(rng.integers(100, 156)))
    lo, hi = (-7, 7) if config == "INT8_INT4_WEIGHTS" else (-127, 127)
    w = _ints(rng, np.int8, shape, lo, hi)
    if per_channel:
        scales = rng.uniform(0.002, 0.02, channels)
        return w, (scales, np.zeros(channels, np.int64), channel_axis)
    return w, (float(rng.uniform(0.002, 0.02)), 0)


def _bias(rng, config: str, channels: int, in_scale, w_quant):
    """(bias constant, its quant or None): float for float and hybrid nodes, else INT32
    (INT64 for int16x8) of scale input scale x filter scale (per channel with them)."""
    if config in ("FLOAT32", "HYBRID", "HYBRID_PER_CHANNEL"):
        return (rng.standard_normal(channels)).astype(F32), None
    scales = in_scale * np.atleast_1d(w_quant[0])  # per channel only with the weights
    dtype = I64 if config == "INT16x8" else I32
    b = rng.integers(-2000, 2000, channels).astype(dtype)
    return b, (scales if scales.size > 1 else float(scales[0]), np.zeros(channels, np.int64)
               if scales.size > 1 else 0)


def _act_dtype(config: str):
    return {"UINT8": np.uint8, "INT16x8": np.int16, "INT16x8_BIAS32": np.int16,
            "INT16": np.int16, "INT8": np.int8, "INT8_PER_CHANNEL": np.int8,
            "INT8_INT4_WEIGHTS": np.int8}.get(config, F32)


def _quantized_model(op, ins, out_dtype, out_q, options_type, options, version, consts_q,
                     int4: tuple[int, ...] = ()):
    """A one-op model whose constants carry quantization ``consts_q[k]`` (and INT4 type
    for inputs in ``int4``); the builder takes quantization only on runtime inputs."""
    model = single_op_model(op, ins, [(out_dtype, out_q) if out_q else out_dtype],
                            options_type, options, version=version)
    m = S.ModelT.InitFromPackedBuf(model, 0)
    sg = m.subgraphs[0]
    for k, q in consts_q.items():
        t = sg.tensors[sg.operators[0].inputs[k]]
        if q is None:
            continue
        qp = S.QuantizationParametersT()
        scales = np.atleast_1d(q[0])
        qp.scale = [float(v) for v in scales]
        qp.zeroPoint = [int(v) for v in np.broadcast_to(np.atleast_1d(q[1]), scales.shape)]
        qp.quantizedDimension = int(q[2]) if len(q) > 2 else 0
        t.quantization = qp
        if k in int4:
            vals = np.frombuffer(bytes(m.buffers[t.buffer].data), np.int8)
            nib = (vals.astype(np.uint8) & 0xF)
            if nib.size % 2:
                nib = np.append(nib, 0)
            m.buffers[t.buffer].data = (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8)
            t.type = S.TensorType.INT4
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def build(op: str, config: str, version: int, rng, act: str | None = None):
    """(model bytes, runtime inputs) of one random ``op`` model in ``config`` (with the
    fused activation ``act``, or a random one)."""
    dtype = _act_dtype(config)
    q_in = None if dtype == F32 else _activation_quant(rng, dtype)
    q_out = None if dtype == F32 else _activation_quant(rng, dtype)
    if op in POOL:
        x = (rng.standard_normal((1, 6, 6, 3)) * 2).astype(F32) if dtype == F32 \
            else _ints(rng, dtype, (1, 6, 6, 3))
        if op == "MAX_POOL_2D" or dtype == F32:
            q_out = q_in
        opts = {"padding": str(rng.choice(["SAME", "VALID"])), "stride_w": 2, "stride_h": 2,
                "filter_width": int(rng.integers(1, 4)), "filter_height": int(rng.integers(1, 4)),
                "fused_activation_function": act or _act(rng)}
        model = single_op_model(op, [Input(x.shape, dtype, q_in)],
                                [(dtype, q_out) if q_out else dtype], "Pool2DOptions", opts,
                                version=version)
        return model, [x]
    in_scale = q_in[0] if q_in else None
    if op in ("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV"):
        x_shape, ci = (1, 5, 5, 3), 3
        if op == "CONV_2D":
            w_shape, co, axis = (4, 3, 3, ci), 4, 0
        elif op == "DEPTHWISE_CONV_2D":
            w_shape, co, axis = (1, 3, 3, ci * 2), ci * 2, 3
        else:
            w_shape, co, axis = (4, 3, 3, ci), 4, 0
    else:
        x_shape, ci, co = (1, 4, 4, 4, 2), 2, 3
        w_shape = (2, 2, 2, ci, co) if op == "CONV_3D" else (2, 2, 2, co, ci)
        axis = 4 if op == "CONV_3D" else 3
    x = rng.standard_normal(x_shape).astype(F32) if dtype == F32 else _ints(rng, dtype, x_shape)
    w, w_q = _weights(rng, config, w_shape, axis)
    b, b_q = _bias(rng, config, co, in_scale, w_q)
    act = act or _act(rng)
    stride = int(rng.integers(1, 3))
    padding = str(rng.choice(["SAME", "VALID"]))
    int4 = (1,) if config == "INT8_INT4_WEIGHTS" else ()
    # conv.cc and transpose_conv.cc read a 16x8 bias as INT64 unless the options say INT32
    bias32 = {"quantized_bias_type": "INT32"} if config == "INT16x8_BIAS32" else {}
    if op == "CONV_2D":
        opts = {"padding": padding, "stride_w": stride, "stride_h": stride,
                "fused_activation_function": act, **bias32}
        return _quantized_model(op, [Input(x_shape, dtype, q_in), w, b], dtype, q_out,
                                "Conv2DOptions", opts, version, {1: w_q, 2: b_q}, int4), [x]
    if op == "DEPTHWISE_CONV_2D":
        opts = {"padding": padding, "stride_w": stride, "stride_h": stride,
                "depth_multiplier": 2, "fused_activation_function": act}
        return _quantized_model(op, [Input(x_shape, dtype, q_in), w, b], dtype, q_out,
                                "DepthwiseConv2DOptions", opts, version, {1: w_q, 2: b_q},
                                int4), [x]
    if op == "TRANSPOSE_CONV":
        out_hw = [5 * stride if padding == "SAME" else (5 - 1) * stride + 3] * 2
        shape = np.array([1] + out_hw + [co], I32)
        opts = {"padding": padding, "stride_w": stride, "stride_h": stride,
                "fused_activation_function": act, **bias32}
        model = _quantized_model(op, [shape, w, Input(x_shape, dtype, q_in), b], dtype, q_out,
                                 "TransposeConvOptions", opts, version, {1: w_q, 3: b_q},
                                 tuple(k for k in (1,) if int4))
        return model, [x]
    opts = {"padding": padding, "fused_activation_function": act}
    for a in "dhw":
        opts[f"stride_{a}"] = stride
        opts[f"dilation_{a}_factor"] = 1
    if op == "CONV_3D":
        return _quantized_model(op, [Input(x_shape, dtype, q_in), w, b], dtype, q_out,
                                "Conv3DOptions", opts, version, {1: w_q, 2: b_q}, int4), [x]
    out_s = [4 * stride if padding == "SAME" else 3 * stride + 2] * 3
    shape = np.array([1] + out_s + [co], I32)
    return _quantized_model(op, [shape, w, Input(x_shape, dtype, q_in), b], dtype, q_out,
                            "Conv3DOptions", opts, version, {1: w_q, 3: b_q}, int4), [x]
