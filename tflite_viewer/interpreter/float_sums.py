"""Which way an interpreter adds float32 CONV_2D and FULLY_CONNECTED products (and
DEPTHWISE_CONV_2D's taps).

``blas`` takes numpy's BLAS product: its sums blocked and fused, a float32 rounding or so
from LiteRT's reference kernels per output, as LiteRT's own default path (XNNPACK and its
optimized kernels) is.  DEPTHWISE_CONV_2D adds its taps in numpy's order then.

``reference`` adds one float32 product at a time in LiteRT's reference kernels' order
(`float32.ordered_matmul`, DEPTHWISE_CONV_2D tap by tap): their results to the bit, which
makes an op-by-op comparison against LiteRT's reference kernels exact.  In numpy that
costs several times a BLAS product, since every addition is its own rounding in a fixed
order.

``auto`` (the default of `Interpreter`, ``run``, ``quant`` and the window) computes with
BLAS products; a cross-check against LiteRT's reference kernels
(`crosscheck.compare_steps`) switches an ``auto`` interpreter to the reference order for
its comparison, so that every compared op is REF's bits.  ``blas`` stays BLAS even there,
to show how far BLAS sums are from REF.  The interpreter keeps what was asked
(`Interpreter.float_sums_asked`) and what it computes with now (`Interpreter.float_sums`).
"""
from __future__ import annotations

AUTO, REFERENCE, BLAS = "auto", "reference", "blas"
MODES = (AUTO, REFERENCE, BLAS)


def resolve(mode: str) -> str:
    """``reference`` or ``blas``: what an interpreter asked for ``mode`` computes with."""
    if mode not in MODES:
        raise ValueError(f"float sums must be one of {', '.join(MODES)}, not {mode!r}")
    return REFERENCE if mode == REFERENCE else BLAS


def reference_for_ref_check(asked: str) -> bool:
    """Whether an interpreter asked for ``asked`` compares against LiteRT's reference
    kernels in their order: ``auto`` and ``reference`` do, an explicit ``blas`` does not."""
    return asked != BLAS


__all__ = ["AUTO", "BLAS", "MODES", "REFERENCE", "reference_for_ref_check",
           "resolve"]
