"""The tensor checks XNNPACK's delegate makes before it claims an operator.

Transcribed from google-ai-edge/LiteRT ``tflite/delegates/xnnpack/xnnpack_delegate.cc``
(the ``Check*`` helpers of its ``Subgraph`` class) and XNNPACK's ``src/tensor.c``
(``xnn_validate_quantized_tensor``, ``xnn_validate_channelwise_quantized_tensor``), as
built in the ai-edge-litert 2.3.0 wheel: signed and unsigned 8-bit quantized operators on
(XNNPACK_DELEGATE_ENABLE_QS8/QU8 are on in its default delegate), FULLY_CONNECTED with
dynamic weights off, FP16 not forced.

Variable operators are always on (``support_variable_ops`` returns true: the flags that
asked for them are deprecated).

A failed check raises `Refuse` with the reason in words; the operator then falls back to
LiteRT's CPU kernels.  Each check keeps the delegate's order, so the reason given is the
first one the delegate itself would hit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .facts import SubgraphFacts

MAX_DIMS = 6  # XNN_MAX_TENSOR_DIMS


class Refuse(Exception):
    """The delegate does not claim the operator; ``args[0]`` says why."""


def _normal(x: float) -> bool:
    """C's std::isnormal on a float (finite, non-zero, not subnormal)."""
    return math.isfinite(x) and abs(x) >= 1.1754943508222875e-38


@dataclass
class Flags:
    """The delegate options that change what it claims (the wheel's defaults)."""

    qs8: bool = True
    qu8: bool = True
    dynamic_fully_connected: bool = False
    disable_dynamically_quantized_ops: bool = False


@dataclass
class Resource:
    """ResourceInfo: the VAR_HANDLE that made a resource tensor, and the tensor standing
    for the variable's value (the first read or write the delegate accepted)."""

    global_id: int = -1
    var_handle: int = -1
    proxy: int = -1


