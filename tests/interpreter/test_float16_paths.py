"""The FLOAT16 versions LiteRT resolves (op_version.cc gives float16 inputs their own
version): ADD v6, MUL v8, SIN/COS v2, GELU v3, SOFTMAX v4, SLICE v8, TRANSPOSE v9 (and v8:
rank 7), CONCATENATION v6, FILL v4, UNPACK v5, against LiteRT.  Data movement and add/mul
are exact; transcendental ops agree within two float16 steps of the output's range
(LiteRT evaluates them in float and rounds to half, op by op)."""
from __future__ import annotations

import numpy as np
import pytest

from .singleop import Input, assert_matches_litert, single_op_model

H, I32 = np.float16, np.int32
HALF_TOL = 2e-3  # float16 has a 2**-10 step


def _x(seed, shape=(2, 3, 4)):
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(H)


@pytest.mark.parametrize("op,version,opts", [("ADD", 6, "AddOptions"), ("MUL", 8, "MulOptions")])
@pytest.mark.parametrize("b_shape", [(2, 3, 4), (4,), (1, 3, 1)])
def test_float16_add_mul_exact(op, version, opts, b_shape):
    a, b = _x(1), _x(2, b_shape)
    model = single_op_model(op, [Input(a.shape, H), Input(b.shape, H)], [H], opts,
                            {"fused_activation_function": "RELU6"}, version=version)
    assert_matches_litert(model, [a, b], tol=0.0, reference=False)


@pytest.mark.parametrize("op,version,opts", [("SIN", 2, None), ("COS", 2, None),
                                             ("GELU", 3, "GeluOptions"),
                                             ("SOFTMAX", 4, "SoftmaxOptions")])
def test_float16_math_within_half_precision(op, version, opts):
    x = _x(3, (4, 33))
    options = {"GeluOptions": {"approximate": False}, "SoftmaxOptions": {"beta": 1.0}}.get(opts)
    model = single_op_model(op, [Input(x.shape, H)], [H], opts, options, version=version)
    assert_matches_litert(model, [x], tol=HALF_TOL, reference=False)


def test_float16_data_movement_exact():
    x, y = _x(4), _x(5)
    cases = [
        (single_op_model("SLICE", [Input(x.shape, H), np.array([0, 1, 1], I32),
                                   np.array([2, 2, -1], I32)], [H], version=8), [x]),
        (single_op_model("TRANSPOSE", [Input(x.shape, H), np.array([2, 0, 1], I32)], [H],
                         version=9), [x]),
        (single_op_model("CONCATENATION", [Input(x.shape, H), Input(y.shape, H)], [H],
                         "ConcatenationOptions", {"axis": 1}, version=6), [x, y]),
        (single_op_model("FILL", [np.array([2, 3], I32), Input((), H)], [H], version=4),
         [np.array(1.5, H)]),
        (single_op_model("UNPACK", [Input(x.shape, H)], [H, H], "UnpackOptions",
                         {"num": 2, "axis": 0}, version=5), [x]),
    ]
    for model, inputs in cases:
        assert_matches_litert(model, inputs, tol=0.0, reference=False)


def test_transpose_of_rank_7():
    x = np.arange(2 * 1 * 3 * 1 * 2 * 2 * 3, dtype=np.float32).reshape(2, 1, 3, 1, 2, 2, 3)
    model = single_op_model("TRANSPOSE", [Input(x.shape), np.array([6, 0, 5, 1, 4, 2, 3], I32)],
                            [np.float32], version=8)
    assert_matches_litert(model, [x], tol=0.0, reference=False)
