"""XNNPACK's checks for the operators with weights: convolutions, FULLY_CONNECTED,
BATCH_MATMUL, TRANSPOSE_CONV, MediaPipe's custom convolution and pooling ops, attention.

Transcribed from google-ai-edge/LiteRT ``tflite/delegates/xnnpack/xnnpack_delegate.cc``
(``VisitConv2DNode``, ``VisitDepthwiseConv2DNode``, ``VisitFullyConnectedNode``,
``VisitBatchMatMulNode``, ``VisitTransposeConvNode``, ``VisitMediaPipe*Node``,
``VisitDotAttentionNode``), checks only, in the delegate's order (see `xnnpack_ops`).
"""
from __future__ import annotations

import struct

from .xnnpack_node import C_ACT, C_PADDING, Node, check_activation, check_padding
from .xnnpack_types import Ctx, Refuse

def batch_matmul(n: Node) -> None:
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


def _conv_tensors(n: Node, channel_axis: int, op: str) -> tuple[int, int, int]:
    """The input, filter (quantized along ``channel_axis``), bias and output checks both
    convolutions make, in XNNPACK's order; (input, filter, output)."""
    c = n.c
    n.io(3, 1)
    x = n.i(0)
    c.float_or_quint8(x)
    c.shape(x, 4)
    w = n.i(1)
    c.float32_or_qcint8(w, channel_axis)
    c.shape(w, 4)
    c.static_unless_unpacked(w, "filter")
    bias = n.ins[2]
    if not bias >= 0:
        raise Refuse(f"{op} without bias")
    c.float_or_qcint32(bias)
    c.shape(bias, 1)
    c.static_unless_unpacked(bias, "bias")
    c.filter_and_bias(w, bias)
    y = n.out()
    c.float_or_quint8(y)
    c.shape(y, 4)
    return x, w, y


def conv2d(n: Node) -> None:
    c = n.c
    _conv_params(n, depthwise=False)
    x, w, y = _conv_tensors(n, 0, "CONV_2D")
    tx, tw, ty = c.f.type(x), c.f.type(w), c.f.type(y)
    dq = not c.flags.disable_dynamically_quantized_ops and tx == "FLOAT32" and tw == "INT8"
    if not (tx == ty and (tx == tw or dq)):
        raise Refuse(f"mixed types {tx}, {tw} -> {ty}")
    in_ch = c.f.shapes[w][3]
    if not c.f.shapes[x][3] // in_ch != 0:
        raise Refuse("zero groups")
    check_padding(n.o.get("padding"))
    check_activation(n.o.get("fused_activation_function"))


def depthwise(n: Node) -> None:
    c = n.c
    x, w, y = _conv_tensors(n, 3, "DEPTHWISE_CONV_2D")
    tx, tw, ty = c.f.type(x), c.f.type(w), c.f.type(y)
    if not tx == ty == tw:
        raise Refuse(f"mixed types {tx}, {tw} -> {ty} (no hybrid depthwise)")
    _conv_params(n, depthwise=True)
    check_padding(n.o.get("padding"))
    check_activation(n.o.get("fused_activation_function"))

def fully_connected(n: Node) -> None:
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
    check_activation(n.o.get("fused_activation_function"))

def transpose_conv(n: Node) -> None:
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
    check_activation(n.o.get("fused_activation_function"))


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


def mediapipe_deconv(n: Node) -> None:
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
    _transpose_conv_padding(C_PADDING.get(padding), c.f.shapes[x][1:3], (kh, kw), (sh, sw),
                            c.f.shapes[y][1:3])


def mediapipe_pool(n: Node, unpool: bool) -> None:
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
    if not C_ACT.get(act, "NONE") not in ("TANH", "SIGN_BIT", "SIGMOID"):
        raise Refuse(f"fused activation {C_ACT.get(act)}")
    if not C_ACT.get(act) is not None:
        raise Refuse(f"fused activation {act}")
    check_padding(C_PADDING.get(padding))


def attention(n: Node) -> None:
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
