"""Element-wise ops: binary arithmetic (with broadcasting and fused activations),
comparisons, logical ops, SELECT, and the unary math functions."""
from __future__ import annotations

import numpy as np

from ..float32 import cosf, powf, sinf
from ..integer import compare as int_compare
from ..integer import div as int_div
from ..integer import elementwise as int_elementwise
from ..registration import check_types
from ..stored_values import Stored, stored_accepts
from . import chunks
from .common import (DEFAULT, QUANTIZED, BuiltinOperator as Op, KernelError, apply_activation,
                     bind_arrays, bind_elementwise, clamp_activation, broadcast_shape, declare,
                     define, rounding, same_shape, tensor_qparams)


def _binary(fn, fused=False):
    def compute(ctx, node):
        a, b = ctx.value(node, 0), ctx.value(node, 1)
        out = np.asarray(fn(a, b))
        if out.dtype != a.dtype and a.dtype.kind in "fiu" and out.dtype.kind in "fiu":
            out = out.astype(a.dtype)
        # ADD, SUB, MUL and DIV take it through CalculateActivationRange: clamps only
        return apply_activation(out, clamp_activation(node)) if fused else out
    return compute


def _has_zero(b: np.ndarray) -> bool:
    """Whether an integer divisor holds a zero (count_nonzero: a tenth of np.any(b == 0)'s
    cost on the small arrays of shape arithmetic)."""
    return np.count_nonzero(b) != b.size


def div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TFLite DIV: float division; integer division truncates (C semantics)."""
    if a.dtype.kind in "iu":
        if _has_zero(b):
            raise ZeroDivisionError("integer division by zero")
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)
    return a / b


def floor_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu":
        if _has_zero(b):
            raise ZeroDivisionError("integer division by zero")
        return np.floor_divide(a, b)
    return np.floor(a / b)


def floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TF's FloorMod: the remainder takes the divisor's sign (fmod, then adjusted)."""
    if a.dtype.kind in "iu":
        if _has_zero(b):
            raise ZeroDivisionError("integer modulo by zero")
        return np.mod(a, b)
    r = np.fmod(a, b)
    return np.where((r != 0) & ((b < 0) != (r < 0)), r + b, r)


def power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """POW: float32 as std::pow on floats (C's ``powf``, to the bit: `float32.powf`);
    integers by repeated multiplication, which refuses a negative exponent."""
    if a.dtype == np.float32 and b.dtype == np.float32:
        return powf(a, b)
    if a.dtype.kind in "iu":
        if np.any(b < 0):
            raise KernelError("integer POW with a negative exponent (LiteRT's IntegerPow "
                              "takes exponents of 0 or more)")
    return np.power(a, b)


def _scaled(t) -> bool:
    return t.quantization is not None and t.quantization.has_scale


def _plain_int16(a, o) -> bool:
    """add.cc's plain int16 sum: an INT16 input 1 and output without quantization
    parameters (EvalAdd's BroadcastAdd6DSlow<int16_t, true>)."""
    return a.type_name == "INT16" and not _scaled(a) and not _scaled(o)


def _add_check(ctx, node):
    """An int16 ADD is plain (every tensor without parameters) or quantized (every one
    with them): LiteRT's Prepare reads input 1's quantization, its Eval the output's, so
    a mix computes from missing scales (aborts, or without meaning)."""
    a, b, o = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
    if a.type_name == "INT16" and len({_scaled(a), _scaled(b), _scaled(o)}) > 1:
        return (f"{node.name} v{node.version}: INT16 tensors with and without quantization "
                f"parameters (input 0 {_scaled(a)}, input 1 {_scaled(b)}, output "
                f"{_scaled(o)}) are not implemented here: LiteRT adds plain integers when "
                "none has parameters and rescales when all have them")
    return check_types(ctx, node, QUANTIZED)


def _add_int(ctx, node, p):
    """Quantized ADD, or the plain int16 sum (`_plain_int16`): int16 wrap-around, then
    the fused activation's clamp, as ActivationFunctionWithMinMax<int16_t>(a + b)."""
    if p is None:
        return _binary(np.add, True)(ctx, node)
    return _int_binary(int_elementwise.add)(ctx, node, p)


