"""Reductions: MEAN, SUM, REDUCE_MAX/MIN/PROD/ANY/ALL, ARG_MAX, ARG_MIN, CUMSUM.

Float32 MEAN and SUM add in the order of the kernel set the interpreter follows
(`kernel_sets`): the reference kernels add each output's elements in memory order from 0;
the builtin ones from the first element, except MEAN over the last axis of a shape that
keeps another (size-1 dimensions dropped, neighbours merged as reduce_utils::ResolveAxis
does), which Eigen sums row by row (`eigen_float.row_sums`).
"""
from __future__ import annotations

import math

import numpy as np

from .. import eigen_float
from ..float32 import ordered_sum, ordered_sum_plan
from ..integer import reduce as int_reduce
from ..kernel_sets import builtin
from ..stored_values import Stored, stored_accepts
from .common import (DEFAULT, QUANTIZED, BuiltinOperator as Op, KernelError, as_int_list, bind_arrays,
                     define, derived, option, rounding, same_shape, tensor_qparams)


def normalize_axes(axes, rank: int) -> tuple[int, ...]:
    out = []
    for a in axes:
        a = int(a)
        if not -rank <= a < max(rank, 1):
            raise KernelError(f"axis {a} out of range for rank {rank}")
        a = a + rank if a < 0 else a
        if a not in out:
            out.append(a)
    return tuple(sorted(out))


def reduced_shape(shape, axes, keep_dims: bool) -> tuple[int, ...]:
    axes = normalize_axes(axes, len(shape))
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


class _BySet:
    """A reduction whose float32 order depends on the kernel set (`kernel_sets`)."""

    def __init__(self, reference, builtin_set) -> None:
        self.reference, self.builtin = reference, builtin_set


def _chosen(fn, ctx):
    """``fn``, or the one of a `_BySet` the interpreter's kernel set takes."""
    if isinstance(fn, _BySet):
        return fn.builtin if builtin(ctx) else fn.reference
    return fn


def _reducer(fn):
    def compute(ctx, node):
        x, axes = ctx.value(node, 0), ctx.value(node, 1)
        axes = derived(node, "axes", (axes, x.ndim),
                       lambda: normalize_axes(as_int_list(axes), x.ndim))
        out = _chosen(fn, ctx)(x, axis=axes, keepdims=bool(option(node, "keep_dims", False)))
        return np.asarray(out).astype(x.dtype, copy=False)
    return compute


def _bound_reducer(fn):
    """`bind_arrays` for a reduction over constant axes: the axes normalized once."""
    def make(ctx, node):
        axes = ctx.known_value(node, 1)
        if axes is None:
            return None
        fn_ = _chosen(fn, ctx)
        dtype = ctx.input(node, 0).dtype
        try:
            axes = normalize_axes(as_int_list(axes), len(ctx.input(node, 0).shape))
        except ValueError:
            return None  # the unbound kernel reports it
        keep = bool(option(node, "keep_dims", False))
        if fn_ is mean and dtype == np.float32:
            shape = tuple(ctx.input(node, 0).shape)
            plan, count = ordered_sum_plan(shape, axes, keep), math.prod(shape[a] for a in axes)
            if count:  # (`mean` with its sums' plan made once: the bound call is its numpy)
                divisor = np.float32(count)
                return lambda x, _axes: plan(x) / divisor
        return lambda x, _axes: np.asarray(fn_(x, axis=axes, keepdims=keep)).astype(dtype,
                                                                                  copy=False)
    return bind_arrays(make)


def _reduce_shape(ctx, node):
    axes = ctx.known_value(node, 1)
    if axes is None:
        return None
    return [reduced_shape(ctx.input(node, 0).shape, as_int_list(axes),
                          bool(option(node, "keep_dims", False)))]


def _integer_mean(x, axis, keepdims):
    """Integer mean: the int64 sum divided by the count, truncated toward zero."""
    s = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64)
    n = int(np.prod([x.shape[a] for a in axis], dtype=np.int64)) or 1
    return (np.trunc(s / n)).astype(x.dtype)


def _per_element(sums: np.ndarray, x, axis) -> np.ndarray:
    """``sums`` divided by the number of elements each adds, in float32 (NaN over an
    empty axis, as InitializeMeanOutput writes)."""
    count = math.prod(x.shape[a] for a in axis)
    if count:
        return sums / np.float32(count)
    return np.full(np.shape(sums), np.nan, np.float32)


def mean(x, axis, keepdims):
    """MEAN as reference_ops::Mean: float32 sums in memory order from 0, divided by the
    count in float32; integers truncate toward zero, as TFLite's."""
    if x.dtype.kind in "iu":
        return _integer_mean(x, axis, keepdims)
    if x.dtype != np.float32:
        return np.mean(x, axis=axis, keepdims=keepdims)
    return _per_element(ordered_sum(x, axis, keepdims), x, axis)


