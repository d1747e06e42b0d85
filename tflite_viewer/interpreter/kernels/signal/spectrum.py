"""SignalWindow and SignalEnergy: the int16 ops on either side of an audio front end's FFT.

- Window multiplies each frame by int16 weights and shifts right (an arithmetic shift of
  the int32 product), saturating to int16.
- Energy turns int16 (real, imag) pairs into uint32 power ``re*re + im*im`` for the bins
  in [start_index, end_index).  The product sum is an int32 in TFLM (two -32768 squared
  overflow it) stored as a uint32: the value modulo 2**32.  Bins outside the range are
  zero, as TensorFlow's kernel of the op defines them (TFLM does not write them: they hold
  whatever its arena held).
"""
from __future__ import annotations

import numpy as np

from ...registration import register
from ...tensor import INT16, UINT32
from .common import OptionError, SignalKernel, int_option, require


def window(x: np.ndarray, weights: np.ndarray, shift: int) -> np.ndarray:
    """Frames of ``len(weights)`` samples (x flattened) times the weights, >> shift, clamped."""
    frames = x.reshape(-1, weights.size).astype(np.int32)
    raw = (frames * weights.astype(np.int32)) >> shift
    return np.clip(raw, -32768, 32767).astype(np.int16).reshape(x.shape)


def energy(spectrum: np.ndarray, start: int, end: int) -> np.ndarray:
    """The power of bins [start, end) of the interleaved int16 spectrum, zero elsewhere."""
    pairs = spectrum.reshape(-1, 2)
    power = pairs[start:end].astype(np.int64) ** 2
    out = np.zeros(pairs.shape[0], np.uint32)
    out[start:end] = (power[:, 0] + power[:, 1]) & 0xFFFFFFFF
    return out


@register("SignalWindow", versions=(1, 1))
class SignalWindow(SignalKernel):
    """Weight each frame (TFLM's Register_WINDOW)."""

    inputs = (INT16, INT16)
    outputs = (INT16,)

    def parse(self, opts, node):
        shift = int_option(opts, "shift", node)
        if not 0 <= shift < 32:
            raise OptionError(f"{node.name}: option 'shift' = {shift}, must be in 0..31 "
                              "(a shift of an int32)")
        return {"shift": shift}

    def prepare(self, ctx, node):
        x, w = ctx.input(node, 0).shape, ctx.input(node, 1).shape
        require(len(x) >= 1 and len(w) == 1, f"{node.name}: input {list(x)} must have a "
                f"dimension and weights {list(w)} must be 1-D")
        size = int(np.prod(x, dtype=np.int64))
        require(w[0] > 0 and size % w[0] == 0, f"{node.name}: {size} input samples are not "
                f"frames of {w[0]} weights")
        ctx.resize(ctx.output(node, 0), x)

    def invoke(self, ctx, node):
        out = window(ctx.value(node, 0), ctx.value(node, 1), node.user_data["params"]["shift"])
        ctx.set_output(ctx.output(node, 0), out)


@register("SignalEnergy", versions=(1, 1))
class SignalEnergy(SignalKernel):
    """Power of the spectrum's bins (TFLM's Register_ENERGY)."""

    inputs = (INT16,)
    outputs = (UINT32,)

    def parse(self, opts, node):
        start = int_option(opts, "start_index", node, minimum=0)
        end = int_option(opts, "end_index", node, minimum=0)
        return {"start_index": start, "end_index": end}

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        p = node.user_data["params"]
        require(len(x) == 1 and x[0] % 2 == 0, f"{node.name}: the input must be 1-D "
                f"(real, imag) pairs, got {list(x)}")
        bins = x[0] // 2
        require(p["start_index"] <= p["end_index"] <= bins,
                f"{node.name}: bins [{p['start_index']}, {p['end_index']}) are not within "
                f"the {bins} bins of the input")
        ctx.resize(ctx.output(node, 0), (bins,))

    def invoke(self, ctx, node):
        p = node.user_data["params"]
        out = energy(ctx.value(node, 0), p["start_index"], p["end_index"])
        ctx.set_output(ctx.output(node, 0), out)