def _prepare_add(ctx, node):
    a, b, o = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
    if node.name == "ADD" and _plain_int16(a, o):
        return None
    return int_elementwise.prepare_add(tensor_qparams(a), tensor_qparams(b), tensor_qparams(o),
                                       node.builtin_data, a.dtype, rounding(ctx))


def _prepare_mul(ctx, node):
    a, b, o = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
    return int_elementwise.prepare_mul(tensor_qparams(a), tensor_qparams(b), tensor_qparams(o),
                                       node.builtin_data, a.dtype, rounding(ctx))


def _prepare_sqdiff(ctx, node):
    a, b, o = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
    return int_elementwise.prepare_squared_difference(tensor_qparams(a), tensor_qparams(b),
                                                      tensor_qparams(o), rounding(ctx))


def _prepare_div(ctx, node):
    a, b, o = ctx.input(node, 0), ctx.input(node, 1), ctx.output(node, 0)
    return int_div.prepare_div(tensor_qparams(a), tensor_qparams(b), tensor_qparams(o), node.builtin_data, o.dtype, rounding(ctx))


def _by_pieces(fn):
    """``fn(input1, input2)`` over the node's two inputs, a piece at a time on a large
    output (`chunks`: an integer core's int64 temporaries stay bounded)."""
    return lambda ctx, node: chunks.elementwise(fn, ctx.output(node, 0).shape,
                                                ctx.value(node, 0), ctx.value(node, 1))


def _int_binary(fn):
    """An integer core ``fn(input1, input2, params=...)`` as `define`'s int_compute."""
    return lambda ctx, node, p: _by_pieces(lambda a, b: fn(a, b, params=p))(ctx, node)


def _int_moving(fn):
    """An integer core that needs no parameters (MAXIMUM/MINIMUM keep the integers)."""
    return lambda ctx, node, p: _by_pieces(fn)(ctx, node)


def _stored(fn):
    """FLOOR_DIV / FLOOR_MOD on int8 and int16 divide the stored integers (floor_div.cc and
    floor_mod.cc ignore quantization)."""
    return lambda ctx, node, p: _by_pieces(fn)(ctx, node)


#: op, versions, float function, fused activation, node kinds, integer prepare and compute
_BINARY = (
    (Op.ADD, (1, 6), np.add, True, QUANTIZED, _prepare_add, _add_int),
    (Op.SUB, (1, 5), np.subtract, True, QUANTIZED, _prepare_add,
     _int_binary(int_elementwise.sub)),
    (Op.MUL, (1, 8), np.multiply, True, QUANTIZED, _prepare_mul,
     _int_binary(int_elementwise.mul)),
    (Op.DIV, (1, 2), div, True, QUANTIZED, _prepare_div,
     _int_binary(lambda a, b, params: int_div.div(a, b, params))),
    (Op.SQUARED_DIFFERENCE, (1, 2), lambda a, b: np.square(a - b), False, "float+int8",
     _prepare_sqdiff, _int_binary(int_elementwise.squared_difference)),
    (Op.MAXIMUM, (1, 4), np.maximum, False, QUANTIZED, None,
     _int_moving(int_elementwise.maximum)),
    (Op.MINIMUM, (1, 4), np.minimum, False, QUANTIZED, None,
     _int_moving(int_elementwise.minimum)),
    (Op.POW, (1, 1), power, False, "float", None, None),
    (Op.FLOOR_DIV, (1, 3), floor_div, False, "float+int8+int16", None, _stored(floor_div)),
    (Op.FLOOR_MOD, (1, 2), floor_mod, False, "float+int8+int16", None, _stored(floor_mod)),
)
#: the binary ops that are one ufunc of same-dtype inputs (`bind_elementwise`)
_UFUNCS = {Op.ADD, Op.SUB, Op.MUL, Op.MAXIMUM, Op.MINIMUM}
_COPIES = Stored("elementwise", does="compares the stored integers and copies one")
#: what each binary op takes beyond per-tensor parameters: MAXIMUM, MINIMUM and FLOOR_MOD
#: compute on stored integers (per channel where their values pair, `stored_values`);
#: ADD (8-bit), SUB, DIV and SQUARED_DIFFERENCE compute with every tensor's scale
_ACCEPTS = {
    Op.MAXIMUM: stored_accepts("INT8 UINT8 INT16", _COPIES),
    Op.MINIMUM: stored_accepts("INT8 UINT8 INT16", _COPIES),
    Op.FLOOR_MOD: stored_accepts("INT8 INT16", Stored(
        "elementwise", zero="zero", does="divides the stored integers")),
    Op.ADD: declare(scaled=("uint8", "int8")),
    **{op: declare(scaled=("uint8", "int8", "int16"))
       for op in (Op.SUB, Op.DIV, Op.SQUARED_DIFFERENCE)},
}


