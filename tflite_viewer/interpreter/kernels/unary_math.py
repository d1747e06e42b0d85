"""Unary math with quantized paths: ABS, SQRT, RSQRT, LOG (elementwise.cc) and GELU.

Float kernels are numpy's; int8/int16 (and uint8 for GELU) follow LiteRT's integer paths
(see integer/unary.py).  ABS also takes INT32 and unquantized INT16 (plain absolute value).
"""
from __future__ import annotations

import numpy as np

from ..float32 import expf
from ..integer import unary as iu
from ..stored_values import Stored, stored_accepts
from .activations import gelu
from .common import BuiltinOperator as Op, define, option, rounding, same_shape, tensor_qparams


def _quantized(t) -> bool:
    return t.quantization is not None and t.quantization.has_scale


def _unary_check(allowed: tuple[str, ...], name: str):
    """GenericPrepare's type check: one type in and out, from ``allowed``."""
    def check(ctx, node):
        x, o = ctx.input(node, 0), ctx.output(node, 0)
        if x is None:
            return f"{name} v{node.version}: missing input"
        if x.type_name not in allowed:
            return (f"{name} v{node.version} with {x.type_name} input: LiteRT's kernel "
                    f"takes {', '.join(allowed)} only")
        if o.type != x.type:
            return f"{name} v{node.version}: output type {o.type_name} != input {x.type_name}"
        if x.type_name in ("INT8", "UINT8") or (x.type_name == "INT16" and _quantized(x)
                                                and name != "ABS"):
            if not (_quantized(x) and _quantized(o)):
                return f"{name} v{node.version}: quantized input and output need scales"
        if (x.type_name == "INT16" and name != "GELU" and _quantized(x)
                and (tensor_qparams(x).zp or tensor_qparams(o).zp)):
            return f"{name} v{node.version}: int16 needs zero points 0 (LiteRT's Prepare)"
        return None
    check.input_types = allowed
    return check


def _io(ctx, node):
    return tensor_qparams(ctx.input(node, 0)), tensor_qparams(ctx.output(node, 0))


# -- RSQRT ---------------------------------------------------------------------------
def _rsqrt_prepare(ctx, node):
    x = ctx.input(node, 0)
    qi, qo = _io(ctx, node)
    if x.dtype == np.int16:
        return ("lut", qi, iu.rsqrt_int16_table(qi, qo))
    return ("int8", qi, iu.prepare_rsqrt_int8(qi, qo, rounding(ctx)))


def _rsqrt_int(ctx, node, p):
    x = ctx.value(node, 0)
    if p[0] == "lut":
        iu.check_positive(x, p[1])
        return iu.lookup(x, p[2])
    return iu.rsqrt_int8(x, p[2], rounding(ctx))


define(Op.RSQRT, (1, 3), lambda ctx, node: 1.0 / np.sqrt(ctx.value(node, 0)), same_shape,
       types="float+int8+int16", check=_unary_check(("FLOAT32", "INT8", "INT16"), "RSQRT"),
       int_prepare=_rsqrt_prepare, int_compute=_rsqrt_int)

# -- SQRT ----------------------------------------------------------------------------
define(Op.SQRT, (1, 2), lambda ctx, node: np.sqrt(ctx.value(node, 0)), same_shape,
       types="float+int8+int16", check=_unary_check(("FLOAT32", "INT8", "INT16"), "SQRT"),
       int_prepare=lambda ctx, node: _io(ctx, node),
       int_compute=lambda ctx, node, p: iu.sqrt_quantized(ctx.value(node, 0), *p))

# -- LOG -----------------------------------------------------------------------------
define(Op.LOG, (1, 2), lambda ctx, node: np.log(ctx.value(node, 0)), same_shape,
       types="float+int8+int16", check=_unary_check(("FLOAT32", "INT8", "INT16"), "LOG"),
       int_prepare=lambda ctx, node: iu.log_table(ctx.input(node, 0).dtype, *_io(ctx, node)),
       int_compute=lambda ctx, node, p: iu.lookup(ctx.value(node, 0), p))


# -- ABS -----------------------------------------------------------------------------
def _abs_prepare(ctx, node):
    if not _quantized(ctx.input(node, 0)):
        return None  # unquantized int16: |x|
    return iu.prepare_abs(*_io(ctx, node), rounding(ctx))


def _abs_int(ctx, node, p):
    x = ctx.value(node, 0)
    if p is None:
        return np.abs(x.astype(np.int32)).astype(x.dtype)
    return iu.abs_quantized(x, p, rounding(ctx))


#: ABS per channel: LiteRT's AbsEvalQuantized reads the first channel's zero points and
#: scales (its Prepare refuses blockwise parameters)
_ABS_STORED = Stored("elementwise", zero="uniform", ratio=True,
                     does="takes |q - zero point| of the stored integers and rescales them "
                          "by the first channel's input and output scales")
define(Op.ABS, (1, 5), lambda ctx, node: np.abs(ctx.value(node, 0)), same_shape,
       types="float+int8+int16",
       check=_unary_check(("FLOAT32", "INT8", "INT16", "INT32"), "ABS"),
       int_prepare=_abs_prepare, int_compute=_abs_int,
       accepts=stored_accepts("INT8 INT16", _ABS_STORED, blockwise=False))

# -- GELU ----------------------------------------------------------------------------
define(Op.GELU, (1, 3),
       lambda ctx, node: gelu(ctx.value(node, 0), bool(option(node, "approximate", False))),
       same_shape, types="float+uint8+int8+int16",
       check=_unary_check(("FLOAT32", "FLOAT16", "UINT8", "INT8", "INT16"), "GELU"),
       int_prepare=lambda ctx, node: iu.gelu_table(ctx.input(node, 0).dtype, *_io(ctx, node),
                                                   bool(option(node, "approximate", False))),
       int_compute=lambda ctx, node, p: iu.lookup(ctx.value(node, 0), p))

# -- EXP -----------------------------------------------------------------------------
def exp(x: np.ndarray) -> np.ndarray:
    """EXP: float32 as std::exp on floats in both of LiteRT's kernel sets (C's ``expf``, to
    the bit: `float32.expf`; numpy's float32 exp is a SIMD approximation, a unit off on a
    third of the values); numpy's exp for other types."""
    return expf(x) if x.dtype == np.float32 else np.exp(x)


define(Op.EXP, (1, 2), lambda ctx, node: exp(ctx.value(node, 0)), same_shape,
       types="float+int8+int16", check=_unary_check(("FLOAT32", "INT8", "INT16"), "EXP"),
       int_prepare=lambda ctx, node: iu.exp_table(ctx.input(node, 0).dtype, *_io(ctx, node)),
       int_compute=lambda ctx, node, p: iu.lookup(ctx.value(node, 0), p))


# -- NEG -----------------------------------------------------------------------------
def _negate_stored(ctx, node, p):
    """reference_ops::Negate on the stored integers (quantization is ignored), wrapping."""
    x = ctx.value(node, 0)
    return (-x.astype(np.int32)).astype(x.dtype)


define(Op.NEG, (1, 1), lambda ctx, node: np.negative(ctx.value(node, 0)), same_shape,
       types="float+int8+int16", int_compute=_negate_stored,
       accepts=stored_accepts("INT8 INT16", Stored(
           "elementwise", zero="zero", does="negates the stored integers")))
