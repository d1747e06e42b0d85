"""2-D pooling: AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D (float, NHWC).

Windows are taken only over the valid (unpadded) part of the input, as TFLite does: the
average divides by the count of in-bounds elements, the max ignores the padding.
"""
from __future__ import annotations

import numpy as np

from ..float32 import ordered_sum
from ..integer import pooling as int_pooling
from .common import (QUANTIZED, BuiltinOperator as Op, INT_KINDS, Kernel, apply_activation,
                     clamp_activation, kind, option, pad_for_windows, register, tensor_qparams,
                     window_geometry)


def _geometry(x, fh, fw, sh, sw, padding):
    return window_geometry(x.shape[1:3], (fh, fw), (sh, sw), (1, 1), padding)


def _max_pool_2x2(x: np.ndarray, oh: int, ow: int) -> np.ndarray:
    """A 2x2 max pool of stride 2 whose windows lie inside ``x`` (C-contiguous): the two
    rows of each window compared as whole rows of 2*OW*C values, then the two columns;
    over taps taken one by one numpy's loop ran C values at a time."""
    n, _, _, c = x.shape
    s_n, s_h, _, s_c = x.strides
    rows = [np.ndarray((n, oh, 2 * ow * c), x.dtype, x, k * s_h, (s_n, 2 * s_h, s_c))
            for k in (0, 1)]
    pairs = np.maximum(rows[0], rows[1]).reshape(n, oh, ow, 2, c)
    return np.maximum(pairs[:, :, :, 0], pairs[:, :, :, 1])


def max_pool2d(x: np.ndarray, fh: int, fw: int, sh: int = 1, sw: int = 1,
               padding: str = "VALID", act: str | None = None) -> np.ndarray:
    oh, ow, pt, pl = _geometry(x, fh, fw, sh, sw, padding)
    if (fh, fw, sh, sw, pt, pl) == (2, 2, 2, 2, 0, 0) and 2 * oh <= x.shape[1] \
            and 2 * ow <= x.shape[2] and x.flags.c_contiguous and x.size:
        return apply_activation(_max_pool_2x2(x, oh, ow), act)
    xp = pad_for_windows(x, oh, ow, fh, fw, sh, sw, pt, pl, value=-np.inf)
    out = None
    for tap in int_pooling.taps(xp, oh, ow, fh, fw, sh, sw):
        out = np.array(tap) if out is None else np.maximum(out, tap, out=out)
    return apply_activation(out, act)


def average_pool2d(x: np.ndarray, fh: int, fw: int, sh: int = 1, sw: int = 1,
                   padding: str = "VALID", act: str | None = None) -> np.ndarray:
    oh, ow, pt, pl = _geometry(x, fh, fw, sh, sw, padding)
    if (oh, ow, pt, pl, fh, fw) == (1, 1, 0, 0) + x.shape[1:3] and x.size \
            and x.dtype == np.float32:
        # one window, the whole image (a global pool): the reference's sum from 0.f over
        # the taps in memory order in one ordered reduction, where the taps one by one
        # took a numpy call each (49 for mobilenet_v1's 7x7)
        out = ordered_sum(x, (1, 2), keepdims=True)
        out /= x.dtype.type(fh * fw)
        return apply_activation(out, act)
    xp = pad_for_windows(x, oh, ow, fh, fw, sh, sw, pt, pl)
    out = None
    for tap in int_pooling.taps(xp, oh, ow, fh, fw, sh, sw):  # (from +0, as the kernels)
        out = np.add(tap, x.dtype.type(0)) if out is None else np.add(out, tap, out=out)
    count = (int_pooling.in_image_counts(x.shape[1], oh, fh, sh, pt)[:, None] *
             int_pooling.in_image_counts(x.shape[2], ow, fw, sw, pl)[None, :]).astype(x.dtype)
    out /= count[None, :, :, None]
    return apply_activation(out, act)


def l2_pool2d(x: np.ndarray, fh: int, fw: int, sh: int = 1, sw: int = 1,
              padding: str = "VALID", act: str | None = None) -> np.ndarray:
    avg = average_pool2d(np.square(x), fh, fw, sh, sw, padding)
    return apply_activation(np.sqrt(avg), act)


class _Pool(Kernel):
    fn = None
    int_fn = None

    def _params(self, node):
        return (int(option(node, "filter_height", 1)), int(option(node, "filter_width", 1)),
                int(option(node, "stride_h", 1)), int(option(node, "stride_w", 1)),
                option(node, "padding", "VALID"))

    def prepare(self, ctx, node):
        x = ctx.input(node, 0)
        if len(x.shape) != 4:
            raise ValueError(f"{node.name} needs a 4-D input, got {list(x.shape)}")
        fh, fw, sh, sw, padding = self._params(node)
        oh, ow, _, _ = window_geometry(x.shape[1:3], (fh, fw), (sh, sw), (1, 1), padding)
        ctx.resize(ctx.output(node, 0), (x.shape[0], oh, ow, x.shape[3]))
        node.user_data = None
        if kind(ctx, node) in INT_KINDS:
            node.user_data = int_pooling.prepare_pool(x.shape, x.dtype,
                                                      tensor_qparams(ctx.output(node, 0)),
                                                      node.builtin_data)

    def bind(self, ctx, node):
        """A float node of the prepared shape: its options read once."""
        x, o = ctx.input(node, 0), ctx.output(node, 0)
        if node.user_data is not None or x.dtype != np.float32 or o.is_dynamic:
            return None
        fn, args = type(self).fn, self._params(node) + (clamp_activation(node),)
        shape = x.shape

        def run(ctx, node) -> None:
            data = x.data
            if data is None or data.shape != shape or data.dtype != np.float32:
                self.invoke(ctx, node)
                return
            ctx.set_output(o, fn(data, *args))
        return run

    def invoke(self, ctx, node):
        if node.user_data is not None:  # quantized: raw values, the prepared PoolPlan
            out = type(self).int_fn(ctx.value(node, 0), plan=node.user_data)
            ctx.set_output(ctx.output(node, 0), out)
            return
        fh, fw, sh, sw, padding = self._params(node)
        out = type(self).fn(ctx.value(node, 0), fh, fw, sh, sw, padding, clamp_activation(node))
        ctx.set_output(ctx.output(node, 0), out)


@register(Op.MAX_POOL_2D, versions=(1, 3))
class MaxPool2D(_Pool):
    types = QUANTIZED
    fn = staticmethod(max_pool2d)
    int_fn = staticmethod(int_pooling.max_pool_2d)


@register(Op.AVERAGE_POOL_2D, versions=(1, 3))
class AveragePool2D(_Pool):
    types = QUANTIZED
    fn = staticmethod(average_pool2d)
    int_fn = staticmethod(int_pooling.average_pool_2d)


@register(Op.L2_POOL_2D, versions=(1, 1))
class L2Pool2D(_Pool):
    fn = staticmethod(l2_pool2d)
