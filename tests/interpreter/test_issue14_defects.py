"""Regression tests for issue 14's defects, on models the tests build, against LiteRT:
RSQRT/GELU refused for int8 (and int16) input, sparse int8 FULLY_CONNECTED failing with a
numpy broadcast error, and a RESHAPE whose zero-element constant shape "has no value"."""
from __future__ import annotations

import flatbuffers
import numpy as np
import pytest

from tflite_viewer.schema import schema_generated as S

from .singleop import (Input, Op, assert_matches_litert, graph_model, run_litert, run_ours,
                       single_op_model)

F32 = np.float32


# -- a zero-element constant is a value ---------------------------------------------------
def test_reshape_to_scalar_with_an_empty_constant_shape():
    model = single_op_model("RESHAPE", [Input((1,)), np.zeros((0,), np.int32)], [F32])
    x = np.array([3.5], F32)
    ours = run_ours(model, [x])[0]
    assert ours.shape == () and float(ours) == 3.5
    assert_matches_litert(model, [x])


def test_the_reader_gives_a_zero_element_constant_its_empty_value():
    from tflite_viewer.model import load_model
    model = load_model(single_op_model("RESHAPE", [Input((1,)), np.zeros((0,), np.int32)], [F32]))
    shape_tensor = model.subgraphs[0].tensors[1]
    value = shape_tensor.data()
    assert value is not None and value.shape == (0,) and value.dtype == np.int32
    assert model.subgraphs[0].tensors[0].data() is None  # an input has no stored value


def test_sum_over_an_empty_constant_axis_list_is_the_identity():
    x = np.arange(6, dtype=F32).reshape(2, 3)
    model = single_op_model("SUM", [Input(x.shape), np.zeros((0,), np.int32)], [F32],
                            "ReducerOptions", {"keep_dims": False})
    np.testing.assert_array_equal(run_ours(model, [x])[0], x)
    assert_matches_litert(model, [x])


# -- quantized RSQRT and GELU ------------------------------------------------------------
def _quantized_unary(op, dtype, in_q, out_q, seed, options=None, shape=(3, 17)):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    lo = in_q[1] if op == "RSQRT" else info.min
    x = rng.integers(lo, int(info.max) + 1, shape).astype(dtype)
    model = single_op_model(op, [Input(shape, dtype, in_q)], [(dtype, out_q)],
                            "GeluOptions" if options is not None else None, options,
                            version=2)
    return model, x


@pytest.mark.parametrize("seed", range(40))
def test_rsqrt_int8_bit_exact(seed):
    rng = np.random.default_rng(seed)
    in_q = (float(rng.uniform(1e-3, 0.2)), int(rng.integers(-128, 60)))
    out_q = (float(rng.uniform(1e-3, 0.5)), int(rng.integers(-128, 127)))
    model, x = _quantized_unary("RSQRT", np.int8, in_q, out_q, seed)
    x[0, :2] = in_q[1]  # zero values give the largest output
    assert_matches_litert(model, [x])


@pytest.mark.parametrize("seed", range(20))
def test_rsqrt_int16_bit_exact(seed):
    rng = np.random.default_rng(100 + seed)
    in_q = (float(rng.uniform(1e-5, 1e-3)), 0)
    out_q = (float(rng.uniform(1e-4, 1e-2)), 0)
    model, x = _quantized_unary("RSQRT", np.int16, in_q, out_q, seed)
    assert_matches_litert(model, [x])


def test_rsqrt_int8_refuses_values_below_the_zero_point_as_litert_does():
    model, x = _quantized_unary("RSQRT", np.int8, (0.05, 0), (0.05, 0), 0)
    x[0, 0] = -3
    with pytest.raises(Exception, match="positive"):
        run_ours(model, [x])
    with pytest.raises(Exception):
        run_litert(model, [x])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16])
