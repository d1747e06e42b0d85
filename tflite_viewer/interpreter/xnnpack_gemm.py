"""XNNPACK's matrix products, as LiteRT 2.3.0's default delegate computes them on x86-64.

* **float32** FULLY_CONNECTED and BATCH_MATMUL (the f32 GEMM ``broadcast`` microkernels,
  ``xnn_f32_gemm_minmax_ukernel_1x32__avx512f_broadcast`` and its taller siblings): each
  output starts from its bias (0 without one, and for BATCH_MATMUL) and takes one FMA per
  depth step, in depth order: `f32_gemm`, `batch_matmul`.
* **dynamically quantized** FULLY_CONNECTED (float input, INT8 or INT4 weights: the
  delegate converts the input to XNNPACK's ``qdint8``): every row of the input is
  quantized on its own, asymmetrically, from its min and max (`quantize_rows`,
  ``xnn_qd8_asymmetric_quantization_params`` and the f32 to qs8/qu8 convert kernel);
  the integer products are exact; then the float epilogue:

  - per-channel INT8, INT4 or INT2 weights (``qd8_f32_qc8w`` / ``qc4w``, the
    avx512vnni kernels, and ``qc2w``): ``fma(float(acc) * (1 / scale), weight_scale,
    bias)`` (`qc_gemm`; for INT2 measured on the wheel, which XNNPACK's portable qc2w
    source does not show: it rounds the product before adding the bias);
  - blockwise INT4 weights with float16 block scales (``qdu8_f32_qb4w``, avx512vnni):
    the scales rounded to bfloat16, a per-column float term ``-sum(group sums * block
    scale)`` over groups of 16 depths times the unsigned input's zero point, then one FMA
    per block of ``float(block acc)`` and its scale, times ``1 / scale``, plus the bias
    (`qb4w_gemm`).  The zero point is that of XNNPACK's *unsigned* input (``qdu8``, the
    row's zero point + 128), which it takes on a CPU with AVX512-VNNI; a CPU without
    takes the signed ``qd8`` kernels, whose blockwise results differ (not reproduced).

Subnormal inputs count as zero and subnormal outputs become zero (XNNPACK's FTZ/DAZ
mode, `xnnpack_float.flush`); a subnormal partial sum is not flushed (it takes inputs
below 1e-19 to make one).
"""
from __future__ import annotations

import numpy as np

from .xnnpack_float import flush, fma, fma_exact_product

F32 = np.float32


