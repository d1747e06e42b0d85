"""SignalRfft, SignalIrfft and SignalFftAutoScale: TFLM's real FFTs and their input scaling.

The transforms are KissFFT's, in the build the "T" option names (int16, int32, float32; see
kissfft.py), frame by frame along the last axis:

- Rfft zero-pads each frame of ``input_length <= fft_length`` samples to ``fft_length`` and
  writes fft_length/2 + 1 bins as interleaved (real, imag) pairs of the same type.
- Irfft reads fft_length/2 + 1 interleaved bins per frame and writes fft_length samples.
  The fixed-point builds return KissFFT's output as it is (scaled down by its per-stage
  divisions); the float build divides by fft_length, as TFLM's wrapper does.
- FftAutoScale shifts an int16 frame left by as many bits as its largest magnitude allows
  and outputs that shift, which the filter bank's square root later undoes.
"""
from __future__ import annotations

import numpy as np

from ...registration import register
from ...tensor import FLOAT32, INT16, INT32
from .common import OptionError, SignalKernel, int_option, require, type_option
from . import kissfft


def rfft(x: np.ndarray, fft_length: int) -> np.ndarray:
    """TFLM's SignalRfft of the frames on the last axis of ``x`` (int16, int32, float32)."""
    kind = x.dtype.name
    pad = fft_length - x.shape[-1]
    if pad < 0:
        raise ValueError(f"frames of {x.shape[-1]} samples are longer than fft_length "
                         f"{fft_length}")
    if pad:
        x = np.concatenate([x, np.zeros(x.shape[:-1] + (pad,), x.dtype)], axis=-1)
    return kissfft.rfft(x, fft_length, kind)


def irfft(spectrum: np.ndarray, fft_length: int) -> np.ndarray:
    """TFLM's SignalIrfft of the interleaved spectra on the last axis."""
    kind = spectrum.dtype.name
    out = kissfft.irfft(spectrum, fft_length, kind)
    if kind == "float32":
        out = out / np.float32(fft_length)
    return out


def most_significant_bit(x: np.ndarray) -> np.ndarray:
    """TFLM's MostSignificantBit32 (gcc build): the bit length of a uint32, and 32 for 0.

    frexp's exponent is the bit length; float64 holds every uint32 exactly."""
    x = np.asarray(x)
    bits = np.frexp(x.astype(np.float64))[1].astype(np.int64)
    return np.where(x > 0, bits, 32)


def max_abs16(x: np.ndarray) -> int:
    """TFLM's MaxAbs16: the running maximum of ``value`` or ``-value``, kept in an int16.

    ``-(-32768)`` does not fit: it is stored as -32768, after which the scan's comparisons
    run on a negative maximum.  Frames without -32768 take the plain maximum magnitude;
    the others are scanned as TFLM scans them."""
    flat = x.reshape(-1).astype(np.int32)
    if not np.any(flat == -32768):
        return int(np.max(np.abs(flat), initial=0))
    peak = 0
    for value in flat.tolist():
        if value > peak:
            peak = value
        elif -value > peak:
            peak = -value
        peak = (peak + 32768) % 65536 - 32768  # the int16 store
    return peak


def fft_auto_scale(x: np.ndarray) -> tuple[np.ndarray, np.int32]:
    """(x shifted left by the scale bits, the scale bits) for an int16 frame: as many bits
    as the largest magnitude leaves free (`max_abs16`; a negative or zero maximum has 32
    significant bits as a uint32, so no scaling)."""
    msb = int(most_significant_bit(np.uint32(max_abs16(x) & 0xFFFFFFFF)))
    scale = max(16 - msb - 1, 0)
    return (x.astype(np.int32) * (1 << scale)).astype(np.int16), np.int32(scale)


class _Fft(SignalKernel):
    inverse = False
    inputs = (None,)
    outputs = (None,)

    def parse(self, opts, node):
        t = type_option(opts, node, (INT16, INT32, FLOAT32))
        n = int_option(opts, "fft_length", node)
        why = kissfft.check_fft_length(n)
        if why:
            raise OptionError(f"{node.name}: {why}")
        return {"T": t, "fft_length": n}

    def prepare(self, ctx, node):
        shape = ctx.input(node, 0).shape
        n = node.user_data["params"]["fft_length"]
        require(len(shape) >= 1, f"{node.name}: the input needs at least one dimension")
        if self.inverse:
            require(shape[-1] % 2 == 0 and shape[-1] // 2 >= n // 2 + 1,
                    f"{node.name}: frames of {shape[-1]} values hold fewer than the "
                    f"{n // 2 + 1} interleaved bins fft_length {n} reads")
            out = shape[:-1] + (n,)
        else:
            require(shape[-1] <= n, f"{node.name}: frames of {shape[-1]} samples are "
                    f"longer than fft_length {n}")
            out = shape[:-1] + (n + 2,)
        ctx.resize(ctx.output(node, 0), out)

    def invoke(self, ctx, node):
        n = node.user_data["params"]["fft_length"]
        x = ctx.value(node, 0)
        if self.inverse:
            x = x[..., :2 * (n // 2 + 1)]
            out = irfft(x, n)
        else:
            out = rfft(x, n)
        ctx.set_output(ctx.output(node, 0), out)


@register("SignalRfft", versions=(1, 1))
class SignalRfft(_Fft):
    """Real FFT of int16, int32 or float32 frames (TFLM's Register_RFFT)."""


@register("SignalIrfft", versions=(1, 1))
class SignalIrfft(_Fft):
    """Inverse real FFT (TFLM's Register_IRFFT)."""

    inverse = True


@register("SignalFftAutoScale", versions=(1, 1))
class SignalFftAutoScale(SignalKernel):
    """Scale an int16 frame up to the full range before the FFT."""

    needs_options = False
    inputs = (INT16,)
    outputs = (INT16, INT32)

    def prepare(self, ctx, node):
        shape = ctx.input(node, 0).shape
        require(len(shape) == 1, f"{node.name}: the input must be 1-D, got {list(shape)}")
        ctx.resize(ctx.output(node, 0), shape)
        ctx.resize(ctx.output(node, 1), ())

    def invoke(self, ctx, node):
        out, scale = fft_auto_scale(ctx.value(node, 0))
        ctx.set_output(ctx.output(node, 0), out)
        ctx.set_output(ctx.output(node, 1), np.asarray(scale, np.int32))
