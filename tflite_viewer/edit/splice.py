"""Structural edits without re-serializing: new objects appended, references re-pointed.

`patch` overwrites fixed-size fields in place.  Most other edits change one object below a
table that is already in the file: a tensor's name (a string), a shape of another rank or
a subgraph's outputs (scalar vectors), a quantization or options table, a signature's list
of outputs.  A flatbuffer reference is a forward offset from where it is stored, so such an
object can be written anywhere *after* the table that refers to it and the table's stored
offset overwritten to point at it.  That costs the new object's bytes; the rest of the file,
its weights above all, stays where it is (`pieces.Pieces` shares it).

Where new objects go:

* Buffers inside the flatbuffer (the usual layout): at the end of the file, 16-byte aligned.
* Buffers stored after the flatbuffer (the > 2 GB layout): between the flatbuffer's last
  object (`FileIndex.extent`) and the first buffer.  Zero bytes left there by an earlier
  edit are reused; otherwise a block of whole `pieces.INSERT_GRANULE` units is inserted
  there and every absolute offset past it (``Buffer.offset``, large custom options) is
  raised by the block's size, so the weights keep their alignment and stay mappable.

A `FieldTarget` the patcher cannot write in place is written by *re-pointing* the field to
a new object when the field is stored (strings, vectors, tables, union members); otherwise
its table is *repacked*: a copy of the whole table (and everything below it) is packed from
the object tree and the reference to the table (its parent's field, or its entry in the
parent's vector) is re-pointed.  Subgraphs and the model root are never repacked (their
copies would be the whole graph); a root field with no slot to re-point goes into a
shallow copy of the root written at the front of the file (`front`).  `VectorShrink`
drops entries of a vector of tables in place (an operator removed); `VectorGrow` adds
some (an operator or tensor inserted): the grown vector, with shallow copies of the tables
above it, goes into that front block too.  Anything else returns None: the document then
serializes.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import flatbuffers
import numpy as np

from ..model.model import Model
from ..schema.schema_layout import LAYOUT
from .patch import _NP, FieldTarget, Locator, _field_spec, plan
from .pieces import INSERT_GRANULE
from .front import HEADER, Vector, build, old_vector, plan_front, raw_scalar
from .tree import attr_name

ALIGN = 16
_LIMIT = 2**31 - 1
_NEVER_REPACKED = {"tflite.Model", "tflite.SubGraph", "tflite.Buffer"}


@dataclass(frozen=True)
class VectorShrink:
    """Keep only entries ``keep`` (old indices, in their new order) of a vector of tables."""

    path: tuple
    table: str
    field: str
    keep: tuple[int, ...]


@dataclass(frozen=True)
class VectorGrow:
    """A vector of tables with entries added.  ``parts`` are, in order, ranges of old
    indices (those tables stay where they are) and new object-tree tables (packed)."""

    path: tuple
    table: str
    field: str
    parts: tuple


Edit = tuple[int, int, bytes]  # (position, bytes replaced, new bytes): see Pieces.replace


class _Blob:
    """One new object packed on its own: ``data[root:]`` starts the object."""

    def __init__(self, data: bytes, root: int) -> None:
        self.data = data
        self.root = root


def _finish(builder: flatbuffers.Builder, off: int) -> _Blob:
    builder.Finish(off)
    out = bytes(builder.Output())
    return _Blob(out, struct.unpack_from("<I", out, 0)[0])


def _pack_table(obj: Any) -> _Blob:
    b = flatbuffers.Builder(256)
    return _finish(b, obj.Pack(b))


def _pack_value(spec: dict, value: Any) -> _Blob | None:
    """A field's new value as a standalone object, or None if it cannot be one."""
    base = spec["type"]["base"]
    b = flatbuffers.Builder(256)
    if base == "String":
        raw = value if isinstance(value, (bytes, bytearray)) else str(value).encode("utf-8")
        return _finish(b, b.CreateString(bytes(raw)))
    if base in ("Obj", "Union"):
        return _finish(b, value.Pack(b)) if hasattr(value, "Pack") else None
    if base != "Vector":
        return None
    element = spec["type"]["element"]
    if element in _NP:
        arr = np.asarray(value)
        if arr.dtype == object:
            return None
        dtype = np.dtype(_NP[element])
        try:
            out = arr.astype(dtype) if element != "Bool" else arr.astype(bool).astype(np.uint8)
        except (TypeError, ValueError, OverflowError):
            return None
        if arr.dtype.kind in "biu" and dtype.kind in "iu" and arr.size and \
                not np.array_equal(out.astype(arr.dtype), arr):
            return None
        return _finish(b, b.CreateNumpyVector(np.ascontiguousarray(out).reshape(-1)))
    items = list(value)
    if element == "String":
        offs = [b.CreateString(bytes(s)) for s in items]
    elif element == "Obj" and not LAYOUT["objects"][spec["type"]["object"]]["is_struct"]:
        offs = [o.Pack(b) for o in items]
    else:
        return None
    b.StartVector(4, len(offs), 4)
    for o in reversed(offs):
        b.PrependUOffsetTRelative(o)
    return _finish(b, b.EndVector())


