"""The filter-bank ops of TFLM's signal library: mel filter bank, square root, spectral
subtraction, log and PCAN gain control, in their fixed-point arithmetic.

Each works per channel, so each is vectorized over channels; C's unsigned arithmetic is
reproduced with explicit wraps (uint32 and uint64 modulo arithmetic, int32 overflow where
TFLM's expressions overflow).
"""
from __future__ import annotations

import math

import numpy as np

from ...registration import register
from ...tensor import INT16, INT32, UINT32, UINT64
from ..common import derived
from .common import (OptionError, SignalKernel, bool_option, int_option, require,
                     require_option)
from .fft import most_significant_bit

_U32 = 0xFFFFFFFF


def _wrap32(x: np.ndarray) -> np.ndarray:
    """An int64 array's values as C's int32 arithmetic leaves them (two's complement)."""
    return (x + 2**31) % 2**32 - 2**31


# -- SignalFilterBank --------------------------------------------------------------------
def filter_bank_indices(freq_starts, weight_starts, widths, num_channels: int,
                        n_bins: int, n_weights: int):
    """(bin index, weight index, channel start offsets) of every tap of channels
    0..num_channels (channel 0 only feeds channel 1's unweighted part)."""
    count = num_channels + 1
    fs = np.asarray(freq_starts, np.int64)[:count]
    ws = np.asarray(weight_starts, np.int64)[:count]
    wd = np.asarray(widths, np.int64)[:count]
    if min(fs.size, ws.size, wd.size) < count:
        raise ValueError(f"the channel tables need num_channels + 1 = {count} entries, "
                         f"got {fs.size}, {ws.size} and {wd.size}")
    if np.any(wd < 0) or np.any(fs < 0) or np.any(ws < 0) or np.any(fs + wd > n_bins) \
            or np.any(ws + wd > n_weights):
        raise ValueError("a channel reaches outside the input spectrum or the weights "
                         f"({n_bins} bins, {n_weights} weights)")
    offsets = np.concatenate([[0], np.cumsum(wd)])
    within = np.arange(offsets[-1]) - np.repeat(offsets[:-1], wd)
    chan = np.repeat(np.arange(count), wd)
    return fs[chan] + within, ws[chan] + within, offsets


def filter_bank(x: np.ndarray, weights: np.ndarray, unweights: np.ndarray, indices,
                num_channels: int) -> np.ndarray:
    """Channel c's output: its weighted taps plus channel c-1's unweighted taps (uint64
    sums modulo 2**64, the int16 weights sign-extended as C converts them)."""
    bins, widx, offsets = indices
    energy = x.astype(np.uint64)[bins]

    def channel_sums(w):
        taps = w.astype(np.int64).view(np.uint64)[widx] * energy
        total = np.concatenate([np.zeros(1, np.uint64), np.cumsum(taps, dtype=np.uint64)])
        return total[offsets[1:]] - total[offsets[:-1]]

    weighted, unweighted = channel_sums(weights), channel_sums(unweights)
    return weighted[1:num_channels + 1] + unweighted[:num_channels]


@register("SignalFilterBank", versions=(1, 1))
class SignalFilterBank(SignalKernel):
    """Triangular (mel) filter bank over power bins (TFLM's Register_FILTER_BANK)."""

    inputs = (UINT32, INT16, INT16, INT16, INT16, INT16)
    outputs = (UINT64,)

    def parse(self, opts, node):
        return {"num_channels": int_option(opts, "num_channels", node, minimum=0)}

    def prepare(self, ctx, node):
        for k in range(6):
            shape = ctx.input(node, k).shape
            require(len(shape) == 1, f"{node.name}: input {k} must be 1-D, got {list(shape)}")
        ctx.resize(ctx.output(node, 0), (node.user_data["params"]["num_channels"],))

    def invoke(self, ctx, node):
        n = node.user_data["params"]["num_channels"]
        x, w, u, fs, ws, wd = (ctx.value(node, k) for k in range(6))
        indices = derived(node, "taps", (fs, ws, wd, x.size, w.size, u.size),
                          lambda: filter_bank_indices(fs, ws, wd, n, x.size, min(w.size, u.size)))
        ctx.set_output(ctx.output(node, 0), filter_bank(x, w, u, indices, n))


# -- SignalFilterBankSquareRoot -----------------------------------------------------------
def rounded_sqrt(x: np.ndarray) -> np.ndarray:
    """TFLM's Sqrt64: the square root rounded to nearest, except that values below 2**32
    go through its 16-bit Sqrt32, which cannot round up past 0xFFFF (nor Sqrt64 past
    0xFFFFFFFF)."""
    out = []
    for v in x.reshape(-1).tolist():
        r = math.isqrt(v)
        cap = 0xFFFF if v >> 32 == 0 else _U32
        out.append(r + 1 if v - r * r > r and r != cap else r)
    return np.array(out, np.uint64).reshape(x.shape)


def filter_bank_square_root(x: np.ndarray, scale_bits: int) -> np.ndarray:
    return (rounded_sqrt(x) >> np.uint64(scale_bits)).astype(np.uint32)


