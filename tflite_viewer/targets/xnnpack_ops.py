"""Which operators XNNPACK's delegate claims: one function per operator kind.

Transcribed from google-ai-edge/LiteRT ``tflite/delegates/xnnpack/xnnpack_delegate.cc``
(``Subgraph::VisitNode`` and the ``Visit*Node`` functions, their checks only: what they
do when the delegate builds its XNNPACK subgraph is not needed to know whether it claims
the operator).  Each function raises `Refuse` with the first check that fails, in the
delegate's order; returning means the delegate claims the operator.
"""
from __future__ import annotations

import struct
from collections.abc import Callable

from .xnnpack_types import MAX_DIMS, Ctx, Refuse

_ACT_OK = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6")
_C_PADDING = {1: "SAME", 2: "VALID"}  # TfLitePadding of a raw params struct
_C_ACT = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT",
          6: "SIGMOID"}


class Node:
    """An operator as the checks see it: tensors, options (C zero defaults when the
    file has no options table, as LiteRT's parser leaves its params struct)."""

    def __init__(self, c: Ctx, k: int) -> None:
        self.c, self.k = c, k
        self.ins = c.f.inputs[k]
        self.outs = c.f.outputs[k]
        self.o = c.f.options(k) or {}
        self.name = c.f.op_name(k)

    def i(self, n: int) -> int:
        if not n < len(self.ins):
            raise Refuse(f"input {n} missing")
        t = self.ins[n]
        if not t >= 0:
            raise Refuse(f"optional input {n} omitted")
        return t

    def out(self, n: int = 0) -> int:
        if not n < len(self.outs):
            raise Refuse(f"output {n} missing")
        return self.outs[n]

    def io(self, n_in, n_out) -> None:
        """CheckNumInputsAndOutputs: an exact count or a (min, max) range."""
        for count, want, what in ((len(self.ins), n_in, "inputs"), (len(self.outs), n_out,
                                                                     "outputs")):
            lo, hi = want if isinstance(want, tuple) else (want, want)
            if not lo <= count <= hi:
                raise Refuse(f"{count} {what}; XNNPACK's {self.name} takes "
                             + (f"{lo}" if lo == hi else f"{lo} to {hi}"))


def _activation(act: str | None) -> None:
    """ConvertActivationToOutputRange: only clamps fuse."""
    act = act or "NONE"
    if not (act in _ACT_OK or act not in _C_ACT.values()):
        raise Refuse(f"fused activation {act}: XNNPACK fuses only RELU, RELU6 and RELU_N1_TO_1")


def _padding(p: str | None) -> None:
    if not p in ("SAME", "VALID"):
        raise Refuse(f"padding {p or 'unset'} is not SAME or VALID")


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
        _activation(n.o.get("fused_activation_function"))
    if op == "PRELU":
        c.static_unless_unpacked(b, "slope")


def _average_pool(n: Node) -> None:
    c = n.c
    n.io(1, 1)
    c.float_(n.i(0))
    c.float_(n.out())
    _pool_params(n)
    _padding(n.o.get("padding"))
    _activation(n.o.get("fused_activation_function"))


def _max_pool(n: Node) -> None:
    c = n.c
    n.io(1, 1)
    c.float32_or_quint8(n.i(0))
    c.float_or_quint8(n.out())
    _pool_params(n)
    _padding(n.o.get("padding"))
    _activation(n.o.get("fused_activation_function"))


def _batch_matmul(n: Node) -> None:
    c = n.c
    a, b = n.i(0), n.i(1)
    c.float_or_quint8(a)
    rank_b = c.f.rank(b)
    c.float32_or_qcint8(b, rank_b - 2 if n.o.get("adj_y") else rank_b - 1)
    dq = c.f.type(a) == "FLOAT32" and c.f.type(b) == "INT8"
    if c.f.type(b) == "INT8" and not dq:
        q = c.f.quant(b)
        if q is not None and q.scale:
            zp = q.zero_point[0] if len(q.scale) > 1 else q.legacy_zero_point
            if not zp == 0:
                raise Refuse(f"input 1 zero point {zp} is not 0")
    c.float_or_quint8(n.out())
    if not (_xnn_datatype(c, a) == _xnn_datatype(c, b) or dq):
        raise Refuse(f"mixed types {c.f.type(a)} and {c.f.type(b)}")
    if not c.f.rank(a) >= 2:
        raise Refuse(f"{c.desc(a)}: rank below 2")
    if not rank_b >= 2:
        raise Refuse(f"{c.desc(b)}: rank below 2")


