"""Which operators XNNPACK's delegate claims: one function per operator kind.

Transcribed from google-ai-edge/LiteRT ``tflite/delegates/xnnpack/xnnpack_delegate.cc``
(``Subgraph::VisitNode`` and the ``Visit*Node`` functions, their checks only: what they
do when the delegate builds its XNNPACK subgraph is not needed to know whether it claims
the operator).  Each function raises `Refuse` with the first check that fails, in the
delegate's order; returning means the delegate claims the operator.
"""
from __future__ import annotations

from collections.abc import Callable

from .xnnpack_node import Node, check_activation, check_padding
from .xnnpack_types import MAX_DIMS, Ctx, Refuse
from .xnnpack_weights import (attention, batch_matmul, conv2d, depthwise, fully_connected,
                              mediapipe_deconv, mediapipe_pool, transpose_conv)

def _pool_params(n: Node) -> None:
    """CheckPoolingParams."""
    o = n.o
    sw, sh, fw, fh = (o.get(k, 0) for k in ("stride_w", "stride_h", "filter_width",
                                            "filter_height"))
    if not (sw > 0 and sh > 0):
        raise Refuse(f"stride {sh}x{sw} is not positive")
    if not (fw > 0 and fh > 0):
        raise Refuse(f"filter {fh}x{fw} is not positive")
    if not (sw <= fw and sh <= fh):
        raise Refuse(f"stride {sh}x{sw} larger than the filter {fh}x{fw}")
    if not (not (fw == 1 and fh == 1 and max(sw, sh) > 1)):
        raise Refuse(f"a 1x1 filter with stride {sh}x{sw}")


def _unary(n: Node) -> None:
    c = n.c
    n.io(1, 1)
    x, y = n.i(0), n.out()
    c.shape(x, 0, MAX_DIMS)
    b = n.name
    if b in ("ABS", "CEIL", "COS", "EXP", "FLOOR", "GELU", "HARD_SWISH", "LOG", "NEG",
             "RELU_N1_TO_1", "RELU", "RELU6", "ROUND", "RSQRT", "SIN", "SQRT", "SQUARE"):
        c.float_(x)
        c.float_(y)
    elif b == "DEQUANTIZE":
        c.qint8_or_quint8(x)
        c.float_(y)
    elif b == "ELU":
        c.float_or_qint8(x)
        c.float_or_qint8(y)
    elif b in ("LOGISTIC", "TANH"):
        c.float_or_quint8(x)
        c.float_or_quint8(y)
    elif b == "LEAKY_RELU":
        c.float_or_quint8(x)
        c.float_or_quint8(y)
        alpha = n.o.get("alpha", 0.0)
        if not (alpha != 0.0 and _is_normal(alpha)):
            raise Refuse(f"alpha {alpha:g} is not a normal number")
        si, so = _scale_or_nan(c, x), _scale_or_nan(c, y)
        if _is_normal(si) and _is_normal(so):
            pos = si / so
            if not 1 / 256 <= pos <= 128:
                raise Refuse(f"input/output scale {pos:g} outside [1/256, 128]")
            neg = pos * alpha
            if not (-127.99609375 <= neg <= 128 and abs(neg) >= 1 / 256):
                raise Refuse(f"negative slope scale {neg:g} outside XNNPACK's range")
    elif b == "QUANTIZE":
        c.float_or_quint8(x)
        c.float_or_quint8(y)
        tx, ty = c.f.type(x), c.f.type(y)
        if tx in ("INT8", "UINT8"):
            if not tx == ty:
                raise Refuse(f"QUANTIZE from {tx} to {ty}")
            r = c.scale(x) / c.scale(y)
            if not 1 / 256 <= r <= 128:
                raise Refuse(f"input/output scale {r:g} outside [1/256, 128]")


def _is_normal(v: float) -> bool:
    return v == v and v not in (float("inf"), float("-inf")) and abs(v) >= 1.1754943508222875e-38


