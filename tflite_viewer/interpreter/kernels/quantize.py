"""QUANTIZE (float -> uint8/int8/int16, integer -> integer requantization), DEQUANTIZE
(int8/uint8/int16 and float16 to float32) and DENSIFY (sparse constants).

Both usually read constants (fp16 or sparse weights); their result is then computed once
and the same array is handed out on every run, so consumers (e.g. CONV_2D's filter cache)
see an unchanged object.
"""
from __future__ import annotations

import numpy as np

from ..integer import quantize as int_quantize
from ..tensor import FLOAT16, FLOAT32, INT4, INT8, INT16, INT32, QUANTIZED_INT_TYPES, UINT8
from . import chunks
from .common import (BuiltinOperator as Op, Kernel, declare, qparams, register, rounding,
                     same_shape, tensor_qparams)

UINT4 = 20  # TensorType.UINT4


def dequantize(values: np.ndarray, quantization=None) -> np.ndarray:
    """DEQUANTIZE as LiteRT: float16 widened; per-tensor ``float(double(scale) * (q - zp))``,
    per-channel the float32 product (integer/quantize.py)."""
    if values.dtype == np.float16:
        return values.astype(np.float32)
    if quantization is None or not quantization.has_scale:
        raise ValueError("DEQUANTIZE of an integer tensor without quantization parameters")
    return int_quantize.dequantize(values, qparams(quantization))


#: QUANTIZE's (input type, output type) pairs, as quantize.cc's Prepare accepts them.
_QUANTIZE_PAIRS = {
    (FLOAT32, UINT8), (FLOAT32, INT8), (FLOAT32, INT16),
    (INT16, INT8), (INT16, INT16), (INT16, INT32), (INT32, INT8), (INT32, INT16),
    (INT8, INT8), (INT8, UINT8), (UINT8, INT8), (UINT8, UINT8),
    (FLOAT32, INT4), (FLOAT32, UINT4),  # v4, v5: per-tensor only, as AffineQuantizeToInt4
}
#: the value range of the 4-bit types (their runtime arrays hold one value per int8/uint8)
_NIBBLE_RANGE = {INT4: (-8, 7), UINT4: (0, 15)}


@register(Op.QUANTIZE, versions=(1, 6))
class Quantize(Kernel):
    """QUANTIZE: AffineQuantize / PerChannelQuantize from float32, Requantize between
    integer types (multiplier of double(s_in) / double(s_out))."""

    types = "any"
    reads_scales = True
    accepts = declare(outputs="* INT4 UINT4: none per-tensor per-channel:*")

    def check(self, ctx, node):
        x, o = ctx.input(node, 0), ctx.output(node, 0)
        if (x.type, o.type) not in _QUANTIZE_PAIRS:
            return f"QUANTIZE v{node.version} from {x.type_name} to {o.type_name}: not supported"
        if o.quantization is None or not o.quantization.has_scale:
            return f"QUANTIZE v{node.version} to a tensor without quantization parameters"
        if o.type in _NIBBLE_RANGE and o.quantization.scale.size > 1:
            return f"QUANTIZE v{node.version} to per-channel {o.type_name}: not supported"
        return None

    def prepare(self, ctx, node):
        x, o = ctx.input(node, 0), ctx.output(node, 0)
        ctx.resize(o, x.shape)
        if x.type == FLOAT32:
            node.user_data = None
        else:
            node.user_data = int_quantize.prepare_requantize(tensor_qparams(x), tensor_qparams(o),
                                                             rounding(ctx))
            if x.dtype in (np.int8, np.uint8) and o.type not in _NIBBLE_RANGE:
                node.user_data = _ByteTable(node.user_data, x.dtype, o.dtype)

    def invoke(self, ctx, node):
        o = ctx.output(node, 0)
        x = ctx.value(node, 0)
        if o.type in _NIBBLE_RANGE:
            lo, hi = _NIBBLE_RANGE[o.type]
            q = qparams(o.quantization)

            def fn(v):
                return np.clip(int_quantize.quantize(v, q, np.int32), lo, hi).astype(o.dtype)
        elif node.user_data is None:
            q = qparams(o.quantization)

            def fn(v):
                return int_quantize.quantize(v, q, o.dtype)
        elif isinstance(node.user_data, _ByteTable):
            fn = node.user_data
        else:
            def fn(v):
                return int_quantize.requantize(v, output_dtype=o.dtype, params=node.user_data)
        # per channel, each piece would need its channels' scales: computed whole
        per_channel = o.quantization.scale.size > 1
        ctx.set_output(o, fn(x) if per_channel else chunks.elementwise(fn, x.shape, x))


