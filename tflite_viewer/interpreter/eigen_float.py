"""Eigen's float32 arithmetic as LiteRT's builtin kernels run it, to the bit.

LiteRT's builtin (optimized) kernels hand LOGISTIC, TANH, GELU, SOFTMAX's exponential,
MEAN over the last axis and the float FULLY_CONNECTED to Eigen.  The
``ai-edge-litert`` 2.3.0 wheel compiles them for SSE4.1 (its disassembly shows ``movups``,
``addps``, ``roundps`` and no VEX or FMA encodings in these functions), so Eigen works in
packets of 4 floats with a separate rounding for every multiply and every add, whatever
the CPU it runs on: the results below do not depend on the host's AVX2, FMA or AVX-512
(measured on an AMD EPYC with AVX-512).  Only XNNPACK and ruy choose their code by the
CPU at run time, and neither runs in these kernels.

What Eigen does, and what these functions reproduce:

* a **coefficient-wise** expression over a buffer computes whole packets with the packet
  functions and the last ``size % 4`` elements with the scalar ones (a buffer of LiteRT's
  arena starts 64-byte aligned, so there is no unaligned head): `logistic` (a polynomial
  ``exp(x/2)**2`` for packets, C's ``expf`` for the scalar tail), `tanh` (a [9/8] rational
  function, the same for both), `exp` (a degree-6 polynomial with ``pldexp``, whose fast
  or safe scaling is chosen per packet; ``expf`` for the tail);
* a **sum** (``redux``) adds the packets of a contiguous row into two packet accumulators
  alternately, folds them, reduces the 4 lanes as ``(l0 + l2) + (l1 + l3)``, then adds the
  unaligned head and the tail one by one (`row_sums`; a row is aligned by its address, so
  row r of a [R, n] buffer peels ``-r*n mod 4`` elements);
* matrix products are in `eigen_gemm`.

The constants are Eigen's, as the wheel holds them (read from its ``.rodata``: the
``tanh`` clamp 7.90738964 is the non-FMA one).  Checked against the wheel's kernels in
tests/interpreter/test_builtin_kernels_litert.py.
"""
from __future__ import annotations

import numpy as np

from .float32 import expf, last_of_sums

F32 = np.float32
PACKET = 4
_ONE, _HALF, _ZERO = F32(1.0), F32(0.5), F32(0.0)

# -- exp -----------------------------------------------------------------------------------
_LOG2E = F32(1.44269504088896341)
_LN2_HI, _LN2_LO = F32(-0.693359375), F32(2.12194440e-4)
_EXP_HI, _EXP_LO, _FAST_LDEXP = F32(88.723), F32(-104.0), F32(87.0)
_EXP_P = [F32(1.37449637986719608306884765625e-3), F32(8.36894474923610687255859375e-3),
          F32(4.166965186595916748046875e-2), F32(0.16666518151760101318359375),
          F32(0.49999988079071044921875)]


def _pow2(e: np.ndarray) -> np.ndarray:
    """2**e for integer exponents in [-126, 127], as float32 bit patterns."""
    return ((e.astype(np.int32) + 127) << 23).view(F32)


def _exp_packets(x0: np.ndarray) -> np.ndarray:
    """Eigen's ``pexp`` of [P, 4] packets: m = floor(x log2 e + 1/2), r = x - m ln 2 in two
    parts, a degree-6 polynomial in r, then 2**m applied fast (the biased exponent
    clamped to [0, 255]) for a packet whose every |x| is at most 87, else safely in four
    factors, with zero below -104; the larger of that and x."""
    x = np.minimum(x0, _EXP_HI)
    m = np.floor(x * _LOG2E + _HALF)
    r = m * _LN2_HI + x
    r = m * _LN2_LO + r
    r2 = r * r
    p6, p5, p4, p3, p2 = _EXP_P
    even = r2 * p6 + p4
    odd = r2 * p5 + p3
    even = even * r2 + p2
    y = odd * r + even
    y = y * r2 + (r + _ONE)
    safe = (np.abs(x) > _FAST_LDEXP).any(axis=1)
    fast_value = safe_value = None
    if not safe.all():
        biased = np.clip(m + F32(127), _ZERO, F32(255)).astype(np.int32)
        fast_value = np.maximum(x0, y * (biased << 23).view(F32))
    if safe.any():  # (a NaN m only meets a NaN y: the bits of its factors do not matter)
        e = np.clip(m, F32(-278), F32(278)).astype(np.int32)
        b = e >> 2
        c1, c2 = _pow2(b), _pow2(e - 3 * b)
        safe_value = np.where(x0 < _EXP_LO, _ZERO, np.maximum(x0, y * c1 * c1 * c1 * c2))
    if fast_value is None or safe_value is None:
        return safe_value if fast_value is None else fast_value
    return np.where(safe[:, None], safe_value, fast_value)