def _bind_add_int(sign: int):
    """The integer ``bind`` of ADD (``sign`` 1) and SUB (-1): two 8-bit inputs of the
    output's shape to one compiled loop (`int_elementwise.compiled_add_or_sub`)."""
    def make(ctx, node):
        p, o = node.user_data.get("q"), ctx.output(node, 0)
        ins = (ctx.input(node, 0), ctx.input(node, 1))
        if p is None or any(t.shape != o.shape for t in ins):
            return None  # (the plain int16 sum, broadcasts)
        return int_elementwise.compiled_add_or_sub(p, ins[0].dtype, ins[1].dtype, sign)
    return bind_arrays(make)


_INT_BINDS = {Op.ADD: _bind_add_int(1), Op.SUB: _bind_add_int(-1)}
for _op, _versions, _fn, _fused, _types, _int_prepare, _int_compute in _BINARY:
    define(_op, _versions, _binary(_fn, _fused), broadcast_shape, types=_types,
           int_prepare=_int_prepare, int_compute=_int_compute,
           bind=bind_elementwise(_fn, _fused) if _op in _UFUNCS else None,
           int_bind=_INT_BINDS.get(_op),
           check=_add_check if _op == Op.ADD else None,
           accepts=_ACCEPTS.get(_op, DEFAULT))


# -- comparisons and logic (output BOOL) -----------------------------------------------------
def _comparison_shape(ctx, node):
    """ComparisonPrepare: inputs of one type (strings only for EQUAL/NOT_EQUAL), the
    broadcast shape, and LiteRT's 8-D broadcasting limit."""
    a, b = ctx.input(node, 0), ctx.input(node, 1)
    if a.type != b.type:
        raise TypeError(f"inputs of different types ({a.type_name}, {b.type_name}): LiteRT "
                        "compares tensors of one type only")
    if a.type_name == "STRING" and node.name not in ("EQUAL", "NOT_EQUAL"):
        raise TypeError(f"{node.name} does not compare strings")
    int_compare.check_broadcast_rank(a.shape, b.shape)
    return broadcast_shape(ctx, node)


def _comparison_prepare(op_name: str):
    """uint8/int8 (and int16 for EQUAL/NOT_EQUAL) rescale as comparisons.cc does."""
    def prepare(ctx, node):
        a, b = ctx.input(node, 0), ctx.input(node, 1)
        quantized = a.quantization is not None and a.quantization.has_scale
        return int_compare.prepare_comparison(op_name, a.dtype, tensor_qparams(a),
                                              tensor_qparams(b), quantized, rounding(ctx))
    return prepare


def _comparison_int(ctx, node, p):
    return _by_pieces(lambda a, b: int_compare.compare(p.op, a, b, params=p))(ctx, node)


#: LESS, LESS_EQUAL, GREATER and GREATER_EQUAL compare int16 stored integers (per channel
#: where the two sides' values pair, `stored_values`); 8-bit ones rescale by the
#: per-tensor scale, which LiteRT aborts on for per-channel tensors
_RAW_INT16 = stored_accepts("INT16", Stored("elementwise",
                                            does="compares the stored int16 integers"))
