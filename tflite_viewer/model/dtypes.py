"""TFLite tensor types and their numpy storage, including the types numpy lacks.

Sub-byte integers (INT4/UINT4/INT2) are packed little-end-first in the file and unpacked
to int8/uint8.  BFLOAT16 and the FLOAT8 formats are kept as raw unsigned integers
(zero-copy) and decoded to float32 on request, so no extra dependency is needed.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..schema.schema_layout import LAYOUT

_TYPE_NAMES: dict[int, str] = LAYOUT["enums"]["tflite.TensorType"]["values"]


@dataclass(frozen=True)
class TypeInfo:
    """How one TensorType is stored in a buffer and shown to the user."""

    code: int
    name: str
    storage: np.dtype | None  # dtype of the bytes in the buffer (None: no numpy view)
    bits: int  # bits per element in the file (4 for INT4, 0 when not applicable)
    values: np.dtype | None  # dtype of `Tensor.data()` (after unpacking / decoding)

def _info(code: int, storage, bits: int, values=None) -> TypeInfo:
    st = np.dtype(storage) if storage is not None else None
    return TypeInfo(code, _TYPE_NAMES.get(code, str(code)), st, bits,
                    np.dtype(values) if values is not None else st)


TYPES: dict[int, TypeInfo] = {
    0: _info(0, "<f4", 32),
    1: _info(1, "<f2", 16),
    2: _info(2, "<i4", 32),
    3: _info(3, "u1", 8),
    4: _info(4, "<i8", 64),
    5: _info(5, None, 0, object),
    6: _info(6, "?", 8),
    7: _info(7, "<i2", 16),
    8: _info(8, "<c8", 64),
    9: _info(9, "i1", 8),
    10: _info(10, "<f8", 64),
    11: _info(11, "<c16", 128),
    12: _info(12, "<u8", 64),
    13: _info(13, None, 0),  # RESOURCE: a handle, no data in the file
    14: _info(14, None, 0),  # VARIANT
    15: _info(15, "<u4", 32),
    16: _info(16, "<u2", 16),
    17: _info(17, "u1", 4, "i1"),
    18: _info(18, "<u2", 16),  # BFLOAT16 raw bits
    19: _info(19, "u1", 2, "i1"),
    20: _info(20, "u1", 4, "u1"),
    21: _info(21, "u1", 8),  # FLOAT8_E4M3FN raw bits
    22: _info(22, "u1", 8),  # FLOAT8_E5M2 raw bits
}


def type_info(code: int) -> TypeInfo:
    """The TypeInfo of a TensorType code; unknown (newer) codes get one with no storage."""
    return TYPES.get(code) or TypeInfo(code, str(code), None, 0, None)


def type_name(code: int) -> str:
    return type_info(code).name


def numpy_dtype(code: int) -> np.dtype | None:
    """The dtype of the values a user sees for this TensorType (None: not representable)."""
    return type_info(code).values


def byte_values(bits: int, signed: bool) -> np.ndarray:
    """The values each byte holds, [256, 8 // bits], lowest bits first (int8 or uint8):
    unpacking is then one table lookup per byte."""
    table = _BYTE_VALUES.get((bits, signed))
    if table is None:
        per_byte = 8 // bits
        shifts = np.arange(per_byte, dtype=np.uint8) * bits
        vals = (np.arange(256, dtype=np.uint8)[:, None] >> shifts) & ((1 << bits) - 1)
        if signed:
            vals = np.where(vals >= 1 << (bits - 1), vals.astype(np.int16) - (1 << bits), vals)
        table = _BYTE_VALUES[(bits, signed)] = vals.astype(np.int8 if signed else np.uint8)
        table.flags.writeable = False
    return table


_BYTE_VALUES: dict[tuple[int, bool], np.ndarray] = {}


def unpack_subbyte(packed: np.ndarray, bits: int, count: int, signed: bool) -> np.ndarray:
    """Unpack 4- or 2-bit integers, lowest bits first (LiteRT's packing order)."""
    table = byte_values(bits, signed)
    # each byte's values as one wider integer: a one-dimensional gather, then the bytes
    wide = table.view(np.int16 if bits == 4 else np.int32).reshape(-1)
    out = np.take(wide, np.asarray(packed, np.uint8).reshape(-1))
    return out.view(table.dtype)[:count]


def bfloat16_to_float32(raw: np.ndarray) -> np.ndarray:
    return (np.asarray(raw).astype(np.uint32) << 16).view(np.float32)


def float32_to_bfloat16(values: np.ndarray) -> np.ndarray:
    """BFLOAT16 raw bits of float32 ``values``, rounded to nearest even as Eigen's
    bfloat16 constructor does (a NaN becomes the quiet NaN 0x7FC0, its sign kept)."""
    f = np.asarray(values, np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.where(np.signbit(f), np.uint16(0xFFC0), np.uint16(0x7FC0))
    return np.where(np.isnan(f), nan, rounded).astype(np.uint16)


def _float8_table(exp_bits: int, man_bits: int, fn: bool) -> np.ndarray:
    """All 256 values of an 8-bit float format (OCP FP8: E4M3FN has no infinities)."""
    bias = (1 << (exp_bits - 1)) - 1
    table = np.empty(256, dtype=np.float32)
    for byte in range(256):
        sign = -1.0 if byte & 0x80 else 1.0
        exp = (byte >> man_bits) & ((1 << exp_bits) - 1)
        man = byte & ((1 << man_bits) - 1)
        if fn and exp == (1 << exp_bits) - 1 and man == (1 << man_bits) - 1:
            value = np.nan
        elif not fn and exp == (1 << exp_bits) - 1:
            value = np.inf if man == 0 else np.nan
        elif exp == 0:
            value = man / (1 << man_bits) * 2.0 ** (1 - bias)
        else:
            value = (1 + man / (1 << man_bits)) * 2.0 ** (exp - bias)
        table[byte] = sign * value
    return table


_FLOAT8 = {21: _float8_table(4, 3, True), 22: _float8_table(5, 2, False)}


def decode_to_float(code: int, raw: np.ndarray) -> np.ndarray:
    """Real values of a BFLOAT16/FLOAT8 array kept as raw bits."""
    if code == 18:
        return bfloat16_to_float32(raw)
    if code in _FLOAT8:
        return _FLOAT8[code][raw]
    raise ValueError(f"type {type_name(code)} is not a raw-bits float type")


def is_raw_float(code: int) -> bool:
    return code == 18 or code in _FLOAT8
