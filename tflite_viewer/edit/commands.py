"""Edit commands: small, reversible changes to a `ModelTree`.

Each command checks everything it can *before* touching the tree and raises `EditError`
if the edit is invalid, so a refused command changes nothing.  ``apply`` remembers what it
overwrote; ``revert`` puts exactly that back, so undo restores the byte-identical file.
A command is applied to the state it was created for: `ModelDocument` replays them in
order, as a QUndoStack replays its QUndoCommands (one EditCommand per QUndoCommand).

``scope`` names the operators and tensors a command touches (before it is applied), which
the document uses to recompute op versions and the UI to refresh and keep its selection.
``warnings`` lists what is legal but probably not what the user wants (shapes that stop
agreeing, per-channel scales on a per-tensor op, ...).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flatbuffers import flexbuffers

from ..model import dtypes
from ..model.errors import EditError
from ..model.operator import SUBGRAPH_FIELDS
from ..quant.ranges import INTEGER_RANGES
from ..schema import schema_generated as S
from .op_version import builtin_name, op_required_version
from .patch import FieldTarget
from .shapes import shape_warnings
from .tree import ModelTree, attr_name, schema_fields, text, union_member
from .values import coerce_field, coerce_int, display


@dataclass
class Scope:
    """What a command touches, by index in the state it applies to."""

    subgraph: int | None = None
    operators: set[int] = field(default_factory=set)
    tensors: set[int] = field(default_factory=set)
    structural: bool = False  # operators/tensors added or removed: views must rebuild


class EditCommand:
    """Base of every edit.  Subclasses implement `_check`, `_do` and `_undo`."""

    description = "edit"

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self._applied = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.description}>"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope()

    def targets(self, tree: ModelTree) -> list[FieldTarget] | None:
        """After `apply`: every field the command changed, if all of them are fixed-size
        fields of tables that were already there (see `patch`); None otherwise.

        The document then overwrites those bytes in place instead of re-serializing.
        """
        return None

    def apply(self, tree: ModelTree) -> None:
        """Check, then change the tree; raises EditError (tree untouched) when invalid."""
        if self._applied:
            raise EditError(f"{self.description}: already applied")
        self.warnings = []
        self._check(tree)
        self._do(tree)
        self._applied = True

    def revert(self, tree: ModelTree) -> None:
        if not self._applied:
            raise EditError(f"{self.description}: not applied")
        self._undo(tree)
        self._applied = False

    # -- for subclasses ------------------------------------------------------------------
    def _check(self, tree: ModelTree) -> None:
        pass

    def _do(self, tree: ModelTree) -> None:
        raise NotImplementedError

    def _undo(self, tree: ModelTree) -> None:
        raise NotImplementedError


# -- lookups ---------------------------------------------------------------------------------

def _subgraph(tree: ModelTree, s: int):
    subs = tree.model.subgraphs or []
    if not isinstance(s, int) or not 0 <= s < len(subs):
        raise EditError(f"subgraph {s} out of range (0..{len(subs) - 1})")
    return subs[s]


def _operator(tree: ModelTree, s: int, n: int):
    sg = _subgraph(tree, s)
    ops = sg.operators or []
    if not isinstance(n, int) or not 0 <= n < len(ops):
        raise EditError(f"subgraphs[{s}].operators[{n}]: operator index out of range "
                        f"(0..{len(ops) - 1})")
    return sg, ops[n]


def _tensor(tree: ModelTree, s: int, t: int):
    sg = _subgraph(tree, s)
    tensors = sg.tensors or []
    if not isinstance(t, int) or not 0 <= t < len(tensors):
        raise EditError(f"subgraphs[{s}].tensors[{t}]: tensor index out of range "
                        f"(0..{len(tensors) - 1})")
    return sg, tensors[t]


def _utf8(value: Any, what: str) -> bytes:
    """Names are stored as UTF-8; refuse what cannot be (lone surrogates) before changing."""
    if not isinstance(value, str):
        raise EditError(f"{what} must be text, got {value!r}")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EditError(f"{what} cannot be stored as UTF-8: {exc.reason}") from None


def _signature(tree: ModelTree, key: str):
    for sig in tree.model.signatureDefs or []:
        if text(sig.signatureKey) == key:
            return sig
    keys = ", ".join(text(s.signatureKey) for s in tree.model.signatureDefs or []) or "none"
    raise EditError(f"no signature {key!r} (signatures: {keys})")


# -- builtin options -------------------------------------------------------------------------

class SetOption(EditCommand):
    """Set one field of an operator's builtin options (or builtin_options_2).

    ``value`` is typed by the schema: ints, floats, bools, enum names (``"VALID"``), or text
    that parses as one of them.  The field is looked up in whichever options table the
    operator carries; ``table="builtin_options_2"`` forces the second union.
    """

    def __init__(self, subgraph: int, operator: int, field_name: str, value: Any,
                 table: str | None = None) -> None:
        super().__init__()
        self.subgraph, self.operator, self.field, self.value = subgraph, operator, field_name, value
        self.table = table
        self._old: Any = None
        self._attr = ""
        self._new: Any = None
        self._target: Any = None
        self.description = f"Set subgraphs[{subgraph}].operators[{operator}].{field_name} = {value}"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, {self.operator})

    def _options(self, op) -> tuple[str, str, Any, str]:
        """(union field name, member table name, options object, enum)"""
        candidates = []
        if self.table in (None, "builtin_options") and op.builtinOptions is not None:
            candidates.append(("builtin_options", union_member("BuiltinOptions",
                                                                op.builtinOptionsType),
                               op.builtinOptions))
        if self.table in (None, "builtin_options_2") and op.builtinOptions2 is not None:
            candidates.append(("builtin_options_2", union_member("BuiltinOptions2",
                                                                  op.builtinOptions2Type),
                               op.builtinOptions2))
        if self.table not in (None, "builtin_options", "builtin_options_2"):
            raise EditError(f"table must be builtin_options or builtin_options_2, "
                            f"not {self.table!r}")
        where = f"subgraphs[{self.subgraph}].operators[{self.operator}]"
        if not candidates:
            raise EditError(f"{where}: the operator has no builtin options to set")
        for union, member, obj in candidates:
            if member and self.field in schema_fields(member):
                return union, member, obj, where
        names = sorted(f for _, m, _ in candidates if m for f in schema_fields(m))
        member = candidates[0][1] or "options"
        raise EditError(f"{where}: {member} has no field {self.field!r} "
                        f"(fields: {', '.join(names) or 'none'})")

    def _check(self, tree: ModelTree) -> None:
        sg, op = _operator(tree, self.subgraph, self.operator)
        union, member, obj, where = self._options(op)
        spec = schema_fields(member)[self.field]
        path = f"{where}.{union}.{self.field}"
        new = coerce_field(spec, self.value, path)
        if self.field in SUBGRAPH_FIELDS.get(member, ()):
            n = len(tree.model.subgraphs or [])
            for v in (new if isinstance(new, list) else [new]):
                if not 0 <= v < n:
                    raise EditError(f"{path}: subgraph {v} out of range (0..{n - 1})")
        self._attr = attr_name(member, self.field)
        self._target = obj
        self._new = new
        self._union, self._member = union, member
        self.description = (f"Set {path} = {display(spec, new)}"
                            f" ({builtin_name(tree.model, op)})")

    def _do(self, tree: ModelTree) -> None:
        self._old = getattr(self._target, self._attr)
        setattr(self._target, self._attr, self._new)

    def targets(self, tree: ModelTree) -> list[FieldTarget] | None:
        path = (("subgraphs", self.subgraph), ("operators", self.operator), (self._union, None))
        return [FieldTarget(path, "tflite." + self._member, self.field,
                            getattr(self._target, self._attr))]

    def _undo(self, tree: ModelTree) -> None:
        setattr(self._target, self._attr, self._old)


# -- custom options --------------------------------------------------------------------------

class _CustomOptionsEdit(EditCommand):
    def __init__(self, subgraph: int, operator: int) -> None:
        super().__init__()
        self.subgraph, self.operator = subgraph, operator
        self._op: Any = None
        self._old: Any = None
        self._new: np.ndarray | None = None

    def _decoded(self, tree: ModelTree) -> dict:
        sg, op = _operator(tree, self.subgraph, self.operator)
        where = f"subgraphs[{self.subgraph}].operators[{self.operator}].custom_options"
        if builtin_name(tree.model, op) != "CUSTOM":
            raise EditError(f"{where}: {builtin_name(tree.model, op)} is not a custom op")
        if op.customOptionsFormat != 0:
            raise EditError(f"{where}: not in FlexBuffers format")
        self._op = op
        if op.customOptions is None or len(op.customOptions) == 0:
            return {}
        try:
            value = flexbuffers.Loads(bytes(np.asarray(op.customOptions, dtype=np.uint8)))
        except Exception:  # noqa: BLE001 - arbitrary bytes
            raise EditError(f"{where}: the custom options are not a FlexBuffer map "
                            "(raw bytes cannot be edited by key)") from None
        if not isinstance(value, dict):
            raise EditError(f"{where}: the custom options are a FlexBuffer "
                            f"{type(value).__name__}, not a map")
        return value

    def _encode(self, value: dict) -> None:
        self._new = np.frombuffer(bytes(flexbuffers.Dumps(value)), dtype=np.uint8)

    def _do(self, tree: ModelTree) -> None:
        self._old = self._op.customOptions
        self._op.customOptions = self._new

    def _undo(self, tree: ModelTree) -> None:
        self._op.customOptions = self._old


def _like(old: Any, value: Any, where: str) -> Any:
    """A text value typed like the key's current value (the UI edits text)."""
    if not isinstance(value, str) or old is None or isinstance(old, str):
        return value
    from .values import coerce_bool, coerce_float
    if isinstance(old, bool):
        return coerce_bool(value, where)
    if isinstance(old, int):
        return coerce_int(value, where, "Long")
    if isinstance(old, float):
        return coerce_float(value, where)
    return value


