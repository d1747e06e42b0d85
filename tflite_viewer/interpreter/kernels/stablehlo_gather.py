"""STABLEHLO_GATHER and STABLEHLO_SCATTER, with the StableHLO dimension numbers.

Gather: each batch position reads a window of ``slice_sizes`` at the start index its index
vector gives (mapped to operand dims by ``start_index_map``, clamped so the window fits),
drops ``collapsed_slice_dims``, and places the window dims at ``offset_dims``.
Scatter: each update element goes to the operand position of its scatter index plus its
window offset (``inserted_window_dims`` are size-1 dims of the window); positions out of
bounds are skipped, and the body (an empty subgraph: replace; or one STABLEHLO_ADD,
MULTIPLY, MAXIMUM, MINIMUM) combines, in update order.
"""
from __future__ import annotations

import numpy as np

from .common import BuiltinOperator as Op, Kernel, option, register

_INDEX_TYPES = ("INT32", "INT64")


def _index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """The index vectors as rows: [batch..., k] with the vector dim moved last."""
    if index_vector_dim == indices.ndim:
        return indices[..., None]
    return np.moveaxis(indices, index_vector_dim, -1)


def stablehlo_gather(operand: np.ndarray, indices: np.ndarray, offset_dims, collapsed_slice_dims,
                     start_index_map, index_vector_dim: int, slice_sizes) -> np.ndarray:
    collapsed = collapsed_slice_dims
    offset_dims, collapsed, start_index_map, slice_sizes = (
        [int(v) for v in a] for a in (offset_dims, collapsed, start_index_map, slice_sizes))
    rank = operand.ndim
    if len(slice_sizes) != rank:
        raise ValueError(f"{len(slice_sizes)} slice sizes for operand rank {rank}")
    vec = _index_vectors(np.asarray(indices, np.int64), int(index_vector_dim))
    batch_shape = vec.shape[:-1]
    rows = vec.reshape(-1, vec.shape[-1])
    starts = np.zeros((rows.shape[0], rank), np.int64)
    starts[:, start_index_map] = rows
    starts = np.clip(starts, 0, np.array(operand.shape) - np.array(slice_sizes))
    grid = np.indices(slice_sizes).reshape(rank, -1).T
    pos = starts[:, None, :] + grid[None]
    windows = operand[tuple(pos.reshape(-1, rank).T)].reshape((rows.shape[0],) +
                                                               tuple(slice_sizes))
    windows = windows.reshape((rows.shape[0],) + tuple(
        s for d, s in enumerate(slice_sizes) if d not in collapsed))
    out = windows.reshape(batch_shape + windows.shape[1:])
    nb = len(batch_shape)
    return np.moveaxis(out, list(range(nb, out.ndim)), offset_dims)


def _gather_shape(ctx, node):
    d = node.builtin_data
    idx = ctx.input(node, 1).shape
    ivd = int(d.get("index_vector_dim", 0))
    batch = [s for k, s in enumerate(idx) if k != ivd]
    sizes = [int(s) for k, s in enumerate(d.get("slice_sizes") or [])
             if k not in [int(c) for c in d.get("collapsed_slice_dims") or []]]
    offset_dims = [int(v) for v in d.get("offset_dims") or []]
    out, bi, oi = [], iter(batch), iter(sizes)
    for k in range(len(batch) + len(sizes)):
        out.append(next(oi) if k in offset_dims else next(bi))
    return tuple(out)


@register(Op.STABLEHLO_GATHER, versions=(1, 1))
class StablehloGather(Kernel):
    """Inputs: operand, start indices (INT32 or INT64)."""

    types = "any"

    def check(self, ctx, node):
        if ctx.input(node, 1).type_name not in _INDEX_TYPES:
            return f"STABLEHLO_GATHER v{node.version}: indices must be INT32 or INT64"
        return None

    def prepare(self, ctx, node):
        ctx.resize(ctx.output(node, 0), _gather_shape(ctx, node))

    def invoke(self, ctx, node):
        d = node.builtin_data
        ctx.set_output(ctx.output(node, 0), stablehlo_gather(
            ctx.value(node, 0), ctx.value(node, 1), d.get("offset_dims") or [],
            d.get("collapsed_slice_dims") or [], d.get("start_index_map") or [],
            int(d.get("index_vector_dim", 0)), d.get("slice_sizes") or []))


