"""Bytes of a tensor as each runtime counts them.

TFLite Micro (memory_helpers.cc, ``TfLiteTypeSizeOf``): one byte per INT4 element (it
unpacks), and it refuses types it has no size for (STRING, VARIANT, INT2, UINT4, FLOAT8).
LiteRT (``GetSizeOfType`` in util.cc): INT4 and INT2 are packed two or four to a byte,
strings and variants live outside the arena (dynamic).
"""
from __future__ import annotations

from ..schema.schema_generated import TensorType as TT

# TFLite Micro: TfLiteTypeSizeOf
TFLM_TYPE_SIZE: dict[int, int] = {
    TT.FLOAT16: 2, TT.BFLOAT16: 2, TT.FLOAT32: 4, TT.FLOAT64: 8, TT.INT16: 2, TT.INT32: 4,
    TT.UINT32: 4, TT.UINT8: 1, TT.UINT16: 2, TT.INT8: 1, TT.INT64: 8, TT.UINT64: 8,
    TT.BOOL: 1, TT.RESOURCE: 4, TT.COMPLEX64: 8, TT.COMPLEX128: 16, TT.INT4: 1,
}

# LiteRT: GetSizeOfType (sub-byte types handled in `litert_bytes`)
LITERT_TYPE_SIZE: dict[int, int] = {**TFLM_TYPE_SIZE, TT.FLOAT8_E4M3FN: 1, TT.FLOAT8_E5M2: 1}
LITERT_PACKED: dict[int, int] = {TT.INT4: 2, TT.UINT4: 2, TT.INT2: 4}  # elements per byte
LITERT_DYNAMIC_TYPES = frozenset({TT.STRING, TT.VARIANT})


def element_count(shape: tuple[int, ...]) -> int:
    """Product of the dimensions as C's int arithmetic sees them (a scalar has one)."""
    n = 1
    for d in shape:
        n *= d
    return n


def tflm_bytes(ttype: int, shape: tuple[int, ...]) -> int | None:
    """``TfLiteEvalTensorByteLength``; None for a type TFLM cannot hold."""
    size = TFLM_TYPE_SIZE.get(ttype)
    if size is None:
        return None
    return element_count(shape) * size


def litert_bytes(ttype: int, shape: tuple[int, ...]) -> int | None:
    """``TfLiteTensor.bytes`` as LiteRT computes it; None for types held outside the arena."""
    if ttype in LITERT_DYNAMIC_TYPES:
        return None
    n = element_count(shape)
    per = LITERT_PACKED.get(ttype)
    if per is not None:
        return (n + per - 1) // per
    size = LITERT_TYPE_SIZE.get(ttype)
    return None if size is None else n * size


def align_up(size: int, alignment: int) -> int:
    return (size + alignment - 1) // alignment * alignment
