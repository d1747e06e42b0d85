"""Padding, tiling and filling: PAD, PADV2, MIRROR_PAD, TILE, BROADCAST_TO, FILL, ZEROS_LIKE,
the ops whose output is its input (or one value) grown to a new shape.  Like the other shape
ops (`shape_ops`) they move data of any type."""
from __future__ import annotations

import numpy as np

from .common import (BuiltinOperator as Op, KernelError, as_int_list, bind_arrays,
                     check_output_allocation, define, option, quantization_mismatch,
                     same_shape)


# -- PAD / PADV2 / MIRROR_PAD --------------------------------------------------------------
def _paddings(p, rank):
    p = np.asarray(p).reshape(-1, 2)
    if p.shape[0] != rank or np.any(p < 0):
        raise ValueError(f"paddings {p.tolist()} do not fit rank {rank}")
    return [(int(a), int(b)) for a, b in p]


def _pad_shape(ctx, node):
    p = ctx.known_value(node, 1)
    if p is None:
        return None
    shape = ctx.input(node, 0).shape
    return [tuple(d + a + b for d, (a, b) in zip(shape, _paddings(p, len(shape))))]


def _pad_value(ctx, node):
    """PADV2's constant, else zero: for quantized tensors the output's zero point (what
    LiteRT pads with, whatever the input's parameters: its per-tensor zero point, which
    per-channel parameters leave at 0)."""
    if len(node.inputs) > 2 and node.inputs[2] >= 0:
        return ctx.value(node, 2).reshape(-1)[0]
    out = ctx.output(node, 0)
    q = out.quantization
    if out.is_quantized_int and q is not None and q.zero_point.size == 1:
        return q.zero_point[0]
    return 0


def _padv2_check(ctx, node):
    """LiteRT's PADV2 needs its constant in the output's scale and zero point (the input's
    may differ: its integers are copied)."""
    if len(node.inputs) > 2 and node.inputs[2] >= 0:
        return quantization_mismatch(ctx, node, [node.inputs[2], node.outputs[0]])
    return None


def _pad(ctx, node):
    """The output filled with the pad value, the input copied into it: what np.pad's
    constant mode computes, in half its time (a channel pad of face_detection's)."""
    x = ctx.value(node, 0)
    pads = _paddings(ctx.value(node, 1), x.ndim)
    out = np.full(tuple(d + a + b for d, (a, b) in zip(x.shape, pads)), _pad_value(ctx, node),
                  x.dtype)
    out[tuple(slice(a, a + d) for d, (a, _) in zip(x.shape, pads))] = x
    return out


def _bound_pad(ctx, node):
    """PAD / PADV2 with constant paddings and value: the output's shape, the input's place
    in it and the value read once (`bind_arrays`)."""
    x, pads = ctx.input(node, 0), ctx.known_value(node, 1)
    if pads is None or any(ctx.known_value(node, k) is None
                           for k in range(2, len(node.inputs))):
        return None
    try:
        pads, value = _paddings(pads, len(x.shape)), _pad_value(ctx, node)
    except ValueError:
        return None  # the unbound kernel reports it
    shape = tuple(d + a + b for d, (a, b) in zip(x.shape, pads))
    inside = tuple(slice(a, a + d) for d, (a, _) in zip(x.shape, pads))
    dtype = x.dtype

    def run(data: np.ndarray, *_constants) -> np.ndarray:
        out = np.full(shape, value, dtype)
        out[inside] = data
        return out
    return run


define(Op.PAD, (1, 5), _pad, _pad_shape, types="any", bind=bind_arrays(_bound_pad))
define(Op.PADV2, (1, 5), _pad, _pad_shape, types="any", check=_padv2_check,
       bind=bind_arrays(_bound_pad))


def mirror_pad(x: np.ndarray, paddings, mode: str) -> np.ndarray:
    """MirrorPad: each side padded with at most the dimension less the mode's offset (1 for
    REFLECT, which leaves out the edge, 0 for SYMMETRIC), as mirror_pad.cc's Prepare
    requires (numpy would reflect again past that)."""
    offset = 1 if mode == "REFLECT" else 0
    for d, (left, right) in enumerate(paddings):
        most = x.shape[d] - offset
        if left > most or right > most:
            raise KernelError(f"MIRROR_PAD ({mode}): paddings ({left}, {right}) of dimension "
                              f"{d} exceed its size {x.shape[d]} less the mode's offset "
                              f"{offset} (at most {max(most, 0)} each side)")
    return np.pad(x, paddings, mode="reflect" if mode == "REFLECT" else "symmetric")


define(Op.MIRROR_PAD, (1, 3), lambda ctx, node: mirror_pad(
    ctx.value(node, 0), _paddings(ctx.value(node, 1), ctx.value(node, 0).ndim),
    option(node, "mode", "REFLECT")), _pad_shape, types="any", same_quantization=True)


# -- TILE / BROADCAST_TO / FILL / *_LIKE -----------------------------------------------------
def _multipliers(rank: int, reps) -> list[int]:
    """TILE's multipliers: one per input dimension (tile.cc's Prepare)."""
    reps = as_int_list(reps)
    if len(reps) != rank:
        raise KernelError(f"TILE: {len(reps)} multipliers {reps} for an input of rank {rank}")
    return reps


def _tile(ctx, node):
    x = ctx.value(node, 0)
    reps = _multipliers(x.ndim, ctx.value(node, 1))
    check_output_allocation(ctx, node, [d * r for d, r in zip(x.shape, reps)])
    return np.tile(x, reps)


define(Op.TILE, (1, 3), _tile, lambda ctx, node: None if ctx.known_value(node, 1) is None else
       [tuple(d * r for d, r in zip(ctx.input(node, 0).shape, _multipliers(
           len(ctx.input(node, 0).shape), ctx.known_value(node, 1))))],
       types="any")


def _broadcast_to(ctx, node):
    shape = tuple(as_int_list(ctx.value(node, 1)))
    check_output_allocation(ctx, node, shape)
    return np.array(np.broadcast_to(ctx.value(node, 0), shape))


define(Op.BROADCAST_TO, (2, 4), _broadcast_to,
       lambda ctx, node: None if ctx.known_value(node, 1) is None else
       [tuple(as_int_list(ctx.known_value(node, 1)))], types="any")


def _fill(ctx, node):
    shape = tuple(as_int_list(ctx.value(node, 0)))
    check_output_allocation(ctx, node, shape)
    return np.full(shape, ctx.value(node, 1).reshape(-1)[0], dtype=ctx.output(node, 0).dtype)


define(Op.FILL, (1, 5), _fill, lambda ctx, node: None if ctx.known_value(node, 0) is None else
       [tuple(as_int_list(ctx.known_value(node, 0)))], types="any")
def _zeros_like_check(ctx, node):
    """Integer zeros are not real zeros in a quantized tensor, and LiteRT's ZEROS_LIKE
    refuses those types."""
    t = ctx.input(node, 0)
    if t.is_quantized_int:
        return (f"{node.name} v{node.version} on quantized {t.dtype} tensor {t.index} "
                f"({t.name}): LiteRT's kernel supports only float32, int32 and int64")
    return None


define(Op.ZEROS_LIKE, (1, 1), lambda ctx, node: np.zeros_like(ctx.value(node, 0)), same_shape,
       types="any", check=_zeros_like_check)
# (TFLite has no ONES_LIKE builtin: converters lower it to FILL.)
