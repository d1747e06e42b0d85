"""ADD_N, ATAN2, BITCAST, BITWISE_XOR, RIGHT_SHIFT, BROADCAST_ARGS, BUCKETIZE, ONE_HOT,
SPARSE_TO_DENSE, UNIQUE, DILATE, FAKE_QUANT: random single-op models, run here and by
LiteRT (exact for integers, the project's float tolerance for floats), with edge cases."""
from __future__ import annotations

import flatbuffers
import numpy as np
import pytest

from tflite_viewer.interpreter import ExecutionError, Interpreter, UnsupportedOpError

from tflite_viewer.model.dtypes import bfloat16_to_float32, float32_to_bfloat16
from tflite_viewer.schema import schema_generated as S

from .singleop import Input, Op, assert_matches_litert, graph_model, run_litert, run_ours, \
    single_op_model

F32, I32, I64 = np.float32, np.int32, np.int64
SHAPES = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (1, 3, 1)), ((3,), ()),
          ((0, 3), (3,))]


def _rng(seed):
    return np.random.default_rng(seed)


def _ints(rng, dtype, shape, lo=None, hi=None):
    info = np.iinfo(dtype)
    lo = int(info.min) if lo is None else lo
    hi = int(info.max) if hi is None else hi
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", [F32, I32])
@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("shape", [(3, 4), (0, 2), ()])
def test_add_n(dtype, n, shape):
    rng = _rng(n)
    xs = [(rng.standard_normal(shape) * 10).astype(dtype) for _ in range(n)]
    model = single_op_model("ADD_N", [Input(shape, dtype)] * n, [dtype])
    assert_matches_litert(model, xs, reference=False)


def test_add_n_needs_two_inputs_as_litert():
    with pytest.raises(UnsupportedOpError, match="at least 2"):
        Interpreter(single_op_model("ADD_N", [Input((2,))], [F32]))


@pytest.mark.parametrize("dtype", [F32, np.float64, np.float16])
@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 3, 4)), ((5,), (5,)), ((), ()), ((0, 3), (0, 3))])
def test_atan2(dtype, shapes):
    rng = _rng(1)
    y, x = (rng.standard_normal(s).astype(dtype) for s in shapes)
    if x.size:
        x.flat[0] = 0
    model = single_op_model("ATAN2", [Input(y.shape, dtype), Input(x.shape, dtype)], [dtype])
    assert_matches_litert(model, [y, x], reference=False)


@pytest.mark.parametrize("y_shape,x_shape", [((2, 3), (3, 2)), ((2, 2), (3, 3)),
                                             ((1, 4), (2, 4))])
def test_atan2_pairs_elements_in_order_when_shapes_differ(y_shape, x_shape):
    """atan2.cc checks only the ranks: y's elements pair with x's first ones, in order."""
    rng = _rng(12)
    y, x = rng.standard_normal(y_shape).astype(F32), rng.standard_normal(x_shape).astype(F32)
    model = single_op_model("ATAN2", [Input(y_shape), Input(x_shape)], [F32])
    assert_matches_litert(model, [y, x], reference=False)


@pytest.mark.parametrize("y_shape,x_shape", [((3, 3), (2, 2)), ((4,), (2, 2))])
def test_atan2_refuses_fewer_x_elements_or_another_rank(y_shape, x_shape):
    model = single_op_model("ATAN2", [Input(y_shape), Input(x_shape)], [F32])
    with pytest.raises(ExecutionError, match="one rank and at least as many"):
        run_ours(model, [np.ones(y_shape, F32), np.ones(x_shape, F32)])


