"""TRANSPOSE_CONV: uint8 per-tensor, int8 per-channel / per-tensor, int16x8 with int64 / int32
bias, bit-exact against LiteRT's reference kernels."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.integer import transpose_conv as tc

from .gen import ACTIVATIONS, LITERT_ROUNDING, rand_data, rand_filter, rand_q
from .harness import Case, check_cases
from tests.interpreter.singleop import Op, T

DTYPES = [np.uint8, np.int8, np.int16]
IDS = lambda d: np.dtype(d).name  # noqa: E731


def _case(rng, dtype, per_channel: bool, bias_kind: str) -> Case:
    b = int(rng.integers(1, 3))
    h, w = int(rng.integers(1, 7)), int(rng.integers(1, 7))
    kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    cin, cout = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    padding = str(rng.choice(["SAME", "VALID"]))
    if padding == "SAME":
        oh = int(rng.integers((h - 1) * sh + 1, h * sh + 1))
        ow = int(rng.integers((w - 1) * sw + 1, w * sw + 1))
    else:
        oh = (h - 1) * sh + kh + int(rng.integers(0, sh))
        ow = (w - 1) * sw + kw + int(rng.integers(0, sw))
    opts = {"padding": padding, "stride_h": sh, "stride_w": sw,
            "fused_activation_function": str(rng.choice(ACTIVATIONS))}
    iq = rand_q(rng, dtype)
    if dtype == np.uint8:
        fs, fzp = float(np.float32(rng.uniform(0.002, 0.02))), int(rng.integers(0, 256))
    else:
        fs = np.float32(rng.uniform(0.002, 0.02, size=cout if per_channel else 1))
        fzp = 0
    k = cin * kh * kw / (sh * sw)
    typical = iq[0] * float(np.mean(fs)) * 100 * np.sqrt(max(k, 1))
    oq = rand_q(rng, dtype, typical / 8, typical * 2)
    x = rand_data(rng, (b, h, w, cin), dtype)
    f = rand_filter(rng, (cout, kh, kw, cin), dtype)
    if bias_kind == "none":
        bias = None
    elif bias_kind == "int64":
        bias = rng.integers(-(1 << 20), 1 << 20, size=cout).astype(np.int64)
    else:
        bias = rng.integers(-(1 << 14), 1 << 14, size=cout).astype(np.int32)
    out_shape = np.array([b, oh, ow, cout], np.int32)
    inputs = [T.const(out_shape), T.const(f, fs, fzp), T((b, h, w, cin), dtype, *iq)]
    if bias is not None:
        inputs.append(T.const(bias, iq[0] * np.asarray(fs, np.float64), 0))
    version = 4
    if dtype == np.int16 and bias_kind == "int32":
        opts["quantized_bias_type"] = "INT32"
        version = 5
    op = Op("TRANSPOSE_CONV", inputs, [T(tuple(out_shape), dtype, *oq)], "TransposeConvOptions",
            opts, version)
    label = (f"TRANSPOSE_CONV {IDS(dtype)} pc={per_channel} bias={bias_kind} {opts} "
             f"x{x.shape} f{f.shape} out{tuple(out_shape)}")
    return Case(op, [x], lambda: tc.transpose_conv(x, f, out_shape, bias, iq, (fs, fzp), oq, opts,
                                                   LITERT_ROUNDING), label)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_transpose_conv(dtype):
    rng = np.random.default_rng(300 + DTYPES.index(dtype))
    cases = []
    for i in range(200):
        per_channel = dtype != np.uint8 and bool(i % 2)
        if dtype == np.int16:
            bias_kind = ["int64", "int32", "none"][i % 3]
        else:
            bias_kind = "int32" if i % 5 else "none"
        cases.append(_case(rng, dtype, per_channel, bias_kind))
    assert check_cases(cases, compare_builtin=True) == len(cases)
