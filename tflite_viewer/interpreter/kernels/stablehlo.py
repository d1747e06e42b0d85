"""StableHLO ops of LiteRT's builtin resolver: the element-wise ADD, AND, MAXIMUM, MINIMUM,
MULTIPLY and SHIFT_LEFT (same-shape operands, no broadcasting, integers wrap as C's do)."""
from __future__ import annotations

import numpy as np

from .common import BuiltinOperator as Op, define
from .data_ops import types_check

_ELEMENTWISE_TYPES = ("FLOAT16", "FLOAT32", "FLOAT64", "INT8", "INT16", "INT32", "INT64",
                      "UINT8", "UINT16", "UINT32", "UINT64", "BOOL")


def _same_shape_operands(ctx, node):
    """ElementwisePrepare: operands of one shape, the output that shape."""
    a, b = ctx.input(node, 0).shape, ctx.input(node, 1).shape
    if tuple(a) != tuple(b):
        raise ValueError(f"{node.name} operands of shapes {list(a)} and {list(b)} differ "
                         "(StableHLO does not broadcast)")
    return [a]


def _binary(fn):
    def compute(ctx, node):
        a, b = ctx.value(node, 0), ctx.value(node, 1)
        with np.errstate(over="ignore"):
            return fn(a, b).astype(a.dtype, copy=False)
    return compute


def _bool_add(a, b):
    return np.add(a, b) if a.dtype != np.bool_ else np.logical_or(a, b)


for _op, _name, _fn, _types in (
        (Op.STABLEHLO_ADD, "STABLEHLO_ADD", _bool_add, _ELEMENTWISE_TYPES),
        (Op.STABLEHLO_MULTIPLY, "STABLEHLO_MULTIPLY", np.multiply, _ELEMENTWISE_TYPES),
        (Op.STABLEHLO_MAXIMUM, "STABLEHLO_MAXIMUM", np.maximum, _ELEMENTWISE_TYPES),
        (Op.STABLEHLO_MINIMUM, "STABLEHLO_MINIMUM", np.minimum, _ELEMENTWISE_TYPES),
        (Op.STABLEHLO_AND, "STABLEHLO_AND", np.bitwise_and, _ELEMENTWISE_TYPES[3:]),
        (Op.STABLEHLO_SHIFT_LEFT, "STABLEHLO_SHIFT_LEFT", np.left_shift,
         ("INT8", "INT16", "INT32"))):
    define(_op, (1, 1), _binary(_fn), _same_shape_operands, types="any",
           check=types_check(_name, {0: _types}, (0, 1), 0))


# -- STABLEHLO_PAD -------------------------------------------------------------------------
def stablehlo_pad(x: np.ndarray, value, low, high, interior) -> np.ndarray:
    """Interior padding between elements, then edge padding (negative: cropping)."""
    low, high, interior = (list(map(int, v)) for v in (low, high, interior))
    if not len(low) == len(high) == len(interior) == x.ndim:
        raise ValueError(f"padding of {len(low)}/{len(high)}/{len(interior)} dims for rank "
                         f"{x.ndim}")
    if any(i < 0 for i in interior):
        raise ValueError("StableHLO Pad interior padding must be non-negative")
    fill = np.asarray(value).reshape(-1)[0]
    spread = tuple((d - 1) * (i + 1) + 1 if d else 0 for d, i in zip(x.shape, interior))
    inner = np.full(spread, fill, x.dtype)
    inner[tuple(slice(None, None, i + 1) for i in interior)] = x
    shape = tuple(lo + s + hi for lo, s, hi in zip(low, spread, high))
    if any(d < 0 for d in shape):
        raise ValueError(f"StableHLO Pad output shape {list(shape)} is negative")
    out = np.full(shape, fill, x.dtype)
    src = tuple(slice(max(-lo, 0), s - max(-hi, 0)) for lo, s, hi in zip(low, spread, high))
    dst = tuple(slice(max(lo, 0), max(lo, 0) + max(s - max(-lo, 0) - max(-hi, 0), 0))
                for lo, s, hi in zip(low, spread, high))
    out[dst] = inner[src]
    return out


def _pad_options(node):
    return (node.builtin_data.get("edge_padding_low") or [],
            node.builtin_data.get("edge_padding_high") or [],
            node.builtin_data.get("interior_padding") or [])


def _pad_shape(ctx, node):
    low, high, interior = _pad_options(node)
    x = ctx.input(node, 0).shape
    return [tuple(int(lo) + ((d - 1) * (int(i) + 1) + 1 if d else 0) + int(hi)
                  for d, lo, hi, i in zip(x, low, high, interior))]


define(Op.STABLEHLO_PAD, (1, 1),
       lambda ctx, node: stablehlo_pad(ctx.value(node, 0), ctx.value(node, 1),
                                       *_pad_options(node)),
       _pad_shape, types="any", check=types_check("STABLEHLO_PAD", {0: _ELEMENTWISE_TYPES},
                                                  (0, 1), 0))