def _bf16_atan2_model(shape) -> bytes:
    """UINT16 raw bits -> BITCAST -> BFLOAT16 ATAN2 -> BITCAST -> UINT16 raw bits: LiteRT's
    Python API cannot set or read a BFLOAT16 tensor, but BITCAST passes the bits through."""
    u16 = np.uint16
    model = graph_model([(shape, u16)] * 2 + [(shape, u16)] * 3 + [(shape, u16)],
                        [Op("BITCAST", [0], [2]), Op("BITCAST", [1], [3]),
                         Op("ATAN2", [2, 3], [4]), Op("BITCAST", [4], [5])], [0, 1], [5])
    m = S.ModelT.InitFromPackedBuf(model, 0)
    for k in (2, 3, 4):
        m.subgraphs[0].tensors[k].type = S.TensorType.BFLOAT16
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@pytest.mark.parametrize("shape", [(2, 3, 4), (7,), (), (0, 3)])
def test_atan2_bfloat16(shape):
    rng = _rng(11)
    y, x = (float32_to_bfloat16(rng.standard_normal(shape) * 4) for _ in range(2))
    if x.size:  # the quadrant edge cases: zeros of both signs, infinities, a NaN
        special = float32_to_bfloat16(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30]))
        k = min(x.size, special.size)
        x.flat[:k], y.flat[:k] = special[:k], special[::-1][:k]
    model = _bf16_atan2_model(shape)
    theirs = run_litert(model, [y, x], reference=False)[0]
    ours = run_ours(model, [y, x])[0]
    assert ours.dtype == np.uint16 and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)  # raw bits, NaNs included
    expected = np.arctan2(bfloat16_to_float32(y), bfloat16_to_float32(x))
    np.testing.assert_allclose(bfloat16_to_float32(ours), expected, rtol=2 ** -8, atol=0)


def _with_bfloat16(model: bytes, tensors) -> bytes:
    m = S.ModelT.InitFromPackedBuf(model, 0)
    for k in tensors:
        m.subgraphs[0].tensors[k].type = S.TensorType.BFLOAT16
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@pytest.mark.parametrize("src", [F32, I32, np.int8, np.uint8, np.int16, I64, np.float16,
                                 np.bool_, np.float64])
@pytest.mark.parametrize("dst", [F32, I32, np.int16, np.uint8, np.bool_])
def test_cast_through_bfloat16(src, dst):
    """CAST to BFLOAT16 and back (cast.cc through float32, rounded to nearest even),
    against LiteRT: values, not the raw bits, are converted."""
    rng = _rng(13)
    if np.dtype(src).kind == "f":
        with np.errstate(over="ignore"):  # float16 infinities are cases too
            x = (rng.standard_normal(24) * 10.0 ** rng.integers(-4, 6, 24)).astype(src)
    elif src == np.bool_:
        x = rng.random(24) < 0.5
    else:
        x = _ints(rng, src, 24)
    model = _with_bfloat16(graph_model([((24,), src), ((24,), np.uint16), ((24,), dst)],
                                       [Op("CAST", [0], [1]), Op("CAST", [1], [2])], [0], [2]),
                           [1])
    assert_matches_litert(model, [x], reference=False)


@pytest.mark.parametrize("src", [F32, np.float16, np.float64])
@pytest.mark.parametrize("dst", [I32, np.int16, np.uint8, np.int8, I64, np.uint16, np.uint32])
def test_cast_saturates_floats_to_integers(src, dst):
    """cast.cc's SafeCast: truncation, the type's bounds past them, NaN to the maximum."""
    x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 7e4, -7e4, 300, -0.5,
                  2.0 ** 63, -2.0 ** 63, 1e19, 127.9, -128.9], np.float64)
    with np.errstate(over="ignore"):
        x = x.astype(src)
    model = single_op_model("CAST", [Input(x.shape, src)], [dst])
    assert_matches_litert(model, [x], reference=False)


def test_cast_from_bfloat16_bits():
    """Every kind of BFLOAT16 value (subnormals, infinities, NaN, both zeros) to float32
    and int32, from raw bits through BITCAST."""
    bits = np.array([0x0000, 0x8000, 0x0001, 0x807F, 0x3F80, 0xC2F7, 0x7F80, 0xFF80, 0x7FC0,
                     0x4F00, 0xCF00, 0x477F], np.uint16)
    for dst in (F32, I32):
        if dst == I32:
            bits = bits[np.isfinite(bfloat16_to_float32(bits))]
        model = _with_bfloat16(graph_model([(bits.shape, np.uint16), (bits.shape, np.uint16),
                                            (bits.shape, dst)],
                                           [Op("BITCAST", [0], [1]), Op("CAST", [1], [2])],
                                           [0], [2]), [1])
        ours = run_ours(model, [bits])[0]
        np.testing.assert_array_equal(ours, run_litert(model, [bits], reference=False)[0])
        if dst == F32:
            np.testing.assert_array_equal(ours, bfloat16_to_float32(bits))


@pytest.mark.parametrize("src,dst,shape", [
    (F32, I32, (2, 3)), (I32, np.uint8, (2, 3)), (np.int16, I32, (3, 2)),
    (np.uint8, F32, (2, 4)), (I64, np.int16, (2,)), (F32, np.float16, (0, 5))])
