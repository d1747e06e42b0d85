"""Helpers shared by the float kernels: fused activations, padding, option access.

Output sizes and padding come from ../padding.py (re-exported here for the kernels)."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ...schema.schema_generated import BuiltinOperator  # noqa: F401  (re-exported for kernels)
from ..errors import KernelError  # noqa: F401  (re-exported for kernels)
from ..integer.common import QParams, qparams
from ..quant_math import clip_ufunc  # noqa: F401  (re-exported for kernels)
from ..node import Node
from ..padding import compute_out_size, compute_padding, window_geometry  # noqa: F401
from ..accepts import (ANYTHING, DEFAULT, FLOAT_WEIGHT, Accepts,  # noqa: F401
                       accepts as declare)
from ..registration import Kernel, node_kind, register  # noqa: F401
from ..subgraph import Subgraph  # noqa: F401
from ..xnnpack_float import flush
from ..xnnpack_kernels import path as xnnpack_path

#: Node kinds of kernels with integer cores (see registration.node_kind).
INT_KINDS = ("uint8", "int8", "int16")
QUANTIZED = "float+uint8+int8+int16"


def kind(ctx, node) -> str:
    """The node's kind: "float", "uint8", "int8", "int16", "hybrid" (or another type name)."""
    return node_kind(ctx, node)


def rounding(ctx) -> str:
    """The interpreter's requantization rounding ("double" = LiteRT 2.3.0, or "single")."""
    return ctx.interpreter.rounding


def tensor_qparams(t) -> QParams:
    """A runtime tensor's quantization as the integer cores take it (scale 0 if none)."""
    q = t.quantization
    if q is None or not q.has_scale:
        return QParams(np.zeros(1, np.float32), np.zeros(1, np.int64), 0)
    return qparams(q)


def qcache(node) -> dict:
    """The node's per-node cache dict (node.user_data), created on first use."""
    if not isinstance(node.user_data, dict):
        node.user_data = {}
    return node.user_data


def derived(node, name: str, sources: tuple, make: Callable[[], Any]) -> Any:
    """``make()``, a value computed from ``sources`` (input arrays, shapes), kept in the
    node's cache and recomputed only when a source changes.

    Arrays are compared by identity: a constant stays the same array from run to run (an
    edit that replaces it replaces the object) and no kernel writes into an array it did
    not create, so the same object means the same values.  Other sources (shapes, numbers)
    compare by value."""
    cache = qcache(node)
    entry = cache.get(name)
    if entry is not None:
        old, value = entry
        if len(old) == len(sources):
            for a, b in zip(old, sources):  # (a loop: a generator costs more here)
                if a is not b and (type(a) is not type(b) or type(a) is np.ndarray
                                   or a != b):
                    break
            else:
                return value
    value = make()
    cache[name] = (sources, value)
    return value


ACTIVATION_RANGES: dict[str, tuple[float, float]] = {
    "RELU": (0.0, np.inf),
    "RELU6": (0.0, 6.0),
    "RELU_N1_TO_1": (-1.0, 1.0),
}


def activation(node: Node) -> str | None:
    act = node.builtin_data.get("fused_activation_function")
    return None if act in (None, "NONE", 0) else str(act)


def clamp_activation(node: Node) -> str | None:
    """The node's fused activation as LiteRT's conv and pool kernels apply it: through
    CalculateActivationRange, which clamps for RELU, RELU6 and RELU_N1_TO_1 and leaves
    every other activation (TANH, SIGN_BIT) unbounded, that is, not applied."""
    act = activation(node)
    return act if act in ACTIVATION_RANGES else None


_INFINITIES: dict[np.dtype, np.ndarray] = {}


def infinity(dtype: np.dtype) -> np.ndarray:
    """+inf as a 0-d array of ``dtype``: the open upper bound of a RELU's clip."""
    inf = _INFINITIES.get(dtype)
    if inf is None:
        inf = _INFINITIES[dtype] = np.asarray(np.inf, dtype)
    return inf


#: (activation, float dtype) -> its (low, high or None) bounds as 0-d arrays of that dtype:
#: the same values as the Python floats (the dtype's own), which cost a ufunc half as much
_FLOAT_BOUNDS: dict[tuple[str, np.dtype], tuple[np.ndarray, np.ndarray | None]] = {}


def _float_bounds(act: str, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray | None]:
    bounds = _FLOAT_BOUNDS.get((act, dtype))
    if bounds is None:
        lo, hi = ACTIVATION_RANGES[act]
        bounds = _FLOAT_BOUNDS[(act, dtype)] = (
            np.asarray(lo, dtype), None if hi == np.inf else np.asarray(hi, dtype))
    return bounds


