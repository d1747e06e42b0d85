"""FULLY_CONNECTED: uint8, int8 per-tensor / per-channel, int16x8 with int32 / int64 bias."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from tflite_viewer.interpreter.integer import fully_connected as fc

from .gen import ACTIVATIONS, LITERT_ROUNDING, rand_data, rand_filter, rand_q
from .harness import Case, check_cases
from tests.interpreter.singleop import Op, T

DTYPES = [np.uint8, np.int8, np.int16]


def _case(rng, dtype, per_channel: bool, bias_kind: str) -> Case:
    accum = int(rng.integers(1, 40))
    units = int(rng.integers(1, 12))
    rank = int(rng.integers(2, 5))
    lead = [int(rng.integers(1, 4)) for _ in range(rank - 1)]
    in_shape = tuple(lead) + (accum,)
    keep = bool(rng.integers(0, 2))
    opts = {"fused_activation_function": str(rng.choice(ACTIVATIONS)), "keep_num_dims": keep}
    iq = rand_q(rng, dtype)
    if per_channel:
        fs = np.float32(rng.uniform(0.002, 0.02, size=units))
        fzp = 0
    else:
        fs = float(np.float32(rng.uniform(0.002, 0.02)))
        fzp = int(rng.integers(0, 256)) if dtype == np.uint8 else (
            int(rng.integers(-20, 20)) if dtype == np.int8 and rng.random() < 0.3 else 0)
    typical = iq[0] * float(np.mean(fs)) * 100 * np.sqrt(accum)
    oq = rand_q(rng, dtype, typical / 8, typical * 2)
    x = rand_data(rng, in_shape, dtype)
    f = rand_filter(rng, (units, accum), dtype)
    if bias_kind == "none":
        bias = None
    elif bias_kind == "int64":
        bias = rng.integers(-(1 << 22), 1 << 22, size=units).astype(np.int64)
    else:
        bias = rng.integers(-(1 << 14), 1 << 14, size=units).astype(np.int32)
    inputs = [T(in_shape, dtype, *iq), T.const(f, fs, fzp)]
    inputs.append(None if bias is None else T.const(bias, iq[0] * np.asarray(fs, np.float64), 0))
    if dtype == np.int16:
        version = 11 if bias_kind == "int64" else 7
        if bias_kind == "int64":
            opts["quantized_bias_type"] = "INT64"
        elif bias_kind == "int32":
            opts["quantized_bias_type"] = "INT32"
    else:
        version = 12 if per_channel else (4 if dtype == np.int8 else 1)
    out_shape = fc.output_shape(in_shape, units, accum, keep)
    op = Op("FULLY_CONNECTED", inputs, [T(out_shape, dtype, *oq)], "FullyConnectedOptions",
            opts, version)
    kopts = {k: v for k, v in opts.items() if k != "quantized_bias_type"}
    label = f"FC {np.dtype(dtype).name} pc={per_channel} bias={bias_kind} {kopts} x{in_shape} f{f.shape}"
    return Case(op, [x], partial(fc.fully_connected, x, f, bias, iq, (fs, fzp), oq, kopts,
                                 LITERT_ROUNDING), label)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_fully_connected(dtype):
    rng = np.random.default_rng(100 + DTYPES.index(dtype))
    cases = []
    for i in range(300):
        per_channel = dtype != np.uint8 and bool(i % 2)
        if dtype == np.int16:
            bias_kind = ["int64", "int32", "none"][i % 3]
        else:
            bias_kind = "int32" if i % 5 else "none"
        cases.append(_case(rng, dtype, per_channel, bias_kind))
    assert check_cases(cases, compare_builtin=True) == 300


@pytest.mark.parametrize("small_product", [0, 1 << 30], ids=["float32 sums", "float64 sums"])
def test_float_scale_tail_matches_int64_path(monkeypatch, small_product):
    """The precomputed float path (raw-input float sums, offsets folded into a float64
    bias) against the int64 accumulator path, on random cases of every dtype and bias:
    every product summed in float32 chunks, and every one as a small product (one float64
    product with the bias row, on laid-out scratch buffers)."""
    monkeypatch.setattr(fc, "SMALL_PRODUCT", small_product)
    rng = np.random.default_rng(77)
    calls = [_case(rng, dtype, per_channel=dtype != np.uint8 and bool(i % 2),
                   bias_kind=("none", "int32", "int64")[i % 3] if dtype == np.int16 else
                   ("none", "int32")[i % 2]).ours
             for i in range(120) for dtype in DTYPES]
    fast = [c() for c in calls]
    monkeypatch.setattr(fc.FloatScaleTail, "build", classmethod(lambda cls, *a, **k: None))
    for c, want in zip(calls, fast):
        got = c()
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