class SetCustomOption(_CustomOptionsEdit):
    """Set (or add) one key of a custom op's FlexBuffer options map."""

    def __init__(self, subgraph: int, operator: int, key: str, value: Any) -> None:
        super().__init__(subgraph, operator)
        self.key, self.value = key, value
        self.description = f"Set custom option {key} = {value!r} of subgraphs[{subgraph}].operators[{operator}]"

    def _check(self, tree: ModelTree) -> None:
        options = self._decoded(tree)
        where = f"subgraphs[{self.subgraph}].operators[{self.operator}].custom_options.{self.key}"
        value = _like(options.get(self.key), self.value, where)
        if isinstance(value, np.generic):
            value = value.item()
        if not isinstance(value, (int, float, bool, str, bytes, list, dict)) or value is None:
            raise EditError(f"{where}: {type(value).__name__} cannot be stored in a FlexBuffer")
        options[self.key] = value
        try:
            self._encode(options)
        except Exception as exc:  # noqa: BLE001 - the encoder's own errors
            raise EditError(f"{where}: cannot encode {value!r}: {exc}") from None


class RemoveCustomOption(_CustomOptionsEdit):
    """Remove one key of a custom op's FlexBuffer options map."""

    def __init__(self, subgraph: int, operator: int, key: str) -> None:
        super().__init__(subgraph, operator)
        self.key = key
        self.description = f"Remove custom option {key} of subgraphs[{subgraph}].operators[{operator}]"

    def _check(self, tree: ModelTree) -> None:
        options = self._decoded(tree)
        if self.key not in options:
            raise EditError(f"subgraphs[{self.subgraph}].operators[{self.operator}]."
                            f"custom_options: no key {self.key!r} "
                            f"(keys: {', '.join(options) or 'none'})")
        del options[self.key]
        self._encode(options)


