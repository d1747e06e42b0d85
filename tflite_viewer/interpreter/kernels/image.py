"""Spatial rearrangements and resizing: SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, RESIZE_BILINEAR, RESIZE_NEAREST_NEIGHBOR (NHWC)."""
from __future__ import annotations

import math

import numpy as np

from ..integer import resize as int_resize
from .common import BuiltinOperator as Op, KernelError, as_int_list, define, derived, option


def space_to_batch_nd(x: np.ndarray, block, paddings, pad_value=0) -> np.ndarray:
    """[N, S1..Sm, rest] -> [N*prod(block), (S+pads)/block..., rest], TF's batch order
    (block offset major, original batch minor).  Padding takes ``pad_value`` (the output
    zero point for quantized tensors, as LiteRT's output_offset)."""
    block = [int(b) for b in block]
    m = len(block)
    pads = np.asarray(paddings).reshape(m, 2)
    widths = [(0, 0)] + [(int(a), int(b)) for a, b in pads] + [(0, 0)] * (x.ndim - 1 - m)
    if any(a or b for a, b in widths):
        padded = np.full([d + a + b for d, (a, b) in zip(x.shape, widths)], pad_value, x.dtype)
        padded[tuple(slice(a, a + d) for d, (a, _) in zip(x.shape, widths))] = x
        x = padded
    n = x.shape[0]
    spatial = x.shape[1:1 + m]
    rest = x.shape[1 + m:]
    if any(s % b for s, b in zip(spatial, block)):
        raise ValueError(f"padded spatial shape {list(spatial)} is not a multiple of block {block}")
    shape = [n]
    for s, b in zip(spatial, block):
        shape += [s // b, b]
    x = x.reshape(shape + list(rest))
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + \
        list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    x = x.transpose(perm)
    return np.ascontiguousarray(x.reshape([n * math.prod(int(b) for b in block)] +
                                          [s // b for s, b in zip(spatial, block)] + list(rest)))


def batch_to_space_nd(x: np.ndarray, block, crops) -> np.ndarray:
    block = [int(b) for b in block]
    m = len(block)
    crops = np.asarray(crops).reshape(m, 2)
    nb = math.prod(int(b) for b in block)
    if x.shape[0] % nb:
        raise ValueError(f"batch {x.shape[0]} is not a multiple of the block size {nb}")
    n = x.shape[0] // nb
    spatial = x.shape[1:1 + m]
    rest = x.shape[1 + m:]
    x = x.reshape(block + [n] + list(spatial) + list(rest))
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, x.ndim))
    x = x.transpose(perm).reshape([n] + [s * b for s, b in zip(spatial, block)] + list(rest))
    idx = [slice(None)]
    for i in range(m):
        a, b = int(crops[i, 0]), int(crops[i, 1])
        idx.append(slice(a, x.shape[1 + i] - b))
    return np.ascontiguousarray(x[tuple(idx)])


def _block_and_pairs(ctx, node):
    """(input shape, block shape, (begin, end) pairs) of SPACE_TO_BATCH_ND (the pairs are
    paddings) or BATCH_TO_SPACE_ND (crops); None unless inputs 1 and 2 are known at
    prepare, when the output shape can be computed."""
    block, pairs = ctx.known_value(node, 1), ctx.known_value(node, 2)
    if block is None or pairs is None:
        return None
    return ctx.input(node, 0).shape, as_int_list(block), np.asarray(pairs).reshape(-1, 2)


def _s2b_shape(ctx, node):
    known = _block_and_pairs(ctx, node)
    if known is None:
        return None
    shape, block, pads = known
    spatial = [shape[1 + i] + int(pads[i, 0]) + int(pads[i, 1]) for i in range(len(block))]
    if any(s % b for s, b in zip(spatial, block)):
        raise ValueError(f"padded spatial shape {spatial} is not a multiple of block {block}")
    return [(shape[0] * math.prod(int(b) for b in block),) + tuple(s // b for s, b in zip(spatial, block)) +
            tuple(shape[1 + len(block):])]


def _b2s_shape(ctx, node):
    known = _block_and_pairs(ctx, node)
    if known is None:
        return None
    shape, block, crops = known
    return [(shape[0] // math.prod(int(b) for b in block),) +
            tuple(shape[1 + i] * b - int(crops[i, 0]) - int(crops[i, 1])
                  for i, b in enumerate(block)) + tuple(shape[1 + len(block):])]


def _zero_point(t) -> int:
    q = t.quantization
    if t.is_quantized_int and q is not None and q.zero_point.size:
        return int(q.zero_point[0])
    return 0


def _gather_pixels(node, x: np.ndarray, axis: int, rearrange, fill, sources: tuple):
    """``rearrange`` (which moves whole pixels: x's dims from ``axis`` on travel together)
    as one gather, or None when x has no bytes to move.

    The node caches the gather index, which ``rearrange`` itself builds from pixel
    numbers (padding takes number n, an extra pixel filled with ``fill``), with the pixel
    type, per input shape and ``sources`` (what else rearrange depends on; see
    `derived`); each pixel moves as one opaque element, not value by value."""
    lead, rest = x.shape[:axis], x.shape[axis:]

    def index():
        n = math.prod(lead)
        nbytes = math.prod(rest) * x.itemsize
        if n == 0 or nbytes == 0 or x.dtype.hasobject:
            return None
        pixel = np.dtype((np.void, nbytes))
        numbers = rearrange(np.arange(n).reshape(lead), n)
        pad = np.full(rest, fill, x.dtype).reshape(1, -1).view(pixel)[0] \
            if (numbers == n).any() else None
        return numbers.reshape(-1), numbers.shape + rest, pad, pixel, n
    gather = derived(node, "pixels", (x.shape, x.dtype, fill) + sources, index)
    if gather is None:
        return None
    flat, shape, pad, pixel, n = gather
    src = np.ascontiguousarray(x).reshape(n, -1).view(pixel).reshape(n)
    if pad is not None:
        src = np.concatenate([src, pad])
    return src.take(flat).view(x.dtype).reshape(shape)


def _values(a: np.ndarray) -> tuple:
    """A small index array (block, paddings, crops) as a cache key: its values, so that a
    computed array (a new object every run, as in dilated convolutions, whose paddings
    follow the input's shape) finds the gather built for the same values."""
    return tuple(a.reshape(-1).tolist())


def _space_to_batch(ctx, node):
    x, block, pads = ctx.value(node, 0), ctx.value(node, 1), ctx.value(node, 2)
    fill = _zero_point(ctx.output(node, 0))
    out = _gather_pixels(node, x, 1 + block.size,
                         lambda numbers, n: space_to_batch_nd(numbers, as_int_list(block), pads,
                                                              n), fill,
                         (_values(block), _values(pads)))
    return space_to_batch_nd(x, as_int_list(block), pads, fill) if out is None else out


def _batch_to_space(ctx, node):
    x, block, crops = ctx.value(node, 0), ctx.value(node, 1), ctx.value(node, 2)
    out = _gather_pixels(node, x, 1 + block.size,
                         lambda numbers, n: batch_to_space_nd(numbers, as_int_list(block),
                                                              crops), 0,
                         (_values(block), _values(crops)))
    return batch_to_space_nd(x, as_int_list(block), crops) if out is None else out


define(Op.SPACE_TO_BATCH_ND, (1, 4), _space_to_batch, _s2b_shape, types="any",
       same_quantization=True)
define(Op.BATCH_TO_SPACE_ND, (1, 4), _batch_to_space, _b2s_shape, types="any",
       same_quantization=True)


def depth_to_space(x: np.ndarray, bs: int) -> np.ndarray:
    n, h, w, c = x.shape
    x = x.reshape(n, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
    return np.ascontiguousarray(x.reshape(n, h * bs, w * bs, c // (bs * bs)))


def space_to_depth(x: np.ndarray, bs: int) -> np.ndarray:
    n, h, w, c = x.shape
    x = x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    return np.ascontiguousarray(x.reshape(n, h // bs, w // bs, bs * bs * c))


def _d2s_shape(ctx, node):
    n, h, w, c = ctx.input(node, 0).shape
    bs = int(option(node, "block_size", 1))
    if bs < 1 or c % (bs * bs):
        raise ValueError(f"depth {c} is not a multiple of block_size^2 = {bs * bs}")
    return [(n, h * bs, w * bs, c // (bs * bs))]


def _s2d_shape(ctx, node):
    n, h, w, c = ctx.input(node, 0).shape
    bs = int(option(node, "block_size", 1))
    if bs < 1 or h % bs or w % bs:
        raise ValueError(f"height/width {h}x{w} are not multiples of block_size {bs}")
    return [(n, h // bs, w // bs, c * bs * bs)]


define(Op.DEPTH_TO_SPACE, (1, 2), lambda ctx, node: depth_to_space(
    ctx.value(node, 0), int(option(node, "block_size", 1))), _d2s_shape, types="any")
define(Op.SPACE_TO_DEPTH, (1, 2), lambda ctx, node: space_to_depth(
    ctx.value(node, 0), int(option(node, "block_size", 1))), _s2d_shape, types="any")


def resize_bilinear(x: np.ndarray, size, align_corners=False, half_pixel_centers=False):
    """TFLite's ResizeBilinear: the float template for float32 and uint8, fixed point for
    int8 and int16 (integer/resize.py)."""
    return int_resize.resize_bilinear(x, size, bool(align_corners), bool(half_pixel_centers))


def resize_nearest(x: np.ndarray, size, align_corners=False, half_pixel_centers=False):
    """TFLite's ResizeNearestNeighbor: a gather, any type (no requantization)."""
    return int_resize.resize_nearest_neighbor(x, size, bool(align_corners),
                                              bool(half_pixel_centers))


def _resize_shape(ctx, node):
    x = ctx.input(node, 0)
    size = ctx.known_value(node, 1)
    if size is None:
        return None
    n, _, _, c = x.shape
    oh, ow = as_int_list(size)
    if node.name == "RESIZE_BILINEAR" and (oh <= 0 or ow <= 0):
        raise KernelError(f"RESIZE_BILINEAR to size {[oh, ow]}: LiteRT's Prepare wants a "
                          "height and width of at least 1")
    if (x.shape[1] <= 0 or x.shape[2] <= 0) and n * oh * ow * c > 0:
        # (LiteRT 2.3.0 reads before such an input's start: a segmentation fault)
        raise KernelError(f"{node.name}: the input of shape {list(x.shape)} has no pixel to "
                          f"resize from to size {[oh, ow]} (its height and width must be at "
                          "least 1)")
    return [(n, oh, ow, c)]


def _resized(resize):
    """A resize function as `define`'s compute: input, size, and the two corner options."""
    return lambda ctx, node: resize(ctx.value(node, 0), as_int_list(ctx.value(node, 1)),
                                    bool(option(node, "align_corners", False)),
                                    bool(option(node, "half_pixel_centers", False)))


define(Op.RESIZE_BILINEAR, (1, 4), _resized(resize_bilinear), _resize_shape,
       types="float+uint8+int8+int16")
define(Op.RESIZE_NEAREST_NEIGHBOR, (1, 4), _resized(resize_nearest), _resize_shape,
       types="float+uint8+int8+int16")
