"""BATCH_MATMUL: int8 (int8 and int32 outputs), int16, bit-exact against LiteRT's reference
kernel; hybrid float LHS x constant int8 RHS (float outputs, also bit-exact)."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.integer import batch_matmul as bmm

from .gen import LITERT_ROUNDING, rand_data, rand_q
from .harness import Case, check_cases
from tests.interpreter.singleop import Op, T, batch_model, run_batch_litert

IDS = lambda d: np.dtype(d).name  # noqa: E731


def _shapes(rng):
    m, k, n = (int(rng.integers(1, 9)) for _ in range(3))
    rank_a, rank_b = int(rng.integers(2, 5)), int(rng.integers(2, 5))
    batch = [int(rng.integers(1, 4)) for _ in range(max(rank_a, rank_b) - 2)]
    ba = [d if rng.random() < 0.7 else 1 for d in batch[len(batch) - (rank_a - 2):]]
    bb = [d if rng.random() < 0.7 else 1 for d in batch[len(batch) - (rank_b - 2):]]
    adj_x, adj_y = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
    a = tuple(ba) + ((k, m) if adj_x else (m, k))
    b = tuple(bb) + ((n, k) if adj_y else (k, n))
    return a, b, {"adj_x": adj_x, "adj_y": adj_y}, k


def _case(rng, dtype, out_dtype, const_rhs: bool) -> Case:
    a_shape, b_shape, opts, k = _shapes(rng)
    aq = rand_q(rng, dtype, 0.01, 0.1)
    bq = rand_q(rng, dtype, 0.01, 0.1)
    typical = aq[0] * bq[0] * (100 if dtype == np.int8 else 20000) * np.sqrt(k)
    oq = rand_q(rng, dtype, typical / 8, typical * 2) if out_dtype != np.int32 else (None, None)
    a = rand_data(rng, a_shape, dtype)
    b = rand_data(rng, b_shape, dtype)
    out_shape = bmm.output_shape(a_shape, b_shape, opts)
    rhs = T.const(b, *bq) if const_rhs else T(b_shape, dtype, *bq)
    inputs = [a] if const_rhs else [a, b]
    version = 3 if dtype == np.int16 else 2
    op = Op("BATCH_MATMUL", [T(a_shape, dtype, *aq), rhs], [T(out_shape, out_dtype, *oq)],
            "BatchMatMulOptions", opts, version)
    label = f"BATCH_MATMUL {IDS(dtype)}->{IDS(out_dtype)} {opts} a{a_shape} b{b_shape}"
    return Case(op, inputs, lambda: bmm.batch_matmul(a, b, aq, bq, oq if oq[0] else (1.0, 0),
                                                     opts, LITERT_ROUNDING, out_dtype), label)


@pytest.mark.parametrize("dtype", [np.int8, np.int16], ids=IDS)
def test_batch_matmul(dtype):
    rng = np.random.default_rng(400 + (dtype == np.int16))
    cases = [_case(rng, dtype, dtype, const_rhs=bool(i % 3 == 0)) for i in range(200)]
    assert check_cases(cases, compare_builtin=True) == len(cases)


def test_batch_matmul_int8_to_int32():
    rng = np.random.default_rng(402)
    cases = [_case(rng, np.int8, np.int32, const_rhs=bool(i % 2)) for i in range(60)]
    assert check_cases(cases) == len(cases)


@pytest.mark.parametrize("asymmetric", [False, True])
def test_hybrid_batch_matmul(asymmetric):
    rng = np.random.default_rng(410 + asymmetric)
    ops, inputs, ours = [], [], []
    for i in range(200):
        a_shape, b_shape, opts, k = _shapes(rng)
        opts["asymmetric_quantize_inputs"] = asymmetric
        n = b_shape[-2] if opts["adj_y"] else b_shape[-1]
        per_channel = bool(i % 2) and not opts["adj_y"]
        fs = np.float32(rng.uniform(0.002, 0.02, size=n if per_channel else 1))
        b = rng.integers(-127, 128, size=b_shape).astype(np.int8)
        a = rng.normal(0, 2, size=a_shape).astype(np.float32)
        if rng.random() < 0.2:
            a = np.abs(a)
        out_shape = bmm.output_shape(a_shape, b_shape, opts)
        ops.append(Op("BATCH_MATMUL", [T(a_shape, np.float32), T.const(
            b, fs, 0, quantized_dimension=len(b_shape) - 1)], [T(out_shape, np.float32)],
            "BatchMatMulOptions", opts, 4))
        inputs.append([a])
        ours.append(bmm.hybrid_batch_matmul(a, b, (fs, np.zeros(fs.size, np.int64),
                                                   len(b_shape) - 1), opts))
    ref = run_batch_litert(batch_model(ops), inputs)
    for o, (r,), op in zip(ours, ref, ops):
        assert o.shape == r.shape and o.dtype == r.dtype
        np.testing.assert_array_equal(o, r, err_msg=str(op.options))
