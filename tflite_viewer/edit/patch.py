"""In-place patches: an edit of fixed-size fields as a few overwritten bytes.

Most option edits change one scalar that the file already stores (a stride, a padding enum,
an activation, an op version) or a scalar vector whose length stays (quantization scales,
a constant's bytes).  Re-packing the whole graph for that costs a Python object per table;
overwriting the bytes where the field lives costs nothing.  The field is found through the
reader's `FileIndex`: the table's position in the file (``batch.pos[row]``) plus the field's
offset from its vtable (``batch.fo[field][row]``).

A `FieldTarget` names one changed field by the *path* of its table from the root
(``(("subgraphs", 0), ("operators", 12), ("builtin_options", None))``), the table type,
the schema field name and the new value (as the object tree holds it).  `plan` turns
targets into byte patches, or returns None when any of them cannot be patched: the table
is missing or shared by two parents (a patch would change both), the field is absent (the
value was the default and is not stored: writing it needs a new vtable), a vector's
length changes, or the value does not fit the field's type.  The caller then takes the
slow path (a full serialize).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field as _dc_field
from typing import Any, Iterable

import numpy as np

from ..model.model import Model
from ..schema.schema_layout import LAYOUT

_FORMATS = {"Bool": "<?", "UType": "<B", "Byte": "<b", "UByte": "<B", "Short": "<h",
            "UShort": "<H", "Int": "<i", "UInt": "<I", "Long": "<q", "ULong": "<Q",
            "Float": "<f", "Double": "<d"}
_NP = {"Bool": "u1", "UType": "u1", "Byte": "i1", "UByte": "u1", "Short": "<i2",
       "UShort": "<u2", "Int": "<i4", "UInt": "<u4", "Long": "<i8", "ULong": "<u8",
       "Float": "<f4", "Double": "<f8"}


@dataclass(frozen=True)
class FieldTarget:
    """One changed field: where its table is, which field, and the value it must hold."""

    path: tuple[tuple[str, int | None], ...]
    table: str  # "tflite.Conv2DOptions"
    field: str  # schema name: "stride_w"
    value: Any  # object-tree value (int, float, bool, numpy array, list, None)
    #: the object-tree table the field belongs to: `splice` repacks it when the field
    #: cannot be written where it is stored
    owner: Any = _dc_field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Patch:
    """Bytes at ``pos`` were ``old`` and become ``new`` (same length)."""

    pos: int
    old: bytes
    new: bytes


def _field_spec(table: str, name: str) -> dict | None:
    obj = LAYOUT["objects"].get(table)
    if obj is None:
        return None
    for f in obj["fields"]:
        if f["name"] == name:
            return f
    return None



def child_batches(index) -> dict[tuple[int, str], list]:
    """The verifier's table batches (`model.verify.FileIndex`) grouped by (id of the parent
    batch, field label): how a path of field names walks down from the root table.  The
    byte patcher and the column diff both walk the file this way."""
    children: dict[tuple[int, str], list] = {}
    for batches in index.batches.values():
        for b in batches:
            if b.parent_batch is not None:
                children.setdefault((id(b.parent_batch), b.label), []).append(b)
    return children

class Locator:
    """Finds tables of one loaded model by path (built lazily, once per model)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.index = model.index
        self.data = model.data
        self._children: dict[tuple[int, str], list] | None = None

    def _child_batches(self, parent, label: str) -> list:
        if self._children is None:
            self._children = child_batches(self.index)
        return self._children.get((id(parent), label), [])

    def table(self, path: Iterable[tuple[str, int | None]]) -> tuple[Any, int] | None:
        """(batch, row) of the table at ``path``, or None if it is not in the file."""
        root = self.index.table("tflite.Model", "")
        if len(root) != 1:
            return None
        batch, row = root, 0
        for label, k in path:
            found = None
            for child in self._child_batches(batch, label):
                sel = child.parent == row
                if k is not None:
                    if child.index is None:
                        continue
                    sel &= child.index == k
                rows = np.flatnonzero(sel)
                if rows.size == 1:
                    found = (child, int(rows[0]))
                    break
                if rows.size > 1:
                    return None
            if found is None:
                return None
            batch, row = found
        return batch, row

    def shared(self, batch, row: int) -> bool:
        """Whether the table at (batch, row) is also reached from another parent."""
        pos = batch.pos[row]
        count = sum(int(np.count_nonzero(b.pos == pos))
                    for b in self.index.batches.get(batch.type_name, ()))
        return count != 1

    def vector_shared(self, batch, row: int, name: str) -> bool:
        """Whether the vector of field ``name`` at (batch, row) is also another table's."""
        r = self.index.r
        mine = None
        targets = []
        for b in self.index.batches.get(batch.type_name, ()):
            fo = b.fo.get(name)
            if fo is None:
                continue
            rows = np.flatnonzero(fo)
            field = b.pos[rows] + fo[rows]
            target = field + r.uint(field, 4)
            targets.append(target)
            if b is batch:
                k = np.flatnonzero(rows == row)
                if k.size:
                    mine = int(target[k[0]])
        if mine is None:
            return True
        return sum(int(np.count_nonzero(t == mine)) for t in targets) != 1

    def u(self, pos: int, n: int) -> int:
        return int.from_bytes(self.data[pos:pos + n].tobytes(), "little")

    def table_size(self, batch, row: int) -> int:
        pos = int(batch.pos[row])
        soff = struct.unpack("<i", self.data[pos:pos + 4].tobytes())[0]
        return self.u(pos - soff + 2, 2)


