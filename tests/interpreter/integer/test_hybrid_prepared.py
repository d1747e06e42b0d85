"""The one-row asymmetric quantizer and the prepared hybrid product (integer/hybrid.py).

Truth: the many-row path of `asymmetric_quantize` (checked against LiteRT in
test_hybrid.py): a row quantized alone must give what it gives as one row of a batch, bit
for bit, including the rows that take the edge branches (zeros, one sign, clamped zero
points, lengths that are not a multiple of 8).
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.integer import hybrid


def _rows() -> list[np.ndarray]:
    rng = np.random.default_rng(17)
    rows = [rng.standard_normal(n).astype(np.float32) * s
            for n in (1, 7, 8, 13, 64, 100) for s in (1e-6, 0.3, 1.0, 50.0, 3e4)]
    rows += [np.abs(r) for r in rows[:10]] + [-np.abs(r) for r in rows[10:20]]
    rows += [np.zeros(9, np.float32), np.full(5, 2.5, np.float32), np.full(16, -1e-30, np.float32),
             np.array([0.0, 1e-38, -1e-38], np.float32), np.array([127.5, -128.5], np.float32)]
    return rows


@pytest.mark.parametrize("k", range(len(_rows())))
def test_one_row_equals_the_batched_quantizer(k):
    row = _rows()[k][None, :]
    batch = np.concatenate([row, np.ones_like(row)])  # two rows: the vector path
    with np.errstate(all="ignore"):  # the subnormal row overflows 1/scale, in both paths
        q, sf, zp = hybrid.asymmetric_quantize(row)
        bq, bsf, bzp = hybrid.asymmetric_quantize(batch)
    assert q.dtype == bq.dtype == np.int8 and np.array_equal(q[0], bq[0])
    assert sf.dtype == np.float32 and sf.tobytes() == bsf[:1].tobytes()
    assert zp.dtype == bzp.dtype and zp[0] == bzp[0]


def test_rows_with_inf_or_nan_take_the_batched_path():
    row = np.array([[1.0, np.inf, -2.0]], np.float32)
    with np.errstate(all="ignore"):
        q, sf, zp = hybrid.asymmetric_quantize(row)
        bq, bsf, bzp = hybrid.asymmetric_quantize(np.concatenate([row, row]))
    assert np.array_equal(q[0], bq[0]) and sf.tobytes() == bsf[:1].tobytes() and zp[0] == bzp[0]


@pytest.mark.parametrize("asym", [False, True])
@pytest.mark.parametrize("per_channel", [False, True])
def test_prepared_dense_equals_the_product_computed_from_scratch(asym, per_channel):
    """HybridDense against the definition in the module docstring, in exact arithmetic:
    bias + (sum q*w - zp * rowsum(w)) * batch scale * filter scale."""
    rng = np.random.default_rng(3)
    w = rng.integers(-127, 128, (6, 10)).astype(np.int8)
    bias = rng.standard_normal(6).astype(np.float32)
    scales = (rng.random(6) * 0.1 + 0.01).astype(np.float32) if per_channel \
        else np.array([0.05], np.float32)
    dense = hybrid.HybridDense(w, bias, (scales, np.zeros(scales.size, np.int64)),
                               {"asymmetric_quantize_inputs": asym})
    x = rng.standard_normal((3, 10)).astype(np.float32)
    got = dense(x, (3, 6))
    if asym:
        q, sf, zp = hybrid.asymmetric_quantize(x)
    else:
        (q, sf), zp = hybrid.symmetric_quantize(x), np.zeros(3, np.int32)
    acc = q.astype(np.int64) @ w.astype(np.int64).T - zp[:, None] * w.astype(np.int64).sum(1)
    s = (sf[:, None] * scales[None, :]).astype(np.float32)
    want = (bias[None, :] + acc.astype(np.float32) * s).astype(np.float32)
    assert np.array_equal(got, want)
