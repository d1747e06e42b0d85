"""CONV_3D and CONV_3D_TRANSPOSE against LiteRT on random single-op models."""
from __future__ import annotations

import numpy as np
import pytest

from .singleop import Input, assert_matches_litert, single_op_model

F32, I32 = np.float32, np.int32
ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def _opts(rng, padding):
    o = {"padding": padding, "fused_activation_function": str(rng.choice(ACTS))}
    for a in "dhw":
        o[f"stride_{a}"] = int(rng.integers(1, 3))
        o[f"dilation_{a}_factor"] = int(rng.integers(1, 3))
    return o


@pytest.mark.parametrize("seed", range(16))
def test_conv3d_random(seed):
    rng = np.random.default_rng(seed)
    padding = ["SAME", "VALID"][seed % 2]
    opts = _opts(rng, padding)
    k = rng.integers(1, 4, 3)
    size = rng.integers(4, 8, 3)
    ci, co = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    x = rng.standard_normal((int(rng.integers(1, 3)),) + tuple(size) + (ci,)).astype(F32)
    w = rng.standard_normal(tuple(k) + (ci, co)).astype(F32)
    bias = rng.standard_normal(co).astype(F32) if seed % 3 else None
    model = single_op_model("CONV_3D", [Input(x.shape), w, bias], [F32], "Conv3DOptions", opts)
    assert_matches_litert(model, [x])


@pytest.mark.parametrize("seed", range(16))
def test_conv3d_transpose_random(seed):
    rng = np.random.default_rng(100 + seed)
    padding = ["SAME", "VALID"][seed % 2]
    opts = _opts(rng, padding)
    k = rng.integers(1, 4, 3)
    ci, co = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    in_size = rng.integers(2, 5, 3)
    s = [opts[f"stride_{a}"] for a in "dhw"]
    dl = [opts[f"dilation_{a}_factor"] for a in "dhw"]
    if padding == "SAME":
        out = [in_size[i] * s[i] for i in range(3)]
    else:
        out = [(in_size[i] - 1) * s[i] + (k[i] - 1) * dl[i] + 1 for i in range(3)]
    x = rng.standard_normal((1,) + tuple(in_size) + (ci,)).astype(F32)
    w = rng.standard_normal(tuple(k) + (co, ci)).astype(F32)
    bias = rng.standard_normal(co).astype(F32) if seed % 3 else None
    shape = np.array([1] + out + [co], I32)
    model = single_op_model("CONV_3D_TRANSPOSE", [shape, w, Input(x.shape), bias], [F32],
                            "Conv3DOptions", opts)
    assert_matches_litert(model, [x])
