"""Tensor views: type, shape, quantization, sparsity, and zero-copy data."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..schema import schema_generated as S
from . import dtypes
from .errors import ModelFormatError
from .options import table_to_dict, union_value
from .quantization import Quantization, dequantize_blockwise
from .sparsity import DimensionMetadata, Sparsity
from ..schema.schema_layout import LAYOUT

if TYPE_CHECKING:
    from .model import Model
    from .subgraph import Subgraph

_EMPTY_F32 = np.zeros(0, dtype=np.float32)
_EMPTY_I64 = np.zeros(0, dtype=np.int64)
_QP_FIELDS = LAYOUT["objects"]["tflite.QuantizationParameters"]["fields"]
_QP_DETAILS = next(f for f in _QP_FIELDS if f["name"] == "details")


@dataclass(frozen=True)
class VariantSubType:
    shape: tuple[int, ...]
    type: int
    has_rank: bool

    @property
    def type_name(self) -> str:
        return dtypes.type_name(self.type)


class Tensor:
    """One tensor of a subgraph; everything is read from the file on first use."""

    def __init__(self, subgraph: "Subgraph", index: int, fb: S.Tensor) -> None:
        self.subgraph = subgraph
        self.index = index
        self._fb = fb

    def __repr__(self) -> str:
        return f"<Tensor {self.index} {self.name!r} {self.type_name}{list(self.shape)}>"

    @property
    def model(self) -> "Model":
        return self.subgraph.model

    @property
    def where(self) -> str:
        return f"subgraphs[{self.subgraph.index}].tensors[{self.index}]"

    # -- description -------------------------------------------------------------------
    @cached_property
    def name(self) -> str:
        raw = self._fb.Name()
        return raw.decode("utf-8", "replace") if raw is not None else ""

    @cached_property
    def type(self) -> int:
        return int(self._fb.Type())

    @property
    def type_name(self) -> str:
        return dtypes.type_name(self.type)

    @property
    def dtype(self) -> np.dtype | None:
        """numpy dtype of `data()` (int8 for INT4, uint16 raw bits for BFLOAT16, ...)."""
        return dtypes.numpy_dtype(self.type)

    @cached_property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self._fb.ShapeAsNumpy()) if not self._fb.ShapeIsNone() else ()

    @cached_property
    def shape_signature(self) -> tuple[int, ...] | None:
        if self._fb.ShapeSignatureIsNone():
            return None
        return tuple(int(d) for d in self._fb.ShapeSignatureAsNumpy())

    @property
    def rank(self) -> int:
        return len(self.shape)

    @cached_property
    def num_elements(self) -> int:
        """Elements of the static shape (Python int: shapes can be absurd in bad files)."""
        n = 1
        for d in self.shape:
            n *= max(d, 0)
        return n

    @cached_property
    def buffer(self) -> int:
        return int(self._fb.Buffer())

    @cached_property
    def is_variable(self) -> bool:
        return bool(self._fb.IsVariable())

    @cached_property
    def has_rank(self) -> bool:
        return bool(self._fb.HasRank())

    @cached_property
    def external_buffer(self) -> int:
        return int(self._fb.ExternalBuffer())

    @cached_property
    def variant_tensors(self) -> tuple[VariantSubType, ...]:
        out = []
        for i in range(self._fb.VariantTensorsLength()):
            v = self._fb.VariantTensors(i)
            shape = tuple(int(d) for d in v.ShapeAsNumpy()) if not v.ShapeIsNone() else ()
            out.append(VariantSubType(shape, int(v.Type()), bool(v.HasRank())))
        return tuple(out)

    @cached_property
    def quantization(self) -> Quantization | None:
        got = _indexed_quantization(self)
        return self._read_quantization() if got is _UNREAD else got

    def _read_quantization(self) -> Quantization | None:
        """The QuantizationParameters table read through flatbuffers (tables with details,
        models without the verifier's columns)."""
        q = self._fb.Quantization()
        if q is None:
            return None
        scale = q.ScaleAsNumpy() if not q.ScaleIsNone() else _EMPTY_F32
        zp = q.ZeroPointAsNumpy() if not q.ZeroPointIsNone() else _EMPTY_I64
        qmin = q.MinAsNumpy() if not q.MinIsNone() else _EMPTY_F32
        qmax = q.MaxAsNumpy() if not q.MaxIsNone() else _EMPTY_F32
        member, sub = union_value(LAYOUT, "tflite.QuantizationDetails", q._tab, _QP_FIELDS,
                                  _QP_DETAILS)
        details = None
        if member is not None:
            details = {"type": str(member).split(".")[-1]}
            if sub is not None:
                details.update(table_to_dict(LAYOUT, member, sub))
        quant = Quantization(np.asarray(scale), np.asarray(zp), np.asarray(qmin),
                             np.asarray(qmax), int(q.QuantizedDimension()), details)
        return None if quant.is_empty else quant

    @cached_property
    def sparsity(self) -> Sparsity | None:
        sp = self._fb.Sparsity()
        if sp is None:
            return None
        dims = []
        for i in range(sp.DimMetadataLength()):
            d = sp.DimMetadata(i)
            dims.append(DimensionMetadata(int(d.Format()), int(d.DenseSize()),
                                          _index_vector(d.ArraySegmentsType(), d.ArraySegments()),
                                          _index_vector(d.ArrayIndicesType(), d.ArrayIndices())))
        order = tuple(int(x) for x in sp.TraversalOrderAsNumpy()) if not sp.TraversalOrderIsNone() else ()
        bmap = tuple(int(x) for x in sp.BlockMapAsNumpy()) if not sp.BlockMapIsNone() else ()
        return Sparsity(order, bmap, tuple(dims))

    # -- role ----------------------------------------------------------------------------
    @property
    def is_constant(self) -> bool:
        """Has data in the model (a weight, bias or other constant).  Two constants store
        no bytes: a sparse tensor whose every block is zero, and a tensor with no element
        (an INT32 shape-[0] constant): see `empty_buffer_constant`."""
        return (self.buffer_nbytes > 0 or self.external_buffer != 0
                or self.empty_buffer_constant())

    def empty_buffer_constant(self) -> bool:
        """A constant whose buffer is rightly empty: a buffer of its own (index > 0), and
        sparse with no stored block or of a static zero-element shape, and neither a
        variable nor written (a subgraph input or an operator's output: old converters
        give every activation an empty buffer of its own)."""
        if not 0 < self.buffer < len(self.model.buffers) or self.buffer_nbytes > 0:
            return False
        if self.sparsity is None and not self._zero_elements_with_buffer():
            return False
        return not self.is_variable and self.index not in self.subgraph.written_tensors

    @property
    def kind(self) -> str:
        if self.is_variable:
            return "variable"
        if self.is_constant:
            return "constant"
        return "activation"

    # -- data ----------------------------------------------------------------------------
    @property
    def buffer_nbytes(self) -> int:
        bufs = self.model.buffers
        if not 0 < self.buffer < len(bufs):
            return 0
        return bufs[self.buffer].nbytes

    def raw_bytes(self) -> np.ndarray | None:
        """The tensor's bytes as a read-only uint8 view on the file, or None.

        An external tensor's bytes are a view on its side file (`external.py`); a missing
        or short side file, or an unknown id, is a ModelFormatError naming the file."""
        if self.external_buffer:
            return self._external_bytes()
        bufs = self.model.buffers
        if not 0 < self.buffer < len(bufs):
            return None
        raw = bufs[self.buffer].data
        return raw if raw.size else None

    def _external_bytes(self) -> np.ndarray:
        from .external import slice_of
        where = f"{self.where}.external_buffer"
        if self.buffer_nbytes:
            raise ModelFormatError(where, f"data both in buffer {self.buffer} and in external "
                                   f"buffer {self.external_buffer:#x} (LiteRT refuses it)")
        try:
            return slice_of(self.model, self.external_buffer)
        except ModelFormatError as exc:
            raise ModelFormatError(f"{where} ({exc.where})" if exc.where else where,
                                   exc.reason) from None

    @property
    def data_location(self) -> str:
        """Where the tensor's bytes live: "none", "buffer N (B bytes)" or the side file
        and byte range of an external buffer."""
        if self.external_buffer:
            from .external import describe
            return describe(self.model, self.external_buffer)
        if self.buffer_nbytes:
            b = self.model.buffers[self.buffer]
            where = f"at file offset {b.offset:,}" if b.is_external_layout else "in the model"
            return f"buffer {self.buffer}, {b.nbytes:,} bytes {where}"
        return "none"

    def data(self) -> np.ndarray | None:
        """The stored values in their declared type, shaped (None when not constant).

        Zero-copy for byte-aligned types; sub-byte types are unpacked; strings decoded to an
        object array of bytes (as LiteRT returns them).  Sparse tensors give their stored
        (compressed) values as a 1-D array: see `densified()`.
        """
        raw = self.raw_bytes()
        if raw is None:
            if self.sparsity is not None and self.is_constant:
                raw = np.zeros(0, np.uint8)  # a sparse constant with no stored (nonzero) value
            elif self._zero_elements_with_buffer():
                raw = np.zeros(0, np.uint8)  # a zero-element tensor: its one value is empty
            else:
                return None
        self._check_value_shape()
        info = dtypes.type_info(self.type)
        if info.name == "STRING":
            return _decode_strings(raw, self.shape, self.where)
        if info.storage is None:
            return None
        if self.sparsity is not None:
            if info.bits < 8:
                count = raw.size * (8 // info.bits)
                return dtypes.unpack_subbyte(raw, info.bits, count, info.values.kind == "i")
            if raw.size % info.storage.itemsize:
                raise ModelFormatError(self.where, f"{raw.size} bytes is not a whole number "
                                       f"of {info.name} values")
            return raw.view(info.storage)
        count = self.num_elements
        if info.bits < 8:
            need = (count * info.bits + 7) // 8
            if raw.size != need:
                raise ModelFormatError(self.where, f"buffer holds {raw.size} bytes, shape "
                                       f"{list(self.shape)} of {info.name} needs {need}")
            return dtypes.unpack_subbyte(raw, info.bits, count,
                                         info.values.kind == "i").reshape(self.shape)
        need = count * info.storage.itemsize
        if raw.size != need:
            raise ModelFormatError(self.where, f"buffer holds {raw.size} bytes, shape "
                                   f"{list(self.shape)} of {info.name} needs {need}")
        return raw.view(info.storage).reshape(self.shape)

    def packed_values(self) -> np.ndarray:
        """The stored bytes of a dense sub-byte constant, checked to hold its shape as
        `data` checks them (ModelFormatError otherwise), without unpacking them."""
        raw = self.raw_bytes()
        info = dtypes.type_info(self.type)
        if raw is None or not 0 < info.bits < 8 or self.sparsity is not None:
            raise ValueError(f"{self.where}: not a dense sub-byte constant")
        self._check_value_shape()
        need = (self.num_elements * info.bits + 7) // 8
        if raw.size != need:
            raise ModelFormatError(self.where, f"buffer holds {raw.size} bytes, shape "
                                   f"{list(self.shape)} of {info.name} needs {need}")
        return raw

    def _check_value_shape(self) -> None:
        """A value needs a shape numpy can hold: no negative dimension, at most 64 of them
        (an untrusted file may declare anything)."""
        shape = self.shape
        if len(shape) > 64 or any(d < 0 for d in shape):
            dims = ", ".join(map(str, shape[:8])) + (", ..." if len(shape) > 8 else "")
            raise ModelFormatError(self.where, f"a constant of shape [{dims}] (rank "
                                   f"{len(shape)}) cannot hold values: dimensions must be "
                                   "non-negative and at most 64 of them")

    def _zero_elements_with_buffer(self) -> bool:
        """A static shape with no element and a buffer of its own: its value is the empty
        array, whatever the (rightly empty) buffer holds (an INT32 shape-[0] constant)."""
        sig = self.shape_signature
        static = sig is None or all(d >= 0 for d in sig)
        return (static and self.num_elements == 0 and self.sparsity is None
                and 0 < self.buffer < len(self.model.buffers))

    def densified(self) -> np.ndarray | None:
        """The dense values of a sparse constant (what LiteRT's DENSIFY op produces)."""
        values = self.data()
        if values is None or self.sparsity is None:
            return values
        return self.sparsity.densify(values, self.shape, f"{self.where}.sparsity")

    def values(self) -> np.ndarray | None:
        """Dense values with raw-bits float types (BFLOAT16, FLOAT8) decoded to float32."""
        values = self.densified()
        if values is not None and dtypes.is_raw_float(self.type):
            values = dtypes.decode_to_float(self.type, values)
        return values

    def dequantized(self) -> np.ndarray | None:
        """Real values as float32: dequantized integers, widened floats, densified sparsity."""
        values = self.values()
        if values is None or values.dtype == object:
            return None
        if values.dtype.kind in "fc":
            return values.astype(np.float32) if values.dtype.kind == "f" else values
        q = self.quantization
        if q is not None and q.blockwise is not None:
            return self._dequantize_blockwise(values, q)
        if q is not None and q.has_scale:
            return q.dequantize(values, f"{self.where}.quantization")
        return values.astype(np.float32)

    def block_tensors(self) -> tuple["Tensor", "Tensor | None"] | None:
        """The scale tensor and the zero-point tensor (or None) of a blockwise-quantized
        tensor, or None for any other form; an index outside the subgraph raises
        ModelFormatError."""
        q = self.quantization
        b = q.blockwise if q is not None else None
        if b is None:
            return None
        where = f"{self.where}.quantization.details"
        tensors = self.subgraph.tensors
        if not 0 <= b.scales < len(tensors):
            raise ModelFormatError(where, f"scale tensor index {b.scales} out of range "
                                   f"(0..{len(tensors) - 1})")
        if b.zero_points >= len(tensors):
            raise ModelFormatError(where, f"zero-point tensor index {b.zero_points} out of "
                                   f"range (0..{len(tensors) - 1})")
        return tensors[b.scales], tensors[b.zero_points] if b.zero_points >= 0 else None

    def _dequantize_blockwise(self, values: np.ndarray, q: Quantization) -> np.ndarray:
        scale_t, zp_t = self.block_tensors()
        where = f"{self.where}.quantization.details"
        scales = scale_t.values()
        if scales is None:
            raise ModelFormatError(where, f"scale tensor {scale_t.index} holds no values")
        zps = zp_t.values() if zp_t is not None else None
        return dequantize_blockwise(values, scales, zps, q.blockwise.block_size, where)


def _index_vector(kind: int, tab) -> np.ndarray | None:
    """A SparseIndexVector union member (Int32Vector, Uint16Vector, Uint8Vector) as numpy."""
    if tab is None or kind == 0:
        return None
    cls = {1: S.Int32Vector, 2: S.Uint16Vector, 3: S.Uint8Vector}.get(int(kind))
    if cls is None:
        return None
    vec = cls()
    vec.Init(tab.Bytes, tab.Pos)
    return np.asarray(vec.ValuesAsNumpy()) if not vec.ValuesIsNone() else np.zeros(0, np.int32)


def encode_strings(values) -> bytes:
    """TFLite's string buffer of ``values`` (bytes, in order): the inverse of
    `_decode_strings`, the layout a STRING tensor has in LiteRT's memory."""
    data = [bytes(v) for v in np.asarray(values, dtype=object).reshape(-1)]
    head = 4 * (len(data) + 2)
    offsets = np.cumsum([head] + [len(d) for d in data])
    return np.array([len(data)], "<i4").tobytes() + offsets.astype("<i4").tobytes() \
        + b"".join(data)


def _decode_strings(raw: np.ndarray, shape: tuple[int, ...], where: str) -> np.ndarray:
    """TFLite's string buffer: count, count+1 offsets, then the bytes."""
    if raw.size < 4:
        raise ModelFormatError(where, "string buffer shorter than its header")
    count = int(raw[:4].view("<i4")[0])
    head = 4 * (count + 2)
    if count < 0 or head > raw.size:
        raise ModelFormatError(where, f"string buffer claims {count} strings in {raw.size} bytes")
    offsets = raw[4:head].view("<i4").astype(np.int64)
    if (np.diff(offsets) < 0).any() or offsets[0] < head or offsets[-1] > raw.size:
        raise ModelFormatError(where, "string offsets are not increasing within the buffer")
    blob = raw.tobytes()
    out = np.empty(count, dtype=object)
    for i in range(count):
        out[i] = blob[offsets[i]:offsets[i + 1]]
    n = 1
    for d in shape:
        n *= d
    return out.reshape(shape) if n == count else out


_UNREAD = object()
#: QuantizationParameters' vector fields, in `Quantization`'s order, and their types
_QP_VECTORS = (("scale", np.dtype("<f4"), _EMPTY_F32), ("zero_point", np.dtype("<i8"), _EMPTY_I64),
               ("min", np.dtype("<f4"), _EMPTY_F32), ("max", np.dtype("<f4"), _EMPTY_F32))


def _indexed_quantization(tensor: Tensor):
    """The tensor's quantization from `indexed_quantizations`, or _UNREAD."""
    model = tensor.model
    if model.index is None:
        return _UNREAD
    from .subgraph import _whole
    table = _whole(model, ("quantization",), lambda: indexed_quantizations(model.index))
    return table.get((tensor.subgraph.index, tensor.index), _UNREAD)


def indexed_quantizations(index) -> dict[tuple[int, int], Quantization | None]:
    """Every tensor's QuantizationParameters without details, from the verifier's columns
    (``index``, a `verify.FileIndex`) at once: {(subgraph, tensor): Quantization, or None
    for an empty table}; the vectors are read-only views on the file, as the flatbuffers
    read gives them.  Read per tensor through flatbuffers, a table costs ~40 us (a dozen
    field lookups); a model's interpreter and its analysis read every one.  Tables with
    details (blockwise, custom, multi-axis) are left out: `Tensor` reads those itself."""
    try:
        batch = index.table("tflite.QuantizationParameters")
        tensors = index.table("tflite.Tensor")
    except ValueError:  # reached in more than one way: read per tensor
        return {}
    if not len(batch) or batch.parent_batch is not tensors:
        return {}
    columns = []
    for name, dtype, empty in _QP_VECTORS:
        start, length = index.spans(batch, name)
        columns.append((dtype, empty, start.tolist(), (length * dtype.itemsize).tolist()))
    data, n = index.r.data, len(batch)
    dims = index.scalar(batch, "quantized_dimension").tolist()
    has_details = index.scalar(batch, "details_type").tolist()
    owners = batch.parent.tolist()
    sg, ti = tensors.parent.tolist(), tensors.index.tolist()
    out: dict[tuple[int, int], Quantization | None] = {}
    for r in range(n):
        if has_details[r]:
            continue
        arrays = [data[start[r]:start[r] + size[r]].view(dtype) if size[r] else empty
                  for dtype, empty, start, size in columns]
        q = Quantization(*arrays, dims[r], None)
        out[(sg[owners[r]], ti[owners[r]])] = None if q.is_empty else q
    return out
