"""Quantized CONV_2D and DEPTHWISE_CONV_2D: uint8 per-tensor, int8 per-channel, int16x8.

Mirrors ``reference_integer_ops::ConvPerChannel``/``DepthwiseConvPerChannel`` (int8, int16)
and ``reference_ops::Conv``/``DepthwiseConv`` (uint8), with the multipliers of
``PopulateConvolutionQuantizationParams`` computed once in :func:`prepare_conv`.
Accumulation is vectorized (im2col + exact matmul for convolutions, one einsum over a
strided view of the filter taps for depthwise) and wrapped to int32 where C accumulates in
int32.  The 8-bit kernels sum raw inputs in float (the input offset folded into the bias)
and requantize the float sums directly where float64 is exact (`ConvPlan`,
`quant_math.FloatRequantizer`); elsewhere they convert to integers first.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import quant_math as qm
from . import compiled_conv
from .common import (FLOAT32_EXACT, FLOAT64_EXACT, Options, Rounding, Window, activation_of,
                     c_einsum, check_rounding, dtype_range, exact_matmul, fused_activation_range,
                     im2col, int_matmul, pad_for_window, padded_shape, patches, qparams, window,
                     wrap32)
from .phases import WidthPhases, phases_apply


@dataclass(frozen=True)
class FilterParams:
    """What every filter op's Prepare computes alike (conv, depthwise, fully connected and
    transpose conv): `filter_multipliers`' multipliers and offsets and the fused-activation
    range.  Each op's params add what is its own."""

    input_dtype: np.dtype
    multiplier: np.ndarray  # per output channel or unit (uint8: the single per-tensor value)
    shift: np.ndarray
    input_offset: int
    filter_offset: int
    output_offset: int
    act_min: int
    act_max: int
    rounding: Rounding


@dataclass(frozen=True)
class ConvParams(FilterParams):
    """What the conv/depthwise Prepare caches per node."""

    #: the prepared tails (quant_math.Requantizer) by accumulator shape and rounding
    requantizers: dict = field(default_factory=dict, compare=False, repr=False)
    #: int16x8 CONV_2D whose options' quantized_bias_type is INT32: conv.cc then takes
    #: the int32-bias ConvPerChannel (int32 accumulator, 32-bit MultiplyByQuantizedMultiplier)
    int32_bias: bool = False

    @property
    def is_uint8(self) -> bool:
        return self.input_dtype == np.uint8

    @property
    def is_int16(self) -> bool:
        return self.input_dtype == np.int16


def filter_multipliers(iq, fq, oq, dtype: np.dtype, channels: int,
                       rounding: Rounding) -> tuple[np.ndarray, np.ndarray, int]:
    """(multipliers, shifts, filter offset) as conv.cc / transpose_conv.cc Prepare make them.

    uint8 takes one multiplier from GetQuantizedConvolutionMultipler (float32 product of
    the input and filter scales) and an asymmetric filter offset; int8/int16 take one per
    channel from double products, with symmetric filters.
    """
    if dtype == np.uint8:
        m, s = qm.per_tensor_multiplier(iq.s, float(fq.scale[0]), oq.s, rounding)
        return np.array([m], np.int64), np.array([s], np.int64), -fq.zp
    mult, shift = qm.per_channel_multipliers(iq.s, fq.scale, oq.s, channels, rounding)
    return mult, shift, 0


def prepare_conv(input_q, filter_q, output_q, options: Options, input_dtype, channels: int,
                 rounding: Rounding = "double") -> ConvParams:
    """PopulateConvolutionQuantizationParams for conv and depthwise conv.

    int8/int16 use per-channel multipliers from double products (a per-tensor filter scale
    is broadcast); uint8 uses GetQuantizedConvolutionMultipler, whose input*filter product
    is taken in float32 first.
    """
    rounding = check_rounding(rounding)
    iq, fq, oq = qparams(input_q), qparams(filter_q), qparams(output_q)
    dtype = np.dtype(input_dtype)
    mult, shift, filter_offset = filter_multipliers(iq, fq, oq, dtype, channels, rounding)
    lo, hi = fused_activation_range(activation_of(options), oq, dtype)
    int32_bias = dtype == np.int16 and str(options.get("quantized_bias_type")) == "INT32"
    return ConvParams(dtype, mult, shift, -iq.zp, filter_offset, oq.zp, lo, hi, rounding,
                      int32_bias=int32_bias)


