"""Text-model ops: LSH_PROJECTION (sign bits of farmhash Fingerprint64 sums) and SKIP_GRAM
(the skip-gram n-grams of a sentence), as LiteRT's lsh_projection.cc and skip_gram.cc."""
from __future__ import annotations

import struct

import numpy as np

from ...model.tensor import encode_strings
from .common import BuiltinOperator as Op, Kernel, option, register

_M64 = (1 << 64) - 1
K0, K1, K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F


def _fetch64(s: bytes, i: int) -> int:
    return struct.unpack_from("<Q", s, i)[0]


def _fetch32(s: bytes, i: int) -> int:
    return struct.unpack_from("<I", s, i)[0]


def _rot(v: int, shift: int) -> int:
    return v if shift == 0 else ((v >> shift) | (v << (64 - shift))) & _M64


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def _hash16(u: int, v: int, mul: int) -> int:
    a = ((u ^ v) * mul) & _M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M64
    b ^= b >> 47
    return (b * mul) & _M64


def _len0to16(s: bytes) -> int:
    n = len(s)
    if n >= 8:
        mul = K2 + n * 2
        a = (_fetch64(s, 0) + K2) & _M64
        b = _fetch64(s, n - 8)
        c = (_rot(b, 37) * mul + a) & _M64
        d = ((_rot(a, 25) + b) * mul) & _M64
        return _hash16(c, d, mul)
    if n >= 4:
        mul = K2 + n * 2
        return _hash16((n + (_fetch32(s, 0) << 3)) & _M64, _fetch32(s, n - 4), mul)
    if n > 0:
        y = s[0] + (s[n >> 1] << 8)
        z = n + (s[n - 1] << 2)
        return (_shift_mix(((y * K2) ^ (z * K0)) & _M64) * K2) & _M64
    return K2


def _ends_round(s: bytes, n: int, mul: int, k_first: int) -> tuple[int, int, int]:
    """The mixing round FarmHash gives strings of 17 to 64 bytes, from their first and last
    16 bytes: the two words it passes to `_hash16`, and the scaled first word (the 33-64
    byte hash reuses it)."""
    a = (_fetch64(s, 0) * k_first) & _M64
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M64
    d = (_fetch64(s, n - 16) * K2) & _M64
    return ((_rot((a + b) & _M64, 43) + _rot(c, 30) + d) & _M64,
            (a + _rot((b + K2) & _M64, 18) + c) & _M64, a)


def _len17to32(s: bytes) -> int:
    n = len(s)
    mul = K2 + n * 2
    y, x, _ = _ends_round(s, n, mul, K1)
    return _hash16(y, x, mul)


def _len33to64(s: bytes) -> int:
    n = len(s)
    mul = K2 + n * 2
    y, x, a = _ends_round(s, n, mul, K2)
    z = _hash16(y, x, mul)
    e = (_fetch64(s, 16) * mul) & _M64
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _M64
    h = ((z + _fetch64(s, n - 24)) * mul) & _M64
    return _hash16((_rot((e + f) & _M64, 43) + _rot(g, 30) + h) & _M64,
                   (e + _rot((f + a) & _M64, 18) + g) & _M64, mul)


def _weak32(s: bytes, i: int, a: int, b: int) -> tuple[int, int]:
    w, x, y, z = (_fetch64(s, i + 8 * k) for k in range(4))
    a = (a + w) & _M64
    b = _rot((b + a + z) & _M64, 21)
    c = a
    a = (a + x + y) & _M64
    b = (b + _rot(a, 44)) & _M64
    return (a + z) & _M64, (b + c) & _M64


