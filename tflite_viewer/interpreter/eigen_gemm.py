"""The float FULLY_CONNECTED product as LiteRT's builtin kernel computes it, to the bit.

On x86 the builtin FULLY_CONNECTED hands float32 products to Eigen
(``cpu_backend_gemm::detail::GemmImplUsingEigen``; ruy only takes integer products there),
compiled for SSE4.1 without FMA (see `eigen_float`): packets of 4 floats, every multiply
and add rounded on its own.  The destination [O, M] (weights [O, K] row-major times the
input rows [K, M]) is zeroed, then:

* one input row (a decode step): Eigen's row-major matrix times vector, per output 4 lanes
  summed from zero over the packets of K, reduced ``(l0 + l2) + (l1 + l3)``, then the last
  ``K % 4`` products one by one (`gemv`); one output row: the same with the roles swapped;
* tiny products (K + O + M < 20) and one row times one column: each output Eigen's
  vectorized sum of its K products (`eigen_float.redux`);
* otherwise the blocked GEMM (``gebp``, register blocks of mr = 8 rows by nr = 4 columns
  without FMA): the depth is cut into blocks of at most ``kc`` (from the L1 data cache:
  (L1 - 128) / 48 rounded down to a multiple of 8, then evened out), each block's sum added
  to the destination.  Within a block an output is summed from zero one product after
  another, except the outputs of a 4-row group (O mod 8 >= 4) in a 4-column panel, which
  alternate even and odd depths into two accumulators over the depth rounded down to 8,
  and the last O mod 4 rows in a 4-column panel, whose four accumulators take the depths
  mod 4 over the depth rounded down to 4 (then ``(c0 + c1) + (c2 + c3)``); either way the
  rest of the block's depths are added one by one.

The depth blocking is the one part that depends on the machine: Eigen reads the L1 data
cache's size from CPUID, so a CPU with a 48 KiB L1 (recent Intel cores, AMD Zen 5) blocks
at 1016 where one with 32 KiB blocks at 680, and products deeper than that differ in the
last bits.  `l1_data_cache_bytes` reads the size Linux reports (what CPUID says), 32 KiB
where it cannot.  Checked against the wheel in tests/interpreter/test_builtin_gemm_litert.py.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from .eigen_float import PACKET, predux, redux
from .float32 import last_of_sums, ordered_matmul

F32 = np.float32
_ZERO = F32(0.0)
#: Eigen's register blocking without FMA on SSE: mr rows by nr columns
MR, NR = 8, 4
#: gebp's depth peeling
_PEEL = 8
#: below this sum of K + O + M Eigen computes each coefficient as a dot product
_COEFF_BASED = 20
#: Eigen's default when the cache size cannot be read
DEFAULT_L1 = 32 * 1024
_SYSFS_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


@lru_cache(maxsize=None)
def l1_data_cache_bytes() -> int:
    """The L1 data cache's size as Linux reports it (cpu0's level-1 data cache), else
    Eigen's default of 32 KiB."""
    try:
        for index in sorted(_SYSFS_CACHES.glob("index*")):
            if (index / "level").read_text().strip() == "1" and \
                    (index / "type").read_text().strip() in ("Data", "Unified"):
                text = (index / "size").read_text().strip().upper()
                scale = {"K": 1024, "M": 1 << 20}.get(text[-1:], 1)
                return int(text.rstrip("KM")) * scale
    except (OSError, ValueError):
        pass
    return DEFAULT_L1