@pytest.mark.parametrize("approximate", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_gelu_quantized_bit_exact(dtype, approximate, seed):
    rng = np.random.default_rng(200 + seed)
    if dtype == np.int16:
        in_q, out_q = (float(rng.uniform(1e-4, 5e-4)), 0), (float(rng.uniform(1e-4, 5e-4)), 0)
    else:
        info = np.iinfo(dtype)
        in_q = (float(rng.uniform(0.01, 0.08)), int(rng.integers(info.min, info.max)))
        out_q = (float(rng.uniform(0.01, 0.08)), int(rng.integers(info.min, info.max)))
    model, x = _quantized_unary("GELU", dtype, in_q, out_q, seed,
                                {"approximate": approximate}, shape=(4, 64))
    assert_matches_litert(model, [x], reference=False)


# -- sparse int8 FULLY_CONNECTED ----------------------------------------------------------
def _sparsify_1x16(model: bytes, tensor: int, dense: np.ndarray) -> bytes:
    """The model with constant ``tensor`` stored as LiteRT's 1x16 block-sparse format:
    rows dense, column blocks CSR, 16 values per block (traversal order 0, 1, 2)."""
    m = S.ModelT.InitFromPackedBuf(model, 0)
    t = m.subgraphs[0].tensors[tensor]
    rows, cols = dense.shape
    blocks = dense.reshape(rows, cols // 16, 16)
    segments, indices, values = [0], [], []
    for r in range(rows):
        for b in range(cols // 16):
            if np.any(blocks[r, b]):
                indices.append(b)
                values.append(blocks[r, b])
        segments.append(len(indices))
    sp = S.SparsityParametersT()
    sp.traversalOrder, sp.blockMap = [0, 1, 2], [1]
    d0, d1, d2 = S.DimensionMetadataT(), S.DimensionMetadataT(), S.DimensionMetadataT()
    d0.format, d0.denseSize = S.DimensionType.DENSE, rows
    d1.format = S.DimensionType.SPARSE_CSR
    d1.arraySegmentsType, d1.arrayIndicesType = S.SparseIndexVector.Int32Vector, \
        S.SparseIndexVector.Int32Vector
    d1.arraySegments, d1.arrayIndices = S.Int32VectorT(), S.Int32VectorT()
    d1.arraySegments.values, d1.arrayIndices.values = segments, indices
    d2.format, d2.denseSize = S.DimensionType.DENSE, 16
    sp.dimMetadata = [d0, d1, d2]
    t.sparsity = sp
    packed = np.concatenate(values).astype(dense.dtype) if values else np.zeros(0, dense.dtype)
    m.buffers[t.buffer].data = np.frombuffer(packed.tobytes(), np.uint8)
    builder = flatbuffers.Builder(0)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


@pytest.mark.parametrize("seed", range(12))
def test_sparse_int8_fully_connected_bit_exact(seed):
    rng = np.random.default_rng(300 + seed)
    units, depth, batch = int(rng.integers(1, 9)), 16 * int(rng.integers(1, 5)), int(rng.integers(1, 4))
    dense = rng.integers(-127, 128, (units, depth)).astype(np.int8)
    dense.reshape(units, -1, 16)[rng.random((units, depth // 16)) < 0.5] = 0
    per_channel = bool(seed % 2)
    w_scale = rng.uniform(0.002, 0.02, units) if per_channel else float(rng.uniform(0.002, 0.02))
    in_q = (float(rng.uniform(0.01, 0.1)), int(rng.integers(-20, 20)))
    out_q = (float(rng.uniform(0.05, 0.5)), int(rng.integers(-20, 20)))
    bias = rng.integers(-2000, 2000, units).astype(np.int32)
    act = ["NONE", "RELU"][seed % 2]
    w_q = (w_scale, np.zeros(np.size(w_scale), np.int64), 0)
    b_q = (np.float64(in_q[0]) * np.asarray(w_scale), np.zeros(np.size(w_scale), np.int64), 0)
    model = graph_model([((batch, depth), np.int8, in_q), (dense, w_q), (bias, b_q),
                         ((batch, units), np.int8, out_q)],
                        [Op("FULLY_CONNECTED", [0, 1, 2], [3], "FullyConnectedOptions",
                            {"fused_activation_function": act}, version=4)], [0], [3])
    model = _sparsify_1x16(model, 1, dense)
    x = rng.integers(-128, 128, (batch, depth)).astype(np.int8)
    # BUILTIN_REF: the BUILTIN resolver's XNNPACK delegate takes the compressed values for
    # a dense matrix (its outputs here are unrelated to the weights)
    np.testing.assert_array_equal(run_ours(model, [x])[0], run_litert(model, [x])[0])


@pytest.mark.parametrize("seed", range(6))
def test_sparse_float_fully_connected(seed):
    """Float weights in the same block-sparse format (LiteRT's float kernel accepts them)."""
    rng = np.random.default_rng(400 + seed)
    units, depth = int(rng.integers(1, 6)), 16 * int(rng.integers(1, 4))
    dense = rng.standard_normal((units, depth)).astype(np.float32)
    dense.reshape(units, -1, 16)[rng.random((units, depth // 16)) < 0.5] = 0
    bias = rng.standard_normal(units).astype(np.float32)
    model = graph_model([((2, depth), np.float32), (dense,), (bias,), ((2, units), np.float32)],
                        [Op("FULLY_CONNECTED", [0, 1, 2], [3], "FullyConnectedOptions",
                            {"fused_activation_function": "RELU"})], [0], [3])
    model = _sparsify_1x16(model, 1, dense)
    x = rng.standard_normal((2, depth)).astype(np.float32)
    assert_matches_litert(model, [x])


def test_sparse_weights_with_no_stored_value_are_a_constant():
    """Every block zero: the buffer is rightly empty, and still a (zero) constant."""
    dense = np.zeros((3, 32), np.int8)
    model = graph_model([((1, 32), np.int8, (0.1, 0)), (dense, (0.01, 0)),
                         ((1, 3), np.int8, (0.05, -5))],
                        [Op("FULLY_CONNECTED", [0, 1, -1], [2], "FullyConnectedOptions", {},
                            version=4)], [0], [2])
    model = _sparsify_1x16(model, 1, dense)
    from tflite_viewer.model import load_model
    weights = load_model(model).subgraphs[0].tensors[1]
    assert weights.is_constant and weights.data().size == 0
    np.testing.assert_array_equal(weights.densified(), dense)
    x = np.full((1, 32), 7, np.int8)
    out = run_ours(model, [x])[0]
    np.testing.assert_array_equal(out, np.full((1, 3), -5, np.int8))
    np.testing.assert_array_equal(out, run_litert(model, [x])[0])