for _op, _name, _fn, _versions in (
        (Op.EQUAL, "EQUAL", np.equal, (1, 5)), (Op.NOT_EQUAL, "NOT_EQUAL", np.not_equal, (1, 4)),
        (Op.LESS, "LESS", np.less, (1, 3)), (Op.LESS_EQUAL, "LESS_EQUAL", np.less_equal, (1, 2)),
        (Op.GREATER, "GREATER", np.greater, (1, 2)),
        (Op.GREATER_EQUAL, "GREATER_EQUAL", np.greater_equal, (1, 3))):
    define(_op, _versions, (lambda f: lambda ctx, node: f(ctx.value(node, 0),
                                                          ctx.value(node, 1)))(_fn),
           _comparison_shape, types="any", check=lambda ctx, node: None,
           int_prepare=_comparison_prepare(_name), int_compute=_comparison_int,
           bind=bind_elementwise(_fn, out_bool=True),
           accepts=_RAW_INT16 if _name not in ("EQUAL", "NOT_EQUAL") else DEFAULT)

for _op, _fn in ((Op.LOGICAL_AND, np.logical_and), (Op.LOGICAL_OR, np.logical_or)):
    define(_op, (1, 1), (lambda f: lambda ctx, node: f(ctx.value(node, 0),
                                                       ctx.value(node, 1)))(_fn),
           broadcast_shape, types="any")

define(Op.LOGICAL_NOT, (1, 1), lambda ctx, node: np.logical_not(ctx.value(node, 0)), same_shape)


def select_v1(cond: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """SELECT: cond of x's shape, or a vector choosing whole rows of x/y."""
    if cond.ndim == 1 and x.ndim > 1 and cond.shape[0] == x.shape[0]:
        cond = cond.reshape((-1,) + (1,) * (x.ndim - 1))
    return np.where(cond, x, y)


def _one_element_shape(ctx, node) -> tuple[int, ...] | None:
    """The model's own output shape when the condition, both operands and that output
    each hold one element: LiteRT's select Prepare keeps it then (a scalar written as [1]
    or [1, 1] stays as the converter wrote it) instead of the broadcast shape."""
    declared = tuple(ctx.model_subgraph.tensors[node.outputs[0]].shape)
    if (int(np.prod(declared, dtype=np.int64)) == 1
            and all(int(np.prod(ctx.input(node, k).shape, dtype=np.int64)) == 1
                    for k in range(3))):
        return declared
    return None


def _select_shape(ctx, node):
    kept = _one_element_shape(ctx, node)
    return [ctx.input(node, 1).shape if kept is None else kept]


def _select_v2_shape(ctx, node):
    kept = _one_element_shape(ctx, node)
    return [np.broadcast_shapes(*(ctx.input(node, k).shape for k in range(3)))
            if kept is None else kept]


def _selected(select):
    """``select`` on the node's inputs, shaped as prepared (see `_one_element_shape`)."""
    def compute(ctx, node):
        out = select(*(ctx.value(node, k) for k in range(3)))
        shape = ctx.output(node, 0).shape
        return out.reshape(shape) if out.shape != shape else out
    return compute


define(Op.SELECT, (1, 4), _selected(select_v1), _select_shape, types="any")
define(Op.SELECT_V2, (1, 2), _selected(np.where), _select_v2_shape, types="any")


# -- unary math ----------------------------------------------------------------------------
def rsqrt(x: np.ndarray) -> np.ndarray:
    return 1.0 / np.sqrt(x)


def _unary(fn):
    return lambda ctx, node: fn(ctx.value(node, 0))


# SIN and COS are std::sin / std::cos on floats in both of LiteRT's kernel sets (glibc's
# sinf and cosf; half values through float): `float32.sinf` and `cosf`, to the bit
for _op, _fn, _versions in (
        (Op.SIN, sinf, (1, 2)),
        (Op.COS, cosf, (1, 2)), (Op.SQUARE, np.square, (1, 1)),
        (Op.FLOOR, np.floor, (1, 1)), (Op.CEIL, np.ceil, (1, 1)),
        (Op.ROUND, np.round, (1, 1)),  # round half to even, as TFLite's RoundToNearest
        (Op.SIGN, np.sign, (1, 2))):
    define(_op, _versions, _unary(_fn), same_shape)
# ABS, SQRT, RSQRT, LOG, EXP and NEG (with their integer paths) are in unary_math.py