@register("SignalFilterBankSquareRoot", versions=(1, 1))
class SignalFilterBankSquareRoot(SignalKernel):
    """Amplitude from energy, undoing FftAutoScale's shift (TFLM's
    Register_FILTER_BANK_SQUARE_ROOT)."""

    needs_options = False
    inputs = (UINT64, INT32)
    outputs = (UINT32,)

    def prepare(self, ctx, node):
        x, s = ctx.input(node, 0).shape, ctx.input(node, 1).shape
        require(len(x) == 1 and len(s) == 0, f"{node.name}: needs a 1-D input and a scalar "
                f"scale, got {list(x)} and {list(s)}")
        ctx.resize(ctx.output(node, 0), x)

    def invoke(self, ctx, node):
        scale = int(ctx.value(node, 1))
        require(0 <= scale < 32, f"{node.name}: scale bits {scale} outside 0..31")
        ctx.set_output(ctx.output(node, 0), filter_bank_square_root(ctx.value(node, 0), scale))


# -- SignalFilterBankSpectralSubtraction ---------------------------------------------------
def spectral_subtraction(x: np.ndarray, noise: np.ndarray, p: dict) -> tuple[np.ndarray, np.ndarray]:
    """(output, new noise estimate) of one frame, from the previous noise estimate."""
    n = x.size
    odd = (np.arange(n) & 1).astype(bool)
    smoothing = np.where(odd, p["alternate_smoothing"], p["smoothing"]).astype(np.uint64)
    one_minus = np.where(odd, p["alternate_one_minus_smoothing"],
                         p["one_minus_smoothing"]).astype(np.uint64)
    bits, sub_bits = np.uint64(p["smoothing_bits"]), np.uint64(p["spectral_subtraction_bits"])
    x64 = x.astype(np.uint64)
    scaled_up = (x64 << bits) & np.uint64(_U32)
    noise = ((scaled_up * smoothing + noise.astype(np.uint64) * one_minus) >> sub_bits) \
        & np.uint64(_U32)
    estimate = np.minimum(noise, scaled_up)
    if p["clamping"]:
        noise = estimate
    floor = ((x64 * np.uint64(p["min_signal_remaining"])) >> sub_bits) & np.uint64(_U32)
    subtracted = (scaled_up - estimate) >> bits
    return np.maximum(subtracted, floor).astype(np.uint32), noise.astype(np.uint32)


_SUBTRACTION_OPTIONS = ("alternate_one_minus_smoothing", "alternate_smoothing",
                        "min_signal_remaining", "num_channels", "one_minus_smoothing",
                        "smoothing", "smoothing_bits", "spectral_subtraction_bits")


@register("SignalFilterBankSpectralSubtraction", versions=(1, 1))
class SignalFilterBankSpectralSubtraction(SignalKernel):
    """Subtract a running noise estimate, kept between invocations (TFLM's
    Register_FILTER_BANK_SPECTRAL_SUBTRACTION)."""

    inputs = (UINT32,)
    outputs = (UINT32, UINT32)

    def parse(self, opts, node):
        p = {name: int_option(opts, name, node, minimum=0) for name in _SUBTRACTION_OPTIONS}
        p["clamping"] = bool_option(opts, "clamping", node)
        require_option(p["smoothing_bits"] < 32 and p["spectral_subtraction_bits"] < 64, node,
                       f"smoothing_bits {p['smoothing_bits']} (< 32) or spectral_subtraction_bits "
                       f"{p['spectral_subtraction_bits']} (< 64) out of range")
        return p

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        n = node.user_data["params"]["num_channels"]
        require(x == (n,), f"{node.name}: the input must hold num_channels = {n} channels, "
                f"got {list(x)}")
        ctx.resize(ctx.output(node, 0), x)
        ctx.resize(ctx.output(node, 1), x)

    def invoke(self, ctx, node):
        x = ctx.value(node, 0)
        noise = node.user_data["state"]
        if noise is None or noise.shape != x.shape:
            noise = np.zeros(x.shape, np.uint32)
        out, noise = spectral_subtraction(x, noise, node.user_data["params"])
        node.user_data["state"] = noise
        ctx.set_output(ctx.output(node, 0), out)
        ctx.set_output(ctx.output(node, 1), noise.copy())


# -- SignalFilterBankLog --------------------------------------------------------------------
#: log2(1 + i/128) - i/128 in 1/65536 units, i = 0..128, and a closing 0 (TFLM's kLogLut)
LOG_LUT = np.array([math.floor(65536 * (math.log2(1 + i / 128) - i / 128) + 0.5)
                    for i in range(129)] + [0], np.int64)


def log32(x: np.ndarray, out_scale: int) -> np.ndarray:
    """TFLM's Log32 of uint32 values > 1: a piecewise-linear log2 scaled to ln and by
    ``out_scale`` (in 1/65536 units), with uint32 wraps where TFLM's expression wraps."""
    x = x.astype(np.int64)
    integer = most_significant_bit(x) - 1
    frac = x - (np.int64(1) << integer)
    frac = np.where(integer < 16, frac << np.maximum(16 - integer, 0),
                    frac >> np.maximum(integer - 16, 0))
    seg = frac >> 9
    c0, c1 = LOG_LUT[seg], LOG_LUT[seg + 1]
    rel = ((c1 - c0) * (frac - (seg << 9))) >> 16
    log2 = ((integer << 16) + ((frac + c0 + rel) & _U32)) & _U32
    loge = ((45426 * log2 + 32768) >> 16) & _U32
    scaled = (out_scale * loge) & _U32  # uint32 arithmetic
    return ((scaled + 32768) & _U32) >> 16


