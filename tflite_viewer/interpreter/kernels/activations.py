"""Activations and normalizations: RELU family, LEAKY_RELU, PRELU, HARD_SWISH, LOGISTIC,
TANH, GELU, ELU, SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION."""
from __future__ import annotations

import math

import numpy as np

from .. import eigen_float
from ..float32 import expf, last_of_sums, logistic as float32_logistic
from ..integer import l2norm as int_l2norm, lut, softmax as int_softmax
from ..kernel_sets import builtin
from ..registration import check_types
from .common import (FLOAT_WEIGHT, QUANTIZED, BuiltinOperator as Op, bind_arrays, bind_elementwise,
                     clip_ufunc,
                     broadcast_shape, declare, define, option, rounding, same_shape, tensor_qparams)


def clip_float(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """min(max(x, lo), hi) as the reference kernels compute it in C (``x < lo ? lo : x``:
    -0 stays -0, NaN stays NaN), by np.clip with bounds of x's own type, which is about a
    third of the time of np.maximum or of np.clip with Python numbers."""
    if x.dtype.kind != "f":
        return np.clip(x, lo, hi)
    return clip_ufunc(x, np.asarray(lo, x.dtype), np.asarray(hi, x.dtype))


def _clip(lo, hi):
    return lambda ctx, node: clip_float(ctx.value(node, 0), lo, hi)


def _bound_clip(lo, hi):
    """The float32 RELU family bound: its bounds as float32 arrays made once."""
    low, high = np.asarray(lo, np.float32), np.asarray(hi, np.float32)
    return bind_elementwise(lambda x: clip_ufunc(x, low, high), float_only=True)


def _io(ctx, node):
    return ctx.input(node, 0), ctx.output(node, 0)


def _relu_int(kind: str):
    def prepare(ctx, node):
        x, o = _io(ctx, node)
        return lut.prepare_relu(kind, tensor_qparams(x), tensor_qparams(o), x.dtype, rounding(ctx))
    return dict(int_prepare=prepare, int_compute=lambda ctx, node, p: lut.relu(
        ctx.value(node, 0), kind=kind, params=p))


define(Op.RELU, (1, 3), _clip(0, np.inf), same_shape, bind=_bound_clip(0, np.inf),
       types="float+uint8+int8+int16", **_relu_int("RELU"))
define(Op.RELU6, (1, 3), _clip(0, 6), same_shape, types="float+uint8+int8+int16",
       bind=_bound_clip(0, 6), **_relu_int("RELU6"))
define(Op.RELU_N1_TO_1, (1, 1), _clip(-1, 1), same_shape, types="float+uint8+int8",
       accepts=declare(scaled=("uint8", "int8")), bind=_bound_clip(-1, 1),
       **_relu_int("RELU_N1_TO_1"))
define(Op.RELU_0_TO_1, (1, 1), _clip(0, 1), same_shape, types="float+uint8+int8",
       bind=_bound_clip(0, 1), **_relu_int("RELU_0_TO_1"))


def where_nonnegative(x: np.ndarray, scaled: np.ndarray) -> np.ndarray:
    """``np.where(x >= 0, x, scaled)`` for a float ``x`` and a new array ``scaled`` of its
    shape and dtype (overwritten: the result), bit for bit, chosen by a mask of bits: a
    sign that changes from element to element makes np.where's branch 4-5x slower than
    these five passes (PRELU and LEAKY_RELU of MediaPipe's and openWakeWord's models)."""
    if x.dtype.kind != "f" or scaled.dtype != x.dtype or scaled.shape != x.shape \
            or not scaled.flags.writeable:
        return np.where(x >= 0, x, scaled)
    ints = np.dtype(f"u{x.dtype.itemsize}")
    keep = np.greater_equal(x, 0).astype(ints)
    np.negative(keep, out=keep)  # 1 -> all bits set
    picked, own = scaled.view(ints), x.view(ints)
    diff = np.bitwise_xor(picked, own)
    np.bitwise_and(diff, keep, out=diff)
    np.bitwise_xor(picked, diff, out=picked)
    return scaled


#: an alpha repeated over the whole input (`ScaledSelect`) is kept up to this size
_ALPHA_KEEP_BYTES = 1 << 21


class ScaledSelect:
    """``x if x >= 0 else x * alpha`` (PRELU, LEAKY_RELU) for inputs of one shape and one
    alpha, bit for bit, in two to four whole-array passes where `where_nonnegative` takes
    seven.

    With kappa = 1 where alpha <= 1 and -1 where alpha > 1, the select is
    ``kappa * max(kappa * x, (kappa * alpha) * x)``: for alpha <= 1 the larger of x and
    alpha*x is x when x > 0 and alpha*x when x < 0, for alpha > 1 the smaller is, and
    multiplying by -1 is exact (it commutes with rounding), as is taking the larger of two
    floats.  numpy's maximum propagates a NaN x, whose product is that NaN.  Two values
    tie only where x is +-0 (alpha*x then a zero of either sign; alpha = 1 ties x with
    itself), and an input of +-0 is its own result: those elements are copied from x
    when an alpha is negative (a positive alpha's zero product is x's zero itself).  An
    alpha of 0 or not finite makes a product NaN where x is not (0 * inf): `usable` is
    False and the caller selects by `where_nonnegative`."""

    def __init__(self, alpha: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> None:
        a = np.asarray(alpha, dtype)
        self.usable = bool(a.size) and bool(np.isfinite(a).all()) and not (a == 0).any()
        if not self.usable:
            return
        self.shape = tuple(shape)
        big = a.dtype.itemsize * math.prod(self.shape) > _ALPHA_KEEP_BYTES
        kappa = np.where(a > 1, a.dtype.type(-1), a.dtype.type(1))
        #: max (kappa 1 throughout), min (-1 throughout; an alpha of 1 takes either), or
        #: both kappas kept
        self.mode = "max" if (a <= 1).all() else "min" if (a >= 1).all() else "mixed"

        def laid(v: np.ndarray) -> np.ndarray:  # a small array repeated to the shape
            if v.size == 1:
                return v.reshape(()).copy()
            return v if big else np.ascontiguousarray(np.broadcast_to(v, self.shape))
        self.alpha = laid(a if self.mode != "mixed" else kappa * a)
        self.kappa = laid(kappa) if self.mode == "mixed" else None
        self.zeros = bool((a < 0).any())

    def __call__(self, x: np.ndarray) -> np.ndarray:
        out = np.multiply(x, self.alpha)
        if self.mode == "max":
            np.maximum(x, out, out=out)
        elif self.mode == "min":
            np.minimum(x, out, out=out)
        else:
            np.maximum(np.multiply(x, self.kappa), out, out=out)
            np.multiply(out, self.kappa, out=out)
        if self.zeros:
            zero = np.equal(x, 0).reshape(-1)
            if zero.any():
                at = zero.nonzero()[0]
                out.reshape(-1)[at] = x.reshape(-1)[at]
        return out


def _select_scaled(x: np.ndarray, alpha) -> np.ndarray:
    """``np.where(x >= 0, x, x * alpha)``'s bits for a float ``x`` and an alpha that
    broadcasts to x's shape: `ScaledSelect` where it applies, else `where_nonnegative`."""
    a = np.asarray(alpha, x.dtype) if x.dtype.kind == "f" else None
    if a is not None and np.broadcast_shapes(x.shape, a.shape) == x.shape:
        select = ScaledSelect(a, x.shape, x.dtype)
        if select.usable:
            return select(x)
    return where_nonnegative(x, x * alpha)


def leaky_relu(x: np.ndarray, alpha: float) -> np.ndarray:
    return _select_scaled(x, np.asarray(alpha, dtype=x.dtype))


def _bound_leaky(ctx, node):
    """LEAKY_RELU of a float32 input: its `ScaledSelect` made once."""
    x = ctx.input(node, 0)
    if x.dtype != np.float32:
        return None
    select = ScaledSelect(np.asarray(float(option(node, "alpha", 0.2)), x.dtype), x.shape,
                          x.dtype)
    return select if select.usable else None


def _prepare_leaky(ctx, node):
    x, o = _io(ctx, node)
    return lut.prepare_leaky_relu(tensor_qparams(x), tensor_qparams(o),
                                  float(option(node, "alpha", 0.2)), rounding(ctx))


define(Op.LEAKY_RELU, (1, 2),
       lambda ctx, node: leaky_relu(ctx.value(node, 0), float(option(node, "alpha", 0.2))),
       same_shape, types="float+uint8+int8+int16", int_prepare=_prepare_leaky,
       int_compute=lambda ctx, node, p: lut.leaky_relu(ctx.value(node, 0), params=p),
       bind=bind_arrays(_bound_leaky))


def prelu(x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """x where x >= 0, else x * alpha (`ScaledSelect`, or `where_nonnegative`).  An alpha
    per channel (MediaPipe's) is repeated over the whole input for both: numpy's loop
    then runs over whole rows, not over C values at a time."""
    if np.broadcast_shapes(x.shape, np.shape(alpha)) != x.shape:
        return where_nonnegative(x, x * alpha)  # (alpha's shape widens x's: np.where's)
    return _select_scaled(x, alpha)


def _bound_prelu(ctx, node):
    """PRELU of a float32 input of the prepared shape: its `ScaledSelect` made once per
    alpha array (a constant, or DEQUANTIZE's kept output of one)."""
    x, a = ctx.input(node, 0), ctx.input(node, 1)
    if x.dtype != np.float32 or a.dtype != np.float32 \
            or np.broadcast_shapes(x.shape, a.shape) != tuple(x.shape):
        return None
    kept: list = [None, None]

    def run(data: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        if kept[0] is not alpha:
            kept[:] = [alpha, ScaledSelect(alpha, data.shape, data.dtype)]
        select = kept[1]
        return select(data) if select.usable else where_nonnegative(data, data * alpha)
    return run


def _prepare_prelu(ctx, node):
    return lut.prepare_prelu(tensor_qparams(ctx.input(node, 0)),
                             tensor_qparams(ctx.input(node, 1)),
                             tensor_qparams(ctx.output(node, 0)), rounding(ctx))


def _prelu_check(ctx, node):
    """int16 PRELU takes int8 alphas (LiteRT's 16x8 kernel reads the alpha as int8)."""
    x, a = ctx.input(node, 0), ctx.input(node, 1)
    if x.type_name == "INT16" and a is not None and a.type_name != "INT8":
        return (f"PRELU v{node.version} with INT16 input and {a.type_name} alpha: LiteRT's "
                "int16 kernel reads the alpha as INT8")
    return check_types(ctx, node, "float+uint8+int8+int16")


define(Op.PRELU, (1, 1), lambda ctx, node: prelu(ctx.value(node, 0), ctx.value(node, 1)),
       broadcast_shape, types="float+uint8+int8+int16", check=_prelu_check,
       bind=bind_arrays(_bound_prelu),
       accepts=declare(kinds={"float": {1: FLOAT_WEIGHT},
                              "int8": {1: "INT8: per-tensor"}, "int16": {1: "INT8: per-tensor"},
                              "uint8": {1: "UINT8: per-tensor"}}),
       int_prepare=_prepare_prelu,
       int_compute=lambda ctx, node, p: lut.prelu(ctx.value(node, 0), ctx.value(node, 1), None,
                                                  None, None, p.rounding, p))


def hard_swish(x: np.ndarray) -> np.ndarray:
    return x * np.minimum(np.maximum(x + 3, 0), 6) / 6


#: 1 as a 0-d array per float dtype: what the Python 1 of ``1 / (1 + exp(-x))`` becomes in
#: x's dtype, at half a Python scalar's cost per ufunc
_ONES: dict[np.dtype, np.ndarray] = {}


def logistic(x: np.ndarray) -> np.ndarray:
    """LOGISTIC: float32 as reference_ops::Logistic, to the bit (`float32.logistic`: its
    cut-offs and C's ``expf``); other float types ``1 / (1 + exp(-x))`` in their dtype."""
    if x.dtype == np.float32:
        return float32_logistic(x)
    one = _ONES.get(x.dtype)
    if one is None:
        one = _ONES[x.dtype] = np.ones((), x.dtype)
    y = np.negative(x)
    np.exp(y, out=y)
    np.add(one, y, out=y)
    return np.divide(one, y, out=y)


def erf(x: np.ndarray) -> np.ndarray:
    """erf in float64 (Abramowitz & Stegun 7.1.26, |error| < 1.5e-7): numpy has none."""
    x = np.asarray(x, dtype=np.float64)
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                          + t * 1.061405429))))
    return s * (1.0 - poly * np.exp(-a * a))