def _xnn_datatype(c: Ctx, t: int) -> str:
    """GetXNNPackDatatype, coarsely: enough to compare two tensors' kinds."""
    ty = c.f.type(t)
    if ty in ("INT8", "INT4", "INT2") and c.qtype(t) == "affine":
        return ("q" if len(c.f.quant(t).scale) == 1 else "qc") + ty
    return ty


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


def _conv_params(n: Node, depthwise: bool) -> None:
    o = n.o
    if not (o.get("stride_w", 0) > 0 and o.get("stride_h", 0) > 0):
        raise Refuse("stride is not positive")
    if depthwise:
        dm = o.get("depth_multiplier", 0)
        if not dm > 0:
            raise Refuse(f"depth multiplier {dm} is not positive")
        channels = n.c.f.shapes[n.ins[1]][3]
        if not channels % dm == 0:
            raise Refuse(f"depth multiplier {dm} does not divide {channels} channels")
    if not (o.get("dilation_w_factor", 0) > 0 and o.get("dilation_h_factor", 0) > 0):
        raise Refuse("dilation is not positive")


def _conv2d(n: Node) -> None:
    c = n.c
    _conv_params(n, depthwise=False)
    n.io(3, 1)
    x = n.i(0)
    c.float_or_quint8(x)
    c.shape(x, 4)
    w = n.i(1)
    c.float32_or_qcint8(w, 0)
    c.shape(w, 4)
    c.static_unless_unpacked(w, "filter")
    bias = n.ins[2]
    if not bias >= 0:
        raise Refuse("CONV_2D without bias")
    c.float_or_qcint32(bias)
    c.shape(bias, 1)
    c.static_unless_unpacked(bias, "bias")
    c.filter_and_bias(w, bias)
    y = n.out()
    c.float_or_quint8(y)
    c.shape(y, 4)
    tx, tw, ty = c.f.type(x), c.f.type(w), c.f.type(y)
    dq = not c.flags.disable_dynamically_quantized_ops and tx == "FLOAT32" and tw == "INT8"
    if not (tx == ty and (tx == tw or dq)):
        raise Refuse(f"mixed types {tx}, {tw} -> {ty}")
    in_ch = c.f.shapes[w][3]
    if not c.f.shapes[x][3] // in_ch != 0:
        raise Refuse("zero groups")
    _padding(n.o.get("padding"))
    _activation(n.o.get("fused_activation_function"))


def _depthwise(n: Node) -> None:
    c = n.c
    n.io(3, 1)
    x = n.i(0)
    c.float_or_quint8(x)
    c.shape(x, 4)
    w = n.i(1)
    c.float32_or_qcint8(w, 3)
    c.shape(w, 4)
    c.static_unless_unpacked(w, "filter")
    bias = n.ins[2]
    if not bias >= 0:
        raise Refuse("DEPTHWISE_CONV_2D without bias")
    c.float_or_qcint32(bias)
    c.shape(bias, 1)
    c.static_unless_unpacked(bias, "bias")
    c.filter_and_bias(w, bias)
    y = n.out()
    c.float_or_quint8(y)
    c.shape(y, 4)
    tx, tw, ty = c.f.type(x), c.f.type(w), c.f.type(y)
    if not tx == ty == tw:
        raise Refuse(f"mixed types {tx}, {tw} -> {ty} (no hybrid depthwise)")
    _conv_params(n, depthwise=True)
    _padding(n.o.get("padding"))
    _activation(n.o.get("fused_activation_function"))


def _depth_to_space(n: Node) -> None:
    c = n.c
    n.io(1, 1)
    c.float_or_quint8(n.i(0))
    c.float_or_quint8(n.out())
    bs = n.o.get("block_size", 0)
    if not bs > 1:
        raise Refuse(f"block size {bs} is not above 1")