# -- tensors ---------------------------------------------------------------------------------

class RenameTensor(EditCommand):
    def __init__(self, subgraph: int, tensor: int, name: str) -> None:
        super().__init__()
        self.subgraph, self.tensor, self.name = subgraph, tensor, name
        self._t: Any = None
        self._old: Any = None
        self.description = f"Rename subgraphs[{subgraph}].tensors[{tensor}] to {name!r}"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, tensors={self.tensor})

    def _check(self, tree: ModelTree) -> None:
        sg, t = _tensor(tree, self.subgraph, self.tensor)
        self._raw = _utf8(self.name, "a tensor name")
        self._t = t
        self.description = f"Rename tensor {text(t.name)!r} to {self.name!r}"
        dup = [k for k, o in enumerate(sg.tensors) if k != self.tensor and text(o.name) == self.name]
        if dup:
            self.warnings.append(f"tensors {dup} of subgraph {self.subgraph} already have the "
                                 f"name {self.name!r}")

    def _do(self, tree: ModelTree) -> None:
        self._old = self._t.name
        self._t.name = self._raw

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
        sg, t = _tensor(tree, self.subgraph, self.tensor)
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
        data = _buffer_data(tree, t)
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


def _dims(value: Any, where: str) -> list:
    if isinstance(value, str):
        text_ = value.strip().strip("[]()")
        return [p.strip() for p in text_.split(",") if p.strip()]
    try:
        return list(value)
    except TypeError:
        raise EditError(f"{where}: expected a list of dimensions, got {value!r}") from None


