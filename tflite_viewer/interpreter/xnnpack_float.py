"""XNNPACK's float32 microkernels, as LiteRT 2.3.0's default delegate runs them on x86-64.

The ``xnnpack`` kernel set (`kernel_sets`) computes an operator of an XNNPACK partition
with these functions.  Each reproduces one microkernel of google/XNNPACK (its name in the
docstring) operation by operation in float32, so that the results have its bits:

* a fused multiply-add is one rounding (`fma`: exact through float64, rounded to odd
  there, so that the float32 rounding that follows is the only one);
* XNNPACK runs with denormals disabled (``PTHREADPOOL_FLAG_DISABLE_DENORMALS``: the FTZ
  and DAZ bits of MXCSR): a subnormal input counts as zero and a subnormal result becomes
  zero (`flush`), where the microkernels below can meet one;
* a sum over a row adds lane by lane as the kernel's accumulators do, then reduces its
  16 lanes in XNNPACK's tree order (`_reduce16`).

XNNPACK picks its microkernels by CPU when it starts.  These are the ones it picks on an
x86-64 CPU with AVX-512F (and, for SIN, COS, GELU and TANH, which compute the same
operations on AVX2 with FMA3); an AVX2-only CPU takes other kernels for LOGISTIC, RSQRT,
SOFTMAX and MEAN, whose results are not reproduced here (docs/debugging.md).
"""
from __future__ import annotations

import numpy as np

from .xnnpack_rsqrt import rsqrt14

F32 = np.float32
#: the smallest normal float32: below it XNNPACK's FTZ/DAZ mode sees zero
TINY = F32(np.finfo(np.float32).tiny)
_H = float.fromhex


def flush(x: np.ndarray) -> np.ndarray:
    """Subnormal values replaced by a zero of their sign (FTZ on a result, DAZ on an
    input); ``x`` itself when it holds none (the usual case, one pass)."""
    x = np.asarray(x)
    small = np.abs(x) < TINY
    if not small.any():
        return x
    small &= x != 0
    if not small.any():
        return x
    return np.where(small, np.copysign(F32(0), x), x).astype(x.dtype, copy=False)


#: the low 29 bits of a float64 that lies exactly halfway between two float32 values
_HALF_ULP32, _BELOW_ULP32 = np.int64(1 << 28), np.int64((1 << 29) - 1)
#: float64 exponent field below which a float32 result is subnormal (fewer bits, other
#: halfway points): those sums go the careful way too
_SMALL = np.int64(1023 - 125) << np.int64(52)


def fma_exact_product(p: np.ndarray, c: np.ndarray) -> np.ndarray:
    """float32(p + c) rounded once, for a float64 ``p`` that is an exact product of two
    float32 values and a float32 ``c``.  The float64 sum is rounded once already; the
    float32 rounding after it is the correct one unless that sum landed exactly halfway
    between two float32 values (or in float32's subnormal range): there, and only there,
    the sum is rounded *to odd* instead (its TwoSum error tells which way the exact sum
    lies), which makes the float32 rounding correct (53 >= 24 + 2 bits)."""
    c = np.asarray(c, np.float64)
    s = p + c
    bits = s.view(np.int64)
    risky = ((bits & _BELOW_ULP32) == _HALF_ULP32) | ((bits & np.int64(0x7FF0000000000000))
                                                      < _SMALL)
    if risky.any():
        with np.errstate(invalid="ignore", over="ignore"):
            bb = s - p
            err = (p - (s - bb)) + (c - bb)
            fix = risky & (err != 0) & np.isfinite(err) & ((bits & 1) == 0)
            if fix.any():
                s = np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)
    with np.errstate(over="ignore"):
        return s.astype(F32)


def fma(a, b, c) -> np.ndarray:
    """float32 a * b + c with one rounding (an FMA instruction): the float64 product of two
    float32 values is exact, the sum rounded as `fma_exact_product` does."""
    p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    return fma_exact_product(p, c)


def _poly(x2: np.ndarray, coeffs) -> np.ndarray:
    """Horner's scheme with FMAs, highest coefficient first: fma(x2, fma(x2, c0, c1), c2)..."""
    acc = fma(x2, F32(coeffs[0]), F32(coeffs[1]))
    for c in coeffs[2:]:
        acc = fma(x2, acc, F32(c))
    return acc


