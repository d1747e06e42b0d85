"""Matrix products: FULLY_CONNECTED (keep_num_dims, optional bias) and BATCH_MATMUL."""
from __future__ import annotations

import math

import numpy as np

from .. import eigen_gemm, xnnpack_gemm
from ..float32 import last_of_sums, ordered_matmul
from ..kernel_sets import builtin, xnnpack_partition
from ..integer import batch_matmul as int_batch_matmul, blockwise as int_blockwise
from ..integer import conv as int_conv
from ..integer import fully_connected as int_fully_connected, hybrid as int_hybrid
from ..tensor import AllocationType
from ..weights import packed_rows, rows_reader
from .common import (ACTIVATION_RANGES, FLOAT_WEIGHT, BuiltinOperator as Op, INT_KINDS, Kernel,
                     KernelError, _float_bounds, activation, apply_activation, declare, kind,
                     option, register, rounding, tensor_qparams)
from .float_conv import clamp
from .xnnpack_matmul import bmm_path, fc_path, fully_connected as xnnpack_fully_connected


def fully_connected_product(rows: np.ndarray, wt: np.ndarray, reference_sums: bool = True,
                            builtin_sums: bool = False) -> np.ndarray:
    """FULLY_CONNECTED's product, rows [M, K] times wt [K, O]: float32 sums in
    reference_ops::FullyConnected's depth order (`float32.ordered_matmul`, LiteRT's
    reference to the bit), or with ``builtin_sums`` (`kernel_sets`: the builtin kernels)
    in the order of their Eigen product (`eigen_gemm.product`), unless ``reference_sums``
    is False (`Interpreter.reference_float_sums`); numpy's product for other types.  The
    fused Keras LSTM loop (`fused_loops`) multiplies with it too, to the kernel's bits."""
    if reference_sums and rows.dtype == np.float32 and wt.dtype == np.float32:
        return eigen_gemm.product(rows, wt.T) if builtin_sums else ordered_matmul(rows, wt)
    return rows @ wt


def fully_connected(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
                    act: str | None = None, keep_num_dims: bool = False,
                    w_t: np.ndarray | None = None, reference_sums: bool = True,
                    builtin_sums: bool = False) -> np.ndarray:
    """x [..., K] (any shape whose size is a multiple of K) times w [O, K]^T, plus bias."""
    o, k = w.shape
    if x.size % k:
        raise ValueError(f"input of {x.size} elements is not a multiple of the weights' "
                         f"input size {k}")
    rows = x if x.ndim == 2 and x.shape[1] == k else x.reshape(-1, k)
    out = fully_connected_product(rows, w.T if w_t is None else w_t, reference_sums, builtin_sums)
    if b is not None:
        out += b
    out = apply_activation(out, act)
    if keep_num_dims:
        return out.reshape(x.shape[:-1] + (o,))
    return out


def _blockwise(w) -> bool:
    """Integer weights with BlockwiseQuantization (a float weight's details mean nothing:
    LiteRT's float kernel and this one ignore them)."""
    return w.quantization is not None and w.quantization.blockwise is not None \
        and w.is_quantized_int