def _buffer_data(tree: ModelTree, t) -> np.ndarray | None:
    bufs = tree.model.buffers or []
    if 0 < t.buffer < len(bufs):
        return None if bufs[t.buffer].data is None else np.asarray(bufs[t.buffer].data)
    return None


_QRANGE = INTEGER_RANGES  # the one table of integer ranges (tflite_viewer.quant.ranges)


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
        sg, t = _tensor(tree, self.subgraph, self.tensor)
        where = f"subgraphs[{self.subgraph}].tensors[{self.tensor}].quantization"
        self._t = t
        if self.scale is None:
            self._new = None
            self.description = f"Remove quantization of tensor {text(t.name)!r}"
            return
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
        lo, hi = _QRANGE.get(tname, (None, None))
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
            return None
        path = (("subgraphs", self.subgraph), ("tensors", self.tensor), ("quantization", None))
        q = "tflite.QuantizationParameters"
        return [FieldTarget(path, q, "min", new.min), FieldTarget(path, q, "max", new.max),
                FieldTarget(path, q, "scale", new.scale),
                FieldTarget(path, q, "zero_point", new.zeroPoint),
                FieldTarget(path, q, "quantized_dimension", new.quantizedDimension)]

    def _undo(self, tree: ModelTree) -> None:
        self._t.quantization = self._old


class ReplaceTensorData(EditCommand):
    """Replace a constant tensor's values.

    The array must have the tensor's shape and numpy dtype; with ``requantize=True`` a float
    array is quantized with the tensor's own scale and zero point (per-channel aware):
    ``q = clamp(round(x / scale) + zero_point)``, rounding half away from zero as TFLite's
    quantizer does.  A buffer shared with other tensors is not changed behind their back:
    the tensor gets a new buffer of its own.
    """

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
        sg, t = _tensor(tree, self.subgraph, self.tensor)
        where = f"subgraphs[{self.subgraph}].tensors[{self.tensor}]"
        data = _buffer_data(tree, t)
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
        if self.requantize:
            arr = self._quantize(t, arr, info, where)
        elif arr.dtype != target:
            hint = " (pass requantize=True to quantize float values)" if (
                arr.dtype.kind == "f" and target.kind in "iu") else ""
            raise EditError(f"{where}: array of dtype {arr.dtype} for a {info.name} tensor "
                            f"(needs {target}){hint}")
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
            " (requantized)" if self.requantize else "")

    @staticmethod
    def _quantize(t, arr: np.ndarray, info, where: str) -> np.ndarray:
        if arr.dtype.kind != "f":
            raise EditError(f"{where}: requantize needs float values, got {arr.dtype}")
        q = t.quantization
        if q is None or q.scale is None or len(q.scale) == 0:
            raise EditError(f"{where}: requantize needs the tensor's scale, and it has none")
        lo, hi = _QRANGE.get(info.name, (None, None))
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