def apply_activation(x: np.ndarray, act: str | None) -> np.ndarray:
    """A fused activation as TFLite applies it: min(max(x, low), high), or tanh/sign bit.

    ``x`` must be an array the kernel owns (it is clamped in place when possible).
    """
    if act is None:
        return x
    if act in ACTIVATION_RANGES:
        if x.dtype.kind != "f":
            lo, hi = ACTIVATION_RANGES[act]
            return np.clip(x, lo, hi if np.isfinite(hi) else None).astype(x.dtype)
        lo, hi = _float_bounds(act, x.dtype)
        return clip_ufunc(x, lo, infinity(x.dtype) if hi is None else hi,
                          out=x if x.flags.writeable else None)
    if act == "TANH":
        return np.tanh(x)
    if act == "SIGN_BIT":
        return np.signbit(x).astype(x.dtype)
    raise ValueError(f"unsupported fused activation {act}")


def pad_for_windows(x: np.ndarray, oh: int, ow: int, eff_h: int, eff_w: int, sh: int, sw: int,
                    pt: int, pl: int, value: float = 0.0) -> np.ndarray:
    """Pad (or crop) NHWC ``x`` so that windows at out positions 0..oh-1 fit exactly."""
    need_h = (oh - 1) * sh + eff_h if oh > 0 else 0
    need_w = (ow - 1) * sw + eff_w if ow > 0 else 0
    pb = need_h - pt - x.shape[1]
    pr = need_w - pl - x.shape[2]
    if pt or pl or pb > 0 or pr > 0:
        n, h, w, c = x.shape
        padded = np.full((n, pt + h + max(pb, 0), pl + w + max(pr, 0), c), value, x.dtype)
        padded[:, pt:pt + h, pl:pl + w, :] = x
        x = padded
    return x[:, :need_h, :need_w]


def option(node: Node, key: str, default: Any = None) -> Any:
    """The node's builtin option ``key`` (its builtin_data), or ``default`` when unset."""
    v = node.builtin_data.get(key)
    return default if v is None else v


def check_output_allocation(ctx, node, shape, k: int = 0) -> None:
    """Refuse (`AllocationError`) output ``k`` of ``shape`` before a kernel whose output
    size comes from a tensor's values (TILE, FILL, RANGE, ...) makes it over the limit."""
    out = ctx.output(node, k)
    ctx.check_allocation(out, math.prod(int(d) for d in shape) * (out.dtype.itemsize or 1),
                         shape)


def as_int_list(a: np.ndarray | None) -> list[int]:
    if a is None:
        return []
    flat = np.asarray(a).reshape(-1)
    if flat.dtype.kind in "iu":
        return flat.tolist()  # Python ints already
    return [int(v) for v in flat]


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """The broadcast of ``shapes`` (numpy's rules, which are LiteRT's); shapes that do not
    broadcast are a `KernelError` naming them, as LiteRT's Prepare says it."""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        listed = " and ".join(str(list(s)) for s in shapes)
        raise KernelError(f"shapes {listed} do not broadcast (each dimension must match "
                          "or be 1)") from None


def describe_quantization(t) -> str:
    """``scale 0.05, zero point 3`` (or the per-channel counts) for messages."""
    q = t.quantization
    if q is None:
        return "no quantization"
    scale, zp = np.asarray(q.scale).reshape(-1), np.asarray(q.zero_point).reshape(-1)
    if scale.size == 1:
        return f"scale {float(scale[0]):g}, zero point {int(zp[0]) if zp.size else 0}"
    return f"{scale.size} per-channel scales"


def _params(t) -> tuple | None:
    q = t.quantization
    return None if q is None else (tuple(np.asarray(q.scale).tolist()),
                                   tuple(np.asarray(q.zero_point).tolist()))


def quantization_mismatch(ctx, node, indices=None) -> str | None:
    """Why a node whose LiteRT kernel demands one scale and zero point on all its quantized
    tensors (``indices``, default: inputs and outputs) cannot run, or None.

    LiteRT's Prepare fails on such a model, so this refuses it at load with the two
    tensors that disagree, rather than moving integers that mean different values."""
    if indices is None:
        indices = list(node.inputs) + list(node.outputs)
    first = None
    for i in indices:
        if i < 0 or not ctx.tensors[i].is_quantized_int:
            continue
        t = ctx.tensors[i]
        if first is None:
            first = t
        elif _params(t) != _params(first):
            return (f"{node.name} v{node.version}: tensor {first.index} ({first.name}) has "
                    f"quantization {describe_quantization(first)} but tensor {t.index} "
                    f"({t.name}) {describe_quantization(t)}; LiteRT's kernel requires them "
                    "equal (its Prepare fails on this model)")
    return None