def _fc_shape(x_shape, w_shape, keep):
    o, k = w_shape
    if keep:
        return tuple(x_shape[:-1]) + (o,)
    n = int(np.prod(x_shape, dtype=np.int64))
    if k == 0 or n % k:
        raise ValueError(f"input shape {list(x_shape)} does not fit weights {list(w_shape)}")
    return (n // k, o)


@register(Op.FULLY_CONNECTED, versions=(1, 14))
class FullyConnected(Kernel):
    """FULLY_CONNECTED: float; uint8 (v1), int8 (v4+, per-tensor or per-channel), int16x8
    bit-exact with LiteRT's reference kernel (double effective scale, round half away);
    hybrid float input with int8, int4 or int2 weights, symmetric or asymmetric input
    quantization; float input with INT4 blockwise weights bit-exact with LiteRT's builtin
    kernel (``EvalBlockwise4Bit``; its reference kernel has no blockwise path and returns
    the bias: integer/blockwise.py)."""

    types = "float+uint8+int8+int16+hybrid"
    accepts = declare({2: "*: none per-tensor per-channel:0"}, kinds={
        "float": {1: FLOAT_WEIGHT},
        "hybrid": {1: "INT8 INT4 INT2: per-tensor per-channel:0 | INT4: blockwise"},
        "int8": {1: "INT8 INT4 INT2: per-tensor per-channel:0"},
        "int16": {1: "INT8 INT4: per-tensor per-channel:0"},
        "uint8": {1: "UINT8: per-tensor"}}, multiplied=(1, 2))

    def check(self, ctx, node):
        fmt = node.builtin_data.get("weights_format", "DEFAULT")
        if fmt not in ("DEFAULT", 0):
            return f"FULLY_CONNECTED v{node.version} with weights_format {fmt}: not implemented"
        if _blockwise(ctx.input(node, 1)):
            if xnnpack_partition(ctx, node) is not None:
                return None  # XNNPACK's checks took it (delegation.xnnpack_weights)
            return int_blockwise.blockwise_problem(ctx, node)
        return super().check(ctx, node)

    def init(self, ctx, node):
        return {"src": None, "wt": None, "bsrc": None, "brow": None, "kind": "float",
                "params": None, "tail": (None, None, None), "act": activation(node),
                "keep": bool(option(node, "keep_num_dims", False))}

    def prepare(self, ctx, node):
        x, w = ctx.input(node, 0), ctx.input(node, 1)
        if len(w.shape) != 2:
            raise ValueError(f"weights must be 2-D, got {list(w.shape)}")
        cache = node.user_data
        ctx.resize(ctx.output(node, 0), _fc_shape(x.shape, w.shape, cache["keep"]))
        cache["kind"] = k = kind(ctx, node)
        if _blockwise(w):
            cache["kind"], cache["bound"] = "blockwise", None  # (checked at load)
            cache["xnn"] = fc_path(ctx, node, "blockwise")
            return
        cache["xnn"] = fc_path(ctx, node, k)  # the xnnpack kernel set's product, if taken
        if k != "hybrid" and cache["act"] not in (None, *ACTIVATION_RANGES):
            # fully_connected.cc's Prepare: only the hybrid path applies TANH or SIGN_BIT
            raise ValueError(f"fused activation {cache['act']} on a {k} FULLY_CONNECTED: "
                             "LiteRT accepts only NONE, RELU, RELU6 or RELU_N1_TO_1 there")
        if k in INT_KINDS:
            cache["params"] = int_fully_connected.prepare_fully_connected(
                tensor_qparams(x), tensor_qparams(w), tensor_qparams(ctx.output(node, 0)),
                node.builtin_data, x.dtype, rounding(ctx))
            cache["src"] = None  # the filter matrix follows the (possibly new) offsets
            cache["tail"] = (None, None, None)
        cache["bound"] = self._bind(ctx, node, w, cache) if k == "float" else None

    @staticmethod
    def _bind(ctx, node, w, cache) -> tuple | None:
        """The prepared float product when the weights and bias are constants of the
        model: (input tensor, K, transposed weights, bias row, activation, keep, output
        tensor), so that invoke is the product itself (see `invoke`)."""
        b = ctx.input(node, 2)
        if w.allocation_type is not AllocationType.MMAP_RO or w.sparsity is not None \
                or w.data is None or w.dtype != np.float32 \
                or (b is not None and (b.allocation_type is not AllocationType.MMAP_RO
                                       or b.data is None)):
            return None
        wt = w.data.T  # a view: BLAS reads the mapped weights transposed, never copied
        brow = None if b is None else b.data.reshape(1, -1)
        return (ctx.input(node, 0), w.shape[1], wt, brow, cache["act"], cache["keep"],
                ctx.output(node, 0))

    def bind(self, ctx, node):
        """The float product with constant weights as a call on the node's tensors: the
        input of the shape it was prepared for, times the transposed weights, plus the bias
        row, clamped in place, stored as the output's value (the checks of `set_output`
        hold by construction); any other input goes through `invoke`."""
        cache = node.user_data
        bound = cache.get("bound")
        if cache.get("xnn") is not None or cache.get("kind") != "float":
            return None
        kept = None  # the weights' and bias's arrays when they are values kept by others
        if bound is None:
            kept = self._kept(ctx, node)
            if kept is None:
                return None
            w_data, b_data = kept
            bound = (ctx.input(node, 0), w_data.shape[1], w_data.T, None if b_data is None
                     else b_data.reshape(1, -1), cache["act"], cache["keep"],
                     ctx.output(node, 0))
        xt, k_in, wt, brow, act, keep, o = bound
        if keep or xt.shape is None or o.shape is None or o.is_dynamic or o.dtype != wt.dtype \
                or (act is not None and act not in ("RELU", "RELU6", "RELU_N1_TO_1")):
            return None
        x_shape = xt.shape
        if len(x_shape) != 2 or x_shape[1] != k_in or o.shape != (x_shape[0], wt.shape[1]):
            return None
        bounds = _float_bounds(act, wt.dtype) if act is not None else None
        dtype, invoke, interp = wt.dtype, self.invoke, ctx.interpreter
        builtin_sums = builtin(ctx)
        w_t, b_t = ctx.input(node, 1), ctx.input(node, 2)

        def run(ctx, node):
            x = xt.data
            if x is None or x.shape != x_shape or x.dtype != dtype or (
                    kept is not None and (w_t.data is not kept[0]
                                          or (b_t is not None and b_t.data is not kept[1]))):
                return invoke(ctx, node)
            out = fully_connected_product(x, wt, interp.reference_float_sums, builtin_sums)
            clamp(out, brow, bounds)
            o.data = out
        return run

    @staticmethod
    def _kept(ctx, node) -> tuple | None:
        """(weights, bias or None) of a float node whose weights are not a constant of the
        model but a value another node keeps, read-only (a float16 model's DEQUANTIZE of
        its weights): what its bound product checks it still reads, call by call."""
        w, b = ctx.input(node, 1), ctx.input(node, 2)
        arrays = [w.data, None if b is None else b.data]
        if w.sparsity is not None or arrays[0] is None or arrays[0].dtype != np.float32 \
                or arrays[0].ndim != 2 or (b is not None and arrays[1] is None):
            return None
        if any(a is not None and a.flags.writeable for a in arrays):
            return None
        return arrays[0], arrays[1]

    def invoke(self, ctx, node):
        cache = node.user_data
        if cache.get("xnn") is not None:  # an XNNPACK partition's product (xnnpack_matmul)
            out = xnnpack_fully_connected(ctx, node, cache["xnn"])
            if out is not None:
                ctx.set_output(ctx.output(node, 0), out)
                return
        bound = cache.get("bound")
        if bound is not None:  # float, constant weights: the product, bound at prepare
            xt, k_in, wt, brow, act, keep, o = bound
            x = xt.data
            if x is not None and x.dtype == wt.dtype and x.size % k_in == 0:
                rows = x if x.ndim == 2 and x.shape[1] == k_in else x.reshape(-1, k_in)
                out = fully_connected_product(rows, wt, ctx.interpreter.reference_float_sums, builtin(ctx))
                if brow is not None:
                    out += brow
                if act is not None:
                    out = apply_activation(out, act)
                if keep:
                    out = out.reshape(x.shape[:-1] + (wt.shape[1],))
                ctx.set_output(o, out)
                return
        k = cache["kind"]
        wt = ctx.input(node, 1)
        # a packed constant is read a block of rows at a time, never unpacked whole (the
        # tensor stands for its values then)
        w = wt if k in ("blockwise", "hybrid") and packed_rows(wt) else ctx.value(node, 1)
        b = ctx.input(node, 2)
        bias = None if b is None else b.data
        o = ctx.output(node, 0)  # prepared for the input's shape: the output's shape
        if wt.sparsity is not None:  # compressed values: the dense filter, once per array
            if cache.get("sparse_src") is not w:
                cache["sparse_src"] = w
                cache["dense"] = wt.sparsity.densify(w, wt.shape, f"tensor {wt.index}")
            w = cache["dense"]
            if k == "int8":  # FullyConnectedSparseWeight1x16: quantized multipliers
                ctx.set_output(o, int_fully_connected.sparse_int8(ctx.value(node, 0), w, bias,
                                                                  cache["params"], o.shape))
                return
        if k in INT_KINDS:
            tail = self._float_tail(cache, w, bias, o.dtype)
            if tail is not None:
                out = tail(ctx.value(node, 0), o.shape)
            else:
                out = int_fully_connected.fully_connected(
                    ctx.value(node, 0), w, bias, options=node.builtin_data,
                    params=cache["params"], output_dtype=o.dtype, fmat=cache["wt"])
        elif k == "blockwise":  # EvalBlockwise4Bit's per-row sums, once per (filter, bias)
            src = cache.get("block_src")
            if src is None or src[0] is not w or src[1] is not bias:
                details = wt.quantization.blockwise
                cache["block_src"] = (w, bias)
                n, k_in = wt.shape
                cache["block"] = int_blockwise.BlockwiseDense(
                    rows_reader(wt) if w is wt else rows_reader(wt, w), n, k_in,
                    ctx.tensors[details.scales].data, details.block_size, bias)
            out = cache["block"](ctx.value(node, 0), o.shape)
        elif k == "hybrid" and (dense4 := int_blockwise.builtin_dense4bit(ctx, node, w, bias)):
            out = dense4(ctx.value(node, 0), o.shape)  # the builtin kernels' 4-bit path
        elif k == "hybrid":  # the filter's part of EvalHybridDense, once per (filter, bias)
            src = cache.get("hybrid_src")
            if src is None or src[0] is not w or src[1] is not bias:
                cache["hybrid_src"] = (w, bias)
                n, k_in = wt.shape
                # its int32/float copies while the interpreter's weight budget has room
                keep = ctx.interpreter.weight_cache.reserve(
                    ("hybrid", node.key), n * k_in * int_hybrid.HybridDense.COPY_BYTES)
                values = wt.data if w is wt and keep else w  # unpacked only to be copied
                packed = values is wt
                cache["hybrid"] = int_hybrid.HybridDense(
                    None if packed else values, bias, tensor_qparams(wt), node.builtin_data,
                    keep_copies=keep, rows=rows_reader(wt) if packed else None,
                    shape=(n, k_in))
            out = cache["hybrid"](ctx.value(node, 0), o.shape)
        else:
            if cache["src"] is not w:
                cache["src"], cache["wt"] = w, w.T  # a view, as in `_bind`
            if bias is not None:  # as a row: one-row products then add it without broadcasting
                if cache["bsrc"] is not bias:
                    cache["bsrc"], cache["brow"] = bias, bias.reshape(1, -1)
                bias = cache["brow"]
            out = fully_connected(ctx.value(node, 0), w, bias, cache["act"], cache["keep"],
                                  w_t=cache["wt"],
                                  reference_sums=ctx.interpreter.reference_float_sums,
                                  builtin_sums=builtin(ctx))
        ctx.set_output(o, out)

    @staticmethod
    def _float_tail(cache: dict, w: np.ndarray, bias: np.ndarray | None,
                    out_dtype) -> "int_fully_connected.FloatScaleTail | None":
        """The node's `FloatScaleTail` (None: the general path), rebuilt when the filter
        or the bias array is another one (an edited constant, a computed filter); the
        filter matrix `conv.filter_matrix` follows the filter."""
        if cache["src"] is not w:
            cache["src"] = w
            cache["wt"] = int_conv.filter_matrix(w.reshape(w.shape[0], -1),
                                                 cache["params"].filter_offset)
        fmat, src_bias, tail = cache["tail"]
        if fmat is not cache["wt"] or src_bias is not bias:
            tail = int_fully_connected.FloatScaleTail.build(cache["params"], cache["wt"], bias,
                                                            w.dtype, out_dtype)
            cache["tail"] = (cache["wt"], bias, tail)
        return tail


def batch_matmul(a: np.ndarray, b: np.ndarray, adj_x: bool = False,
                 adj_y: bool = False, reference_sums: bool = True) -> np.ndarray:
    """Float BATCH_MATMUL.  Both of LiteRT's kernel sets run reference_ops::BatchMatMul
    for float32 (the wheel holds no other): every output the float32 sum of its products
    in depth order from 0, which `float32.ordered_matmul` gives per batch, to the bit;
    numpy's BLAS product when ``reference_sums`` is False (`Interpreter.float_sums`) and
    for other float types."""
    if adj_x:
        a = np.swapaxes(a, -1, -2)
    if adj_y:
        b = np.swapaxes(b, -1, -2)
    if not (reference_sums and a.dtype == np.float32 and b.dtype == np.float32):
        return np.matmul(a, b)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k, o = a.shape[-2], a.shape[-1], b.shape[-1]
    if math.prod(batch) * m * k * o <= _ONE_SHOT and k:  # every product at once, summed
        products = a[..., :, :, None] * b[..., None, :, :]  # [..., M, K, O]
        return last_of_sums(products, axis=-2) + np.float32(0.0)  # (from +0)
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(batch + (m, o), np.float32)
    for idx in np.ndindex(*batch):
        out[idx] = ordered_matmul(a[idx], b[idx])
    return out


#: products up to which BATCH_MATMUL lays them all out at once (16 MiB of float32)
_ONE_SHOT = 1 << 22


def _bmm_shape(ctx, node):
    a, b = list(ctx.input(node, 0).shape), list(ctx.input(node, 1).shape)
    if len(a) < 2 or len(b) < 2:
        raise KernelError(f"BATCH_MATMUL needs inputs of rank 2 or more, got {a} and {b}")
    if option(node, "adj_x", False):
        a[-1], a[-2] = a[-2], a[-1]
    if option(node, "adj_y", False):
        b[-1], b[-2] = b[-2], b[-1]
    if a[-1] != b[-2]:
        raise KernelError(f"BATCH_MATMUL shapes {a} and {b} do not contract")
    try:
        batch = np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2]))
    except ValueError:
        raise KernelError(f"BATCH_MATMUL: the batch dimensions {a[:-2]} and {b[:-2]} of "
                          f"shapes {a} and {b} do not broadcast") from None
    return tuple(batch) + (a[-2], b[-1])


