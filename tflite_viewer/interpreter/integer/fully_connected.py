"""Quantized FULLY_CONNECTED: uint8, int8 per-tensor and per-channel, int16x8.

Two requantizations exist.  LiteRT's reference kernels (the ``FullyConnected`` and
``FullyConnectedPerChannel`` overloads of ``reference_integer_ops`` that take the float
scales) multiply the accumulator by the double ``input_scale * filter_scale / output_scale``
and ``round`` it (halves away from zero): that is what the ai-edge-litert 2.3.0 wheel's
BUILTIN_REF resolver runs for uint8, int8 and int16 alike (measured: 0 differences, where
either MultiplyByQuantizedMultiplier rounding differs).  TFLite Micro and older builds
use the quantized multiplier of fully_connected.cc's Prepare (``float_scales=False``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import compiled
from .. import quant_math as qm
from .common import (FLOAT64_EXACT, Options, Rounding, activation_of, check_rounding,
                     exact_matmul, fused_activation_range, int_matmul, qparams, wrap32)
from .conv import FilterParams, filter_matrix


@dataclass(frozen=True)
class FullyConnectedParams(FilterParams):
    effective_scale: np.ndarray  # double input_scale * filter_scale / output_scale


def prepare_fully_connected(input_q, filter_q, output_q, options: Options, input_dtype,
                            rounding: Rounding = "double") -> FullyConnectedParams:
    """fully_connected.cc Prepare.

    Per-channel filters (more than one scale) get double-precision per-unit multipliers and
    no filter offset; a per-tensor filter goes through GetQuantizedConvolutionMultipler
    (float32 input*filter product) and keeps its zero point as the weights offset.
    """
    rounding = check_rounding(rounding)
    iq, fq, oq = qparams(input_q), qparams(filter_q), qparams(output_q)
    if fq.per_channel:
        mult, shift = qm.per_channel_multipliers(iq.s, fq.scale, oq.s, fq.scale.size, rounding)
        filter_offset = 0
    else:
        m, s = qm.per_tensor_multiplier(iq.s, float(fq.scale[0]), oq.s, rounding)
        mult, shift = np.array([m], np.int64), np.array([s], np.int64)
        filter_offset = -fq.zp
    dtype = np.dtype(input_dtype)
    lo, hi = fused_activation_range(activation_of(options), oq, dtype)
    effective = (np.float64(np.float32(iq.s)) * fq.scale.astype(np.float64)
                 / np.float64(np.float32(oq.s)))
    return FullyConnectedParams(dtype, mult, shift, -iq.zp, filter_offset, oq.zp, lo, hi,
                                rounding, effective)


def _offset_bound(dtype, offset: int) -> int:
    """The largest |value + offset| a tensor of ``dtype`` can hold."""
    info = np.iinfo(dtype)
    return max(abs(int(info.min) + offset), abs(int(info.max) + offset))


def output_shape(input_shape: tuple[int, ...], units: int, accum: int,
                 keep_num_dims: bool) -> tuple[int, ...]:
    """UpdateOutputSize: keep the input's leading dims, or flatten to (batch, units)."""
    if keep_num_dims:
        return tuple(input_shape[:-1]) + (units,)
    size = math.prod(input_shape)
    return (size // accum if accum else 0, units)


#: Up to this many multiply-adds (rows x accumulation depth x units) a FloatScaleTail sums
#: in one float64 product with the bias as an extra row: at these sizes numpy's per-call
#: cost dominates, and the bias add is one call less (measured: 1x560 by 10 units 2.45 us
#: against 2.58 for the float32 product; 8x128 by 64 already 3.5 against 2.8).
SMALL_PRODUCT = 8192


@dataclass(eq=False)
class FloatScaleTail:
    """LiteRT's float-scale FULLY_CONNECTED for one filter and bias, with what does not
    depend on the input computed once (a node caches it).

    The sum of raw inputs by ``fmat`` (`conv.filter_matrix`: the filter plus its offset) is
    exact in float (`exact_matmul`), and adding ``input_offset * (fmat column sums) + bias``
    gives the kernel's integer accumulator exactly, still in float64, where it is scaled by
    the double effective scale as the kernel scales it.  Rounding half away from zero is
    trunc(v + copysign(1/2, v)), the same float sum as sign(v) * floor(|v| + 1/2); the
    int32 clamp before the output offset is dropped because the activation clamp that
    follows gives the same result for every value beyond int32.

    Small products (`SMALL_PRODUCT`) run as one float64 product of the inputs with a
    column of ones against ``fmat`` with that bias as an extra row (``w_ext``; exact for
    the same bound), on scratch buffers kept per row count (the final cast makes the
    output array)."""

    fmat: np.ndarray
    bias: np.ndarray  # float64 per unit: bias + input_offset * column sums of fmat
    scale: np.ndarray  # the effective scale, per unit or one
    raw_bound: int
    f_bound: int
    zero_point: float
    act_min: float
    act_max: float
    dtype: np.dtype
    w_ext: np.ndarray | None = None  # float64 [accum + 1, units]: fmat, then bias
    #: where the CPU has AVX-512 VNNI: (packed weights, tail arguments) of `_byte_form`
    byte_form: tuple | None = None
    _scratch: dict = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, p: FullyConnectedParams, fmat: np.ndarray, bias: np.ndarray | None,
              filter_dtype, output_dtype) -> "FloatScaleTail | None":
        """None where a sum could leave float64's exact integers (the general path then
        sums in int64)."""
        accum = fmat.shape[0]
        raw_bound = _offset_bound(p.input_dtype, 0)
        f_bound = _offset_bound(filter_dtype, p.filter_offset)
        folded = fmat.sum(axis=0, dtype=np.float64).astype(np.int64) * p.input_offset
        if bias is not None:
            folded = folded + bias.astype(np.int64).reshape(-1)
        largest = float(np.abs(folded).max(initial=0))
        in_bound = _offset_bound(p.input_dtype, p.input_offset)
        if (float(raw_bound) * f_bound * accum + largest >= FLOAT64_EXACT
                or float(in_bound) * f_bound * accum + largest >= FLOAT64_EXACT):
            return None
        bias64 = folded.astype(np.float64)
        w_ext = None
        if accum * fmat.shape[1] <= SMALL_PRODUCT:
            w_ext = np.concatenate([fmat.astype(np.float64), bias64[None, :]])
        tail = cls(fmat, bias64, p.effective_scale.astype(np.float64), raw_bound, f_bound,
                   float(p.output_offset), float(p.act_min), float(p.act_max),
                   np.dtype(output_dtype), w_ext)
        tail.byte_form = tail._byte_form(p.input_dtype)
        return tail

    def _byte_form(self, input_dtype) -> tuple | None:
        """The VNNI form of this tail (`compiled_vnni.product_scaled`): the exact int32
        sums of raw 8-bit inputs by int8 filter values, then the same float64 steps; None
        where the CPU lacks VNNI, for other types, uint8 filters (a value plus its offset
        leaves int8) or sums that could leave int32."""
        products = compiled.vnni()
        dtype, accum = np.dtype(input_dtype), self.fmat.shape[0]
        if products is None or dtype not in (np.dtype(np.int8), np.dtype(np.uint8)) \
                or self.dtype != dtype or not self.fmat.size or self.fmat.min() < -128 \
                or self.fmat.max() > 127 \
                or float(self.raw_bound) * self.f_bound * accum >= 2.0 ** 31:
            return None
        units = self.fmat.shape[1]
        weights = products.pack_weights(np.ascontiguousarray(self.fmat.T).astype(np.int8),
                                        dtype == np.int8)
        scale = np.ascontiguousarray(np.broadcast_to(self.scale, (units,)), np.float64)
        return products, weights, (np.ascontiguousarray(self.bias), scale, self.zero_point,
                                   self.act_min, self.act_max)

    def _small(self, rows: int) -> tuple | None:
        """The scratch buffers and constants of a small product of ``rows`` rows, laid out at
        the accumulators' shape (ufuncs on same-shape operands skip broadcasting, and array
        operands are faster than Python scalars), or None when the product is not small."""
        scratch = self._scratch.get(rows)
        if scratch is None:
            accum, units = self.fmat.shape
            if self.w_ext is None or rows * accum * units > SMALL_PRODUCT:
                return None
            if len(self._scratch) >= 4:
                self._scratch.clear()
            shape = (rows, units)

            def full(v):
                return np.ascontiguousarray(np.broadcast_to(v, shape), np.float64)
            scratch = self._scratch[rows] = (
                np.ones((rows, accum + 1)), np.empty(shape), np.empty(shape), full(self.scale),
                full(0.5), full(self.zero_point), full(self.act_min), full(self.act_max))
        return scratch

    def __call__(self, x: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray:
        accum = self.fmat.shape[0]
        rows = x.size // accum
        if self.byte_form is not None and x.dtype == self.dtype:
            products, weights, tail = self.byte_form
            out = np.empty((rows, self.fmat.shape[1]), self.dtype)
            products.product_scaled(x.reshape(rows, accum), weights, tail, out)
            return out if out.shape == out_shape else out.reshape(out_shape)
        small = self._small(rows)
        if small is not None:
            xe, v, tmp, scale, half, zp, lo, hi = small
            xe[:, :accum] = x.reshape(rows, accum)
            np.dot(xe, self.w_ext, v)
            np.multiply(v, scale, v)
            np.copysign(half, v, tmp)
            np.add(v, tmp, v)
            np.trunc(v, v)
            np.add(v, zp, v)
            qm.clip_into(v, lo, hi)
        else:
            x = x.reshape(rows, accum).astype(np.float32)
            acc = exact_matmul(x, self.fmat, self.raw_bound, self.f_bound, float32_ok=True)
            v = np.add(acc, self.bias, dtype=np.float64)
            v *= self.scale
            v += np.copysign(0.5, v)
            np.trunc(v, out=v)
            v += self.zero_point
            qm.clip_into(v, self.act_min, self.act_max)
        out = v.astype(self.dtype)
        return out if out.shape == out_shape else out.reshape(out_shape)


def fully_connected(input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None,
                    input_q=None, filter_q=None, output_q=None,
                    options: Options | None = None, rounding: Rounding = "double",
                    params: FullyConnectedParams | None = None,
                    output_dtype=None, float_scales: bool = True,
                    fmat: np.ndarray | None = None,
                    tail: FloatScaleTail | None = None) -> np.ndarray:
    """FULLY_CONNECTED: out[b, u] = requant(sum_d (f[u,d] + f_off) * (x[b,d] + x_off) + bias[u]).

    With ``float_scales`` (LiteRT) the accumulator is scaled by the double effective scale
    of :attr:`FullyConnectedParams.effective_scale` and rounded half away from zero.
    Otherwise the accumulator type follows the bias: int32 for 8-bit inputs and for int16 inputs
    with an int32 bias (32-bit MultiplyByQuantizedMultiplier), int64 for int16 inputs with
    an int64 (or no) bias (the 16-bit reduced-multiplier overload).
    The sums are exact float BLAS products (bounded by the types' ranges) whenever they stay
    below 2**53; ``fmat`` is `conv.filter_matrix` of the filter and its offset and ``tail``
    the `FloatScaleTail` of that matrix and ``bias`` (caches of the kernel).
    """
    options = options or {}
    p = params or prepare_fully_connected(input_q, filter_q, output_q, options, input.dtype,
                                          rounding)
    units, accum = filter.shape[-2], filter.shape[-1]
    out_shape = output_shape(input.shape, units, accum, bool(options.get("keep_num_dims", False)))
    out_dtype = np.dtype(output_dtype) if output_dtype is not None else p.input_dtype
    if float_scales:
        if tail is None:
            if fmat is None:
                fmat = filter_matrix(filter.reshape(units, accum), p.filter_offset)
            tail = FloatScaleTail.build(p, fmat, bias, filter.dtype, out_dtype)
        if tail is not None:
            return tail(input, out_shape)
    in_bound = _offset_bound(input.dtype, p.input_offset)
    f_bound = _offset_bound(filter.dtype, p.filter_offset)
    if float(in_bound) * f_bound * accum < FLOAT64_EXACT:
        x = input.reshape(-1, accum).astype(np.float32)
        if p.input_offset:
            x += p.input_offset
        if fmat is None:
            fmat = filter_matrix(filter.reshape(units, accum), p.filter_offset)
        acc = exact_matmul(x, fmat, in_bound, f_bound).astype(np.int64)
    else:
        x = input.reshape(-1, accum).astype(np.int64) + p.input_offset
        f = filter.reshape(units, accum).astype(np.int64) + p.filter_offset
        acc = int_matmul(x, f.T)
    if bias is not None:
        acc = acc + bias.astype(np.int64).reshape(-1)
    if float_scales:
        scaled = acc.astype(np.float64) * p.effective_scale
        out = qm.round_half_away(scaled)
        out = np.clip(out, qm.INT32_MIN, qm.INT32_MAX).astype(np.int64)
        out = np.clip(out + p.output_offset, p.act_min, p.act_max).astype(out_dtype)
        return out.reshape(out_shape)
    int64_acc = p.input_dtype == np.int16 and (bias is None or bias.dtype == np.int64)
    if int64_acc:
        out = qm.multiply_by_quantized_multiplier_int64(acc, p.multiplier, p.shift, p.rounding)
    else:
        out = qm.multiply_by_quantized_multiplier(wrap32(acc), p.multiplier, p.shift, p.rounding)
    out = np.clip(out + p.output_offset, p.act_min, p.act_max).astype(out_dtype)
    return out.reshape(out_shape)


def sparse_int8(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
                p: FullyConnectedParams, out_shape: tuple[int, ...]) -> np.ndarray:
    """int8 FULLY_CONNECTED with sparse (densified) weights, as LiteRT's
    SparseMatrixBatchVectorMultiplyAccumulate1x16 computes it: the int32 accumulator of
    ``w * (x + input_offset)`` plus the bias, rescaled by the quantized multiplier of
    Prepare (per unit or per tensor), not by the reference kernel's double scale."""
    if p.filter_offset:
        raise ValueError("sparse int8 FULLY_CONNECTED supports symmetric weight "
                         "quantization only (LiteRT's kernel refuses a zero point)")
    units, depth = w.shape
    rows = x.reshape(-1, depth).astype(np.int64) + p.input_offset
    acc = int_matmul(rows, w.astype(np.int64).T)
    if bias is not None:
        acc = acc + bias.astype(np.int64)
    out = qm.multiply_by_quantized_multiplier(wrap32(acc), p.multiplier, p.shift, p.rounding)
    out = np.clip(out + p.output_offset, p.act_min, p.act_max)
    return out.astype(np.int8).reshape(out_shape)