def gelu(x: np.ndarray, approximate: bool = False) -> np.ndarray:
    """GELU; its float32 tanh form as reference_ops::Gelu's Eigen expression computes it in
    both of LiteRT's kernel sets, to the bit (`eigen_float.gelu_tanh`)."""
    if approximate and x.dtype == np.float32:
        return eigen_float.gelu_tanh(x)
    if approximate:
        xd = x.astype(np.float64)
        y = 0.5 * xd * (1 + np.tanh(np.sqrt(2 / np.pi) * (xd + 0.044715 * xd ** 3)))
    else:
        y = 0.5 * x * (1 + erf(x / np.sqrt(2.0)))
    return y.astype(x.dtype)


def elu(x: np.ndarray) -> np.ndarray:
    return np.where(x < 0, np.expm1(np.minimum(x, 0)), x)


def _prepare_hard_swish(ctx, node):
    x, o = _io(ctx, node)
    return lut.prepare_hard_swish(tensor_qparams(x), tensor_qparams(o), rounding(ctx))


def _table_op(table_fn, tanh: bool):
    """LOGISTIC / TANH: a 256-entry table for 8-bit types, fixed point for int16."""
    def prepare(ctx, node):
        x, o = _io(ctx, node)
        if x.dtype == np.int16:
            return ("int16", lut.prepare_int16_activation(tensor_qparams(x), tanh))
        return ("table", table_fn(tensor_qparams(x), tensor_qparams(o), x.dtype))

    def compute(ctx, node, p):
        x = ctx.value(node, 0)
        if p[0] == "int16":
            return (lut.tanh_int16 if tanh else lut.logistic_int16)(x, p[1])
        return lut.lut_lookup_int8(x, p[1])
    return dict(int_prepare=prepare, int_compute=compute)