@register(Op.BATCH_MATMUL, versions=(1, 4))
class BatchMatmul(Kernel):
    """BATCH_MATMUL: float; int8 (int8 or int32 output) and int16 bit-exact with LiteRT's
    reference kernel; hybrid float LHS with int8 RHS (integer/batch_matmul.py)."""

    types = "float+int8+int16+hybrid"
    accepts = declare(kinds={"float": {1: "FLOAT32: none per-tensor per-channel:* custom"},
                             "hybrid": {1: "INT8: per-tensor per-channel:-1"},
                             "int8": {1: "INT8: per-tensor"},
                             "int16": {1: "INT16: per-tensor"}}, multiplied=(1,))

    def init(self, ctx, node):
        return {"kind": "float", "params": None, "rhs": None, "row_sums": None}

    def prepare(self, ctx, node):
        out = ctx.output(node, 0)
        ctx.resize(out, _bmm_shape(ctx, node))
        cache = node.user_data
        cache["kind"] = k = kind(ctx, node)
        cache["xnn"] = bmm_path(ctx, node, k)  # XNNPACK's f32 GEMM, if taken
        if k in INT_KINDS:
            lhs, rhs = ctx.input(node, 0), ctx.input(node, 1)
            cache["params"] = int_batch_matmul.prepare_batch_matmul(
                tensor_qparams(lhs), tensor_qparams(rhs), tensor_qparams(out), lhs.dtype,
                out.dtype, rounding(ctx))

    def invoke(self, ctx, node):
        cache = node.user_data
        k = cache["kind"]
        a, b = ctx.value(node, 0), ctx.value(node, 1)
        if k in INT_KINDS:
            out = int_batch_matmul.batch_matmul(a, b, options=node.builtin_data,
                                                params=cache["params"])
        elif k == "hybrid":
            out = int_batch_matmul.hybrid_batch_matmul(a, b, tensor_qparams(ctx.input(node, 1)),
                                                       node.builtin_data)
        elif cache.get("xnn") and ctx.interpreter.reference_float_sums:
            out = xnnpack_gemm.batch_matmul(a, b, bool(option(node, "adj_x", False)),
                                            bool(option(node, "adj_y", False)))
        else:
            out = batch_matmul(a, b, bool(option(node, "adj_x", False)),
                               bool(option(node, "adj_y", False)),
                               ctx.interpreter.reference_float_sums)
        ctx.set_output(ctx.output(node, 0), out)
