"""The output shapes LiteRT computes from values: for each operator whose output shape is
set by an input's values (RESHAPE's new shape, TRANSPOSE_CONV's output shape, PAD's
paddings, ...), the shape as far as the partial values of `shape_values` fix it.

A dimension is None where the values that set it are unknown; the whole shape is None
where not even the rank is known.  Each rule follows the LiteRT kernel's Prepare (or, for
STRIDED_SLICE, ``ResizeOutputTensor`` and ``strided_slice_logic.h``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..delegation.facts import SubgraphFacts
    from .shape_values import ShapeValues

PartialShape = tuple[int | None, ...] | None  # None: not even the rank is known

# op -> the inputs whose values set the output's shape (LiteRT resizes the output from
# them; TFLM computes into the stored shape)
VALUE_INPUTS: dict[str, tuple[int, ...]] = {
    **{op: (1,) for op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD",
                           "REDUCE_ANY", "REDUCE_ALL", "RESHAPE", "RESIZE_BILINEAR",
                           "RESIZE_NEAREST_NEIGHBOR", "PAD", "PADV2", "MIRROR_PAD", "TRANSPOSE",
                           "EXPAND_DIMS", "ARG_MAX", "ARG_MIN", "BROADCAST_TO")},
    "SLICE": (1, 2), "STRIDED_SLICE": (1, 2, 3), "FILL": (0,), "SPLIT": (0,),
    "SPLIT_V": (1, 2), "SPACE_TO_BATCH_ND": (1, 2), "BATCH_TO_SPACE_ND": (1, 2),
    "TRANSPOSE_CONV": (0,),
}


def compare(computed: PartialShape, stored: tuple[int, ...]) -> bool | None:
    """Whether partial shape ``computed`` is ``stored``: True, False (it differs in the
    rank or in a known dimension), or None (it may be, depending on unknown values)."""
    if computed is None:
        return None
    if len(computed) != len(stored) or any(d is not None and d != e
                                           for d, e in zip(computed, stored)):
        return False
    return True if all(d is not None for d in computed) else None


def needs_values(f: "SubgraphFacts", k: int) -> bool:
    """Operator ``k``'s output shape comes from values not stored in the file."""
    ins = f.inputs[k]
    return any(i < len(ins) and ins[i] >= 0 and not f.static[ins[i]]
               for i in VALUE_INPUTS.get(f.builtin[k], ()))