def _requantize(acc: np.ndarray, p: ConvParams, depthwise: bool = False) -> np.ndarray:
    """The kernels' tail: scale, add the output zero point, clamp, cast."""
    if p.is_int16 and p.int32_bias:  # ConvPerChannel<int32_t bias>: C's int32 accumulator
        out = qm.multiply_by_quantized_multiplier(wrap32(acc), p.multiplier, p.shift,
                                                  p.rounding)
        return np.clip(out + p.output_offset, p.act_min, p.act_max).astype(np.int16)
    if p.is_int16:
        # ConvPerChannel / DepthwiseConvPerChannel<int16>: int64 accumulator and the
        # 16-bit reduced multiplier overload of MultiplyByQuantizedMultiplier.
        out = qm.multiply_by_quantized_multiplier_int64(acc, p.multiplier, p.shift, p.rounding)
        if not depthwise:
            out = out + p.output_offset
        return np.clip(out, p.act_min, p.act_max).astype(np.int16)
    rounding = p.rounding
    if depthwise and p.is_uint8:
        # DepthwiseConvBasicKernel<kAwayFromZero>: gemmlowp's double rounding even in
        # single-rounding builds.
        rounding = "double"
    if rounding == "single":
        acc = wrap32(acc)  # (the double-rounding multiply wraps its int32 input itself)
    key = (acc.shape, rounding)
    tail = p.requantizers.get(key)
    if tail is None:
        tail = p.requantizers[key] = qm.Requantizer(p.multiplier, p.shift, p.output_offset,
                                                    p.act_min, p.act_max, p.input_dtype,
                                                    acc.shape, rounding)
    return tail(acc)


def _int32_accumulator(acc: np.ndarray, bound: float, bias: np.ndarray | None) -> np.ndarray:
    """The 8-bit kernels' int32 accumulator from exact float sums bounded by ``bound``, plus
    the bias, with C's int32 wrap-around (numpy's int32 addition wraps the same way)."""
    if bound < 2.0 ** 31:
        acc = acc.astype(np.int32)  # exact: every sum fits
    else:
        acc = acc.astype(np.int64).astype(np.int32)
    if bias is not None:
        acc += bias.astype(np.int32, copy=False).reshape(-1)
    return acc


def _strides(options: Options) -> tuple[int, int, int, int]:
    return (int(options.get("stride_h", 1)), int(options.get("stride_w", 1)),
            int(options.get("dilation_h_factor", 1)), int(options.get("dilation_w_factor", 1)))


def _max_abs(dtype, offset: int = 0) -> int:
    """The largest |value + offset| a tensor of ``dtype`` can hold."""
    lo, hi = dtype_range(dtype)
    return max(abs(lo + offset), abs(hi + offset))