_COMBINE = {"STABLEHLO_ADD": np.add, "STABLEHLO_MULTIPLY": np.multiply,
            "STABLEHLO_MAXIMUM": np.maximum, "STABLEHLO_MINIMUM": np.minimum}


def stablehlo_scatter(operand: np.ndarray, indices: np.ndarray, updates: np.ndarray,
                      update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims,
                      index_vector_dim: int, combine: str | None) -> np.ndarray:
    """``combine``: a key of _COMBINE, or None to replace."""
    window_dims = [int(v) for v in update_window_dims]
    inserted = [int(v) for v in inserted_window_dims]
    to_operand = [int(v) for v in scatter_dims_to_operand_dims]
    vec = _index_vectors(np.asarray(indices, np.int64), int(index_vector_dim))
    rank = operand.ndim
    scatter_dims = [d for d in range(updates.ndim) if d not in window_dims]
    window_to_operand = [d for d in range(rank) if d not in inserted]
    out = np.array(operand, copy=True)
    fn = _COMBINE.get(combine) if combine else None
    shape = np.array(operand.shape)
    for uidx in np.ndindex(*updates.shape):
        start = np.zeros(rank, np.int64)
        start[to_operand] = vec[tuple(uidx[d] for d in scatter_dims)]
        full = start.copy()
        for w, od in zip(window_dims, window_to_operand):
            full[od] += uidx[w]
        if np.any(full < 0) or np.any(full >= shape):
            continue
        target = tuple(full)
        if fn is None:
            out[target] = updates[uidx]
        else:
            with np.errstate(over="ignore"):
                out[target] = fn(out[target], updates[uidx])
    return out


def _scatter_body(ctx, node) -> tuple[bool, str | None]:
    """(valid, combine op name or None for replace)."""
    index = int(option(node, "update_computation_subgraph_index", -1))
    subgraphs = ctx.interpreter.model.subgraphs
    if not 0 <= index < len(subgraphs):
        return False, None
    ops = subgraphs[index].operators
    if len(ops) == 0:
        return True, None
    if len(ops) == 1 and ops[0].opcode.builtin_name in _COMBINE:
        return True, ops[0].opcode.builtin_name
    return False, None


@register(Op.STABLEHLO_SCATTER, versions=(1, 1))
class StablehloScatter(Kernel):
    """Inputs: operand, scatter indices (INT32/INT64), updates; output: the operand with
    the updates combined in."""

    types = "any"

    def check(self, ctx, node):
        if ctx.input(node, 1).type_name not in _INDEX_TYPES:
            return f"STABLEHLO_SCATTER v{node.version}: indices must be INT32 or INT64"
        if not _scatter_body(ctx, node)[0]:
            return (f"STABLEHLO_SCATTER v{node.version}: the update computation must be empty "
                    "(replace) or one STABLEHLO_ADD, MULTIPLY, MAXIMUM or MINIMUM (as LiteRT)")
        return None

    def prepare(self, ctx, node):
        ctx.resize(ctx.output(node, 0), ctx.input(node, 0).shape)

    def invoke(self, ctx, node):
        d = node.builtin_data
        ctx.set_output(ctx.output(node, 0), stablehlo_scatter(
            ctx.value(node, 0), ctx.value(node, 1), ctx.value(node, 2),
            d.get("update_window_dims") or [], d.get("inserted_window_dims") or [],
            d.get("scatter_dims_to_operand_dims") or [], int(d.get("index_vector_dim", 0)),
            _scatter_body(ctx, node)[1]))
