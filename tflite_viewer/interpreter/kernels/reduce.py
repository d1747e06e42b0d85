"""Reductions: MEAN, SUM, REDUCE_MAX/MIN/PROD/ANY/ALL, ARG_MAX, ARG_MIN, CUMSUM."""
from __future__ import annotations

import numpy as np

from ..integer import reduce as ireduce
from .common import (QUANTIZED, BuiltinOperator as B, as_int_list, define, derived, opt,
                     rounding, same_shape, tq)


def normalize_axes(axes, rank: int) -> tuple[int, ...]:
    out = []
    for a in axes:
        a = int(a)
        if not -rank <= a < max(rank, 1):
            raise ValueError(f"axis {a} out of range for rank {rank}")
        a = a + rank if a < 0 else a
        if a not in out:
            out.append(a)
    return tuple(sorted(out))


def reduced_shape(shape, axes, keep_dims: bool) -> tuple[int, ...]:
    axes = normalize_axes(axes, len(shape))
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _reducer(fn):
    def compute(ctx, node):
        x, axes = ctx.value(node, 0), ctx.value(node, 1)
        axes = derived(node, "axes", (axes, x.ndim),
                       lambda: normalize_axes(as_int_list(axes), x.ndim))
        out = fn(x, axis=axes, keepdims=bool(opt(node, "keep_dims", False)))
        return np.asarray(out).astype(x.dtype, copy=False)
    return compute


def _reduce_shape(ctx, node):
    axes = ctx.known_value(node, 1)
    if axes is None:
        return None
    return [reduced_shape(ctx.input(node, 0).shape, as_int_list(axes),
                          bool(opt(node, "keep_dims", False)))]


def mean(x, axis, keepdims):
    if x.dtype.kind in "iu":  # integer mean truncates toward zero, as TFLite's
        s = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int64)
        n = int(np.prod([x.shape[a] for a in axis], dtype=np.int64)) or 1
        return (np.trunc(s / n)).astype(x.dtype)
    return np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float32 if x.dtype == np.float32 else None)


def _prepare_mean(ctx, node):
    return ireduce.prepare_mean(tq(ctx.input(node, 0)), tq(ctx.output(node, 0)), rounding(ctx))


def _int_mean_sum(compute_sum: bool):
    return lambda ctx, node, p: ireduce.mean_or_sum(
        ctx.value(node, 0), ctx.value(node, 1), None, None, bool(opt(node, "keep_dims", False)),
        compute_sum, p.rounding, p)


def _int_raw(fn):
    return lambda ctx, node, p: fn(ctx.value(node, 0), ctx.value(node, 1),
                                   bool(opt(node, "keep_dims", False)))


_INT = {
    B.MEAN: dict(int_prepare=_prepare_mean, int_compute=_int_mean_sum(False)),
    B.SUM: dict(int_prepare=_prepare_mean, int_compute=_int_mean_sum(True)),
    B.REDUCE_MAX: dict(int_compute=_int_raw(ireduce.reduce_max)),
    B.REDUCE_MIN: dict(int_compute=_int_raw(ireduce.reduce_min)),
    B.REDUCE_PROD: dict(int_compute=lambda ctx, node, p: _int_prod(ctx, node)),
}


def _int_prod(ctx, node):
    """int8/int16 REDUCE_PROD: quantized (QuantizedReduceProd), or the plain product of
    unquantized integers."""
    x, o = ctx.input(node, 0), ctx.output(node, 0)
    keep = bool(opt(node, "keep_dims", False))
    if x.quantization is None or not x.quantization.has_scale:
        return _reducer(np.multiply.reduce)(ctx, node)
    return ireduce.reduce_prod(ctx.value(node, 0), ctx.value(node, 1), keep, tq(x), tq(o),
                               rounding(ctx))

# SUM, REDUCE_MAX/MIN/PROD: the ufunc reductions np.sum, np.max, np.min and np.prod call
# for arrays, without their Python wrappers (about a microsecond each)
for _op, _fn, _versions, _types in (
        (B.MEAN, mean, (1, 3), QUANTIZED), (B.SUM, np.add.reduce, (1, 2), QUANTIZED),
        (B.REDUCE_MAX, np.maximum.reduce, (1, 3), QUANTIZED),
        (B.REDUCE_MIN, np.minimum.reduce, (1, 3), QUANTIZED),
        (B.REDUCE_PROD, np.multiply.reduce, (1, 2), "float+int8+int16"), (B.REDUCE_ANY, np.any, (1, 1), "any"),
        (B.REDUCE_ALL, np.all, (1, 1), "any")):
    define(_op, _versions, _reducer(_fn), _reduce_shape, types=_types, **_INT.get(_op, {}))


def _arg(fn):
    def compute(ctx, node):
        x = ctx.value(node, 0)
        axis = normalize_axes(as_int_list(ctx.value(node, 1)), x.ndim)
        if len(axis) != 1:
            raise ValueError("ARG_MAX/ARG_MIN take exactly one axis")
        return fn(x, axis=axis[0])
    return compute


def _arg_shape(ctx, node):
    axes = ctx.known_value(node, 1)
    if axes is None:
        return None
    return [reduced_shape(ctx.input(node, 0).shape, as_int_list(axes), False)]


define(B.ARG_MAX, (1, 3), _arg(np.argmax), _arg_shape, types=QUANTIZED,
       int_compute=lambda ctx, node, p: _arg(np.argmax)(ctx, node))
define(B.ARG_MIN, (1, 3), _arg(np.argmin), _arg_shape, types=QUANTIZED,
       int_compute=lambda ctx, node, p: _arg(np.argmin)(ctx, node))


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


define(B.CUMSUM, (1, 1), lambda ctx, node: cumsum(
    ctx.value(node, 0), normalize_axes(as_int_list(ctx.value(node, 1)), ctx.value(node, 0).ndim)[0],
    bool(opt(node, "exclusive", False)), bool(opt(node, "reverse", False))), same_shape)
