"""SEGMENT_SUM, UNSORTED_SEGMENT_SUM/PROD/MAX/MIN, MATRIX_DIAG, MATRIX_SET_DIAG,
REVERSE_SEQUENCE and EMBEDDING_LOOKUP_SPARSE against LiteRT on random single-op models."""
from __future__ import annotations

import numpy as np
import pytest

from .singleop import Input, assert_matches_litert, run_ours, single_op_model

F32, I32, I64 = np.float32, np.int32, np.int64


def _data(rng, dtype, shape):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-9, 10, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [F32, I32])
@pytest.mark.parametrize("seed", range(6))
def test_segment_sum(dtype, seed):
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(1, 8))
    ids = np.concatenate([[0], np.cumsum(rng.integers(0, 2, rows - 1))]).astype(I32)
    data = _data(rng, dtype, (rows,) + tuple(rng.integers(1, 4, seed % 3)))
    model = single_op_model("SEGMENT_SUM", [Input(data.shape, dtype), Input(ids.shape, I32)],
                            [dtype])
    assert_matches_litert(model, [data, ids], reference=False)


@pytest.mark.parametrize("kind", ["SUM", "PROD", "MAX", "MIN"])
@pytest.mark.parametrize("dtype", [F32, I32])
@pytest.mark.parametrize("seed", range(5))
def test_unsorted_segment(kind, dtype, seed):
    rng = np.random.default_rng(10 + seed)
    data = _data(rng, dtype, tuple(rng.integers(1, 5, 1 + seed % 3)))
    ids_rank = 1 + (seed % data.ndim)
    num = int(rng.integers(1, 6))
    ids = rng.integers(-1 if seed % 2 else 0, num, data.shape[:ids_rank]).astype(I32)
    model = single_op_model(f"UNSORTED_SEGMENT_{kind}", [Input(data.shape, dtype),
                                                         Input(ids.shape, I32),
                                                         np.array([num], I32)], [dtype])
    assert_matches_litert(model, [data, ids], reference=False)


def test_unsorted_segment_max_of_an_empty_segment_is_the_lowest_value():
    data = np.array([1.0, 5.0], F32)
    model = single_op_model("UNSORTED_SEGMENT_MAX", [Input((2,)), np.array([0, 0], I32),
                                                     np.array(2, I32)], [F32])
    out = run_ours(model, [data])[0]
    assert out[0] == 5.0 and out[1] == np.finfo(F32).min
    assert_matches_litert(model, [data], reference=False)


DIAG_TYPES = [F32, I64, I32, np.int16, np.int8, np.uint8]


@pytest.mark.parametrize("dtype", DIAG_TYPES)
@pytest.mark.parametrize("shape", [(4,), (2, 3), (2, 1, 5), (0, 3)])
def test_matrix_diag(dtype, shape):
    rng = np.random.default_rng(1)
    x = _data(rng, dtype, shape)
    assert_matches_litert(single_op_model("MATRIX_DIAG", [Input(shape, dtype)], [dtype]), [x],
                          reference=False)


@pytest.mark.parametrize("dtype", DIAG_TYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 5), (4, 2), (1, 0, 2)])
def test_matrix_set_diag(dtype, shape):
    rng = np.random.default_rng(2)
    x = _data(rng, dtype, shape)
    d = _data(rng, dtype, shape[:-2] + (min(shape[-2:]),))
    model = single_op_model("MATRIX_SET_DIAG", [Input(shape, dtype), Input(d.shape, dtype)],
                            [dtype])
    assert_matches_litert(model, [x, d], reference=False)


@pytest.mark.parametrize("dtype", [F32, np.uint8, np.int16, I32, I64])
@pytest.mark.parametrize("len_type", [I32, I64])
@pytest.mark.parametrize("seq_dim,batch_dim", [(1, 0), (0, 1), (2, 0), (0, 2)])
def test_reverse_sequence(dtype, len_type, seq_dim, batch_dim):
    rng = np.random.default_rng(3)
    x = _data(rng, dtype, (3, 4, 5))
    lengths = rng.integers(0, x.shape[seq_dim] + 1, x.shape[batch_dim]).astype(len_type)
    model = single_op_model("REVERSE_SEQUENCE", [Input(x.shape, dtype), lengths], [dtype],
                            "ReverseSequenceOptions", {"seq_dim": seq_dim, "batch_dim": batch_dim})
    assert_matches_litert(model, [x], reference=False)


@pytest.mark.parametrize("combiner", ["SUM", "MEAN", "SQRTN"])
@pytest.mark.parametrize("rank", [2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_embedding_lookup_sparse(combiner, rank, seed):
    rng = np.random.default_rng(20 + seed)
    params = rng.standard_normal((6, 3, 2) if seed == 2 else (6, 4)).astype(F32)
    shape = [int(v) for v in rng.integers(2, 4, rank)]
    n = int(rng.integers(1, 7))
    flat = np.sort(rng.choice(int(np.prod(shape)), n, replace=False))
    indices = np.stack(np.unravel_index(flat, shape), axis=1).astype(I32)
    ids = rng.integers(0, 6, n).astype(I32)
    weights = rng.uniform(0.5, 2.0, n).astype(F32)
    model = single_op_model("EMBEDDING_LOOKUP_SPARSE",
                            [Input((n,), I32), Input(indices.shape, I32), np.array(shape, I32),
                             Input((n,), F32), params], [F32], "EmbeddingLookupSparseOptions",
                            {"combiner": combiner})
    assert_matches_litert(model, [ids, indices, weights], reference=False)
