"""KissFFT v130 as TensorFlow Lite Micro's signal library builds it, in numpy, bit for bit.

TFLM's SignalRfft and SignalIrfft run Mark Borgerding's KissFFT (v130, patched by TFLM) in
three builds: 16-bit fixed point, 32-bit fixed point and float.  The fixed-point builds
divide by the radix at every butterfly stage (``C_FIXDIV``) and round every product
(``sround``), so their results are not those of an exact FFT: matching them bit for bit
means doing the same operations in the same order.  This module does, vectorized over
frames and over the independent butterflies of a stage:

- `Arithmetic` holds the scalar type's rules: fixed point stores wrap to the scalar's width
  (C's conversion of an ``int`` to ``int16_t``), products round half up at FRACBITS;
  float computes in float32, operation by operation (the x86-64 build has no fused
  multiply-add).
- `Plan` is ``kiss_fft_alloc``: twiddles (from libm's ``cos``/``sin`` on the same double
  phases), the radix factorization (4s first, then 2, then odd numbers) and, for the
  recursive decimation of ``kf_work``, the input order and the stages to run.
- `rfft` / `irfft` are ``kiss_fftr`` / ``kiss_fftri``: a half-length complex FFT of the
  even/odd samples and the split with the "super twiddles".

TFLM patches KissFFT's allocator to return no memory, so the generic radix (factors above
5) and the odd-length real transform cannot run there; `check_fft_length` says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_PI_FFT = 3.141592653589793238462643383279502884197169399375105820974944
_PI_FFTR = 3.14159265358979323846264338327


class Arithmetic:
    """The scalar rules of one KissFFT build (see the module docstring)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "int16" | "int32" | "float32"
        self.fixed = kind != "float32"
        if kind == "int16":
            self.bits, self.frac_bits, self.samp_max = 16, 15, 32767
        elif kind == "int32":
            self.bits, self.frac_bits, self.samp_max = 32, 31, 2147483647
        self.dtype = np.dtype(kind)

    # -- storing a value into a kiss_fft_scalar ------------------------------------------
    def store(self, x: np.ndarray) -> np.ndarray:
        """C's conversion to the scalar type: wrap modulo 2**bits (fixed), float32 (float)."""
        if not self.fixed:
            return x.astype(np.float32, copy=False)
        return x.astype(self.dtype).astype(np.int64)

    def load(self, x: np.ndarray) -> np.ndarray:
        """The working representation of scalar values (int64 for fixed point)."""
        return x.astype(np.int64) if self.fixed else x.astype(np.float32)

    def sround(self, x: np.ndarray) -> np.ndarray:
        return self.store((x + (1 << (self.frac_bits - 1))) >> self.frac_bits)

    def s_mul(self, a: np.ndarray, b) -> np.ndarray:
        return self.sround(a * b) if self.fixed else a * b

    def c_mul(self, ar, ai, br, bi) -> tuple[np.ndarray, np.ndarray]:
        if self.fixed:
            return self.sround(ar * br - ai * bi), self.sround(ar * bi + ai * br)
        return ar * br - ai * bi, ar * bi + ai * br

    def fixdiv(self, r, i, div: int) -> tuple[np.ndarray, np.ndarray]:
        """``C_FIXDIV``: multiply by SAMP_MAX/div and round (fixed); nothing (float)."""
        if not self.fixed:
            return r.copy(), i.copy()  # a copy, as C's scratch values are
        k = self.samp_max // div
        return self.sround(r * k), self.sround(i * k)

    def half(self, x: np.ndarray) -> np.ndarray:
        """``HALF_OF`` of an ``int`` expression (wrapped to 32 bits, then shifted) or of a
        float."""
        if not self.fixed:
            return x * np.float32(0.5)
        return x.astype(np.int32).astype(np.int64) >> 1

    def add(self, a, b):
        return self.store(a + b) if self.fixed else a + b

    def sub(self, a, b):
        return self.store(a - b) if self.fixed else a - b

    def neg(self, a):
        return self.store(-a) if self.fixed else -a

    def twiddle(self, phase: float) -> tuple:
        """``kf_cexp``: the scalar cos and sin of a double phase."""
        c, s = math.cos(phase), math.sin(phase)
        if self.fixed:
            return math.floor(0.5 + self.samp_max * c), math.floor(0.5 + self.samp_max * s)
        return np.float32(c), np.float32(s)


ARITHMETIC = {k: Arithmetic(k) for k in ("int16", "int32", "float32")}


