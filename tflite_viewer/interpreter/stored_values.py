"""Ops that compute on stored integers, with per-channel or blockwise activations.

LiteRT's kernels for MAXIMUM, MINIMUM, NEG, FLOOR_MOD, REDUCE_MAX, REDUCE_MIN, ARG_MAX,
ARG_MIN, CONCATENATION and the int16 LESS / LESS_EQUAL / GREATER / GREATER_EQUAL never
read a per-channel or blockwise scale: they compare, copy, negate or reduce the stored
integers (a per-channel tensor's per-tensor ``params`` are 0 in LiteRT).  ABS reads the
first channel's scale and zero point.  That is the op's value only where the values it
pairs mean the same thing: the same scale and zero point on the values an output is made
of, all along a reduced axis, on the two sides of a comparison (and zero points of 0
where the op negates or divides stored values).  Then this interpreter computes the model
as LiteRT does, on the stored integers, bit for bit; otherwise LiteRT computes it without
meaning and the model is refused, naming the tensors and their parameters.

A kernel says which pairing its op needs with a `Stored` rule on its declaration
(`accepts.Accepts.stored`); `check_stored` applies it at load (from `accepts.check_accepts`)
when one of the node's quantized tensors is per-channel or blockwise (per-tensor ones keep
the paths they always had).  Parameters are compared value by value: each tensor's scale
and zero point as arrays over the shape the op gives it, collapsed along the axes they do
not vary on (so a per-channel tensor costs its scale count, not its size).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .tensor import INT8, INT16, UINT8

if TYPE_CHECKING:
    from .accepts import Accepts
    from .node import Node
    from .subgraph import Subgraph
    from .tensor import Tensor

#: the whole-byte quantized types whose parameters these rules compare
_QUANTIZED = frozenset({INT8, UINT8, INT16})
_TYPE_NAMES = {INT8: "INT8", UINT8: "UINT8", INT16: "INT16"}


@dataclass(frozen=True)
class Stored:
    """How an op on stored integers pairs its values (see the module docstring).

    ``pairs``: "elementwise" (every input value with the output value it makes, after
    broadcasting), "reduce" (input 0 along the axes of input 1 into output 0), "arg" (input
    0 along the axis of input 1; the output holds indices) or "concat" (each input into its
    slice of output 0).  ``zero``: "any" (equal zero points), "uniform" (each tensor's zero
    points all alike: LiteRT reads the first) or "zero" (all 0: the op negates or divides
    stored values).  ``ratio``: the output's scales may be the input's times one factor
    (ABS rescales by the first channel's ratio).  ``legacy``: the types for which LiteRT
    compares the per-tensor parameters of input and output (0 for a per-channel tensor):
    a per-channel tensor paired with a per-tensor one is refused there.
    """

    pairs: str
    zero: str = "any"
    ratio: bool = False
    legacy: frozenset[str] = frozenset()
    #: what LiteRT's kernel does with the stored integers, for the refusal
    does: str = "computes on the stored integers"


class _Unfit(Exception):
    """Parameters that do not fit the shape the op gives their tensor (or block scales
    that are not constant): nothing to compare."""


@dataclass(frozen=True)
class _Field:
    """A tensor's scale and zero point of every value, as arrays over the op's shape for
    it (rank kept, collapsed to 1 along the axes they do not vary on)."""

    tensor: "Tensor"
    what: str
    scale: np.ndarray
    zero: np.ndarray

    def at(self, index: tuple[int, ...]) -> tuple[float, int]:
        pick = tuple(i if n > 1 else 0 for i, n in zip(index, self.scale.shape))
        zpick = tuple(i if n > 1 else 0 for i, n in zip(index, self.zero.shape))
        return float(self.scale[pick]), int(self.zero[zpick])

    def aligned(self, rank: int) -> "_Field":
        """The field with size-1 axes in front up to ``rank`` (numpy broadcasting)."""
        lead = (1,) * (rank - self.scale.ndim)
        return _Field(self.tensor, self.what, self.scale.reshape(lead + self.scale.shape),
                      self.zero.reshape(lead + self.zero.shape))


def _collapsed(a: np.ndarray) -> np.ndarray:
    """``a`` with every axis along which it does not vary reduced to size 1."""
    for axis in range(a.ndim):
        if a.shape[axis] > 1:
            first = a.take([0], axis=axis)
            if np.array_equal(a, np.broadcast_to(first, a.shape)):
                a = first
    return a


def _field(t: "Tensor", shape: tuple[int, ...], what: str) -> _Field:
    """The `_Field` of ``t`` over ``shape``: a tensor without parameters holds plain
    integers (scale 1, zero point 0)."""
    q = t.quantization
    rank = len(shape)
    ones = (1,) * rank
    if q is None or (not q.has_scale and q.blockwise is None):
        return _Field(t, what, np.ones(ones), np.zeros(ones, np.int64))
    b = q.blockwise
    if b is not None:
        return _blockwise_field(t, shape, what, b.block_size)
    scale = np.asarray(q.scale, np.float64).reshape(-1)
    zero = np.asarray(q.zero_point, np.int64).reshape(-1) if q.zero_point.size \
        else np.zeros(scale.size, np.int64)
    if scale.size == 1:
        return _Field(t, what, scale.reshape(ones), zero[:1].reshape(ones))
    axis = q.effective_dimension(tuple(shape))
    if axis is None or zero.size != scale.size:
        raise _Unfit(f"{what} (tensor {t.index} {t.name!r}): its {scale.size} per-channel "
                     f"scales do not fit the shape {list(shape)} the op gives it")
    dims = [1] * rank
    dims[axis] = scale.size
    return _Field(t, what, _collapsed(scale.reshape(dims)), _collapsed(zero.reshape(dims)))


def _blockwise_field(t: "Tensor", shape: tuple[int, ...], what: str, block: int) -> _Field:
    tensors = t.model_tensor.block_tensors()
    scales = tensors[0].values() if tensors else None
    zeros = tensors[1].values() if tensors and tensors[1] is not None else None
    if not shape or block <= 0 or shape[-1] % block or scales is None:
        raise _Unfit(f"{what} (tensor {t.index} {t.name!r}): its blockwise parameters do "
                     f"not fit the shape {list(shape)} the op gives it, or are not constant")
    blocks = tuple(shape[:-1]) + (shape[-1] // block,)
    if np.asarray(scales).size != int(np.prod(blocks, dtype=np.int64)):
        raise _Unfit(f"{what} (tensor {t.index} {t.name!r}): {np.asarray(scales).size} block "
                     f"scales for the shape {list(shape)} in blocks of {block}")
    scale = _collapsed(np.asarray(scales, np.float64).reshape(blocks))
    zero = _collapsed(np.zeros(blocks, np.int64) if zeros is None
                      else np.asarray(zeros, np.int64).reshape(blocks))
    # (per value: each block's entry repeated along the last axis, unless it is constant)
    if scale.shape[-1] > 1:
        scale = np.repeat(scale, block, axis=-1)
    if zero.shape[-1] > 1:
        zero = np.repeat(zero, block, axis=-1)
    return _Field(t, what, scale, zero)


def _name(f: _Field) -> str:
    q = f.tensor.quantization
    form = "no parameters" if q is None else q.describe(f.tensor.shape)
    return f"{f.what} (tensor {f.tensor.index} {f.tensor.name!r}, {form})"


def _params(f: _Field, index: tuple[int, ...]) -> str:
    s, z = f.at(index)
    return f"scale {s:g}, zero point {z}"


def _first_difference(a: _Field, b: _Field, ratio: bool = False) -> tuple[int, ...] | None:
    """The first index (of their broadcast) where two fields of one rank differ, or None;
    with ``ratio``, where a's scale over b's departs from the first such ratio."""
    shape = np.broadcast_shapes(a.scale.shape, a.zero.shape, b.scale.shape, b.zero.shape)
    if ratio:
        r = np.broadcast_to(a.scale / b.scale, shape)
        off = ~np.isclose(r, r.reshape(-1)[0], rtol=1e-6, atol=0.0)
    else:
        off = np.broadcast_to(a.scale, shape) != np.broadcast_to(b.scale, shape)
        off = off | (np.broadcast_to(a.zero, shape) != np.broadcast_to(b.zero, shape))
    hits = np.argwhere(off)
    return tuple(int(i) for i in hits[0]) if hits.size else None


def _without_meaning(node: "Node", rule: Stored, why: str) -> str:
    return (f"{node.name} v{node.version}: {why}: LiteRT's kernel {rule.does}, which has no "
            "meaning there (LiteRT 2.3.0 computes this model without meaning), so it is "
            "refused here")


def _zero_points(node: "Node", rule: Stored, fields: list[_Field]) -> str | None:
    """Why the fields' zero points break ``rule.zero``, or None."""
    for f in fields:
        if rule.zero == "zero" and np.any(f.zero != 0):
            index = tuple(int(i) for i in np.argwhere(np.broadcast_to(
                f.zero != 0, f.zero.shape))[0])
            return _without_meaning(node, rule, f"{_name(f)} has a zero point other than "
                                    f"0 ({_params(f, index)} at {list(index)})")
        if rule.zero == "uniform" and f.zero.size > 1:
            index = tuple(int(i) for i in np.argwhere(f.zero != f.zero.reshape(-1)[0])[0])
            return _without_meaning(node, rule, f"{_name(f)} has zero points other than "
                                    f"its first channel's ({_params(f, index)} at "
                                    f"{list(index)})")
    return None


def _pairwise(node: "Node", rule: Stored, fields: list[_Field], ratio: bool = False
              ) -> str | None:
    """Why the fields (one rank) do not all agree value by value, or None."""
    for other in fields[1:]:
        index = _first_difference(fields[0], other, ratio)
        if index is not None:
            how = "scales in a ratio other than their first channels'" if ratio else \
                "different parameters on the values the op pairs"
            return _without_meaning(node, rule, f"{_name(fields[0])} and {_name(other)} have "
                                    f"{how} ({_params(fields[0], index)} against "
                                    f"{_params(other, index)}, at {list(index)} of the "
                                    "values it pairs)")
    return None


def _legacy(t: "Tensor") -> tuple[float, int]:
    """LiteRT's per-tensor ``params`` of a tensor: its scale and zero point when it has
    exactly one, else (0, 0)."""
    q = t.quantization
    if q is None or q.details is not None or q.scale.size != 1:
        return 0.0, 0
    return float(q.scale[0]), int(q.zero_point[0]) if q.zero_point.size else 0


def _check_legacy(node: "Node", rule: Stored, pairs: list[tuple[_Field, _Field]]) -> str | None:
    for a, b in pairs:
        if _TYPE_NAMES.get(a.tensor.type) in rule.legacy and _legacy(a.tensor) != _legacy(b.tensor):
            return (f"{node.name} v{node.version}: {a.what} (tensor {a.tensor.index}) and "
                    f"{b.what} (tensor {b.tensor.index}) have different per-tensor parameters "
                    f"as LiteRT reads them ({_legacy(a.tensor)} and {_legacy(b.tensor)}: a "
                    "per-channel or blockwise tensor's are 0); LiteRT 2.3.0 refuses or "
                    "rescales by them, without meaning, and it is refused here")
    return None


def _constant(ctx: "Subgraph", node: "Node", pos: int) -> list[int] | None:
    t = ctx.tensors[node.inputs[pos]] if len(node.inputs) > pos and node.inputs[pos] >= 0 \
        else None
    if t is None or t.data is None:
        return None
    return [int(v) for v in np.asarray(t.data).reshape(-1)]


def _quantized(ctx: "Subgraph", indices) -> list[tuple[int, "Tensor"]]:
    return [(k, ctx.tensors[i]) for k, i in enumerate(indices)
            if i >= 0 and ctx.tensors[i].type in _QUANTIZED]


def _elementwise(ctx, node, rule: Stored) -> str | None:
    ins = _quantized(ctx, node.inputs)
    shape = tuple(np.broadcast_shapes(*(tuple(t.shape) for _, t in ins)))
    fields = [_field(t, tuple(t.shape), f"input {k}").aligned(len(shape)) for k, t in ins]
    outs = _quantized(ctx, node.outputs[:1])
    out = [_field(t, shape, "output 0") for _, t in outs]
    return (_zero_points(node, rule, fields + out)
            or _pairwise(node, rule, fields)
            or (_pairwise(node, rule, fields[:1] + out, rule.ratio) if out else None))


def _axes(ctx, node, rank: int) -> tuple[int, ...] | None:
    axes = _constant(ctx, node, 1)
    if axes is None or any(not -rank <= a < rank for a in axes):
        return None
    return tuple(sorted({a % rank for a in axes}))


def _along(node, rule: Stored, f: _Field, axes: tuple[int, ...]) -> str | None:
    """Why ``f`` varies along one of ``axes`` (the values an op reduces together)."""
    for a in axes:
        if f.scale.shape[a] > 1 or f.zero.shape[a] > 1:
            first = (0,) * f.scale.ndim
            other = tuple(1 if k == a else 0 for k in range(f.scale.ndim))
            return _without_meaning(node, rule, f"{_name(f)} has different parameters along "
                                    f"axis {a}, whose values the op reduces together "
                                    f"({_params(f, first)} at {list(first)} against "
                                    f"{_params(f, other)} at {list(other)})")
    return None


def _reduce(ctx, node, rule: Stored) -> str | None:
    x = ctx.tensors[node.inputs[0]]
    shape = tuple(x.shape)
    axes = _axes(ctx, node, len(shape))
    if axes is None:
        return (f"{node.name} v{node.version}: per-channel or blockwise parameters with "
                "axes known only at run time are not implemented here")
    f = _field(x, shape, "input 0")
    why = _along(node, rule, f, axes)
    if why or rule.pairs == "arg":
        return why
    keep = bool(node.builtin_data.get("keep_dims"))
    kept = [a for a in range(len(shape)) if a not in axes]
    out_shape = tuple(1 if a in axes else shape[a] for a in range(len(shape))) if keep \
        else tuple(shape[a] for a in kept)
    if not keep:
        f = _Field(x, "input 0", f.scale.reshape([f.scale.shape[a] for a in kept]),
                   f.zero.reshape([f.zero.shape[a] for a in kept]))
    o = ctx.tensors[node.outputs[0]]
    out = _field(o, out_shape, "output 0")
    return _check_legacy(node, rule, [(f, out)]) or _pairwise(node, rule, [f, out])


def _concat(ctx, node, rule: Stored) -> str | None:
    ins = [(k, ctx.tensors[i]) for k, i in enumerate(node.inputs)]
    rank = len(ins[0][1].shape)
    axis = int(node.builtin_data.get("axis") or 0)
    axis = axis + rank if axis < 0 else axis
    shape = list(ins[0][1].shape)
    shape[axis] = sum(int(t.shape[axis]) for _, t in ins)
    out = _field(ctx.tensors[node.outputs[0]], tuple(shape), "output 0")
    start = 0
    for k, t in ins:
        f = _field(t, tuple(t.shape), f"input {k}")
        n = int(t.shape[axis])
        part = out
        if out.scale.shape[axis] > 1 or out.zero.shape[axis] > 1:
            part = _Field(out.tensor, out.what, _slice(out.scale, axis, start, n),
                          _slice(out.zero, axis, start, n))
        start += n
        why = _check_legacy(node, rule, [(f, out)]) or _pairwise(node, rule, [f, part])
        if why:
            return why
    return None


def _slice(a: np.ndarray, axis: int, start: int, n: int) -> np.ndarray:
    if a.shape[axis] == 1:
        return a
    return np.take(a, range(start, start + n), axis=axis)


_PAIRS = {"elementwise": _elementwise, "reduce": _reduce, "arg": _reduce, "concat": _concat}


def check_stored(ctx: "Subgraph", node: "Node", rule: Stored | None) -> str | None:
    """Why a node whose kernel computes on stored integers (``rule``) would compute its
    per-channel or blockwise values without meaning, or None (see the module docstring)."""
    if rule is None:
        return None
    tensors = [ctx.tensors[i] for i in list(node.inputs) + list(node.outputs) if i >= 0]
    if not any(t.type in _QUANTIZED and t.quantization is not None
               and t.quantization.form in ("per-channel", "blockwise") for t in tensors):
        return None
    if any(t.shape is None for t in tensors if t.type in _QUANTIZED):
        return (f"{node.name} v{node.version}: per-channel or blockwise parameters on a "
                "tensor whose shape is known only at run time are not implemented here")
    try:
        return _PAIRS[rule.pairs](ctx, node, rule)
    except _Unfit as exc:
        return f"{node.name} v{node.version}: {exc}; not implemented here"


def stored_accepts(types: str, rule: Stored, blockwise: bool = True, **more) -> "Accepts":
    """The declaration of a kernel on stored integers: `accepts.BASIC` on every input and
    output, and ``types`` (TensorType names) per channel on any axis (and blockwise)
    where ``rule`` pairs their values; ``more`` as `accepts.accepts` takes it."""
    from .accepts import BASIC, accepts
    slot = f"{BASIC} | {types}: per-channel:*{' blockwise' if blockwise else ''}"
    return accepts(default=slot, outputs=slot, stored=rule, **more)
