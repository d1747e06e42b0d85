"""Random inputs for the signal-library tests."""
from __future__ import annotations

import numpy as np


def full_range(rng: np.random.Generator, dtype, shape) -> np.ndarray:
    """Values over the whole range of an integer type (float: wide normal values)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(shape) * 1000).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
