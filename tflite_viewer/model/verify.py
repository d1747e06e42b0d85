"""Structural verification of a flatbuffer, driven by the schema's generated wire layout.

The Python flatbuffers runtime has no verifier: its accessors trust every offset, so a
corrupt file gives IndexError, struct.error, garbage or a huge allocation far from the
cause.  LiteRT runs flatbuffers' C++ Verifier before touching a model; this module does
the same job so that every later read is safe.

It walks the file breadth-first *by table type*, not object by object: all operators of
all subgraphs are checked together with a few numpy operations per field.  That keeps
verification of a 20,000-operator model in the tens of milliseconds.  When a check fails,
the first failing object's path (``subgraphs[0].operators[12].inputs``) is rebuilt from
the parent links each batch keeps.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import numpy as np

from .errors import ModelFormatError

#: what every "past the end of the file" message adds: the usual cause
TRUNCATED = ": the file looks truncated"

_SCALAR_SIZES = {
    "UType": 1, "Bool": 1, "Byte": 1, "UByte": 1, "Short": 2, "UShort": 2,
    "Int": 4, "UInt": 4, "Long": 8, "ULong": 8, "Float": 4, "Double": 8,
}


@dataclass(frozen=True)
class _Field:
    name: str
    voffset: int
    kind: str  # scalar | struct | string | table | union | vector
    size: int = 0  # inline size for scalars/structs, element size for vectors
    child: str | None = None  # table type (tables, vectors of tables)
    element: str | None = None  # vector element kind: scalar | struct | string | table
    union_enum: str | None = None
    tag_voffset: int = 0  # for unions: the vtable offset of the `<name>_type` field
    required: bool = False


@dataclass(frozen=True)
class _Object:
    name: str
    fields: tuple[_Field, ...]


@dataclass
class _Batch:
    """Positions of tables of one type, with links back to where each came from."""

    type_name: str
    pos: np.ndarray  # int64 absolute positions of the tables
    label: str  # path segment, e.g. "operators"
    index: np.ndarray | None = None  # element index inside its vector, if any
    parent: np.ndarray | None = None  # index of the parent object in parent_batch
    parent_batch: "_Batch | None" = None
    fo: dict[str, np.ndarray] = field(default_factory=dict)  # field offsets (0 = absent)

    def __len__(self) -> int:
        return int(self.pos.size)


def _compile_field(f: dict, objects: dict, by_name: dict[str, dict]) -> _Field | None:
    t = f["type"]
    base = t["base"]
    req = bool(f.get("required"))
    if base in _SCALAR_SIZES:
        return _Field(f["name"], f["offset"], "scalar", _SCALAR_SIZES[base], required=req)
    if base == "String":
        return _Field(f["name"], f["offset"], "string", required=req)
    if base == "Obj":
        obj = objects[t["object"]]
        if obj["is_struct"]:
            return _Field(f["name"], f["offset"], "struct", obj["bytesize"], required=req)
        return _Field(f["name"], f["offset"], "table", child=t["object"], required=req)
    if base == "Union":
        tag = by_name.get(f["name"] + "_type")
        return _Field(f["name"], f["offset"], "union", union_enum=t["enum"],
                      tag_voffset=tag["offset"] if tag else 0, required=req)
    if base == "Vector":
        el = t["element"]
        if el in _SCALAR_SIZES:
            return _Field(f["name"], f["offset"], "vector", _SCALAR_SIZES[el], element="scalar",
                          required=req)
        if el == "String":
            return _Field(f["name"], f["offset"], "vector", 4, element="string", required=req)
        if el == "Obj":
            obj = objects[t["object"]]
            if obj["is_struct"]:
                return _Field(f["name"], f["offset"], "vector", obj["bytesize"],
                              element="struct", required=req)
            return _Field(f["name"], f["offset"], "vector", 4, element="table",
                          child=t["object"], required=req)
        # Vectors of unions: only the offsets are checked.
        return _Field(f["name"], f["offset"], "vector", 4, element="scalar", required=req)
    return None  # Arrays only occur inside structs; Vector64 is not used by these schemas.


_COMPILED: dict[int, tuple[dict, dict[str, _Object]]] = {}


def _compile(layout: dict) -> dict[str, _Object]:
    """The layout's tables as compact field lists (cached: layouts are module constants)."""
    cached = _COMPILED.get(id(layout))
    if cached is not None and cached[0] is layout:
        return cached[1]
    objects = layout["objects"]
    compiled: dict[str, _Object] = {}
    for name, obj in objects.items():
        if obj["is_struct"]:
            continue
        by_name = {f["name"]: f for f in obj["fields"]}
        fields = []
        for f in obj["fields"]:
            if f.get("deprecated"):
                continue
            cf = _compile_field(f, objects, by_name)
            if cf is not None:
                fields.append(cf)
        compiled[name] = _Object(name, tuple(fields))
    _COMPILED[id(layout)] = (layout, compiled)
    return compiled