def _scale_or_nan(c: Ctx, t: int) -> float:
    """GetTensorScaleOrDefault with NaN."""
    if c.f.type(t) in ("INT8", "UINT8") and c.qtype(t) == "affine":
        q = c.f.quant(t)
        if q.quantized_dimension == 0 and len(q.scale) == 1:
            return q.scale[0]
    return float("nan")


def _io_scale(c: Ctx, a: int, y: int, lo: float, hi: float) -> None:
    """CheckTensorsInputOutputScale."""
    if c.f.type(a) == c.f.type(y) and c.f.type(a) in ("INT8", "UINT8"):
        r = c.scale(a) / c.scale(y)
        if not lo <= r < hi:
            raise Refuse(f"input/output scale {r:g} outside [{lo:g}, {hi:g})")


def _binary(n: Node) -> None:
    c = n.c
    n.io(2, 1)
    a, b, y = n.i(0), n.i(1), n.out()
    c.shape(a, 0, MAX_DIMS)
    c.shape(b, 0, MAX_DIMS)
    op = n.name
    if op in ("ADD", "MUL", "SUB"):
        for t in (a, b, y):
            c.float_or_quint8(t)
        if not c.f.type(a) == c.f.type(b) == c.f.type(y):
            raise Refuse(f"mixed types {c.f.type(a)}, {c.f.type(b)} -> {c.f.type(y)}")
    else:  # DIV, MAXIMUM, MINIMUM, PRELU, SQUARED_DIFFERENCE
        for t in (a, b, y):
            c.float_(t)
    if op in ("ADD", "SUB"):
        _io_scale(c, a, y, 1 / 1024, 256)
        _io_scale(c, b, y, 1 / 1024, 256)
    if op == "MUL" and c.f.type(a) == c.f.type(b) == c.f.type(y) and c.f.type(a) in ("INT8",
                                                                                 "UINT8"):
        r = c.scale(a) * c.scale(b) / c.scale(y)
        if not 1 / 65536 <= r < 256:
            raise Refuse(f"product/output scale {r:g} outside [1/65536, 256)")
    if op in ("ADD", "DIV", "MUL", "SUB"):
        check_activation(n.o.get("fused_activation_function"))
    if op == "PRELU":
        c.static_unless_unpacked(b, "slope")


def _average_pool(n: Node) -> None:
    c = n.c
    n.io(1, 1)
    c.float_(n.i(0))
    c.float_(n.out())
    _pool_params(n)
    check_padding(n.o.get("padding"))
    check_activation(n.o.get("fused_activation_function"))


def _max_pool(n: Node) -> None:
    c = n.c
    n.io(1, 1)
    c.float32_or_quint8(n.i(0))
    c.float_or_quint8(n.out())
    _pool_params(n)
    check_padding(n.o.get("padding"))
    check_activation(n.o.get("fused_activation_function"))


def _concatenation(n: Node) -> None:
    c = n.c
    n.io((2, 5), 1)
    y = n.out()
    c.float_or_quint8(y)
    axis = n.o.get("axis", 0)
    for t in n.ins:
        if not axis < c.f.rank(t):
            raise Refuse(f"axis {axis} is a new dimension of tensor {t}")
    if c.f.type(y) == "UINT8":
        qy = c.f.quant(y)
        for t in n.ins:
            qt = c.f.quant(t)
            if not ((qt.legacy_zero_point if qt else 0) == qy.legacy_zero_point
                 and (qt.legacy_scale if qt else 0.0) == qy.legacy_scale):
                raise Refuse(f"input {t} and output quantization differ")
    for t in n.ins:
        c.float_or_quint8(t)


def _depth_to_space(n: Node) -> None:
    c = n.c
    n.io(1, 1)
    c.float_or_quint8(n.i(0))
    c.float_or_quint8(n.out())
    bs = n.o.get("block_size", 0)
    if not bs > 1:
        raise Refuse(f"block size {bs} is not above 1")


