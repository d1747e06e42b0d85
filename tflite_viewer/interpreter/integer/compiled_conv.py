"""The 8-bit convolutions' compiled forms (`interpreter.compiled`), as functions a
`conv.ConvPlan` keeps per filter and bias.

* `tail`: the float tail of CONV_2D (and of a one-channel DEPTHWISE_CONV_2D, an ordinary
  convolution) as one compiled pass over BLAS's exact sums: quant_math.FloatRequantizer's
  formula a channel at a time, where numpy takes five to eight passes over the output.
* `byte_product`: CONV_2D whole where the CPU has AVX-512 VNNI: its patches' bytes times
  the filter's in ``vpdpbusd`` (`compiled_vnni`), the exact int32 sums of raw inputs that
  BLAS gives the float tail, then that same tail compiled.
* `depthwise`: DEPTHWISE_CONV_2D whole in one compiled loop, the reference kernel's int32
  accumulator over the taps inside the image, requantized while in cache: by the float
  formula, or where it cannot be exact by MultiplyByQuantizedMultiplier in integers.

Each returns None when compiled kernels are off, or where the float formula cannot be
exact (FloatRequantizer.build refuses): the caller keeps its numpy form, whose integers
these equal (tests/interpreter/test_compiled_kernels.py checks both against LiteRT).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

import numpy as np

from .. import compiled
from .. import quant_math as qm
from .common import padded_shape

if TYPE_CHECKING:
    from .conv import ConvParams, ConvPlan

Fn = Callable[[np.ndarray], np.ndarray]


def _kept(plan: "ConvPlan", kind: str, values: np.ndarray, bias: np.ndarray | None,
          make: Callable[[], Fn | None]) -> Fn | None:
    """``make()`` for these filter values and bias, kept by the plan while they stay the
    same arrays (a kernel's invoke asks on every call)."""
    source, kept_bias, fn = plan.compiled.get(kind, (None, None, None))
    if source is values and kept_bias is bias:
        return fn
    fn = make()
    plan.compiled[kind] = (values, bias, fn)
    return fn


def _args(tail: qm.FloatRequantizer) -> tuple:
    """(rows, zp_after, qmin, qmax): a FloatRequantizer as the compiled loops take it."""
    return (tail.per_channel, float(tail.zp_after), float(tail.qmin), float(tail.qmax))


def tail(p: "ConvParams", plan: "ConvPlan", values: np.ndarray, bias: np.ndarray | None,
         depthwise: bool) -> Fn | None:
    """The plan's float tail (`ConvPlan.float_tail` of these filter values [taps, C] and
    bias) as a compiled function of the exact float sums of raw inputs [..., C]; a batch
    of sums stacked on the first axis gives a batch of outputs (`bind_int_tail`)."""
    loops = compiled.loops()
    if loops is None:
        return None

    def make() -> Fn | None:
        requantizer = plan.float_tail(p, values, bias, depthwise=depthwise)
        if requantizer is None:
            return None
        args, shape, dtype = _args(requantizer), plan.out_shape, p.input_dtype
        channels, per_batch = values.shape[-1], math.prod(plan.out_shape[1:]) or 1

        def requantize(acc: np.ndarray) -> np.ndarray:
            out = np.empty((acc.size // per_batch,) + shape[1:], dtype)
            loops.requantize_float(acc.reshape(-1, channels), *args,
                                   out.reshape(-1, channels))
            return out
        return requantize
    return _kept(plan, "tail", values, bias, make)


def byte_product(p: "ConvParams", plan: "ConvPlan", fmat: np.ndarray,
                 bias: np.ndarray | None, columns: Callable,
                 depthwise: bool = False) -> Fn | None:
    """CONV_2D of the plan's input shape (one group; or a one-channel DEPTHWISE_CONV_2D,
    ``depthwise``) as VNNI byte products and the compiled tail, a function of the input;
    None where the CPU lacks VNNI, for int16, where a filter value plus its offset leaves
    int8 (uint8 filters) or where the float tail cannot be exact.  ``fmat`` is the filter
    plus its offset [taps, C] and ``columns(x, plan, pad)`` the kernel's patches
    ([B*OH*OW, taps] of x padded with ``pad``)."""
    products = compiled.vnni()
    if products is None or p.is_int16 or plan.input_shape[3] != plan.depth:
        return None
    return _kept(plan, "bytes", fmat, bias,
                 lambda: _make_byte_product(products, p, plan, fmat, bias, columns,
                                            depthwise))


def _make_byte_product(products, p: "ConvParams", plan: "ConvPlan", fmat: np.ndarray,
                       bias: np.ndarray | None, columns: Callable,
                       depthwise: bool) -> Fn | None:
    dtype = np.dtype(p.input_dtype)
    if dtype not in (np.dtype(np.int8), np.dtype(np.uint8)) or not fmat.size \
            or fmat.min() < -128 or fmat.max() > 127:
        return None
    requantizer = plan.float_tail(p, fmat, bias, depthwise)  # (sums of raw inputs)
    if requantizer is None:
        return None
    rows = np.ascontiguousarray(fmat.T).astype(np.int8)  # [C, taps]
    signed = dtype == np.int8
    args, shape, channels = _args(requantizer), plan.out_shape, fmat.shape[1]
    pad = -p.input_offset  # the zero point: it adds nothing
    taps, win, gemm = fmat.shape[0], plan.win, products.gemm_requantized
    if (plan.kh, plan.kw, plan.sh, plan.sw, win.pad_h, win.pad_w) == (1, 1, 1, 1, 0, 0) \
            and taps % products.GROUP == 0:
        weights = products.pack_weights(rows, signed)
        packed = products.plain(taps) + (weights.flip, weights.data, weights.start) + args
        gemm = compiled.entry(gemm, np.zeros(taps, dtype), *packed,
                              np.zeros((1, channels), dtype))

        def run_pointwise(input: np.ndarray) -> np.ndarray:
            """A 1x1 convolution: the input is its own patches, read where it lies (its
            rows hold whole groups of 4 taps: nothing is read past its end)."""
            out = np.empty((input.shape[0],) + shape[1:], dtype)
            gemm(np.ascontiguousarray(input).reshape(-1), *packed, out.reshape(-1, channels))
            return out
        return run_pointwise
    if plan.dw == 1:
        return _patches_in_place(products, plan, rows, signed, args, dtype, pad)
    weights = products.pack_weights(rows, signed)

    def run(input: np.ndarray) -> np.ndarray:
        out = np.empty((input.shape[0],) + shape[1:], dtype)
        products.product_requantized(columns(input, plan, pad), weights, args,
                                     out.reshape(-1, channels))
        return out
    return run


def _patches_in_place(products, plan: "ConvPlan", rows: np.ndarray, signed: bool,
                      args: tuple, dtype: np.dtype, pad: int) -> Fn:
    """`byte_product` of a convolution with a window (width dilation 1): its patches read
    where they lie in the padded input (`compiled_vnni.patch_layout`), each filter row one
    run of KW*C bytes, where copying them out (im2col) cost mobilenet_v2's first layer
    half its time.  The layout of each batch size is kept (a batch stacked on the first
    axis, `bind_int_tail`)."""
    win, kh, kw = plan.win, plan.kh, plan.kw
    padded = padded_shape(plan.input_shape, win, kh, kw, plan.sh, plan.sw, plan.dh,
                          plan.dw) or plan.input_shape
    weights = products.pack_patch_weights(rows, kh, signed)
    packed = (weights.flip, weights.data, weights.start) + args
    shape, channels = plan.out_shape, rows.shape[0]
    layouts: dict[int, tuple] = {}
    gemm = compiled.entry(products.gemm_requantized, np.zeros(4, dtype),
                          *products.patch_layout((1, 1, 1, 1), (1, 1), (1, 1), 1, (1, 1)),
                          *packed, np.zeros((1, channels), dtype))

    def run_in_place(input: np.ndarray) -> np.ndarray:
        batch = input.shape[0]
        layout = layouts.get(batch)
        if layout is None:
            layout = layouts[batch] = products.patch_layout(
                (batch,) + tuple(padded[1:]), (win.out_h, win.out_w), (plan.sh, plan.sw),
                plan.dh, (kh, kw))
        out = np.empty((batch,) + shape[1:], dtype)
        flat = products.padded_bytes(input, (batch,) + tuple(padded[1:]), win.pad_h,
                                     win.pad_w, pad)
        gemm(flat, *layout, *packed, out.reshape(-1, channels))
        return out
    return run_in_place


def depthwise(p: "ConvParams", plan: "ConvPlan", ftaps: np.ndarray,
              bias: np.ndarray | None) -> Fn | None:
    """An 8-bit DEPTHWISE_CONV_2D of the plan's input shape (``ftaps`` [KH*KW, C*M], the
    filter plus its offset) as one compiled loop (`compiled_loops.depthwise_rows_int`, or
    `depthwise_int` with a depth multiplier), a function of the input; None for int16
    and for a one-channel input, an ordinary convolution (`byte_product`, or `tail` of its
    patches' product, is faster)."""
    loops = compiled.loops()
    if loops is None or p.is_int16 or plan.input_shape[3] == 1:
        return None
    return _kept(plan, "depthwise", ftaps, bias,
                 lambda: _make_depthwise(loops, p, plan, ftaps, bias))


def _make_depthwise(loops, p: "ConvParams", plan: "ConvPlan", ftaps: np.ndarray,
                    bias: np.ndarray | None) -> Fn | None:
    kh, kw, channels = plan.kh, plan.kw, ftaps.shape[1]
    # the accumulator holds sum((x + input offset) * tap) itself: the bias alone is added
    weight = float(np.abs(ftaps).sum(axis=0, dtype=np.float64).max(initial=0.0))
    rounding = "double" if p.is_uint8 else p.rounding  # (conv._requantize)
    bias64 = np.zeros(channels, np.int64) if bias is None \
        else np.ascontiguousarray(bias.astype(np.int64).reshape(-1))
    requantizer = qm.FloatRequantizer.build(
        p.multiplier, p.shift, p.output_offset, p.act_min, p.act_max, p.input_dtype,
        plan.out_shape, rounding, float(plan.in_bound) * weight, bias64)
    if requantizer is not None:
        table = np.zeros((5, 0), np.int64)  # (no columns: the float formula)
        args = _args(requantizer)
    else:  # a bias that can wrap the int32 accumulator: the integer formula
        table = loops.requantize_table(p.multiplier, p.shift, channels, rounding == "double")
        if table is None:
            return None
        args = (np.zeros((4, 0)), float(p.output_offset), float(p.act_min),
                float(p.act_max))
    taps = np.ascontiguousarray(ftaps.astype(np.int32).reshape(kh, kw, channels))
    shape, dtype, win = plan.out_shape, p.input_dtype, plan.win
    mult = channels // plan.input_shape[3]
    args = (args[0], table, bias64, int(p.input_offset)) + args[1:]
    # (outputs sized by the input's batch: a batch stacked on the first axis, bind_int_tail)
    if mult != 1:
        def run(input: np.ndarray) -> np.ndarray:
            out = np.empty((input.shape[0],) + shape[1:], dtype)
            loops.depthwise_int(np.ascontiguousarray(input), taps, *args, plan.sh, plan.sw,
                                plan.dh, plan.dw, win.pad_h, win.pad_w, mult, 0,
                                win.out_h, out)
            return out
        return run
    tiled = np.ascontiguousarray(np.tile(taps, (1, 1, win.out_w)))
    fixed = (tiled,) + args + (plan.sh, plan.sw, plan.dh, plan.dw, win.pad_h, win.pad_w, 0,
                               win.out_h)
    example = np.zeros((1, 1, 1, 1), dtype)
    rows = compiled.entry(loops.depthwise_rows_int, example, *fixed, example)

    def run_rows(input: np.ndarray) -> np.ndarray:
        out = np.empty((input.shape[0],) + shape[1:], dtype)
        rows(np.ascontiguousarray(input), *fixed, out)
        return out
    return run_rows
