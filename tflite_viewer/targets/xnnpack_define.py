"""What XNNPACK's delegate checks after it has claimed its operators: the tensors it then
cannot define, which make LiteRT's default interpreter fail on the model.

When the delegate builds a partition (``Subgraph::Create`` in google-ai-edge/LiteRT
``tflite/delegates/xnnpack/xnnpack_delegate.cc``), it defines every tensor its operators
read or write (``DefineXNNPACKValue``), and each needs an XNNPACK datatype
(``GetXNNPackDatatype``).  The claim-time checks (`xnnpack_types`) do not look at every
quantization parameter, so an operator can be claimed and then fail here: the DELEGATE
node fails to prepare, and so does the model in LiteRT's interpreter with its default
delegate (``BUILTIN_WITHOUT_DEFAULT_DELEGATES`` still runs it on the CPU kernels).  The
common case: a weight quantized per channel or per block where a channel or block is all
zeros, which quantizers give a scale of 0 ("unsupported scale value (0.000000) in channel
0 for INT4 tensor ...").

Transcribed: ``GetXNNPackDatatype`` with ``CheckAffineQuantization``,
``CheckZeroPointForPerTensorQuantization``, ``CheckZeroPointForPerChannelQuantization`` and
``CheckFp16Scale``, and which tensors of which operators ``Subgraph::Create`` defines.
"""
from __future__ import annotations

import numpy as np

from ..delegation.facts import SubgraphFacts
from ..delegation.xnnpack_types import Ctx, _normal

#: operators whose inputs other than these are parameters, not XNNPACK values
_DEFINED_INPUTS = {
    **{op: (0,) for op in ("EXPAND_DIMS", "MEAN", "PAD", "REDUCE_MAX", "REDUCE_MIN", "SUM",
                           "RESHAPE", "RESIZE_BILINEAR", "STRIDED_SLICE", "SLICE",
                           "TRANSPOSE")},
    "SPLIT": (1,),
}
_ZERO_POINTS = {"INT8": (-128, 127), "INT4": (-8, 7), "INT2": (-2, 1)}
#: types that always have an XNNPACK datatype (a FLOAT16 tensor also stands for the output
#: of its skipped DEQUANTIZE); RESOURCE tensors are defined through the variable's value,
#: which is checked where it is read or written
_FLOATS = frozenset({"FLOAT32", "FLOAT16", "RESOURCE"})


def _defined(f: SubgraphFacts, k: int) -> list[int]:
    """The tensors of operator ``k`` the delegate defines as XNNPACK values."""
    ins = f.inputs[k]
    b = f.builtin[k]
    if b in _DEFINED_INPUTS:
        ins = tuple(ins[i] for i in _DEFINED_INPUTS[b] if i < len(ins))
    elif b == "TRANSPOSE_CONV":
        ins = ins[1:]
    return [t for t in ins + f.outputs[k] if t >= 0]


def _affine(c: Ctx, t: int) -> str | None:
    """CheckAffineQuantization."""
    q = c.f.quant(t)
    if not q.zero_point:
        return "no zero point"
    if len(q.scale) != len(q.zero_point) and len(q.zero_point) != 1:
        return f"{len(q.scale)} scales but {len(q.zero_point)} zero points"
    for i, s in enumerate(q.scale):
        if not (s > 0 and _normal(s)):
            return f"scale {s:g} of channel {i} is not a positive normal number"
    return None


def _per_channel_zero_points(c: Ctx, t: int) -> str | None:
    """CheckZeroPointForPerChannelQuantization: 0, or 8 for INT4."""
    ty = c.f.type(t)
    for i, zp in enumerate(c.f.quant(t).zero_point):
        if zp != 0 and not (ty == "INT4" and zp == 8):
            return f"zero point {zp} of channel {i} (XNNPACK takes 0 per channel)"
    return None