def _pack_subbyte(arr: np.ndarray, bits: int) -> np.ndarray:
    per = 8 // bits
    mask = (1 << bits) - 1
    flat = (arr.reshape(-1).astype(np.int64) & mask).astype(np.uint8)
    pad = (-flat.size) % per
    flat = np.concatenate([flat, np.zeros(pad, np.uint8)]).reshape(-1, per)
    shifts = (np.arange(per) * bits).astype(np.uint8)
    return np.bitwise_or.reduce(flat << shifts, axis=1).astype(np.uint8)


# -- operators -------------------------------------------------------------------------------

class SetOpVersion(EditCommand):
    """Set the version of an operator's code (shared by every operator using that code)."""

    def __init__(self, subgraph: int, operator: int, version: int) -> None:
        super().__init__()
        self.subgraph, self.operator, self.version = subgraph, operator, version
        self._code: Any = None
        self._old = 0
        self._new = 0
        self.description = f"Set version of subgraphs[{subgraph}].operators[{operator}] to {version}"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, {self.operator})

    def _check(self, tree: ModelTree) -> None:
        sg, op = _operator(tree, self.subgraph, self.operator)
        where = f"subgraphs[{self.subgraph}].operators[{self.operator}].version"
        v = coerce_int(self.version, where, "Int")
        if v < 1:
            raise EditError(f"{where}: versions start at 1, got {v}")
        self._new = v
        self._code = tree.model.operatorCodes[op.opcodeIndex]
        self._code_index = int(op.opcodeIndex)
        name = builtin_name(tree.model, op)
        need = op_required_version(tree.model, sg, op)
        if need is not None and v < need:
            self.warnings.append(f"{name} here needs at least version {need}; version {v} "
                                 "selects a kernel that may not handle it")
        sharing = sum(1 for s in tree.model.subgraphs for o in s.operators or []
                      if o.opcodeIndex == op.opcodeIndex) - 1
        if sharing:
            self.warnings.append(f"operator_codes[{op.opcodeIndex}] is shared: the version of "
                                 f"{sharing} other {name} operator(s) changes too")
        self.description = f"Set version of {name} (operator_codes[{op.opcodeIndex}]) to {v}"

    def _do(self, tree: ModelTree) -> None:
        self._old = self._code.version
        self._code.version = self._new

    def targets(self, tree: ModelTree) -> list[FieldTarget] | None:
        return [FieldTarget((("operator_codes", self._code_index),), "tflite.OperatorCode",
                            "version", self._code.version)]

    def _undo(self, tree: ModelTree) -> None:
        self._code.version = self._old


