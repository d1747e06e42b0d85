"""Quantized BATCH_MATMUL: int8 (int8 or int32 output), int16, int16 x int8, and hybrid
(float LHS, int8 RHS).

Mirrors batch_matmul.cc: Prepare's multiplier is ``GetQuantizedConvolutionMultipler``
(the lhs*rhs scale product in float32, divided by the output scale in double) and the
reference ``BatchMatMul`` accumulates ``(lhs + lhs_offset) * (rhs + rhs_offset)`` in int32
(8-bit; the 32-bit MultiplyByQuantizedMultiplier) or int64 (16-bit; the 16-bit reduced
multiplier overload), then adds the output zero point and clamps to the type's range (no
fused activation).  An int32 output takes the raw int8 products without zero points
(``EvalInt8Int32``).

The hybrid path (``EvalHybrid``) quantizes each LHS row of K values on the fly
(symmetric, or asymmetric with ``asymmetric_quantize_inputs``), accumulates the int8
products exactly, subtracts ``row_sum(rhs) * input_offset`` in float32, and scales by the
row's scaling factor times the RHS scale (per tensor, folded into the factor, or per output
column) in float32 (bit-exact with the ai-edge-litert 2.3.0 wheel, whose asymmetric batch
scale is computed in float32).  It indexes its scaling factors and row sums per batch the way the
reference kernel does, which for more than one broadcast batch dimension is not the
natural order; we follow it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import quant_math as qm
from .common import Options, Rounding, check_rounding, dtype_range, int_matmul, qparams, wrap32
from .hybrid import asymmetric_quantize, symmetric_quantize


@dataclass(frozen=True)
class BatchMatmulParams:
    lhs_dtype: np.dtype
    output_dtype: np.dtype
    multiplier: int
    shift: int
    lhs_offset: int
    rhs_offset: int
    output_offset: int
    act_min: int
    act_max: int
    rounding: Rounding


def prepare_batch_matmul(lhs_q, rhs_q, output_q, lhs_dtype, output_dtype=None,
                         rounding: Rounding = "double") -> BatchMatmulParams:
    """batch_matmul.cc Prepare for int8/int16 inputs."""
    rounding = check_rounding(rounding)
    lq, rq, oq = qparams(lhs_q), qparams(rhs_q), qparams(output_q)
    lhs_dtype = np.dtype(lhs_dtype)
    output_dtype = np.dtype(output_dtype) if output_dtype is not None else lhs_dtype
    m, s = (0, 0)
    if output_dtype != np.int32:
        m, s = qm.per_tensor_multiplier(lq.s, rq.s, oq.s, rounding)
    lo, hi = dtype_range(np.int8 if lhs_dtype == np.int8 else np.int16)
    return BatchMatmulParams(lhs_dtype, output_dtype, int(m), int(s), -lq.zp, -rq.zp, oq.zp,
                             lo, hi, rounding)


def _operands(lhs: np.ndarray, rhs: np.ndarray, options: Options):
    if options.get("adj_x"):
        lhs = np.swapaxes(lhs, -1, -2)
    if options.get("adj_y"):
        rhs = np.swapaxes(rhs, -1, -2)
    return lhs, rhs


def output_shape(lhs_shape, rhs_shape, options: Options) -> tuple[int, ...]:
    """ResizeOutputTensor: broadcast batch dims, then (lhs rows, rhs cols)."""
    a, b = list(lhs_shape), list(rhs_shape)
    if options.get("adj_x"):
        a[-1], a[-2] = a[-2], a[-1]
    if options.get("adj_y"):
        b[-1], b[-2] = b[-2], b[-1]
    if a[-1] != b[-2]:
        raise ValueError(f"BATCH_MATMUL shapes {list(lhs_shape)} and {list(rhs_shape)} do "
                         "not contract")
    batch = np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
    return tuple(batch) + (a[-2], b[-1])


def batch_matmul(lhs: np.ndarray, rhs: np.ndarray, lhs_q=None, rhs_q=None, output_q=None,
                 options: Options | None = None, rounding: Rounding = "double", output_dtype=None,
                 params: BatchMatmulParams | None = None) -> np.ndarray:
    """BATCH_MATMUL of int8/int16 tensors (numpy matmul broadcasting of the batch dims)."""
    options = options or {}
    p = params or prepare_batch_matmul(lhs_q, rhs_q, output_q, lhs.dtype, output_dtype,
                                       rounding)
    a, b = _operands(lhs, rhs, options)
    if p.output_dtype == np.int32:
        return wrap32(int_matmul(a.astype(np.int32), b.astype(np.int32))).astype(np.int32)
    acc = int_matmul(a.astype(np.int32) + p.lhs_offset, b.astype(np.int32) + p.rhs_offset)
    wide = p.lhs_dtype == np.int16  # int16x8: the int64-accumulator multiplier
    return qm.requantize(acc if wide else wrap32(acc), p.multiplier, p.shift, p.output_offset,
                         p.act_min, p.act_max, p.output_dtype, p.rounding, int64_acc=wide)


def _batch_bases(out_batch: tuple[int, ...], own_batch: tuple[int, ...], rows: int) -> np.ndarray:
    """The reference kernel's per-batch base index into a per-row array: sum over the
    (5-D extended) batch dims of index * rows where this operand is not broadcast."""
    ob = (1,) * (3 - len(out_batch)) + tuple(out_batch)
    own = (1,) * (3 - len(own_batch)) + tuple(own_batch)
    grids = np.meshgrid(*[np.arange(d) for d in ob], indexing="ij")
    base = np.zeros(ob, dtype=np.int64)
    for g, d in zip(grids, own):
        if d != 1:
            base = base + g * rows
    return base.reshape(out_batch)


def hybrid_batch_matmul(lhs: np.ndarray, rhs: np.ndarray, rhs_q, options: Options,
                        row_sums: np.ndarray | None = None) -> np.ndarray:
    """BATCH_MATMUL with a float32 LHS and an int8 RHS (batch_matmul.cc EvalHybrid)."""
    rq = qparams(rhs_q)
    out_shape = output_shape(lhs.shape, rhs.shape, options)
    adj_x = bool(options.get("adj_x"))
    if not adj_x and lhs.ndim > 2 and rhs.ndim > 2 and rhs.shape[-3] == 1:
        # Eval's compression: rhs [..., 1, X, Y] with lhs [..., Q, R, S] is
        # rhs [..., X, Y] with lhs [..., Q * R, S]
        lhs = lhs.reshape(lhs.shape[:-3] + (lhs.shape[-3] * lhs.shape[-2], lhs.shape[-1]))
        rhs = rhs.reshape(rhs.shape[:-3] + rhs.shape[-2:])
    a, b = _operands(lhs, rhs, options)  # a [..., M, K] float, b [..., K, N] int8
    m, k = a.shape[-2:]
    n = b.shape[-1]
    rows = np.ascontiguousarray(a, dtype=np.float32).reshape(-1, k)
    if options.get("asymmetric_quantize_inputs"):
        q, sf, zp = asymmetric_quantize(rows)
    else:
        q, sf = symmetric_quantize(rows)
        zp = np.zeros(sf.shape, np.int32)
    per_channel = rq.scale.size > 1
    if not per_channel:
        sf = (sf * np.float32(rq.scale[0])).astype(np.float32)
    bt = np.swapaxes(b, -1, -2)  # [..., N, K], the transposed RHS the kernel multiplies
    if row_sums is None:
        row_sums = bt.astype(np.int64).sum(axis=-1).reshape(-1)
    acc = int_matmul(q.reshape(a.shape).astype(np.int32), b.astype(np.int32))
    out_batch = acc.shape[:-2]
    lbase = _batch_bases(out_batch, a.shape[:-2], m)
    rbase = _batch_bases(out_batch, b.shape[:-2], n)
    sfm = sf[lbase[..., None] + np.arange(m)]          # out_batch + (M,)
    zpm = zp[lbase[..., None] + np.arange(m)].astype(np.float32)
    rsn = row_sums[rbase[..., None] + np.arange(n)].astype(np.float32)  # out_batch + (N,)
    total = acc.astype(np.float32) - rsn[..., None, :] * zpm[..., :, None]
    total = np.trunc(total).astype(np.float32)
    scale = sfm[..., :, None]
    if per_channel:
        scale = (scale * rq.scale.astype(np.float32)).astype(np.float32)
    out = (scale * total).astype(np.float32)
    return out.reshape(out_shape)
