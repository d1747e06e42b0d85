"""Random quantization parameters and tensors for the integer kernel tests."""
from __future__ import annotations

import numpy as np

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def rand_q(rng: np.random.Generator, dtype, lo: float = 0.005, hi: float = 0.2) -> tuple[float, int]:
    """A random (scale, zero_point) for an activation tensor of ``dtype``."""
    scale = float(np.float32(np.exp(rng.uniform(np.log(lo), np.log(hi)))))
    dtype = np.dtype(dtype)
    if dtype == np.uint8:
        zp = int(rng.integers(0, 256))
    elif dtype == np.int8:
        zp = int(rng.integers(-128, 128))
    else:
        zp = 0
    return scale, zp


def rand_data(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=np.int64).astype(dtype)


def filter_dtype(act_dtype) -> type:
    return np.uint8 if np.dtype(act_dtype) == np.uint8 else np.int8


def rand_filter(rng: np.random.Generator, shape, act_dtype) -> np.ndarray:
    if np.dtype(act_dtype) == np.uint8:
        return rng.integers(0, 256, size=shape).astype(np.uint8)
    return rng.integers(-127, 128, size=shape).astype(np.int8)


def rand_bias(rng: np.random.Generator, n: int, act_dtype, big: bool = False) -> np.ndarray:
    if np.dtype(act_dtype) == np.int16:
        return rng.integers(-(1 << 20), 1 << 20, size=n).astype(np.int64)
    return rng.integers(-(1 << 14) if not big else -(1 << 24), 1 << 14 if not big else 1 << 24,
                        size=n).astype(np.int32)

#: The rounding the ai-edge-litert 2.3.0 wheel's kernels use: measured here, every
#: requantized output matches gemmlowp's double rounding (SaturatingRoundingDoublingHighMul
#: + RoundingDivideByPOT) and single rounding differs on ties (see test_rounding.py).
LITERT_ROUNDING = "double"