def _reduce(n: Node) -> None:
    c = n.c
    n.io(2, 1)
    x, axes = n.i(0), n.i(1)
    c.float_or_quint8(x)
    c.int32(axes)
    if not c.f.rank(axes) <= 1:
        raise Refuse(f"{c.desc(axes)}: axes must be 1-D")
    c.static(axes, "axes")
    values = c.f.values(axes)
    count = 0 if values is None else int(values.size)
    if not (count > 0 and not (count == 1 and int(values.reshape(-1)[0]) == 0
                            and c.f.rank(x) == 0)):
        raise Refuse("an empty reduction")
    if not count <= MAX_DIMS:
        raise Refuse(f"{count} reduction axes")
    c.float_or_quint8(n.out())


def _pad(n: Node) -> None:
    c = n.c
    n.io(2, 1)
    x, pads = n.i(0), n.i(1)
    c.float_or_quint8(x)
    c.shape(x, 1, MAX_DIMS)
    c.int32(pads)
    dims = c.f.shapes[pads]
    if not (len(dims) == 2 and dims[0] == c.f.rank(x) and dims[1] == 2):
        raise Refuse(f"{c.desc(pads)}: paddings must be [{c.f.rank(x)}, 2]")
    c.static(pads, "paddings")
    y = n.out()
    c.float_or_quint8(y)
    c.shape(y, 1, MAX_DIMS)
    values = c.f.values(pads)
    if not (values is not None and (values >= 0).all()):
        raise Refuse("negative padding")


def _reshape(n: Node) -> None:
    c = n.c
    n.io((1, 2), 1)
    x, y = n.i(0), n.out()
    c.float_or_quint8(x)
    c.shape(x, 0, MAX_DIMS)
    c.float_or_quint8(y)
    c.shape(y, 0, MAX_DIMS)
    if c.f.type(y) in ("UINT8", "INT8"):
        qx, qy = c.f.quant(x), c.f.quant(y)
        if not ((qx.legacy_zero_point if qx else 0) == (qy.legacy_zero_point if qy else 0)
             and (qx.legacy_scale if qx else 0.0) == (qy.legacy_scale if qy else 0.0)):
            raise Refuse("input and output quantization differ")
    if len(n.ins) == 2:
        s = n.i(1)
        c.int32(s)
        c.shape_tensor(s, squeeze=True)
        c.static(s, "new shape")
        values = c.f.values(s)
        shape = [] if values is None else [int(v) for v in values.reshape(-1)]
    else:
        shape = list(n.o.get("new_shape") or ())
    if not (not (len(shape) == 1 and shape[0] in (0, -1))):
        raise Refuse("the legacy scalar-to-scalar form")


def _resize_bilinear(n: Node) -> None:
    c = n.c
    n.io(2, 1)
    x, s = n.i(0), n.i(1)
    c.float32_or_quint8(x)
    c.shape(x, 4)
    c.int32(s)
    c.shape_tensor(s, squeeze=False)
    c.static(s, "size")
    y = n.out()
    c.float_or_quint8(y)
    c.shape(y, 4)
    values = c.f.values(s)
    if values is not None:  # the delegate reads as many values as the size tensor's rank
        flat = values.reshape(-1)
        for i in range(min(c.f.rank(s), flat.size)):
            if not int(flat[i]) > 0:
                raise Refuse(f"output size {int(flat[i])} is not positive")


def _slice(n: Node) -> None:
    c = n.c
    x, begin, size, y = n.i(0), n.i(1), n.i(2), n.out()
    c.shape_tensor(begin, squeeze=False)
    c.static(begin, "begin")
    c.int32_or_int64(begin)
    c.shape_tensor(size, squeeze=False)
    c.static(size, "size")
    c.int32_or_int64(size)
    c.dim_match(begin, size, 0)
    c.float_or_quint8(x)
    c.float_or_quint8(y)
    values = c.f.values(size)
    if not (values is not None and (values > 0).all()):
        raise Refuse("a slice size is not positive")