def _fully_connected(n: Node) -> None:
    c = n.c
    if not c.f.version[n.k] != 8:
        raise Refuse("version 8 (sparse weights)")
    if not n.o.get("weights_format", "DEFAULT") == "DEFAULT":
        raise Refuse("shuffled weights format")
    n.io((2, 3), 1)
    x = n.i(0)
    c.float_or_quint8(x)
    w = n.i(1)
    c.shape(w, 2)
    dyn = c.flags.dynamic_fully_connected
    if not (dyn and c.f.type(w) == "FLOAT32"):
        c.filter_type(w, 0)
        c.static_unless_unpacked(w, "weights")
    out_ch, in_ch = c.f.shapes[w]
    if len(n.ins) >= 3 and n.ins[2] >= 0:
        bias = n.ins[2]
        if not (dyn and c.f.type(bias) == "FLOAT32"):
            nb = c.f.num_elements(bias)
            if not nb == out_ch:
                raise Refuse(f"bias has {nb} elements for {out_ch} output channels")
            c.float_or_qcint32(bias)
            c.static_unless_unpacked(bias, "bias")
        c.filter_and_bias(w, bias)
    y = n.out()
    c.float_or_quint8(y)
    tx, tw, ty = c.f.type(x), c.f.type(w), c.f.type(y)
    dq = (not c.flags.disable_dynamically_quantized_ops and tx in ("FLOAT32", "FLOAT16")
          and tw in ("INT2", "INT4", "INT8"))
    srq = tx == "INT8" and tw in ("INT2", "INT4", "INT8")
    if not (tx == ty and (tx == tw or dq or srq)):
        raise Refuse(f"mixed types {tx}, {tw} -> {ty}")
    if not dq and tw == "INT8":
        q = c.f.quant(w)
        zp = q.legacy_zero_point if q else 0
        if not zp == 0:
            raise Refuse(f"weights zero point {zp} is not 0")
    if not (not (tw == "INT4" and in_ch % 2 == 1)):
        raise Refuse(f"INT4 weights with {in_ch} (odd) inputs")
    if not (not (tw == "INT2" and in_ch % 4 != 0)):
        raise Refuse(f"INT2 weights with {in_ch} inputs")
    _activation(n.o.get("fused_activation_function"))


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


def _transpose_conv(n: Node) -> None:
    c = n.c
    n.io((3, 4), 1)
    shape_t = n.i(0)
    c.int32(shape_t)
    c.shape_tensor(shape_t, squeeze=False)
    c.static(shape_t, "output shape")
    if not c.f.shapes[shape_t][0] == 4:
        raise Refuse("output shape is not 4-D")
    w = n.i(1)
    c.shape(w, 4)
    c.static_unless_unpacked(w, "filter")
    x = n.i(2)
    c.float32_or_quint8(x)
    c.shape(x, 4)
    c.float32_or_qcint8(w, 0)
    if len(n.ins) >= 4 and n.ins[3] >= 0:
        b = n.ins[3]
        c.float_or_qcint32(b)
        c.shape(b, 1)
        c.static_unless_unpacked(b, "bias")
    y = n.out()
    c.float32_or_quint8(y)
    c.shape(y, 4)
    oc, kh, kw, ic = c.f.shapes[w]
    out_shape = [int(v) for v in c.f.values(shape_t).reshape(-1)]
    if not oc == out_shape[3]:
        raise Refuse(f"filter has {oc} output channels, output shape {out_shape[3]}")
    if not ic == c.f.shapes[x][3]:
        raise Refuse(f"filter has {ic} input channels, input {c.f.shapes[x][3]}")
    _transpose_conv_padding(n.o.get("padding"), c.f.shapes[x][1:3], (kh, kw),
                            (n.o.get("stride_h", 0), n.o.get("stride_w", 0)), out_shape[1:3])
    _activation(n.o.get("fused_activation_function"))


