"""The ``bind`` forms of the convolution kernels (kernels/conv.py): a node's plan step bound
to a function of its input's data, prepared once per input shape, filter and bias.

* `bind_int_tail`: 8-bit CONV_2D and DEPTHWISE_CONV_2D, to the integer kernels' prepared
  functions (the compiled loops, VNNI byte products, or BLAS and the float tail).
* `bind_hybrid`: hybrid CONV_2D and DEPTHWISE_CONV_2D, to `integer.hybrid_plans`.
* `bind_float`: float CONV_2D and DEPTHWISE_CONV_2D, to their plans.

Each falls back to the node's ``invoke`` for an input, filter or bias not as prepared.
"""
from __future__ import annotations

import numpy as np

from ..integer import hybrid as int_hybrid, hybrid_plans
from .common import _float_bounds
from .float_conv import product_for


def _bound(x, o, run, invoke, set_output, dtype: np.dtype | None = None):
    """A node's plan step bound to ``run``: the input's data, while it has the prepared
    shape (and ``dtype``), to ``run`` and its result to the output; anything else to the
    kernel's ``invoke``, whose checks and messages then apply."""
    shape, out_shape, out_dtype = x.shape, o.shape, o.dtype

    def bound(ctx, node) -> None:
        data = x.data
        if data is None or data.shape != shape or (dtype is not None and data.dtype != dtype):
            invoke(ctx, node)
            return
        out = run(data)
        if out.shape == out_shape and out.dtype == out_dtype:
            o.data = out  # (what set_output stores for a static output of its shape)
        else:
            set_output(o, out)
    return bound


def bind_int_tail(ctx, node, invoke, make_filter, tail_fn):
    """A ``bind`` of an 8-bit CONV_2D or DEPTHWISE_CONV_2D node whose filter and bias are
    constants and which takes the float tail: its input's data straight to the integer
    kernel's prepared function (``tail_fn(params, plan, filter values, bias)``,
    ``make_filter(filter, params, plan)`` its cached filter form); ``invoke`` for an input
    of another shape.  None where the node's invoke does more (other kinds, the integer
    path, an empty output, computed weights)."""
    cache = node.user_data
    if cache.kind not in ("uint8", "int8") or cache.plan is None:
        return None
    x, w, b, o = ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2), ctx.output(node, 0)
    if not w.is_constant or w.data is None or (b is not None and not b.is_constant) \
            or o.shape is None or 0 in o.shape or o.is_dynamic \
            or x.shape != cache.plan.input_shape:
        return None
    p, plan = cache.params, cache.plan
    fvalues = cache.get(w.data, lambda data: make_filter(data, p, plan))
    run = tail_fn(p, plan, fvalues, None if b is None else b.data)
    if run is None:
        return None
    bound = _bound(x, o, run, invoke, ctx.set_output)
    #: (input, output, ``run`` itself): ``run`` takes a batch of such inputs stacked on
    #: the first axis, each computed as on its own (exact sums, elementwise tails), which
    #: the analysis's fallback cone uses to compute many runs of the node at once
    bound.batched = (x.index, o.index, run)  # type: ignore[attr-defined]
    return bound


def bind_hybrid(ctx, node, invoke, make):
    """A ``bind`` of a hybrid CONV_2D or DEPTHWISE_CONV_2D node whose int8 filter and bias
    are constants: its input's data straight to the function `hybrid_plans` prepares
    (``make(input shape, filter, bias, cache, output shape)``); ``invoke`` for an input of
    another shape or type.  None for other kinds and where the plan declines."""
    cache = node.user_data
    if cache.kind != "hybrid":
        return None
    x, w, b, o = ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2), ctx.output(node, 0)
    if not w.is_constant or w.data is None or w.data.dtype != np.int8 \
            or w.data.shape != tuple(w.shape) or (b is not None and not b.is_constant) \
            or x.shape is None or o.shape is None or 0 in o.shape or o.is_dynamic:
        return None
    run = make(tuple(x.shape), w.data, None if b is None else b.data, cache, tuple(o.shape))
    if run is None:
        return None
    return _bound(x, o, run, invoke, ctx.set_output, np.dtype(np.float32))


