"""Shape and layout ops: reshaping, slicing, joining, gathering, casting (padding, tiling and
filling are in `pad_tile`).  They move data of any type (quantized tensors pass through when
their scale and zero point do not change)."""
from __future__ import annotations

import math

import numpy as np

from ..integer import concat_pad as int_concat_pad
from ..stored_values import Stored, stored_accepts
from ..tensor import UINT8
from .common import (BuiltinOperator as Op, KernelError, as_int_list, check_output_allocation,
                     define, derived, option, quantization_mismatch, same_shape)
from .reduce import normalize_axes
from .transpose import transpose


def _prod(shape) -> int:
    return math.prod(int(d) for d in shape)


def _const(ctx, node, k):
    return ctx.known_value(node, k)


# -- RESHAPE ---------------------------------------------------------------------------
def reshape_target(in_shape, new_shape) -> tuple[int, ...]:
    """TFLite RESHAPE's output shape: one -1 dimension is inferred."""
    new_shape = [int(d) for d in new_shape]
    total = _prod(in_shape)
    if new_shape.count(-1) > 1:
        raise ValueError(f"more than one -1 in the new shape {new_shape}")
    if -1 in new_shape:
        known = _prod([d for d in new_shape if d != -1])
        if known == 0 or total % known:
            raise ValueError(f"cannot reshape {list(in_shape)} to {new_shape}")
        new_shape[new_shape.index(-1)] = total // known
    if _prod(new_shape) != total:
        raise ValueError(f"cannot reshape {list(in_shape)} ({total} elements) to {new_shape}")
    return tuple(new_shape)


def _reshape_spec(ctx, node, value):
    """The requested shape: the shape input (1-D), else the options' new_shape."""
    t = ctx.input(node, 1)
    if t is not None and t.shape is not None and len(t.shape) == 1 and t.shape[0] >= 0:
        v = value(node, 1)
        if v is None:
            return None
        return as_int_list(v)
    ns = node.builtin_data.get("new_shape")
    if ns is not None:
        return list(ns)
    if t is not None:
        v = value(node, 1)
        return None if v is None else as_int_list(v)
    raise ValueError("RESHAPE has neither a shape input nor new_shape")


def _reshape_shape(ctx, node):
    spec = _reshape_spec(ctx, node, ctx.known_value)
    return None if spec is None else [reshape_target(ctx.input(node, 0).shape, spec)]


def _reshape(ctx, node):
    x = ctx.value(node, 0)
    out = ctx.output(node, 0)
    if out.shape is not None and not out.is_dynamic:
        return x.reshape(out.shape)  # prepare computed it from a constant shape
    t = ctx.input(node, 1)
    spec = None if t is None or t.data is None else tuple(t.data.reshape(-1).tolist())
    target = derived(node, "reshape", (spec, x.shape),  # a computed shape: same values, same target
                     lambda: reshape_target(x.shape, _reshape_spec(ctx, node, ctx.value)))
    return x.reshape(target)


define(Op.RESHAPE, (1, 1), _reshape, _reshape_shape, types="any")


# -- SQUEEZE / EXPAND_DIMS -----------------------------------------------------------------
def squeeze_shape(shape, dims) -> tuple[int, ...]:
    if not dims:
        return tuple(d for d in shape if d != 1)
    axes = normalize_axes(dims, len(shape))
    for a in axes:
        if shape[a] != 1:
            raise ValueError(f"cannot squeeze dimension {a} of size {shape[a]}")
    return tuple(d for i, d in enumerate(shape) if i not in axes)


define(Op.SQUEEZE, (1, 2),
       lambda ctx, node: ctx.value(node, 0).reshape(
           squeeze_shape(ctx.value(node, 0).shape, option(node, "squeeze_dims", []))),
       lambda ctx, node: [squeeze_shape(ctx.input(node, 0).shape,
                                        option(node, "squeeze_dims", []))],
       types="any")


def expand_dims_shape(shape, axis: int) -> tuple[int, ...]:
    rank = len(shape)
    if not -rank - 1 <= axis <= rank:
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    if axis < 0:
        axis += rank + 1
    return tuple(shape[:axis]) + (1,) + tuple(shape[axis:])


def _expand_shape(ctx, node):
    a = _const(ctx, node, 1)
    return None if a is None else [expand_dims_shape(ctx.input(node, 0).shape, as_int_list(a)[0])]