def factorize(n: int) -> list[tuple[int, int]]:
    """``kf_factor``: the (radix, remaining length) pairs, powers of 4 first."""
    stages, p = [], 4
    floor_sqrt = math.floor(math.sqrt(n))
    while True:
        while n % p:
            p = {4: 2, 2: 3}.get(p, p + 2)
            if p > floor_sqrt:
                p = n
        n //= p
        stages.append((p, n))
        if n <= 1:
            return stages


def check_fft_length(fft_length: int) -> str | None:
    """Why TFLM cannot run a real FFT of this length (its KissFFT build), or None."""
    if fft_length < 4 or fft_length % 2:
        return (f"fft_length {fft_length}: TFLM's KissFFT real transform needs an even "
                "length of at least 4")
    bad = [p for p, _ in factorize(fft_length // 2) if p > 5]
    if bad:
        return (f"fft_length {fft_length}: half of it has the prime factor {bad[0]}; TFLM's "
                "KissFFT build has no memory for its generic radix (only 2, 3, 4, 5)")
    return None


@dataclass(frozen=True)
class Plan:
    """One complex FFT of length ``nfft`` (``kiss_fft_alloc``) for one arithmetic."""

    nfft: int
    inverse: bool
    kind: str
    tw_r: np.ndarray
    tw_i: np.ndarray
    order: np.ndarray  # input index of each position before the first stage
    stages: tuple  # (radix, m, fstride), innermost first


@lru_cache(maxsize=64)
def plan(nfft: int, inverse: bool, kind: str) -> Plan:
    ar = ARITHMETIC[kind]
    tw = [ar.twiddle((-2 * _PI_FFT * i / nfft) * (-1 if inverse else 1)) for i in range(nfft)]
    tw_r = ar.load(np.array([t[0] for t in tw]))
    tw_i = ar.load(np.array([t[1] for t in tw]))
    factors = factorize(nfft)
    fstrides = [1]
    for p, _ in factors[:-1]:
        fstrides.append(fstrides[-1] * p)

    def order(offset: int, depth: int) -> list[int]:
        p, m = factors[depth]
        step = fstrides[depth]
        if m == 1:
            return [offset + j * step for j in range(p)]
        return [i for j in range(p) for i in order(offset + j * step, depth + 1)]

    stages = tuple((p, m, fs) for (p, m), fs in zip(reversed(factors), reversed(fstrides)))
    return Plan(nfft, inverse, kind, tw_r, tw_i, np.array(order(0, 0)), stages)


def _bfly2(ar: Arithmetic, r, i, pl: Plan, m: int, fs: int) -> None:
    k = np.arange(m) * fs
    r0, i0 = ar.fixdiv(r[..., 0, :], i[..., 0, :], 2)
    r1, i1 = ar.fixdiv(r[..., 1, :], i[..., 1, :], 2)
    tr, ti = ar.c_mul(r1, i1, pl.tw_r[k], pl.tw_i[k])
    r[..., 1, :], i[..., 1, :] = ar.sub(r0, tr), ar.sub(i0, ti)
    r[..., 0, :], i[..., 0, :] = ar.add(r0, tr), ar.add(i0, ti)


def _bfly3(ar: Arithmetic, r, i, pl: Plan, m: int, fs: int) -> None:
    k = np.arange(m) * fs
    epi3_i = pl.tw_i[fs * m]
    f = [ar.fixdiv(r[..., q, :], i[..., q, :], 3) for q in range(3)]
    s1 = ar.c_mul(*f[1], pl.tw_r[k], pl.tw_i[k])
    s2 = ar.c_mul(*f[2], pl.tw_r[2 * k], pl.tw_i[2 * k])
    s3 = ar.add(s1[0], s2[0]), ar.add(s1[1], s2[1])
    s0 = ar.sub(s1[0], s2[0]), ar.sub(s1[1], s2[1])
    f1r = ar.sub(f[0][0], ar.half(s3[0]))
    f1i = ar.sub(f[0][1], ar.half(s3[1]))
    s0 = ar.s_mul(s0[0], epi3_i), ar.s_mul(s0[1], epi3_i)
    r[..., 0, :], i[..., 0, :] = ar.add(f[0][0], s3[0]), ar.add(f[0][1], s3[1])
    r[..., 2, :], i[..., 2, :] = ar.add(f1r, s0[1]), ar.sub(f1i, s0[0])
    r[..., 1, :], i[..., 1, :] = ar.sub(f1r, s0[1]), ar.add(f1i, s0[0])


def _bfly4(ar: Arithmetic, r, i, pl: Plan, m: int, fs: int) -> None:
    k = np.arange(m) * fs
    f = [ar.fixdiv(r[..., q, :], i[..., q, :], 4) for q in range(4)]
    s0 = ar.c_mul(*f[1], pl.tw_r[k], pl.tw_i[k])
    s1 = ar.c_mul(*f[2], pl.tw_r[2 * k], pl.tw_i[2 * k])
    s2 = ar.c_mul(*f[3], pl.tw_r[3 * k], pl.tw_i[3 * k])
    s5 = ar.sub(f[0][0], s1[0]), ar.sub(f[0][1], s1[1])
    f0 = ar.add(f[0][0], s1[0]), ar.add(f[0][1], s1[1])
    s3 = ar.add(s0[0], s2[0]), ar.add(s0[1], s2[1])
    s4 = ar.sub(s0[0], s2[0]), ar.sub(s0[1], s2[1])
    r[..., 2, :], i[..., 2, :] = ar.sub(f0[0], s3[0]), ar.sub(f0[1], s3[1])
    r[..., 0, :], i[..., 0, :] = ar.add(f0[0], s3[0]), ar.add(f0[1], s3[1])
    if pl.inverse:
        r[..., 1, :], i[..., 1, :] = ar.sub(s5[0], s4[1]), ar.add(s5[1], s4[0])
        r[..., 3, :], i[..., 3, :] = ar.add(s5[0], s4[1]), ar.sub(s5[1], s4[0])
    else:
        r[..., 1, :], i[..., 1, :] = ar.add(s5[0], s4[1]), ar.sub(s5[1], s4[0])
        r[..., 3, :], i[..., 3, :] = ar.sub(s5[0], s4[1]), ar.add(s5[1], s4[0])


def _bfly5(ar: Arithmetic, r, i, pl: Plan, m: int, fs: int) -> None:
    u = np.arange(m) * fs
    ya_r, ya_i = pl.tw_r[fs * m], pl.tw_i[fs * m]
    yb_r, yb_i = pl.tw_r[2 * fs * m], pl.tw_i[2 * fs * m]
    f = [ar.fixdiv(r[..., q, :], i[..., q, :], 5) for q in range(5)]
    s0 = f[0]
    s1, s2, s3, s4 = (ar.c_mul(*f[q], pl.tw_r[q * u], pl.tw_i[q * u]) for q in range(1, 5))
    s7 = ar.add(s1[0], s4[0]), ar.add(s1[1], s4[1])
    s10 = ar.sub(s1[0], s4[0]), ar.sub(s1[1], s4[1])
    s8 = ar.add(s2[0], s3[0]), ar.add(s2[1], s3[1])
    s9 = ar.sub(s2[0], s3[0]), ar.sub(s2[1], s3[1])
    m_ = ar.s_mul
    r[..., 0, :] = ar.add(s0[0], s7[0] + s8[0])  # Fout0 += s7 + s8
    i[..., 0, :] = ar.add(s0[1], s7[1] + s8[1])
    s5r = ar.add(ar.add(s0[0], m_(s7[0], ya_r)), m_(s8[0], yb_r))
    s5i = ar.add(ar.add(s0[1], m_(s7[1], ya_r)), m_(s8[1], yb_r))
    s6r = ar.add(m_(s10[1], ya_i), m_(s9[1], yb_i))
    s6i = ar.sub(ar.neg(m_(s10[0], ya_i)), m_(s9[0], yb_i))
    r[..., 1, :], i[..., 1, :] = ar.sub(s5r, s6r), ar.sub(s5i, s6i)
    r[..., 4, :], i[..., 4, :] = ar.add(s5r, s6r), ar.add(s5i, s6i)
    s11r = ar.add(ar.add(s0[0], m_(s7[0], yb_r)), m_(s8[0], ya_r))
    s11i = ar.add(ar.add(s0[1], m_(s7[1], yb_r)), m_(s8[1], ya_r))
    s12r = ar.add(ar.neg(m_(s10[1], yb_i)), m_(s9[1], ya_i))
    s12i = ar.sub(m_(s10[0], yb_i), m_(s9[0], ya_i))
    r[..., 2, :], i[..., 2, :] = ar.add(s11r, s12r), ar.add(s11i, s12i)
    r[..., 3, :], i[..., 3, :] = ar.sub(s11r, s12r), ar.sub(s11i, s12i)


_BUTTERFLIES = {2: _bfly2, 3: _bfly3, 4: _bfly4, 5: _bfly5}


def fft(pl: Plan, r: np.ndarray, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``kiss_fft`` of the last axis of (r, i), in the plan's working representation."""
    ar = ARITHMETIC[pl.kind]
    r, i = r[..., pl.order], i[..., pl.order]
    lead = r.shape[:-1]
    for p, m, fs in pl.stages:
        if p not in _BUTTERFLIES:
            raise ValueError(f"KissFFT radix {p} is not available in TFLM's build")
        shape = lead + (pl.nfft // (p * m), p, m)
        rv, iv = r.reshape(shape), i.reshape(shape)
        _BUTTERFLIES[p](ar, rv, iv, pl, m, fs)
    return r, i


@lru_cache(maxsize=64)
def _super_twiddles(ncfft: int, inverse: bool, kind: str) -> tuple[np.ndarray, np.ndarray]:
    ar = ARITHMETIC[kind]
    tw = [ar.twiddle(-_PI_FFTR * ((k + 1) / ncfft + 0.5) * (-1 if inverse else 1))
          for k in range(ncfft // 2)]
    return ar.load(np.array([t[0] for t in tw])), ar.load(np.array([t[1] for t in tw]))


def rfft(x: np.ndarray, fft_length: int, kind: str) -> np.ndarray:
    """``kiss_fftr`` of the last axis (``fft_length`` real samples) -> interleaved
    (real, imag) pairs of the fft_length/2 + 1 bins, in the scalar type."""
    ar = ARITHMETIC[kind]
    ncfft = fft_length // 2
    x = ar.load(x)
    tr, ti = fft(plan(ncfft, False, kind), x[..., 0::2], x[..., 1::2])
    out_r = np.zeros(x.shape[:-1] + (ncfft + 1,), tr.dtype)
    out_i = np.zeros_like(out_r)
    dc_r, dc_i = ar.fixdiv(tr[..., 0], ti[..., 0], 2)
    out_r[..., 0] = ar.add(dc_r, dc_i)
    out_r[..., ncfft] = ar.sub(dc_r, dc_i)
    k = np.arange(1, ncfft // 2 + 1)
    if k.size:
        sr, si = _super_twiddles(ncfft, False, kind)
        fpk = ar.fixdiv(tr[..., k], ti[..., k], 2)
        fpnk = ar.fixdiv(tr[..., ncfft - k], ar.neg(ti[..., ncfft - k]), 2)
        f1k = ar.add(fpk[0], fpnk[0]), ar.add(fpk[1], fpnk[1])
        f2k = ar.sub(fpk[0], fpnk[0]), ar.sub(fpk[1], fpnk[1])
        twr, twi = ar.c_mul(*f2k, sr[k - 1], si[k - 1])
        out_r[..., k] = ar.store(ar.half(f1k[0] + twr))
        out_i[..., k] = ar.store(ar.half(f1k[1] + twi))
        out_r[..., ncfft - k] = ar.store(ar.half(f1k[0] - twr))
        out_i[..., ncfft - k] = ar.store(ar.half(twi - f1k[1]))
    out = np.stack([out_r, out_i], axis=-1).reshape(x.shape[:-1] + (2 * (ncfft + 1),))
    return out.astype(ar.dtype)


def irfft(spectrum: np.ndarray, fft_length: int, kind: str) -> np.ndarray:
    """``kiss_fftri`` of the last axis (interleaved pairs of fft_length/2 + 1 bins) ->
    fft_length real samples, unscaled (KissFFT's inverse is n times the true one)."""
    ar = ARITHMETIC[kind]
    ncfft = fft_length // 2
    s = ar.load(spectrum)
    fr, fi = s[..., 0::2][..., :ncfft + 1], s[..., 1::2][..., :ncfft + 1]
    tr = np.zeros(s.shape[:-1] + (ncfft,), fr.dtype)
    ti = np.zeros_like(tr)
    r0, i0 = ar.add(fr[..., 0], fr[..., ncfft]), ar.sub(fr[..., 0], fr[..., ncfft])
    tr[..., 0], ti[..., 0] = ar.fixdiv(r0, i0, 2)
    k = np.arange(1, ncfft // 2 + 1)
    if k.size:
        sr, si = _super_twiddles(ncfft, True, kind)
        fk = ar.fixdiv(fr[..., k], fi[..., k], 2)
        fnkc = ar.fixdiv(fr[..., ncfft - k], ar.neg(fi[..., ncfft - k]), 2)
        fek = ar.add(fk[0], fnkc[0]), ar.add(fk[1], fnkc[1])
        tmp = ar.sub(fk[0], fnkc[0]), ar.sub(fk[1], fnkc[1])
        fok = ar.c_mul(*tmp, sr[k - 1], si[k - 1])
        tr[..., k], ti[..., k] = ar.add(fek[0], fok[0]), ar.add(fek[1], fok[1])
        tr[..., ncfft - k] = ar.sub(fek[0], fok[0])
        ti[..., ncfft - k] = ar.neg(ar.sub(fek[1], fok[1]))
    outr, outi = fft(plan(ncfft, True, kind), tr, ti)
    out = np.stack([outr, outi], axis=-1).reshape(s.shape[:-1] + (fft_length,))
    return out.astype(ar.dtype)