def hybrid_conv(shape, w, bias, cache, _out_shape):
    """`bind_hybrid`'s ``make`` for CONV_2D: `hybrid_plans.conv_2d_fn`."""
    _, options, scales = cache.params
    return hybrid_plans.conv_2d_fn(shape, w, bias, options,
                                   cache.get(w, int_hybrid.conv_filter_matrix), scales)


def hybrid_depthwise(shape, w, bias, cache, out_shape):
    """`bind_hybrid`'s ``make`` for DEPTHWISE_CONV_2D: `hybrid_plans.depthwise_conv_2d_fn`,
    with the filter's taps tiled to the output's width."""
    _, options, scales = cache.params
    out_w = out_shape[2]
    taps = cache.get(w, lambda w: int_hybrid.depthwise_filter_taps(w, out_w))
    return hybrid_plans.depthwise_conv_2d_fn(shape, w, bias, options, scales, taps)


def bind_float(ctx, node, invoke, make_filter=None):
    """A ``bind`` of a float CONV_2D (``make_filter``: `filter_matrix`) or
    DEPTHWISE_CONV_2D (None) node: its input's data straight to the node's plan, with the
    filter form kept for the filter array (a constant, or a DEQUANTIZE's cached output),
    the bias, the bounds and the float sums the interpreter has at each call; ``invoke``
    for an input or filter not as prepared.  None for other kinds, an empty or dynamic
    output, or an output type the plan does not give."""
    cache = node.user_data
    plan = cache.args[4] if cache.kind == "float" and cache.args is not None else None
    x, w, b, o = ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2), ctx.output(node, 0)
    if plan is None or o.shape is None or o.is_dynamic or 0 in o.shape \
            or x.shape != plan.x_shape or x.dtype is None or w.dtype is None:
        return None
    dtype = np.result_type(x.dtype, w.dtype)
    if o.dtype != dtype or dtype.kind != "f" or (b is not None and b.dtype is None):
        return None
    act = cache.args[3]
    bounds = None if act is None else _float_bounds(act, dtype)
    shape, xtype, wshape, wtype = x.shape, x.dtype, w.shape, w.dtype
    bshape = None if b is None else (b.shape, b.dtype)
    interp = ctx.interpreter

    def bound(ctx, node) -> None:
        data, filt = x.data, w.data
        bias = None if b is None else b.data
        if data is None or data.shape != shape or data.dtype != xtype or filt is None \
                or filt.shape != wshape or filt.dtype != wtype \
                or (b is not None and (bias is None or (bias.shape, bias.dtype) != bshape)):
            invoke(ctx, node)
            return
        reference = interp.reference_float_sums
        if make_filter is None:
            o.data = plan(data, filt, bias, bounds, reference, ctx.checkpoint)
            return
        # (the kept filter matrix looked up here: a call less per node and invoke)
        matrix = cache.value if cache.src is filt and cache.value is not None \
            else cache.get(filt, make_filter)
        o.data = plan(data, matrix, bias, bounds,
                      product_for(reference, data, filt) if reference else None,
                      ctx.checkpoint)
    if w.data is None or (b is not None and b.data is None) or xtype != wtype:
        return bound
    # the filter and bias arrays there now: the plan's whole computation with them as a
    # function of the input alone (`ConvPlan.product`, `DepthwisePlan.product`), taken
    # while they stay those arrays and the sums BLAS's
    filt0, bias0 = w.data, None if b is None else b.data
    product = plan.product(filt0 if make_filter is None else cache.get(filt0, make_filter),
                           bias0, bounds, dtype)
    if product is None:
        return bound

    def bound_product(ctx, node) -> None:
        data = x.data
        if data is None or data.shape != shape or data.dtype != xtype or w.data is not filt0 \
                or (b is not None and b.data is not bias0) or interp.reference_float_sums:
            bound(ctx, node)
            return
        o.data = product(data)
    return bound_product