def define(op: int, versions: tuple[int, int], compute, shape=None, types: str = "float",
           name: str | None = None, check=None, int_prepare=None, int_compute=None,
           same_quantization: bool = False, bind=None, accepts: Accepts = DEFAULT,
           int_bind=None) -> type:
    """Register a kernel from two functions, for the many ops that need no more:
    the rule (docs/ARCHITECTURE.md, "Add an op kernel") is `define` when an op is a
    compute function, an optional shape function and an optional integer prepare/compute
    pair, and a `register`-ed `Kernel` class when it keeps caches of its own, chooses
    among several paths in prepare, or runs subgraphs.

    ``compute(ctx, node) -> array | tuple of arrays`` (one per output) and
    ``shape(ctx, node) -> list of output shapes | None`` (None: outputs dynamic, shaped by
    what compute returns).  ``types`` as in `Kernel.types`; ``"any"`` kernels move the
    integers of quantized tensors as they are, whatever the output's parameters, as
    LiteRT's data-movement kernels do; ``same_quantization`` marks those whose LiteRT
    Prepare insists on equal parameters (`quantization_mismatch`).

    Ops with an integer core give ``int_prepare(ctx, node) -> params`` (run in prepare for
    nodes of an integer kind, cached on ``node.user_data["q"]``) and
    ``int_compute(ctx, node, params)``; ``types`` then lists the kinds they accept.

    ``bind(ctx, node, invoke) -> callable | None`` is the optional `Kernel.bind` of the
    non-integer path (see `bind_elementwise`), ``int_bind`` (same signature) that of the
    integer path, which finds its params on ``node.user_data["q"]``.  ``accepts`` declares the tensor types and
    quantization forms per input (`accepts.accepts`; default: whole-byte types, none or
    per-tensor).
    """

    class _Defined(Kernel):
        def init(self, ctx, node):
            return {}

        def check(self, ctx, node):
            if check is not None:
                return check(ctx, node)
            if same_quantization:
                return quantization_mismatch(ctx, node)
            return super().check(ctx, node)

        def prepare(self, ctx, node):
            shapes = shape(ctx, node) if shape is not None else None
            outs = [o for o in node.outputs]
            if shapes is None:
                for o in outs:
                    if o >= 0:
                        ctx.set_dynamic(ctx.tensors[o])
            else:
                for o, s in zip(outs, shapes):
                    if o < 0:
                        continue
                    if s is None:
                        ctx.set_dynamic(ctx.tensors[o])
                    else:
                        ctx.resize(ctx.tensors[o], s)
            if int_compute is not None:
                cache = qcache(node)
                if kind(ctx, node) in INT_KINDS:
                    cache["q"] = int_prepare(ctx, node) if int_prepare is not None else None
                    cache["int"] = True
                else:
                    cache["int"] = False
            # the xnnpack kernel set's path for a node of an XNNPACK partition
            qcache(node)["xnn"] = xnnpack_path(ctx, node)

        def bind(self, ctx, node):
            if node.user_data.get("xnn") is not None:
                return None
            chosen = int_bind if int_compute is not None and node.user_data.get("int") \
                else bind
            return None if chosen is None else chosen(ctx, node, self.invoke)

        def invoke(self, ctx, node):
            xnn = node.user_data.get("xnn")
            if int_compute is not None and node.user_data.get("int"):
                result = int_compute(ctx, node, node.user_data["q"])
            elif xnn is None:
                result = compute(ctx, node)
            elif xnn == "flush":  # XNNPACK's FTZ on an IEEE result (`xnnpack_kernels`)
                result = flush(compute(ctx, node))
            else:
                result = xnn(ctx, node)
            outputs = node.outputs
            if len(outputs) == 1 and not isinstance(result, (tuple, list)):
                if outputs[0] >= 0:
                    ctx.set_output(ctx.tensors[outputs[0]], result)
                return
            for o, r in zip(outputs, result):
                if o >= 0:
                    ctx.set_output(ctx.tensors[o], r)

    _Defined.types = types
    _Defined.reads_scales = types != "any" or int_compute is not None
    _Defined.accepts = accepts
    _Defined.check_fn = check  # (the op coverage report reads its input_types, if any)
    _Defined.__name__ = _Defined.__qualname__ = name or f"Kernel_{op}"
    register(op, versions)(_Defined)
    return _Defined


