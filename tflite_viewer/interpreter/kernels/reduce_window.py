"""REDUCE_WINDOW (deprecated TFLite form: window shape, strides and dilations as INT64
tensors, the reduction in its options) and STABLEHLO_REDUCE_WINDOW (base and window
dilations, padding that crops when negative, the reduction a one-op body subgraph).

As LiteRT: the input is dilated with the init value between elements, padded (or cropped)
with the init value, then each window is folded into the init value element by element in
row-major window order, so float sums add in LiteRT's order.
"""
from __future__ import annotations

import itertools

import numpy as np

from .common import BuiltinOperator as Op, Kernel, as_int_list, option, register
from .stablehlo import stablehlo_pad

_TYPES = ("BOOL", "INT8", "INT16", "INT32", "INT64", "UINT8", "FLOAT32", "FLOAT64")
_FUNCTIONS = {"ADD": np.add, "MUL": np.multiply, "MINIMUM": np.minimum,
              "MAXIMUM": np.maximum, "ALL": np.logical_and, "ANY": np.logical_or}
#: the body op of STABLEHLO_REDUCE_WINDOW -> the reduction
_BODY_OPS = {"ADD": "ADD", "STABLEHLO_ADD": "ADD", "MUL": "MUL", "STABLEHLO_MULTIPLY": "MUL",
             "MAXIMUM": "MAXIMUM", "STABLEHLO_MAXIMUM": "MAXIMUM", "MINIMUM": "MINIMUM",
             "STABLEHLO_MINIMUM": "MINIMUM", "LOGICAL_AND": "ALL", "STABLEHLO_AND": "ALL",
             "LOGICAL_OR": "ANY", "STABLEHLO_OR": "ANY"}


def window_output_shape(shape, window, strides, dilations) -> tuple[int, ...]:
    out = []
    for n, w, s, d in zip(shape, window, strides, dilations):
        span = (w - 1) * d + 1
        out.append(0 if n < span else (n - span) // s + 1)
    return tuple(out)


def reduce_window(x: np.ndarray, init, function: str, window, strides, window_dilations,
                  base_dilations=None, padding=None) -> np.ndarray:
    rank = x.ndim
    window, strides, wdil = (list(map(int, v)) for v in (window, strides, window_dilations))
    if not len(window) == len(strides) == len(wdil) == rank:
        raise ValueError(f"window parameters of {len(window)}/{len(strides)}/{len(wdil)} "
                         f"dims for rank {rank}")
    if any(v <= 0 for v in window + strides + wdil):
        raise ValueError("window dimensions, strides and dilations must be positive")
    fill = np.asarray(init).reshape(-1)[0]
    if base_dilations is not None or padding is not None:
        bdil = list(map(int, base_dilations)) if base_dilations is not None else [1] * rank
        pad = list(map(int, padding)) if padding is not None else [0] * (2 * rank)
        if any(v <= 0 for v in bdil) or len(pad) != 2 * rank:
            raise ValueError("base dilations must be positive, padding 2 values per dim")
        x = stablehlo_pad(x, fill, pad[0::2], pad[1::2], [d - 1 for d in bdil])
    shape = window_output_shape(x.shape, window, strides, wdil)
    fn = _FUNCTIONS[function]
    out = np.full(shape, fill, x.dtype)
    if 0 in shape:
        return out
    for offset in itertools.product(*(range(w) for w in window)):
        sl = tuple(slice(o * d, o * d + (n - 1) * s + 1, s)
                   for o, d, n, s in zip(offset, wdil, shape, strides))
        with np.errstate(over="ignore"):
            out = fn(out, x[sl]).astype(x.dtype, copy=False)
    return out


def _same_types(ctx, node, name):
    x, init, o = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
    if x.type_name not in _TYPES:
        return f"{name} v{node.version} with {x.type_name} input: LiteRT takes {', '.join(_TYPES)}"
    if init.type != x.type or o.type != x.type:
        return f"{name} v{node.version}: init value and output must be the input's type"
    return None


@register(Op.REDUCE_WINDOW, versions=(1, 1))
class ReduceWindow(Kernel):
    """Inputs: x, init value, window shape, strides, window dilations (INT64 [rank])."""

    types = "any"
    dtypes = _TYPES

    def check(self, ctx, node):
        if str(option(node, "reduce_function", "UNSUPPORTED")) not in _FUNCTIONS:
            return f"REDUCE_WINDOW v{node.version} with reduce_function " \
                   f"{option(node, 'reduce_function', 'UNSUPPORTED')}"
        return _same_types(ctx, node, "REDUCE_WINDOW")

    def invoke(self, ctx, node):
        ctx.set_output(ctx.output(node, 0), reduce_window(
            ctx.value(node, 0), ctx.value(node, 1), str(option(node, "reduce_function")),
            as_int_list(ctx.value(node, 2)), as_int_list(ctx.value(node, 3)),
            as_int_list(ctx.value(node, 4))))


def _body_function(ctx, node) -> str | None:
    index = int(option(node, "body_subgraph_index", -1))
    subgraphs = ctx.interpreter.model.subgraphs
    if not 0 <= index < len(subgraphs):
        return None
    ops = subgraphs[index].operators
    if len(ops) != 1:
        return None
    return _BODY_OPS.get(ops[0].opcode.builtin_name)


@register(Op.STABLEHLO_REDUCE_WINDOW, versions=(1, 1))
class StablehloReduceWindow(Kernel):
    """Inputs: x, init value; options: window dimensions, strides, base and window
    dilations, padding (low, high per dim), and a body subgraph of one reduction op."""

    types = "any"
    dtypes = _TYPES

    def check(self, ctx, node):
        if _body_function(ctx, node) is None:
            return (f"STABLEHLO_REDUCE_WINDOW v{node.version}: the body subgraph must hold one "
                    "ADD, MUL, MAXIMUM, MINIMUM, AND or OR op (as LiteRT requires)")
        return _same_types(ctx, node, "STABLEHLO_REDUCE_WINDOW")

    def invoke(self, ctx, node):
        d = node.builtin_data
        x = ctx.value(node, 0)
        ones = [1] * x.ndim
        ctx.set_output(ctx.output(node, 0), reduce_window(
            x, ctx.value(node, 1), _body_function(ctx, node), d.get("window_dimensions") or ones,
            d.get("window_strides") or ones, d.get("window_dilations") or ones,
            d.get("base_dilations") or ones, d.get("padding") or [0] * (2 * x.ndim)))
