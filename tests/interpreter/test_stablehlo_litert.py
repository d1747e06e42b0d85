"""StableHLO kernels against LiteRT on random single-op models."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter, UnsupportedOpError

from .singleop import Input, assert_matches_litert, single_op_model

F32 = np.float32
ALL = [np.float16, F32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
       np.uint32, np.uint64, np.bool_]


def _values(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 4).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max), shape, endpoint=True, dtype=dtype)


OPS_TYPES = [(op, t) for op in ["STABLEHLO_ADD", "STABLEHLO_MULTIPLY", "STABLEHLO_MAXIMUM",
                                  "STABLEHLO_MINIMUM", "STABLEHLO_AND"] for t in ALL
             if not (op == "STABLEHLO_AND" and np.dtype(t).kind == "f")]  # AND: no floats


@pytest.mark.parametrize("op,dtype", OPS_TYPES)
@pytest.mark.parametrize("shape", [(3, 5), (2, 1, 4), (), (0, 2)])
def test_stablehlo_elementwise(op, dtype, shape):
    rng = np.random.default_rng(len(shape))
    a, b = _values(rng, dtype, shape), _values(rng, dtype, shape)
    model = single_op_model(op, [Input(shape, dtype), Input(shape, dtype)], [dtype])
    assert_matches_litert(model, [a, b], reference=False)


def test_stablehlo_and_refuses_floats():
    model = single_op_model("STABLEHLO_AND", [Input((2,)), Input((2,))], [F32])
    with pytest.raises(UnsupportedOpError, match="STABLEHLO_AND"):
        Interpreter(model)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32])
def test_stablehlo_shift_left(dtype):
    rng = np.random.default_rng(1)
    bits = np.dtype(dtype).itemsize * 8
    a = _values(rng, dtype, (4, 6))
    b = rng.integers(0, bits, (4, 6)).astype(dtype)
    model = single_op_model("STABLEHLO_SHIFT_LEFT", [Input(a.shape, dtype), Input(b.shape, dtype)],
                            [dtype])
    assert_matches_litert(model, [a, b], reference=False)


@pytest.mark.parametrize("dtype", [F32, np.int8, np.int32, np.float16, np.int64])
@pytest.mark.parametrize("seed", range(8))
def test_stablehlo_pad(dtype, seed):
    rng = np.random.default_rng(30 + seed)
    shape = tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(1, 4))))
    low = [int(v) for v in rng.integers(-1, 3, len(shape))]
    high = [int(v) for v in rng.integers(-1, 3, len(shape))]
    interior = [int(v) for v in rng.integers(0, 3, len(shape))]
    x = _values(rng, dtype, shape)
    model = single_op_model("STABLEHLO_PAD", [Input(shape, dtype), np.array(7, dtype)],
                            [dtype], "StablehloPadOptions",
                            {"edge_padding_low": low, "edge_padding_high": high,
                             "interior_padding": interior})
    assert_matches_litert(model, [x], reference=False)