def _blockwise(c: Ctx, t: int) -> str | None:
    """The blockwise branch: INT4 only, FLOAT16 scales (read as FLOAT16 whatever their
    type, as ``CheckFp16Scale`` reads them) positive and normal, one per block."""
    f = c.f
    if f.type(t) != "INT4":
        return "blockwise quantization of a tensor that is not INT4"
    s = f.block_scales(t)
    raw = f.values(s) if 0 <= s < f.tensor_count else None
    if raw is None:
        return "its block scales cannot be read"
    n = raw.size
    scales = np.frombuffer(np.ascontiguousarray(raw).tobytes(), np.float16)[:n]
    scales = scales.astype(np.float32)
    bad = np.flatnonzero(~((scales > 0) & np.isfinite(scales)
                           & (np.abs(scales) >= 1.1754943508222875e-38)))
    if bad.size:
        i = int(bad[0])
        where = (f" (row {i // raw.shape[-1]}, block {i % raw.shape[-1]})"
                 if raw.ndim == 2 and raw.shape[-1] else "")
        more = f", and {bad.size - 1} more" if bad.size > 1 else ""
        return (f"block scale {float(scales[i]):g} at index {i}{where}{more} is not a "
                "positive normal number (a quantizer gives a block of zero weights scale 0)")
    elements = f.num_elements(t)
    block = f.block_size(t)
    if not n or elements // n != block:
        return f"{elements} values, {n} block scales and block size {block} do not agree"
    return None


def datatype_failure(c: Ctx, t: int) -> str | None:
    """Why ``GetXNNPackDatatype`` has no XNNPACK datatype for tensor ``t`` (None: it has)."""
    f = c.f
    ty = f.type(t)
    if ty in ("FLOAT32", "FLOAT16"):
        return None
    kind = c.qtype(t)
    if ty == "UINT8" or ty == "INT32":
        if kind != "affine":
            return f"{ty} tensor without affine quantization"
        why = _affine(c, t)
        if why:
            return why
        q = f.quant(t)
        if ty == "UINT8":
            if len(q.scale) != 1:
                return f"{len(q.scale)} scales for a UINT8 tensor"
            zp = q.zero_point[0]
            return None if 0 <= zp <= 255 else f"zero point {zp} outside [0, 255]"
        if q.quantized_dimension != 0:
            return f"INT32 quantized on dimension {q.quantized_dimension}"
        why = _per_channel_zero_points(c, t)
        if why:
            return why
        if len(q.scale) == 1 or (f.rank(t) >= 1 and len(q.scale) == f.shapes[t][0]):
            return None
        return f"{len(q.scale)} scales for dimension 0 of size {f.shapes[t][:1]}"
    if ty not in _ZERO_POINTS:
        return f"XNNPACK has no datatype for {ty}"
    if kind == "blockwise":
        return _blockwise(c, t)
    if kind != "affine":
        return f"{ty} tensor with {kind} quantization"
    why = _affine(c, t)
    if why:
        return why
    q = f.quant(t)
    if len(q.scale) == 1:
        lo, hi = _ZERO_POINTS[ty]
        zp = q.zero_point[0]
        return None if lo <= zp <= hi else f"zero point {zp} outside [{lo}, {hi}]"
    dims = f.shapes[t]
    if not (dims and 0 <= q.quantized_dimension < len(dims)
            and len(q.scale) == dims[q.quantized_dimension]):
        return f"{len(q.scale)} scales do not match dimension {q.quantized_dimension}"
    return _per_channel_zero_points(c, t)


def failures(c: Ctx, taken: dict[int, int], unpack: dict[int, int]
             ) -> dict[int, tuple[int, str]]:
    """Operator -> (tensor, why) for each operator of a partition (``taken``: operator ->
    partition) with a tensor the delegate cannot define, the lowest such tensor first (the
    delegate defines them in index order).  The unpacking DEQUANTIZE/DENSIFY operators
    define nothing; float tensors always have a datatype, so only the others are looked
    at, each once."""
    f = c.f
    producer, consumers = f.producer, f.consumers
    out: dict[int, tuple[int, str]] = {}
    for t, ty in enumerate(f.types):
        if ty in _FLOATS:
            continue
        users = ([producer[t]] if t in producer else []) + consumers.get(t, [])
        users = [k for k in users if k in taken and k not in unpack and t in _defined(f, k)]
        if not users:
            continue
        why = datatype_failure(c, t)
        if why:
            for k in users:
                out.setdefault(k, (t, why))
    return out