@dataclass(eq=False)
class ConvPlan:
    """What a CONV_2D or DEPTHWISE_CONV_2D node fixes once per input shape (its prepare):
    the window, the bounds of its exact float sums and, per filter and bias, its float tail.

    The 8-bit float path sums the raw inputs (padded with their zero point, which adds
    nothing once offset) and folds ``input_offset * (filter column sums)`` into the bias,
    then requantizes the float sums directly (`quant_math.FloatRequantizer`); where that
    tail cannot be exact, the kernels take the integer path.
    """

    input_shape: tuple[int, ...]
    win: Window
    kh: int
    kw: int
    sh: int
    sw: int
    dh: int
    dw: int
    out_shape: tuple[int, ...]
    raw_bound: int  # max |input|
    in_bound: int  # max |input + input_offset|
    f_bound: int  # max |filter + filter_offset|
    depth: int  # input channels per output channel (1 for depthwise)
    ftype: type = np.float32  # the float type of the depthwise sums
    tiled: tuple = (None, None)  # depthwise: (ftaps, ftaps tiled to output rows)
    #: depthwise: (pad value, the padded float input of the last call, its border filled)
    padded: tuple = (None, None)
    _tail: tuple = (None, None, None)  # (filter matrix, bias, FloatRequantizer | None)
    #: depthwise of width stride 2 and few channels: its input read by even and odd
    #: columns (`phases.WidthPhases`), and (ftaps, ftaps laid per phase)
    phases: WidthPhases | None = None
    laid: tuple = (None, None)
    #: the compiled functions of this plan (`compiled_conv`): kind -> (filter values,
    #: bias, function | None)
    compiled: dict = field(default_factory=dict)

    @property
    def taps(self) -> int:
        return self.kh * self.kw * self.depth

    @property
    def bound(self) -> float:
        """Bound of the kernel's accumulator before the bias."""
        return float(self.in_bound) * self.f_bound * self.taps

    def float_tail(self, p: ConvParams, fmat: np.ndarray, bias: np.ndarray | None,
                   depthwise: bool) -> qm.FloatRequantizer | None:
        """The float tail for sums of raw inputs by ``fmat`` ([taps, out channels], offset
        filter values) plus ``bias``; None for int16 or where float64 is not exact."""
        cached_fmat, cached_bias, tail = self._tail
        if cached_fmat is fmat and cached_bias is bias:
            return tail
        tail = None
        # every sum is at most max|x| * (the largest column sum of |filter|): this
        # filter's own bound, which real filters keep well under max|f| * taps (the plan's)
        weight = float(np.abs(fmat).sum(axis=0, dtype=np.float64).max(initial=0.0))
        if not p.is_int16 and float(self.in_bound) * weight < 2.0 ** 31:
            folded = fmat.sum(axis=0, dtype=np.float64).astype(np.int64) * p.input_offset
            if bias is not None:
                folded = folded + bias.astype(np.int64).reshape(-1)
            rounding = "double" if depthwise and p.is_uint8 else p.rounding  # see _requantize
            tail = qm.FloatRequantizer.build(
                p.multiplier, p.shift, p.output_offset, p.act_min, p.act_max, p.input_dtype,
                self.out_shape, rounding, float(self.raw_bound) * weight, folded)
        self._tail = (fmat, bias, tail)
        return tail


