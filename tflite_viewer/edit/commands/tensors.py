"""Tensor edits: name, shape, quantization and constant data."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...model import dtypes
from ...model.errors import EditError
from ...quant.ranges import INTEGER_RANGES
from ...schema import schema_generated as S
from ..patch import FieldTarget
from ..shapes import shape_warnings
from ..tree import ModelTree, text
from ..values import coerce_int
from .base import EditCommand, Scope, buffer_data, lookup_tensor, utf8_name

# -- tensors ---------------------------------------------------------------------------------

class RenameTensor(EditCommand):
    changes_op_signatures = False  # names are not part of an op signature

    def __init__(self, subgraph: int, tensor: int, name: str) -> None:
        super().__init__()
        self.subgraph, self.tensor, self.name = subgraph, tensor, name
        self._t: Any = None
        self._old: Any = None
        self.description = f"Rename subgraphs[{subgraph}].tensors[{tensor}] to {name!r}"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, tensors={self.tensor})

    def _check(self, tree: ModelTree) -> None:
        sg, t = lookup_tensor(tree, self.subgraph, self.tensor)
        self._raw = utf8_name(self.name, "a tensor name")
        self._t = t
        self.description = f"Rename tensor {text(t.name)!r} to {self.name!r}"
        raw = self._raw
        dup = [k for k, o in enumerate(sg.tensors) if o.name == raw and k != self.tensor]
        if dup:
            self.warnings.append(f"tensors {dup} of subgraph {self.subgraph} already have the "
                                 f"name {self.name!r}")

    def _do(self, tree: ModelTree) -> None:
        self._old = self._t.name
        self._t.name = self._raw

    def targets(self, tree: ModelTree) -> list[FieldTarget] | None:
        return [FieldTarget(_tensor_path(self), "tflite.Tensor", "name", self._raw,
                            owner=self._t)]

    def _undo(self, tree: ModelTree) -> None:
        self._t.name = self._old


_UNSET = object()


class SetTensorShape(EditCommand):
    """Change a tensor's shape (and shape_signature; by default kept consistent with it)."""

    def __init__(self, subgraph: int, tensor: int, shape, shape_signature: Any = _UNSET) -> None:
        super().__init__()
        self.subgraph, self.tensor = subgraph, tensor
        self.shape = shape
        self.shape_signature = shape_signature
        self._t: Any = None
        self._old: tuple = ()
        self._new: tuple = ()
        self.description = f"Set shape of subgraphs[{subgraph}].tensors[{tensor}] to {list(shape)}"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, tensors={self.tensor})

    def _check(self, tree: ModelTree) -> None:
        sg, t = lookup_tensor(tree, self.subgraph, self.tensor)
        where = f"subgraphs[{self.subgraph}].tensors[{self.tensor}]"
        shape = [coerce_int(d, f"{where}.shape", "Int") for d in _dims(self.shape, where)]
        if any(d < 0 for d in shape):
            raise EditError(f"{where}.shape: dimensions must be >= 0 (use shape_signature "
                            f"for unknown sizes), got {shape}")
        if self.shape_signature is _UNSET:
            if t.shapeSignature is None:
                sig = None
            else:
                old_sig = [int(d) for d in t.shapeSignature]
                sig = ([-1 if o == -1 else n for o, n in zip(old_sig, shape)]
                       if len(old_sig) == len(shape) else list(shape))
        elif self.shape_signature is None:
            sig = None
        else:
            sig = [coerce_int(d, f"{where}.shape_signature", "Int")
                   for d in _dims(self.shape_signature, where)]
            if len(sig) != len(shape):
                raise EditError(f"{where}.shape_signature: rank {len(sig)} differs from the "
                                f"shape's rank {len(shape)}")
            bad = [(s, d) for s, d in zip(sig, shape) if s != -1 and s != d]
            if any(s < -1 for s in sig) or bad:
                raise EditError(f"{where}.shape_signature: {sig} does not match shape {shape} "
                                "(each entry is the dimension or -1)")
        info = dtypes.type_info(int(t.type))
        data = buffer_data(tree, t)
        if data is not None and data.size and t.sparsity is None and info.bits:
            n = int(np.prod(shape, dtype=np.int64)) if shape else 1
            need = (n * info.bits + 7) // 8
            if need != data.size:
                raise EditError(f"{where}: constant data holds {data.size} bytes; shape {shape} "
                                f"of {info.name} needs {need} (replace the data too)")
        self._t = t
        self._new = (np.asarray(shape, dtype=np.int32),
                     None if sig is None else np.asarray(sig, dtype=np.int32))
        self.description = (f"Set shape of tensor {text(t.name)!r} to {shape}"
                            + (f" (signature {sig})" if sig is not None and sig != shape else ""))

    def _do(self, tree: ModelTree) -> None:
        self._old = (self._t.shape, self._t.shapeSignature)
        self._t.shape, self._t.shapeSignature = self._new
        sg = tree.model.subgraphs[self.subgraph]
        self.warnings.extend(shape_warnings(tree.model, sg, self.subgraph, self.tensor))

    def _undo(self, tree: ModelTree) -> None:
        self._t.shape, self._t.shapeSignature = self._old

    def targets(self, tree: ModelTree) -> list[FieldTarget] | None:
        path = _tensor_path(self)
        t = self._t
        return [FieldTarget(path, "tflite.Tensor", "shape", t.shape, owner=t),
                FieldTarget(path, "tflite.Tensor", "shape_signature", t.shapeSignature,
                            owner=t)]


