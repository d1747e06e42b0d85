"""FULLY_CONNECTED with INT4 blockwise weights, as LiteRT 2.3.0's builtin kernel computes it.

The weights are INT4 values [N, K]; their `BlockwiseQuantization` details name a FLOAT16
tensor of N * K / block_size scales, one per block of ``block_size`` consecutive values of
a row (what ai-edge-quantizer and LiteRT-Torch write for int4 decoders).  LiteRT's
``EvalBlockwise4Bit`` (tflite/kernels/fully_connected.cc), reached from the optimized
kernel's 4-bit path only, computes per input row m and output n:

1. the float input row is quantized asymmetrically to int8 (``BatchQuantizeFloats`` with
   ``do_asymmetric``: a scale s_m and a zero point z_m per row; the same quantizer as the
   hybrid kernels, `hybrid.asymmetric_quantize`);
2. per block b, an exact integer sum acc_b = sum_k q[m, k] * w[n, k] and the float16 scale
   widened to float32; the output is accumulated in float32, block after block:
   ``out += float(acc_b) * scale[n, b]``;
3. an input-independent float32 sum, block after block, ``kfsum += scale[n, b] *
   sum_k w[n, k]`` over the block; then ``out -= z_m * kfsum``, ``out *= s_m``,
   ``out += bias[n]``.  No fused activation is applied and the zero points of the details
   are never read.

Every product of step 2 and 3 is one float32 rounding, in the same order as the C loop,
so the result is bit-exact (measured on random shapes and magnitudes:
tests/interpreter/test_llm_kernels_litert.py).  The kernel runs only when LiteRT's 4-bit
path does (INT4 constant weights, K even and at least 32, N at least 4); otherwise LiteRT
falls back to its hybrid kernel, which ignores the blockwise scales and returns the bias.
`blockwise_problem` refuses those models, and every parameter LiteRT ignores.

The integer sums are float32 matrix products per block: exact while block_size * 128 * 8
< 2**24 (blocks up to 16,383 values), in float64 beyond.  The weights stay packed in the
model's file: per call they are unpacked and read block-major a few million values at a
time, and only the N per-row sums of step 3 are kept between calls (the FLOAT16 scales
are read from the file and widened a chunk at a time).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import KernelError
from ..kernel_sets import AUTO, builtin
from ..weights import rows_reader
from .common import qparams
from .hybrid import activate, asymmetric_quantize

if TYPE_CHECKING:
    from ..node import Node
    from ..subgraph import Subgraph

#: optimized_4bit::FilterWidth / FilterDepth (fully_connected_4bit.h): below them LiteRT's
#: optimized kernel does not take its 4-bit path, and blockwise weights are not applied
FILTER_WIDTH, FILTER_DEPTH = 4, 32
#: |int8 input| * |int4 weight| bound of one product
_PRODUCT_BOUND = 128 * 8
#: output elements (blocks x rows x units) computed in one batch of matrix products: the
#: weights of a chunk are unpacked and widened to float32 at once (about 10 MB)
_CHUNK = 1 << 21


def blockwise_problem(ctx: "Subgraph", node: "Node", name: str = "FULLY_CONNECTED") -> str | None:
    """Why LiteRT's builtin kernel would not compute this blockwise FULLY_CONNECTED as
    `BlockwiseDense` does (so it is refused), or None.  Reads shapes, types and the small
    zero-point tensor only: no weight is decoded."""
    x, w, o = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
    b = ctx.input(node, 2)
    head = f"{name} v{node.version} with blockwise weights (tensor {w.index} {w.name!r})"
    details = w.quantization.blockwise
    if w.type_name != "INT4":
        return (f"{head}: {w.type_name} blockwise weights; LiteRT's kernel applies block "
                "scales to INT4 weights only (other types fall back to a kernel that ignores "
                "them)")
    if x.type_name != "FLOAT32" or o.type_name != "FLOAT32":
        return (f"{head}: a {x.type_name} input or {o.type_name} output; LiteRT computes "
                "blockwise weights with FLOAT32 input and output only")
    if not w.is_constant or w.sparsity is not None or w.shape is None or len(w.shape) != 2:
        return f"{head}: the weights must be a dense constant matrix [N, K]"
    n, k = (int(d) for d in w.shape)
    if k % 2 or k < FILTER_DEPTH or n < FILTER_WIDTH:
        return (f"{head}: weights [{n}, {k}]; LiteRT's 4-bit kernel needs K even and at "
                f"least {FILTER_DEPTH} and N at least {FILTER_WIDTH}, else its fallback "
                "ignores the block scales and outputs the bias")
    bs = details.block_size
    if bs <= 0 or k % bs:
        return f"{head}: block size {bs} does not divide the input dimension {k}"
    tensors = ctx.tensors
    if not 0 <= details.scales < len(tensors):
        return f"{head}: scale tensor index {details.scales} out of range"
    s = tensors[details.scales]
    if s.type_name != "FLOAT16" or not s.is_constant:
        return (f"{head}: scale tensor {s.index} is {s.type_name}"
                f"{'' if s.is_constant else ' (not a constant)'}; LiteRT reads it as "
                "constant FLOAT16")
    need = n * (k // bs)
    got = int(np.prod(s.shape, dtype=np.int64)) if s.shape is not None else -1
    if got != need:
        return (f"{head}: scale tensor {s.index} holds {got} scales; {need} needed "
                f"([{n}, {k // bs}])")
    if details.zero_points >= 0:
        if details.zero_points >= len(tensors):
            return f"{head}: zero-point tensor index {details.zero_points} out of range"
        zp = tensors[details.zero_points]
        if not zp.is_constant or zp.data is None or np.any(zp.data != 0):
            return (f"{head}: non-zero block zero points (tensor {zp.index}); LiteRT's "
                    "kernel never reads them")
    act = node.builtin_data.get("fused_activation_function")
    if act not in (None, "NONE", 0):
        return (f"{head}: fused activation {act}; LiteRT's blockwise kernel applies none "
                "(its result would ignore it)")
    if b is not None and b.type_name != "FLOAT32":
        return f"{head}: a {b.type_name} bias; LiteRT reads it as FLOAT32"
    return None


class BlockwiseDense:
    """The input-independent part of ``EvalBlockwise4Bit`` for one weight matrix: the
    float32 block scales [N, blocks] and the per-row ``kfsum``; calling it computes the
    output for an input (see the module docstring).

    The weights come from ``rows(start, stop)``, which gives rows start:stop of the INT4
    values [N, K] (int8): an array's slices, or rows unpacked from the packed bytes of the
    mapped file (`weights.rows_reader`), so the whole matrix is never unpacked at once."""

    def __init__(self, rows, n: int, k: int, scales: np.ndarray, block_size: int,
                 bias: np.ndarray | None) -> None:
        self.rows = rows
        self.n, self.k, self.block = n, k, block_size
        self.blocks = k // block_size
        # the FLOAT16 scales as stored (widened to float32 a chunk at a time: exact)
        self.scales = np.asarray(scales).reshape(n, self.blocks)
        kfsum = np.zeros(n, np.float32)
        for n0, n1 in self._chunks(self.block):
            ksum = rows(n0, n1).reshape(n1 - n0, self.blocks, block_size).sum(
                axis=2, dtype=np.int32)
            sc = self.scales[n0:n1].astype(np.float32)
            part = kfsum[n0:n1]
            for b in range(self.blocks):  # float32, block after block, as the C loop
                part += sc[:, b] * ksum[:, b].astype(np.float32)
        self.kfsum = kfsum
        self.bias = None if bias is None else np.asarray(bias, np.float32).reshape(-1)
        self.exact32 = block_size * _PRODUCT_BOUND < (1 << 24)

    def _chunks(self, m: int):
        """(start, stop) of the blocks of output units computed (and unpacked) at once."""
        per_unit = max(1, self.blocks * max(m, self.block))
        step = max(1, _CHUNK // per_unit)
        return [(n0, min(self.n, n0 + step)) for n0 in range(0, self.n, step)]

    def __call__(self, x: np.ndarray, out_shape) -> np.ndarray:
        """The output for ``x``, any float32 input whose size is a multiple of K."""
        rows = np.ascontiguousarray(x, np.float32).reshape(-1, self.k)
        m = rows.shape[0]
        out = np.zeros((m, self.n), np.float32)
        if m:
            q, s, zp = asymmetric_quantize(rows)
            work = np.float32 if self.exact32 else np.float64
            # block-major, contiguous: one matrix product per block (strided operands make
            # numpy's batched product copy them, slowly and unevenly)
            qb = np.ascontiguousarray(
                q.reshape(m, self.blocks, self.block).transpose(1, 2, 0), dtype=work)
            for n0, n1 in self._chunks(m):
                wb = np.ascontiguousarray(self.rows(n0, n1).reshape(
                    n1 - n0, self.blocks, self.block).transpose(1, 0, 2), dtype=work)
                acc = np.matmul(wb, qb).astype(np.float32, copy=False)  # [B, n, m]
                part = out[:, n0:n1]
                sc = self.scales[n0:n1].astype(np.float32)
                for b in range(self.blocks):
                    part += acc[b].T * sc[:, b]
            out -= zp.astype(np.float32)[:, None] * self.kfsum[None, :]
            out *= s[:, None]
        if self.bias is not None:
            out += self.bias
        return out.reshape(out_shape)


#: the weights' offset in LiteRT's packed 4-bit layout (fully_connected_common.h's
#: zero_point_4bit): values are stored as w + 7 and the input's sum times -7 corrects them
_ZERO_POINT_4BIT = -7
#: the INT4 value w + 7 does not fit in the unsigned nibble of that layout
_UNPACKABLE = -8


def dense4bit_applies(n: int, k: int, m: int) -> bool:
    """Whether the builtin kernel takes its 4-bit path (EvalHybridDense4Bit) for constant
    INT4 per-tensor or per-channel weights [n, k] and m input rows (Prepare's test:
    K even and at least `FILTER_DEPTH`, N at least `FILTER_WIDTH`, a batch)."""
    return m > 0 and k % 2 == 0 and k >= FILTER_DEPTH and n >= FILTER_WIDTH


class Dense4Bit:
    """``EvalHybridDense4Bit``: the builtin FULLY_CONNECTED of float input and INT4 weights
    with per-tensor or per-channel scales (its reference kernel, and any weights outside
    `dense4bit_applies`, take the hybrid kernel instead: `hybrid.HybridDense`).

    Per input row m: the row quantized symmetrically (BatchQuantizeFloats4Bit: max |x|, 127
    where 0; q = round half away(x * float(127 / max)), the factor s_m = float(max / 127),
    both divisions in double); per output n, in float32: ``(float(-7 * sum q) * s_m) *
    scale_n + bias_n`` (AssignBiasAndComputeOffsets), then ``+ (float(acc) * s_m) *
    scale_n`` with acc the exact integer sum of q times (w + 7) (Unpack), then the fused
    activation.  The weights come from ``rows(start, stop)`` (see `BlockwiseDense`)."""

    def __init__(self, rows, n: int, k: int, scales: np.ndarray, bias: np.ndarray | None,
                 options=None, what: str = "FULLY_CONNECTED") -> None:
        self.rows, self.n, self.k, self.what = rows, n, k, what
        self.scales = np.broadcast_to(np.asarray(scales, np.float32).reshape(-1), (n,))
        self.bias = None if bias is None else np.asarray(bias, np.float32).reshape(-1)
        self.options = options

    def __call__(self, x: np.ndarray, out_shape) -> np.ndarray:
        rows = np.ascontiguousarray(x, np.float32).reshape(-1, self.k)
        m = rows.shape[0]
        biggest = np.max(np.abs(rows), axis=1) if m else np.zeros(0, np.float32)
        biggest = np.where(biggest == 0, np.float32(127.0), biggest)
        to_int = (127.0 / biggest.astype(np.float64)).astype(np.float32)
        factor = (biggest.astype(np.float64) / 127.0).astype(np.float32)
        scaled = (rows * to_int[:, None]).astype(np.float64)  # |v| + 0.5 exact in float64
        q = (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)).astype(np.int64)
        offsets = (q.sum(axis=1) * _ZERO_POINT_4BIT).astype(np.float32)
        out = (offsets * factor)[:, None] * self.scales[None, :]
        if self.bias is not None:
            out = out + self.bias[None, :]
        # the integer sums as float products: exact in float32 while K * 127 * 14 < 2**24
        work = np.float32 if self.k * 127 * 14 < (1 << 24) else np.float64
        qf = q.astype(work)
        for n0, n1 in self._chunks():
            values = self.rows(n0, n1)
            if np.any(values == _UNPACKABLE):
                raise KernelError(
                    f"{self.what}: INT4 weights holding -8; LiteRT's builtin 4-bit kernel "
                    "computes them without meaning (it packs w + 7 into an unsigned "
                    "nibble, which -1 does not fit); its reference kernels (--kernels "
                    "reference) compute them")
            acc = qf @ (values.astype(work) + work(7.0)).T  # exact integers
            out[:, n0:n1] += (acc.astype(np.float32) * factor[:, None]) * self.scales[n0:n1]
        return activate(out, self.options).reshape(out_shape)

    def _chunks(self):
        step = max(1, _CHUNK // max(self.k, 1))
        return [(n0, min(self.n, n0 + step)) for n0 in range(0, self.n, step)]

    def holds_unpackable(self) -> bool:
        """Whether a weight is -8, which the packed layout cannot hold (read once, a chunk
        of rows at a time)."""
        return any(np.any(self.rows(n0, n1) == _UNPACKABLE) for n0, n1 in self._chunks())


def builtin_dense4bit(ctx: "Subgraph", node: "Node", values: np.ndarray,
                      bias: np.ndarray | None) -> Dense4Bit | None:
    """The node's `Dense4Bit` when the interpreter follows LiteRT's builtin kernels and
    they take the 4-bit path for this FULLY_CONNECTED (constant INT4 weights with affine
    scales, `dense4bit_applies` on the current input), kept in the node's cache for the
    same weights and bias; else None (the hybrid kernel computes it).  Under ``kernels=auto``
    weights holding -8 also take the hybrid kernel: LiteRT's builtin 4-bit path computes them
    without meaning, and its reference kernels and its default XNNPACK path agree on the
    hybrid kernel's values (an explicit ``kernels=builtin`` refuses them instead)."""
    w, x = ctx.input(node, 1), ctx.input(node, 0)
    if not builtin(ctx) or w.type_name != "INT4" or not w.is_constant or w.shape is None \
            or len(w.shape) != 2 or x is None or x.data is None:
        return None
    n, k = (int(d) for d in w.shape)
    if not k or not dense4bit_applies(n, k, x.data.size // k):
        return None
    cache = node.user_data
    kept = cache.get("dense4bit")
    if kept is None or kept[0] is not values or kept[1] is not bias:
        reader = rows_reader(w) if values is w else rows_reader(w, values)
        kept = (values, bias, Dense4Bit(reader, n, k, qparams(w.quantization).scale, bias,
                                        node.builtin_data,
                                        f"FULLY_CONNECTED weights {w.index} {w.name!r}"))
        if ctx.interpreter.kernels_asked == AUTO and kept[2].holds_unpackable():
            kept = (values, bias, None)
        cache["dense4bit"] = kept
    return kept[2]