def test_bitcast(src, dst, shape):
    rng = _rng(2)
    x = rng.integers(0, 255, int(np.prod(shape)) * np.dtype(src).itemsize, dtype=np.uint8
                     ).view(src).reshape(shape)
    if np.dtype(src).kind == "f":
        x = np.nan_to_num(x)
    model = single_op_model("BITCAST", [Input(shape, src)], [dst])
    ours = run_ours(model, [x])[0]
    assert ours.tobytes() == x.tobytes()
    assert_matches_litert(model, [x], reference=False)


@pytest.mark.parametrize("op", ["BITWISE_XOR", "RIGHT_SHIFT"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, I32, np.uint32])
@pytest.mark.parametrize("shapes", SHAPES[:4])
def test_bitwise(op, dtype, shapes):
    rng = _rng(3)
    a = _ints(rng, dtype, shapes[0])
    bits = np.dtype(dtype).itemsize * 8
    b = _ints(rng, dtype, shapes[1]) if op == "BITWISE_XOR" else \
        _ints(rng, dtype, shapes[1], 0 if np.dtype(dtype).kind == "u" else -2, bits + 3)
    model = single_op_model(op, [Input(a.shape, dtype), Input(b.shape, dtype)], [dtype])
    assert_matches_litert(model, [a, b], reference=False)


@pytest.mark.parametrize("dtype", [I32, I64])
@pytest.mark.parametrize("a,b", [([2, 1, 4], [3, 1]), ([5], [2, 1, 1]), ([], [3, 2]),
                                 ([0, 1], [1])])
def test_broadcast_args(dtype, a, b):
    a, b = np.array(a, dtype), np.array(b, dtype)
    model = single_op_model("BROADCAST_ARGS", [a, b], [dtype])
    assert_matches_litert(model, [], reference=False)


@pytest.mark.parametrize("dtype", [F32, np.float64, I32, I64])
@pytest.mark.parametrize("seed", range(3))
def test_bucketize(dtype, seed):
    rng = _rng(10 + seed)
    bounds = sorted(float(v) for v in rng.integers(-10, 10, int(rng.integers(0, 6))))
    x = (rng.standard_normal((3, 7)) * 8).astype(dtype)
    x.flat[:len(bounds)] = np.array(bounds, dtype)  # values on a boundary
    model = single_op_model("BUCKETIZE", [Input(x.shape, dtype)], [I32], "BucketizeOptions",
                            {"boundaries": bounds})
    assert_matches_litert(model, [x], reference=False)


@pytest.mark.parametrize("dtype", [F32, I32, I64, np.int8, np.uint8, np.bool_])
@pytest.mark.parametrize("axis", [-1, 0, 1, 2])
def test_one_hot(dtype, axis):
    rng = _rng(4)
    idx = rng.integers(-1, 6, (3, 4)).astype(I32)
    on, off = np.array(1, dtype), np.array(0 if dtype == np.bool_ else 3, dtype)
    model = single_op_model("ONE_HOT", [Input(idx.shape, I32), np.array(5, I32), on, off],
                            [dtype], "OneHotOptions", {"axis": axis})
    assert_matches_litert(model, [idx], reference=False)


@pytest.mark.parametrize("dtype", [F32, I32, I64, np.int8, np.uint8])
@pytest.mark.parametrize("index_type", [I32, I64])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_sparse_to_dense(dtype, index_type, rank):
    rng = _rng(rank)
    shape = rng.integers(1, 5, rank)
    n = int(rng.integers(1, min(5, int(np.prod(shape))) + 1))
    flat = np.sort(rng.choice(int(np.prod(shape)), n, replace=False))
    idx = np.stack(np.unravel_index(flat, shape), axis=1).astype(index_type)
    if rank == 1:
        idx = idx.reshape(-1)
    values = (rng.standard_normal(n) * 20).astype(dtype)
    model = single_op_model("SPARSE_TO_DENSE", [idx, shape.astype(index_type), Input((n,), dtype),
                                                np.array(7, dtype)],
                            [dtype], "SparseToDenseOptions", {"validate_indices": False},
                            version=3)
    assert_matches_litert(model, [values], reference=False)