def _transpose_conv_padding(padding, in_hw, k_hw, s_hw, out_hw) -> None:
    """CalculateTransposeConvPaddings (dilation 1)."""
    (ih, iw), (kh, kw), (sh, sw), (oh, ow) = in_hw, k_hw, s_hw, out_hw
    if padding == "VALID":
        if not (kh <= oh and kw <= ow):
            raise Refuse(f"output {oh}x{ow} smaller than the kernel {kh}x{kw}")
    elif padding == "SAME":
        if not (sh > 0 and sw > 0):
            raise Refuse("stride is not positive")
        if not ((oh + sh - 1) // sh == ih and (ow + sw - 1) // sw == iw):
            raise Refuse(f"input {ih}x{iw} does not match output {oh}x{ow} at stride {sh}x{sw}")
        if not (kh >= sh and kw >= sw):
            raise Refuse(f"stride {sh}x{sw} larger than the kernel {kh}x{kw}")
    else:
        raise Refuse(f"padding {padding or 'unset'} is not SAME or VALID")


def _c_struct(n: Node, fields: int) -> list[int]:
    """A MediaPipe custom op's params: the C struct copied byte for byte."""
    raw = bytes(n.c.f.operator(n.k).custom_options_bytes or b"")
    raw = (raw + bytes(4 * fields))[:4 * fields]
    return list(struct.unpack(f"<{fields}i", raw))


def _mediapipe_deconv(n: Node) -> None:
    c = n.c
    n.io(3, 1)
    x, w, b, y = n.i(0), n.i(1), n.i(2), n.out()
    for t, rank in ((x, 4), (w, 4)):
        c.float32(t)
        c.shape(t, rank)
    c.static_unless_unpacked(w, "filter")
    c.float32(b)
    c.shape(b, 1)
    c.static_unless_unpacked(b, "bias")
    c.float32(y)
    c.shape(y, 4)
    padding, sw, sh = _c_struct(n, 3)
    if not (sw > 0 and sh > 0):
        raise Refuse("stride is not positive")
    _, kh, kw, _ = c.f.shapes[w]
    _transpose_conv_padding(_C_PADDING.get(padding), c.f.shapes[x][1:3], (kh, kw), (sh, sw),
                            c.f.shapes[y][1:3])


def _mediapipe_pool(n: Node, unpool: bool) -> None:
    c = n.c
    if unpool:
        n.io(2, 1)
        c.float32(n.i(0))
        c.shape(n.i(0), 4)
        c.shape(n.i(1), 4)
        c.float32(n.out())
        c.shape(n.out(), 4)
    else:
        n.io(1, 2)
        c.float32(n.i(0))
        c.shape(n.i(0), 4)
        c.float32(n.out(0))
        c.shape(n.out(0), 4)
        c.shape(n.out(1), 4)
    padding, sw, sh, fw, fh, act = _c_struct(n, 6)
    if not (sw > 0 and sh > 0 and fw > 0 and fh > 0):
        raise Refuse("stride or filter is not positive")
    if not (fw == sw and fh == sh):
        raise Refuse("filter and stride differ")
    if not _C_ACT.get(act, "NONE") not in ("TANH", "SIGN_BIT", "SIGMOID"):
        raise Refuse(f"fused activation {_C_ACT.get(act)}")
    if not _C_ACT.get(act) is not None:
        raise Refuse(f"fused activation {act}")
    _padding(_C_PADDING.get(padding))


def _attention(n: Node) -> None:
    c = n.c
    q, k, v = n.i(0), n.i(1), n.i(2)
    for t in (q, k, v):
        c.float32(t)
    mask = n.i(3) if len(n.ins) > 3 else None
    if mask is not None:
        c.float32(mask)
    c.float32(n.out())
    sq, sk, sv = c.f.shapes[q], c.f.shapes[k], c.f.shapes[v]
    if not sq[-1:] == sk[-1:] == sv[-1:]:
        raise Refuse("query, key and value head sizes differ")
    if mask is not None:
        sm = c.f.shapes[mask]
        if not (len(sk) > 1 and len(sv) > 1 and sk[1] == sm[-1] == sv[1]):
            raise Refuse("mask and key/value sequence lengths differ")


def _variable_op(n: Node) -> None:
    if not n.c.flags.variable_ops:
        raise Refuse("variable operators are off in the default delegate")
    raise Refuse("variable operators are not modelled")


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
    "ASSIGN_VARIABLE": _variable_op, "READ_VARIABLE": _variable_op, "VAR_HANDLE": _variable_op,
    "AVERAGE_POOL_2D": _average_pool, "BATCH_MATMUL": _batch_matmul,
    "CONCATENATION": _concatenation, "CONV_2D": _conv2d, "DEPTHWISE_CONV_2D": _depthwise,
    "DEPTH_TO_SPACE": _depth_to_space,
    "EXPAND_DIMS": _never("XNNPACK's EXPAND_DIMS is switched off in this release"),
    "FULLY_CONNECTED": _fully_connected, "MAX_POOL_2D": _max_pool,
    **{op: _reduce for op in ("REDUCE_MIN", "REDUCE_MAX", "SUM", "MEAN")},
    "PAD": _pad, "RESHAPE": _reshape, "RESIZE_BILINEAR": _resize_bilinear, "SLICE": _slice,
    "SOFTMAX": _softmax, "SPACE_TO_DEPTH": _space_to_depth, "SPLIT": _split,
    "STRIDED_SLICE": _strided_slice, "TRANSPOSE": _transpose, "TRANSPOSE_CONV": _transpose_conv,
}
CUSTOM: dict[str, Callable[[Node], None]] = {
    "Convolution2DTransposeBias": _mediapipe_deconv,
    "MaxPoolingWithArgmax2D": lambda n: _mediapipe_pool(n, unpool=False),
    "MaxUnpooling2D": lambda n: _mediapipe_pool(n, unpool=True),
    "odml.scaled_dot_product_attention": _attention,
}


def visit(c: Ctx, k: int) -> str | None:
    """Why the delegate does not claim operator ``k`` (None: it claims it)."""
    b = c.f.builtin[k]
    if b == "CUSTOM":
        fn = CUSTOM.get(c.f.custom[k] or "")
        missing = f"custom op {c.f.custom[k]!r} is not one XNNPACK implements"
    elif b == "STABLEHLO_COMPOSITE":
        name = c.f.operator(k).builtin_options_2.get("name")
        fn = _attention if name == "odml.scaled_dot_product_attention" else None
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