define(Op.EXPAND_DIMS, (1, 1),
       lambda ctx, node: ctx.value(node, 0).reshape(expand_dims_shape(
           ctx.value(node, 0).shape, as_int_list(ctx.value(node, 1))[0])),
       _expand_shape, types="any", same_quantization=True)


# -- TRANSPOSE -------------------------------------------------------------------------
def _perm(p, rank):
    p = [int(v) + rank if int(v) < 0 else int(v) for v in p]
    if sorted(p) != list(range(rank)):
        raise ValueError(f"{p} is not a permutation of {rank} dimensions")
    return p


def _transpose_shape(ctx, node):
    p = _const(ctx, node, 1)
    if p is None:
        return None
    shape = ctx.input(node, 0).shape
    return [tuple(shape[i] for i in _perm(as_int_list(p), len(shape)))]


define(Op.TRANSPOSE, (1, 9),
       lambda ctx, node: transpose(
           ctx.value(node, 0), _perm(as_int_list(ctx.value(node, 1)), ctx.value(node, 0).ndim)),
       _transpose_shape, types="any")


# -- CONCATENATION / PACK / UNPACK / SPLIT ---------------------------------------------------
def _concat(ctx, node):
    arrays = [ctx.value(node, k) for k in range(len(node.inputs))]
    axis = int(option(node, "axis", 0))
    return np.concatenate(arrays, axis=axis + arrays[0].ndim if axis < 0 else axis)


def _concat_shape(ctx, node):
    from .common import activation
    if activation(node) is not None:  # concatenation.cc's Prepare requires NONE
        raise ValueError(f"fused activation {activation(node)} on CONCATENATION: LiteRT "
                         "accepts only NONE")
    shapes = [ctx.input(node, k).shape for k in range(len(node.inputs))]
    rank = len(shapes[0])
    axis = int(option(node, "axis", 0))
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise ValueError(f"axis {option(node, 'axis', 0)} out of range for rank {rank}")
    for s in shapes[1:]:
        if len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, shapes[0])) if i != axis):
            raise ValueError(f"cannot concatenate shapes {[list(x) for x in shapes]} on axis {axis}")
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return [tuple(out)]


def _per_tensor(t) -> bool:
    """Whether a tensor's parameters are LiteRT's per-tensor ``params`` (one scale): a
    per-channel or blockwise tensor's are 0 there."""
    q = t.quantization
    return q is None or (q.details is None and q.scale.size <= 1)


def _concat_check(ctx, node):
    """LiteRT's Prepare: uint8 inputs may have their own quantization (rescaled to the
    output's, as ConcatenationWithScaling); int8 ones must share the output's; int16 ones
    are copied whatever their scales, but every zero point must be 0.  It compares the
    per-tensor parameters: per-channel and blockwise tensors (0 there) are checked value
    by value instead (`stored_values`, through the declaration)."""
    out = ctx.output(node, 0)
    if out.type == UINT8 or not out.is_quantized_int:
        return None
    tensors = [ctx.tensors[i] for i in list(node.inputs) + list(node.outputs) if i >= 0]
    if not all(_per_tensor(t) for t in tensors):
        return None
    if out.dtype == np.int16:
        for t in tensors:
            if t.is_quantized_int and t.quantization is not None \
                    and np.any(t.quantization.zero_point != 0):
                return (f"{node.name} v{node.version}: int16 tensor {t.index} ({t.name}) has "
                        f"zero point {int(t.quantization.zero_point[0])}; LiteRT's kernel "
                        "requires 0 (its Prepare fails on this model)")
        return None
    return quantization_mismatch(ctx, node)


def _concat_int(ctx, node, p):
    arrays = [ctx.value(node, k) for k in range(len(node.inputs))]
    out = ctx.output(node, 0)
    inputs_q = [ctx.input(node, k).quantization for k in range(len(node.inputs))]
    if not all(_per_tensor(ctx.tensors[i]) for i in list(node.inputs) + [node.outputs[0]]):
        # per channel: LiteRT's per-tensor parameters are all 0, equal: it copies
        return _concat(ctx, node)
    return int_concat_pad.concatenation(arrays, int(option(node, "axis", 0)), inputs_q,
                                        out.quantization)