def test_sparse_to_dense_scalar_value():
    idx = np.array([[0, 1], [2, 0]], I32)
    model = single_op_model("SPARSE_TO_DENSE", [Input((2, 2), I32), np.array([3, 3], I32),
                                                np.array(5.0, F32), np.array(-1.0, F32)],
                            [F32], "SparseToDenseOptions", {})
    out = run_ours(model, [idx])[0]
    expected = np.full((3, 3), -1.0, F32)
    expected[0, 1] = expected[2, 0] = 5.0
    np.testing.assert_array_equal(out, expected)
    assert_matches_litert(model, [idx], reference=False)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, I32, I64, F32, np.uint8])
@pytest.mark.parametrize("idx_type", ["INT32", "INT64"])
@pytest.mark.parametrize("n", [1, 9, 40])
def test_unique(dtype, idx_type, n):
    rng = _rng(n)
    x = rng.integers(0, 4, n).astype(dtype)
    model = single_op_model("UNIQUE", [Input((n,), dtype)],
                            [dtype, I32 if idx_type == "INT32" else I64], "UniqueOptions",
                            {"idx_out_type": idx_type})
    assert_matches_litert(model, [x], reference=False)


@pytest.mark.parametrize("dtype", [F32, I32, np.int8, np.uint8, np.bool_])
@pytest.mark.parametrize("shape,dil", [((3, 4), (2, 3)), ((1, 3, 2), (1, 1, 4)), ((2,), (5,)),
                                       ((1, 1), (3, 3))])
def test_dilate(dtype, shape, dil):
    rng = _rng(5)
    x = (rng.standard_normal(shape) * 10).astype(dtype)
    pad = np.array(9, dtype) if dtype != np.bool_ else np.array(True)
    model = single_op_model("DILATE", [Input(shape, dtype), np.array(dil, I32), pad], [dtype])
    assert_matches_litert(model, [x], reference=False)


@pytest.mark.parametrize("lo,hi,bits", [(-1.0, 1.0, 8), (-0.3, 5.7, 8), (0.0, 2.5, 4),
                                        (-6.0, 0.0, 16), (-2.2, 1.3, 2)])
def test_fake_quant(lo, hi, bits):
    rng = _rng(6)
    x = (rng.standard_normal((4, 50)) * 3).astype(F32)
    model = single_op_model("FAKE_QUANT", [Input(x.shape)], [F32], "FakeQuantOptions",
                            {"min": lo, "max": hi, "numBits": bits} if False else
                            {"min": lo, "max": hi, "num_bits": bits})
    assert_matches_litert(model, [x])


def test_unique_of_nothing_is_nothing():
    """LiteRT fails on an empty input (its allocation overflows); the answer is empty."""
    model = single_op_model("UNIQUE", [Input((0,), I32)], [I32, I32], "UniqueOptions",
                            {"idx_out_type": "INT32"})
    values, idx = run_ours(model, [np.zeros(0, I32)])
    assert values.shape == (0,) and idx.shape == (0,)


def test_unique_by_hand():
    model = single_op_model("UNIQUE", [Input((7,), F32)], [F32, I32], "UniqueOptions",
                            {"idx_out_type": "INT32"})
    values, idx = run_ours(model, [np.array([4, 1, 4, 2, 1, 7, 2], F32)])
    np.testing.assert_array_equal(values, [4, 1, 2, 7])
    np.testing.assert_array_equal(idx, [0, 1, 0, 2, 1, 3, 2])


def test_one_hot_int16_is_refused_as_litert_cannot_evaluate_it():
    model = single_op_model("ONE_HOT", [Input((3,), I32), np.array(4, I32), np.array(1, np.int16),
                                        np.array(0, np.int16)], [np.int16], "OneHotOptions", {})
    with pytest.raises(UnsupportedOpError, match="ONE_HOT"):
        Interpreter(model)


def test_dilate_by_hand_with_a_zero_size_dimension():
    """LiteRT crashes dilating an empty dimension; its output has no elements there."""
    model = single_op_model("DILATE", [Input((0, 2), F32), np.array([2, 3], I32),
                                       np.array(0.5, F32)], [F32])
    assert run_ours(model, [np.zeros((0, 2), F32)])[0].shape == (0, 4)
    model = single_op_model("DILATE", [Input((2, 2), F32), np.array([2, 3], I32),
                                       np.array(0.5, F32)], [F32])
    out = run_ours(model, [np.array([[1, 2], [3, 4]], F32)])[0]
    np.testing.assert_array_equal(out, [[1, .5, .5, 2], [.5, .5, .5, .5], [3, .5, .5, 4]])
