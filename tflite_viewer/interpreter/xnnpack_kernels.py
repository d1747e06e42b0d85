"""The ``xnnpack`` kernel set's float paths: which ops of an XNNPACK partition compute here
as XNNPACK does, and how (`kernel_sets`).

A kernel built with `kernels.common.define` asks `path` at prepare: a node XNNPACK takes
(`kernel_sets.xnnpack_partition`) whose op has an XNNPACK path here gets a function that
replaces its float compute; every other node keeps its kernel (LiteRT's builtin one, the
fallback outside the partitions).  FULLY_CONNECTED and BATCH_MATMUL have paths of their
own in kernels/matmul.py (`xnnpack_gemm`).

What an op of a partition computes here, by kind (`coverage`):

* ``reproduced``: XNNPACK's microkernel, operation by operation (`xnnpack_float`);
* ``exact``: XNNPACK and numpy give the same bits (data movement; IEEE add, subtract,
  multiply and divide, whose subnormal results XNNPACK flushes to zero, as here);
* anything else XNNPACK takes runs LiteRT's builtin kernel here, and its results may
  differ from XNNPACK's: `unreproduced` lists those ops of a model.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import xnnpack_float as xf
from .kernel_sets import xnnpack_partition

Path = Callable[[Any, Any], np.ndarray]

#: ops of a partition whose XNNPACK bits are numpy's: values moved, not computed (a
#: DEQUANTIZE the delegate takes is one LiteRT's kernel unpacks ahead of time)
EXACT = frozenset({
    "RESHAPE", "TRANSPOSE", "SLICE", "STRIDED_SLICE", "CONCATENATION", "SPLIT", "PAD",
    "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "DEQUANTIZE", "VAR_HANDLE", "READ_VARIABLE",
    "ASSIGN_VARIABLE"})
#: IEEE operations rounded once, as numpy's, whose subnormal results XNNPACK flushes to
#: zero
_FLUSHED = frozenset({"ADD", "SUB", "MUL", "DIV"})
#: ops whose XNNPACK path is in kernels/matmul.py
GEMMS = frozenset({"FULLY_CONNECTED", "BATCH_MATMUL"})


def _float32_in(ctx, node) -> bool:
    x = ctx.input(node, 0)
    return x is not None and x.dtype == np.float32 and ctx.output(node, 0).dtype == np.float32


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[Any, Any], Path | None]:
    return lambda ctx, node: (lambda c, n: fn(c.value(n, 0)))


def _gelu(ctx, node) -> Path:
    approximate = bool(node.builtin_data.get("approximate", False))
    return lambda c, n: xf.gelu(c.value(n, 0), approximate)


def _softmax(ctx, node) -> Path | None:
    if float(node.builtin_data.get("beta", 1.0)) != 1.0:
        return None  # (the delegate takes beta 1 only)
    return lambda c, n: xf.softmax(c.value(n, 0))


def trailing_reduction(shape, axes) -> int | None:
    """How many values each output adds when the reduced axes, once size-1 dimensions are
    dropped and alike neighbours merged (XNNPACK's normalization of a reduction), form
    one block at the end: the contiguous reduction XNNPACK runs with one rsum call per
    output. None for any other pattern (XNNPACK's discontiguous kernels, not reproduced)."""
    rank = len(shape)
    reduced = {a + rank if a < 0 else a for a in axes}
    dims = [(d, i in reduced) for i, d in enumerate(shape) if d != 1]
    if not dims or not dims[-1][1]:
        return None
    kept = [k for k, (_, r) in enumerate(dims) if not r]
    tail = kept[-1] + 1 if kept else 0
    if any(r for _, r in dims[:tail]):
        return None  # a reduced block before a kept one
    count = 1
    for d, _ in dims[tail:]:
        count *= d
    return count


def _squared_input(ctx, node) -> int | None:
    """The tensor x when the reduced input is MUL(x, x) of the same partition (no fused
    activation): XNNPACK rewrites the pair into one reduction of squares."""
    t = node.inputs[0]
    part = xnnpack_partition(ctx, node)
    for other in ctx.nodes:
        if t in other.outputs:
            if (other.name == "MUL" and len(other.inputs) == 2
                    and other.inputs[0] == other.inputs[1]
                    and other.builtin_data.get("fused_activation_function", "NONE")
                    in ("NONE", 0, None)
                    and xnnpack_partition(ctx, other) == part):
                return other.inputs[0]
            return None
    return None


def _reduction(mean: bool) -> Callable[[Any, Any], Path | None]:
    """MEAN or SUM over a trailing block of axes (rsum, or rsum2 on a MUL(x, x) input)."""
    def make(ctx, node) -> Path | None:
        x = ctx.input(node, 0)
        axes = ctx.known_value(node, 1)
        if axes is None or x.shape is None:
            return None
        count = trailing_reduction(x.shape, [int(a) for a in np.ravel(axes)])
        if count is None:
            return None
        out_shape = ctx.output(node, 0).shape
        square = _squared_input(ctx, node)

        def run(c, n) -> np.ndarray:
            src = c.tensors[square].data if square is not None else c.value(n, 0)
            rows = np.asarray(src, np.float32).reshape(-1, count)
            if mean:
                out = xf.mean_last(rows, count, square=square is not None)
            else:
                out = xf.flush(xf.row_sum(xf.flush(rows), square=square is not None))
            return out.reshape(out_shape)
        return run
    return make


#: op name -> (ctx, node) -> the node's float path (None: keep the kernel's compute)
PATHS: dict[str, Callable[[Any, Any], Path | None]] = {
    "SIN": _unary(lambda x: xf.sin_cos(x, False)),
    "COS": _unary(lambda x: xf.sin_cos(x, True)),
    "LOGISTIC": _unary(xf.sigmoid), "TANH": _unary(xf.tanh), "RSQRT": _unary(xf.rsqrt),
    "GELU": _gelu, "SOFTMAX": _softmax, "MEAN": _reduction(True), "SUM": _reduction(False),
}


def path(ctx, node) -> Path | str | None:
    """What a `define`d kernel computes for this node under the xnnpack set: an XNNPACK
    path (a function of (ctx, node) returning the output), ``"flush"`` (its own compute,
    subnormal results then flushed to zero), or None (its own compute)."""
    if xnnpack_partition(ctx, node) is None or not _float32_in(ctx, node):
        return None
    make = PATHS.get(node.name)
    if make is not None:
        return make(ctx, node)
    return "flush" if node.name in _FLUSHED else None


def coverage(name: str) -> str:
    """How an op XNNPACK takes is computed by this kernel set: ``reproduced``, ``exact``,
    ``decomposition`` (a STABLEHLO_COMPOSITE the delegate lowers itself, the
    odml.scaled_dot_product_attention: computed by its decomposition's ops, each of a
    partition of its own subgraph; on the decoders checked the delegate's lowering — the
    query scaled, BATCH_MATMUL, the mask added, SOFTMAX, BATCH_MATMUL — gives the same
    bits) or ``builtin`` (LiteRT's builtin kernel here, maybe not XNNPACK's bits)."""
    if name in PATHS or name in GEMMS:
        return "reproduced"
    if name in EXACT or name in _FLUSHED:
        return "exact"
    if name == "STABLEHLO_COMPOSITE":
        return "decomposition"
    return "builtin"


def _computed_as_builtin(node, name: str) -> bool:
    """Whether a node XNNPACK takes runs the builtin kernel here: its op has no path, or,
    once prepared, its path did not apply (a reduction over other axes, a float
    FULLY_CONNECTED of another form ...)."""
    kind = coverage(name)
    if kind != "reproduced":
        return kind == "builtin"
    data = node.user_data if node is not None else None
    if not isinstance(data, dict) or "xnn" not in data:
        return False  # not prepared yet: its op has a path
    return not data["xnn"]


def unreproduced(interpreter) -> list[tuple[int, int, str]]:
    """(subgraph, op, name) of every operator XNNPACK takes that this kernel set computes
    as LiteRT's builtin kernel (empty under another set)."""
    taken = interpreter.xnnpack
    if taken is None:
        return []
    out = []
    for s, ops in taken.partition_of.items():
        sg = interpreter.model.subgraphs[s]
        nodes = interpreter.subgraphs[s].nodes
        for k in sorted(ops):
            name = sg.operators[k].name
            if _computed_as_builtin(nodes[k] if k < len(nodes) else None, name):
                out.append((s, k, name))
    return out


__all__ = ["EXACT", "GEMMS", "PATHS", "coverage", "path", "trailing_reduction",
           "unreproduced"]
