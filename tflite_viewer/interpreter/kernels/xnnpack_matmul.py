"""FULLY_CONNECTED and BATCH_MATMUL of an XNNPACK partition under the ``xnnpack`` kernel set:
what kernels/matmul.py calls for a node the delegate takes (`kernel_sets`,
`xnnpack_gemm`).

* float32 weights: XNNPACK's f32 GEMM, one FMA per depth step from the bias, when the
  interpreter adds float sums in order (``float_sums='reference'``, or a cross-check);
  with BLAS float sums the kernel's own product (a rounding or so away);
* INT8, INT4 or INT2 weights, per channel or per tensor, on a float input: the
  dynamically quantized GEMM (qd8 input, qc8w / qc4w / qc2w weights);
* INT4 blockwise weights with float16 scales: the qdu8 / qb4w GEMM.

The integer weights are widened to float64 once (the integer products are then exact
BLAS products) and kept while the interpreter's weight budget has room.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import xnnpack_gemm as xg
from ..kernel_sets import xnnpack_partition
from ..weights import rows_reader
from .common import KernelError, apply_activation, tensor_qparams


def fc_path(ctx, node, kind: str) -> str | None:
    """Which XNNPACK product a FULLY_CONNECTED node computes (``f32``, ``qc`` or ``qb4w``),
    None when XNNPACK does not take it or none of these applies."""
    if xnnpack_partition(ctx, node) is None:
        return None
    x, w, o = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
    if x.dtype != np.float32 or o.dtype != np.float32 or w.sparsity is not None:
        return None
    if kind == "float" and w.dtype == np.float32:
        return "f32"
    if kind == "blockwise":
        _check_scales(w, ctx.tensors[w.quantization.blockwise.scales].data, "block")
        return "qb4w"
    if kind == "hybrid" and w.type_name in ("INT8", "INT4", "INT2"):
        _check_scales(w, tensor_qparams(w).scale, "channel")
        return "qc"
    return None


def _check_scales(w, scales, what: str) -> None:
    """The delegate defines a weight tensor only with positive normal scales; otherwise
    its partition fails to prepare and so does LiteRT's default interpreter on the model:
    the xnnpack set refuses it the same way."""
    values = np.asarray(scales, np.float32).reshape(-1)
    bad = np.flatnonzero(~(np.isfinite(values) & (values >= np.finfo(np.float32).tiny)))
    if bad.size:
        k = int(bad[0])
        raise KernelError(
            f"XNNPACK cannot define weight tensor {w.index} {w.name!r}: its {what} scale at "
            f"index {k} is "
            f"{float(values[k]):g} (it takes positive normal scales only), so its partition "
            "fails to prepare and LiteRT's default interpreter fails on this model; "
            "--kernels builtin computes it as LiteRT's kernels without the delegate")


def _weights(ctx, node, build, nbytes: int) -> Any:
    """The node's derived weights, rebuilt when the weight tensor's values change, kept
    in the node's cache while the interpreter's weight budget grants ``nbytes``."""
    cache = node.user_data
    wt = ctx.input(node, 1)
    src = wt.data if wt.data is not None else wt
    held = cache.get("xnn_weights")
    if held is not None and held[0] is src:
        return held[1]
    value = build()
    if ctx.interpreter.weight_cache.reserve(("xnnpack", node.key), nbytes):
        cache["xnn_weights"] = (src, value)
    return value


def _integer_rows(ctx, node) -> np.ndarray:
    """The integer weights [N, K] (sub-byte ones unpacked), as float64."""
    wt = ctx.input(node, 1)
    n = wt.shape[0]
    return np.asarray(rows_reader(wt)(0, n), np.float64)


def _channel_scales(wt) -> np.ndarray:
    """One float32 scale per output channel (a per-tensor scale repeated, as the delegate
    does)."""
    q = tensor_qparams(wt)
    n = wt.shape[0]
    if q.scale.size == n:
        return np.asarray(q.scale, np.float32)
    return np.full(n, np.float32(q.s), np.float32)


def fully_connected(ctx, node, path: str) -> np.ndarray | None:
    """The node's output computed as XNNPACK does (None: ``f32`` while the interpreter adds
    float sums by BLAS, which the kernel's own path does)."""
    if path == "f32" and not ctx.interpreter.reference_float_sums:
        return None
    x = ctx.value(node, 0)
    wt, b, o = ctx.input(node, 1), ctx.input(node, 2), ctx.output(node, 0)
    n, k = wt.shape
    rows = x.reshape(-1, k)
    bias = None if b is None else b.data
    if path == "f32":
        out = xg.f32_gemm(rows, ctx.value(node, 1).T, bias)
    elif path == "qc":
        w = _weights(ctx, node, lambda: _integer_rows(ctx, node), n * k * 8)
        out = xg.qc_gemm(rows, w, _channel_scales(wt), bias)
    else:
        details = wt.quantization.blockwise

        def build() -> xg.BlockwiseWeights:
            return xg.BlockwiseWeights(_integer_rows(ctx, node),
                                       ctx.tensors[details.scales].data, details.block_size)
        out = xg.qb4w_gemm(rows, _weights(ctx, node, build, n * k * 8), bias)
    act = node.user_data.get("act")
    if act is not None:
        out = apply_activation(out, act)
    return out.reshape(o.shape)


def bmm_path(ctx, node, kind: str) -> bool:
    """Whether a BATCH_MATMUL node computes as XNNPACK's f32 GEMM (float32, taken)."""
    return (kind == "float" and xnnpack_partition(ctx, node) is not None
            and ctx.input(node, 0).dtype == np.float32
            and ctx.input(node, 1).dtype == np.float32)


__all__ = ["bmm_path", "fc_path", "fully_connected"]