class ExposeTensor(EditCommand):
    """Make an intermediate tensor a subgraph output (and an output of its signatures)."""

    def __init__(self, subgraph: int, tensor: int, name: str | None = None,
                 signatures: bool = True) -> None:
        super().__init__()
        self.subgraph, self.tensor, self.name, self.signatures = subgraph, tensor, name, signatures
        self._sg: Any = None
        self._old_outputs: Any = None
        self._sig_old: list = []
        self._sig_name = ""
        self.description = f"Expose subgraphs[{subgraph}].tensors[{tensor}] as an output"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, tensors={self.tensor}, structural=True)

    def _check(self, tree: ModelTree) -> None:
        sg, t = _tensor(tree, self.subgraph, self.tensor)
        outs = [int(i) for i in sg.outputs] if sg.outputs is not None else []
        if self.tensor in outs:
            raise EditError(f"subgraphs[{self.subgraph}].tensors[{self.tensor}] "
                            f"({text(t.name)!r}) is already an output")
        if _buffer_data(tree, t) is not None and _buffer_data(tree, t).size:
            self.warnings.append(f"tensor {text(t.name)!r} is a constant")
        self._sg = sg
        if self.name is not None:
            _utf8(self.name, "an output name")
        base = self.name or text(t.name) or f"tensor_{self.tensor}"
        self._sig_name = base
        self.description = f"Expose tensor {text(t.name)!r} as an output of subgraph {self.subgraph}"

    def _do(self, tree: ModelTree) -> None:
        sg = self._sg
        self._old_outputs = sg.outputs
        outs = [int(i) for i in sg.outputs] if sg.outputs is not None else []
        sg.outputs = np.asarray(outs + [self.tensor], dtype=np.int32)
        self._sig_old = []
        if not self.signatures:
            return
        for sig in tree.model.signatureDefs or []:
            if sig.subgraphIndex != self.subgraph:
                continue
            names = {text(m.name) for m in sig.outputs or []}
            name, k = self._sig_name, 1
            while name in names:
                name, k = f"{self._sig_name}_{k}", k + 1
            tm = S.TensorMapT()
            tm.name = name.encode("utf-8")
            tm.tensorIndex = self.tensor
            self._sig_old.append((sig, sig.outputs))
            sig.outputs = list(sig.outputs or []) + [tm]

    def _undo(self, tree: ModelTree) -> None:
        self._sg.outputs = self._old_outputs
        for sig, old in reversed(self._sig_old):
            sig.outputs = old


class RemoveOperator(EditCommand):
    """Remove an operator whose (first) input and output have the same shape and type,
    handing its output's consumers, subgraph outputs and signature outputs its input."""

    def __init__(self, subgraph: int, operator: int) -> None:
        super().__init__()
        self.subgraph, self.operator = subgraph, operator
        self._sg: Any = None
        self._op: Any = None
        self._src = self._dst = -1
        self._saved: list = []
        self.description = f"Remove subgraphs[{subgraph}].operators[{operator}]"

    def scope(self, tree: ModelTree) -> Scope:
        sg = tree.model.subgraphs[self.subgraph] if 0 <= self.subgraph < len(
            tree.model.subgraphs or []) else None
        ops = sg.operators if sg is not None else []
        tensors: set[int] = set()
        if 0 <= self.operator < len(ops or []):
            op = ops[self.operator]
            tensors = {int(i) for i in op.outputs if i >= 0} if op.outputs is not None else set()
        return Scope(self.subgraph, {self.operator}, tensors, structural=True)

    def _check(self, tree: ModelTree) -> None:
        sg, op = _operator(tree, self.subgraph, self.operator)
        where = f"subgraphs[{self.subgraph}].operators[{self.operator}]"
        name = builtin_name(tree.model, op)
        ins = [int(i) for i in op.inputs] if op.inputs is not None else []
        outs = [int(i) for i in op.outputs] if op.outputs is not None else []
        if len(outs) != 1 or not ins or ins[0] < 0:
            raise EditError(f"{where}: only an operator with one input tensor and one output "
                            f"can be removed ({name} has {len(ins)} inputs, {len(outs)} outputs)")
        a, b = sg.tensors[ins[0]], sg.tensors[outs[0]]
        sa = [int(d) for d in a.shape] if a.shape is not None else []
        sb = [int(d) for d in b.shape] if b.shape is not None else []
        if sa != sb or a.type != b.type:
            raise EditError(f"{where}: {name} changes its input ({dtypes.type_name(a.type)}"
                            f"{sa}) into a different output ({dtypes.type_name(b.type)}{sb}); "
                            "removing it would break the graph")
        if _quant_key(a) != _quant_key(b):
            self.warnings.append(f"{name}'s input and output are quantized differently: "
                                 "consumers now see the input's scale and zero point")
        for other in ins[1:]:
            if other >= 0 and _buffer_data(tree, sg.tensors[other]) is None:
                self.warnings.append(f"{name}'s input {other} ({text(sg.tensors[other].name)!r}) "
                                     "is not a constant and is no longer used")
        self._sg, self._op = sg, op
        self._src, self._dst = ins[0], outs[0]
        self.description = f"Remove {name} (subgraphs[{self.subgraph}].operators[{self.operator}])"

    def _do(self, tree: ModelTree) -> None:
        sg, src, dst = self._sg, self._src, self._dst
        saved = [("operators", sg.operators)]
        ops = list(sg.operators)
        del ops[self.operator]
        sg.operators = ops
        for op in ops:
            if op.inputs is not None and dst in {int(i) for i in op.inputs}:
                saved.append(("op_inputs", op, op.inputs))
                op.inputs = np.where(np.asarray(op.inputs) == dst, src,
                                     np.asarray(op.inputs)).astype(np.int32)
        if sg.outputs is not None and dst in {int(i) for i in sg.outputs}:
            saved.append(("sg_outputs", sg.outputs))
            sg.outputs = np.where(np.asarray(sg.outputs) == dst, src,
                                  np.asarray(sg.outputs)).astype(np.int32)
        for sig in tree.model.signatureDefs or []:
            if sig.subgraphIndex != self.subgraph:
                continue
            for tm in sig.outputs or []:
                if tm.tensorIndex == dst:
                    saved.append(("sig", tm, tm.tensorIndex))
                    tm.tensorIndex = src
        self._saved = saved

    def _undo(self, tree: ModelTree) -> None:
        for entry in reversed(self._saved):
            kind = entry[0]
            if kind == "operators":
                self._sg.operators = entry[1]
            elif kind == "op_inputs":
                entry[1].inputs = entry[2]
            elif kind == "sg_outputs":
                self._sg.outputs = entry[1]
            elif kind == "sig":
                entry[1].tensorIndex = entry[2]