def plan_conv(input_shape, input_dtype, filter_shape, filter_dtype, options: Options,
              p: ConvParams, depthwise: bool = False) -> ConvPlan:
    """The `ConvPlan` of a conv (OHWI filter) or depthwise conv (1HWO filter)."""
    b, h, w, in_ch = (int(d) for d in input_shape)
    if depthwise:
        _, kh, kw, out_ch = (int(d) for d in filter_shape)
        depth = 1
    else:
        out_ch, kh, kw, depth = (int(d) for d in filter_shape)
    sh, sw, dh, dw = _strides(options)
    win = window(options, h, w, kh, kw)
    offset = 0 if depthwise and p.is_int16 else p.input_offset  # (no int16 depthwise offset)
    plan = ConvPlan(tuple(int(d) for d in input_shape), win, kh, kw, sh, sw, dh, dw,
                    (b, win.out_h, win.out_w, out_ch), _max_abs(input_dtype),
                    _max_abs(input_dtype, offset), _max_abs(filter_dtype, p.filter_offset),
                    depth)
    if depthwise:
        plan.ftype = depthwise_dtype(input_dtype, filter_dtype, p, kh * kw)
        if in_ch > 1 and phases_apply(plan.input_shape, (sh, sw), (dh, dw), out_ch // in_ch):
            plan.phases = WidthPhases(plan.input_shape, win,
                                      padded_shape(plan.input_shape, win, kh, kw, sh, sw, dh, dw),
                                      (kh, kw), sh, dh)
    return plan


def filter_matrix(filter: np.ndarray, filter_offset: int) -> np.ndarray:
    """The OHWI filter plus its offset as a float32 [KH*KW*I, O] matrix (exact: 9-bit
    integers), what conv_2d multiplies by; kernels cache it per node."""
    out_ch = filter.shape[0]
    return np.ascontiguousarray((filter.astype(np.float32) + filter_offset)
                                .reshape(out_ch, -1).T)


def conv_2d(input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None, input_q=None,
            filter_q=None, output_q=None, options: Options | None = None,
            rounding: Rounding = "double",
            params: ConvParams | None = None, fmat: np.ndarray | None = None,
            plan: ConvPlan | None = None) -> np.ndarray:
    """CONV_2D on an NHWC input and an OHWI filter (grouped when filter depth < input depth).

    acc = sum (filter + filter_offset) * (input + input_offset) over the window (taps
    outside the image are skipped), + bias, then requantized per output channel.  The
    sums are exact float64 BLAS products while they stay below 2**53 (else int64).
    ``fmat`` is `filter_matrix` and ``plan`` `plan_conv` (caches of the kernel).
    """
    options = options or {}
    out_ch, kh, kw, in_ch_f = filter.shape
    p = params or prepare_conv(input_q, filter_q, output_q, options, input.dtype, out_ch, rounding)
    if plan is None or plan.input_shape != input.shape:
        plan = plan_conv(input.shape, input.dtype, filter.shape, filter.dtype, options, p)
    b, h, w, in_ch = input.shape
    groups = in_ch // in_ch_f
    sh, sw, dh, dw = plan.sh, plan.sw, plan.dh, plan.dw
    win = plan.win
    exact = plan.bound < FLOAT64_EXACT
    if groups == 1 and exact:
        if fmat is None:
            fmat = filter_matrix(filter, p.filter_offset)
        run = compiled_conv.byte_product(p, plan, fmat, bias, conv_columns)
        if run is not None:
            return run(input)
        tail = plan.float_tail(p, fmat, bias, depthwise=False)
        if tail is not None:  # raw inputs: the input offset is in the tail's bias
            cols = conv_columns(input.astype(np.float32), plan, -p.input_offset)
            tail = compiled_conv.tail(p, plan, fmat, bias, depthwise=False) or tail
            return tail(exact_matmul(cols, fmat, plan.raw_bound, plan.f_bound, float32_ok=True))
        x = input.astype(np.float32)
        if p.input_offset:
            x += p.input_offset
        cols = conv_columns(x, plan, 0)
        acc = exact_matmul(cols, fmat, plan.in_bound, plan.f_bound)
        if not p.is_int16:
            acc = _int32_accumulator(acc, plan.bound, bias)
            return _requantize(acc.reshape(b, win.out_h, win.out_w, out_ch), p)
        acc = acc.astype(np.int64).reshape(b, win.out_h, win.out_w, out_ch)
    else:
        x = input.astype(np.int32) + p.input_offset
        xp = pad_for_window(x, win, kh, kw, sh, sw, dh, dw, 0)
        cols = patches(xp, win, kh, kw, sh, sw, dh, dw)  # B, OH, OW, C, KH, KW
        n = b * win.out_h * win.out_w
        cols = cols.reshape(b, win.out_h, win.out_w, groups, in_ch_f, kh, kw)
        cols = cols.transpose(3, 0, 1, 2, 5, 6, 4).reshape(groups, n, kh * kw * in_ch_f)
        f = filter.astype(np.int32) + p.filter_offset
        f = f.reshape(groups, out_ch // groups, kh * kw * in_ch_f).transpose(0, 2, 1)
        acc = int_matmul(cols, f)  # G, N, O/G
        acc = acc.transpose(1, 0, 2).reshape(b, win.out_h, win.out_w, out_ch)
    if bias is not None:
        acc = acc + bias.astype(np.int64).reshape(-1)
    return _requantize(acc, p)


def conv_2d_tail_fn(params: ConvParams, plan: ConvPlan, fmat: np.ndarray,
                    bias: np.ndarray | None):
    """`conv_2d` of inputs of the plan's shape, with this filter matrix and bias, as a
    function of the input alone where it takes the float tail (one group, exact sums):
    the same operations without the per-call checks and lookups (a kernel's ``bind``);
    None elsewhere."""
    groups = plan.input_shape[3] // plan.depth
    if groups != 1 or plan.bound >= FLOAT64_EXACT:
        return None
    run = compiled_conv.byte_product(params, plan, fmat, bias, conv_columns)
    if run is not None:
        return run
    tail = plan.float_tail(params, fmat, bias, depthwise=False)
    if tail is None:
        return None
    pad, raw_bound, f_bound = -params.input_offset, plan.raw_bound, plan.f_bound
    tail = compiled_conv.tail(params, plan, fmat, bias, depthwise=False) or tail

    def run(input: np.ndarray) -> np.ndarray:
        cols = conv_columns(input.astype(np.float32), plan, pad)
        return tail(exact_matmul(cols, fmat, raw_bound, f_bound, float32_ok=True))
    return run


def conv_columns(x: np.ndarray, plan: ConvPlan, pad_value: int) -> np.ndarray:
    """[B*OH*OW, KH*KW*C] patches of an NHWC float input padded with ``pad_value`` (1x1
    unpadded convolutions only subsample)."""
    win, sh, sw = plan.win, plan.sh, plan.sw
    if plan.kh == 1 and plan.kw == 1 and (win.pad_h, win.pad_w) == (0, 0):
        xs = x[:, :(win.out_h - 1) * sh + 1:sh, :(win.out_w - 1) * sw + 1:sw, :]
        return np.ascontiguousarray(xs).reshape(-1, x.shape[3])
    xp = pad_for_window(x, win, plan.kh, plan.kw, sh, sw, plan.dh, plan.dw, pad_value)
    return im2col(xp, win, plan.kh, plan.kw, sh, sw, plan.dh, plan.dw)


def depthwise_filter(filter: np.ndarray, filter_offset: int, ftype) -> np.ndarray:
    """The 1HW(C*M) filter plus its offset as a [KH*KW, C*M] array of ``ftype`` (exact:
    9-bit integers), what depthwise_conv_2d multiplies by; kernels cache it per node."""
    _, kh, kw, out_ch = filter.shape
    return filter.astype(ftype).reshape(kh * kw, out_ch) + ftype(filter_offset)


def _depthwise_bounds(input_dtype, filter_dtype, p: ConvParams) -> tuple[int, int, int]:
    """(input offset, max |input + offset|, max |filter + offset|) of a depthwise conv."""
    offset = 0 if p.is_int16 else p.input_offset  # the int16 kernel has no input offset
    in_info, f_info = np.iinfo(input_dtype), np.iinfo(filter_dtype)
    in_bound = max(abs(int(in_info.min) + offset), abs(int(in_info.max) + offset))
    f_bound = max(abs(int(f_info.min) + p.filter_offset), abs(int(f_info.max) + p.filter_offset))
    return offset, in_bound, f_bound


def depthwise_conv_2d(input: np.ndarray, filter: np.ndarray, bias: np.ndarray | None,
                      input_q=None, filter_q=None, output_q=None,
                      options: Options | None = None, rounding: Rounding = "double",
                      params: ConvParams | None = None, ftaps: np.ndarray | None = None,
                      plan: ConvPlan | None = None) -> np.ndarray:
    """DEPTHWISE_CONV_2D on an NHWC input and a 1HW(C*M) filter.

    Output channel ``ic * depth_multiplier + m`` reads input channel ``ic``.  The sums are
    exact float products: one multiply-add per filter tap over the whole image, or, for a
    one-channel input (where depthwise is an ordinary convolution), im2col + one matmul.
    ``ftaps`` is `depthwise_filter` in the plan's float type and ``plan`` `plan_conv`
    (caches of the kernel).
    """
    options = options or {}
    _, kh, kw, out_ch = filter.shape
    p = params or prepare_conv(input_q, filter_q, output_q, options, input.dtype, out_ch, rounding)
    if plan is None or plan.input_shape != input.shape:
        plan = plan_conv(input.shape, input.dtype, filter.shape, filter.dtype, options, p,
                         depthwise=True)
    if ftaps is None or ftaps.dtype != plan.ftype:
        ftaps = depthwise_filter(filter, p.filter_offset, plan.ftype)
    loop = _compiled_depthwise(p, plan, ftaps, bias)
    if loop is not None:
        return loop(input)
    tail = plan.float_tail(p, ftaps, bias, depthwise=True)
    if tail is not None:  # raw inputs: the input offset is in the tail's bias
        tail = compiled_conv.tail(p, plan, ftaps, bias, depthwise=True) or tail
        return tail(_depthwise_sums(input, ftaps, plan, -p.input_offset, plan.raw_bound))
    offset = 0 if p.is_int16 else p.input_offset  # the int16 kernel has no input offset
    x = input.astype(plan.ftype)
    if offset:
        x += offset
    acc = _depthwise_sums(x, ftaps, plan, 0, plan.in_bound)
    if not p.is_int16:
        acc = _int32_accumulator(acc, plan.bound, bias)
        return _requantize(acc, p, depthwise=True)
    acc = acc.astype(np.int64)
    if bias is not None:
        acc += bias.astype(np.int64).reshape(-1)
    return _requantize(acc, p, depthwise=True)


def _compiled_depthwise(p: ConvParams, plan: ConvPlan, ftaps: np.ndarray,
                        bias: np.ndarray | None):
    """The compiled form of a depthwise convolution, or None: its loop, or for a
    one-channel input (an ordinary convolution) VNNI byte products."""
    if plan.input_shape[3] == 1:
        return compiled_conv.byte_product(p, plan, ftaps, bias, conv_columns, depthwise=True)
    return compiled_conv.depthwise(p, plan, ftaps, bias)


def depthwise_tail_fn(params: ConvParams, plan: ConvPlan, ftaps: np.ndarray,
                      bias: np.ndarray | None):
    """`depthwise_conv_2d` of inputs of the plan's shape, with these filter taps and bias,
    as a function of the input alone where it takes the compiled loop or the float tail
    (`conv_2d_tail_fn`); None elsewhere."""
    if ftaps.dtype != plan.ftype:
        return None
    loop = _compiled_depthwise(params, plan, ftaps, bias)
    if loop is not None:
        return loop
    tail = plan.float_tail(params, ftaps, bias, depthwise=True)
    if tail is None:
        return None
    tail = compiled_conv.tail(params, plan, ftaps, bias, depthwise=True) or tail
    pad, raw_bound = -params.input_offset, plan.raw_bound

    def run(input: np.ndarray) -> np.ndarray:
        return tail(_depthwise_sums(input, ftaps, plan, pad, raw_bound))
    return run


def _depthwise_sums(x: np.ndarray, ftaps: np.ndarray, plan: ConvPlan, pad_value: int,
                    x_bound: int) -> np.ndarray:
    """The exact per-channel window sums of x (NHWC, padded with ``pad_value``, in the
    plan's float type) times ftaps, as [B, OH, OW, C*M] floats (|x| <= ``x_bound``)."""
    win, kh, kw = plan.win, plan.kh, plan.kw
    sh, sw, dh, dw = plan.sh, plan.sw, plan.dh, plan.dw
    if plan.phases is not None:  # (exact sums: the phases' order gives the same integers)
        source, laid = plan.laid
        if source is not ftaps:
            laid = plan.phases.lay(ftaps.reshape(kh, kw, -1))
            plan.laid = (ftaps, laid)
        return plan.phases.sums(plan.phases.split(x, plan.ftype, pad_value), laid)
    xp = _padded_input(x, plan, pad_value)
    b, in_ch, out_ch = x.shape[0], x.shape[3], ftaps.shape[1]
    if in_ch == 1:
        cols = im2col(xp, win, kh, kw, sh, sw, dh, dw)
        acc = exact_matmul(cols, ftaps, x_bound, plan.f_bound, float32_ok=True)
        return acc.reshape(b, win.out_h, win.out_w, out_ch)
    if out_ch > in_ch:
        xp = np.repeat(xp, out_ch // in_ch, axis=3)
    source, tiled = plan.tiled
    if source is not ftaps:
        tiled = np.tile(ftaps, (1, win.out_w))  # [taps, OW*C]
        plan.tiled = (ftaps, tiled)
    return depthwise_taps(xp, ftaps, win, kh, kw, sh, sw, dh, dw, tiled=tiled)


#: padded depthwise inputs up to this size are kept by their plan between calls
PAD_KEEP_BYTES = 1 << 20


def _padded_input(x: np.ndarray, plan: ConvPlan, pad_value: int) -> np.ndarray:
    """``x`` in the plan's float type, padded for its window with ``pad_value``: copied
    into the buffer of the plan's last call, whose border already holds that value (a
    fresh padded array per call cost a fill and a copy more: the cone of an analysis's
    fallback calls small depthwise convolutions thousands of times).  Buffers over
    `PAD_KEEP_BYTES` are not kept (their fill is small beside their sums, and a model of
    large images would hold one per node).  Nothing the call returns refers to the
    buffer."""
    shape = padded_shape(x.shape, plan.win, plan.kh, plan.kw, plan.sh, plan.sw, plan.dh,
                         plan.dw)
    if shape is None:
        return x.astype(plan.ftype, copy=False)
    value, buf = plan.padded
    if buf is None or value != pad_value or buf.shape != shape or buf.dtype != plan.ftype:
        buf = np.full(shape, pad_value, plan.ftype)
        plan.padded = (pad_value, buf) if buf.nbytes <= PAD_KEEP_BYTES else (None, None)
    _, h, w, _ = x.shape
    top, left = plan.win.pad_h, plan.win.pad_w
    buf[:, top:top + h, left:left + w, :] = x
    return buf


def _tap_view(xp: np.ndarray, win: Window, kh: int, kw: int, sh: int, sw: int, dh: int,
              dw: int) -> np.ndarray:
    """[KH, KW, B, OH, OW*C]: every filter tap's input rows, each row's (output column,
    channel) pairs contiguous.  At width stride 1 a read-only strided view of xp itself
    (tap (ky, kx) starts ky*dh rows and kx*dw pixels in; every window lies inside xp);
    otherwise of one copy of the columns each filter column reads."""
    b, h, w, c = xp.shape
    row = win.out_w * c
    if sw == 1:
        base = np.ascontiguousarray(xp)
        steps = (dh * w * c, dw * c, h * w * c, sh * w * c, 1)
    else:
        base = np.empty((kw, b, h, row), xp.dtype)
        for kx in range(kw):
            x0 = kx * dw
            base[kx] = xp[:, :, x0:x0 + (win.out_w - 1) * sw + 1:sw, :].reshape(b, h, row)
        steps = (dh * row, b * h * row, h * row, sh * row, 1)
    # np.ndarray over base's memory: as_strided's own wrapping cost more than the einsum
    # of a small tensor
    view = np.ndarray((kh, kw, b, win.out_h, row), base.dtype, base, 0,
                      tuple(k * base.itemsize for k in steps))
    view.flags.writeable = False
    return view


def depthwise_taps(xp: np.ndarray, ftaps: np.ndarray, win: Window, kh: int, kw: int,
                   sh: int, sw: int, dh: int, dw: int,
                   tiled: np.ndarray | None = None) -> np.ndarray:
    """sum over taps of the shifted input times the tap's per-channel filter values:
    [B, OH, OW, C] in ftaps' float type, exact (every partial sum is an integer below the
    bound `depthwise_dtype` checked, so any summation order gives the same result).

    One einsum of the taps' rows (`_tap_view`: OW*C contiguous values each; channels alone
    would make numpy loop over C-long runs) by the filter tiled to [KH, KW, OW*C]: no
    copy of the taps.  ``tiled`` is ftaps tiled to [taps, OW*C] (a cache)."""
    b, c = xp.shape[0], xp.shape[3]
    if tiled is None:
        tiled = np.tile(ftaps, (1, win.out_w))
    view = _tap_view(xp, win, kh, kw, sh, sw, dh, dw)
    acc = c_einsum("yxbhr,yxr->bhr", view, tiled.reshape(kh, kw, -1))
    return acc.reshape(b, win.out_h, win.out_w, c)


def depthwise_dtype(input_dtype, filter_dtype, p: ConvParams, taps: int):
    """float32 while every tap sum is exact in it (|x| * |f| * taps < 2**24, for raw and
    offset inputs alike), else float64."""
    _, in_bound, f_bound = _depthwise_bounds(input_dtype, filter_dtype, p)
    x_bound = max(in_bound, _max_abs(input_dtype))
    return np.float32 if float(x_bound) * f_bound * taps < FLOAT32_EXACT else np.float64