def resolved_dims(shape, axes) -> tuple[list[int], list[int]]:
    """reduce_utils::ResolveAxis: the shape with its size-1 dimensions dropped and each
    run of neighbours alike (all reduced or all kept) merged, and the reduced ones."""
    dims = [int(d) for d in shape]
    red = [a in axes for a in range(len(dims))]
    merged: list[list] = []
    for d, r in zip(dims, red):
        if d == 1:
            continue
        if merged and merged[-1][1] == r:
            merged[-1][0] *= d
        else:
            merged.append([d, r])
    return [d for d, _ in merged], [i for i, (_, r) in enumerate(merged) if r]


def mean_builtin(x, axis, keepdims):
    """MEAN as the builtin kernels' optimized_ops::Mean: over the last axis of a resolved
    shape that keeps another, Eigen's row sums (`eigen_float.row_sums`) divided by the
    count; otherwise the memory-order sums from the first element (MeanGeneral)."""
    if x.dtype != np.float32:
        return mean(x, axis, keepdims)
    out_shape = reduced_shape(x.shape, axis, keepdims)
    dims, red = resolved_dims(x.shape, axis)
    if x.size and len(dims) > 1 and red == [len(dims) - 1]:
        sums = eigen_float.row_sums(x.reshape(-1, dims[-1]))
        return (sums / np.float32(dims[-1])).reshape(out_shape)
    return _per_element(ordered_sum(x, axis, keepdims, from_first=True), x, axis)


def sum_builtin(x, axis, keepdims):
    """SUM as the builtin kernels' optimized_ops::ReduceGeneric: memory order from the
    first element."""
    if x.dtype != np.float32:
        return np.add.reduce(x, axis=axis, keepdims=keepdims)
    return ordered_sum(x, axis, keepdims, from_first=True)


def sum_reference(x, axis, keepdims):
    """SUM as reference_ops::ReduceGeneric: memory order from 0 (over every axis, as
    ReduceAllDims does, from the first element)."""
    if x.dtype != np.float32:
        return np.add.reduce(x, axis=axis, keepdims=keepdims)
    return ordered_sum(x, axis, keepdims, from_first=len(axis) == x.ndim)


def _prepare_mean(ctx, node):
    return int_reduce.prepare_mean(tensor_qparams(ctx.input(node, 0)),
                                   tensor_qparams(ctx.output(node, 0)), rounding(ctx))


def _int_mean_sum(compute_sum: bool):
    return lambda ctx, node, p: int_reduce.mean_or_sum(
        ctx.value(node, 0), ctx.value(node, 1), keep_dims=bool(option(node, "keep_dims", False)),
        compute_sum=compute_sum, params=p)


def _bind_spatial(compute_sum: bool):
    """The integer ``bind`` of MEAN (SUM: ``compute_sum``) over the height and width of an
    8-bit NHWC input, its axes a constant: one compiled loop
    (`int_reduce.compiled_spatial`)."""
    def make(ctx, node):
        x, axes, o = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
        p = node.user_data.get("q")
        if p is None or axes is None or not axes.is_constant or axes.data is None \
                or x.shape is None or len(x.shape) != 4 \
                or sorted(normalize_axes(as_int_list(axes.data), 4)) != [1, 2]:
            return None
        run = int_reduce.compiled_spatial(p, tuple(x.shape), x.dtype, compute_sum)
        if run is None:
            return None
        shape = tuple(o.shape)
        return lambda data, _axes: run(data).reshape(shape)
    return bind_arrays(make)


def _int_raw(fn):
    return lambda ctx, node, p: fn(ctx.value(node, 0), ctx.value(node, 1),
                                   bool(option(node, "keep_dims", False)))


def _int_prod(ctx, node, p):
    """int8/int16 REDUCE_PROD: quantized (QuantizedReduceProd), or the plain product of
    unquantized integers."""
    x, o = ctx.input(node, 0), ctx.output(node, 0)
    keep = bool(option(node, "keep_dims", False))
    if x.quantization is None or not x.quantization.has_scale:
        return _reducer(np.multiply.reduce)(ctx, node)
    return int_reduce.reduce_prod(ctx.value(node, 0), ctx.value(node, 1), keep,
                                  tensor_qparams(x), tensor_qparams(o), rounding(ctx))


def _extreme(ufunc, pick):
    """REDUCE_MAX / REDUCE_MIN: the ufunc reduction; over an empty axis, the value the
    reference kernel starts from (the type's lowest value for MAX, its highest for MIN)."""
    def reduce(x, axis, keepdims):
        if x.size:
            return ufunc.reduce(x, axis=axis, keepdims=keepdims)
        info = np.finfo(x.dtype) if x.dtype.kind == "f" else np.iinfo(x.dtype)
        return ufunc.reduce(x, axis=axis, keepdims=keepdims, initial=pick(info))
    return reduce