def _quant_key(t) -> tuple:
    q = t.quantization
    if q is None or q.scale is None:
        return ()
    zp = [] if q.zeroPoint is None else [int(z) for z in q.zeroPoint]
    return (tuple(float(s) for s in q.scale), tuple(zp), int(q.quantizedDimension))


# -- signatures ------------------------------------------------------------------------------

class RenameSignature(EditCommand):
    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new
        self._sig: Any = None
        self._prev: Any = None
        self.description = f"Rename signature {old!r} to {new!r}"

    def _check(self, tree: ModelTree) -> None:
        sig = _signature(tree, self.old)
        self._raw = _utf8(self.new, "a signature key")
        if not self.new:
            raise EditError("a signature key must be non-empty text")
        if self.new != self.old and any(text(s.signatureKey) == self.new
                                        for s in tree.model.signatureDefs or []):
            raise EditError(f"a signature {self.new!r} already exists")
        self._sig = sig

    def _do(self, tree: ModelTree) -> None:
        self._prev = self._sig.signatureKey
        self._sig.signatureKey = self._raw

    def _undo(self, tree: ModelTree) -> None:
        self._sig.signatureKey = self._prev


class RenameSignatureTensor(EditCommand):
    """Rename one input or output name of a signature (what signature runners are called with)."""

    def __init__(self, key: str, kind: str, old: str, new: str) -> None:
        super().__init__()
        self.key, self.kind, self.old, self.new = key, kind, old, new
        self._tm: Any = None
        self._prev: Any = None
        self.description = f"Rename signature {key!r} {kind[:-1]} {old!r} to {new!r}"

    def _check(self, tree: ModelTree) -> None:
        if self.kind not in ("inputs", "outputs"):
            raise EditError(f"kind must be 'inputs' or 'outputs', not {self.kind!r}")
        sig = _signature(tree, self.key)
        maps = sig.inputs if self.kind == "inputs" else sig.outputs
        maps = maps or []
        names = [text(m.name) for m in maps]
        if self.old not in names:
            raise EditError(f"signature {self.key!r} has no {self.kind[:-1]} {self.old!r} "
                            f"({self.kind}: {', '.join(names) or 'none'})")
        self._raw = _utf8(self.new, "a signature tensor name")
        if not self.new:
            raise EditError("a signature tensor name must be non-empty text")
        if self.new != self.old and self.new in names:
            raise EditError(f"signature {self.key!r} already has an {self.kind[:-1]} {self.new!r}")
        self._tm = maps[names.index(self.old)]

    def _do(self, tree: ModelTree) -> None:
        self._prev = self._tm.name
        self._tm.name = self._raw

    def _undo(self, tree: ModelTree) -> None:
        self._tm.name = self._prev


