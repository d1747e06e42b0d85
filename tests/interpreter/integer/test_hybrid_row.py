"""`HybridDense.row`, the one-row hybrid product a recurrent step calls, against the
batched path of `HybridDense.__call__` (which tests/interpreter/integer/test_hybrid.py
checks against LiteRT's reference kernels): bit for bit, row by row.

A row given alone takes `row`; the same row stacked with another takes the vectorized
quantizer and the integer product.  The rows cover the cases where a shortcut would
show: all values of one sign (the zero point at an end of the int8 range), values that
scale onto rounding halves, a single nonzero value, tiny and huge magnitudes, rows whose
product is an exact zero (where -0.0 and +0.0 differ in their bits) and widths that are
not a multiple of 8 (the quantizer's rounding differs past the last multiple).
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.integer.common import QParams
from tflite_viewer.interpreter.integer.hybrid import HybridDense


def _rows(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    normal = rng.standard_normal(n).astype(np.float32)
    halves = (rng.integers(-40, 40, n) + 0.5).astype(np.float32) / np.float32(3)
    single = np.zeros(n, np.float32)
    single[rng.integers(0, n)] = np.float32(-2.5)
    tiny = (rng.standard_normal(n) * 1e-30).astype(np.float32)
    gap = np.full(n, np.float32(1e30))  # ends 60 decades apart: the span is inexact
    gap[0] = np.float32(-1e-30)
    huge = np.full(n, np.float32(3e38))  # the float32 span overflows to inf
    huge[-1] = np.float32(-3e38)
    return [normal, np.abs(normal), -np.abs(normal), halves, single, tiny, normal * 1e20,
            np.full(n, np.float32(-1e-3)), gap, huge]


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("accum", [1, 5, 8, 16, 23])
def test_row_equals_the_batched_path(asymmetric, per_channel, bias, accum):
    rng = np.random.default_rng(accum * 8 + asymmetric * 4 + per_channel * 2 + bias)
    units = 6
    w = rng.integers(-127, 128, (units, accum)).astype(np.int8)
    w[0] = 0  # a unit whose product is zero for every row
    scales = (rng.random(units if per_channel else 1) * 0.02 + 1e-3).astype(np.float32)
    q = QParams(scales, np.zeros(scales.size, np.int64), 0)
    b = rng.standard_normal(units).astype(np.float32) if bias else None
    dense = HybridDense(w, b, q, {"fused_activation_function": "NONE",
                                  "asymmetric_quantize_inputs": asymmetric})
    other = rng.standard_normal(accum).astype(np.float32)
    checked = 0
    for row in _rows(rng, accum):
        with np.errstate(all="ignore"):  # as the interpreter runs kernels (inf spans)
            got = dense.row(row.reshape(1, -1))
            if got is None:
                continue
            want = dense(np.stack([row, other]), (2, units))[:1]
        assert got.dtype == np.float32 and got.shape == (1, units)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
        checked += 1
    assert checked >= 6


def test_row_declines_what_it_does_not_compute():
    """All-zero and non-finite rows, more than one row and a fused activation go to the
    general path, which handles them as LiteRT does."""
    w = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    q = QParams(np.array([0.01], np.float32), np.zeros(1, np.int64), 0)
    plain = HybridDense(w, None, q, {"fused_activation_function": "NONE"})
    relu = HybridDense(w, None, q, {"fused_activation_function": "RELU"})
    x = np.array([[0.5, -1.0, 2.0, 0.25]], np.float32)
    assert plain.row(x) is not None
    assert plain.row(np.zeros((1, 4), np.float32)) is None
    assert plain.row(np.array([[1.0, np.nan, 0.0, 1.0]], np.float32)) is None
    assert plain.row(np.array([[1.0, np.inf, 0.0, 1.0]], np.float32)) is None
    assert plain.row(np.vstack([x, x])) is None
    assert relu.row(x) is None