def _tensor_path(cmd) -> tuple:
    return (("subgraphs", cmd.subgraph), ("tensors", cmd.tensor))


def _dims(value: Any, where: str) -> list:
    if isinstance(value, str):
        text_ = value.strip().strip("[]()")
        return [p.strip() for p in text_.split(",") if p.strip()]
    try:
        return list(value)
    except TypeError:
        raise EditError(f"{where}: expected a list of dimensions, got {value!r}") from None


class SetQuantization(EditCommand):
    """Set a tensor's quantization: per-tensor (one scale) or per-channel along a dimension.

    ``scale=None`` removes the quantization table.  Other fields of the table (min/max,
    details) are kept unless given.
    """

    def __init__(self, subgraph: int, tensor: int, scale, zero_point=None,
                 quantized_dimension: int = 0, min=None, max=None) -> None:  # noqa: A002
        super().__init__()
        self.subgraph, self.tensor = subgraph, tensor
        self.scale, self.zero_point, self.quantized_dimension = scale, zero_point, quantized_dimension
        self.min, self.max = min, max
        self._t: Any = None
        self._old: Any = None
        self._new: Any = None
        self.description = f"Set quantization of subgraphs[{subgraph}].tensors[{tensor}]"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, tensors={self.tensor})

    def _check(self, tree: ModelTree) -> None:
        sg, t = lookup_tensor(tree, self.subgraph, self.tensor)
        where = f"subgraphs[{self.subgraph}].tensors[{self.tensor}].quantization"
        self._t = t
        if self.scale is None:
            self._new = None
            self.description = f"Remove quantization of tensor {text(t.name)!r}"
            return
        block = _blockwise(t)
        if block is not None:
            raise EditError(f"{where}: the tensor is quantized blockwise (block "
                            f"{block.blockSize}, scales in tensor {block.scales}): a scale "
                            "would contradict its blocks; edit the values of the scale "
                            "tensor instead")
        try:
            scale = np.atleast_1d(np.asarray(self.scale, dtype=np.float64)).astype(np.float32)
        except (TypeError, ValueError):
            raise EditError(f"{where}.scale: expected numbers, got {self.scale!r}") from None
        if scale.ndim != 1 or scale.size == 0:
            raise EditError(f"{where}.scale: expected a non-empty list of scales")
        if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
            raise EditError(f"{where}.scale: scales must be finite and > 0, got {scale.tolist()}")
        zp_in = 0 if self.zero_point is None else self.zero_point
        try:
            zp = np.atleast_1d(np.asarray(zp_in))
        except (TypeError, ValueError):
            raise EditError(f"{where}.zero_point: expected integers, got {zp_in!r}") from None
        if zp.dtype.kind == "f" and not np.all(np.mod(zp, 1) == 0) or zp.dtype.kind not in "iuf":
            raise EditError(f"{where}.zero_point: expected integers, got {zp.tolist()}")
        zp = zp.astype(np.int64)
        if zp.size == 1 and scale.size > 1:
            zp = np.repeat(zp, scale.size)
        if zp.size != scale.size:
            raise EditError(f"{where}: {scale.size} scales but {zp.size} zero points")
        shape = [int(d) for d in t.shape] if t.shape is not None else []
        qd = coerce_int(self.quantized_dimension, f"{where}.quantized_dimension", "Int")
        if scale.size > 1:
            if not 0 <= qd < len(shape):
                raise EditError(f"{where}.quantized_dimension: {qd} out of range for a tensor "
                                f"of rank {len(shape)}")
            if shape[qd] != scale.size:
                raise EditError(f"{where}: {scale.size} scales for dimension {qd} of size "
                                f"{shape[qd]} (shape {shape})")
        elif qd != 0 and not 0 <= qd < max(len(shape), 1):
            raise EditError(f"{where}.quantized_dimension: {qd} out of range for a tensor of "
                            f"rank {len(shape)}")
        tname = dtypes.type_name(int(t.type))
        lo, hi = INTEGER_RANGES.get(tname, (None, None))
        if lo is not None and (zp.min() < lo or zp.max() > hi):
            raise EditError(f"{where}.zero_point: {zp.tolist()} outside the range of "
                            f"{tname} ({lo}..{hi})")
        if lo is None:
            self.warnings.append(f"tensor {text(t.name)!r} is {tname}: quantization parameters "
                                 "usually belong to integer tensors")
        new = S.QuantizationParametersT()
        old = t.quantization
        if old is not None:
            new.__dict__.update(old.__dict__)
        new.scale = scale
        new.zeroPoint = zp
        new.quantizedDimension = qd
        if self.min is not None:
            new.min = np.atleast_1d(np.asarray(self.min, dtype=np.float32))
        if self.max is not None:
            new.max = np.atleast_1d(np.asarray(self.max, dtype=np.float32))
        self._new = new
        kind = f"per-channel ({scale.size} along dimension {qd})" if scale.size > 1 else \
            f"scale {float(scale[0]):.6g}, zero point {int(zp[0])}"
        self.description = f"Set quantization of tensor {text(t.name)!r}: {kind}"

    def _do(self, tree: ModelTree) -> None:
        self._old = self._t.quantization
        self._t.quantization = self._new

    def targets(self, tree: ModelTree) -> list[FieldTarget] | None:
        old, new = self._old, self._new
        if old is None or new is None or old.details is not new.details or \
                old.detailsType != new.detailsType:
            # a table added or removed: the tensor points at a new one (see `splice`)
            return [FieldTarget(_tensor_path(self), "tflite.Tensor", "quantization", new,
                                owner=self._t)]
        path = (("subgraphs", self.subgraph), ("tensors", self.tensor), ("quantization", None))
        q = "tflite.QuantizationParameters"
        return [FieldTarget(path, q, "min", new.min, owner=new),
                FieldTarget(path, q, "max", new.max, owner=new),
                FieldTarget(path, q, "scale", new.scale, owner=new),
                FieldTarget(path, q, "zero_point", new.zeroPoint, owner=new),
                FieldTarget(path, q, "quantized_dimension", new.quantizedDimension, owner=new)]

    def _undo(self, tree: ModelTree) -> None:
        self._t.quantization = self._old