def _packets_then_scalars(x: np.ndarray, packet_fn, scalar_fn) -> np.ndarray:
    """``packet_fn`` on the whole packets of the flattened ``x``, ``scalar_fn`` on the
    last ``size % 4`` elements (Eigen's linear vectorized traversal of an aligned
    buffer)."""
    flat = np.ascontiguousarray(x, F32).reshape(-1)
    n4 = flat.size - flat.size % PACKET
    out = np.empty_like(flat)
    with np.errstate(all="ignore"):  # inf and NaN go through as Eigen's packets take them
        if n4:
            out[:n4] = packet_fn(flat[:n4].reshape(-1, PACKET)).reshape(-1)
        if n4 < flat.size:
            out[n4:] = scalar_fn(flat[n4:])
    return out.reshape(np.shape(x))


def exp(x: np.ndarray) -> np.ndarray:
    """``array().exp()`` of a float32 buffer."""
    return _packets_then_scalars(x, _exp_packets, expf)


# -- logistic --------------------------------------------------------------------------------
_LOGISTIC_HI = F32(16.6355324)
_LOGISTIC_P = [F32(8.33471305668354034423828125e-3), F32(4.1898667812347412109375e-2),
               F32(0.16666877269744873046875), F32(0.49999141693115234375)]


def _logistic_packets(x0: np.ndarray) -> np.ndarray:
    """``scalar_logistic_op<float>::packetOp``: exp(x) as exp(x/2)**2 (x/2 reduced by
    m ln 2, a degree-5 polynomial, 2**m with the exponent clamped), then e / (1 + e),
    zero below -104."""
    x = np.minimum(x0, _LOGISTIC_HI) * _HALF
    m = np.floor(x * _LOG2E + _HALF)
    r = m * _LN2_HI + x
    r = m * _LN2_LO + r
    r2 = r * r
    p5, p4, p3, p2 = _LOGISTIC_P
    even = r2 * p4 + p2
    odd = r2 * p5 + p3
    p = r * odd + even
    p = r2 * p + (r + _ONE)
    biased = np.clip(m + F32(127), _ZERO, F32(255)).astype(np.int32)  # (NaN: y is NaN)
    e = p * (biased << 23).view(F32)
    e = e * e
    return np.where(x0 < _EXP_LO, _ZERO, e / (_ONE + e))


def _logistic_scalars(x: np.ndarray) -> np.ndarray:
    """``scalar_logistic_op<float>::operator()``: expf(min(x, 16.6355324)) / (1 + that)."""
    e = expf(np.minimum(x, _LOGISTIC_HI))
    return e / (_ONE + e)


def logistic(x: np.ndarray) -> np.ndarray:
    """LOGISTIC of the builtin kernels (optimized_ops::Logistic: Eigen's logistic)."""
    return _packets_then_scalars(x, _logistic_packets, _logistic_scalars)


# -- tanh ------------------------------------------------------------------------------------
_TANH_CLAMP = F32(7.90738964080810547)
_TANH_NUM = [F32(1.394553628e-8), F32(2.102733560e-5), F32(3.520756727e-3),
             F32(1.340216100e-1)]
_TANH_DEN = [F32(8.015776984e-7), F32(3.326951409e-4), F32(2.597254514e-2),
             F32(4.673548340e-1), F32(1.0)]


