"""ABS, SQRT, LOG (int8, int16) and ABS (int32, unquantized int16): the type paths of
elementwise.cc LiteRT accepts, bit-exact against its kernels on random single-op models."""
from __future__ import annotations

import numpy as np
import pytest

from .singleop import Input, assert_matches_litert, single_op_model


def _case(op, dtype, seed, quantized=True):
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    zp_in = 0 if dtype != np.int8 else int(rng.integers(-128, 128))
    zp_out = 0 if dtype != np.int8 else int(rng.integers(-128, 128))
    small = dtype == np.int16
    in_q = (float(rng.uniform(1e-4, 1e-3) if small else rng.uniform(0.01, 0.1)), zp_in)
    out_q = (float(rng.uniform(1e-4, 1e-3) if small else rng.uniform(0.01, 0.1)), zp_out)
    if op == "ABS" and seed % 3 == 0:
        out_q = in_q  # no rescale
    lo = zp_in if op == "SQRT" else int(info.min)
    x = rng.integers(lo, int(info.max) + 1, (5, 13)).astype(dtype)
    if not quantized:
        return single_op_model(op, [Input(x.shape, dtype)], [dtype]), x
    return single_op_model(op, [Input(x.shape, dtype, in_q)], [(dtype, out_q)], version=2), x


@pytest.mark.parametrize("op", ["ABS", "SQRT", "LOG"])
@pytest.mark.parametrize("dtype", [np.int8, np.int16])
@pytest.mark.parametrize("seed", range(10))
def test_quantized_unary_bit_exact(op, dtype, seed):
    model, x = _case(op, dtype, seed)
    assert_matches_litert(model, [x], reference=op != "LOG")


@pytest.mark.parametrize("dtype", [np.int16, np.int32])
def test_abs_of_plain_integers(dtype):
    model, x = _case("ABS", dtype, 1, quantized=False)
    x.flat[0] = np.iinfo(dtype).min + 1
    assert_matches_litert(model, [x])