def count(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _first_shape(shape: PartialShape, n: int = 1) -> list[PartialShape]:
    return [shape] * n


def _reshape_shape(sv: ShapeValues, k: int) -> list[PartialShape]:
    new = sv.in_value(k, 1)
    if new is None:
        return [None]
    dims = new.flat()
    x = sv.in_shape(k, 0)
    if -1 in dims:
        rest = [d for i, d in enumerate(dims) if i != dims.index(-1)]
        if x is not None and all(d is not None for d in x) and all(d is not None for d in rest):
            known = count(rest)
            dims[dims.index(-1)] = count(x) // known if known else 0
        else:
            dims[dims.index(-1)] = None
    return [tuple(dims)]


def _shape_input(i: int) -> Callable:
    """TRANSPOSE_CONV, FILL, BROADCAST_TO: the output's shape is input ``i``'s values."""
    def rule(sv: ShapeValues, k: int) -> list[PartialShape]:
        v = sv.in_value(k, i)
        return [None if v is None else tuple(v.flat())]
    return rule


def _axis(sv: ShapeValues, k: int, i: int, rank: int) -> int | None:
    v = sv.value(sv.input(k, i))
    if v is None or not v.full or v.values.size != 1:
        return None
    a = int(v.values.reshape(-1)[0])
    return a + rank if a < 0 else a


def _expand_dims_shape(sv: ShapeValues, k: int) -> list[PartialShape]:
    x = sv.in_shape(k, 0)
    if x is None:
        return [None]
    a = _axis(sv, k, 1, len(x) + 1)
    if a is None:
        return [(None,) * (len(x) + 1)]
    return [tuple(x[:a]) + (1,) + tuple(x[a:])]


def _reduce_shape(sv: ShapeValues, k: int) -> list[PartialShape]:
    x, axes = sv.in_shape(k, 0), sv.value(sv.input(k, 1))
    keep = bool(sv.option(k, "keep_dims", False))
    if x is None:
        return [None]
    if axes is None or not axes.full:
        return [(None,) * len(x) if keep else None]
    ax = {a + len(x) if a < 0 else a for a in axes.ints()}
    return [tuple(1 if i in ax else d for i, d in enumerate(x)) if keep
            else tuple(d for i, d in enumerate(x) if i not in ax)]


def _arg_shape(sv: ShapeValues, k: int) -> list[PartialShape]:
    x = sv.in_shape(k, 0)
    if x is None:
        return [None]
    a = _axis(sv, k, 1, len(x))
    if a is None:
        return [(None,) * (len(x) - 1)]
    return [tuple(d for i, d in enumerate(x) if i != a)]


def _resize_shape(sv: ShapeValues, k: int) -> list[PartialShape]:
    x, size = sv.in_shape(k, 0), sv.in_value(k, 1)
    if x is None or len(x) != 4:
        return [None]
    h, w = (size.flat() + [None, None])[:2] if size is not None else (None, None)
    return [(x[0], h, w, x[3])]


def _pad_shape(sv: ShapeValues, k: int) -> list[PartialShape]:
    x, pads = sv.in_shape(k, 0), sv.in_value(k, 1)
    if x is None:
        return [None]
    if pads is None or pads.values.size != 2 * len(x):
        return [(None,) * len(x)]
    p = pads.flat()
    return [tuple(None if d is None or p[2 * i] is None or p[2 * i + 1] is None
                  else d + p[2 * i] + p[2 * i + 1] for i, d in enumerate(x))]


def _transpose_shape(sv: ShapeValues, k: int) -> list[PartialShape]:
    x, perm = sv.in_shape(k, 0), sv.in_value(k, 1)
    if x is None:
        return [None]
    if perm is None:
        return [(None,) * len(x)]
    return [tuple(None if p is None or not 0 <= p < len(x) else x[p] for p in perm.flat())]


def slice_dims(sv: ShapeValues, k: int) -> PartialShape:
    x, begin, size = sv.in_shape(k, 0), sv.in_value(k, 1), sv.in_value(k, 2)
    if x is None:
        return None
    if size is None or size.values.size != len(x):
        return (None,) * len(x)
    b = begin.flat() if begin is not None and begin.values.size == len(x) else [None] * len(x)
    out = []
    for d, start, n in zip(x, b, size.flat()):
        if n is not None and n >= 0:
            out.append(n)
        elif n == -1 and d is not None and start is not None:
            out.append(d - start)
        else:
            out.append(None)
    return tuple(out)


def _slice_shape(sv: ShapeValues, k: int) -> list[PartialShape]:
    return [slice_dims(sv, k)]


def strided_plan(sv: ShapeValues, k: int, shape) -> list | None:
    """Per input axis, (start, stop, stride) as LiteRT's StridedSlice computes them
    (stride 0 marks a shrunk axis: (index, 0, 0)), None for an axis whose values are
    unknown; None altogether for the ellipsis and new-axis masks, which this does not
    follow."""
    if sv.option(k, "ellipsis_mask", 0) or sv.option(k, "new_axis_mask", 0):
        return None
    rank = len(shape)
    parts = [sv.in_value(k, i) for i in (1, 2, 3)]
    if any(p is None or p.values.size > rank for p in parts):
        return None
    begin, end, strides = (p.flat() for p in parts)
    n = len(begin)
    bmask, emask, smask = (int(sv.option(k, m, 0)) for m in ("begin_mask", "end_mask",
                                                            "shrink_axis_mask"))
    offset = bool(sv.option(k, "offset", False))
    plan: list = []
    for axis in range(rank):
        if axis >= n:  # axes past the given indices are taken whole
            plan.append((0, shape[axis], 1) if shape[axis] is not None else None)
            continue
        size, s = shape[axis], strides[axis]
        b, e = begin[axis], end[axis]
        bit = 1 << axis
        if size is None or s is None or s == 0 or (b is None and not bmask & bit):
            plan.append(None)
            continue
        start = _clamp_start(0 if b is None else b, size, s, bool(bmask & bit))
        if smask & bit:
            plan.append((start, 0, 0))
            continue
        if e is None and not emask & bit:
            plan.append(None)
            continue
        if offset:  # ``end`` is a length: LiteRT takes it as it is
            plan.append((start, start + (0 if e is None else e), s))
            continue
        plan.append((start, _clamp_stop(0 if e is None else e, size, s, bool(emask & bit)), s))
    return plan


def _clamp_start(b: int, size: int, stride: int, masked: bool) -> int:
    if masked:
        return 0 if stride > 0 else size - 1
    b += size if b < 0 else 0
    return min(max(b, 0), size) if stride > 0 else min(max(b, -1), size - 1)


def _clamp_stop(e: int, size: int, stride: int, masked: bool) -> int:
    if masked:
        return size if stride > 0 else -1
    e += size if e < 0 else 0
    return min(max(e, 0), size) if stride > 0 else min(max(e, -1), size - 1)


def _strided_shape(sv: ShapeValues, k: int) -> list[PartialShape]:
    x = sv.in_shape(k, 0)
    if x is None:
        return [None]
    plan = strided_plan(sv, k, x)
    if plan is None:
        return [None]
    smask = int(sv.option(k, "shrink_axis_mask", 0))
    dims: list[int | None] = []
    for axis, p in enumerate(plan):
        if smask & (1 << axis):
            continue
        if p is None:
            dims.append(None)
            continue
        start, stop, s = p
        span = stop - start
        dims.append(0 if (span < 0) != (s < 0) else
                    ((span + 1) // s + 1 if s < 0 else (0 if span == 0 else (span - 1) // s + 1)))
    return [tuple(dims)]


def _split_shape(sv: ShapeValues, k: int) -> list[PartialShape]:
    x, n = sv.in_shape(k, 1), len(sv.f.outputs[k])
    if x is None:
        return _first_shape(None, n)
    a = _axis(sv, k, 0, len(x))
    if a is None or x[a] is None:
        return _first_shape((None,) * len(x), n)
    return _first_shape(tuple(x[a] // n if i == a else d for i, d in enumerate(x)), n)


def _split_v_shape(sv: ShapeValues, k: int) -> list[PartialShape]:
    x, sizes, n = sv.in_shape(k, 0), sv.in_value(k, 1), len(sv.f.outputs[k])
    if x is None:
        return _first_shape(None, n)
    a = _axis(sv, k, 2, len(x))
    if a is None or sizes is None or sizes.values.size != n:
        return _first_shape((None,) * len(x), n)
    each = sizes.flat()
    if -1 in each:
        rest = [v for i, v in enumerate(each) if i != each.index(-1)]
        each[each.index(-1)] = (x[a] - sum(rest) if x[a] is not None
                                and all(v is not None for v in rest) else None)
    return [tuple(e if i == a else d for i, d in enumerate(x)) for e in each]


def _space_batch_shape(to_batch: bool) -> Callable:
    def rule(sv: ShapeValues, k: int) -> list[PartialShape]:
        x, block, pads = sv.in_shape(k, 0), sv.in_value(k, 1), sv.in_value(k, 2)
        if x is None:
            return [None]
        if block is None or pads is None or not x:
            return [(None,) * len(x)]
        bl, p = block.flat(), pads.flat()
        if len(p) != 2 * len(bl) or len(bl) + 1 > len(x):
            return [(None,) * len(x)]
        prod = None if None in bl else count(bl)
        out: list[int | None] = [None] * len(x)
        if x[0] is not None and prod:
            out[0] = x[0] * prod if to_batch else x[0] // prod
        for i, b in enumerate(bl):
            d, lo, hi = x[i + 1], p[2 * i], p[2 * i + 1]
            if None not in (d, b, lo, hi) and b:
                out[i + 1] = (d + lo + hi) // b if to_batch else d * b - lo - hi
        out[len(bl) + 1:] = x[len(bl) + 1:]
        return [tuple(out)]
    return rule


SHAPE_RULES: dict[str, Callable[[ShapeValues, int], list[PartialShape]]] = {
    "RESHAPE": _reshape_shape, "TRANSPOSE_CONV": _shape_input(0), "FILL": _shape_input(0),
    "BROADCAST_TO": _shape_input(1), "EXPAND_DIMS": _expand_dims_shape,
    **{op: _reduce_shape for op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD",
                                    "REDUCE_ANY", "REDUCE_ALL")},
    "ARG_MAX": _arg_shape, "ARG_MIN": _arg_shape, "RESIZE_BILINEAR": _resize_shape,
    "RESIZE_NEAREST_NEIGHBOR": _resize_shape, "PAD": _pad_shape, "PADV2": _pad_shape,
    "MIRROR_PAD": _pad_shape, "TRANSPOSE": _transpose_shape, "SLICE": _slice_shape,
    "STRIDED_SLICE": _strided_shape, "SPLIT": _split_shape, "SPLIT_V": _split_v_shape,
    "SPACE_TO_BATCH_ND": _space_batch_shape(True),
    "BATCH_TO_SPACE_ND": _space_batch_shape(False),
}
assert set(SHAPE_RULES) == set(VALUE_INPUTS)