class _ByteTable:
    """An 8-bit input's Requantize as a table of its 256 results, looked up by the input's
    bytes: the same function (`integer.quantize.requantize`, computed once per value),
    one gather where the arithmetic takes a dozen passes (efficientnet_lite0's uint8 to
    int8 QUANTIZE of 224x224x3: 2.6 ms)."""

    def __init__(self, params, input_dtype: np.dtype, output_dtype: np.dtype) -> None:
        values = np.arange(256, dtype=np.uint8).view(input_dtype)  # by byte
        self.table = int_quantize.requantize(values, output_dtype=output_dtype,
                                             params=params)

    def __call__(self, v: np.ndarray) -> np.ndarray:
        return self.table[np.ascontiguousarray(v).view(np.uint8)]


class _ConstantCached(Kernel):
    types = "any"

    def init(self, ctx, node):
        return {}

    def compute(self, ctx, node) -> np.ndarray:
        raise NotImplementedError

    def invoke(self, ctx, node):
        x = ctx.input(node, 0)
        if x.is_constant:
            cached = node.user_data.get("value")
            if cached is None:
                cached = node.user_data["value"] = self.compute(ctx, node)
                cached.setflags(write=False)
            out = cached
        else:
            out = self.compute(ctx, node)
        ctx.set_output(ctx.output(node, 0), out)

    def bind(self, ctx, node):
        """A constant input's kept result stored straight into the output (MediaPipe's
        float16 models dequantize every filter and bias on every run: a hundred such nodes
        in face_landmark)."""
        x, o = ctx.input(node, 0), ctx.output(node, 0)
        cached = node.user_data.get("value") if isinstance(node.user_data, dict) else None
        if x is None or not x.is_constant or cached is None or o.is_dynamic \
                or cached.shape != o.shape or cached.dtype != o.dtype:
            return None

        def run(ctx, node) -> None:
            o.data = cached
        #: (output, kept value): the plan's folding replays it with its neighbours
        run.constant = (o, cached)  # type: ignore[attr-defined]
        return run


@register(Op.DEQUANTIZE, versions=(1, 8))
class Dequantize(_ConstantCached):
    reads_scales = True
    accepts = declare({0: "FLOAT16: none per-tensor blockwise custom | INT16: per-tensor "
                          "| INT8 UINT8 INT4 UINT4 INT2: per-tensor per-channel:*"},
                      multiplied=(0,))

    def check(self, ctx, node):
        x = ctx.input(node, 0)
        if x.type not in QUANTIZED_INT_TYPES and x.type not in (FLOAT16, UINT4):
            return f"DEQUANTIZE v{node.version} of {x.type_name}: not supported"
        if ctx.output(node, 0).type != FLOAT32:
            return f"DEQUANTIZE v{node.version} to {ctx.output(node, 0).type_name}: not supported"
        if x.type != FLOAT16 and (x.quantization is None or not x.quantization.has_scale):
            return (f"DEQUANTIZE v{node.version} of {x.type_name} tensor {x.index} "
                    f"({x.name!r}) without quantization parameters")
        return None

    def prepare(self, ctx, node):
        ctx.resize(ctx.output(node, 0), same_shape(ctx, node)[0])

    def compute(self, ctx, node):
        x = ctx.input(node, 0)
        values = ctx.value(node, 0)
        if x.quantization is not None and x.quantization.scale.size > 1:
            return dequantize(values, x.quantization)  # per channel: computed whole
        return chunks.elementwise(lambda v: dequantize(v, x.quantization), values.shape,
                                  values)


#: DENSIFY's types and forms, as densify.cc takes them: FLOAT32, FLOAT16 and INT8 (its Eval
#: refuses every other type), in any quantization form, which it never reads: it copies
#: the stored values (a per-channel INT8 weight stays per-channel, read by the consumer)
_DENSIFY = "FLOAT32 FLOAT16 INT8: none per-tensor per-channel:* blockwise custom multi-axis"


@register(Op.DENSIFY, versions=(1, 1))
class Densify(_ConstantCached):
    accepts = declare({0: _DENSIFY}, outputs=_DENSIFY)

    def check(self, ctx, node):
        x = ctx.input(node, 0)
        if x.sparsity is None or not x.is_constant:
            return f"DENSIFY v{node.version} of a tensor that is not a sparse constant"
        return None

    def prepare(self, ctx, node):
        ctx.resize(ctx.output(node, 0), ctx.input(node, 0).shape)

    def compute(self, ctx, node):
        x = ctx.input(node, 0)
        return x.sparsity.densify(x.data, x.shape, f"tensor {x.index}")