class ReplaceTensorData(EditCommand):
    """Replace a constant tensor's values.

    The array must have the tensor's shape and numpy dtype; with ``requantize=True`` a float
    array is quantized with the tensor's own scale and zero point (per-channel aware):
    ``q = clamp(round(x / scale) + zero_point)``, rounding half away from zero as TFLite's
    quantizer does.  A buffer shared with other tensors is not changed behind their back:
    the tensor gets a new buffer of its own.

    A blockwise-quantized tensor (BlockwiseQuantization: one scale per block of
    ``block_size`` values along the last axis, in another tensor) keeps its block scales:
    integer values replace its values as they are, and ``requantize=True`` quantizes each
    block with its own scale (and zero point).  The description says which, and the
    warnings count values clipped to their block's range and blocks whose scale is 0.
    """
    changes_op_signatures = False  # same shape and type, and still constant


    def __init__(self, subgraph: int, tensor: int, values, requantize: bool = False) -> None:
        super().__init__()
        self.subgraph, self.tensor = subgraph, tensor
        self.values = values
        self.requantize = requantize
        self._t: Any = None
        self._data: np.ndarray | None = None
        self._shared = False
        self._old: Any = None
        self.description = f"Replace data of subgraphs[{subgraph}].tensors[{tensor}]"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, tensors={self.tensor})

    def _check(self, tree: ModelTree) -> None:
        sg, t = lookup_tensor(tree, self.subgraph, self.tensor)
        where = f"subgraphs[{self.subgraph}].tensors[{self.tensor}]"
        if int(t.externalBuffer):
            raise EditError(f"{where}: {text(t.name)!r} keeps its data in a side file "
                            f"(external buffer {int(t.externalBuffer):#x}); replacing "
                            "external data is not supported")
        data = buffer_data(tree, t)
        if data is None or data.size == 0:
            raise EditError(f"{where}: {text(t.name)!r} is not a constant tensor (it has no data)")
        if t.sparsity is not None:
            raise EditError(f"{where}: sparse tensors cannot be replaced from a dense array")
        info = dtypes.type_info(int(t.type))
        if info.storage is None or info.name == "STRING":
            raise EditError(f"{where}: {info.name} data cannot be replaced from an array")
        shape = tuple(int(d) for d in t.shape) if t.shape is not None else ()
        arr = np.asarray(self.values)
        if arr.shape != shape:
            raise EditError(f"{where}: array of shape {list(arr.shape)} for a tensor of shape "
                            f"{list(shape)}")
        target = info.values if info.values is not None else info.storage
        block = _blockwise(t)
        how = ""
        if block is not None and self.requantize:
            arr, how = self._quantize_blocks(tree, sg, t, arr, info, where)
        elif self.requantize:
            arr = self._quantize(t, arr, info, where)
        elif arr.dtype != target:
            hint = " (pass requantize=True to quantize float values)" if (
                arr.dtype.kind == "f" and target.kind in "iu") else ""
            raise EditError(f"{where}: array of dtype {arr.dtype} for a {info.name} tensor "
                            f"(needs {target}){hint}")
        elif block is not None:
            how = f" (raw {info.name} values; the block scales in tensor {block.scales} are kept)"
        if info.bits < 8:
            raw = _pack_subbyte(arr, info.bits)
        else:
            raw = np.ascontiguousarray(arr.astype(info.storage, copy=False)).view(np.uint8).reshape(-1)
        self._data = raw.copy()
        users = sum(1 for s in tree.model.subgraphs or [] for o in s.tensors or []
                    if o.buffer == t.buffer)
        meta = any(int(m.buffer) == t.buffer for m in tree.model.metadata or [])
        self._shared = users > 1 or meta
        self._t = t
        self.description = f"Replace data of tensor {text(t.name)!r}" + (
            how or (" (requantized)" if self.requantize else ""))

    def _quantize_blocks(self, tree: ModelTree, sg, t, arr: np.ndarray, info,
                         where: str) -> tuple[np.ndarray, str]:
        """``arr`` quantized block by block with the tensor's own block scales and zero
        points; the text the description ends with."""
        if arr.dtype.kind != "f":
            raise EditError(f"{where}: requantize needs float values, got {arr.dtype}")
        lo, hi = INTEGER_RANGES.get(info.name, (None, None))
        if lo is None:
            raise EditError(f"{where}: cannot quantize into {info.name}")
        block = _blockwise(t)
        size = int(block.blockSize)
        shape = arr.shape
        if size <= 0 or not shape or shape[-1] % size:
            raise EditError(f"{where}.quantization: block size {size} does not divide the "
                            f"last dimension of shape {list(shape)}: cannot requantize")
        want = shape[:-1] + (shape[-1] // size,)
        scales = _block_values(tree, sg, int(block.scales), want, f"{where}: block scales")
        zps = np.zeros(want) if int(block.zeroPoints) < 0 else _block_values(
            tree, sg, int(block.zeroPoints), want, f"{where}: block zero points")
        x = arr.astype(np.float64).reshape(want + (size,))
        s, z = scales[..., None], zps[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            v = np.where(s > 0, x / np.where(s > 0, s, 1.0), 0.0)
        rounded = np.sign(v) * np.floor(np.abs(v) + 0.5) + z
        clipped = int(np.count_nonzero((rounded < lo) | (rounded > hi)))
        zero = int(np.count_nonzero(scales <= 0))
        if clipped:
            self.warnings.append(f"{clipped} value(s) outside their block's range were "
                                 f"clipped to {lo}..{hi}")
        if zero:
            self.warnings.append(f"{zero} block(s) have scale 0: their values are stored "
                                 "as the zero point and read back as 0")
        out = np.clip(rounded, lo, hi).astype(info.values).reshape(shape)
        return out, (f" (requantized per block of {size} with the block scales of tensor "
                     f"{int(block.scales)}, which are kept)")

    @staticmethod
    def _quantize(t, arr: np.ndarray, info, where: str) -> np.ndarray:
        if arr.dtype.kind != "f":
            raise EditError(f"{where}: requantize needs float values, got {arr.dtype}")
        q = t.quantization
        if q is None or q.scale is None or len(q.scale) == 0:
            raise EditError(f"{where}: requantize needs the tensor's scale, and it has none")
        lo, hi = INTEGER_RANGES.get(info.name, (None, None))
        if lo is None:
            raise EditError(f"{where}: cannot quantize into {info.name}")
        scale = np.asarray(q.scale, dtype=np.float64)
        zp = np.asarray(q.zeroPoint if q.zeroPoint is not None and len(q.zeroPoint) else
                        np.zeros(scale.size), dtype=np.float64)
        x = arr.astype(np.float64)
        if scale.size > 1:
            qd = int(q.quantizedDimension)
            shape = [1] * x.ndim
            shape[qd] = scale.size
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        v = x / scale
        rounded = np.sign(v) * np.floor(np.abs(v) + 0.5)
        return np.clip(rounded + zp, lo, hi).astype(info.values)

    def _do(self, tree: ModelTree) -> None:
        bufs = tree.model.buffers
        if self._shared:
            new = S.BufferT()
            new.data = self._data
            bufs.append(new)
            self._old = ("buffer", self._t.buffer)
            self._t.buffer = len(bufs) - 1
        else:
            self._old = ("data", bufs[self._t.buffer].data)
            bufs[self._t.buffer].data = self._data

    def targets(self, tree: ModelTree) -> list[FieldTarget] | None:
        if self._shared:
            return None
        return [FieldTarget((("buffers", int(self._t.buffer)),), "tflite.Buffer", "data",
                            self._data)]

    def _undo(self, tree: ModelTree) -> None:
        kind, value = self._old
        if kind == "buffer":
            tree.model.buffers.pop()
            self._t.buffer = value
        else:
            tree.model.buffers[self._t.buffer].data = value


def _blockwise(t) -> Any:
    """The BlockwiseQuantizationT of a tree tensor's quantization, else None."""
    q = t.quantization
    if q is None or q.detailsType != S.QuantizationDetails.BlockwiseQuantization:
        return None
    return q.details


def _block_values(tree: ModelTree, sg, index: int, shape: tuple[int, ...],
                  what: str) -> np.ndarray:
    """The values of the scale (or zero-point) tensor ``index`` of ``sg`` as float64 of
    ``shape`` (one per block), or an EditError saying why they cannot be read."""
    tensors = sg.tensors or []
    if not 0 <= index < len(tensors):
        raise EditError(f"{what}: tensor index {index} out of range")
    src = tensors[index]
    info = dtypes.type_info(int(src.type))
    data = buffer_data(tree, src)
    if data is None or info.storage is None or info.bits < 8:
        raise EditError(f"{what}: tensor {index} ({info.name}) holds no readable values")
    values = np.asarray(data).view(np.uint8).view(info.storage).astype(np.float64)
    if values.size != int(np.prod(shape, dtype=np.int64)):
        raise EditError(f"{what}: tensor {index} holds {values.size} values, "
                        f"{list(shape)} are needed")
    return values.reshape(shape)


def _pack_subbyte(arr: np.ndarray, bits: int) -> np.ndarray:
    per = 8 // bits
    mask = (1 << bits) - 1
    flat = (arr.reshape(-1).astype(np.int64) & mask).astype(np.uint8)
    pad = (-flat.size) % per
    flat = np.concatenate([flat, np.zeros(pad, np.uint8)]).reshape(-1, per)
    shifts = (np.arange(per) * bits).astype(np.uint8)
    return np.bitwise_or.reduce(flat << shifts, axis=1).astype(np.uint8)