def tanh(x: np.ndarray) -> np.ndarray:
    """Eigen's fast ``ptanh_float`` (scalars and packets alike): x clamped to
    +-7.90738964, then (x**3 P(x**2) + x) / Q(x**2), P and Q evaluated by Horner."""
    with np.errstate(all="ignore"):
        t = np.maximum(np.minimum(np.asarray(x, F32), _TANH_CLAMP), -_TANH_CLAMP)
        x2 = t * t
        x3 = t * x2
        p = _TANH_NUM[0]
        for c in _TANH_NUM[1:]:
            p = p * x2 + c
        q = _TANH_DEN[0]
        for c in _TANH_DEN[1:]:
            q = q * x2 + c
        return (x3 * p + t) / q


#: GELU's sqrt(2 / pi) as the kernel holds it: M_2_SQRTPI * M_SQRT1_2 in double, as float
_SQRT_2_OVER_PI = F32(1.1283791670955126 * 0.7071067811865476)
_GELU_CUBIC = F32(0.044715)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU's tanh form as reference_ops::Gelu's Eigen expression evaluates it (both kernel
    sets): (0.5 x) * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * ((x x) x))))."""
    x = np.asarray(x, F32)
    with np.errstate(all="ignore"):
        inner = (x * x * x * _GELU_CUBIC + x) * _SQRT_2_OVER_PI
        return (tanh(inner) + _ONE) * (_HALF * x)


# -- sums --------------------------------------------------------------------------------------
def predux(packets: np.ndarray) -> np.ndarray:
    """``predux`` of [..., 4] packets: (l0 + l2) + (l1 + l3)."""
    return (packets[..., 0] + packets[..., 2]) + (packets[..., 1] + packets[..., 3])


def redux(rows: np.ndarray, peel: int = 0) -> np.ndarray:
    """Eigen's vectorized sum of each row of ``rows`` [R, n] whose first ``peel`` elements
    come before the first 16-byte boundary."""
    r, n = rows.shape
    peel = min(peel, n)
    body = n - peel
    full1, full2 = body - body % PACKET, body - body % (2 * PACKET)
    if not full1:  # too short to vectorize: one by one from the first
        res = rows[:, 0].copy()
        for j in range(1, n):
            res += rows[:, j]
        return res
    start = peel
    if full1 == PACKET:
        acc = rows[:, start:start + PACKET]
    else:
        # the two accumulators side by side: [R, 8] sums of the pairs of packets, in order
        both = last_of_sums(rows[:, start:start + full2].reshape(r, -1, 2 * PACKET), axis=1)
        acc = both[:, :PACKET] + both[:, PACKET:]
        if full1 > full2:
            acc = acc + rows[:, start + full2:start + full1]
    res = predux(acc)
    for j in list(range(peel)) + list(range(start + full1, n)):
        res = res + rows[:, j]
    return res


def row_sums(rows: np.ndarray) -> np.ndarray:
    """``colwise().sum()`` of a column-major [n, R] map, that is, the sum of each row of a
    C-contiguous float32 [R, n] buffer, Eigen's way (`redux`): row r starts at float
    r * n from an aligned base, so its unaligned head is ``-r*n mod 4`` elements."""
    rows = np.ascontiguousarray(rows, F32)
    r, n = rows.shape
    if n % PACKET == 0:  # every row starts aligned
        return redux(rows, 0)
    out = np.empty(r, F32)
    peels = (-(np.arange(r, dtype=np.int64) * n)) % PACKET
    for peel in range(PACKET):
        sel = peels == peel
        if sel.any():
            out[sel] = redux(rows[sel], peel)
    return out


def softmax(x: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """optimized_ops::Softmax over the last axis of a float32 array: (x - the row's max)
    times beta, Eigen's `exp` over the whole buffer, `row_sums`, and each row multiplied
    by the inverse of its sum."""
    x = np.asarray(x, F32)
    if not x.size:
        return x.copy()
    rows = x.reshape(-1, x.shape[-1])
    with np.errstate(all="ignore"):
        shifted = (rows - np.maximum.reduce(rows, axis=1, keepdims=True)) * F32(beta)
        e = exp(shifted)
        inverse = _ONE / row_sums(e)
        return (e * inverse[:, None]).reshape(x.shape)


__all__ = ["PACKET", "exp", "gelu_tanh", "logistic", "predux", "redux", "row_sums", "softmax",
           "tanh"]
