"""Edits above the graph without re-serializing: a block of new tables at the front.

`splice` re-points a stored reference to a new object written *after* the table holding
it.  Two kinds of edit cannot be written so:

* a root field the root table does not store (a model saved without a description): the
  root has no slot to re-point, and it cannot be repacked (a copy packed from the object
  tree is the whole graph);
* a vector of tables that gains entries (an operator inserted: the subgraph's
  ``operators`` and ``tensors``, perhaps the model's ``operator_codes``).  The new vector
  must still point to the thousands of tables already in the file, and a flatbuffer
  reference is a forward offset, so it cannot go after them, at the end of the file.

But every object of the file lies after its 8-byte header, so a block inserted right
after the header lies before all of them.  It holds *shallow copies* of the tables on
the path from the root down to the changed field (the root, the subgraph; each with its
own vtable, its scalars, and offsets to the very vectors, strings and tables the old one
points to), copies of the vectors of tables on that path (the root's ``subgraphs``: every
entry to the old subgraph table but the one copied), the grown vectors (entries to the
old tables and to the new ones) and the new objects themselves, packed from the object
tree.  Every object of the block is placed after its parent (all references forward);
the header's root offset is re-pointed and the old root and subgraph are left
unreferenced.  The weights and the graph's tables are not touched: the edit costs the
block, a few hundred bytes plus four per entry of a grown vector.

Inserting bytes after the header moves every old object up by the block's size, so the
offsets from the block to them are computed for their moved positions; offsets between
old objects are relative and stay valid.  The block is a multiple of 16 bytes (inline
buffers keep their alignment), of `pieces.INSERT_GRANULE` when buffers are stored after
the flatbuffer, whose absolute offsets the caller then raises by its size.  A table whose
vtable stores fields this schema does not know is left to a full serialize (their types,
so their offsets, are unknown).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..schema.schema_layout import LAYOUT
from .patch import _FORMATS, _NP

HEADER = 8  # root offset + file identifier
_REFERENCES = ("String", "Vector", "Obj", "Union")


class Old(int):
    """The position of an object of the file as it is (before the block goes in)."""


@dataclass
class Table:
    """A table written in the block: (schema field, value) pairs, each value raw bytes
    (a scalar or struct as stored), an `Old` object, or another item of the block."""

    fields: list[tuple[dict, Any]]


@dataclass
class Vector:
    """A vector of offsets written in the block: entry ``i`` points to the old object at
    ``targets[i]``, or to ``items[i]`` (an item of the block) where ``targets[i] < 0``."""

    targets: np.ndarray
    items: dict[int, Any] = field(default_factory=dict)


def _size_align(spec: dict) -> tuple[int, int]:
    t = spec["type"]
    if t["base"] in _REFERENCES and not (t["base"] == "Obj" and _is_struct(t)):
        return 4, 4
    if t["base"] == "Obj":
        obj = LAYOUT["objects"][t["object"]]
        return int(obj["bytesize"]), int(obj["minalign"])
    size = struct.calcsize(_FORMATS[t["base"]])
    return size, size


def _is_struct(t: dict) -> bool:
    return bool(t.get("object")) and LAYOUT["objects"][t["object"]]["is_struct"]


def old_vector(loc, vec: int) -> np.ndarray:
    """Where each entry of the old vector of offsets at ``vec`` points (absolute)."""
    n = loc.u(vec, 4)
    entries = np.frombuffer(loc.data[vec + 4:vec + 4 + 4 * n].tobytes(), "<u4")
    return vec + 4 + 4 * np.arange(n, dtype=np.int64) + entries.astype(np.int64)


def shallow(loc, batch, row: int, new: dict[str, Any]) -> Table | None:
    """A copy of the table at (batch, row) with the fields of ``new`` ({name: value as
    `Table` takes it, or None to drop it}); None when its vtable stores unknown fields."""
    pos = int(batch.pos[row])
    vt = pos - struct.unpack("<i", loc.data[pos:pos + 4].tobytes())[0]
    specs = sorted(LAYOUT["objects"][batch.type_name]["fields"], key=lambda f: f["id"])
    if (loc.u(vt, 2) - 4) // 2 > len(specs):
        return None
    out: list[tuple[dict, Any]] = []
    for spec in specs:
        name = spec["name"]
        if name in new:
            if new[name] is not None:
                out.append((spec, new[name]))
            continue
        fo = batch.fo.get(name)
        off = int(fo[row]) if fo is not None else 0
        if not off:
            continue
        slot = pos + off
        size = _size_align(spec)[0]
        if spec["type"]["base"] in _REFERENCES and not _is_struct(spec["type"]):
            out.append((spec, Old(slot + loc.u(slot, 4))))
        else:
            out.append((spec, loc.data[slot:slot + size].tobytes()))
    return Table(out)


def plan_front(loc, new: dict[tuple, dict[str, Any]]) -> tuple[Table, list[tuple[int, int]]] | None:
    """The new root table, given new field values of tables by path ({path: {field:
    value}}): the tables on the way to each are copied (`shallow`), and so is each vector
    of tables on that way, with the copy's entry.  Also the old byte ranges the copies
    were read from (an edit of them would be lost).  None when it cannot be done."""
    pending = {path: dict(fields) for path, fields in new.items()}
    reads: list[tuple[int, int]] = []
    copied: set[int] = set()  # vectors copied here (a grown one is numbered anew)
    for depth in range(max(len(p) for p in pending), -1, -1):
        for path in [p for p in pending if len(p) == depth]:
            found = loc.table(path)
            if found is None:
                return None
            batch, row = found
            table = shallow(loc, batch, row, pending.pop(path))
            if table is None:
                return None
            reads.append((int(batch.pos[row]), loc.table_size(batch, row)))
            if not path:
                return table, reads
            parent, (label, k) = path[:-1], path[-1]
            fields = pending.setdefault(parent, {})
            if k is None:
                if label in fields:
                    return None
                fields[label] = table
                continue
            vec = fields.get(label)
            if vec is None:
                up = loc.table(parent)
                fo = up[0].fo.get(label) if up is not None else None
                if fo is None or not int(fo[up[1]]):
                    return None
                slot = int(up[0].pos[up[1]]) + int(fo[up[1]])
                start = slot + loc.u(slot, 4)
                vec = fields[label] = Vector(old_vector(loc, start))
                copied.add(id(vec))
                reads.append((start, 4 + 4 * len(vec.targets)))
            if id(vec) not in copied or not 0 <= k < len(vec.targets) or k in vec.items:
                return None  # the entry is new, or already replaced
            vec.items[k] = table
    return None


def _children(item: Any) -> list[Any]:
    if isinstance(item, Table):
        return [v for _, v in item.fields if isinstance(v, (Table, Vector)) or
                hasattr(v, "root")]
    if isinstance(item, Vector):
        return [item.items[k] for k in sorted(item.items)]
    return []


def build(root: Table, shift_of: Callable[[int], int]) -> tuple[bytes, int]:
    """(the block to insert after the header, its root table's position in it).
    ``shift_of(size)`` is the block's final size for a content of ``size`` bytes."""
    items: list[Any] = []
    stack = [root]
    while stack:  # parents before their children: every reference points forward
        item = stack.pop()
        items.append(item)
        stack += reversed(_children(item))
    where: dict[int, int] = {}
    layouts: dict[int, tuple[int, int, dict[str, int], int]] = {}
    at = 0
    for item in items:
        if isinstance(item, Table):
            at += at % 2
            n = max((s["id"] for s, _ in item.fields), default=-1) + 1
            offsets, inner, align = {}, 4, 8
            for spec, _ in sorted(item.fields, key=lambda f: -_size_align(f[0])[1]):
                size, a = _size_align(spec)
                inner += -inner % a
                offsets[spec["name"]] = inner
                inner += size
                align = max(align, a)
            vt, vt_len = at, 4 + 2 * n
            at = vt + vt_len
            at += -(HEADER + at) % align
            layouts[id(item)] = (vt, n, offsets, inner)
            where[id(item)] = at
            at += inner
        elif isinstance(item, Vector):
            at += -at % 4
            where[id(item)] = at
            at += 4 + 4 * len(item.targets)
        else:  # a packed object: 16-byte aligned in the file
            at += -(HEADER + at) % 16
            where[id(item)] = at
            at += len(item.data)
    size = shift_of(at)
    block = bytearray(size)

    def target(value: Any) -> int:  # block position of a new item, or of an old object
        if isinstance(value, Old):
            return int(value) + size - HEADER
        return where[id(value)] + (value.root if hasattr(value, "root") else 0)

    for item in items:
        p = where[id(item)]
        if isinstance(item, Table):
            vt, n, offsets, inner = layouts[id(item)]
            vtable = [4 + 2 * n, inner] + [0] * n
            for spec, _ in item.fields:
                vtable[2 + spec["id"]] = offsets[spec["name"]]
            block[vt:vt + 4 + 2 * n] = struct.pack(f"<{2 + n}H", *vtable)
            block[p:p + 4] = struct.pack("<i", p - vt)
            for spec, value in item.fields:
                at = p + offsets[spec["name"]]
                if isinstance(value, bytes):
                    block[at:at + len(value)] = value
                else:
                    block[at:at + 4] = struct.pack("<I", target(value) - at)
        elif isinstance(item, Vector):
            n = len(item.targets)
            slots = p + 4 + 4 * np.arange(n, dtype=np.int64)
            values = item.targets + size - HEADER - slots
            block[p:p + 4] = struct.pack("<I", n)
            block[p + 4:p + 4 + 4 * n] = values.astype("<u4").tobytes()
            for k, new in item.items.items():
                block[int(slots[k]):int(slots[k]) + 4] = \
                    struct.pack("<I", target(new) - int(slots[k]))
        else:
            block[p:p + len(item.data)] = item.data
    return bytes(block), where[id(root)]


def raw_scalar(spec: dict, value: Any) -> bytes | None:
    """A scalar field's value as its stored bytes, or None when it does not fit."""
    fmt = _FORMATS.get(spec["type"]["base"])
    if fmt is None or spec["type"]["base"] not in _NP:
        return None
    try:
        return struct.pack(fmt, value)
    except (struct.error, TypeError):
        return None
