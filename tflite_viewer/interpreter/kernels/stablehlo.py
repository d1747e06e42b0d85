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
