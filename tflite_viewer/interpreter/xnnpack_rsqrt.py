"""VRSQRT14PS, the AVX-512 reciprocal square root estimate XNNPACK's RSQRT starts from.

The instruction's result is fixed by the architecture (Intel's SDM gives its 2**-14 bound
and points to a bit-exact reference), not by the CPU's rounding: the argument is scaled by
a power of 4 into [1, 4), that range cut into 64 segments (32 over [1, 2), 32 over
[2, 4)), and within a segment the estimate is a straight line through the segment's
middle, ``c - d * (x - middle)``, on the argument's top 15 fraction bits, truncated to 17
significant bits.

The 64 ``(c, d)`` pairs below (``c`` in units of 2**-19, ``d`` of 2**-11 over [1, 2) and
2**-12 over [2, 4)) were measured, not copied: the instruction was run on every float32 of
[1, 4) (2**24 values) on the AMD EPYC (Zen 4) this project is tested on, and for each
segment the one integer pair whose line gives every one of its results was found by
search; `rsqrt14` then reproduces all 2**24 results (and, through XNNPACK's RSQRT, the
wheel's outputs: tests/interpreter/test_xnnpack_kernels_litert.py).
"""
from __future__ import annotations

import numpy as np

#: (c, d) per segment: [1, 2) in steps of 1/32, then [2, 4) in steps of 1/16
SEGMENTS = np.array([
    (520261, 1001), (512437, 955), (504953, 915), (497790, 877), (490922, 841),
    (484331, 807), (478001, 775), (471909, 747), (466046, 719), (460397, 693),
    (454947, 669), (449688, 647), (444606, 625), (439694, 603), (434939, 585),
    (430335, 567), (425875, 549), (421551, 533), (417355, 517), (413284, 501),
    (409329, 487), (405487, 473), (401748, 461), (398111, 449), (394571, 437),
    (391127, 425), (387770, 415), (384498, 403), (381307, 393), (378194, 385),
    (375155, 375), (372190, 367),
    (367881, 707), (362349, 675), (357056, 647), (351992, 619), (347136, 595),
    (342475, 571), (337997, 549), (333693, 527), (329545, 509), (325551, 491),
    (321697, 473), (317977, 457), (314385, 441), (310910, 427), (307549, 413),
    (304295, 401), (301139, 389), (298079, 377), (295115, 365), (292237, 355),
    (289439, 345), (286722, 335), (284080, 325), (281508, 317), (279006, 309),
    (276569, 301), (274195, 293), (271882, 285), (269625, 279), (267425, 271),
    (265276, 265), (263178, 259)], dtype=np.float64)

_ONE = 0x3F800000
_KEEP_17_BITS = np.uint64(0xFFFFFFF000000000)  # a float64 with 16 fraction bits left


def _estimate_1_4(bits: np.ndarray) -> np.ndarray:
    """The estimate for float32 bit patterns whose value lies in [1, 4), as float64."""
    upper = (bits >> 23) == 128  # [2, 4)
    m = bits.view(np.float32).astype(np.float64)
    seg = np.where(upper, 32 + np.floor((m - 2) * 16), np.floor((m - 1) * 32)).astype(np.int64)
    middle = np.where(upper, 2 + 1 / 32 + (seg - 32) / 16, 1 + 1 / 64 + seg / 32)
    slope_unit = np.where(upper, 128.0, 256.0)
    cut = (bits & np.uint32(0xFFFFFF00)).view(np.float32).astype(np.float64)
    line = SEGMENTS[seg, 0] - slope_unit * SEGMENTS[seg, 1] * (cut - middle)
    line = (line.view(np.uint64) & _KEEP_17_BITS).view(np.float64) * 2.0 ** -19
    return np.where(bits == _ONE, 1.0, line)


def rsqrt14(x: np.ndarray) -> np.ndarray:
    """VRSQRT14PS of float32 ``x`` with MXCSR's DAZ set (XNNPACK's mode: a subnormal input
    is a zero): +-inf for +-0, +0 for +inf, NaN for negatives and NaN, else the segment
    estimate of the argument scaled into [1, 4), scaled back."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    bits = x.view(np.uint32).astype(np.int64)
    out = np.full(x.shape, np.nan, np.float32)
    magnitude = bits & 0x7FFFFFFF
    zero = magnitude < 0x00800000
    out[zero] = np.where(bits[zero] >> 31 == 1, -np.inf, np.inf)
    out[bits == 0x7F800000] = 0.0
    normal = ~zero & (bits >= 0x00800000) & (bits < 0x7F800000)
    if normal.any():
        e = (bits[normal] >> 23) - 127
        scaled = ((bits[normal] & 0x7FFFFF) | ((127 + (e & 1)) << 23)).astype(np.uint32)
        out[normal] = np.ldexp(_estimate_1_4(scaled), -(e >> 1)).astype(np.float32)
    return out


__all__ = ["SEGMENTS", "rsqrt14"]
