"""The values of the small tensors that set other tensors' shapes, as far as the file fixes
them; the output shapes LiteRT computes from them are in `value_shapes`.

A converted model often computes a shape at run time: Keras's Flatten with a dynamic batch
becomes ``RESHAPE(x, PACK(STRIDED_SLICE(SHAPE(x), 0, 1), -1))``, Conv2DTranspose's output
shape a PACK of the batch and constants.  TFLite Micro never resizes a tensor: it computes
into the shape stored in the file, so whether it computes the right thing depends on what
those values are at the stored input shapes.  This module works them out:

* a value is *partial*: an array with a mask of the elements the file fixes (SHAPE of a
  tensor whose batch is unknown gives ``[?, 4, 4, 3]``; a loop counter is unknown, the
  constants packed beside it are not);
* values flow through the shape arithmetic converters emit (SHAPE, RANK, CAST, PACK,
  CONCATENATION, GATHER, SLICE, STRIDED_SLICE, RESHAPE, SQUEEZE, EXPAND_DIMS, FILL, the
  element-wise ADD/SUB/MUL/FLOOR_DIV/FLOOR_MOD/MAXIMUM/MINIMUM, REDUCE_PROD, SUM), each
  computed as LiteRT's kernel computes it;
* an operator whose output shape comes from values (`value_shapes.VALUE_INPUTS`: RESHAPE,
  TRANSPOSE_CONV, FILL, PAD, SLICE, STRIDED_SLICE, reductions, ...) gets a partial
  output shape: a dimension is known when the values that set it are, and the rank
  often is even when they are not.

Shapes are LiteRT's at the stored input sizes: the interpreter's shape propagation
(`interpreter.shape_inference`, for models with a dynamic dimension, the only ones whose
stored shapes a converter guessed) where it knows them, the computed partial shape of a
value-shaped operator's output, else the stored shape.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..delegation.facts import SubgraphFacts
from .value_shapes import SHAPE_RULES, PartialShape, count, needs_values, slice_dims, strided_plan

MAX_VALUES = 1024  # elements: shape arithmetic, not activations


class Partial:
    """A value some of whose elements are known: ``values`` (int64 or float64) and the
    mask ``known`` of the same shape."""

    __slots__ = ("values", "known")

    def __init__(self, values: np.ndarray, known: np.ndarray) -> None:
        self.values, self.known = values, known

    @staticmethod
    def unknown(shape: tuple[int, ...], floating: bool = False) -> "Partial":
        return Partial(np.zeros(shape, np.float64 if floating else np.int64),
                       np.zeros(shape, bool))

    @property
    def full(self) -> bool:
        return bool(self.known.all())

    def flat(self) -> list[int | None]:
        """The elements as ints, None where unknown."""
        return [int(v) if k else None for v, k in zip(self.values.reshape(-1).tolist(),
                                                      self.known.reshape(-1).tolist())]

    def ints(self) -> list[int] | None:
        """Every element as an int, or None when one is unknown."""
        return [int(v) for v in self.values.reshape(-1).tolist()] if self.full else None


class ShapeValues:
    """Partial values and shapes of one subgraph.

    ``inferred`` maps tensor -> the shape LiteRT's prepare computes (empty when the
    stored shapes are trusted).  Shapes are propagated once, in execution order: an
    operator whose shape comes from values gets its computed (partial) shape; any other
    operator keeps its stored shapes while its inputs have theirs, and gets unknown
    shapes downstream of one that does not (its stored shapes were guessed from the same
    placeholders).  Values are computed when asked for, and kept."""

    def __init__(self, f: SubgraphFacts, inferred: dict[int, tuple[int, ...]] | None = None
                 ) -> None:
        self.f = f
        self.inferred = inferred or {}
        self._values: dict[int, Partial | None] = {}
        self._shapes: dict[int, PartialShape] = {}  # only the shapes that are not stored
        self._busy: set[int] = set()
        self._propagate()

    def _propagate(self) -> None:
        f, shapes = self.f, self._shapes
        for k in range(f.op_count):
            outs = f.outputs[k]
            computed: list | None = None
            if needs_values(f, k):
                computed = self.out_shapes(k) or []
            elif any(i in shapes for i in f.inputs[k]):
                computed = []
            for j, t in enumerate(outs):
                if t < 0:
                    continue
                if t in self.inferred:
                    shape = self.inferred[t]
                elif computed is not None:
                    shape = computed[j] if j < len(computed) else None
                else:
                    continue
                if shape != tuple(f.shapes[t]):
                    shapes[t] = shape

    # -- what the rules ask ----------------------------------------------------------------
    def shape(self, t: int) -> PartialShape:
        """Tensor ``t``'s shape as LiteRT computes it at the stored input sizes."""
        shapes = self._shapes
        return shapes[t] if t in shapes else tuple(self.f.shapes[t])

    def value(self, t: int) -> Partial | None:
        """Tensor ``t``'s value as far as the file fixes it (None: nothing is known)."""
        if t < 0:
            return None
        if t in self._values:
            return self._values[t]
        f = self.f
        out: Partial | None = None
        if f.static[t]:
            raw = f.values(t) if f.num_elements(t) <= MAX_VALUES else None
            if raw is not None and raw.dtype.kind in "iubf":
                v = raw.astype(np.float64 if raw.dtype.kind == "f" else np.int64)
                out = Partial(v, np.ones(v.shape, bool))
        else:
            k = f.producer.get(t)
            if k is not None and t not in self._busy and f.builtin[k] in _EVAL:
                self._busy.add(t)
                try:
                    out = _EVAL[f.builtin[k]](self, k)
                except (ValueError, IndexError, TypeError, ZeroDivisionError,
                        OverflowError):
                    out = None  # values LiteRT would refuse: known to no one
                finally:
                    self._busy.discard(t)
                if out is not None and (out.values.size > MAX_VALUES or len(f.outputs[k]) != 1):
                    out = None
        self._values[t] = out
        return out

    def out_shapes(self, k: int) -> list[PartialShape] | None:
        """The shapes LiteRT computes for operator ``k``'s outputs from its inputs' values
        and shapes (None: the operator is not one whose shape comes from values)."""
        rule = SHAPE_RULES.get(self.f.builtin[k])
        if rule is None:
            return None
        try:
            return rule(self, k)
        except (ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError):
            return [None] * len(self.f.outputs[k])

    # -- helpers for the rules -------------------------------------------------------------
    def input(self, k: int, i: int) -> int:
        ins = self.f.inputs[k]
        return ins[i] if i < len(ins) else -1

    def in_value(self, k: int, i: int) -> Partial | None:
        """Input ``i``'s value, all-unknown (but shaped) when its shape is known."""
        t = self.input(k, i)
        if t < 0:
            return None
        v = self.value(t)
        if v is not None:
            return v
        shape = self.shape(t)
        if shape is None or any(d is None for d in shape) or count(shape) > MAX_VALUES:
            return None
        return Partial.unknown(tuple(shape), self.f.type(t).startswith("FLOAT"))

    def in_shape(self, k: int, i: int) -> PartialShape:
        t = self.input(k, i)
        return None if t < 0 else self.shape(t)

    def option(self, k: int, name: str, default=0):
        return (self.f.options(k) or {}).get(name, default)

    def out_dtype_float(self, k: int) -> bool:
        outs = self.f.outputs[k]
        return bool(outs) and self.f.type(outs[0]).startswith("FLOAT")