# -- model header ----------------------------------------------------------------------------

class SetDescription(EditCommand):
    def __init__(self, description: str) -> None:
        super().__init__()
        self.text = description
        self._prev: Any = None
        self.description = f"Set the model description to {description!r}"

    def _check(self, tree: ModelTree) -> None:
        self._raw = _utf8(self.text, "the description")

    def _do(self, tree: ModelTree) -> None:
        self._prev = tree.model.description
        tree.model.description = self._raw

    def _undo(self, tree: ModelTree) -> None:
        tree.model.description = self._prev


class SetMetadata(EditCommand):
    """Add or replace a metadata entry (its bytes go in a buffer of their own)."""

    def __init__(self, name: str, value: bytes | str) -> None:
        super().__init__()
        self.name = name
        self.value = value
        self._saved: Any = None
        self.description = f"Set metadata {name!r}"

    def _check(self, tree: ModelTree) -> None:
        self._name = _utf8(self.name, "a metadata name")
        if not self.name:
            raise EditError("a metadata name must be non-empty text")
        raw = _utf8(self.value, f"metadata {self.name!r}") if isinstance(self.value, str) else self.value
        if not isinstance(raw, (bytes, bytearray, memoryview, np.ndarray)):
            raise EditError(f"metadata {self.name!r}: expected text or bytes")
        self._raw = np.frombuffer(bytes(raw), dtype=np.uint8).copy()
        self.description = f"Set metadata {self.name!r} ({self._raw.size} bytes)"

    def _do(self, tree: ModelTree) -> None:
        m = tree.model
        buf = S.BufferT()
        buf.data = self._raw
        if m.buffers is None:
            m.buffers = [S.BufferT()]
        m.buffers.append(buf)
        entries = m.metadata if m.metadata is not None else []
        match = [e for e in entries if text(e.name) == self.name]
        if match:
            self._saved = ("replace", match[0], match[0].buffer, m.metadata)
            match[0].buffer = len(m.buffers) - 1
        else:
            entry = S.MetadataT()
            entry.name = self._name
            entry.buffer = len(m.buffers) - 1
            self._saved = ("add", None, None, m.metadata)
            m.metadata = list(entries) + [entry]

    def _undo(self, tree: ModelTree) -> None:
        kind, entry, old_buffer, old_list = self._saved
        tree.model.buffers.pop()
        if kind == "replace":
            entry.buffer = old_buffer
        tree.model.metadata = old_list


class RemoveMetadata(EditCommand):
    """Remove a metadata entry (its buffer stays, emptied of nothing: indices must not move)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self._old: Any = None
        self.description = f"Remove metadata {name!r}"

    def _check(self, tree: ModelTree) -> None:
        names = [text(e.name) for e in tree.model.metadata or []]
        if self.name not in names:
            raise EditError(f"no metadata {self.name!r} (metadata: {', '.join(names) or 'none'})")

    def _do(self, tree: ModelTree) -> None:
        self._old = tree.model.metadata
        tree.model.metadata = [e for e in self._old if text(e.name) != self.name]

    def _undo(self, tree: ModelTree) -> None:
        tree.model.metadata = self._old
