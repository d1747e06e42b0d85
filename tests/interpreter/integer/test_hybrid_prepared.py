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


def _dense_without_copies(w: np.ndarray) -> hybrid.HybridDense:
    from tflite_viewer.interpreter.integer.common import QParams
    q = QParams(np.float32([0.01]), np.zeros(1, np.int64), 0)
    return hybrid.HybridDense(w, None, q, {"fused_activation_function": "NONE"},
                              keep_copies=False)


@pytest.mark.parametrize("rows_kind", ["typical", "extreme", "one_hot", "zeros"])
def test_rows_products_are_the_exact_integer_products(rows_kind):
    """The product of filter rows read from the file sums float32 products over slices of
    K chosen from the row's own values (one slice for a typical decode row); it must equal
    the int64 product whatever the rows, including the worst case of every |q| = 255 by
    weights of -128."""
    rng = np.random.default_rng(21)
    units, accum = 70, 5632
    w = rng.integers(-128, 128, (units, accum)).astype(np.int8)
    if rows_kind == "typical":  # a symmetric quantized activation row: |q| about 25
        q = np.clip(np.round(rng.standard_normal((2, accum)) * 31), -127, 127)
    elif rows_kind == "extreme":
        q = np.full((2, accum), 255)
        q[1, ::2] = -255
        w[:, :] = -128
    elif rows_kind == "one_hot":
        q = np.zeros((1, accum))
        q[0, 4000] = 255
    else:
        q = np.zeros((1, accum))
    q = q.astype(np.int32)
    got = _dense_without_copies(w)._dot_by_rows(q)
    want = q.astype(np.int64) @ w.T.astype(np.int64)
    assert got.dtype == np.int64 and np.array_equal(got, want)


def test_exact_slices_cover_k_in_order_within_the_limit():
    rng = np.random.default_rng(22)
    limit = hybrid.HybridDense.Q_SUM_EXACT
    assert limit * 128 < 2 ** 24 <= (limit + 1) * 128  # the bound, to the unit
    for q_abs in (rng.integers(0, 256, 5000), np.full(3000, 255), np.zeros(10, np.int64),
                  rng.integers(0, 40, 5632)):
        slices = hybrid.exact_slices(q_abs, limit)
        assert slices[0][0] == 0 and slices[-1][1] == q_abs.size
        assert all(a[1] == b[0] for a, b in zip(slices, slices[1:]))
        assert all(int(q_abs[s:e].sum()) <= limit for s, e in slices)
        # each slice as long as it can be: one more column would pass the limit
        assert all(int(q_abs[s:e + 1].sum()) > limit for s, e in slices[:-1])
    assert len(hybrid.exact_slices(rng.integers(0, 40, 2048), limit)) == 1