def fingerprint64(s: bytes) -> int:
    """farmhash's Fingerprint64 (farmhashna::Hash64) of ``s``, as an unsigned int."""
    n = len(s)
    if n <= 16:
        return _len0to16(s)
    if n <= 32:
        return _len17to32(s)
    if n <= 64:
        return _len33to64(s)
    seed = 81
    x, y = seed, (seed * K1 + 113) & _M64
    z = (_shift_mix((y * K2 + 113) & _M64) * K2) & _M64
    v, w = (0, 0), (0, 0)
    x = (x * K2 + _fetch64(s, 0)) & _M64
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    i = 0
    while True:
        x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & _M64, 37) * K1) & _M64
        y = (_rot((y + v[1] + _fetch64(s, i + 48)) & _M64, 42) * K1) & _M64
        x ^= w[1]
        y = (y + v[0] + _fetch64(s, i + 40)) & _M64
        z = (_rot((z + w[0]) & _M64, 33) * K1) & _M64
        v = _weak32(s, i, (v[1] * K1) & _M64, (x + w[0]) & _M64)
        w = _weak32(s, i + 32, (z + w[1]) & _M64, (y + _fetch64(s, i + 16)) & _M64)
        z, x = x, z
        i += 64
        if i == end:
            break
    mul = K1 + ((z & 0xFF) << 1)
    i = last64
    w = ((w[0] + ((n - 1) & 63)) & _M64, w[1])
    v = ((v[0] + w[0]) & _M64, v[1])
    w = ((w[0] + v[0]) & _M64, w[1])
    x = (_rot((x + y + v[0] + _fetch64(s, i + 8)) & _M64, 37) * mul) & _M64
    y = (_rot((y + v[1] + _fetch64(s, i + 48)) & _M64, 42) * mul) & _M64
    x ^= (w[1] * 9) & _M64
    y = (y + v[0] * 9 + _fetch64(s, i + 40)) & _M64
    z = (_rot((z + w[0]) & _M64, 33) * mul) & _M64
    v = _weak32(s, i, (v[1] * mul) & _M64, (x + w[0]) & _M64)
    w = _weak32(s, i + 32, (z + w[1]) & _M64, (y + _fetch64(s, i + 16)) & _M64)
    z, x = x, z
    return _hash16((_hash16(v[0], w[0], mul) + _shift_mix(y) * K0 + z) & _M64,
                   (_hash16(v[1], w[1], mul) + x) & _M64, mul)


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def input_rows(x: np.ndarray) -> list[bytes]:
    """The byte keys lsh_projection.cc hashes: the tensor's memory cut into dim-0 equal
    parts.  For a STRING tensor that memory is TFLite's string buffer (count, offsets,
    bytes), cut the same way, the tail past ``size // rows * rows`` left out."""
    n = x.shape[0]
    if x.dtype == object:
        blob = encode_strings(x)
        step = len(blob) // n
        return [blob[i * step:(i + 1) * step] for i in range(n)]
    rows = np.ascontiguousarray(x).reshape(n, -1)
    return [rows[i].tobytes() for i in range(n)]


def lsh_projection(hash_seeds: np.ndarray, x: np.ndarray, weights: np.ndarray | None,
                   sparse: bool) -> np.ndarray:
    """One sign bit per seed: sum over input rows of (weight *) Fingerprint64(seed bytes +
    row bytes) as a double, positive or not; sparse packs each seed row's bits plus its
    bucket offset, dense lists the bits."""
    seeds = np.asarray(hash_seeds, np.float32)
    num_hash, num_bits = seeds.shape
    row_bytes = input_rows(x)
    w = None if weights is None else np.asarray(weights, np.float32)

    def bit(seed: np.float32) -> int:
        score = 0.0
        prefix = np.float32(seed).tobytes()
        for i, rb in enumerate(row_bytes):
            value = float(_signed(fingerprint64(prefix + rb)))
            score += value if w is None else float(w[i]) * value
        return 1 if score > 0 else 0

    bits = np.array([[bit(seeds[i, j]) for j in range(num_bits)] for i in range(num_hash)],
                    np.int32)
    if not sparse:
        return bits.reshape(-1)
    out = np.zeros(num_hash, np.int64)
    for i in range(num_hash):
        sig = 0
        for j in range(num_bits):
            sig = ((sig << 1) | int(bits[i, j])) & 0xFFFFFFFF
        out[i] = sig + i * (1 << num_bits)
    return ((out + 2**31) % 2**32 - 2**31).astype(np.int32)


