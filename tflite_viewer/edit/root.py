"""Edits of the model's root table (description, version, metadata, signature list)
without re-serializing: a new root table written at the front of the file.

`splice` re-points a stored field to a new object written after its table; the root table
cannot be repacked (a copy packed from the object tree is the whole graph), and a field it
does not store (a model saved without a description) has no slot to re-point.  But the
root's children need not move: a flatbuffer reference is a forward offset, and every
object of the file lies after its 8-byte header.  So a *shallow* root is written right
after the header: its own vtable, its scalars, offsets to the very vectors and strings the
old root points to (every old object moves up by the inserted size, so each offset is
recomputed), and the new values packed after it; the header's root offset is re-pointed
and the old root is left unreferenced.  Nothing below the root is touched, so the edit
costs a few hundred bytes whatever the size of the graph.

The inserted block is a multiple of 16 bytes (inline buffers keep their alignment), of
`pieces.INSERT_GRANULE` when buffers are stored after the flatbuffer, whose absolute
offsets are then raised by its size.  A root whose vtable stores fields this schema does
not know is left to a full serialize (their types, so their offsets, are unknown).
"""
from __future__ import annotations

import struct
from typing import Any

from ..schema.schema_layout import LAYOUT
from .patch import _FORMATS, _NP

HEADER = 8  # root offset + file identifier


def _fields() -> dict[str, dict]:
    return {f["name"]: f for f in LAYOUT["objects"]["tflite.Model"]["fields"]}


def _size(spec: dict) -> int:
    base = spec["type"]["base"]
    return 4 if base in ("String", "Vector", "Obj", "Union") else struct.calcsize(_FORMATS[base])


def shallow_root(loc, new: dict[str, Any], shift_of) -> tuple[bytes, int] | None:
    """(the block to insert after the header, its root table's position in it), holding
    every field of the file's root table as stored except those of ``new`` ({field:
    a raw scalar as bytes, or a `splice._Blob` whose object the field points to}).
    ``shift_of(size)`` is the block's final size for a content of ``size`` bytes (a
    multiple of the alignment the file needs).  None when the root cannot be rewritten
    so."""
    found = loc.table(())
    if found is None:
        return None
    batch, row = found
    pos = int(batch.pos[row])
    soff = struct.unpack("<i", loc.data[pos:pos + 4].tobytes())[0]
    vt = pos - soff
    stored_fields = (loc.u(vt, 2) - 4) // 2
    fields = _fields()
    by_id = sorted(fields.values(), key=lambda f: f["id"])
    if stored_fields > len(by_id):
        return None  # fields this schema does not know
    # (spec, kind, payload): kind "raw" bytes, "old" absolute target, "blob" a _Blob
    present: list[tuple[dict, str, Any]] = []
    for spec in by_id:
        name = spec["name"]
        if name in new:
            value = new[name]
            if value is not None:
                present.append((spec, "raw" if isinstance(value, bytes) else "blob", value))
            continue
        fo = batch.fo.get(name)
        off = int(fo[row]) if fo is not None else 0
        if not off:
            continue
        slot = pos + off
        base = spec["type"]["base"]
        if base in ("String", "Vector", "Obj", "Union"):
            present.append((spec, "old", slot + loc.u(slot, 4)))
        else:
            present.append((spec, "raw", loc.data[slot:slot + _size(spec)].tobytes()))
    n = max([s["id"] for s, _, _ in present], default=-1) + 1
    vtable_len = 4 + 2 * n
    # the table: soffset, then fields largest first (each aligned to its size)
    layout, at = {}, 4
    for spec, _, _ in sorted(present, key=lambda p: -_size(p[0])):
        size = _size(spec)
        at += -at % size
        layout[spec["name"]] = at
        at += size
    table_len = at
    table_pos = vtable_len + (-vtable_len % 8)
    end = table_pos + table_len
    blob_at: dict[str, int] = {}
    for spec, kind, value in present:
        if kind == "blob":  # a packed object, 16-byte aligned in the file
            end += -(HEADER + end) % 16
            blob_at[spec["name"]] = end
            end += len(value.data)
    size = shift_of(end)
    block = bytearray(size)
    vtable = [vtable_len, table_len] + [0] * n
    for spec, _, _ in present:
        vtable[2 + spec["id"]] = layout[spec["name"]]
    block[0:vtable_len] = struct.pack(f"<{len(vtable)}H", *vtable)
    block[table_pos:table_pos + 4] = struct.pack("<i", table_pos)  # vtable at the block start
    for spec, kind, value in present:
        at = table_pos + layout[spec["name"]]
        if kind == "raw":
            block[at:at + len(value)] = value
        elif kind == "old":  # the old object, moved up by the block's size
            block[at:at + 4] = struct.pack("<I", value + size - (HEADER + at))
        else:
            start = blob_at[spec["name"]]
            block[start:start + len(value.data)] = value.data
            block[at:at + 4] = struct.pack("<I", start + value.root - at)
    return bytes(block), table_pos


def raw_scalar(spec: dict, value: Any) -> bytes | None:
    """A scalar field's value as its stored bytes, or None when it does not fit."""
    fmt = _FORMATS.get(spec["type"]["base"])
    if fmt is None or spec["type"]["base"] not in _NP:
        return None
    try:
        return struct.pack(fmt, value)
    except (struct.error, TypeError):
        return None