#: CONCATENATION copies stored integers (per channel where each input's values pair with
#: the output's: `stored_values`); int8 and uint8 compare the per-tensor parameters
_CONCAT_STORED = stored_accepts("INT8 UINT8 INT16", Stored(
    "concat", legacy=frozenset({"INT8", "UINT8"}), does="copies the stored integers"))


define(Op.CONCATENATION, (1, 6), _concat, _concat_shape, types="float+uint8+int8+int16",
       check=_concat_check, int_compute=_concat_int, accepts=_CONCAT_STORED)


def _pack(ctx, node):
    arrays = [ctx.value(node, k) for k in range(len(node.inputs))]
    axis = int(option(node, "axis", 0))
    shape = arrays[0].shape
    axis = axis + len(shape) + 1 if axis < 0 else axis
    dtype = ctx.output(node, 0).dtype
    same = True
    for a in arrays:
        same = same and a.shape == shape
    if dtype is None or not 0 <= axis <= len(shape) or not same:
        return np.stack(arrays, axis=axis)  # (and its errors)
    # one slot per input in a new array: np.stack's generality costs more on small arrays
    out = np.empty(shape[:axis] + (len(arrays),) + shape[axis:], dtype)
    lead = (slice(None),) * axis
    for k, a in enumerate(arrays):
        out[lead + (k,)] = a
    return out


def _pack_shape(ctx, node):
    shape = ctx.input(node, 0).shape
    for k in range(1, len(node.inputs)):  # pack.cc's Prepare: HaveSameShapes
        other = ctx.input(node, k).shape
        if tuple(other) != tuple(shape):
            raise KernelError(f"PACK: input {k} has shape {list(other)}, input 0 "
                              f"{list(shape)}; every input must have the same shape")
    axis = int(option(node, "axis", 0))
    axis = axis + len(shape) + 1 if axis < 0 else axis
    if not 0 <= axis <= len(shape):
        raise KernelError(f"PACK: axis {int(option(node, 'axis', 0))} out of range for "
                          f"inputs of rank {len(shape)}")
    return [tuple(shape[:axis]) + (len(node.inputs),) + tuple(shape[axis:])]


define(Op.PACK, (1, 4), _pack, _pack_shape, types="any", same_quantization=True)


def _unpack(ctx, node):
    x = ctx.value(node, 0)
    axis = int(option(node, "axis", 0))
    axis = axis + x.ndim if axis < 0 else axis
    return tuple(np.take(x, i, axis=axis) for i in range(x.shape[axis]))


def _unpack_shape(ctx, node):
    shape = ctx.input(node, 0).shape
    axis = int(option(node, "axis", 0))
    axis = axis + len(shape) if axis < 0 else axis
    out = tuple(d for i, d in enumerate(shape) if i != axis)
    return [out] * len(node.outputs)


define(Op.UNPACK, (1, 5), _unpack, _unpack_shape, types="any", same_quantization=True)


def _split_sizes(total: int, sizes) -> list[int]:
    sizes = [int(s) for s in sizes]
    if sizes.count(-1) > 1:
        raise ValueError("more than one -1 in size_splits")
    if -1 in sizes:
        sizes[sizes.index(-1)] = total - sum(s for s in sizes if s != -1)
    if sum(sizes) != total or any(s < 0 for s in sizes):
        raise ValueError(f"size_splits {sizes} do not add up to {total}")
    return sizes


def _split_parts(x, axis, sizes):
    idx = [slice(None)] * x.ndim
    out = []
    start = 0
    for size in sizes:
        idx[axis] = slice(start, start + size)
        out.append(x[tuple(idx)])
        start += size
    return tuple(out)


