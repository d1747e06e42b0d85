"""Integer ranges of the quantized TFLite types, narrow ranges, and per-channel helpers.

The one table of quantization facts the rest of the project reads (the tensor inspector,
the editor's zero-point checks, the analysis).  Ranges are keyed by the schema's type names
(``"INT8"``); `integer_range` also takes a TensorType code or a numpy dtype.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..model.dtypes import type_name

#: (min, max) of every integer type a quantized tensor may have
INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "INT2": (-2, 1),
    "INT4": (-8, 7), "UINT4": (0, 15),
    "INT8": (-128, 127), "UINT8": (0, 255),
    "INT16": (-32768, 32767), "UINT16": (0, 65535),
    "INT32": (-2**31, 2**31 - 1), "UINT32": (0, 2**32 - 1),
    "INT64": (-2**63, 2**63 - 1),
}
#: the types activations and weights are quantized to (INT32/INT64 hold biases)
QUANTIZABLE_TYPES = ("INT2", "INT4", "UINT4", "INT8", "UINT8", "INT16", "UINT16")
_NUMPY_NAMES = {"int8": "INT8", "uint8": "UINT8", "int16": "INT16", "uint16": "UINT16",
                "int32": "INT32", "uint32": "UINT32", "int64": "INT64"}


def _name(kind: Any) -> str:
    if isinstance(kind, str):
        return kind.upper()
    if isinstance(kind, (int, np.integer)):
        return type_name(int(kind))
    return _NUMPY_NAMES.get(np.dtype(kind).name, np.dtype(kind).name.upper())


def integer_range(kind: Any, narrow: bool = False) -> tuple[int, int] | None:
    """(qmin, qmax) of a type name, TensorType code or numpy dtype; None for non-integers.

    ``narrow`` gives the symmetric range the TFLite spec asks of int8 (and int4/int16)
    weights: the lowest value is left out, so [-127, 127] for int8."""
    rng = INTEGER_RANGES.get(_name(kind))
    if rng is None:
        return None
    lo, hi = rng
    if narrow and lo < 0:
        lo += 1
    return lo, hi


def channel_axis(quantization, shape: tuple[int, ...]) -> int | None:
    """The axis per-channel parameters apply to (None for per-tensor parameters)."""
    if quantization is None or quantization.scale.size <= 1:
        return None
    return quantization.effective_dimension(tuple(shape))


def broadcast_params(quantization, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Scale and zero point (float64, int64) shaped to broadcast against a tensor of
    ``shape``: scalars for per-tensor parameters, one value per channel along the
    quantized dimension otherwise.  A ValueError when they do not fit the shape."""
    scale = quantization.scale.astype(np.float64)
    zp = (quantization.zero_point.astype(np.int64) if quantization.zero_point.size
          else np.zeros(scale.size, np.int64))
    if scale.size == 1:
        return scale.reshape(()), zp[:1].reshape(())
    axis = channel_axis(quantization, shape)
    if axis is None or zp.size != scale.size:
        raise ValueError(f"{scale.size} scales and {zp.size} zero points do not fit a "
                         f"tensor of shape {list(shape)}")
    bshape = [1] * len(shape)
    bshape[axis] = scale.size
    return scale.reshape(bshape), zp.reshape(bshape)


def dequantize(values: np.ndarray, quantization) -> np.ndarray:
    """(q - zero_point) * scale in float64, per tensor or per channel."""
    q = np.asarray(values)
    scale, zp = broadcast_params(quantization, q.shape)
    return (q.astype(np.float64) - zp) * scale


def quantize(values: np.ndarray, quantization, kind: Any) -> np.ndarray:
    """Real values to the integers of ``kind``: round half away from zero (TFLite's
    std::round), add the zero point, clamp to the type's range."""
    x = np.asarray(values, dtype=np.float64)
    scale, zp = broadcast_params(quantization, x.shape)
    lo, hi = integer_range(kind)
    q = np.asarray(x / scale)  # (a 0-d array, not a scalar, for the in-place steps)
    q += np.copysign(0.5, q)
    np.trunc(q, out=q)
    q += zp
    dtype = np.dtype(_name(kind).lower()) if _name(kind) in _NUMPY_NAMES.values() else np.int64
    return np.clip(q, lo, hi, out=q).astype(dtype)


def channel_values(values: np.ndarray, axis: int | None) -> np.ndarray:
    """The values as a (channels, elements) matrix along ``axis`` (one row when None)."""
    a = np.asarray(values)
    if axis is None:
        return a.reshape(1, -1)
    return np.moveaxis(a, axis, 0).reshape(a.shape[axis], -1)