#: the dtypes `bind_elementwise` binds (those whose ufunc results keep the inputs' dtype)
_BINDABLE = (np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.int64))


def bind_elementwise(fn, fused: bool = False, float_only: bool = False, out_bool: bool = False):
    """A `define` ``bind`` for an op that is ``fn`` of its one or two inputs of one dtype
    (float32, or int32/int64 unless ``float_only``), plus a fused float clamp when
    ``fused``: what its compute and `set_output` do for inputs of the prepared shapes,
    with the tensors, shapes and bounds looked up once.  The output has the inputs' dtype
    (or is BOOL, ``out_bool``)."""
    def bind(ctx, node, invoke):
        ins = [ctx.input(node, k) for k in range(len(node.inputs))]
        if len(ins) not in (1, 2) or len(node.outputs) != 1 or any(t is None for t in ins):
            return None
        o = ctx.output(node, 0)
        dtype = ins[0].dtype
        if dtype not in _BINDABLE or any(t.dtype != dtype or t.shape is None for t in ins) \
                or (float_only and dtype != np.float32) or o.shape is None or o.is_dynamic \
                or o.dtype != (np.dtype(bool) if out_bool else dtype) \
                or np.broadcast_shapes(*(t.shape for t in ins)) != o.shape:
            return None
        act = clamp_activation(node) if fused else None
        if act is not None and dtype != np.float32:
            return None
        lo, hi = _float_bounds(act, dtype) if act is not None else (None, None)
        top = infinity(dtype) if act is not None and hi is None else hi
        a = ins[0]
        sa = a.shape
        if len(ins) == 1:
            def run(ctx, node):
                x = a.data
                if x is None or x.shape != sa or x.dtype != dtype:
                    return invoke(ctx, node)
                out = fn(x)
                o.data = out if type(out) is np.ndarray else np.asarray(out)
            return run
        b = ins[1]
        sb = b.shape

        def run2(ctx, node):
            x, y = a.data, b.data
            if x is None or y is None or x.shape != sa or y.shape != sb or x.dtype != dtype \
                    or y.dtype != dtype:
                return invoke(ctx, node)
            out = fn(x, y)
            if type(out) is not np.ndarray:
                out = np.asarray(out)
            if lo is not None:
                out = clip_ufunc(out, lo, top, out=out if out.flags.writeable else None)
            o.data = out
        return run2
    return bind


def bind_arrays(make):
    """A `define` ``bind`` for a one-output op whose result, once its options and constant
    inputs are read, is a function of its input arrays alone: ``make(ctx, node)`` returns
    that ``fn(*arrays)`` (or None to stay unbound).  The bound call hands ``fn`` the inputs'
    arrays while they have the shapes and dtypes they were prepared with, and stores a
    result of the output's prepared shape and dtype directly; anything else goes through
    the kernel's `invoke` (or `set_output`), whose checks and messages then apply.  What it
    saves is the per-call reading of options and inputs, a few microseconds an op, which
    is what a small model's run is made of."""
    def bind(ctx, node, invoke):
        if len(node.outputs) != 1 or any(i < 0 for i in node.inputs):
            return None
        ins = [ctx.tensors[i] for i in node.inputs]
        o = ctx.output(node, 0)
        if o.shape is None or o.is_dynamic or any(t.shape is None for t in ins):
            return None
        fn = make(ctx, node)
        if fn is None:
            return None
        wanted = [(t, t.shape, t.dtype) for t in ins]
        out_shape, out_dtype = o.shape, o.dtype

        def run(ctx, node):
            arrays = []
            for t, shape, dtype in wanted:
                x = t.data
                if x is None or x.shape != shape or x.dtype != dtype:
                    return invoke(ctx, node)
                arrays.append(x)
            out = fn(*arrays)
            if type(out) is np.ndarray and out.shape == out_shape and out.dtype == out_dtype:
                o.data = out
            else:
                ctx.set_output(o, out)
        return run
    return bind


def same_shape(ctx, node):
    """Output 0 has input 0's shape."""
    return [ctx.input(node, 0).shape]


def broadcast_shape(ctx, node):
    return [broadcast_shapes(ctx.input(node, 0).shape, ctx.input(node, 1).shape)]