def _softmax(n: Node) -> None:
    c = n.c
    beta = n.o.get("beta", 0.0)
    if not beta == 1.0:
        raise Refuse(f"beta {beta:g} is not 1")
    n.io(1, 1)
    c.float_(n.i(0))
    c.float_(n.out())


def _space_to_depth(n: Node) -> None:
    c = n.c
    n.io(1, 1)
    x = n.i(0)
    c.float32_or_quint8(x)
    c.float_or_quint8(n.out())
    bs = n.o.get("block_size", 0)
    if not bs > 1:
        raise Refuse(f"block size {bs} is not above 1")
    h, w = c.f.shapes[x][1], c.f.shapes[x][2]
    if not (h % bs == 0 and w % bs == 0):
        raise Refuse(f"{h}x{w} is not a multiple of block size {bs}")


def _split(n: Node) -> None:
    c = n.c
    if not n.o.get("num_splits", 0) == len(n.outs):
        raise Refuse("num_splits differs from the outputs")
    if not len(n.ins) == 2:
        raise Refuse(f"{len(n.ins)} inputs")
    if not 2 <= len(n.outs) <= 4:
        raise Refuse(f"{len(n.outs)} outputs; XNNPACK splits in 2 to 4")
    d = n.i(0)
    c.int32(d)
    c.static(d, "split dimension")
    c.float_or_quint8(n.i(1))
    for t in n.outs:
        c.float_or_quint8(t)


def _transpose(n: Node) -> None:
    c = n.c
    n.io(2, 1)
    x = n.i(0)
    c.float_or_quint8(x)
    c.shape(x, 1, MAX_DIMS)
    c.static(n.i(1), "permutation")


def _strided_slice(n: Node) -> None:
    c = n.c
    o = n.o
    if not (not (o.get("ellipsis_mask", 0) or o.get("new_axis_mask", 0)
              or o.get("shrink_axis_mask", 0))):
        raise Refuse("ellipsis, new-axis or shrink-axis mask")
    x, begin, end, strides = n.i(0), n.i(1), n.i(2), n.i(3)
    c.shape_tensor(strides, squeeze=False)
    c.static(strides, "strides")
    c.int32(strides)
    values = c.f.values(strides)
    if not (values is not None and (values == 1).all()):
        raise Refuse("a stride other than 1")
    for t, what in ((begin, "begin"), (end, "end")):
        c.shape_tensor(t, squeeze=False)
        c.static(t, what)
        c.int32(t)
    for t in (begin, end, strides):
        dims = c.f.shapes[t]
        if not (len(dims) == 1 and dims[0] == c.f.rank(x)):
            raise Refuse(f"{c.desc(t)}: must hold one value per input dimension")
    c.dim_match(strides, begin, 0)
    c.dim_match(begin, end, 0)
    c.float_or_quint8(x)
    c.float_or_quint8(n.out())


def _var_handle(n: Node) -> None:
    """VisitVarHandleNode: note which handle the resource tensor holds; the delegate
    claims the VAR_HANDLE at the end, once a READ or ASSIGN of it has a proxy value."""
    opts = n.c.f.operator(n.k).builtin_options
    key = (opts.get("container") or "", opts.get("shared_name") or "")
    global_id = n.c.var_handles.setdefault(key, len(n.c.var_handles))
    res = n.c.resource(n.out())
    if res.global_id in (-1, global_id):  # ResourceInfo::SetVarHandle (result unchecked)
        res.global_id, res.var_handle = global_id, n.k
    raise Refuse("VAR_HANDLE: taken only with the variable's reads and writes")


def _proxy(n: Node, resource: int, value: int) -> None:
    """ResourceInfo::AddProxyValue: every read and write of a variable must agree on its
    type and shape, and a VAR_HANDLE must have created it in this subgraph."""
    res = n.c.resource(resource)
    if res.var_handle < 0:
        raise Refuse(f"no VAR_HANDLE of resource {resource} before it in this subgraph")
    if res.proxy < 0:
        res.proxy = value
        return
    f = n.c.f
    if f.type(res.proxy) != f.type(value) or f.shapes[res.proxy] != f.shapes[value]:
        raise Refuse(f"tensor {value} disagrees in type or shape with the variable's other "
                     f"uses (tensor {res.proxy})")