def _odd_rational(x: np.ndarray, limit: float, num, den) -> np.ndarray:
    """x clamped to +-limit, then x * p(x^2) / q(x^2): the rational_P_Q_div kernels."""
    lim = F32(limit)
    v = np.maximum(-lim, np.minimum(lim, x))
    x2 = v * v
    return (v * _poly(x2, num)) / _poly(x2, den)


# -- SIN and COS: f32-vsin / f32-vcos avx512f_rational_5_4_div ----------------------------
_PI = F32(3.1415927)
_SIN_NUM = (3.2340581529e-03, -1.3314664364e-01, 1.0)
_SIN_DEN = (4.8770775902e-04, 3.3519912511e-02, 1.0)


def sin_cos(x: np.ndarray, cosine: bool) -> np.ndarray:
    """sin or cos: the argument reduced by whole turns (2*pi in two parts, with FMAs),
    cos(x) taken as sin(pi/2 - x), folded into [-pi/2, pi/2], then x * p(x^2) / q(x^2)
    (xnn_f32_vsin/vcos_ukernel__avx512f_rational_5_4_div; the fma3 kernels compute the
    same)."""
    x = flush(np.asarray(x, F32))
    with np.errstate(invalid="ignore", over="ignore"):
        turns = np.rint(x * F32(0.15915494))
        v = fma(-turns, F32(6.28125), x)
        v = fma(-turns, F32(1.9353072e-3), v)
        if cosine:
            v = (F32(1.5707963705) - v) + F32(-4.3711388e-08)
        v = np.minimum(v, _PI - v)
        v = np.maximum(v, -_PI - v)
        v = np.minimum(v, _PI - v)
        x2 = v * v
        return flush((v * _poly(x2, _SIN_NUM)) / _poly(x2, _SIN_DEN))


# -- GELU and TANH: rational_12_10_div and rational_9_8_div --------------------------------
_GELU = {  # approximate: (limit, numerator, denominator), highest degree first
    False: (5.1638283730e+00,
            (4.5835321316e-08, 1.2609783880e-05, 3.2973114867e-04, 9.3065137044e-03,
             6.6972173750e-02, 7.9788452387e-01),
            (1.1988805682e-06, 7.2267655923e-05, 1.8622842617e-03, 2.8431978077e-02,
             2.5060352683e-01, 1.0)),
    True: (4.84974098e+00,
           (4.9544411240e-08, 1.4302649106e-05, 2.6887017884e-04, 7.2898347862e-03,
            6.0803253204e-02, 7.9788458347e-01),
           (1.3433452750e-06, 7.6477612311e-05, 1.3060354395e-03, 2.4381054565e-02,
            2.4369759858e-01, 1.0)),
}


def gelu(x: np.ndarray, approximate: bool) -> np.ndarray:
    """GELU: 0.5 x (1 + r(x)), r a rational approximation of erf(x / sqrt 2) (or, for the
    tanh form, of tanh(sqrt(2/pi) (x + 0.044715 x^3))) on the clamped input
    (xnn_f32_vgelu / vapproxgelu_ukernel__avx512f_rational_12_10_div)."""
    x = flush(np.asarray(x, F32))
    limit, num, den = _GELU[bool(approximate)]
    with np.errstate(invalid="ignore", over="ignore"):
        r = _odd_rational(x, limit, num, den)
        return flush((x * F32(0.5)) * (r + F32(1)))


_TANH = (7.9807181358e+00,
         (1.4248920266e-08, 2.1235626264e-05, 3.5330520477e-03, 1.3412411511e-01, 1.0),
         (8.1365948290e-07, 3.3472978976e-04, 2.6018999517e-02, 4.6745735407e-01, 1.0))


def tanh(x: np.ndarray) -> np.ndarray:
    """tanh as x p(x^2) / q(x^2) on x clamped to +-7.98
    (xnn_f32_vtanh_ukernel__avx512f_rational_9_8_div)."""
    x = flush(np.asarray(x, F32))
    with np.errstate(invalid="ignore", over="ignore"):
        return flush(_odd_rational(x, *_TANH))


# -- LOGISTIC: f32-vsigmoid avx512f_rr2_lut32_p2_perm2_scalef_div -------------------------
#: 2**(k/32), k = 0..31 (the kernel's table)
_EXP2_32 = np.exp2(np.arange(32) / 32).astype(F32)
_SIG = dict(magic=F32(_H("0x1.8p18")), log2e=F32(_H("0x1.715476p0")),
            ln2_hi=F32(-_H("0x1.62E430p-1")), ln2_lo=F32(_H("0x1.05C61p-29")),
            c2=F32(0.5), c1=F32(_H("0x1.0000F6p0")))


