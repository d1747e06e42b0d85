"""Small element-wise and data ops of LiteRT's builtin resolver: ADD_N, ATAN2, BITCAST,
BITWISE_XOR, RIGHT_SHIFT, BROADCAST_ARGS, BUCKETIZE, ONE_HOT, SPARSE_TO_DENSE, UNIQUE,
DILATE, FAKE_QUANT.

Each kernel accepts the tensor types its LiteRT kernel's Prepare and Eval accept (the
``check`` functions name them) and refuses the others at load.
"""
from __future__ import annotations

import numpy as np

from ...model.dtypes import bfloat16_to_float32, float32_to_bfloat16
from .common import BuiltinOperator as Op, as_int_list, broadcast_shape, define, option, \
    same_shape

F32 = np.float32


def types_check(name: str, allowed: dict[int, tuple[str, ...]], same: tuple[int, ...] = (),
                output_like: int | None = None):
    """A load check: input k's type among ``allowed[k]`` (type names), the inputs in
    ``same`` of one type, and output 0 of input ``output_like``'s type."""
    def check(ctx, node):
        for k, names in allowed.items():
            t = ctx.input(node, k)
            if t is None:
                return f"{name} v{node.version}: input {k} missing"
            if t.type_name not in names:
                return (f"{name} v{node.version} with {t.type_name} input {k}: LiteRT's "
                        f"kernel takes {', '.join(names)}")
        if same:
            first = ctx.input(node, same[0])
            for k in same[1:]:
                t = ctx.input(node, k)
                if t is not None and t.type != first.type:
                    return (f"{name} v{node.version}: input {k} is {t.type_name}, input "
                            f"{same[0]} {first.type_name} (LiteRT wants one type)")
        if output_like is not None:
            o, i = ctx.output(node, 0), ctx.input(node, output_like)
            if o.type != i.type:
                return (f"{name} v{node.version}: output {o.type_name} differs from input "
                        f"{output_like} {i.type_name}")
        return None
    check.input_types = allowed.get(0) or next(iter(allowed.values()), ())
    return check


INTS = ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32")


# -- ADD_N ---------------------------------------------------------------------------
def add_n(arrays: list[np.ndarray]) -> np.ndarray:
    """The inputs added left to right, as add_n.cc does element by element."""
    out = np.array(arrays[0], copy=True)
    for a in arrays[1:]:
        out = out + a
    return out


def _add_n_check(ctx, node):
    if len(node.inputs) < 2:
        return f"ADD_N v{node.version} with {len(node.inputs)} input: LiteRT needs at least 2"
    types = {ctx.tensors[i].type_name for i in node.inputs if i >= 0}
    if len(types) != 1 or not types <= {"FLOAT32", "INT32"}:
        return f"ADD_N v{node.version} with {sorted(types)} inputs: LiteRT takes FLOAT32 or INT32"
    shapes = {tuple(ctx.tensors[i].shape) for i in node.inputs if i >= 0}
    if len(shapes) > 1:
        return f"ADD_N v{node.version}: inputs of different shapes {sorted(shapes)}"
    return None


_AddN = define(Op.ADD_N, (1, 1), lambda ctx, node: add_n([ctx.value(node, k)
                                                 for k in range(len(node.inputs))]),
       same_shape, types="any", check=_add_n_check)
_AddN.dtypes = ("FLOAT32", "INT32")

# -- ATAN2 ---------------------------------------------------------------------------
def _atan2_shape(ctx, node):
    """atan2.cc: no broadcasting; it checks only that the ranks match, then pairs the
    elements in order over y's count (the output has y's shape).  An x with fewer
    elements would be read past its end: refused."""
    a, b = ctx.input(node, 0).shape, ctx.input(node, 1).shape
    if len(a) != len(b) or int(np.prod(b)) < int(np.prod(a)):
        raise ValueError(f"ATAN2 inputs of shapes {list(a)} and {list(b)}: LiteRT needs "
                         "one rank and at least as many x elements as y elements")
    return [a]


def _atan2(ctx, node):
    """atan2.cc: std::atan2 element by element in the tensors' own float type; BFLOAT16
    (kept as raw bits) computes in float32 and rounds back as Eigen's bfloat16 does."""
    y, x = ctx.value(node, 0), ctx.value(node, 1)
    if x.shape != y.shape:  # (see _atan2_shape) x's first y.size elements, in order
        x = np.ascontiguousarray(x).reshape(-1)[:y.size].reshape(y.shape)
    if ctx.input(node, 0).type_name == "BFLOAT16":
        return float32_to_bfloat16(np.arctan2(bfloat16_to_float32(y), bfloat16_to_float32(x)))
    return np.arctan2(y, x)