# -- values ------------------------------------------------------------------------------------
def _shape_value(sv: ShapeValues, k: int) -> Partial | None:
    shape = sv.in_shape(k, 0)
    if shape is None:
        return None
    return Partial(np.array([d or 0 for d in shape], np.int64),
                   np.array([d is not None for d in shape], bool))


def _rank_value(sv: ShapeValues, k: int) -> Partial | None:
    shape = sv.in_shape(k, 0)
    return None if shape is None else Partial(np.array(len(shape), np.int64),
                                              np.array(True))


def _cast(sv: ShapeValues, k: int) -> Partial | None:
    x = sv.value(sv.input(k, 0))
    if x is None:
        return None
    if sv.out_dtype_float(k):
        return Partial(x.values.astype(np.float64), x.known)
    return Partial(np.trunc(x.values).astype(np.int64), x.known)  # C's conversion


def _pack(sv: ShapeValues, k: int) -> Partial | None:
    parts = [sv.in_value(k, i) for i in range(len(sv.f.inputs[k]))]
    if not parts or any(p is None for p in parts):
        return None
    axis = int(sv.option(k, "axis", 0))
    axis += parts[0].values.ndim + 1 if axis < 0 else 0
    return Partial(np.stack([p.values for p in parts], axis),
                   np.stack([p.known for p in parts], axis))


def _concatenation(sv: ShapeValues, k: int) -> Partial | None:
    if sv.option(k, "fused_activation_function", "NONE") not in ("NONE", None):
        return None
    parts = [sv.in_value(k, i) for i in range(len(sv.f.inputs[k]))]
    if not parts or any(p is None for p in parts):
        return None
    axis = int(sv.option(k, "axis", 0))
    axis += parts[0].values.ndim if axis < 0 else 0
    return Partial(np.concatenate([p.values for p in parts], axis),
                   np.concatenate([p.known for p in parts], axis))


def _gather(sv: ShapeValues, k: int) -> Partial | None:
    x, idx = sv.in_value(k, 0), sv.value(sv.input(k, 1))
    if x is None or idx is None or not idx.full or sv.option(k, "batch_dims", 0):
        return None
    axis = int(sv.option(k, "axis", 0))
    axis += x.values.ndim if axis < 0 else 0
    where = idx.values
    if where.size and not (0 <= where.min() and where.max() < x.values.shape[axis]):
        return None  # LiteRT refuses an index out of range
    return Partial(np.take(x.values, where, axis), np.take(x.known, where, axis))