@register(Op.LSH_PROJECTION, versions=(1, 1))
class LshProjection(Kernel):
    """Inputs: hash seeds [num_hash, num_bits <= 32] (FLOAT32), input [n, ...], optional
    weights [n]; output INT32: [num_hash] (SPARSE) or [num_hash * num_bits] (DENSE)."""

    types = "any"
    dtypes = ("FLOAT32 seeds; input rows of any type, STRING included",)

    def check(self, ctx, node):
        h = ctx.input(node, 0)
        if h.type_name != "FLOAT32" or len(h.shape) != 2 or h.shape[1] > 32:
            return f"LSH_PROJECTION v{node.version}: seeds must be FLOAT32 [n, <= 32]"
        x = ctx.input(node, 1)
        if len(x.shape) < 1 or x.shape[0] < 1:
            return f"LSH_PROJECTION v{node.version}: input needs a first dimension >= 1"
        if str(option(node, "type", "UNKNOWN")) not in ("SPARSE", "DENSE"):
            return f"LSH_PROJECTION v{node.version} of type {option(node, 'type', 'UNKNOWN')}"
        return None

    def prepare(self, ctx, node):
        h = ctx.input(node, 0).shape
        sparse = str(option(node, "type")) == "SPARSE"
        ctx.resize(ctx.output(node, 0), (h[0],) if sparse else (h[0] * h[1],))

    def invoke(self, ctx, node):
        w = ctx.input(node, 2)
        ctx.set_output(ctx.output(node, 0), lsh_projection(
            ctx.value(node, 0), ctx.value(node, 1), None if w is None else w.data,
            str(option(node, "type")) == "SPARSE"))


def _isspace(c: int) -> bool:
    return c in b" \t\n\v\f\r"


def skip_grams(text: bytes, ngram_size: int, max_skip: int, include_all: bool) -> list[bytes]:
    """skip_gram.cc: words split at whitespace (its tokenizer, quirks included), then the
    n-grams with at most ``max_skip`` words skipped between neighbours, in its order."""
    words = []
    prev = 0
    for i in range(1, len(text)):
        if _isspace(text[i]):
            if i > prev and not _isspace(text[prev]):
                words.append(text[prev:i])
            prev = i + 1
    if len(text) > prev:
        words.append(text[prev:])
    out: list[bytes] = []
    if len(words) < ngram_size:
        return out
    stack = [0] * ngram_size
    idx = 1
    n = len(words)

    def step_in(idx: int) -> bool:
        if idx < ngram_size and stack[idx] + 1 < n:
            return idx == 0 or stack[idx] - stack[idx - 1] <= max_skip
        return False

    def include(size: int) -> bool:
        if size <= 0:
            return False
        return size <= ngram_size if include_all else size == ngram_size

    while idx >= 0:
        if step_in(idx):
            stack[idx] += 1
            idx += 1
            if idx < ngram_size:
                stack[idx] = stack[idx - 1]
        else:
            if include(idx):
                out.append(b" ".join(words[stack[i]] for i in range(idx)))
            idx -= 1
    return out


@register(Op.SKIP_GRAM, versions=(1, 1))
class SkipGram(Kernel):
    """A STRING sentence in, its skip-grams out (a STRING vector)."""

    types = "any"
    dtypes = ("STRING",)

    def check(self, ctx, node):
        if ctx.input(node, 0).type_name != "STRING" or ctx.output(node, 0).type_name != "STRING":
            return f"SKIP_GRAM v{node.version}: STRING in and out only"
        return None

    def invoke(self, ctx, node):
        text = bytes(np.asarray(ctx.value(node, 0)).reshape(-1)[0])
        grams = skip_grams(text, int(option(node, "ngram_size", 0)),
                           int(option(node, "max_skip_size", 0)),
                           bool(option(node, "include_all_ngrams", False)))
        out = np.empty(len(grams), object)
        out[:] = grams
        ctx.set_output(ctx.output(node, 0), out)