@dataclass
class Ctx:
    """What the checks of one subgraph read: its facts, the delegate's flags, the
    tensors unpacked from static data before the checks run (outputs of DEQUANTIZE and
    DENSIFY of constants) and the float16 tensors whose DEQUANTIZE is skipped."""

    f: SubgraphFacts
    flags: Flags
    quasi_static: set[int] = field(default_factory=set)
    f16_for_f32: dict[int, int] = field(default_factory=dict)
    resources: dict[int, Resource] = field(default_factory=dict)  # per subgraph
    var_handles: dict[tuple[str, str], int] = field(default_factory=dict)  # the delegate's

    def resource(self, t: int) -> Resource:
        return self.resources.setdefault(t, Resource())

    # -- tensor facts as LiteRT holds them ---------------------------------------------------
    def qtype(self, t: int) -> str:
        """TfLiteQuantization.type: affine, blockwise, multi-axis or none."""
        q = self.f.quant(t)
        if q is None:
            return "none"
        if q.details == "BlockwiseQuantization":
            return "blockwise"
        if q.details == "MultiAxisQuantization":
            return "multiaxis"
        return "affine" if q.scale else "none"

    def tensor_type(self, t: int) -> str:
        """GetTensorType: FLOAT16 for the output of a skipped float16 DEQUANTIZE."""
        return "FLOAT16" if t in self.f16_for_f32 else self.f.type(t)

    def desc(self, t: int) -> str:
        return f"tensor {t} ({self.f.type(t)}{list(self.f.shapes[t])})"

    # -- the Check* helpers -----------------------------------------------------------------
    def _per_tensor(self, t: int, zero_points: bool = False) -> bool:
        q = self.f.quant(t)
        if self.qtype(t) != "affine" or q.quantized_dimension != 0 or len(q.scale) != 1:
            return False
        return not zero_points or len(q.zero_point) == 1

    def _unsupported(self, t: int, allowed: str) -> Refuse:
        return Refuse(f"{self.desc(t)}: XNNPACK takes {allowed} here")

    def float32(self, t: int) -> None:
        if self.f.type(t) != "FLOAT32":
            raise self._unsupported(t, "FLOAT32")

    def float_(self, t: int) -> None:
        if self.f.type(t) not in ("FLOAT32", "FLOAT16"):
            raise self._unsupported(t, "FLOAT32 or FLOAT16")

    def _q8(self, t: int, allow_uint8: bool) -> bool:
        """The INT8 (and UINT8) branches shared by the *QInt8/*QUInt8 checks: True when
        the tensor passes, a Refuse when its quantization is not per-tensor, False when
        the type is not one of them."""
        ty = self.f.type(t)
        if ty == "INT8" and self.flags.qs8:
            if not self._per_tensor(t):
                raise Refuse(f"{self.desc(t)}: XNNPACK takes only per-tensor quantization here")
            return True
        if ty == "UINT8" and allow_uint8 and self.flags.qu8:
            if not self._per_tensor(t, zero_points=True):
                raise Refuse(f"{self.desc(t)}: XNNPACK takes only per-tensor quantization here")
            return True
        return False

    def float_or_qint8(self, t: int) -> None:
        if self.f.type(t) in ("FLOAT32", "FLOAT16") or self._q8(t, allow_uint8=False):
            return
        raise self._unsupported(t, "FLOAT32, FLOAT16 or per-tensor INT8")

    def qint8_or_quint8(self, t: int) -> None:
        if self._q8(t, allow_uint8=True):
            return
        raise self._unsupported(t, "per-tensor INT8 or UINT8")

    def float32_or_quint8(self, t: int) -> None:
        if self.f.type(t) == "FLOAT32" or self._q8(t, allow_uint8=True):
            return
        raise self._unsupported(t, "FLOAT32 or per-tensor INT8/UINT8")

    def float_or_quint8(self, t: int) -> None:
        if self.f.type(t) in ("FLOAT32", "FLOAT16") or self._q8(t, allow_uint8=True):
            return
        raise self._unsupported(t, "FLOAT32, FLOAT16 or per-tensor INT8/UINT8")

    def validate_quantized(self, t: int, kind: str, zero_point: int, scale: float) -> None:
        """xnn_validate_quantized_tensor."""
        if not self.f.rank(t) <= MAX_DIMS:
            raise Refuse(f"{self.desc(t)}: more than {MAX_DIMS} dimensions")
        self._zero_point(t, kind, zero_point)
        if not (scale > 0 and _normal(scale)):
            raise Refuse(f"{self.desc(t)}: scale {scale:g} is not finite, normal and positive")

    def validate_channelwise(self, t: int, kind: str, zero_point: int,
                             scales: tuple[float, ...], channel_dim: int) -> None:
        """xnn_validate_channelwise_quantized_tensor."""
        dims = self.f.shapes[t]
        if not len(dims) > 0:
            raise Refuse(f"{self.desc(t)}: per-channel quantization of a scalar")
        if len(dims) > MAX_DIMS:
            raise Refuse(f"{self.desc(t)}: more than {MAX_DIMS} dimensions")
        if not 0 <= channel_dim < len(dims):
            raise Refuse(f"{self.desc(t)}: channel dimension {channel_dim} out of range")
        self._zero_point(t, kind, zero_point)
        for c in range(min(dims[channel_dim], len(scales))):
            if not (scales[c] > 0 and _normal(scales[c])):
                raise Refuse(f"{self.desc(t)}: scale {scales[c]:g} of channel {c} is not "
                             "finite, normal and positive")

    def _zero_point(self, t: int, kind: str, zp: int) -> None:
        lo, hi = {"qint8": (-128, 127), "qcint8": (-128, 127), "quint8": (0, 255),
                  "qint32": (0, 0), "qcint32": (0, 0), "qcint4": (0, 15)}[kind]
        if not lo <= zp <= hi:
            raise Refuse(f"{self.desc(t)}: zero point {zp} outside [{lo}, {hi}]")

    def float32_or_qcint8(self, t: int, expected_dim: int) -> None:
        ty = self.f.type(t)
        if ty in ("FLOAT32", "FLOAT16"):
            return
        q = self.f.quant(t)
        if ty == "INT8" and self.flags.qs8:
            if self.qtype(t) != "affine":
                raise Refuse(f"{self.desc(t)}: not affine-quantized")
            if len(q.scale) > 1:
                if q.quantized_dimension != expected_dim:
                    raise Refuse(f"{self.desc(t)}: quantized on dimension "
                                 f"{q.quantized_dimension}, XNNPACK needs {expected_dim}")
                self.validate_channelwise(t, "qcint8", q.zero_point[0], q.scale,
                                          q.quantized_dimension)
            else:
                self.validate_quantized(t, "qint8", q.zero_point[0], q.scale[0])
            return
        if ty == "UINT8" and self.flags.qu8:
            if not self._per_tensor(t, zero_points=True):
                raise Refuse(f"{self.desc(t)}: XNNPACK takes only per-tensor quantization here")
            self.validate_quantized(t, "quint8", q.zero_point[0], q.scale[0])
            return
        raise self._unsupported(t, "FLOAT32, FLOAT16, INT8 or per-tensor UINT8")

    def filter_type(self, t: int, expected_dim: int) -> None:
        ty = self.f.type(t)
        if ty in ("FLOAT32", "FLOAT16"):
            return
        if ty in ("INT2", "INT4", "INT8") and self.flags.qs8:
            kind = self.qtype(t)
            q = self.f.quant(t)
            if kind == "affine":
                if len(q.scale) > 1:
                    if q.quantized_dimension != expected_dim:
                        raise Refuse(f"{self.desc(t)}: quantized on dimension "
                                     f"{q.quantized_dimension}, XNNPACK needs {expected_dim}")
                elif ty == "INT2":
                    dims = self.f.shapes[t]
                    if not (q.quantized_dimension < len(dims)
                         and len(q.scale) == dims[q.quantized_dimension]):
                        raise Refuse(f"{self.desc(t)}: INT2 weights must be quantized per channel")
            elif kind == "blockwise":
                block = self.f.block_size(t)
                if not block % 32 == 0:
                    raise Refuse(f"{self.desc(t)}: block size {block} is not a multiple of 32")
            return  # no quantization at all: the delegate only logs it
        if ty == "UINT8" and self.flags.qu8:
            if not self._per_tensor(t, zero_points=True):
                raise Refuse(f"{self.desc(t)}: XNNPACK takes only per-tensor quantization here")
            return
        raise self._unsupported(t, "FLOAT32, FLOAT16, INT2/INT4/INT8 or per-tensor UINT8")

    def float_or_qcint32(self, t: int) -> None:
        """CheckTensorFloat32OrFloat16OrQCInt32Type (biases)."""
        ty = self.f.type(t)
        if ty in ("FLOAT32", "FLOAT16"):
            return
        if ty == "INT32" and self.flags.qs8:
            q = self.f.quant(t)
            if not (self.qtype(t) == "affine" and q.quantized_dimension == 0):
                raise Refuse(f"{self.desc(t)}: not affine-quantized on dimension 0")
            if len(q.scale) > 1:
                self.validate_channelwise(t, "qcint32", 0, q.scale, 0)
            else:
                self.validate_quantized(t, "qint32", q.zero_point[0], q.scale[0])
            return
        raise self._unsupported(t, "FLOAT32, FLOAT16 or quantized INT32")

    def int32(self, t: int) -> None:
        if self.f.type(t) != "INT32":
            raise self._unsupported(t, "INT32")

    def int32_or_int64(self, t: int) -> None:
        if self.f.type(t) not in ("INT32", "INT64"):
            raise self._unsupported(t, "INT32 or INT64")

    def filter_and_bias(self, filt: int, bias: int) -> None:
        """CheckFilterAndBiasTypes."""
        ft = self.tensor_type(filt)
        if ft in ("FLOAT16", "FLOAT32"):
            bt = self.tensor_type(bias)
            if not (bt == ft or (ft == "FLOAT16" and bt == "FLOAT32")):
                raise Refuse(f"filter {filt} and bias {bias} types {ft} and {bt} differ")

    def shape(self, t: int, lo: int, hi: int | None = None) -> None:
        """CheckTensorShape: rank in [lo, hi], every dimension positive."""
        hi = lo if hi is None else hi
        dims = self.f.shapes[t]
        if lo == hi:
            if len(dims) != lo:
                raise Refuse(f"{self.desc(t)}: rank {len(dims)}, XNNPACK needs {lo}")
        else:
            if len(dims) < lo:
                raise Refuse(f"{self.desc(t)}: rank {len(dims)} below {lo}")
            if len(dims) > hi:
                raise Refuse(f"{self.desc(t)}: rank {len(dims)} above XNNPACK's {hi}")
        if not all(d > 0 for d in dims):
            raise Refuse(f"{self.desc(t)}: a dimension is not positive")

    def static(self, t: int, what: str = "") -> None:
        """CheckTensorStaticAllocation: a constant with data in the file."""
        if not (0 <= t < len(self.f.static) and self.f.static[t]):
            raise Refuse(f"{what or 'tensor'} {t} is computed at run time; XNNPACK needs it "
                         "constant")

    def static_unless_unpacked(self, t: int, what: str) -> None:
        if t not in self.quasi_static:
            self.static(t, what)

    def shape_tensor(self, t: int, squeeze: bool) -> None:
        """CheckShapeTensorShape."""
        dims = self.f.shapes[t]
        if len(dims) != 1:
            if not (squeeze and all(d == 1 for d in dims[:-1])):
                raise Refuse(f"{self.desc(t)}: a shape tensor must be 1-D")

    def dim_match(self, a: int, b: int, k: int) -> None:
        da, db = self.f.shapes[a], self.f.shapes[b]
        if not (k < len(da) and k < len(db) and da[k] == db[k]):
            raise Refuse(f"tensors {a} and {b} differ in dimension {k}")

    def scale(self, t: int) -> float:
        """The per-tensor scale (callers have checked the quantization)."""
        return self.f.quant(t).scale[0]