def _scalef(p: np.ndarray, n: np.ndarray) -> np.ndarray:
    """VSCALEFPS, p * 2**floor(n), for the n <= 0 the sigmoid makes, with the special cases
    this machine's CPU (AMD EPYC, Zen 4) gives for n = -inf, measured: a quiet NaN or a
    finite p gives a zero (of p's sign; +0 for the NaN), an infinite p a NaN.  (|x| past
    2.35e38, where z log2 e overflows, takes this path; LiteRT's LOGISTIC(+-inf) is 1 and
    0 through it.)"""
    minus_inf = n == -np.inf
    whole = np.where(np.isfinite(n), np.floor(n), 0).astype(np.int64)
    out = np.ldexp(p, np.clip(whole, -400, 400)).astype(F32)
    if minus_inf.any():
        zero = np.where(np.isnan(p), F32(0), np.copysign(F32(0), p))
        out = np.where(minus_inf, np.where(np.isinf(p), F32(np.nan), zero), out)
    return out.astype(F32)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) as e / (1 + e), e = exp(-|x|): n = round(z log2 e) to 1/32, the
    table's 2**frac(n), a degree-2 polynomial, scaled by 2**floor(n); 1 - f for x >= 0
    (xnn_f32_vsigmoid_ukernel__avx512f_rr2_lut32_p2_perm2_scalef_div)."""
    x = flush(np.asarray(x, F32))
    k = _SIG
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        z = -np.abs(x)
        n = fma(z, k["log2e"], k["magic"])
        table = _EXP2_32[n.view(np.uint32) & 31]
        n = n - k["magic"]
        t = fma(n, k["ln2_hi"], z)
        t = fma(n, k["ln2_lo"], t)
        p = fma(t, k["c2"], k["c1"])
        t = t * table
        p = fma(t, p, table)
        e = flush(_scalef(p, n))
        f = e / (e + F32(1))
        return flush(np.where(np.signbit(x), f, F32(1) - f))


# -- RSQRT: f32-vrsqrt avx512f_rsqrt (VRSQRT14PS, one Newton-Raphson step) -----------------
def rsqrt(x: np.ndarray) -> np.ndarray:
    """1 / sqrt(x): VRSQRT14PS's estimate y (`xnnpack_rsqrt.rsqrt14`), then one
    Newton-Raphson step y - (0.5 y)(x y^2 - 1) in separate multiplies and subtractions,
    0 for +inf (xnn_f32_vrsqrt_ukernel__avx512f_rsqrt_u32)."""
    x = flush(np.asarray(x, F32))
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        y = rsqrt14(x)
        t = flush(y * y)
        t = x * t - F32(1)
        y = y - t * (F32(0.5) * y)
        return flush(np.where(x == np.inf, F32(0), y))


# -- sums over the last axis: f32-rsum, f32-rsum2 and the softmax's exp sums --------------
def _reduce16(acc: np.ndarray) -> np.ndarray:
    """xnn_reduce_add_f32 on 16 lanes (the last axis): halves added down to one lane,
    (l0..l7 + l8..l15), then (0..3 + 4..7), (0,1 + 2,3), lane 0 + lane 1."""
    a = acc[..., :8] + acc[..., 8:]
    a = a[..., :4] + a[..., 4:]
    a = a[..., :2] + a[..., 2:]
    return a[..., 0] + a[..., 1]


def _lanes(x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The row's whole 16-lane vectors [..., blocks, 16] and its tail zero-padded to 16
    lanes (None when the row length is a multiple of 16)."""
    n = x.shape[-1]
    full = x[..., : n - n % 16].reshape(x.shape[:-1] + (n // 16, 16))
    if n % 16 == 0:
        return full, None
    tail = np.zeros(x.shape[:-1] + (16,), F32)
    tail[..., : n % 16] = x[..., n - n % 16:]
    return full, tail


def _vector_sums(vectors: np.ndarray, accumulators: int, square: bool) -> list[np.ndarray]:
    """Sums of ``vectors`` [..., blocks, 16] into ``accumulators`` round-robin over whole
    groups, then the leftover vectors into accumulator 0, 1, ... (the u(16*acc)_acc(acc)
    kernels' main loop and remainder); each step one add, or one FMA of the vector with
    itself when ``square``."""
    zero = np.zeros(vectors.shape[:-2] + (16,), F32)
    accs = [zero.copy() for _ in range(accumulators)]
    blocks = vectors.shape[-2]
    for b in range(blocks):  # vector b goes to accumulator b % accumulators
        v = vectors[..., b, :]
        j = b % accumulators
        accs[j] = fma(v, v, accs[j]) if square else accs[j] + v
    return accs


def row_sum(x: np.ndarray, square: bool = False) -> np.ndarray:
    """Sum (of squares, with FMAs, when ``square``) over the last axis: two accumulators
    (xnn_f32_rsum_ukernel__avx512f_u32_acc2) or four (xnn_f32_rsum2_ukernel__avx512f_u64_acc4),
    combined pairwise, the zero-padded tail added, the lanes reduced."""
    full, tail = _lanes(np.asarray(x, F32))
    with np.errstate(over="ignore", invalid="ignore"):
        accs = _vector_sums(full, 4 if square else 2, square)
        if square:
            acc = (accs[0] + accs[2]) + (accs[1] + accs[3])
        else:
            acc = accs[0] + accs[1]
        if tail is not None:
            acc = fma(tail, tail, acc) if square else acc + tail
        return _reduce16(acc)


def mean_last(x: np.ndarray, count: int, square: bool = False) -> np.ndarray:
    """MEAN over the last axis (of x, or of x*x when ``square``: XNNPACK rewrites a MEAN
    of MUL(x, x) into one reduction of squares): the row sum times float32(1 / count)."""
    x = flush(np.asarray(x, F32))
    scale = F32(1) / F32(count)
    with np.errstate(over="ignore", invalid="ignore"):
        return flush(row_sum(x, square) * scale)


# -- SOFTMAX: f32-raddstoreexpminusmax avx512f_rr2_p5_u64_acc2 -----------------------------
_EXPM = dict(log2e=F32(_H("0x1.715476p0")), magic=F32(_H("0x1.8000FEp23")),
             ln2_hi=F32(-_H("0x1.62E400p-1")), ln2_lo=F32(-_H("0x1.7F7D1Cp-20")),
             poly=(_H("0x1.0F9F9Cp-7"), _H("0x1.573A1Ap-5"), _H("0x1.555A80p-3"),
                   _H("0x1.FFFDC6p-2"), _H("0x1.FFFFF6p-1")),
             cutoff=F32(-_H("0x1.5D589Ep6")))


def _exp_minus_max(x: np.ndarray) -> np.ndarray:
    """exp(x - max) per element: n = round((x - max) log2 e) by a magic bias that also
    builds s = 2**n, t = x - n ln 2 in two parts, a degree-5 polynomial, f = s + (t s) p;
    0 below the denormal cut-off."""
    k = _EXPM
    d = x - np.max(x, axis=-1, keepdims=True)
    n = fma(d, k["log2e"], k["magic"])
    s = (n.view(np.uint32) << np.uint32(23)).view(F32)
    n = n - k["magic"]
    t = fma(n, k["ln2_hi"], d)
    t = fma(n, k["ln2_lo"], t)
    c5, c4, c3, c2, c1 = (F32(c) for c in k["poly"])
    p = fma(c5, t, c4)
    for c in (c3, c2, c1):
        p = fma(p, t, c)
    t = flush(t * s)
    f = fma(t, p, s)
    return flush(np.where(d < k["cutoff"], F32(0), f))


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis (beta 1): the row's max, exp(x - max) stored and summed
    in two accumulators over 64 values at a time, then one over the 16s left, the tail;
    the lanes reduced; every value times float32(1 / sum)
    (xnn_compute_floating_point_softmax with the avx512f_rr2_p5_u64_acc2 kernel)."""
    x = flush(np.asarray(x, F32))
    if x.size == 0:
        return x.copy()
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        f = _exp_minus_max(x)
        full, tail = _lanes(f)
        blocks = full.shape[-2]
        head = blocks - blocks % 4  # vectors of the 64-value loop
        a0, a1 = _vector_sums(full[..., :head, :], 2, False)
        acc = a0 + a1
        for b in range(head, blocks):
            acc = acc + full[..., b, :]
        if tail is not None:
            acc = acc + tail
        total = _reduce16(acc)
        return flush(f * (F32(1) / total)[..., None])


__all__ = ["fma", "fma_exact_product", "flush", "gelu", "mean_last", "row_sum", "rsqrt",
           "sigmoid", "sin_cos", "softmax", "tanh"]