class _Reader:
    """Vectorized little-endian reads at arbitrary (unaligned) positions."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.size = int(data.size)

    def uint(self, pos: np.ndarray, nbytes: int) -> np.ndarray:
        out = np.zeros(pos.shape, dtype=np.int64)
        for k in range(nbytes):
            out |= self.data[pos + k].astype(np.int64) << (8 * k)
        return out

    def int32(self, pos: np.ndarray) -> np.ndarray:
        v = self.uint(pos, 4)
        return np.where(v >= 1 << 31, v - (1 << 32), v)


def _path(batch: _Batch | None, i: int) -> str:
    parts: list[str] = []
    while batch is not None:
        seg = batch.label
        if batch.index is not None:
            seg += f"[{int(batch.index[i])}]"
        if seg:
            parts.append(seg)
        if batch.parent is None:
            break
        i = int(batch.parent[i])
        batch = batch.parent_batch
    return ".".join(reversed(parts)) or "<root>"


class Verifier:
    """Checks that every table, vector and string reachable from the root lies in the file."""

    def __init__(self, layout: dict, data: np.ndarray, max_elements: int | None = None) -> None:
        self.layout = layout
        self.objects = _compile(layout)
        self.r = _Reader(data)
        # A well-formed file cannot hold more vector elements than it has bytes; corrupt
        # files with overlapping vectors could otherwise make us allocate without bound.
        self.max_elements = max_elements if max_elements is not None else max(self.r.size, 1024)
        self.extent = 8  # where the last table, vtable, vector or string seen ends

    # -- failure helpers -------------------------------------------------------------
    def _fail(self, batch: _Batch, ok: np.ndarray, rows: np.ndarray | None, where: str,
              message: str) -> None:
        bad = np.flatnonzero(~ok)
        if bad.size == 0:
            return
        i = int(rows[bad[0]]) if rows is not None else int(bad[0])
        path = _path(batch, i)
        if path == "<root>" and where:
            path = where
        elif where:
            path = f"{path}.{where}"
        raise ModelFormatError(path, message)

    def _past_end(self, what: str, ends: np.ndarray) -> str:
        """"... past the end of the file" with the sizes, and the likely cause: a file cut
        short (a download or copy that stopped) is the usual reason a sound-looking
        flatbuffer points past its end."""
        to = f" (to byte {int(ends[0]):,})" if ends.size else ""
        return (f"{what} past the end of the file{to}, but the file has only "
                f"{self.r.size:,} bytes: the file looks truncated")

    # -- the walk --------------------------------------------------------------------
    def verify(self, root_type: str, identifier: str | None) -> "FileIndex":
        size = self.r.size
        if size < 8:
            raise ModelFormatError("<file>", f"{size} bytes is too short to be a flatbuffer")
        if identifier is not None:
            got = bytes(self.r.data[4:8])
            if got != identifier.encode():
                raise ModelFormatError(
                    "<file>", f"file identifier is {describe_bytes(got)}, expected "
                    f"\"{identifier}\": not a TFLite model")
        root = int(self.r.uint(np.array([0]), 4)[0])
        if root + 4 > size:
            raise ModelFormatError("<root>", f"root table offset {root} past the end of the "
                                   f"file ({size} bytes)" + TRUNCATED)
        queue = [_Batch(root_type, np.array([root], dtype=np.int64), "")]
        found: dict[str, list[_Batch]] = {}
        while queue:
            batch = queue.pop(0)
            if batch.pos.size:
                found.setdefault(batch.type_name, []).append(batch)
                queue.extend(self._verify_tables(batch))
        index = FileIndex(self.layout, self.r, found)
        index.extent = self.extent
        return index

    def _verify_tables(self, batch: _Batch) -> list[_Batch]:
        r, size = self.r, self.r.size
        pos = batch.pos
        self._fail(batch, (pos >= 0) & (pos + 4 <= size), None, "",
                   f"{batch.type_name.split('.')[-1]} table starts past the end of the file"
                   + TRUNCATED)
        vt = pos - r.int32(pos)
        self._fail(batch, (vt >= 0) & (vt + 4 <= size), None, "", "vtable out of bounds")
        vsize = r.uint(vt, 2)
        tsize = r.uint(vt + 2, 2)
        self._fail(batch, (vsize >= 4) & (vsize % 2 == 0) & (vt + vsize <= size), None, "",
                   "invalid vtable size")
        self._fail(batch, (tsize >= 4) & (pos + tsize <= size), None, "",
                   "table extends past the end of the file" + TRUNCATED)
        self.extent = max(self.extent, int((pos + tsize).max()), int((vt + vsize).max()))
        children: list[_Batch] = []
        for f in self.objects[batch.type_name].fields:
            has_slot = f.voffset + 2 <= vsize
            fo = np.zeros(pos.shape, dtype=np.int64)
            if has_slot.any():
                fo[has_slot] = r.uint(vt[has_slot] + f.voffset, 2)
            batch.fo[f.name] = fo
            present = fo != 0
            if f.required:
                self._fail(batch, present, None, f.name, "required field is missing")
            if not present.any():
                continue
            rows = np.flatnonzero(present)
            fpos = pos[rows] + fo[rows]
            if f.kind in ("scalar", "struct"):
                self._fail(batch, fpos + f.size <= size, rows, f.name,
                           "field lies past the end of the file" + TRUNCATED)
                continue
            self._fail(batch, fpos + 4 <= size, rows, f.name, "offset lies past the end of the file" + TRUNCATED)
            target = fpos + r.uint(fpos, 4)
            ok = target + 4 <= size
            if not ok.all():
                self._fail(batch, ok, rows, f.name,
                           self._past_end("offset points", target[~ok] + 4))
            if f.kind == "table":
                children.append(_Batch(f.child, target, f.name, None, rows, batch))
            elif f.kind == "string":
                self._check_vector(batch, rows, f.name, target, 1, string=True)
            elif f.kind == "union":
                children.extend(self._union(batch, f, pos, vt, vsize, rows, target))
            else:
                children.extend(self._vector(batch, f, rows, target))
        return children

    def _check_vector(self, batch: _Batch, rows: np.ndarray, name: str, target: np.ndarray,
                      elem_size: int, string: bool = False) -> np.ndarray:
        length = self.r.uint(target, 4)
        end = target + 4 + length * elem_size + (1 if string else 0)
        kind = "string" if string else "vector"
        if end.size:
            self.extent = max(self.extent, int(end.max()))
        if not (end <= self.r.size).all():
            bad = np.flatnonzero(end > self.r.size)[0]
            self._fail(batch, end <= self.r.size, rows, name,
                       self._past_end(f"{kind} of {int(length[bad])} elements runs",
                                      end[bad:bad + 1]))
        return length

    def _vector(self, batch: _Batch, f: _Field, rows: np.ndarray,
                target: np.ndarray) -> list[_Batch]:
        length = self._check_vector(batch, rows, f.name, target, f.size)
        if f.element not in ("table", "string"):
            return []
        total = int(length.sum())
        if total > self.max_elements:
            self._fail(batch, np.zeros(1, bool), rows[:1], f.name,
                       f"vectors claim {total} elements, more than the file can hold")
        if total == 0:
            return []
        starts = np.repeat(np.cumsum(length) - length, length)
        index = np.arange(total, dtype=np.int64) - starts
        elem_pos = np.repeat(target + 4, length) + 4 * index
        parent_rows = np.repeat(rows, length)
        elem_target = elem_pos + self.r.uint(elem_pos, 4)
        elem_batch = _Batch(f.child or "string", elem_target, f.name, index, parent_rows, batch)
        ok = elem_target + 4 <= self.r.size
        if not ok.all():
            self._fail(elem_batch, ok, None, "",
                       self._past_end("element offset points", elem_target[~ok] + 4))
        if f.element == "string":
            self._check_vector(elem_batch, np.arange(total), "", elem_target, 1, string=True)
            return []
        return [elem_batch]

    def _union(self, batch: _Batch, f: _Field, pos: np.ndarray, vt: np.ndarray,
               vsize: np.ndarray, rows: np.ndarray, target: np.ndarray) -> list[_Batch]:
        enum = self.layout["enums"][f.union_enum]
        types = enum.get("union_types", {})
        tag = np.zeros(rows.shape, dtype=np.int64)
        if f.tag_voffset:
            has = f.tag_voffset + 2 <= vsize[rows]
            to = np.zeros(rows.shape, dtype=np.int64)
            to[has] = self.r.uint(vt[rows][has] + f.tag_voffset, 2)
            present = to != 0
            tag[present] = self.r.uint(pos[rows][present] + to[present], 1)
        out = []
        for value in np.unique(tag):
            name = types.get(int(value))
            if name is None:  # NONE, or a union member newer than our schema
                continue
            sel = tag == value
            out.append(_Batch(name, target[sel], f.name, None, rows[sel], batch))
        return out


class FileIndex:
    """What verification found, kept as columns: every table of a type, with its fields.

    Consumers that need one field of every operator (the semantic checks, the graph)
    read it here with a few numpy operations instead of building a view per object.
    """

    _NP = {"UType": "u1", "Bool": "u1", "Byte": "i1", "UByte": "u1", "Short": "<i2",
           "UShort": "<u2", "Int": "<i4", "UInt": "<u4", "Long": "<i8", "ULong": "<u8",
           "Float": "<f4", "Double": "<f8"}

    def __init__(self, layout: dict, reader: _Reader, batches: dict[str, list[_Batch]]) -> None:
        self.layout = layout
        self.r = reader
        self.batches = batches
        self.extent = 0  # end of the flatbuffer's own objects (buffers stored after it excluded)

    def table(self, type_name: str, label: str | None = None) -> _Batch:
        """The (single) batch of a table type, optionally the one reached through ``label``."""
        found = [b for b in self.batches.get(type_name, ()) if label is None or b.label == label]
        if not found:  # no table of the type anywhere (every vector of it absent or empty):
            # an empty batch whose columns are empty arrays, like any other batch's
            empty = np.zeros(0, np.int64)
            return _Batch(type_name, empty, label or "", empty, empty)
        if len(found) > 1:
            raise ValueError(f"{type_name} is reached in {len(found)} ways; name a label")
        return found[0]

    def _field(self, type_name: str, name: str) -> dict:
        for f in self.layout["objects"][type_name]["fields"]:
            if f["name"] == name:
                return f
        raise KeyError(f"{type_name} has no field {name}")

    def _gather(self, pos: np.ndarray, dtype: str) -> np.ndarray:
        dt = np.dtype(dtype)
        if pos.size == 0:
            return np.zeros(0, dt)
        size = dt.itemsize
        data = self.r.data
        if size > 1 and not (pos % size).any():
            # every value aligned to its size (as flatbuffers stores them): one gather of
            # whole values, not of each of their bytes (a per-channel quantized decoder
            # has a million scales and zero points)
            return data[:data.size - data.size % size].view(dt)[pos // size]
        raw = data[pos[:, None] + np.arange(size)]
        return np.ascontiguousarray(raw).view(dt).reshape(-1)

    def scalar(self, batch: _Batch, name: str) -> np.ndarray:
        """One scalar field of every table in the batch, defaults filled in."""
        f = self._field(batch.type_name, name)
        base = f["type"]["base"]
        dtype = self._NP[base]
        default = f["default_real"] if base in ("Float", "Double") else f["default_integer"]
        out = np.full(len(batch), default, dtype=np.dtype(dtype).newbyteorder("="))
        fo = batch.fo.get(name)
        if fo is None:
            return out
        present = np.flatnonzero(fo)
        out[present] = self._gather(batch.pos[present] + fo[present], dtype)
        return out

    def lengths(self, batch: _Batch, name: str) -> np.ndarray:
        """Element counts of a vector field of every table, without reading the elements."""
        fo = batch.fo.get(name)
        lengths = np.zeros(len(batch), dtype=np.int64)
        if fo is None or not fo.any():
            return lengths
        rows = np.flatnonzero(fo)
        fpos = batch.pos[rows] + fo[rows]
        lengths[rows] = self.r.uint(fpos + self.r.uint(fpos, 4), 4)
        return lengths

    def vector(self, batch: _Batch, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A scalar-vector field of every table: (all values, owner row per value, lengths)."""
        f = self._field(batch.type_name, name)
        dtype = self._NP[f["type"]["element"]]
        starts, lengths = self.spans(batch, name)
        rows = np.flatnonzero(lengths)
        if not rows.size:
            return np.zeros(0, np.dtype(dtype)), np.zeros(0, np.int64), lengths
        n = lengths[rows]
        total = int(n.sum())
        index = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
        size = np.dtype(dtype).itemsize
        values = self._gather(np.repeat(starts[rows], n) + size * index, dtype)
        return values, np.repeat(rows, n), lengths

    def spans(self, batch: _Batch, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Where a vector field of every table lies: (position of its first element,
        element count), both 0 where the field is absent."""
        fo = batch.fo.get(name)
        starts = np.zeros(len(batch), dtype=np.int64)
        lengths = np.zeros(len(batch), dtype=np.int64)
        if fo is None or not fo.any():
            return starts, lengths
        rows = np.flatnonzero(fo)
        fpos = batch.pos[rows] + fo[rows]
        target = fpos + self.r.uint(fpos, 4)
        starts[rows], lengths[rows] = target + 4, self.r.uint(target, 4)
        return starts, lengths


    def strings(self, batch: _Batch, name: str) -> list[str | None]:
        """A string field of every table (None where absent), decoded as UTF-8."""
        fo = batch.fo.get(name)
        out: list[str | None] = [None] * len(batch)
        if fo is None or not fo.any():
            return out
        rows = np.flatnonzero(fo)
        fpos = batch.pos[rows] + fo[rows]
        target = fpos + self.r.uint(fpos, 4)
        length = self.r.uint(target, 4)
        raw = self.r.data
        for row, start, n in zip(rows.tolist(), (target + 4).tolist(), length.tolist()):
            out[row] = raw[start:start + n].tobytes().decode("utf-8", "replace")
        return out

    def rows_of(self, batch: _Batch, parent: int) -> np.ndarray:
        """Rows of the batch whose parent row is ``parent``, ordered by their vector index."""
        rows = np.flatnonzero(batch.parent == parent)
        return rows[np.argsort(batch.index[rows], kind="stable")]


def describe_bytes(raw: bytes) -> str:
    """Bytes for a message: as text in quotes when printable ASCII, else as hex."""
    if all(32 <= b < 127 for b in raw):
        return '"' + raw.decode("ascii") + '"'
    return "0x" + raw.hex(" ").replace(" ", " 0x") if raw else "(none)"


def verify_buffer(layout: dict, data: np.ndarray, identifier: str | None = None) -> FileIndex:
    """Raise ModelFormatError unless ``data`` is a structurally sound flatbuffer of layout."""
    return Verifier(layout, data).verify(layout["root_table"], identifier)
