"""Convolutions: CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV (float).

The numerical cores (`conv2d`, `depthwise_conv2d`, `transpose_conv2d`) are plain numpy
functions on NHWC arrays.  CONV_2D is im2col in bounded blocks, each multiplied into its
output rows (`float_conv.ConvPlan`; 1x1 stride-1 convolutions multiply the input rows
themselves), by BLAS or, for ``reference`` float sums, in reference_ops::Conv's order
(`float32.ordered_matmul`: bit for bit LiteRT's reference kernel).  DEPTHWISE_CONV_2D
accumulates one multiply and one add per filter tap over the whole image, in the reference
kernel's tap order, then adds the bias (the reference's sum to the bit), or adds its taps
in one einsum under BLAS sums.  TRANSPOSE_CONV scatters blocks of BLAS products
(`float_conv.transpose_conv`).  Padding and output sizes follow TFLite's padding.h.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..integer import conv as int_conv, hybrid as int_hybrid
from ..integer import transpose_conv as int_transpose_conv
from ..integer.hybrid_transpose_conv import hybrid_transpose_conv
from ..padding import transpose_conv_padding
from .common import (ACTIVATION_RANGES, FLOAT_WEIGHT, BuiltinOperator, INT_KINDS, Kernel,
                     KernelError, _float_bounds, apply_activation, clamp_activation, declare,
                     kind, option, register, rounding, tensor_qparams,
                     window_geometry)
from .conv_binds import bind_float, bind_hybrid, bind_int_tail, hybrid_conv, hybrid_depthwise
from .float_conv import ConvPlan, product_for
from .float_depthwise import DepthwisePlan
from .float_conv import transpose_conv as float_transpose_conv
from .float_conv import transpose_filter


def conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
           strides: tuple[int, int] = (1, 1), dilations: tuple[int, int] = (1, 1),
           padding: str = "SAME", act: str | None = None,
           w_matrix: np.ndarray | None = None, plan: ConvPlan | None = None,
           reference_sums: bool = True, checkpoint=None) -> np.ndarray:
    """NHWC convolution with an [O, KH, KW, I] filter; grouped when C is a multiple of I.

    ``w_matrix`` is the filter as [KH*KW*I, O] (`filter_matrix`) and ``plan`` the
    `float_conv.ConvPlan` of x's shape (caches kept by the kernel): im2col in bounded
    blocks, each multiplied into its output rows.  float32 sums follow
    reference_ops::Conv's order unless ``reference_sums`` is False
    (`Interpreter.reference_float_sums`), which takes BLAS's.  ``checkpoint`` is the
    kernel's ``ctx.checkpoint``, called between blocks (a stop request ends it there).
    """
    _, _, _, c = x.shape
    _ratio(c, w.shape[3], f"input depth {c} is not a multiple of the filter depth {w.shape[3]}")
    if plan is None or plan.x_shape != x.shape:
        geometry = window_geometry(x.shape[1:3], w.shape[1:3], strides, dilations, padding)
        plan = ConvPlan(x.shape, w.shape, strides, dilations, geometry)
    if w_matrix is None:
        w_matrix = filter_matrix(w)
    dtype = np.result_type(x, w)
    clamps = act in ACTIVATION_RANGES and dtype.kind == "f"
    out = plan(x, w_matrix, b, _float_bounds(act, dtype) if clamps else None,
               product_for(reference_sums, x, w), checkpoint)
    return out if clamps else apply_activation(out, act)


def _ratio(total: int, part: int, message: str) -> int:
    """``total // part`` where grouped and depthwise convolutions need ``part`` to divide
    ``total`` (a ValueError with ``message`` otherwise)."""
    if part <= 0 or total % part:
        raise ValueError(message)
    return total // part


def filter_matrix(w: np.ndarray) -> np.ndarray:
    o = w.shape[0]
    return np.ascontiguousarray(w.reshape(o, -1).T)


def depthwise_conv2d(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
                     strides: tuple[int, int] = (1, 1), dilations: tuple[int, int] = (1, 1),
                     padding: str = "SAME", act: str | None = None,
                     reference_sums: bool = True,
                     plan: DepthwisePlan | None = None, checkpoint=None) -> np.ndarray:
    """NHWC depthwise convolution with a [1, KH, KW, C*M] filter (M = depth multiplier).

    The taps are added one at a time in the reference kernel's order; float32 sums take
    one einsum over the taps instead when ``reference_sums`` is False
    (`Interpreter.reference_float_sums`: its order is numpy's, a rounding or so away).
    ``plan`` is the `float_depthwise.DepthwisePlan` of x's shape (a cache of the kernel)."""
    c, oc = x.shape[3], w.shape[3]
    _ratio(oc, c, f"filter depth {oc} is not a multiple of the input depth {c}")
    if plan is None or plan.x_shape != x.shape:
        geometry = window_geometry(x.shape[1:3], w.shape[1:3], strides, dilations, padding)
        plan = DepthwisePlan(x.shape, w.shape, strides, dilations, geometry)
    dtype = np.result_type(x, w)
    clamps = act in ACTIVATION_RANGES and dtype.kind == "f"
    out = plan(x, w, b, _float_bounds(act, dtype) if clamps else None, reference_sums,
               checkpoint)
    return out if clamps else apply_activation(out, act)


def transpose_conv2d(x: np.ndarray, w: np.ndarray, output_shape: tuple[int, ...],
                     b: np.ndarray | None = None, strides: tuple[int, int] = (1, 1),
                     padding: str = "SAME", act: str | None = None,
                     w_matrix: np.ndarray | None = None, checkpoint=None) -> np.ndarray:
    """TFLite TRANSPOSE_CONV: scatter each input pixel times an [O, KH, KW, I] filter into
    the output (col2im), the padding computed as for the forward convolution.
    ``w_matrix`` is `float_conv.transpose_filter` of ``w`` (a cache); ``checkpoint`` is
    called between blocks."""
    n, h, wd, ci = x.shape
    o, kh, kw, wi = w.shape
    if wi != ci:
        raise ValueError(f"filter depth {wi} does not match the input depth {ci}")
    on, oh, ow, oc = (int(v) for v in output_shape)
    if oc != o or on != n:
        raise ValueError(f"output shape {list(output_shape)} does not fit the filter/input")
    pads = transpose_conv_padding(padding, (oh, ow), (kh, kw), strides)
    if w_matrix is None:
        w_matrix = transpose_filter(w)
    out = float_transpose_conv(x, w_matrix, (kh, kw), strides, pads, (on, oh, ow, oc),
                               checkpoint)
    if b is not None:
        out += b
    return apply_activation(out, act)


def _strides(node):
    return (int(option(node, "stride_h", 1)), int(option(node, "stride_w", 1)))


def _dilations(node):
    return (int(option(node, "dilation_h_factor", 1)), int(option(node, "dilation_w_factor", 1)))


class _Cache:
    """Per-node cache of a filter rearranged for matmul, keyed on the filter array."""

    __slots__ = ("src", "value", "kind", "params", "plan", "args")

    def __init__(self) -> None:
        self.src = None
        self.value = None
        self.kind = "float"
        #: integer kinds: int_conv.ConvParams; hybrid: (the filter's QParams, the options
        #: `hybrid_options` gives, `integer.hybrid.filter_scales`)
        self.params = None
        self.plan = None  # integer kinds: int_conv.ConvPlan of the prepared input shape
        #: (strides, dilations, padding, activation, plan) of the node's options, read once;
        #: the plan (`float_conv.ConvPlan`, `DepthwisePlan`) of the prepared input shape, for
        #: float nodes only
        self.args: tuple | None = None

    def get(self, src: np.ndarray, make):
        if self.src is not src or self.value is None:
            self.value = make(src)
            self.src = src
        return self.value


def _int_prepare(ctx, node, channels: int, depthwise: bool = False) -> None:
    """Cache the node's kind and, for integer kinds, the prepared multipliers and plan
    (hybrid: what its invoke reads from the filter's quantization and the options)."""
    k = kind(ctx, node)
    cache = node.user_data
    cache.kind = k
    cache.value = None  # the filter cache is per kind (float or offset int)
    cache.plan = None
    if k == "hybrid":  # (the filter's quantization and options, read once)
        fq = tensor_qparams(ctx.input(node, 1))
        cache.params = (fq, hybrid_options(node), int_hybrid.filter_scales(fq, channels))
    if k in INT_KINDS:
        x, w, o = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
        cache.params = int_conv.prepare_conv(tensor_qparams(x), tensor_qparams(w),
                                             tensor_qparams(o), node.builtin_data, x.dtype,
                                             channels, rounding(ctx))
        cache.plan = int_conv.plan_conv(x.shape, x.dtype, w.shape, w.dtype, node.builtin_data,
                                        cache.params, depthwise)


def hybrid_options(node) -> dict:
    """The options a hybrid core gets: its float output goes through
    CalculateActivationRange in LiteRT, so only the clamping activations apply."""
    act = node.builtin_data.get("fused_activation_function")
    if act in (None, "NONE", 0) or clamp_activation(node) is not None:
        return node.builtin_data
    return {**node.builtin_data, "fused_activation_function": "NONE"}


def _bias(ctx, node, k=2):
    b = ctx.input(node, k)
    return None if b is None else b.data


def int16_bias_problem(ctx, node, data_k: int, bias_k: int, depthwise: bool = False
                       ) -> str | None:
    """Why an int16x8 node's bias cannot run as LiteRT runs it, or None.

    depthwise_conv.cc wants an INT64 bias.  conv.cc and transpose_conv.cc take INT32 or
    INT64, but pick the int32 kernel only when the options' quantized_bias_type says
    INT32: an INT32 bias without it is read as INT64 (past the buffer's end), and a
    quantized_bias_type other than the bias's type fails their Prepare."""
    x, b = ctx.input(node, data_k), ctx.input(node, bias_k)
    if x is None or x.type_name != "INT16" or b is None:
        return None
    declared = str(option(node, "quantized_bias_type", "FLOAT32"))
    if depthwise and b.type_name != "INT64":
        return f"{node.name} v{node.version} int16x8 with a {b.type_name} bias: LiteRT wants INT64"
    if b.type_name == "INT32" and declared != "INT32":
        return (f"{node.name} v{node.version} int16x8 with an INT32 bias but quantized_bias_type "
                f"{declared}: LiteRT reads that bias as INT64, past its end")
    if declared in ("INT32", "INT64") and b.type_name != declared:
        return (f"{node.name} v{node.version}: quantized_bias_type {declared} but a "
                f"{b.type_name} bias (LiteRT's Prepare refuses it)")
    return None


#: a bias: float, or int32/int64 with a scale per tensor or per output channel
BIAS_SLOT = "*: none per-tensor per-channel:0"


def filter_accepts(pos: int, axis: int, bias: int, hybrid: str = "INT8 INT4",
                   int8: str = "INT8 INT4"):
    """A convolution's declaration (filter at ``pos``, per-channel on ``axis``, bias at
    ``bias``), per node kind as LiteRT's kernels take them (measured:
    tools/sweep_quant_forms.py): float filters for float nodes; ``hybrid`` types for a
    float input; ``int8`` types for int8 ones; int8 filters for int16x8; uint8 filters
    per tensor for uint8.  An integer filter always carries a scale; the filter's and the
    bias's scales only multiply (a zero one is an all-zero channel, `Accepts.multiplied`)."""
    per = f"per-tensor per-channel:{axis}"
    return declare({bias: BIAS_SLOT}, kinds={
        "float": {pos: FLOAT_WEIGHT},
        "hybrid": {pos: f"{hybrid}: {per}"},
        "int8": {pos: f"{int8}: {per}"},
        "int16": {pos: f"INT8: {per}"},
        "uint8": {pos: "UINT8: per-tensor"}}, multiplied=(pos, bias))


def check_image(op: str, x, first: int = 1, count: int = 2) -> None:
    """LiteRT's Prepare of CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV and CONV_3D wants a
    spatial size of at least one in each dimension of the input (dimensions ``first`` ..
    ``first + count - 1``): a `KernelError` naming the shape otherwise."""
    names = ("height", "width") if count == 2 else ("depth", "height", "width")
    for k in range(count):
        if x.shape[first + k] <= 0:
            raise KernelError(f"{op}: the input of shape {list(x.shape)} has a {names[k]} of "
                              f"{x.shape[first + k]}; LiteRT's Prepare needs at least one")


def zero_sized_output(ctx, node) -> bool:
    """Set an empty output when the prepared output holds no element (a batch of 0, or a
    VALID window one stride short of the input): nothing to compute, as in LiteRT."""
    o = ctx.output(node, 0)
    if o.shape is None or 0 not in o.shape:
        return False
    ctx.set_output(o, np.zeros(o.shape, dtype=o.dtype))
    return True


class _ConvKernel(Kernel):
    """What CONV_2D and DEPTHWISE_CONV_2D share: the node kinds and the per-node cache."""

    types = "float+uint8+int8+int16+hybrid"
    accepts = filter_accepts(1, 0, 2)
    depthwise = False

    def check(self, ctx, node):
        return super().check(ctx, node) or int16_bias_problem(ctx, node, 0, 2, self.depthwise)

    def init(self, ctx, node):
        return _Cache()


@register(BuiltinOperator.CONV_2D, versions=(1, 8))
class Conv2D(_ConvKernel):
    """CONV_2D: float; uint8 (v1), int8 per-channel (v2/v3), int16x8 (v4) bit-exact with
    LiteRT; hybrid float input with int8 weights (v2/v5)."""

    def prepare(self, ctx, node):
        x, w = ctx.input(node, 0), ctx.input(node, 1)
        if len(x.shape) != 4 or len(w.shape) != 4:
            raise ValueError(f"CONV_2D needs 4-D input and filter, got {list(x.shape)} and "
                             f"{list(w.shape)}")
        if w.shape[3] <= 0 or x.shape[3] % w.shape[3]:
            raise ValueError(f"input depth {x.shape[3]} is not a multiple of the filter depth "
                             f"{w.shape[3]}")
        check_image("CONV_2D", x)
        strides, dilations, padding = _strides(node), _dilations(node), option(node, "padding",
                                                                               "SAME")
        geometry = window_geometry(x.shape[1:3], w.shape[1:3], strides, dilations, padding,
                                   "CONV_2D")
        ctx.resize(ctx.output(node, 0), (x.shape[0], geometry[0], geometry[1], w.shape[0]))
        _int_prepare(ctx, node, w.shape[0])
        plan = ConvPlan(x.shape, w.shape, strides, dilations, geometry) \
            if node.user_data.kind == "float" else None
        node.user_data.args = (strides, dilations, padding, clamp_activation(node), plan)

    def bind(self, ctx, node):
        return bind_int_tail(ctx, node, self.invoke,
                             lambda w, p, plan: int_conv.filter_matrix(w, p.filter_offset),
                             int_conv.conv_2d_tail_fn) \
            or bind_hybrid(ctx, node, self.invoke, hybrid_conv) \
            or bind_float(ctx, node, self.invoke, filter_matrix)

    def invoke(self, ctx, node):
        if zero_sized_output(ctx, node):
            return
        x, w = ctx.value(node, 0), ctx.value(node, 1)
        k = node.user_data.kind
        if k in INT_KINDS:
            cache = node.user_data
            p = cache.params
            fmat = cache.get(w, lambda w: int_conv.filter_matrix(w, p.filter_offset))
            out = int_conv.conv_2d(x, w, _bias(ctx, node), options=node.builtin_data, params=p,
                                   fmat=fmat, plan=cache.plan)
            ctx.set_output(ctx.output(node, 0), out)
            return
        if k == "hybrid":
            fq, options, scales = node.user_data.params
            out = int_hybrid.conv_2d(x, w, _bias(ctx, node), fq, options,
                                     fmat=node.user_data.get(w, int_hybrid.conv_filter_matrix),
                                     scales=scales)
            ctx.set_output(ctx.output(node, 0), out)
            return
        b = ctx.input(node, 2)
        strides, dilations, padding, act, plan = node.user_data.args
        out = conv2d(x, w, None if b is None else b.data, strides, dilations, padding, act,
                     w_matrix=node.user_data.get(w, filter_matrix), plan=plan,
                     reference_sums=ctx.interpreter.reference_float_sums,
                     checkpoint=ctx.checkpoint)
        ctx.set_output(ctx.output(node, 0), out)


@register(BuiltinOperator.DEPTHWISE_CONV_2D, versions=(1, 7))
class DepthwiseConv2D(_ConvKernel):
    """DEPTHWISE_CONV_2D: float; uint8 (v1), int8 (v3), int16x8 (v5) bit-exact with LiteRT;
    hybrid float input with int8 weights (v6)."""

    accepts = filter_accepts(1, 3, 2, hybrid="INT8")

    depthwise = True

    def check(self, ctx, node):
        why = super().check(ctx, node)
        w = ctx.input(node, 1)
        if why is None and kind(ctx, node) == "hybrid" and w is not None:
            scales = 0 if w.quantization is None else int(np.size(w.quantization.scale))
            if scales != w.shape[-1]:
                # depthwise_conv.cc compares the scale count with the dimension named by
                # quantized_dimension (1 for the default 0), then reads one scale per
                # output channel: past the end of a single scale
                return (f"DEPTHWISE_CONV_2D v{node.version} hybrid with {scales} filter "
                        f"scale(s) for {w.shape[-1]} channels: LiteRT's hybrid kernel needs "
                        "one per channel (with fewer it reads past the scales)")
        return why

    def prepare(self, ctx, node):
        x, w = ctx.input(node, 0), ctx.input(node, 1)
        if len(x.shape) != 4 or len(w.shape) != 4:
            raise ValueError("DEPTHWISE_CONV_2D needs 4-D input and filter")
        if x.shape[3] <= 0 or w.shape[3] % x.shape[3]:
            raise ValueError(f"filter depth {w.shape[3]} is not a multiple of the input depth "
                             f"{x.shape[3]}")
        check_image("DEPTHWISE_CONV_2D", x)
        strides, dilations = _strides(node), _dilations(node)
        geometry = window_geometry(x.shape[1:3], w.shape[1:3], strides, dilations,
                                   option(node, "padding", "SAME"), "DEPTHWISE_CONV_2D")
        ctx.resize(ctx.output(node, 0), (x.shape[0], geometry[0], geometry[1], w.shape[3]))
        _int_prepare(ctx, node, w.shape[3], depthwise=True)
        plan = DepthwisePlan(x.shape, w.shape, strides, dilations, geometry) \
            if node.user_data.kind == "float" else None
        node.user_data.args = (strides, dilations, option(node, "padding", "SAME"),
                               clamp_activation(node), plan)

    def bind(self, ctx, node):
        return bind_int_tail(
            ctx, node, self.invoke,
            lambda w, p, plan: int_conv.depthwise_filter(w, p.filter_offset, plan.ftype),
            int_conv.depthwise_tail_fn) \
            or bind_hybrid(ctx, node, self.invoke, hybrid_depthwise) \
            or bind_float(ctx, node, self.invoke)

    def invoke(self, ctx, node):
        if zero_sized_output(ctx, node):
            return
        cache = node.user_data
        k = cache.kind
        if k in INT_KINDS:
            x, w = ctx.value(node, 0), ctx.value(node, 1)
            p, plan = cache.params, cache.plan
            ftaps = cache.get(w, lambda w: int_conv.depthwise_filter(w, p.filter_offset,
                                                                     plan.ftype))
            out = int_conv.depthwise_conv_2d(x, w, _bias(ctx, node), options=node.builtin_data,
                                             params=p, ftaps=ftaps, plan=plan)
            ctx.set_output(ctx.output(node, 0), out)
            return
        if k == "hybrid":
            fq, options, scales = cache.params
            w, out_w = ctx.value(node, 1), ctx.output(node, 0).shape[2]
            taps = cache.get(w, lambda w: int_hybrid.depthwise_filter_taps(w, out_w))
            out = int_hybrid.depthwise_conv_2d(ctx.value(node, 0), w, _bias(ctx, node), fq,
                                               options, scales, taps)
            ctx.set_output(ctx.output(node, 0), out)
            return
        b = ctx.input(node, 2)
        strides, dilations, padding, act, plan = cache.args
        out = depthwise_conv2d(ctx.value(node, 0), ctx.value(node, 1),
                               None if b is None else b.data, strides, dilations, padding, act,
                               reference_sums=ctx.interpreter.reference_float_sums, plan=plan,
                               checkpoint=ctx.checkpoint)
        ctx.set_output(ctx.output(node, 0), out)


@register(BuiltinOperator.TRANSPOSE_CONV, versions=(1, 5))
class TransposeConv(Kernel):
    """Inputs: output_shape, weights [O, KH, KW, I], input, optional bias.

    float; uint8 (per-tensor), int8 (per-channel) and int16x8 (int64 or int32 bias)
    bit-exact with LiteRT's reference kernels (integer/transpose_conv.py); hybrid (float
    input, int8 weights, one scale or one per output channel) as its EvalHybrid.  The
    node's kind is its data input's (input 2)."""

    types = "float+uint8+int8+int16+hybrid"
    accepts = filter_accepts(1, 0, 3, hybrid="INT8", int8="INT8")

    def node_kind(self, ctx, node):
        """The kind of the data input (input 2), as the kernel dispatches."""
        return kind(ctx, self._data_first(node))

    @staticmethod
    def _data_first(node):
        ins = list(node.inputs)
        order = [ins[2], ins[1], ins[0]] + ins[3:] if len(ins) >= 3 else ins
        return dataclasses.replace(node, inputs=tuple(order))

    def check(self, ctx, node):
        from ..registration import check_types
        why = check_types(ctx, self._data_first(node), self.types) or \
            int16_bias_problem(ctx, node, 2, 3)
        w = ctx.input(node, 1)
        if why is None and kind(ctx, self._data_first(node)) == "hybrid":
            q = w.quantization
            scales = 0 if q is None else int(np.size(q.scale))
            if w.type_name != "INT8" or scales not in (1, w.shape[0]) or \
                    (scales > 1 and q.quantized_dimension != 0):
                return (f"TRANSPOSE_CONV v{node.version} hybrid: LiteRT takes INT8 weights "
                        "with one scale or one per output channel (dimension 0), not "
                        f"{w.type_name} with {scales}")
        return why

    def init(self, ctx, node):
        return {}

    def prepare(self, ctx, node):
        shape = ctx.known_value(node, 0)
        if shape is None:
            ctx.set_dynamic(ctx.output(node, 0))
        else:
            ctx.resize(ctx.output(node, 0), [int(v) for v in shape])
        cache = node.user_data
        x, w = ctx.input(node, 2), ctx.input(node, 1)
        if x.shape is not None and len(x.shape) == 4:
            check_image("TRANSPOSE_CONV", x)
        cache["kind"] = k = kind(ctx, self._data_first(node))
        if k in INT_KINDS:
            cache["params"] = int_transpose_conv.prepare_transpose_conv(
                tensor_qparams(x), tensor_qparams(w), tensor_qparams(ctx.output(node, 0)),
                node.builtin_data, x.dtype, int(w.shape[0]), rounding(ctx))

    def invoke(self, ctx, node):
        b = ctx.input(node, 3)
        out_shape = tuple(int(v) for v in ctx.value(node, 0))
        if node.user_data.get("kind") == "hybrid":
            w = ctx.input(node, 1)
            out = apply_activation(hybrid_transpose_conv(
                ctx.value(node, 2), w.data, out_shape, None if b is None else b.data,
                w.quantization.scale, node.builtin_data), clamp_activation(node))
            ctx.set_output(ctx.output(node, 0), out)
            return
        if node.user_data.get("kind") in INT_KINDS:
            out = int_transpose_conv.transpose_conv(
                ctx.value(node, 2), ctx.value(node, 1), out_shape, None if b is None else b.data,
                options=node.builtin_data, params=node.user_data["params"])
            ctx.set_output(ctx.output(node, 0), out)
            return
        w = ctx.value(node, 1)
        cache = node.user_data
        if cache.get("float_src") is not w:  # the products' filter matrix, once per filter
            cache["float_src"], cache["float_matrix"] = w, transpose_filter(w)
        out = transpose_conv2d(ctx.value(node, 2), w, out_shape, None if b is None else b.data,
                               _strides(node), option(node, "padding", "SAME"),
                               clamp_activation(node), w_matrix=cache["float_matrix"],
                               checkpoint=ctx.checkpoint)
        ctx.set_output(ctx.output(node, 0), out)