def _read_variable(n: Node) -> None:
    y = n.out()
    if n.c.f.rank(y) == 0:
        raise Refuse(f"{n.c.desc(y)}: a scalar (or unranked) variable")
    n.c.float_or_quint8(y)
    _proxy(n, n.i(0), y)


def _assign_variable(n: Node) -> None:
    x = n.i(1)
    n.c.float_or_quint8(x)
    _proxy(n, n.i(0), x)


def _never(reason: str) -> Callable[[Node], None]:
    def check(n: Node) -> None:
        raise Refuse(reason)
    return check


VISIT: dict[str, Callable[[Node], None]] = {
    **{op: _unary for op in ("ABS", "CEIL", "COS", "DEQUANTIZE", "ELU", "EXP", "FLOOR", "GELU",
                             "HARD_SWISH", "LEAKY_RELU", "LOGISTIC", "LOG", "NEG", "QUANTIZE",
                             "RELU", "RELU6", "RELU_N1_TO_1", "ROUND", "RSQRT", "SIN", "SQRT",
                             "SQUARE", "TANH")},
    **{op: _binary for op in ("ADD", "DIV", "MAXIMUM", "MINIMUM", "MUL", "PRELU",
                              "SQUARED_DIFFERENCE", "SUB")},
    "ASSIGN_VARIABLE": _assign_variable, "READ_VARIABLE": _read_variable,
    "VAR_HANDLE": _var_handle,
    "AVERAGE_POOL_2D": _average_pool, "BATCH_MATMUL": batch_matmul,
    "CONCATENATION": _concatenation, "CONV_2D": conv2d, "DEPTHWISE_CONV_2D": depthwise,
    "DEPTH_TO_SPACE": _depth_to_space,
    "EXPAND_DIMS": _never("XNNPACK's EXPAND_DIMS is switched off in this release"),
    "FULLY_CONNECTED": fully_connected, "MAX_POOL_2D": _max_pool,
    **{op: _reduce for op in ("REDUCE_MIN", "REDUCE_MAX", "SUM", "MEAN")},
    "PAD": _pad, "RESHAPE": _reshape, "RESIZE_BILINEAR": _resize_bilinear, "SLICE": _slice,
    "SOFTMAX": _softmax, "SPACE_TO_DEPTH": _space_to_depth, "SPLIT": _split,
    "STRIDED_SLICE": _strided_slice, "TRANSPOSE": _transpose, "TRANSPOSE_CONV": transpose_conv,
}
CUSTOM: dict[str, Callable[[Node], None]] = {
    "Convolution2DTransposeBias": mediapipe_deconv,
    "MaxPoolingWithArgmax2D": lambda n: mediapipe_pool(n, unpool=False),
    "MaxUnpooling2D": lambda n: mediapipe_pool(n, unpool=True),
    "odml.scaled_dot_product_attention": attention,
}


def visit(c: Ctx, k: int) -> str | None:
    """Why the delegate does not claim operator ``k`` (None: it claims it)."""
    b = c.f.builtin[k]
    if b == "CUSTOM":
        fn = CUSTOM.get(c.f.custom[k] or "")
        missing = f"custom op {c.f.custom[k]!r} is not one XNNPACK implements"
    elif b == "STABLEHLO_COMPOSITE":
        name = c.f.operator(k).builtin_options_2.get("name")
        fn = attention if name == "odml.scaled_dot_product_attention" else None
        missing = f"composite {name!r} is not one XNNPACK implements"
    else:
        fn = VISIT.get(b)
        missing = f"XNNPACK has no {b}"
    if fn is None:
        return missing
    try:
        fn(Node(c, k))
    except Refuse as exc:
        return str(exc.args[0])
    except (IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
        return f"malformed operator ({type(exc).__name__}: {exc})"
    return None