def _encode_scalar(base: str, value: Any) -> bytes | None:
    try:
        if base == "Bool":
            return struct.pack("<?", bool(value))
        if base in ("Float", "Double"):
            return struct.pack(_FORMATS[base], float(value))
        if isinstance(value, (float, np.floating)) and float(value) != int(value):
            return None
        return struct.pack(_FORMATS[base], int(value))
    except (struct.error, TypeError, ValueError, OverflowError):
        return None


def _encode_vector(element: str, value: Any) -> bytes | None:
    arr = np.asarray(value)
    if arr.dtype == object:
        return None
    dtype = np.dtype(_NP[element])
    if element == "Bool":
        out = arr.astype(bool).astype(np.uint8)
    else:
        try:
            out = arr.astype(dtype)
        except (TypeError, ValueError, OverflowError):
            return None
        if arr.dtype.kind in "biu" and dtype.kind in "iu" and not np.array_equal(out, arr):
            return None  # would wrap around
    return np.ascontiguousarray(out).reshape(-1).astype(dtype.newbyteorder("<")).tobytes()


def plan(locator: Locator, targets: list[FieldTarget]) -> list[Patch] | None:
    """Byte patches that make the loaded model hold every target value, or None."""
    patches: list[Patch] = []
    data = locator.data
    for t in targets:
        spec = _field_spec(t.table, t.field)
        if spec is None:
            return None
        found = locator.table(t.path)
        if found is None:
            return None
        batch, row = found
        if batch.type_name != t.table or locator.shared(batch, row):
            return None
        fo = int(batch.fo.get(t.field, np.zeros(len(batch), np.int64))[row])
        pos = int(batch.pos[row])
        base = spec["type"]["base"]
        if t.table == "tflite.Buffer" and t.field == "data":
            patch = _buffer_patch(locator, batch, row, t.value)
            if patch is None:
                return None
            if patch.new != patch.old:
                patches.append(patch)
            continue
        if base in _FORMATS:
            if fo == 0:
                default = spec["default_real"] if base in ("Float", "Double") else spec["default_integer"]
                if _same_scalar(base, t.value, default):
                    continue  # absent and still the default: nothing to write
                return None
            new = _encode_scalar(base, t.value)
            if new is None or fo + len(new) > locator.table_size(batch, row):
                return None
            at = pos + fo
        elif base == "Vector" and spec["type"]["element"] in _FORMATS:
            if fo == 0:
                if t.value is None:
                    continue
                return None
            if t.value is None or locator.vector_shared(batch, row, t.field):
                return None
            new = _encode_vector(spec["type"]["element"], t.value)
            if new is None:
                return None
            size = struct.calcsize(_FORMATS[spec["type"]["element"]])
            field = pos + fo
            target = field + locator.u(field, 4)
            n = locator.u(target, 4)
            if n * size != len(new) or target + 4 + len(new) > data.size:
                return None
            at = target + 4
        else:
            return None
        old = data[at:at + len(new)].tobytes()
        if old != new:
            patches.append(Patch(at, old, new))
    return _checked(patches)


def _same_scalar(base: str, value: Any, default: Any) -> bool:
    if value is None:
        return True
    if base == "Bool":
        return bool(value) == bool(default)
    try:
        return float(value) == float(default)
    except (TypeError, ValueError):
        return False


def _buffer_patch(locator: Locator, batch, row: int, value: Any) -> Patch | None:
    """A buffer's bytes, inline (``data``) or stored after the flatbuffer (``offset``)."""
    if value is None:
        return None
    new = np.ascontiguousarray(np.asarray(value)).view(np.uint8).reshape(-1)
    pos = int(batch.pos[row])
    fo = int(batch.fo["data"][row])
    if fo:
        if locator.vector_shared(batch, row, "data"):
            return None
        field = pos + fo
        target = field + locator.u(field, 4)
        n = locator.u(target, 4)
        start = target + 4
    else:
        off_fo, size_fo = int(batch.fo["offset"][row]), int(batch.fo["size"][row])
        if not off_fo or not size_fo:
            return None
        start, n = locator.u(pos + off_fo, 8), locator.u(pos + size_fo, 8)
        if start <= 1:
            return None
        offsets = [locator.index.scalar(b, "offset")
                   for b in locator.index.batches.get("tflite.Buffer", ())]
        if sum(int(np.count_nonzero(o == start)) for o in offsets) != 1:
            return None
    if n != new.size or n == 0 or start + n > locator.data.size:
        return None
    old = locator.data[start:start + n]
    if np.array_equal(old, new):
        return Patch(start, b"", b"")
    return Patch(start, old.tobytes(), new.tobytes())


def _checked(patches: list[Patch]) -> list[Patch] | None:
    """Patches sorted by position; None if two of them overlap."""
    patches = [p for p in patches if p.new]
    patches.sort(key=lambda p: p.pos)
    for a, b in zip(patches, patches[1:]):
        if a.pos + len(a.new) > b.pos:
            if a.pos == b.pos and a.new == b.new:
                continue
            return None
    return patches
