"""Segment reductions, diagonals and sequence ops: SEGMENT_SUM, UNSORTED_SEGMENT_SUM/PROD/
MAX/MIN, MATRIX_DIAG, MATRIX_SET_DIAG, REVERSE_SEQUENCE, EMBEDDING_LOOKUP_SPARSE."""
from __future__ import annotations

import numpy as np

from .common import BuiltinOperator as Op, as_int_list, define, option, same_shape
from .data_ops import types_check

F32 = np.float32


# -- SEGMENT_SUM ---------------------------------------------------------------------
def segment_sum(data: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Rows of ``data`` summed per segment id; ids start at 0 and grow by 0 or 1."""
    ids = np.asarray(ids, np.int64).reshape(-1)
    if data.ndim < 1 or ids.size != data.shape[0]:
        raise ValueError(f"{ids.size} segment ids for {data.shape[0] if data.ndim else 0} rows")
    if ids.size and (ids[0] != 0 or np.any((np.diff(ids) != 0) & (np.diff(ids) != 1))):
        raise ValueError("segment ids must start at 0 and increase by at most 1")
    count = int(ids[-1]) + 1 if ids.size else 0
    out = np.zeros((count,) + data.shape[1:], data.dtype)
    np.add.at(out, ids, data)
    return out


define(Op.SEGMENT_SUM, (1, 1), lambda ctx, node: segment_sum(ctx.value(node, 0),
                                                             ctx.value(node, 1)),
       None, types="any",
       check=types_check("SEGMENT_SUM", {0: ("FLOAT32", "INT32"), 1: ("INT32",)},
                         output_like=0))


# -- UNSORTED_SEGMENT_* ----------------------------------------------------------------
_UFUNC = {"SUM": np.add, "PROD": np.multiply, "MAX": np.maximum, "MIN": np.minimum}


def _initial(kind: str, dtype) -> object:
    if kind == "SUM":
        return 0
    if kind == "PROD":
        return 1
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    return info.min if kind == "MAX" else info.max  # numeric_limits lowest() / max()


def unsorted_segment(kind: str, data: np.ndarray, ids: np.ndarray, num: int) -> np.ndarray:
    """UnsortedSegmentRef: ``num`` segments of the reduction over rows mapped to each id
    (ids of any prefix shape of data's; negative ids are skipped)."""
    ids = np.asarray(ids, np.int64)
    if data.shape[:ids.ndim] != ids.shape:
        raise ValueError(f"segment ids of shape {list(ids.shape)} are not a prefix of data "
                         f"shape {list(data.shape)}")
    if num < 0 or (ids.size and int(ids.max()) >= num):
        raise ValueError(f"segment ids must be below num_segments {num}")
    tail = data.shape[ids.ndim:]
    out = np.full((num,) + tail, _initial(kind, data.dtype), data.dtype)
    flat_ids = ids.reshape(-1)
    rows = data.reshape((flat_ids.size,) + tail)
    keep = flat_ids >= 0
    _UFUNC[kind].at(out, flat_ids[keep], rows[keep])
    return out


def _unsorted_shape(ctx, node):
    num = ctx.known_value(node, 2)
    if num is None:
        return None
    ids_rank = len(ctx.input(node, 1).shape)
    return [(int(np.asarray(num).reshape(-1)[0]),) + tuple(ctx.input(node, 0).shape[ids_rank:])]


for _kind, _op in (("SUM", Op.UNSORTED_SEGMENT_SUM), ("PROD", Op.UNSORTED_SEGMENT_PROD),
                   ("MAX", Op.UNSORTED_SEGMENT_MAX), ("MIN", Op.UNSORTED_SEGMENT_MIN)):
    define(_op, (1, 1), (lambda k: lambda ctx, node: unsorted_segment(
        k, ctx.value(node, 0), ctx.value(node, 1),
        int(np.asarray(ctx.value(node, 2)).reshape(-1)[0])))(_kind),
        _unsorted_shape, types="any",
        check=types_check(f"UNSORTED_SEGMENT_{_kind}", {0: ("FLOAT32", "INT32"),
                                                        1: ("INT32",), 2: ("INT32",)},
                          output_like=0))

# -- MATRIX_DIAG / MATRIX_SET_DIAG ---------------------------------------------------------
_DIAG_TYPES = ("FLOAT32", "INT64", "INT32", "INT16", "INT8", "UINT8")


def matrix_diag(x: np.ndarray) -> np.ndarray:
    """[..., N] -> [..., N, N] with x on the diagonals."""
    n = x.shape[-1]
    out = np.zeros(x.shape + (n,), x.dtype)
    idx = np.arange(n)
    out[..., idx, idx] = x
    return out


def matrix_set_diag(x: np.ndarray, diag: np.ndarray) -> np.ndarray:
    """x with its main diagonals (min(M, N) long) replaced by ``diag``."""
    n = min(x.shape[-2], x.shape[-1])
    if diag.shape != x.shape[:-2] + (n,):
        raise ValueError(f"diagonal shape {list(diag.shape)} does not fit input "
                         f"{list(x.shape)}")
    out = np.array(x, copy=True)
    idx = np.arange(n)
    out[..., idx, idx] = diag
    return out


define(Op.MATRIX_DIAG, (1, 1), lambda ctx, node: matrix_diag(ctx.value(node, 0)),
       lambda ctx, node: [tuple(ctx.input(node, 0).shape) + (ctx.input(node, 0).shape[-1],)],
       types="any", check=types_check("MATRIX_DIAG", {0: _DIAG_TYPES}, output_like=0))
define(Op.MATRIX_SET_DIAG, (1, 1),
       lambda ctx, node: matrix_set_diag(ctx.value(node, 0), ctx.value(node, 1)),
       same_shape, types="any",
       check=types_check("MATRIX_SET_DIAG", {0: _DIAG_TYPES}, (0, 1), 0))


# -- REVERSE_SEQUENCE ----------------------------------------------------------------
def reverse_sequence(x: np.ndarray, lengths, seq_dim: int, batch_dim: int) -> np.ndarray:
    """For each batch b, reverse the first lengths[b] entries along ``seq_dim``."""
    lengths = as_int_list(lengths)
    if seq_dim == batch_dim or not (0 <= seq_dim < x.ndim and 0 <= batch_dim < x.ndim):
        raise ValueError(f"invalid seq_dim {seq_dim} / batch_dim {batch_dim} for rank {x.ndim}")
    if len(lengths) != x.shape[batch_dim] or any(n > x.shape[seq_dim] for n in lengths):
        raise ValueError(f"sequence lengths {lengths} do not fit shape {list(x.shape)}")
    out = np.array(x, copy=True)
    moved = np.moveaxis(out, (batch_dim, seq_dim), (0, 1))
    src = np.moveaxis(x, (batch_dim, seq_dim), (0, 1))
    for b, n in enumerate(lengths):
        if n > 0:
            moved[b, :n] = src[b, :n][::-1]
    return out


define(Op.REVERSE_SEQUENCE, (1, 1),
       lambda ctx, node: reverse_sequence(ctx.value(node, 0), ctx.value(node, 1),
                                          int(option(node, "seq_dim", 0)),
                                          int(option(node, "batch_dim", 0))),
       same_shape, types="any",
       check=types_check("REVERSE_SEQUENCE", {0: ("FLOAT32", "UINT8", "INT16", "INT32",
                                                  "INT64"), 1: ("INT32", "INT64")},
                         output_like=0))


# -- EMBEDDING_LOOKUP_SPARSE ---------------------------------------------------------------
def embedding_lookup_sparse(ids, indices, dense_shape, weights, params,
                            combiner: str) -> np.ndarray:
    """Weighted rows of ``params`` combined per bucket (all but the last index column),
    in float32 and in the kernel's order: SUM, MEAN (by total weight) or SQRTN."""
    ids = np.asarray(ids, np.int64).reshape(-1)
    indices = np.asarray(indices, np.int64)
    shape = as_int_list(dense_shape)
    rank = indices.shape[1] if indices.ndim == 2 else 1
    if len(shape) != rank:
        raise ValueError(f"dense shape {shape} does not have the indices' rank {rank}")
    emb_shape = params.shape[1:]
    emb = int(np.prod(emb_shape, dtype=np.int64))
    buckets = int(np.prod(shape[:-1], dtype=np.int64))
    out = np.zeros((buckets, emb), F32)
    rows = params.reshape(params.shape[0], emb).astype(F32)
    if np.any((ids < 0) | (ids >= params.shape[0])):
        raise ValueError(f"Embedding Lookup Sparse: index out of bounds [0, {params.shape[0] - 1}]")
    strides = np.cumprod([1] + shape[:-1][::-1][:-1])[::-1] if rank > 1 else np.zeros(0, np.int64)
    bucket = indices.reshape(-1, rank)[:, :rank - 1] @ np.asarray(strides, np.int64) \
        if rank > 1 else np.zeros(ids.size, np.int64)
    w = np.asarray(weights, F32).reshape(-1)
    current, total, squares, count = 0, F32(0), F32(0), 0

    def finalize(b):
        if combiner != "SUM" and count > 0:
            div = total if combiner == "MEAN" else F32(np.sqrt(squares))
            out[b] = out[b] / div

    for i in range(ids.size):
        b = int(bucket[i])
        if b != current:
            finalize(current)
            current, total, squares, count = b, F32(0), F32(0), 0
        count += 1
        squares = F32(squares + F32(w[i] * w[i]))
        total = F32(total + w[i])
        out[b] = out[b] + rows[ids[i]] * w[i]
    finalize(current)
    return out.reshape(tuple(shape[:-1]) + emb_shape)


define(Op.EMBEDDING_LOOKUP_SPARSE, (1, 1),
       lambda ctx, node: embedding_lookup_sparse(
           *(ctx.value(node, k) for k in range(5)), str(option(node, "combiner", "SUM"))),
       None, types="any",
       check=types_check("EMBEDDING_LOOKUP_SPARSE", {0: ("INT32",), 1: ("INT32",),
                                                     2: ("INT32",), 3: ("FLOAT32",),
                                                     4: ("FLOAT32",)}))