def filter_bank_log(x: np.ndarray, out_scale: int, correction_bits: int) -> np.ndarray:
    scaled = (x.astype(np.int64) << correction_bits) & _U32
    big = scaled > 1
    out = np.zeros(x.shape, np.int64)
    out[big] = np.minimum(log32(scaled[big], out_scale & _U32), 32767)
    return out.astype(np.int16)


@register("SignalFilterBankLog", versions=(1, 1))
class SignalFilterBankLog(SignalKernel):
    """Fixed-point natural log of the channels (TFLM's Register_FILTER_BANK_LOG)."""

    inputs = (UINT32,)
    outputs = (INT16,)

    def parse(self, opts, node):
        bits = int_option(opts, "input_correction_bits", node, minimum=0)
        if bits >= 32:
            raise OptionError(f"{node.name}: input_correction_bits {bits} must be below 32")
        return {"input_correction_bits": bits,
                "output_scale": int_option(opts, "output_scale", node, minimum=1)}

    def prepare(self, ctx, node):
        x = ctx.input(node, 0).shape
        require(len(x) == 1, f"{node.name}: the input must be 1-D, got {list(x)}")
        ctx.resize(ctx.output(node, 0), x)

    def invoke(self, ctx, node):
        p = node.user_data["params"]
        out = filter_bank_log(ctx.value(node, 0), p["output_scale"], p["input_correction_bits"])
        ctx.set_output(ctx.output(node, 0), out)


# -- SignalPCAN -----------------------------------------------------------------------------
def wide_dynamic_function(x: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """TFLM's WideDynamicFunction: the gain for a noise estimate, interpolated in the LUT
    (int16 result, int32 intermediate overflow as in C)."""
    x = x.astype(np.int64)
    lut = lut.astype(np.int64)
    interval = most_significant_bit(x)
    base = np.where(x <= 2, 0, 4 * interval - 6)
    needed = int(np.max(np.where(x <= 2, x, base + 2), initial=0))
    if needed >= lut.size:
        raise ValueError(f"the gain LUT has {lut.size} entries; these noise estimates read "
                         f"entry {needed}")
    frac = np.where(interval < 11, x << np.maximum(11 - interval, 0),
                    x >> np.maximum(interval - 11, 0)) & 0x3FF
    l0, l1, l2 = (lut[np.minimum(base + k, lut.size - 1)] for k in range(3))
    result = (l2 * frac) >> 5
    result = _wrap32(result + l1 * 32)
    result = _wrap32(result * frac)
    result = _wrap32(result + (1 << 14)) >> 15
    result = result + l0
    result = np.where(x <= 2, lut[np.minimum(x, lut.size - 1)], result)
    return result.astype(np.int16)


def pcan_shrink(snr: np.ndarray) -> np.ndarray:
    return np.where(snr < 8192, (snr * snr) >> 20, (snr >> 6) - 64)


def pcan(x: np.ndarray, noise: np.ndarray, lut: np.ndarray, snr_shift: int) -> np.ndarray:
    """Per-channel automatic gain control (TFLM's ApplyPcanAutoGainControlFixed)."""
    gain = wide_dynamic_function(noise, lut).astype(np.int64) & _U32  # int16 -> uint32
    snr = ((x.astype(np.uint64) * gain.astype(np.uint64)) >> np.uint64(snr_shift)) \
        & np.uint64(_U32)
    return pcan_shrink(snr.astype(np.int64)).astype(np.uint32)


@register("SignalPCAN", versions=(1, 1))
class SignalPCAN(SignalKernel):
    """Per-channel energy normalization (TFLM's Register_PCAN)."""

    inputs = (UINT32, UINT32, INT16)
    outputs = (UINT32,)

    def parse(self, opts, node):
        shift = int_option(opts, "snr_shift", node)
        if not 0 <= shift < 64:
            raise OptionError(f"{node.name}: option 'snr_shift' = {shift}, must be in 0..63")
        return {"snr_shift": shift}

    def prepare(self, ctx, node):
        x, noise, lut = (ctx.input(node, k).shape for k in range(3))
        require(len(x) == 1 and len(lut) == 1 and noise == x,
                f"{node.name}: needs 1-D input, noise estimate of the same size and a 1-D "
                f"gain LUT, got {list(x)}, {list(noise)}, {list(lut)}")
        ctx.resize(ctx.output(node, 0), x)

    def invoke(self, ctx, node):
        out = pcan(ctx.value(node, 0), ctx.value(node, 1), ctx.value(node, 2),
                   node.user_data["params"]["snr_shift"])
        ctx.set_output(ctx.output(node, 0), out)