def _split(ctx, node):
    x = ctx.value(node, 1)
    axis = normalize_axes(as_int_list(ctx.value(node, 0)), x.ndim)[0]
    n = len(node.outputs)
    if x.shape[axis] % n:
        raise ValueError(f"dimension {axis} of size {x.shape[axis]} does not split into {n}")
    return _split_parts(x, axis, [x.shape[axis] // n] * n)


def _split_shape(ctx, node):
    a = _const(ctx, node, 0)
    if a is None:
        return None
    shape = ctx.input(node, 1).shape
    axis = normalize_axes(as_int_list(a), len(shape))[0]
    n = len(node.outputs)
    if shape[axis] % n:
        raise ValueError(f"dimension {axis} of size {shape[axis]} does not split into {n}")
    out = list(shape)
    out[axis] //= n
    return [tuple(out)] * n


define(Op.SPLIT, (1, 4), _split, _split_shape, types="any")


def _split_v(ctx, node):
    x = ctx.value(node, 0)
    axis = normalize_axes(as_int_list(ctx.value(node, 2)), x.ndim)[0]
    return _split_parts(x, axis, _split_sizes(x.shape[axis], as_int_list(ctx.value(node, 1))))


def _split_v_shape(ctx, node):
    sizes, a = _const(ctx, node, 1), _const(ctx, node, 2)
    if sizes is None or a is None:
        return None
    shape = ctx.input(node, 0).shape
    axis = normalize_axes(as_int_list(a), len(shape))[0]
    out = []
    for s in _split_sizes(shape[axis], as_int_list(sizes)):
        o = list(shape)
        o[axis] = s
        out.append(tuple(o))
    return out


define(Op.SPLIT_V, (1, 2), _split_v, _split_v_shape, types="any")


# -- SLICE / STRIDED_SLICE ---------------------------------------------------------------
def slice_index(shape, begin, size) -> tuple[slice, ...]:
    idx = []
    for d, b, s in zip(shape, begin, size):
        e = d if s == -1 else b + s
        if b < 0 or e > d or e < b:
            raise ValueError(f"slice begin {list(begin)} size {list(size)} out of range of "
                             f"shape {list(shape)}")
        idx.append(slice(b, e))
    return tuple(idx)


def _zeros_view(shape, dtype=np.float32):
    return np.broadcast_to(np.zeros((), dtype), shape)


define(Op.SLICE, (1, 8),
       lambda ctx, node: ctx.value(node, 0)[slice_index(
           ctx.value(node, 0).shape, as_int_list(ctx.value(node, 1)), as_int_list(ctx.value(node, 2)))],
       lambda ctx, node: None if _const(ctx, node, 1) is None or _const(ctx, node, 2) is None else
       [_zeros_view(ctx.input(node, 0).shape)[slice_index(
           ctx.input(node, 0).shape, as_int_list(_const(ctx, node, 1)),
           as_int_list(_const(ctx, node, 2)))].shape], types="any")


def strided_slice_index(rank: int, begin, end, strides, begin_mask=0, end_mask=0,
                        ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0,
                        offset=False) -> tuple:
    """The numpy index of a TF/TFLite strided slice (numpy's slice clamping is TF's)."""
    idx: list = []
    for i in range(len(begin)):
        bit = 1 << i
        if ellipsis_mask & bit:
            idx.append(Ellipsis)
            continue
        if new_axis_mask & bit:
            idx.append(np.newaxis)
            continue
        b, e, s = int(begin[i]), int(end[i]), int(strides[i])
        if offset:
            e = b + e
        if shrink_axis_mask & bit:
            idx.append(0 if begin_mask & bit else b)  # TFLite honours begin_mask here
            continue
        if s == 0:
            raise ValueError("strided slice with stride 0")
        idx.append(slice(None if begin_mask & bit else b, None if end_mask & bit else e, s))
    return tuple(idx)


def _ss_index(ctx, node, value, rank):
    b, e, s = value(node, 1), value(node, 2), value(node, 3)
    if b is None or e is None or s is None:
        return None
    return strided_slice_index(
        rank, as_int_list(b), as_int_list(e), as_int_list(s), int(option(node, "begin_mask", 0)),
        int(option(node, "end_mask", 0)), int(option(node, "ellipsis_mask", 0)),
        int(option(node, "new_axis_mask", 0)), int(option(node, "shrink_axis_mask", 0)),
        bool(option(node, "offset", False)))


def _strided_slice(ctx, node):
    x = ctx.value(node, 0)
    # numpy keeps the trailing dimensions an index leaves out, as TFLite does
    idx = derived(node, "index", (ctx.value(node, 1), ctx.value(node, 2), ctx.value(node, 3),
                                  x.shape), lambda: _ss_index(ctx, node, ctx.value, x.ndim))
    return np.asarray(x[idx])


def _strided_slice_shape(ctx, node):
    shape = ctx.input(node, 0).shape
    idx = _ss_index(ctx, node, ctx.known_value, len(shape))
    return None if idx is None else [_zeros_view(shape)[idx].shape]


define(Op.STRIDED_SLICE, (1, 8), _strided_slice, _strided_slice_shape, types="any")


# -- SHAPE / RANK / RANGE / CAST ------------------------------------------------------------
def _shape(ctx, node):
    """The input's dims, one read-only array per input shape (nothing writes into it)."""
    shape = ctx.value(node, 0).shape

    def make():
        dims = np.array(shape, dtype=np.int64 if option(node, "out_type", "INT32") == "INT64"
                        else np.int32)
        dims.flags.writeable = False
        return dims
    return derived(node, "dims", (shape,), make)


define(Op.SHAPE, (1, 1), _shape, lambda ctx, node: [(len(ctx.input(node, 0).shape),)],
       types="any", check=lambda ctx, node: None)
define(Op.RANK, (1, 1), lambda ctx, node: np.array(ctx.value(node, 0).ndim, dtype=np.int32),
       lambda ctx, node: [()], types="any", check=lambda ctx, node: None)


def _range(ctx, node):
    start, limit, delta = (ctx.value(node, k).reshape(-1)[0] for k in range(3))
    if delta == 0:
        raise ValueError("RANGE delta is zero")
    n = int(np.ceil(abs((float(limit) - float(start)) / float(delta)))) \
        if (limit - start) * delta > 0 else 0
    check_output_allocation(ctx, node, (n,))
    return (start + np.arange(n) * delta).astype(ctx.output(node, 0).dtype)


define(Op.RANGE, (1, 2), _range, None, types="any")


def saturating_cast(x: np.ndarray, dtype) -> np.ndarray:
    """Float values to an integer type as cast.cc's SafeCast: truncated, saturated at the
    type's bounds, NaN to its maximum (the thresholds are exact in float64)."""
    info = np.iinfo(dtype)
    xf = np.asarray(x, np.float64)
    nan, low = np.isnan(xf), xf < info.min
    high = xf >= float(info.max) + 1.0  # the exclusive bound, a power of two
    out = np.where(nan | low | high, 0.0, np.trunc(xf)).astype(dtype)
    out[low] = info.min
    out[nan | high] = info.max
    return out


def _cast(ctx, node):
    from ...model.dtypes import bfloat16_to_float32, float32_to_bfloat16
    x = ctx.value(node, 0)
    out_t = ctx.output(node, 0)
    # BFLOAT16 is kept as raw bits: cast.cc converts values, through float32 both ways
    if ctx.input(node, 0).type_name == "BFLOAT16":
        x = bfloat16_to_float32(x)
    if x.dtype.kind == "c" and out_t.dtype.kind != "c":
        x = x.real  # cast.cc casts a complex number's real part
    if out_t.type_name == "BFLOAT16":
        return float32_to_bfloat16(x.astype(np.float32))
    if out_t.dtype.kind in "iu" and x.dtype.kind == "f":
        return saturating_cast(x, out_t.dtype)
    return x.astype(out_t.dtype)


define(Op.CAST, (1, 8), _cast, same_shape, types="any", check=lambda ctx, node: None)


# -- REVERSE_V2 / DYNAMIC_UPDATE_SLICE ----------------------------------------------------------

def _reverse(ctx, node):
    x = ctx.value(node, 0)
    axes = normalize_axes(as_int_list(ctx.value(node, 1)), x.ndim)
    return np.ascontiguousarray(np.flip(x, axis=axes)) if axes else x


define(Op.REVERSE_V2, (1, 3), _reverse, same_shape, types="any")


def dynamic_update_slice(x: np.ndarray, update: np.ndarray, start) -> np.ndarray:
    """Copy ``update`` into ``x`` at ``start``, clamped so the update fits (XLA semantics)."""
    out = np.array(x, copy=True)
    idx = []
    for d, u, s in zip(x.shape, update.shape, start):
        s = min(max(int(s), 0), d - u)
        idx.append(slice(s, s + u))
    out[tuple(idx)] = update
    return out


define(Op.DYNAMIC_UPDATE_SLICE, (1, 6), lambda ctx, node: dynamic_update_slice(
    ctx.value(node, 0), ctx.value(node, 1), as_int_list(ctx.value(node, 2))), same_shape,
    types="any")