class _Plan:
    def __init__(self, model: Model, tree) -> None:
        self.loc = Locator(model)
        self.model = model
        self.tree = tree
        self.edits: dict[int, tuple[int, bytes]] = {}
        self.blobs: list[_Blob] = []
        self.slots: list[tuple[int, int]] = []  # (slot position, blob index)
        self.repacked: set[tuple] = set()
        #: new field values of tables copied into the front block ({path: {field: value}},
        #: see `front`): root fields the root does not store, grown vectors
        self.front: dict[tuple, dict[str, Any]] = {}
        self.reads: list[tuple[int, int]] = []  # old vectors the grown ones copy

    # -- helpers ---------------------------------------------------------------------------
    def _u32(self, pos: int) -> int:
        return self.loc.u(pos, 4)

    def _put(self, pos: int, new: bytes) -> bool:
        old = self.edits.get(pos)
        if old is not None and old[1] != new:
            return False
        self.edits[pos] = (len(new), new)
        return True

    def _point(self, slot: int, blob: _Blob) -> None:
        self.blobs.append(blob)
        self.slots.append((slot, len(self.blobs) - 1))

    def _field_slot(self, path: tuple, field: str) -> int | None:
        """Position of a stored offset field of the (unshared) table at ``path``."""
        found = self.loc.table(path)
        if found is None:
            return None
        batch, row = found
        if self.loc.shared(batch, row):
            return None
        fo = batch.fo.get(field)
        if fo is None or not int(fo[row]):
            return None
        return int(batch.pos[row]) + int(fo[row])

    def _parent_slot(self, path: tuple) -> int | None:
        """Position of the reference to the table at ``path`` (its parent's field or
        vector entry)."""
        if not path or self.loc.table(path) is None:
            return None
        *up, (label, k) = path
        slot = self._field_slot(tuple(up), label)
        if slot is None or k is None:
            return slot
        vec = slot + self._u32(slot)
        if not 0 <= k < self._u32(vec):
            return None
        return vec + 4 + 4 * k

    # -- targets ---------------------------------------------------------------------------
    def _covered(self, path: tuple) -> bool:
        """Whether a table at or above ``path`` is already repacked (from the tree)."""
        return any(path[:k] in self.repacked for k in range(len(path) + 1))

    def target(self, t: FieldTarget) -> bool:
        if self._covered(t.path):
            return True
        patches = plan(self.loc, [t]) if _patchable(t) else None
        if patches is not None:
            return all(self._put(p.pos, p.new) for p in patches)
        spec = _field_spec(t.table, t.field)
        if spec is None or t.table == "tflite.Buffer":
            return False
        base = spec["type"]["base"]
        if base in ("String", "Vector", "Obj", "Union") and t.value is not None:
            slot = self._field_slot(t.path, t.field)
            if slot is not None and (base != "Union" or self._same_union(t)):
                blob = _pack_value(spec, t.value)
                if blob is None:
                    return False
                self._point(slot, blob)
                return True
        if t.path == () and t.table == "tflite.Model":
            return self.root_field(spec, t.field, t.value)
        return self.repack(t.path, t.table, getattr(t, "owner", None))

    def root_field(self, spec: dict, name: str, value: Any) -> bool:
        """A root field the root does not store (or stores as a union of another member):
        written into a new shallow root at the front of the file (`root`)."""
        base = spec["type"]["base"]
        root = self.front.setdefault((), {})
        if base == "Union" or name in root:
            return False
        if value is None:
            root[name] = None
        elif base in ("String", "Vector", "Obj"):
            blob = _pack_value(spec, value)
            if blob is None:
                return False
            root[name] = blob
        else:
            raw = raw_scalar(spec, value)
            if raw is None:
                return False
            root[name] = raw
        return True

    def _same_union(self, t: FieldTarget) -> bool:
        """Whether the stored union tag already names the new member's table."""
        found = self.loc.table(t.path + ((t.field, None),))
        return found is not None and found[0].type_name == \
            "tflite." + type(t.value).__name__.removesuffix("T")

    def repack(self, path: tuple, table: str, owner: Any) -> bool:
        if owner is None and table not in _NEVER_REPACKED:
            try:
                owner = tree_object(self.tree, path)
            except (AttributeError, IndexError, KeyError, TypeError):
                return False
        if table in _NEVER_REPACKED or owner is None or not hasattr(owner, "Pack"):
            return False
        if self._covered(path):
            return True
        slot = self._parent_slot(path)
        if slot is None:
            return False
        self._point(slot, _pack_table(owner))
        self.repacked.add(path)
        return True

    def shrink(self, s: VectorShrink) -> bool:
        slot = self._field_slot(s.path, s.field)
        if slot is None:
            return False
        found = self.loc.table(s.path)
        if self.loc.vector_shared(found[0], found[1], s.field):
            return False
        vec = slot + self._u32(slot)
        n = self._u32(vec)
        keep = np.asarray(s.keep, dtype=np.int64)
        if keep.size and (keep.min() < 0 or keep.max() >= n):
            return False
        entries = np.frombuffer(self.loc.data[vec + 4:vec + 4 + 4 * n].tobytes(), "<u4")
        targets = vec + 4 + 4 * np.arange(n, dtype=np.int64) + entries
        new = targets[keep] - (vec + 4 + 4 * np.arange(keep.size, dtype=np.int64))
        raw = struct.pack("<I", keep.size) + new.astype("<u4").tobytes()
        return self._put(vec, raw)

    def grow(self, g: VectorGrow) -> bool:
        """A grown vector of tables: a new vector in the front block (`front`)."""
        found = self.loc.table(g.path)
        fields = self.front.setdefault(g.path, {})
        if found is None or found[0].type_name != g.table or g.field in fields:
            return False
        batch, row = found
        fo = batch.fo.get(g.field)
        if fo is None or not int(fo[row]):
            return False
        slot = int(batch.pos[row]) + int(fo[row])
        vec = slot + self._u32(slot)
        old = old_vector(self.loc, vec)
        parts: list[np.ndarray] = []
        items: dict[int, _Blob] = {}
        at = 0
        for part in g.parts:
            if isinstance(part, range):
                if part.step != 1 or not 0 <= part.start <= part.stop <= len(old):
                    return False
                parts.append(old[part.start:part.stop])
                at += len(part)
            elif hasattr(part, "Pack"):
                items[at] = _pack_table(part)
                parts.append(np.full(1, -1, np.int64))
                at += 1
            else:
                return False
        fields[g.field] = Vector(np.concatenate(parts) if parts else
                                 np.zeros(0, np.int64), items)
        self.reads.append((vec, 4 + 4 * len(old)))
        return True

    def _touched(self, ranges: list[tuple[int, int]]) -> bool:
        """Whether an edit or a re-pointed slot lies in bytes the front block copied."""
        written = [(pos, n) for pos, (n, _) in self.edits.items()]
        written += [(slot, 4) for slot, _ in self.slots]
        return any(p < a + n and a < p + m for p, m in written
                   for a, n in ranges + self.reads)

    # -- placing new objects -----------------------------------------------------------------
    def finish(self, size: int, appendix: bool) -> list[Edit] | None:
        front: list[Edit] = []
        lift = 0  # bytes inserted after the header: every absolute offset moves up so
        if self.front:
            if appendix:  # the zip's absolute offsets would move
                return None
            planned = plan_front(self.loc, self.front)
            if planned is None or self._touched(planned[1]):
                return None
            granule = INSERT_GRANULE if _external_offsets(self.loc) is not None else ALIGN
            block, table_pos = build(planned[0], lambda n: -(-n // granule) * granule)
            lift = len(block)
            if size + lift > _LIMIT and _external_offsets(self.loc) is None:
                return None
            front = [(0, 4, struct.pack("<I", HEADER + table_pos)), (HEADER, 0, block)]
        if not self.blobs:
            if lift and not self._lift_external(lift, None, 0):
                return None
            return [(pos, n, new) for pos, (n, new) in self.edits.items()] + front
        body = bytearray()
        where: list[int] = []
        for blob in self.blobs:
            body += bytes(-len(body) % ALIGN)
            where.append(len(body) + blob.root)
            body += blob.data
        external = _external_offsets(self.loc)
        if external is None:  # buffers inside the flatbuffer: append at the end
            if appendix:
                return None
            start = -(-size // ALIGN) * ALIGN
            if start + len(body) + lift > _LIMIT:
                return None
            placed = (size, 0, bytes(start - size) + bytes(body))
        else:
            positions, first = external
            extent = self.loc.index.extent
            start = -(-extent // ALIGN) * ALIGN
            if start + len(body) <= first:  # fits in the gap before the first buffer
                placed = (start, len(body), bytes(body))
                if lift and not self._lift_external(lift, None, 0):
                    return None
            else:
                if appendix or start + len(body) + lift > _LIMIT:
                    return None
                block = bytes(start - extent) + bytes(body)
                shift = -(-len(block) // INSERT_GRANULE) * INSERT_GRANULE
                placed = (extent, 0, block + bytes(shift - len(block)))
                if not self._lift_external(lift, extent, shift):
                    return None
        for slot, k in self.slots:
            target = start + where[k]
            if target <= slot or not self._put(slot, struct.pack("<I", target - slot)):
                return None
        return [(pos, n, new) for pos, (n, new) in self.edits.items()] + [placed] + front

    def _lift_external(self, lift: int, extent: int | None, shift: int) -> bool:
        """Raise the absolute offsets stored in the file by ``lift`` (bytes inserted after
        the header), and by ``shift`` more for those at or past ``extent``."""
        external = _external_offsets(self.loc)
        if external is None:
            return True
        for pos, value in external[0]:
            new = value + lift + (shift if extent is not None and value >= extent else 0)
            if new != value and not self._put(pos, struct.pack("<Q", new)):
                return False
        return True


def _patchable(t: FieldTarget) -> bool:
    spec = _field_spec(t.table, t.field)
    if spec is None:
        return False
    base = spec["type"]["base"]
    if t.table == "tflite.Buffer" and t.field == "data":
        return True
    if base == "Vector":
        return spec["type"]["element"] in _NP and t.value is not None and \
            np.asarray(t.value).dtype != object
    return base in _NP


def _external_offsets(loc: Locator) -> tuple[list[tuple[int, int]], int] | None:
    """(position and value of every stored absolute offset, the smallest value), or None
    when nothing is stored after the flatbuffer."""
    out: list[tuple[int, int]] = []
    index = loc.index
    for type_name, field in (("tflite.Buffer", "offset"),
                             ("tflite.Operator", "large_custom_options_offset")):
        for batch in index.batches.get(type_name, ()):
            fo = batch.fo.get(field)
            if fo is None:
                continue
            rows = np.flatnonzero(fo)
            if not rows.size:
                continue
            pos = batch.pos[rows] + fo[rows]
            values = index.scalar(batch, field)[rows].astype(np.int64)
            keep = values > 1
            out += list(zip(pos[keep].tolist(), values[keep].tolist()))
    if not out:
        return None
    return out, min(v for _, v in out)


def tree_object(tree, path: tuple) -> Any:
    """The object-tree object at a file path (``(("subgraphs", 0), ("tensors", 3))``)."""
    obj, table = tree.model, "tflite.Model"
    for label, k in path:
        obj = getattr(obj, attr_name(table, label))
        if k is not None:
            obj = obj[k]
        spec = _field_spec(table, label)
        if spec["type"]["base"] == "Union":
            table = "tflite." + type(obj).__name__.removesuffix("T")
        else:
            table = spec["type"]["object"]
    return obj


def plan_splice(model: Model, tree, targets: list, size: int,
                appendix: bool = False) -> list[Edit] | None:
    """The edits (see `Pieces.replace`) that make ``model``'s bytes hold every target, or
    None when one of them needs a full serialize."""
    p = _Plan(model, tree)
    for t in targets:
        ok = p.shrink(t) if isinstance(t, VectorShrink) else \
            p.grow(t) if isinstance(t, VectorGrow) else p.target(t)
        if not ok:
            return None
    return p.finish(size, appendix)