define(Op.HARD_SWISH, (1, 1), lambda ctx, node: hard_swish(ctx.value(node, 0)), same_shape,
       types="float+uint8+int8", int_prepare=_prepare_hard_swish,
       int_compute=lambda ctx, node, p: lut.hard_swish(ctx.value(node, 0), params=p))
def _by_kernel_set(reference, builtin_set):
    """The float compute and bind of an op whose float32 kernels differ between LiteRT's
    kernel sets (`kernel_sets`): ``reference(x)`` or ``builtin_set(x)`` (float32 only; other
    float types take ``reference``)."""
    def pick(ctx, x_dtype):
        return builtin_set if builtin(ctx) and x_dtype == np.float32 else reference

    def compute(ctx, node):
        x = ctx.value(node, 0)
        return pick(ctx, x.dtype)(x)

    def bind(ctx, node, invoke):
        return bind_elementwise(pick(ctx, ctx.input(node, 0).dtype),
                                float_only=True)(ctx, node, invoke)
    return dict(compute=compute, bind=bind)


_LOGISTIC = _by_kernel_set(logistic, eigen_float.logistic)
_TANH = _by_kernel_set(np.tanh, eigen_float.tanh)
define(Op.LOGISTIC, (1, 3), _LOGISTIC["compute"], same_shape, types=QUANTIZED,
       bind=_LOGISTIC["bind"], **_table_op(lut.logistic_table, False))