reduce_max = _extreme(np.maximum, lambda info: info.min)
reduce_min = _extreme(np.minimum, lambda info: info.max)


# SUM, REDUCE_MAX/MIN/PROD: the ufunc reductions np.sum, np.max, np.min and np.prod call
# for arrays, without their Python wrappers (about a microsecond each)
#: op, versions, float function, node kinds, integer prepare and compute
_REDUCTIONS = (
    (Op.MEAN, (1, 3), _BySet(mean, mean_builtin), QUANTIZED, _prepare_mean,
     _int_mean_sum(False)),
    (Op.SUM, (1, 2), _BySet(sum_reference, sum_builtin), QUANTIZED, _prepare_mean,
     _int_mean_sum(True)),
    (Op.REDUCE_MAX, (1, 3), reduce_max, QUANTIZED, None, _int_raw(int_reduce.reduce_max)),
    (Op.REDUCE_MIN, (1, 3), reduce_min, QUANTIZED, None, _int_raw(int_reduce.reduce_min)),
    (Op.REDUCE_PROD, (1, 2), np.multiply.reduce, "float+int8+int16", None, _int_prod),
    (Op.REDUCE_ANY, (1, 1), np.any, "any", None, None),
    (Op.REDUCE_ALL, (1, 1), np.all, "any", None, None),
)
#: REDUCE_MAX and REDUCE_MIN compare stored integers (per channel where the values they
#: reduce together, and each with its output, pair: `stored_values`); LiteRT's EvalType
#: requires the per-tensor parameters of input and output equal
_EXTREMES = stored_accepts("INT8 UINT8 INT16", Stored(
    "reduce", legacy=frozenset({"INT8", "UINT8", "INT16"}),
    does="compares the stored integers along the reduced axes"))
_INT_BINDS = {Op.MEAN: _bind_spatial(False), Op.SUM: _bind_spatial(True)}
for _op, _versions, _fn, _types, _int_prepare, _int_compute in _REDUCTIONS:
    define(_op, _versions, _reducer(_fn), _reduce_shape, types=_types,
           int_prepare=_int_prepare, int_compute=_int_compute, bind=_bound_reducer(_fn),
           int_bind=_INT_BINDS.get(_op),
           accepts=_EXTREMES if _op in (Op.REDUCE_MAX, Op.REDUCE_MIN) else DEFAULT)


def _arg(fn):
    def compute(ctx, node):
        x = ctx.value(node, 0)
        axis = normalize_axes(as_int_list(ctx.value(node, 1)), x.ndim)
        if len(axis) != 1:
            raise KernelError(f"{node.name} takes exactly one axis, not {len(axis)}")
        if x.shape[axis[0]] == 0:
            raise KernelError(f"{node.name} over an empty axis: dimension {axis[0]} of the "
                              f"input's shape {list(x.shape)} holds no element (LiteRT "
                              "refuses it too)")
        return fn(x, axis=axis[0])
    return compute


def _arg_shape(ctx, node):
    axes = ctx.known_value(node, 1)
    if axes is None:
        return None
    return [reduced_shape(ctx.input(node, 0).shape, as_int_list(axes), False)]


#: ARG_MAX and ARG_MIN compare stored integers (per channel where the values along the
#: axis pair: `stored_values`); LiteRT's kernel takes 8-bit integers only
_ARGS = stored_accepts("INT8 UINT8", Stored(
    "arg", does="compares the stored integers along the axis"))
define(Op.ARG_MAX, (1, 3), _arg(np.argmax), _arg_shape, types=QUANTIZED,
       int_compute=lambda ctx, node, p: _arg(np.argmax)(ctx, node), accepts=_ARGS)
define(Op.ARG_MIN, (1, 3), _arg(np.argmin), _arg_shape, types=QUANTIZED,
       int_compute=lambda ctx, node, p: _arg(np.argmin)(ctx, node), accepts=_ARGS)


def cumsum(x: np.ndarray, axis: int, exclusive: bool = False, reverse: bool = False):
    if reverse:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        out = np.roll(out, 1, axis=axis)
        idx = [slice(None)] * x.ndim
        idx[axis] = 0
        out[tuple(idx)] = 0
    if reverse:
        out = np.flip(out, axis)
    return np.ascontiguousarray(out)


define(Op.CUMSUM, (1, 1), lambda ctx, node: cumsum(
    ctx.value(node, 0), normalize_axes(as_int_list(ctx.value(node, 1)), ctx.value(node, 0).ndim)[0],
    bool(option(node, "exclusive", False)), bool(option(node, "reverse", False))), same_shape)