define(Op.ATAN2, (1, 1), _atan2, _atan2_shape, types="any",
       check=types_check("ATAN2", {0: ("FLOAT32", "FLOAT64", "FLOAT16", "BFLOAT16")}, (0, 1), 0))


# -- BITCAST -------------------------------------------------------------------------
def bitcast_shape(shape: tuple[int, ...], in_size: int, out_size: int) -> tuple[int, ...]:
    """bitcast.cc CalculateShape: a wider input gains a last dim of the size ratio, a
    narrower one loses its last dim (which must be that ratio)."""
    if in_size > out_size:
        return tuple(shape) + (in_size // out_size,)
    if in_size < out_size:
        if not shape or shape[-1] != out_size // in_size:
            raise ValueError(f"BITCAST of shape {list(shape)} to a type {out_size // in_size}x "
                             f"wider needs a last dimension of {out_size // in_size}")
        return tuple(shape[:-1])
    return tuple(shape)


def _bitcast_shape(ctx, node):
    x, o = ctx.input(node, 0), ctx.output(node, 0)
    return [bitcast_shape(x.shape, x.dtype.itemsize, o.dtype.itemsize)]


def _bitcast(ctx, node):
    x, o = ctx.value(node, 0), ctx.output(node, 0)
    return np.ascontiguousarray(x).view(o.dtype).reshape(o.shape)


def _bitcast_check(ctx, node):
    x, o = ctx.input(node, 0), ctx.output(node, 0)
    if x.dtype is None or o.dtype is None or x.type_name in ("STRING", "INT4") \
            or o.type_name in ("STRING", "INT4"):
        return f"BITCAST v{node.version} from {x.type_name} to {o.type_name}: no byte size"
    return None


define(Op.BITCAST, (1, 1), _bitcast, _bitcast_shape, types="any",
       check=_bitcast_check).dtypes = ("any fixed-size type",)

# -- BITWISE_XOR, RIGHT_SHIFT ----------------------------------------------------------
define(Op.BITWISE_XOR, (1, 1),
       lambda ctx, node: np.bitwise_xor(ctx.value(node, 0), ctx.value(node, 1)),
       broadcast_shape, types="any", check=types_check("BITWISE_XOR", {0: INTS}, (0, 1), 0))


def right_shift(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x >> y with y clamped to [0, bits - 1] (arithmetic for signed types)."""
    bits = x.dtype.itemsize * 8
    return np.right_shift(x, np.clip(y, 0, bits - 1).astype(x.dtype))


define(Op.RIGHT_SHIFT, (1, 1), lambda ctx, node: right_shift(ctx.value(node, 0),
                                                             ctx.value(node, 1)),
       broadcast_shape, types="any", check=types_check("RIGHT_SHIFT", {0: INTS}, (0, 1), 0))


# -- BROADCAST_ARGS --------------------------------------------------------------------
def _broadcast_args(ctx, node):
    a, b = as_int_list(ctx.value(node, 0)), as_int_list(ctx.value(node, 1))
    try:
        shape = np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError as exc:
        raise ValueError(f"shapes {a} and {b} do not broadcast") from exc
    return np.array(shape, ctx.output(node, 0).dtype)


def _broadcast_args_shape(ctx, node):
    a, b = ctx.input(node, 0).shape, ctx.input(node, 1).shape
    if len(a) != 1 or len(b) != 1:
        raise ValueError("BROADCAST_ARGS takes two 1-D shapes")
    return [(max(a[0], b[0]),)]


define(Op.BROADCAST_ARGS, (1, 1), _broadcast_args, _broadcast_args_shape, types="any",
       check=types_check("BROADCAST_ARGS", {0: ("INT32", "INT64")}, (0, 1), 0))


# -- BUCKETIZE -----------------------------------------------------------------------
def bucketize(x: np.ndarray, boundaries) -> np.ndarray:
    """The index of the first boundary greater than each value (std::upper_bound)."""
    bounds = np.asarray(boundaries, F32)
    if np.any(np.diff(bounds) < 0):
        raise ValueError("Expected sorted boundaries")
    return np.searchsorted(bounds, x, side="right").astype(np.int32)


define(Op.BUCKETIZE, (1, 1),
       lambda ctx, node: bucketize(ctx.value(node, 0), option(node, "boundaries", [])),
       same_shape, types="any",
       check=types_check("BUCKETIZE", {0: ("FLOAT32", "FLOAT64", "INT32", "INT64")}))


# -- ONE_HOT -------------------------------------------------------------------------
def one_hot(indices: np.ndarray, depth: int, on, off, axis: int) -> np.ndarray:
    """on where the index equals the position along the new ``axis``, else off."""
    rank = indices.ndim + 1
    axis = axis % rank if axis < 0 else axis
    positions = np.arange(depth).reshape((depth,) + (1,) * indices.ndim)
    hit = np.moveaxis(positions == indices[None], 0, axis)
    return np.where(hit, on, off).astype(np.asarray(on).dtype)


def _one_hot_axis(ctx, node) -> int:
    axis = int(option(node, "axis", -1))
    return ctx.input(node, 0).shape.__len__() if axis == -1 else axis


def _one_hot_shape(ctx, node):
    depth = ctx.known_value(node, 1)
    if depth is None:
        return None
    shape = list(ctx.input(node, 0).shape)
    shape.insert(_one_hot_axis(ctx, node), int(np.asarray(depth).reshape(-1)[0]))
    return [tuple(shape)]


def _one_hot(ctx, node):
    depth = int(np.asarray(ctx.value(node, 1)).reshape(-1)[0])
    if depth < 0:
        raise ValueError(f"ONE_HOT depth {depth} is negative")
    on = np.asarray(ctx.value(node, 2)).reshape(-1)[0]
    off = np.asarray(ctx.value(node, 3)).reshape(-1)[0]
    return one_hot(ctx.value(node, 0), depth, on, off, _one_hot_axis(ctx, node))


_OneHot = define(Op.ONE_HOT, (1, 1), _one_hot, _one_hot_shape, types="any",
       check=types_check("ONE_HOT", {0: ("INT32", "INT64"), 1: ("INT32",),
                                     2: ("FLOAT32", "INT32", "INT64", "INT8", "UINT8",
                                         "BOOL")}, (2, 3), 2))  # (Prepare lists INT16, Eval not)
_OneHot.dtypes = ("INT32/INT64 indices -> FLOAT32, INT32, INT64, INT8, UINT8, BOOL",)


# -- SPARSE_TO_DENSE -----------------------------------------------------------------
def sparse_to_dense(indices: np.ndarray, shape, values: np.ndarray, default,
                    validate: bool = False) -> np.ndarray:
    """Scatter ``values`` (one, or one per index) at ``indices`` (scalar, [N] or [N, rank])
    into an array of ``default``; later writes of a repeated index win."""
    shape = tuple(as_int_list(shape))
    out = np.full(shape, np.asarray(default).reshape(-1)[0], dtype=values.dtype)
    idx = np.asarray(indices, np.int64)
    if idx.ndim < 2:  # a scalar or a vector: indices along a 1-D output
        idx = idx.reshape(-1, 1)
    n = idx.shape[0]
    vals = np.broadcast_to(values.reshape(-1), (n,)) if values.size == 1 else values.reshape(-1)
    if vals.shape[0] != n:
        raise ValueError(f"{vals.shape[0]} values for {n} indices")
    if n and (np.any(idx < 0) or np.any(idx >= np.array(shape, np.int64))):
        raise ValueError("SPARSE_TO_DENSE index out of the output's bounds")
    if validate and n > 1:
        flat = np.ravel_multi_index(tuple(idx.T), shape)
        if np.any(np.diff(flat) <= 0):
            raise ValueError("SPARSE_TO_DENSE indices are not sorted and unique")
    for k in range(n):  # in order: a repeated index keeps the last value, as the C loop
        out[tuple(idx[k])] = vals[k]
    return out


def _std_shape(ctx, node):
    shape = ctx.known_value(node, 1)
    return None if shape is None else [tuple(as_int_list(shape))]


define(Op.SPARSE_TO_DENSE, (1, 3),
       lambda ctx, node: sparse_to_dense(ctx.value(node, 0), ctx.value(node, 1),
                                         ctx.value(node, 2), ctx.value(node, 3),
                                         bool(option(node, "validate_indices", False))),
       _std_shape, types="any",
       check=types_check("SPARSE_TO_DENSE", {0: ("INT32", "INT64"), 1: ("INT32", "INT64"),
                                             2: ("INT32", "INT64", "INT8", "UINT8",
                                                 "FLOAT32")}, (2, 3), 2))


# -- UNIQUE --------------------------------------------------------------------------
def unique(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Values in order of first appearance, and each input's index into them."""
    values, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return values[order], rank[inverse.reshape(-1)]


def _unique(ctx, node):
    x = ctx.value(node, 0)
    if x.ndim != 1:
        raise ValueError(f"UNIQUE takes a 1-D input, got shape {list(x.shape)}")
    return unique(x)


define(Op.UNIQUE, (1, 1), _unique, lambda ctx, node: [None, ctx.input(node, 0).shape],
       types="any",
       check=types_check("UNIQUE", {0: ("INT8", "INT16", "INT32", "INT64", "FLOAT32",
                                        "UINT8")}, output_like=0))


# -- DILATE --------------------------------------------------------------------------
def dilate(x: np.ndarray, dilations, padding_value) -> np.ndarray:
    """Spread the elements ``dilations[i]`` apart along each axis, filling the gaps."""
    dil = as_int_list(dilations)
    if len(dil) != x.ndim or any(d < 1 for d in dil):
        raise ValueError(f"DILATE needs one dilation >= 1 per dimension, got {dil}")
    shape = tuple(max((n - 1) * d + 1, 0) if n else 0 for n, d in zip(x.shape, dil))
    out = np.full(shape, np.asarray(padding_value).reshape(-1)[0], x.dtype)
    out[tuple(slice(None, None, d) for d in dil)] = x
    return out


def _dilate_shape(ctx, node):
    dil = ctx.known_value(node, 1)
    if dil is None:
        return None
    return [tuple((n - 1) * d + 1 if n else 0
                  for n, d in zip(ctx.input(node, 0).shape, as_int_list(dil)))]


def _dilate_check(ctx, node):
    x, d, p = ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2)
    if d is None or d.type_name != "INT32":
        return f"DILATE v{node.version}: dilations must be INT32"
    if p is None or p.type != x.type or ctx.output(node, 0).type != x.type:
        return f"DILATE v{node.version}: padding value and output must be the input's type"
    return None


define(Op.DILATE, (1, 1), lambda ctx, node: dilate(ctx.value(node, 0), ctx.value(node, 1),
                                                  ctx.value(node, 2)),
       _dilate_shape, types="any", check=_dilate_check).dtypes = ("any fixed-size type",)


# -- FAKE_QUANT ----------------------------------------------------------------------
def _roundf(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + F32(0.5))


def fake_quant(x: np.ndarray, rmin: float, rmax: float, num_bits: int) -> np.ndarray:
    """NudgeQuantizationRange + FakeQuantizeArray, in float32 as the C++."""
    qmin, qmax = F32(0), F32((1 << num_bits) - 1)
    rmin, rmax = F32(rmin), F32(rmax)
    scale = F32((rmax - rmin) / (qmax - qmin))
    zp_from_min = F32(qmin - F32(rmin / scale))
    if zp_from_min < qmin:
        zp = qmin
    elif zp_from_min > qmax:
        zp = qmax
    else:
        zp = F32(int(_roundf(zp_from_min)) & 0xFFFF)
    nmin, nmax = F32((qmin - zp) * scale), F32((qmax - zp) * scale)
    inv = F32(F32(1) / scale)
    clamped = np.minimum(nmax, np.maximum(nmin, x.astype(F32)))
    return (_roundf((clamped - nmin) * inv).astype(F32) * scale + nmin).astype(F32)


def _fake_quant_check(ctx, node):
    if option(node, "narrow_range", False):
        return (f"FAKE_QUANT v{node.version} with narrow_range: LiteRT refuses it at run "
                "time (narrow_range is for weights only)")
    return types_check("FAKE_QUANT", {0: ("FLOAT32",)})(ctx, node)


define(Op.FAKE_QUANT, (1, 2),
       lambda ctx, node: fake_quant(ctx.value(node, 0), float(option(node, "min", 0.0)),
                                    float(option(node, "max", 0.0)), int(option(node, "num_bits", 8))),
       same_shape, types="any", check=_fake_quant_check).dtypes = ("FLOAT32",)
