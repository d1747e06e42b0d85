"""Exact 8-bit products with AVX-512 VNNI (imported only through `compiled.vnni`).

An 8-bit convolution's sums are integer products: [pixels, taps] bytes by [taps, channels]
bytes.  numpy has no integer BLAS, so the other kernels run them as float32 BLAS products
(exact below 2**24), at the machine's float speed.  LiteRT's default path (XNNPACK) runs
them with VNNI's ``vpdpbusd``, which multiplies 64 unsigned bytes by 64 signed bytes and
adds each four products into one of 16 int32 lanes in one instruction: four times the
multiply-adds of a float32 FMA.  numba does not emit it from a plain loop, so this module
gives numba a 16-lane int32 vector type and the four instructions it needs (a load, a
broadcast, ``vpdpbusd`` and a store, as LLVM intrinsics), and writes the product with them.

The weights are packed once per filter (`pack_weights`): 16 output channels by 4 taps per
64-byte vector, zeros past the last tap and channel.  `gemm_u8s8` then keeps 4 pixels by 32
channels of sums in eight registers while it walks the taps.  The sums are exact int32
(``vpdpbusd`` wraps as C's int32 does, and never saturates), so a kernel that unsigned its
int8 inputs by adding 128 takes 128 times each channel's filter sum back off, exactly.

`available` says whether this CPU has the instructions: numba compiles for the machine it
runs on, and an instruction the CPU lacks would stop the process, not raise.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from llvmlite import binding as llvm_binding
from llvmlite import ir
from numba import config, njit, types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model

from .compiled_loops import requantize_float

_OPTIONS = {"cache": True, "nogil": True, "boundscheck": False, "error_model": "numpy"}
#: output channels per vector, taps per lane
LANES, GROUP = 16, 4
#: the CPU features the kernel's instructions need
NEEDED = ("avx512f", "avx512bw", "avx512vnni")

_I32 = ir.IntType(32)
_V16 = ir.VectorType(_I32, LANES)


def available() -> bool:
    """Whether numba compiles for this CPU (not a named one) and the CPU has AVX-512 VNNI."""
    if config.CPU_NAME not in (None, "host") or config.CPU_FEATURES:
        return False
    features = llvm_binding.get_host_cpu_features()
    return all(features.get(name, False) for name in NEEDED)


class _Vec16(types.Type):
    """16 int32 lanes held in one AVX-512 register."""

    def __init__(self) -> None:
        super().__init__(name="vec16i32")


vec16 = _Vec16()


@register_model(_Vec16)
class _Vec16Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type) -> None:
        super().__init__(dmm, fe_type, _V16)


def _address(context, builder, array_type, array, index):
    data = context.make_array(array_type)(context, builder, array).data
    return builder.gep(data, [index])


@intrinsic
def _load(typingctx, array, index):
    """The 64 bytes of an array from element ``index`` on."""
    def codegen(context, builder, signature, args):
        address = _address(context, builder, signature.args[0], *args)
        return builder.load(builder.bitcast(address, _V16.as_pointer()), align=1)
    return vec16(array, index), codegen


def _splat_value(builder, value):
    first = builder.insert_element(ir.Constant(_V16, ir.Undefined), value, ir.Constant(_I32, 0))
    return builder.shuffle_vector(first, ir.Constant(_V16, ir.Undefined), ir.Constant(_V16, None))


@intrinsic
def _broadcast(typingctx, array, index, flip):
    """The 4 bytes of a byte array at ``index``, xor ``flip`` (an int32), in every lane."""
    def codegen(context, builder, signature, args):
        address = _address(context, builder, signature.args[0], args[0], args[1])
        word = builder.load(builder.bitcast(address, _I32.as_pointer()), align=1)
        flip = context.cast(builder, args[2], signature.args[2], types.int32)
        return _splat_value(builder, builder.xor(word, flip))
    return vec16(array, index, flip), codegen


@intrinsic
def _dot(typingctx, acc, unsigned, signed):
    """``vpdpbusd``: each lane of ``acc`` plus its 4 unsigned by 4 signed byte products."""
    def codegen(context, builder, signature, args):
        kind = ir.FunctionType(_V16, [_V16, _V16, _V16])
        fn = cgutils.get_or_insert_function(builder.module, kind,
                                            "llvm.x86.avx512.vpdpbusd.512")
        return builder.call(fn, args)
    return vec16(acc, unsigned, signed), codegen


@intrinsic
def _store(typingctx, array, index, value):
    """Write 16 int32 lanes into an int32 array from ``index`` on."""
    def codegen(context, builder, signature, args):
        address = _address(context, builder, signature.args[0], args[0], args[1])
        builder.store(args[2], builder.bitcast(address, _V16.as_pointer()), align=1)
        return context.get_dummy_value()
    return types.none(array, index, value), codegen


@njit(inline="always", **_OPTIONS)
def _row(bases: np.ndarray, m: int, row_stride: int) -> int:
    """Where row ``m`` of the byte matrix starts: ``bases[m]``, or ``m * row_stride``."""
    return bases[m] if bases.shape[0] else m * row_stride


@njit(**_OPTIONS)
def gemm_u8s8(a: np.ndarray, bases: np.ndarray, row_stride: int, segments: int,
              segment_stride: int, run: int, flip: int, packed: np.ndarray,
              start: np.ndarray, blocks: int, out: np.ndarray) -> None:
    """``out`` [rows, blocks*16] int32 = ``start`` [blocks*16] int32 plus a byte matrix
    read from ``a`` (flat) xor ``flip`` (0, or 0x80 in each byte: int8 plus 128, unsigned)
    times the int8 matrix `pack_weights` packed: exact int32 sums (wrapping).

    Row m of the byte matrix is ``segments`` runs of ``run`` groups of 4 bytes, run s from
    ``row + s * segment_stride`` on, ``row`` being `_row` (``out`` has one row per
    ``bases`` entry, or ``out.shape[0] // width`` rows of ``row_stride`` bytes).  A plain
    matrix is one run per row; a convolution's patches are one run per filter row, read
    in the padded input itself (`conv_bases`): no patch is copied.  A run is read in whole
    groups of 4, up to 3 bytes past its taps: their products with the packed zeros add
    nothing, and ``a`` holds 3 bytes past the last run for the last one."""
    groups = segments * run
    stride = groups * GROUP * LANES  # bytes of one packed block of 16 channels
    width = blocks * LANES
    rows = out.shape[0] // width
    m = 0
    while m + 4 <= rows:
        r0, r1 = _row(bases, m, row_stride), _row(bases, m + 1, row_stride)
        r2, r3 = _row(bases, m + 2, row_stride), _row(bases, m + 3, row_stride)
        nb = 0
        while nb + 2 <= blocks:
            s0, s1 = _load(start, nb * LANES), _load(start, nb * LANES + LANES)
            c00 = c10 = c20 = c30 = s0
            c01 = c11 = c21 = c31 = s1
            b0 = nb * stride
            for s in range(segments):
                for q in range(run):
                    at = s * segment_stride + q * GROUP
                    g = (s * run + q) * 64
                    w0 = _load(packed, b0 + g)
                    w1 = _load(packed, b0 + stride + g)
                    x = _broadcast(a, r0 + at, flip)
                    c00 = _dot(c00, x, w0); c01 = _dot(c01, x, w1)
                    x = _broadcast(a, r1 + at, flip)
                    c10 = _dot(c10, x, w0); c11 = _dot(c11, x, w1)
                    x = _broadcast(a, r2 + at, flip)
                    c20 = _dot(c20, x, w0); c21 = _dot(c21, x, w1)
                    x = _broadcast(a, r3 + at, flip)
                    c30 = _dot(c30, x, w0); c31 = _dot(c31, x, w1)
            o = m * width + nb * LANES
            _store(out, o, c00); _store(out, o + LANES, c01)
            _store(out, o + width, c10); _store(out, o + width + LANES, c11)
            o += 2 * width
            _store(out, o, c20); _store(out, o + LANES, c21)
            _store(out, o + width, c30); _store(out, o + width + LANES, c31)
            nb += 2
        if nb < blocks:
            c0 = c1 = c2 = c3 = _load(start, nb * LANES)
            b0 = nb * stride
            for s in range(segments):
                for q in range(run):
                    at = s * segment_stride + q * GROUP
                    w0 = _load(packed, b0 + (s * run + q) * 64)
                    c0 = _dot(c0, _broadcast(a, r0 + at, flip), w0)
                    c1 = _dot(c1, _broadcast(a, r1 + at, flip), w0)
                    c2 = _dot(c2, _broadcast(a, r2 + at, flip), w0)
                    c3 = _dot(c3, _broadcast(a, r3 + at, flip), w0)
            o = m * width + nb * LANES
            _store(out, o, c0); _store(out, o + width, c1)
            _store(out, o + 2 * width, c2); _store(out, o + 3 * width, c3)
        m += 4
    while m < rows:
        r0 = _row(bases, m, row_stride)
        for nb in range(blocks):
            c0 = _load(start, nb * LANES)
            b0 = nb * stride
            for s in range(segments):
                for q in range(run):
                    c0 = _dot(c0, _broadcast(a, r0 + s * segment_stride + q * GROUP, flip),
                              _load(packed, b0 + (s * run + q) * 64))
            _store(out, m * width + nb * LANES, c0)
        m += 1


#: ``flip`` for int8 inputs: 0x80 in each byte (as an int32)
FLIP_INT8 = -0x7F7F7F80


class Packed(NamedTuple):
    """A [channels, taps] int8 weight matrix as `gemm_u8s8` reads it, for one input type."""

    data: np.ndarray  # per 16 channels, per 4 taps, 64 bytes (channel-major, tap-minor)
    start: np.ndarray  # [blocks*16] int32: each channel's sum before any product
    channels: int
    flip: int  # FLIP_INT8 for int8 inputs, 0 for uint8


def pack_weights(w: np.ndarray, signed_input: bool) -> Packed:
    """[channels, taps] int8 weights packed for inputs of int8 (``signed_input``) or uint8,
    zeros past the last tap and channel (their products add nothing).  An int8 input is
    read plus 128, so each channel starts at -128 times its weights' sum: the sums are
    those of the input itself."""
    channels, taps = w.shape
    blocks = -(-channels // LANES)
    groups = -(-taps // GROUP)
    padded = np.zeros((blocks * LANES, groups * GROUP), np.int8)
    padded[:channels, :taps] = w
    data = np.ascontiguousarray(padded.reshape(blocks, LANES, groups, GROUP)
                                .transpose(0, 2, 1, 3)).reshape(-1)
    start = np.zeros(blocks * LANES, np.int32)
    if signed_input:  # (int32 arithmetic: exact, as the kernel's wrapping sums)
        start[:channels] = (-128 * w.astype(np.int64).sum(axis=1)).astype(np.int32)
    return Packed(data, start, channels, FLIP_INT8 if signed_input else 0)


@njit(**_OPTIONS)
def gemm_requantized(a: np.ndarray, bases: np.ndarray, row_stride: int, segments: int,
                     segment_stride: int, run: int, flip: int, packed: np.ndarray,
                     start: np.ndarray, requantizer: np.ndarray, zp_after: float, qmin: float,
                     qmax: float, out: np.ndarray) -> None:
    """`gemm_u8s8` (its rows laid out as it reads them), then its sums through the 8-bit
    tail (`compiled_loops.requantize_float`, ``requantizer`` a FloatRequantizer's
    `per_channel`) into ``out`` [rows, C]: one call where two cost a dispatch and an
    allocation more on each of a model's convolutions."""
    blocks = start.shape[0] // LANES
    acc = np.empty((out.shape[0], blocks * LANES), np.int32)
    gemm_u8s8(a, bases, row_stride, segments, segment_stride, run, flip, packed, start,
              blocks, acc.reshape(-1))
    requantize_float(acc, requantizer, zp_after, qmin, qmax, out)


@njit(**_OPTIONS)
def gemm_scaled(a: np.ndarray, taps: int, flip: int, packed: np.ndarray,
                start: np.ndarray, bias: np.ndarray, scale: np.ndarray, zero_point: float,
                low: float, high: float, out: np.ndarray) -> None:
    """`gemm_u8s8`, then FULLY_CONNECTED's float-scale tail into ``out`` [rows, C] (int8
    or uint8) as integer/fully_connected.FloatScaleTail computes it in float64: the sum
    plus ``bias`` [C] (the folded input offset and bias), times ``scale`` [C], rounded
    half away from zero, plus the zero point, clamped to [low, high]."""
    blocks, rows = start.shape[0] // LANES, out.shape[0]
    acc = np.empty((rows, blocks * LANES), np.int32)
    gemm_u8s8(a, _PLAIN, taps, 1, 0, (taps + GROUP - 1) // GROUP, flip, packed, start, blocks,
              acc.reshape(-1))
    for r in range(rows):
        row, target = acc[r], out[r]
        for c in range(target.shape[0]):
            v = (np.float64(row[c]) + bias[c]) * scale[c]
            v = np.trunc(v + math.copysign(0.5, v)) + zero_point
            v = max(v, low)
            target[c] = min(v, high)


#: `gemm_u8s8`'s ``bases`` for rows laid one after another
_PLAIN = np.zeros(0, np.int64)


def plain(taps: int) -> tuple:
    """`gemm_u8s8`'s row layout (bases, row stride, segments, segment stride, run) of a
    [rows, taps] matrix."""
    return (_PLAIN, taps, 1, 0, -(-taps // GROUP))


def patch_layout(padded_shape: tuple[int, ...], out_hw: tuple[int, int],
                 strides: tuple[int, int], dil_h: int, kernel: tuple[int, int]) -> tuple:
    """`gemm_u8s8`'s row layout of a convolution's patches read in its padded NHWC input
    of ``padded_shape`` (width dilation 1): row (n, y, x) is one run per filter row, of
    kw * C bytes from input pixel (y * sh + i * dil_h, x * sw), each read in whole groups
    of 4 (`pack_patch_weights` lays the filter the same way)."""
    batch, height, width, depth = padded_shape
    (out_h, out_w), (sh, sw), (kh, kw) = out_hw, strides, kernel
    n, y, x = np.meshgrid(np.arange(batch), np.arange(out_h), np.arange(out_w), indexing="ij")
    bases = (((n * height + y * sh) * width + x * sw) * depth).astype(np.int64).reshape(-1)
    return (bases, 0, kh, dil_h * width * depth, -(-(kw * depth) // GROUP))


def pack_patch_weights(w: np.ndarray, kh: int, signed_input: bool) -> Packed:
    """[channels, KH*KW*C] weights (filter rows in order) packed for `patch_layout`: each
    filter row's KW*C taps padded with zeros to whole groups of 4."""
    channels, taps = w.shape
    run = taps // kh
    padded = np.zeros((channels, kh, -(-run // GROUP) * GROUP), np.int8)
    padded[:, :, :run] = w.reshape(channels, kh, run)
    return pack_weights(padded.reshape(channels, -1), signed_input)


def padded_bytes(x: np.ndarray, padded_shape: tuple[int, ...], pad_h: int, pad_w: int,
                 value: int) -> np.ndarray:
    """``x`` NHWC placed at [pad_h, pad_w] in a flat array of ``padded_shape`` filled with
    ``value``, 3 bytes longer (a run's last group is read past its end)."""
    size = int(np.prod(padded_shape))
    flat = np.empty(size + GROUP - 1, x.dtype)
    flat[size:] = 0
    view = flat[:size].reshape(padded_shape)
    _, h, w, _ = x.shape
    if (pad_h, pad_w) != (0, 0) or view.shape[1:3] != (h, w):
        view.fill(value)
    view[:, pad_h:pad_h + h, pad_w:pad_w + w, :] = x
    return flat


def _flat(a: np.ndarray) -> np.ndarray:
    """``a`` [rows, taps] as the flat bytes `gemm_u8s8` reads, with the 3 bytes past its
    last row that a row of taps not a multiple of 4 is read into."""
    flat = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    if a.shape[1] % GROUP:
        flat = np.concatenate((flat, np.zeros(GROUP - 1, np.uint8)))
    return flat


def product(a: np.ndarray, weights: Packed) -> np.ndarray:
    """``a`` [rows, taps] (uint8, or int8 for weights packed for it) times the packed
    weights: [rows, C'] int32, the first ``weights.channels`` of each row the sums, the
    rest (to a whole block of 16) zeros.  The padded rows are returned whole: a compiled
    loop over a view of their first columns loses its vectors (4.6 against 25 us on a
    [2304, 8] requantize)."""
    rows, taps = a.shape
    blocks = weights.start.size // LANES
    out = np.empty((rows, blocks * LANES), np.int32)
    gemm_u8s8(_flat(a), *plain(taps), weights.flip, weights.data, weights.start, blocks,
              out.reshape(-1))
    return out


def product_requantized(a: np.ndarray, weights: Packed, requantizer: tuple,
                        out: np.ndarray) -> None:
    """`product`, requantized into ``out`` [rows, channels] (int8 or uint8) by
    ``requantizer``: (rows, zp_after, qmin, qmax) of a FloatRequantizer."""
    gemm_requantized(_flat(a), *plain(a.shape[1]), weights.flip, weights.data,
                     weights.start, *requantizer, out)


def product_scaled(a: np.ndarray, weights: Packed, tail: tuple, out: np.ndarray) -> None:
    """`product` through FULLY_CONNECTED's float-scale tail (`gemm_scaled`; ``tail`` its
    (bias, scale, zero_point, low, high)) into ``out`` [rows, channels]."""
    gemm_scaled(_flat(a), a.shape[1], weights.flip, weights.data, weights.start, *tail, out)


def warm_up() -> None:
    """Compile (or load from the cache) the product for the arrays the kernels pass."""
    weights = pack_weights(np.zeros((40, 8), np.int8), True)
    product(np.zeros((5, 8), np.uint8), weights)
    for dtype in (np.int8, np.uint8):
        product_requantized(np.zeros((5, 8), dtype), weights, (np.zeros((4, 40)), 0.0, -128.0,
                            127.0), np.empty((5, 40), dtype))
        patches = padded_bytes(np.zeros((1, 3, 3, 2), dtype), (1, 4, 4, 2), 1, 1, 0)
        gemm_requantized(patches, *patch_layout((1, 4, 4, 2), (2, 2), (2, 2), 1, (2, 2)),
                         weights.flip, weights.data, weights.start, np.zeros((4, 40)), 0.0,
                         -128.0, 127.0, np.empty((4, 40), dtype))
        product_scaled(np.zeros((5, 8), dtype), weights, (np.zeros(40), np.ones(40), 0.0,
                       -128.0, 127.0), np.empty((5, 40), dtype))