def _reshaped(sv: ShapeValues, k: int) -> Partial | None:
    """RESHAPE, SQUEEZE, EXPAND_DIMS of a value: the same elements in the output's shape."""
    x = sv.in_value(k, 0)
    shape = sv.shape(sv.f.outputs[k][0])
    if x is None or shape is None or any(d is None for d in shape) \
            or count(shape) != x.values.size:
        return None
    return Partial(x.values.reshape(shape), x.known.reshape(shape))


def _slice_value(sv: ShapeValues, k: int) -> Partial | None:
    x = sv.in_value(k, 0)
    if x is None:
        return None
    dims = slice_dims(sv, k)
    begin = sv.value(sv.input(k, 1))
    if dims is None or any(d is None for d in dims) or begin is None or not begin.full:
        return None
    index = tuple(slice(b, b + d) for b, d in zip(_wrap(begin.ints(), x.values.shape), dims))
    return Partial(x.values[index], x.known[index])


def _wrap(begin: list[int], shape: tuple[int, ...]) -> list[int]:
    return [b + s if b < 0 else b for b, s in zip(begin, shape)]


def _strided_value(sv: ShapeValues, k: int) -> Partial | None:
    x = sv.in_value(k, 0)
    if x is None:
        return None
    plan = strided_plan(sv, k, x.values.shape)
    if plan is None or any(p is None for p in plan):
        return None
    index = tuple(p[0] if p[2] == 0 else _py_slice(*p) for p in plan)
    return Partial(x.values[index], x.known[index])


def _py_slice(start: int, stop: int, stride: int) -> slice:
    """LiteRT's clamped (start, stop, stride) as a Python slice (where -1 is not the last
    element but "before the first")."""
    if stride < 0 and start < 0:
        return slice(0, 0)
    return slice(start, None if stop < 0 else stop, stride)


def _fill(sv: ShapeValues, k: int) -> Partial | None:
    dims, v = sv.value(sv.input(k, 0)), sv.value(sv.input(k, 1))
    if dims is None or v is None or not dims.full or count(dims.ints()) > MAX_VALUES:
        return None
    shape = tuple(dims.ints())
    return Partial(np.full(shape, v.values.reshape(-1)[0]),
                   np.full(shape, bool(v.known.reshape(-1)[0])))


def _reduce(op: Callable) -> Callable:
    def rule(sv: ShapeValues, k: int) -> Partial | None:
        x, axes = sv.in_value(k, 0), sv.value(sv.input(k, 1))
        if x is None or axes is None or not axes.full:
            return None
        rank = x.values.ndim
        ax = tuple(sorted({a + rank if a < 0 else a for a in axes.ints()}))
        keep = bool(sv.option(k, "keep_dims", False))
        return Partial(op(x.values, axis=ax, keepdims=keep),
                       np.all(x.known, axis=ax, keepdims=keep))
    return rule


def _elementwise(op: Callable) -> Callable:
    def rule(sv: ShapeValues, k: int) -> Partial | None:
        if sv.option(k, "fused_activation_function", "NONE") not in ("NONE", None):
            return None
        a, b = sv.in_value(k, 0), sv.in_value(k, 1)
        if a is None or b is None:
            return None
        known = np.logical_and(a.known, b.known)
        with np.errstate(all="ignore"):
            values = op(a.values, b.values)
        if np.issubdtype(values.dtype, np.floating) and not sv.out_dtype_float(k):
            values = np.trunc(values)
        if not sv.out_dtype_float(k):
            values = np.nan_to_num(values).astype(np.int64)
        return Partial(values, known)
    return rule


def _floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return np.floor(a / b)
    if np.any(b == 0):
        raise ZeroDivisionError("FLOOR_DIV by zero")
    return np.floor_divide(a, b)


def _floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind != "f" and b.dtype.kind != "f" and np.any(b == 0):
        raise ZeroDivisionError("FLOOR_MOD by zero")
    return np.mod(a, b)


_EVAL: dict[str, Callable[[ShapeValues, int], "Partial | None"]] = {
    "SHAPE": _shape_value, "RANK": _rank_value, "CAST": _cast, "PACK": _pack,
    "CONCATENATION": _concatenation, "GATHER": _gather, "RESHAPE": _reshaped,
    "SQUEEZE": _reshaped, "EXPAND_DIMS": _reshaped, "SLICE": _slice_value,
    "STRIDED_SLICE": _strided_value, "FILL": _fill,
    "REDUCE_PROD": _reduce(np.prod), "SUM": _reduce(np.sum),
    "ADD": _elementwise(np.add), "SUB": _elementwise(np.subtract),
    "MUL": _elementwise(np.multiply), "MAXIMUM": _elementwise(np.maximum),
    "MINIMUM": _elementwise(np.minimum), "FLOOR_DIV": _elementwise(_floor_div),
    "FLOOR_MOD": _elementwise(_floor_mod),
}