define(Op.TANH, (1, 3), _TANH["compute"], same_shape, types=QUANTIZED, bind=_TANH["bind"],
       **_table_op(lut.tanh_table, True))
# GELU (with its quantized tables) is in unary_math.py
define(Op.ELU, (1, 1), lambda ctx, node: elu(ctx.value(node, 0)), same_shape,
       types="float+int8",
       int_prepare=lambda ctx, node: lut.elu_table(tensor_qparams(ctx.input(node, 0)),
                                                   tensor_qparams(ctx.output(node, 0))),
       int_compute=lambda ctx, node, p: lut.lut_lookup_int8(ctx.value(node, 0), p))


def softmax(x: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """Softmax over the last axis as reference_ops::Softmax: max-subtracted, times beta,
    C's ``expf`` (float32; numpy's exp for other float types), the exponentials added one
    after another from 0, each divided by their sum."""
    if not x.size:
        return x.copy()
    if not x.ndim:  # a scalar is one row of one value
        return softmax(x.reshape(1), beta).reshape(())
    # x.max is this ufunc reduction behind a Python wrapper
    with np.errstate(invalid="ignore", over="ignore"):
        shifted = (x - np.maximum.reduce(x, axis=-1, keepdims=True)) \
            * np.asarray(beta, dtype=x.dtype)
        if x.dtype == np.float32:
            e = expf(shifted)
            # each row's sum from +0 is its sum from the first element: no exponential is
            # negative, so no row can add up to -0
            sums = last_of_sums(e.reshape(-1, e.shape[-1]), axis=1)
            return e / sums.reshape(e.shape[:-1] + (1,))
        e = np.exp(shifted)
        return e / np.add.reduce(e, axis=-1, keepdims=True)


def _softmax_fn(ctx, x_dtype):
    """The node's float softmax: Eigen's (`eigen_float.softmax`) for float32 under the
    builtin kernel set, the reference kernel's otherwise."""
    return eigen_float.softmax if builtin(ctx) and x_dtype == np.float32 else softmax


def log_softmax(x: np.ndarray) -> np.ndarray:
    if not x.size:
        return x.copy()
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _prepare_softmax(ctx, node):
    """The node's quantized softmax as one function of the input."""
    x = ctx.input(node, 0)
    p = int_softmax.prepare_softmax(tensor_qparams(x), float(option(node, "beta", 1.0)), x.dtype,
                                    rounding(ctx))
    return int_softmax.prepared_softmax(p, x.dtype, ctx.output(node, 0).dtype)


def _bound_softmax(ctx, node):
    beta = float(option(node, "beta", 1.0))
    x = ctx.input(node, 0)
    fn = _softmax_fn(ctx, x.dtype)
    if fn is softmax and x.dtype == np.float32 and x.shape and math.prod(x.shape):
        return _softmax_plan(tuple(x.shape), beta)
    return lambda x: fn(x, beta)


def _softmax_plan(shape: tuple[int, ...], beta: float):
    """`softmax` of float32 arrays of ``shape`` (not empty) as a function of the array,
    its per-call work done once: its rows' layout and beta (1 multiplies nothing: x * 1
    is x, NaN's bits too).  A bound call runs inside the executor's IEEE errstate, so it
    needs no errstate of its own (a with-block's entry cost more than the exponentials of
    a ten-class softmax)."""
    rows, n = math.prod(shape[:-1]), shape[-1]
    scale = None if beta == 1.0 else np.asarray(beta, np.float32)

    def run(x: np.ndarray) -> np.ndarray:
        shifted = x - np.maximum.reduce(x, axis=-1, keepdims=True)
        if scale is not None:
            shifted *= scale
        e = expf(shifted).reshape(rows, n)
        # (each row's sum from +0 is its sum from the first element: see `softmax`)
        return (e / last_of_sums(e, axis=1).reshape(rows, 1)).reshape(shape)
    return run


def _float_softmax(ctx, node):
    x = ctx.value(node, 0)
    return _softmax_fn(ctx, x.dtype)(x, float(option(node, "beta", 1.0)))


define(Op.SOFTMAX, (1, 4), _float_softmax, same_shape,
       types=QUANTIZED, int_prepare=_prepare_softmax,
       int_compute=lambda ctx, node, run: run(ctx.value(node, 0)),
       bind=bind_arrays(_bound_softmax))
define(Op.LOG_SOFTMAX, (1, 2), lambda ctx, node: log_softmax(ctx.value(node, 0)), same_shape,
       types="float+uint8+int8", accepts=declare(scaled=("uint8", "int8")),
       int_prepare=lambda ctx, node: int_softmax.prepare_log_softmax(
           tensor_qparams(ctx.input(node, 0)), rounding(ctx)),
       int_compute=lambda ctx, node, p: int_softmax.log_softmax(ctx.value(node, 0), params=p))


def l2_normalize(x: np.ndarray, epsilon: float = 1e-6) -> np.ndarray:
    """x / sqrt(max(sum(x^2), epsilon)) over the last axis (TFLite's float kernel)."""
    sq = np.sum(np.square(x), axis=-1, keepdims=True)
    return x / np.sqrt(np.maximum(sq, np.asarray(epsilon, dtype=x.dtype)))


define(Op.L2_NORMALIZATION, (1, 2), lambda ctx, node: l2_normalize(ctx.value(node, 0)),
       same_shape, types="float+uint8+int8",
       int_prepare=lambda ctx, node: (tensor_qparams(ctx.input(node, 0)), rounding(ctx)),
       int_compute=lambda ctx, node, p: int_l2norm.l2_normalization(ctx.value(node, 0), *p))


def local_response_normalization(x: np.ndarray, radius: int, bias: float, alpha: float,
                                 beta: float) -> np.ndarray:
    """x * (bias + alpha * sum of squares over channels c-r..c+r) ** -beta."""
    depth = x.shape[-1]
    sq = np.square(x.astype(np.float32))
    csum = np.concatenate([np.zeros(x.shape[:-1] + (1,), np.float32),
                           np.cumsum(sq, axis=-1)], axis=-1)
    c = np.arange(depth)
    lo = np.maximum(c - radius, 0)
    hi = np.minimum(c + radius, depth - 1) + 1
    accum = csum[..., hi] - csum[..., lo]
    return (x * np.power(bias + alpha * accum, -beta)).astype(x.dtype)


define(Op.LOCAL_RESPONSE_NORMALIZATION, (1, 1),
       lambda ctx, node: local_response_normalization(
           ctx.value(node, 0), int(option(node, "radius", 5)), float(option(node, "bias", 1.0)),
           float(option(node, "alpha", 1.0)), float(option(node, "beta", 0.5))), same_shape)
