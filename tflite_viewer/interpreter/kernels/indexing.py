"""Ops that index one tensor with the values of another: GATHER, GATHER_ND, SCATTER_ND
and WHERE (EMBEDDING_LOOKUP, which also dequantizes, is in embedding.py).  Unlike the shape ops they read their indices at run time, so
each checks them against the indexed shape (TFLite returns an error; numpy would wrap a
negative index silently)."""
from __future__ import annotations

import math

import numpy as np

from .common import BuiltinOperator as Op, KernelError, as_int_list, bind_arrays, define, option


def _check_index_rows(rows: np.ndarray, shape, op_name: str) -> None:
    """Raise a `KernelError` unless every row of ``rows`` (one index per leading dimension
    of ``shape``) lies inside ``shape``: GATHER_ND and SCATTER_ND index alike."""
    if rows.shape[1] > len(shape):
        raise KernelError(f"{op_name}: indices of depth {rows.shape[1]} for a shape "
                          f"{list(shape)} of rank {len(shape)} (at most its rank)")
    for d in range(rows.shape[1]):
        if np.any(rows[:, d] < 0) or np.any(rows[:, d] >= shape[d]):
            bad = rows[(rows[:, d] < 0) | (rows[:, d] >= shape[d]), d][0]
            raise KernelError(f"{op_name}: index {int(bad)} of dimension {d} out of range "
                              f"[0, {shape[d]}) of the shape {list(shape)}")


def gather(params: np.ndarray, indices: np.ndarray, axis: int = 0, batch_dims: int = 0):
    axis = axis + params.ndim if axis < 0 else axis
    batch_dims = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    # (the ufunc reductions indices.min() and .max() run, without their Python wrappers)
    if indices.size and (np.minimum.reduce(indices, axis=None) < 0
                         or np.maximum.reduce(indices, axis=None) >= params.shape[axis]):
        bad = indices[(indices < 0) | (indices >= params.shape[axis])].reshape(-1)[0]
        raise KernelError(f"GATHER: index {int(bad)} out of range [0, {params.shape[axis]}) "
                          f"of axis {axis} of the params' shape {list(params.shape)}")
    if batch_dims == 0:
        return np.take(params, indices, axis=axis)
    batch = params.shape[:batch_dims]
    nb = math.prod(int(d) for d in batch)
    p = params.reshape((nb,) + params.shape[batch_dims:])
    ind = indices.reshape((nb,) + indices.shape[batch_dims:])
    out = np.stack([np.take(p[i], ind[i], axis=axis - batch_dims) for i in range(nb)])
    return out.reshape(tuple(batch) + out.shape[1:])


def _gather_shape(ctx, node):
    p, i = ctx.input(node, 0).shape, ctx.input(node, 1).shape
    axis = int(option(node, "axis", 0))
    axis = axis + len(p) if axis < 0 else axis
    if not 0 <= axis < len(p):  # gather.cc's Prepare
        raise KernelError(f"GATHER: axis {int(option(node, 'axis', 0))} out of range for "
                          f"params of rank {len(p)}")
    bd = int(option(node, "batch_dims", 0))
    bd = bd + len(i) if bd < 0 else bd
    if not 0 <= bd <= min(axis, len(i)):
        raise KernelError(f"GATHER: batch_dims {int(option(node, 'batch_dims', 0))} must lie "
                          f"in [0, {min(axis, len(i))}] (the axis and the indices' rank)")
    return [tuple(p[:axis]) + tuple(i[bd:]) + tuple(p[axis + 1:])]


def _bound_gather(ctx, node):
    axis, batch_dims = int(option(node, "axis", 0)), int(option(node, "batch_dims", 0))
    return lambda params, indices: gather(params, indices, axis, batch_dims)


define(Op.GATHER, (1, 7), lambda ctx, node: gather(
    ctx.value(node, 0), ctx.value(node, 1), int(option(node, "axis", 0)),
    int(option(node, "batch_dims", 0))), _gather_shape, types="any",
    bind=bind_arrays(_bound_gather))


def gather_nd(params: np.ndarray, indices: np.ndarray) -> np.ndarray:
    k = indices.shape[-1]
    flat = indices.reshape(-1, k)
    _check_index_rows(flat, params.shape, "GATHER_ND")
    out = params[tuple(flat[:, d] for d in range(k))]
    return out.reshape(indices.shape[:-1] + params.shape[k:])


def _gather_nd_shape(ctx, node):
    params, indices = ctx.input(node, 0).shape, ctx.input(node, 1).shape
    if not indices or not 0 <= indices[-1] <= len(params):  # gather_nd.cc's Prepare
        raise KernelError(f"GATHER_ND: indices of shape {list(indices)} for params of shape "
                          f"{list(params)}: the indices' last dimension must lie in "
                          f"[0, {len(params)}] (the params' rank)")
    return [tuple(indices[:-1]) + tuple(params[indices[-1]:])]


define(Op.GATHER_ND, (1, 5), lambda ctx, node: gather_nd(ctx.value(node, 0), ctx.value(node, 1)),
       _gather_nd_shape, types="any")


def scatter_nd(indices: np.ndarray, updates: np.ndarray, shape) -> np.ndarray:
    shape = tuple(int(s) for s in shape)
    out = np.zeros(shape, dtype=updates.dtype)
    k = indices.shape[-1]
    flat = indices.reshape(-1, k)
    _check_index_rows(flat, shape, "SCATTER_ND")
    upd = updates.reshape((flat.shape[0],) + shape[k:])
    np.add.at(out, tuple(flat[:, d] for d in range(k)), upd)
    return out


def _scatter_nd_shape(ctx, node):
    shape = ctx.known_value(node, 2)
    return None if shape is None else [tuple(as_int_list(shape))]


define(Op.SCATTER_ND, (1, 1), lambda ctx, node: scatter_nd(
    ctx.value(node, 0), ctx.value(node, 1), as_int_list(ctx.value(node, 2))),
    _scatter_nd_shape, types="any")


# WHERE (one input) lists the coordinates of the true elements.
define(Op.WHERE, (1, 2), lambda ctx, node: np.argwhere(ctx.value(node, 0)).astype(
    ctx.output(node, 0).dtype), None, types="any", check=lambda ctx, node: None)
