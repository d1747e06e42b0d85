"""Random ops: RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL, bit for bit as
LiteRT's random_ops.cc draws them when the op's ``seed``/``seed2`` are not both zero:
TensorFlow's Philox4x32-10 generator keyed by the seeds, four 32-bit words per call, the
uniform floats of Uint32ToFloat, Box-Muller normals, and inverse-CDF multinomial samples
from Uint64ToDouble.  The generator is made in prepare and advances with every invoke, as
LiteRT's (a node prepared again starts the stream over).  With both seeds zero LiteRT seeds
from /dev/urandom; these kernels then draw from the operating system's entropy too.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
from functools import lru_cache

import numpy as np

from .common import BuiltinOperator as Op, Kernel, as_int_list, option, register

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK32 = np.uint64(0xFFFFFFFF)


class Philox:
    """PhiloxRandom (Philox4x32 with 10 rounds) over a 128-bit counter."""

    def __init__(self, seed: int, seed2: int) -> None:
        seed, seed2 = seed & (2**64 - 1), seed2 & (2**64 - 1)
        self.key = (seed & 0xFFFFFFFF, seed >> 32)
        self.counter = (seed2 << 64)  # words 2, 3 from seed2; words 0, 1 start at zero

    def skip(self, count: int) -> None:
        self.counter = (self.counter + count) % (1 << 128)

    def blocks(self, n: int) -> np.ndarray:
        """The next ``n`` results, [n, 4] uint32, advancing the counter by ``n``."""
        c = [(self.counter + k) % (1 << 128) for k in range(n)]
        words = np.array([[(v >> (32 * i)) & 0xFFFFFFFF for i in range(4)] for v in c],
                         np.uint64).reshape(n, 4)
        k0, k1 = self.key
        for r in range(10):
            lo0 = _M0 * words[:, 0]
            lo1 = _M1 * words[:, 2]
            hi0, hi1 = lo0 >> np.uint64(32), lo1 >> np.uint64(32)
            lo0, lo1 = lo0 & _MASK32, lo1 & _MASK32
            words = np.stack([hi1 ^ words[:, 1] ^ np.uint64(k0), lo1,
                              hi0 ^ words[:, 3] ^ np.uint64(k1), lo0], axis=1)
            k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
        self.skip(n)
        return words.astype(np.uint32)

    def copy(self) -> "Philox":
        other = Philox.__new__(Philox)
        other.key, other.counter = self.key, self.counter
        return other


def uint32_to_float(x: np.ndarray) -> np.ndarray:
    """A float in [0, 1): 23 random mantissa bits under exponent 0, minus one."""
    bits = (np.uint32(127) << np.uint32(23)) | (x.astype(np.uint32) & np.uint32(0x7FFFFF))
    return bits.view(np.float32) - np.float32(1.0)


def uint64_to_double(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    """A double in [0, 1) from 20 bits of x0 and all of x1."""
    man = ((x0.astype(np.uint64) & np.uint64(0xFFFFF)) << np.uint64(32)) | x1.astype(np.uint64)
    return ((np.uint64(1023) << np.uint64(52)) | man).view(np.float64) - 1.0


@lru_cache(maxsize=None)
def _libm_f(name: str):
    lib = ctypes.CDLL(ctypes.util.find_library("m"))
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = ctypes.c_float, [ctypes.c_float]
    return fn


_TWO_PI = np.float32(2.0 * math.pi)


def box_muller(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """BoxMullerFloat in float32 with the C library's logf/sqrtf/sinf/cosf."""
    u1 = np.maximum(uint32_to_float(x0), np.float32(1.0e-7))
    v1 = (np.float64(2.0 * math.pi) * uint32_to_float(x1).astype(np.float64)).astype(np.float32)
    logf, sqrtf, sinf, cosf = (_libm_f(n) for n in ("logf", "sqrtf", "sinf", "cosf"))
    u2 = np.array([sqrtf(np.float32(-2.0) * np.float32(logf(float(u)))) for u in u1],
                  np.float32)
    s = np.array([sinf(float(v)) for v in v1], np.float32)
    c = np.array([cosf(float(v)) for v in v1], np.float32)
    return (s * u2).astype(np.float32), (c * u2).astype(np.float32)


