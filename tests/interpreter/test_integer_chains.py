"""Quantized models chaining TRANSPOSE_CONV, RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR,
BATCH_MATMUL (int8, int16, hybrid), L2_NORMALIZATION and LOG_SOFTMAX run through the
Interpreter (kernel prepare/invoke wiring, cached parameters) and match LiteRT's reference
kernels bit for bit on every intermediate tensor (each one is a model output)."""
from __future__ import annotations

import numpy as np
import pytest

from .singleop import Op, assert_matches_litert, graph_model, run_litert, run_ours


def _rand(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype)


def _chain(dtype, rng) -> tuple[bytes, list[np.ndarray]]:
    d = np.dtype(dtype)
    i16 = d == np.int16
    wdtype = np.uint8 if d == np.uint8 else np.int8
    zp = (lambda v: 0) if i16 else (lambda v: v + (128 if d == np.uint8 else 0))
    xq = (0.05, zp(3))
    w = _rand(rng, (4, 3, 3, 3), wdtype)
    if d == np.uint8:
        wq = (0.01, 120)
        bias_scale = 0.05 * 0.01
    else:
        ws = np.float32(rng.uniform(0.005, 0.02, size=4))
        wq = (ws, np.zeros(4, np.int64), 0)
        bias_scale = 0.05 * ws.astype(np.float64)
    bias = rng.integers(-2000, 2000, size=4).astype(np.int64 if i16 else np.int32)
    aq = (0.08, zp(-5))
    tensors = [
        ((1, 4, 4, 3), dtype, xq),                                      # 0 input
        (np.array([1, 8, 8, 4], np.int32),),                            # 1 output shape
        (w, wq),                                                        # 2 weights
        (bias, (bias_scale, 0)),                                        # 3 bias
        ((1, 8, 8, 4), dtype, aq),                                      # 4 transpose conv
        (np.array([12, 11], np.int32),),                                # 5 size
        ((1, 12, 11, 4), dtype, aq),                                    # 6 bilinear
        (np.array([6, 7], np.int32),),                                  # 7 size
        ((1, 6, 7, 4), dtype, aq),                                      # 8 nearest
    ]
    v_res = 4 if i16 else 3
    ops = [Op("TRANSPOSE_CONV", [1, 2, 0, 3], [4], "TransposeConvOptions",
              {"padding": "SAME", "stride_h": 2, "stride_w": 2}, 4 if not i16 else 3),
           Op("RESIZE_BILINEAR", [4, 5], [6], "ResizeBilinearOptions",
              {"half_pixel_centers": True}, v_res),
           Op("RESIZE_NEAREST_NEIGHBOR", [6, 7], [8], "ResizeNearestNeighborOptions",
              {"align_corners": True}, v_res)]
    inputs = [_rand(rng, (1, 4, 4, 3), dtype)]
    if d != np.uint8:  # BATCH_MATMUL has no uint8 kernel
        rhs = _rand(rng, (4, 5), dtype)
        tensors += [(rhs, (0.02, 0)), ((1, 6, 7, 5), dtype, (300.0 if i16 else 0.1, zp(2)))]
        ops.append(Op("BATCH_MATMUL", [8, 9], [10], "BatchMatMulOptions", {},
                      3 if i16 else 2))
        last = 10
    else:
        last = 8
    if not i16:
        n = len(tensors)
        tensors += [((1, 6, 7, 5 if last == 10 else 4), dtype, (1 / 128, zp(0) if d == np.int8 else 128)),
                    ((1, 6, 7, 5 if last == 10 else 4), dtype, (16 / 256, 127 if d == np.int8 else 255))]
        ops += [Op("L2_NORMALIZATION", [last], [n], "L2NormOptions", {}, 2),
                Op("LOG_SOFTMAX", [n], [n + 1], "LogSoftmaxOptions", {}, 2)]
    if d == np.int8:  # hybrid BATCH_MATMUL on its own float input
        n = len(tensors)
        tensors += [((2, 6, 5), np.float32), (_rand(rng, (5, 3), np.int8), (0.03, 0)),
                    ((2, 6, 3), np.float32)]
        ops.append(Op("BATCH_MATMUL", [n, n + 1], [n + 2], "BatchMatMulOptions",
                      {"asymmetric_quantize_inputs": True}, 4))
        inputs.append(rng.normal(0, 2, size=(2, 6, 5)).astype(np.float32))
        model_inputs = [0, n]
    else:
        model_inputs = [0]
    outputs = [o for op in ops for o in op.outputs]
    return graph_model(tensors, ops, model_inputs, outputs), inputs


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16], ids=lambda d: np.dtype(d).name)
def test_chain_matches_litert_reference_on_every_tensor(dtype):
    rng = np.random.default_rng(7 + [np.uint8, np.int8, np.int16].index(dtype))
    model, _ = _chain(dtype, rng)
    for seed in range(3):
        _, inputs = _chain(dtype, np.random.default_rng(100 + seed))
        ref = run_litert(model, inputs)
        ours = run_ours(model, inputs)
        assert len(ours) == len(ref)
        for k, (a, b) in enumerate(zip(ours, ref)):
            assert a.dtype == b.dtype and a.shape == b.shape, f"output {k}"
            np.testing.assert_array_equal(a, b, err_msg=f"{np.dtype(dtype).name} output {k}")


def test_hybrid_transpose_conv_is_computed_as_litert_does():
    """(Was refused; now transpose_conv.cc's EvalHybrid: more cases in
    test_conv_pool_types_litert.py.)"""
    w = np.ones((2, 3, 3, 1), np.int8)
    tensors = [((1, 4, 4, 1), np.float32), (np.array([1, 8, 8, 2], np.int32),),
               (w, (0.1, 0)), ((1, 8, 8, 2), np.float32)]
    model = graph_model(tensors, [Op("TRANSPOSE_CONV", [1, 2, 0], [3], "TransposeConvOptions",
                                     {"padding": "SAME", "stride_h": 2, "stride_w": 2}, 3)],
                        [0], [3])
    x = np.random.default_rng(4).standard_normal((1, 4, 4, 1)).astype(np.float32)
    assert_matches_litert(model, [x])