def depth_blocks(k: int, o: int, m: int, l1: int | None = None) -> list[tuple[int, int]]:
    """Eigen's depth blocks [start, end) of a product of depth ``k`` with ``o`` output rows
    and ``m`` columns (evaluateProductBlockingSizesHeuristic's kc)."""
    l1 = l1_data_cache_bytes() if l1 is None else l1
    kc = k
    if max(k, o, m) >= 48:
        max_kc = max(((l1 - MR * NR * 4) // ((MR + NR) * 4)) & ~(_PEEL - 1), 1)
        if k > max_kc:
            kc = max_kc if k % max_kc == 0 else \
                max_kc - _PEEL * ((max_kc - 1 - k % max_kc) // (_PEEL * (k // max_kc + 1)))
    return [(s, min(k, s + kc)) for s in range(0, k, kc)] or [(0, 0)]


#: products per block of `gemv` (16 MiB of float32)
_GEMV_BLOCK = 1 << 22


def gemv(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Eigen's row-major matrix [O, K] times a vector [K]: per row, 4 lanes each summing
    its products from zero in order, reduced as ``predux``, then the last ``K % 4``
    products added one by one; the result added to the zeroed destination."""
    o, k = w.shape
    full = k - k % PACKET
    out = np.empty(o, F32)
    step = max(1, _GEMV_BLOCK // max(k, 1))
    for o0 in range(0, o, step):
        rows = w[o0:o0 + step]
        if full:  # each lane from zero: the sums from the first, plus +0
            products = (rows[:, :full] * x[:full]).reshape(rows.shape[0], -1, PACKET)
            acc = predux(last_of_sums(products, axis=1) + _ZERO)
        else:
            acc = np.zeros(rows.shape[0], F32)
        for j in range(full, k):
            acc = acc + rows[:, j] * x[j]
        out[o0:o0 + step] = acc  # (the zeroed destination plus acc: acc is never -0)
    return out


def inner_product(a: np.ndarray, b: np.ndarray) -> np.float32:
    """Eigen's inner product (``inner_product_impl``) of two float32 vectors: the packets
    of products summed into four packet accumulators in turn (p0 p1 p2 p3 p0 ...), the
    packets past the last group of four into p0, p1, p2, folded as p0 + (p1 + (p2 + p3)),
    reduced as ``predux``, then the tail products added one by one."""
    n = a.size
    products = (a * b).astype(F32, copy=False)
    if n < PACKET:  # the scalar loop: the first product, then the others
        acc = products[0] if n else _ZERO
        for j in range(1, n):
            acc = F32(acc + products[j])
        return F32(acc)
    packets = n // PACKET
    lanes = products[:packets * PACKET].reshape(packets, PACKET)
    acc = [lanes[j].copy() for j in range(min(4, packets))]
    if packets >= 4:
        quads = packets - packets % 4
        for j in range(4, quads):
            acc[j % 4] = acc[j % 4] + lanes[j]
        for r, j in enumerate(range(quads, packets)):
            acc[r] = acc[r] + lanes[j]
    while len(acc) > 1:
        last = acc.pop()
        acc[-1] = acc[-1] + last
    total = F32(predux(acc[0]))
    for j in range(packets * PACKET, n):
        total = F32(total + products[j])
    return total


def _interleaved(x: np.ndarray, w: np.ndarray, stride: int, end: int) -> list[np.ndarray]:
    """For each r < ``stride``, the sums from zero, in order, of the products at depths
    r, r + stride, ... below ``end``: [M, O] each."""
    return [ordered_matmul(np.ascontiguousarray(x[:, r:end:stride]),
                           np.ascontiguousarray(w[:, r:end:stride].T)) for r in range(stride)]


def _tail(acc: np.ndarray, x: np.ndarray, w: np.ndarray, start: int) -> np.ndarray:
    """``acc`` plus the products at depths ``start``.. one after another."""
    for j in range(start, x.shape[1]):
        acc = acc + x[:, j:j + 1] * w[:, j]
    return acc


def _block(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """One depth block's sums [M, O] of ``x`` [M, d] times ``w`` [O, d]^T, by register
    block (see the module docstring)."""
    m, d = x.shape
    o = w.shape[0]
    out = ordered_matmul(x, np.ascontiguousarray(w.T))  # one after another: most outputs
    rows2 = o - o % MR
    rows1 = rows2 + ((o - rows2) // PACKET) * PACKET
    cols = m - m % NR
    if cols and rows1 > rows2:  # 1 packet x 4 columns: even and odd depths apart
        peeled = d - d % _PEEL
        xs, ws = x[:cols], w[rows2:rows1]
        even, odd = _interleaved(xs, ws[:, :peeled], 2, peeled)
        out[:cols, rows2:rows1] = _tail(even + odd, xs, ws, peeled)
    if cols and o > rows1:  # the last rows x 4 columns: four accumulators, depth mod 4
        end4 = d - d % PACKET
        xs, ws = x[:cols], w[rows1:]
        c0, c1, c2, c3 = _interleaved(xs, ws[:, :end4], PACKET, end4)
        out[:cols, rows1:] = _tail((c0 + c1) + (c2 + c3), xs, ws, end4)
    return out


def product(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x`` [M, K] times ``w`` [O, K]^T, both float32, as GemmImplUsingEigen: [M, O]."""
    x = np.asarray(x, F32)
    m, k = x.shape
    o = w.shape[0]
    if m == 0 or o == 0 or k == 0:
        return np.zeros((m, o), F32)
    if m == 1 and o == 1:  # a row times a column: Eigen's inner product
        return np.full((1, 1), _ZERO + inner_product(x[0], np.asarray(w[0], F32)), F32)
    if m == 1:
        return gemv(np.ascontiguousarray(w, F32), x[0])[None, :]
    if o == 1:
        return gemv(x, np.ascontiguousarray(w[0], F32))[:, None]
    if k + o + m < _COEFF_BASED:  # coefficient-based: one vectorized sum per output
        products = (x[:, None, :] * w[None, :, :]).reshape(m * o, k)
        return redux(np.ascontiguousarray(products, F32)).reshape(m, o)
    out = np.zeros((m, o), F32)
    for k0, k1 in depth_blocks(k, o, m):
        out = out + _block(np.ascontiguousarray(x[:, k0:k1]),
                           np.ascontiguousarray(w[:, k0:k1], F32))
    return out


__all__ = ["DEFAULT_L1", "MR", "NR", "depth_blocks", "gemv", "l1_data_cache_bytes", "product"]