def random_uniform(rng: Philox, n: int) -> np.ndarray:
    """Four floats per generator call; the unused words of the last call are dropped."""
    blocks = rng.blocks((n + 3) // 4)
    return uint32_to_float(blocks.reshape(-1)[:n])


def random_standard_normal(rng: Philox, n: int) -> np.ndarray:
    """Box-Muller on the word pairs of each call."""
    blocks = rng.blocks((n + 3) // 4).reshape(-1)
    f0, f1 = box_muller(blocks[0::2], blocks[1::2])
    out = np.empty(blocks.size, np.float32)
    out[0::2], out[1::2] = f0, f1
    return out[:n]


def multinomial(rng: Philox, logits: np.ndarray, num_samples: int) -> np.ndarray:
    """Samples per batch row by inverse CDF over exp(logit - max) (non-finite logits give
    zero weight), two words per sample from a copy of the generator, which itself skips
    ahead as LiteRT's does."""
    batch, classes = logits.shape
    sampler = rng.copy()
    rng.skip(batch * ((num_samples + 3) // 4 * 4) * 2 * 256)
    out = np.zeros((batch, num_samples), np.int64)
    words = sampler.blocks((batch * num_samples * 2 + 3) // 4 + 1).reshape(-1)
    used = 0
    for b in range(batch):
        row = logits[b].astype(np.float32)
        finite = np.isfinite(row)
        mx = np.float64(row[finite].max()) if finite.any() else np.float64(np.finfo(np.float32).min)
        cdf = np.empty(classes, np.float64)
        total = 0.0
        for i in range(classes):
            if finite[i]:
                total += math.exp(float(row[i]) - float(mx))
            cdf[i] = total
        for j in range(num_samples):
            u = uint64_to_double(words[used:used + 1], words[used + 1:used + 2])[0]
            used += 2
            out[b, j] = np.searchsorted(cdf, u * total, side="right")
    return out


def _int32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def _generator(node) -> Philox:
    """LiteRT's generator for the node: its options' seeds as the int32s LiteRT's option
    parser keeps (measured: seed 2**40 + 1 draws what seed 1 does)."""
    seed, seed2 = _int32(int(option(node, "seed", 0))), _int32(int(option(node, "seed2", 0)))
    if seed == 0 and seed2 == 0:
        seed, seed2 = (int.from_bytes(os.urandom(8), "little") for _ in range(2))
    return Philox(seed, seed2)


class _Random(Kernel):
    types = "any"
    dtypes = ("INT32 shape -> FLOAT32",)
    draw = staticmethod(random_uniform)

    def check(self, ctx, node):
        shape, out = ctx.input(node, 0), ctx.output(node, 0)
        if shape is None or shape.type_name != "INT32" or out.type_name != "FLOAT32":
            return f"{node.name} v{node.version}: an INT32 shape in and FLOAT32 out only"
        return None

    def prepare(self, ctx, node):
        node.user_data = _generator(node)
        shape = ctx.known_value(node, 0)
        if shape is None:
            ctx.set_dynamic(ctx.output(node, 0))
        else:
            ctx.resize(ctx.output(node, 0), as_int_list(shape))

    def invoke(self, ctx, node):
        shape = tuple(as_int_list(ctx.value(node, 0)))
        n = int(np.prod(shape, dtype=np.int64))
        ctx.set_output(ctx.output(node, 0), self.draw(node.user_data, n).reshape(shape))


@register(Op.RANDOM_UNIFORM, versions=(1, 1))
class RandomUniform(_Random):
    """Floats in [0, 1) of the shape given by input 0."""


@register(Op.RANDOM_STANDARD_NORMAL, versions=(1, 1))
class RandomStandardNormal(_Random):
    """Standard normal floats of the shape given by input 0."""

    draw = staticmethod(random_standard_normal)


@register(Op.MULTINOMIAL, versions=(1, 1))
class Multinomial(Kernel):
    """Inputs: logits [batch, classes] (FLOAT32), num_samples (INT32 scalar); output
    [batch, num_samples] class indices, INT32 or INT64."""

    types = "any"
    dtypes = ("FLOAT32 logits -> INT32, INT64",)

    def check(self, ctx, node):
        logits, n, out = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
        if logits.type_name != "FLOAT32" or n.type_name != "INT32" or \
                out.type_name not in ("INT32", "INT64"):
            return (f"MULTINOMIAL v{node.version}: FLOAT32 logits, an INT32 count and INT32 "
                    "or INT64 samples only")
        return None

    def prepare(self, ctx, node):
        node.user_data = _generator(node)
        ctx.set_dynamic(ctx.output(node, 0))

    def invoke(self, ctx, node):
        logits = ctx.value(node, 0)
        if logits.ndim != 2 or logits.shape[1] == 0:
            raise ValueError(f"MULTINOMIAL logits of shape {list(logits.shape)}: need [batch, "
                             "classes > 0]")
        n = int(np.asarray(ctx.value(node, 1)).reshape(-1)[0])
        if n < 0:
            raise ValueError(f"MULTINOMIAL num_samples {n} is negative")
        ctx.set_output(ctx.output(node, 0), multinomial(node.user_data, logits, n))


# -- STABLEHLO_RNG_BIT_GENERATOR -----------------------------------------------------------
_U32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _U32


def threefry2x32(k0: int, k1: int, ctr: tuple[int, int]) -> tuple[int, int]:
    """Threefry-2x32 with 20 rounds (rng_util.cc's)."""
    k2 = k0 ^ k1 ^ 0x1BD11BDA
    x0, x1 = (ctr[0] + k0) & _U32, (ctr[1] + k1) & _U32
    schedule = ((0, k1, k2, 1), (1, k2, k0, 2), (0, k0, k1, 3), (1, k1, k2, 4),
                (0, k2, k0, 5))
    rotations = ((13, 15, 26, 6), (17, 29, 16, 24))
    for r, ks0, ks1, b in schedule:
        for rot in rotations[r]:
            x0 = (x0 + x1) & _U32
            x1 = _rotl32(x1, rot) ^ x0
        x0 = (x0 + ks0) & _U32
        x1 = (x1 + ks1 + b) & _U32
    return x0, x1


def philox4x32(k0: int, k1: int, ctr: tuple[int, int, int, int]) -> tuple[int, ...]:
    """Philox-4x32 with 10 rounds on one counter (rng_util.cc's)."""
    c = list(ctr)
    for _ in range(10):
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & _U32, (p0 >> 32) ^ c[3] ^ k1, p0 & _U32]
        k0, k1 = (k0 + 0x9E3779B9) & _U32, (k1 + 0xBB67AE85) & _U32
    return tuple(c)


def rng_bit_generator(state: np.ndarray, algorithm: str, count_u32: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """(new state, ``count_u32`` random 32-bit words) as LiteRT's kernel fills them: one
    generator call per 2 (Threefry) or 4 (Philox) words, the 64-bit counter in state
    words 2-3 advancing by one per call."""
    words = np.ascontiguousarray(state, np.uint64).view(np.uint32).astype(np.int64).tolist()
    k0, k1 = words[0], words[1]
    if algorithm == "THREEFRY":
        if len(words) != 4:
            raise ValueError("THREEFRY needs a state of 2 uint64")
        ctr = [words[2], words[3]]
        fn = lambda c: threefry2x32(k0, k1, tuple(c))  # noqa: E731
    else:
        if len(words) not in (4, 6):
            raise ValueError("PHILOX needs a state of 2 or 3 uint64")
        ctr = [words[2], words[3], words[4] if len(words) == 6 else words[0],
               words[5] if len(words) == 6 else words[1]]
        fn = lambda c: philox4x32(k0, k1, tuple(c))  # noqa: E731
    out: list[int] = []
    while len(out) < count_u32:
        out.extend(fn(ctr)[:count_u32 - len(out)])
        ctr[0] = (ctr[0] + 1) & _U32
        if ctr[0] == 0:
            ctr[1] = (ctr[1] + 1) & _U32
    new = list(words)
    new[:4] = [k0, k1, ctr[0], ctr[1]]
    return (np.array(new, np.uint32).view(np.uint64),
            np.array(out, np.uint32))


@register(Op.STABLEHLO_RNG_BIT_GENERATOR, versions=(1, 1))
class StablehloRngBitGenerator(Kernel):
    """Input: the state (UINT64 [2] or, for Philox, [3]); outputs: the next state and
    random bits of the output's declared shape (INT32, INT64, UINT32 or UINT64)."""

    types = "any"
    dtypes = ("UINT64 state -> INT32, INT64, UINT32, UINT64",)

    def check(self, ctx, node):
        state, key, out = ctx.input(node, 0), ctx.output(node, 0), ctx.output(node, 1)
        if state.type_name != "UINT64" or key.type_name != "UINT64":
            return f"STABLEHLO_RNG_BIT_GENERATOR v{node.version}: the state must be UINT64"
        if out.type_name not in ("INT32", "INT64", "UINT32", "UINT64"):
            return f"STABLEHLO_RNG_BIT_GENERATOR v{node.version} to {out.type_name}"
        return None

    def prepare(self, ctx, node):
        ctx.resize(ctx.output(node, 0), ctx.input(node, 0).shape)
        declared = ctx.model_subgraph.tensors[node.outputs[1]].shape
        ctx.resize(ctx.output(node, 1), tuple(declared))

    def invoke(self, ctx, node):
        out = ctx.output(node, 1)
        n = int(np.prod(out.shape, dtype=np.int64)) * (out.dtype.itemsize // 4)
        algorithm = str(option(node, "algorithm", "DEFAULT"))
        state, bits = rng_bit_generator(ctx.value(node, 0), algorithm, n)
        ctx.set_output(ctx.output(node, 0), state.reshape(ctx.input(node, 0).shape))
        ctx.set_output(out, bits.view(out.dtype).reshape(out.shape))