# -- float32 ------------------------------------------------------------------------------
def f32_gemm(rows: np.ndarray, wt: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """rows [M, K] times wt [K, N], from the bias, one FMA per depth step in order."""
    rows = flush(np.asarray(rows, F32))
    wt = flush(np.asarray(wt, F32))
    m, n = rows.shape[0], wt.shape[1]
    acc = np.zeros((m, n), F32) if bias is None else \
        np.broadcast_to(np.asarray(bias, F32), (m, n)).copy()
    a64, w64 = rows.astype(np.float64), wt.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(rows.shape[1]):
            acc = fma_exact_product(a64[:, k, None] * w64[k], acc)
    return flush(acc)


def batch_matmul(a: np.ndarray, b: np.ndarray, adj_x: bool = False,
                 adj_y: bool = False) -> np.ndarray:
    """Float BATCH_MATMUL (the batch dimensions broadcast): every output from +0, one FMA
    per depth step in order."""
    a = flush(np.asarray(a, F32))
    b = flush(np.asarray(b, F32))
    if adj_x:
        a = np.swapaxes(a, -1, -2)
    if adj_y:
        b = np.swapaxes(b, -1, -2)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out_shape = batch + (a.shape[-2], b.shape[-1])
    acc = np.zeros(out_shape, F32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(a.shape[-1]):
            acc = fma_exact_product(a64[..., :, k, None] * b64[..., k, None, :], acc)
    return flush(acc)


# -- dynamic quantization of the input (qdint8) ------------------------------------------
def quantize_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """XNNPACK's per-row asymmetric int8 quantization of a float input [M, K]: the range
    [min(0, lo), max(0, hi)] over 255 steps, the zero point nudged to the nearer end's
    error and rounded to even, each value ``round(x * (255 / range)) + zero point``
    clamped to int8.  Returns (the quantized values minus the zero point as float64
    [M, K], the zero points [M] as int64, 1 / multiplier [M] as float32 — the epilogue's
    ``inv_scale``)."""
    rows = flush(np.asarray(rows, F32))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        lo = np.minimum(F32(0), rows.min(axis=1)) if rows.shape[1] else np.zeros(len(rows), F32)
        hi = np.maximum(F32(0), rows.max(axis=1)) if rows.shape[1] else np.zeros(len(rows), F32)
        mult = np.where(lo == hi, F32(1), F32(255) / (hi - lo)).astype(F32)
        low, high = lo * mult, hi * mult
        from_min = F32(-128) + low
        from_max = F32(127) + high
        zp = np.where(from_min + from_max > 0, F32(-128) - low, F32(127) - high)
        zp = np.rint(np.clip(zp, F32(-128), F32(127))).astype(np.int64)
        q = np.rint(np.minimum(rows * mult[:, None], F32(32767)))
        q = np.clip(q + zp[:, None], -128, 127)
        inv = (F32(1) / mult).astype(F32)
    return q - zp[:, None].astype(np.float64), zp, inv


def qc_gemm(rows: np.ndarray, w: np.ndarray, scales: np.ndarray,
            bias: np.ndarray | None = None) -> np.ndarray:
    """Dynamically quantized FULLY_CONNECTED with per-channel INT8 or INT4 weights
    ``w`` [N, K] (integers) and their float scales [N]: the exact integer sums, then
    ``fma(float32(acc) * inv_scale, scale, bias)`` per output."""
    centred, _, inv = quantize_rows(rows)
    acc = centred @ np.asarray(w, np.float64).T  # exact: |sum| < 2**53
    scaled = acc.astype(F32) * inv[:, None]
    b = np.zeros(len(scales), F32) if bias is None else np.asarray(bias, F32)
    with np.errstate(over="ignore", invalid="ignore"):
        return flush(fma(scaled, np.asarray(scales, F32), b))


def bf16_scales(scales16: np.ndarray) -> np.ndarray:
    """float16 block scales as XNNPACK stores them: widened, then rounded to bfloat16
    (to nearest, ties to even), as float32 values."""
    bits = np.asarray(scales16, np.float16).astype(F32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(F32)


class BlockwiseWeights:
    """INT4 weights with one float16 scale per block of ``block`` depths, packed as the
    qb4w GEMM reads them: the bfloat16 scales [N, blocks] and each column's float term
    ``-sum over groups of 16 depths of (group sum * block scale)``, subtracted group by
    group in float32 (``xnn_pack_qs8_qb4w_gemm_goi_w``)."""

    def __init__(self, w: np.ndarray, scales16: np.ndarray, block: int) -> None:
        w = np.asarray(w, np.int64)
        n, k = w.shape
        self.block = block
        self.w = w.astype(np.float64)
        self.scales = bf16_scales(scales16).reshape(n, k // block)
        ksum = np.zeros(n, F32)
        groups = w.reshape(n, k // 16, 16).sum(axis=2).astype(F32)
        for g in range(k // 16):
            ksum = ksum - groups[:, g] * self.scales[:, (16 * g) // block]
        self.ksum = ksum


def qb4w_gemm(rows: np.ndarray, weights: BlockwiseWeights,
              bias: np.ndarray | None = None) -> np.ndarray:
    """Dynamically quantized FULLY_CONNECTED with blockwise INT4 weights (qdu8 input)."""
    centred, zp, inv = quantize_rows(rows)
    unsigned = centred + (zp[:, None] + 128).astype(np.float64)  # the qdu8 values
    block, w = weights.block, weights.w
    with np.errstate(over="ignore", invalid="ignore"):
        out = weights.ksum[None, :] * (zp + 128).astype(F32)[:, None]
        for b in range(weights.scales.shape[1]):
            part = unsigned[:, b * block:(b + 1) * block] @ w[:, b * block:(b + 1) * block].T
            out = fma(part.astype(F32), weights.scales[None, :, b], out)
        out = out * inv[:, None]
        if bias is not None:
            out = out + np.asarray(bias, F32)
    return flush(out)


__all__ = ["BlockwiseWeights", "batch_matmul", "bf16_scales", "f32_gemm", "qb4w_gemm",
           "qc_gemm", "quantize_rows"]
