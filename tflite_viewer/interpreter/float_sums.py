"""Which way an interpreter adds float32 CONV_2D and FULLY_CONNECTED products (and
DEPTHWISE_CONV_2D's taps).

``reference`` adds one float32 product at a time in LiteRT's reference kernels' order
(`float32.ordered_matmul`): their results to the bit, which makes an op-by-op comparison
against LiteRT's reference kernels exact.  In numpy that costs about five times a BLAS
product, since every addition is its own rounding in a fixed order.  ``blas`` takes numpy's
BLAS product: its sums blocked and fused, a float32 rounding or so from the reference per
output -- as LiteRT's own optimized and XNNPACK kernels are, which is what a big model runs
on in practice.

DEPTHWISE_CONV_2D adds its taps one at a time in the reference order under ``reference``,
and in one einsum (numpy's order, which may differ) under ``blas``.

``auto`` (the default) decides by the model: reference sums unless its float32 filters
(the weights those ops multiply by) take `BLAS_FROM_BYTES` or more.  Below that the
reference order costs little in absolute terms (the corpus' widest float model, 63 MB,
runs in reference order); above it, on an LLM's gigabytes of float32 weights, it would
make one decode step three times LiteRT's.  The interpreter says which it took
(`Interpreter.float_sums`), and ``reference`` or ``blas`` force either.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema.schema_generated import BuiltinOperator as Op
from .tensor import FLOAT32

if TYPE_CHECKING:
    from ..model import Model

AUTO, REFERENCE, BLAS = "auto", "reference", "blas"
MODES = (AUTO, REFERENCE, BLAS)
#: float32 filter bytes from which ``auto`` takes BLAS sums (256 MiB)
BLAS_FROM_BYTES = 256 << 20
#: the ops whose float32 products `float32.ordered_matmul` sums, and their filter input
_FILTER_INPUT = {Op.CONV_2D: 1, Op.FULLY_CONNECTED: 1}


def float_filter_bytes(model: "Model") -> int:
    """Bytes of the constant float32 filters of the model's CONV_2D and FULLY_CONNECTED
    ops, each buffer counted once (signatures' subgraphs share their weights)."""
    seen: set[int] = set()
    total = 0
    for sg in model.subgraphs:
        for op in sg.operators:
            slot = _FILTER_INPUT.get(op.builtin_code)
            inputs = op.inputs
            if slot is None or slot >= len(inputs) or not 0 <= inputs[slot] < len(sg.tensors):
                continue
            t = sg.tensors[inputs[slot]]
            if t.type == FLOAT32 and t.buffer not in seen:
                seen.add(t.buffer)
                total += t.buffer_nbytes
    return total


def resolve(mode: str, model: "Model") -> str:
    """``reference`` or ``blas``: the mode itself, or what ``auto`` takes for ``model``."""
    if mode not in MODES:
        raise ValueError(f"float sums must be one of {', '.join(MODES)}, not {mode!r}")
    if mode != AUTO:
        return mode
    # the buffers' sizes come from the verifier's columns: a model whose buffers are all
    # smaller than the threshold together (every classic model) needs no walk of its ops
    if int(model.buffer_sizes.sum()) < BLAS_FROM_BYTES:
        return REFERENCE
    return BLAS if float_filter_bytes(model) >= BLAS_FROM_BYTES else REFERENCE


__all__ = ["AUTO", "BLAS", "BLAS_FROM_BYTES", "MODES", "REFERENCE", "float_filter_bytes",
           "resolve"]
