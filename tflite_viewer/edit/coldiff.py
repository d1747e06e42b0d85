"""`changes()` without unpacking the original: find what differs in the reader's columns.

`diff.diff` walks two object trees field by field: for a 20,000-operator model that means
unpacking the original file into Python objects (seconds) and visiting every operator.
Both files are already verified, and their `FileIndex` holds every table of a type as
columns: positions and field offsets.  So the comparison runs on columns instead:

1. Pair the tables of the two files by their logical path (same parent pair, same vector
   index; union members by tag), a few numpy operations per table type and field.
2. Compare every field of every pair: scalars by value (defaults filled in), strings and
   scalar vectors by their bytes, buffer bytes wherever they live (inline, or after the
   flatbuffer), child tables recursively.  A pair differs if any field or child differs.
3. Only the pairs that differ are turned into lines: by `diff.diff` on object-API copies
   of just those tables (the original's unpacked from its bytes, the document's from its
   tree), so every line reads exactly as before.

The model root and its subgraphs are unpacked *shallow* (their vectors of tables left
empty), so the lines about their own fields come from `diff.diff` too.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable

import numpy as np

from ..model.model import Model
from ..schema import schema_generated as S
from ..schema.schema_layout import LAYOUT
from .diff import VectorPlan, diff
from .patch import child_batches

_SCALARS = {"UType", "Bool", "Byte", "UByte", "Short", "UShort", "Int", "UInt", "Long",
            "ULong", "Float", "Double"}
_SIZES = {"UType": 1, "Bool": 1, "Byte": 1, "UByte": 1, "Short": 2, "UShort": 2, "Int": 4,
          "UInt": 4, "Long": 8, "ULong": 8, "Float": 4, "Double": 8}
_LAYOUT_FIELDS = {("tflite.Buffer", "offset"), ("tflite.Buffer", "size"),
                  ("tflite.Operator", "large_custom_options_offset"),
                  ("tflite.Operator", "large_custom_options_size")}
_BIG = 1 << 14  # byte ranges longer than this are compared one by one, not gathered


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


class _Side:
    """One file: its index, bytes, and a (parent batch, label) -> child batches map."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.index = model.index
        self.data = model.data
        self.r = model.index.r
        self.kids = child_batches(self.index)

    def children(self, batch, label: str) -> list:
        return self.kids.get((id(batch), label), [])

    def field_pos(self, batch, name: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(present, absolute field position) of a field for some rows."""
        fo = batch.fo.get(name)
        if fo is None:
            z = np.zeros(rows.size, np.int64)
            return z.astype(bool), z
        f = fo[rows]
        return f != 0, batch.pos[rows] + f

    def vector_ranges(self, batch, name: str, rows: np.ndarray, elem: int):
        """(present, start of the elements, byte length) of a vector field."""
        present, fpos = self.field_pos(batch, name, rows)
        start = np.zeros(rows.size, np.int64)
        n = np.zeros(rows.size, np.int64)
        if present.any():
            p = fpos[present]
            target = p + self.r.uint(p, 4)
            start[present] = target + 4
            n[present] = self.r.uint(target, 4) * elem
        return present, start, n

    def large_ranges(self, batch, off_name: str, size_name: str, rows: np.ndarray):
        """(stored-after-the-flatbuffer, start, length) of data addressed by offset/size."""
        off = self.index.scalar(batch, off_name)[rows].astype(np.int64)
        size = self.index.scalar(batch, size_name)[rows].astype(np.int64)
        return off > 1, off, size


#: ``shared(a, b, n)``: whether the current model's bytes [b, b+n) are known to be the
#: original's [a, a+n) without reading them (the document's pieces know which ranges of
#: the opened file an edited state reuses)
Shared = Callable[[int, int, int], bool]


def _ranges_equal(da: np.ndarray, sa: np.ndarray, db: np.ndarray, sb: np.ndarray,
                  n: np.ndarray, shared: Shared | None = None) -> np.ndarray:
    """Per pair: are da[sa:sa+n] and db[sb:sb+n] equal (lengths already equal)?  Long
    ranges ``shared`` says are the same bytes of the file are not read: comparing a
    2.5 GB model's weights would page both copies in."""
    out = np.ones(n.size, bool)
    big = np.flatnonzero(n > _BIG)
    for k in big.tolist():
        a, b, m = int(sa[k]), int(sb[k]), int(n[k])
        if shared is not None and shared(a, b, m):
            continue
        out[k] = np.array_equal(da[a:a + m], db[b:b + m])
    small = np.flatnonzero((n > 0) & (n <= _BIG))
    if small.size:
        m = n[small]
        total = int(m.sum())
        offs = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(m) - m, m)
        eq = da[np.repeat(sa[small], m) + offs] == db[np.repeat(sb[small], m) + offs]
        owner = np.repeat(np.arange(small.size), m)
        bad = np.zeros(small.size, bool)
        bad[owner[~eq]] = True
        out[small[bad]] = False
    return out


def _expand(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    total = int(count.sum())
    return np.repeat(first, count) + (np.arange(total, dtype=np.int64)
                                      - np.repeat(np.cumsum(count) - count, count))


class ColumnDiff:
    """Which tables differ between two loaded models (see the module docstring)."""

    def __init__(self, original: Model, current: Model, shared: Shared | None = None) -> None:
        self.a, self.b = _Side(original), _Side(current)
        self.shared = shared
        # id(child batch of a) -> (rows in a, rows in b, differs) for vectors of tables
        self.pairs: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.root_a = self.a.index.table("tflite.Model", "")
        self.root_b = self.b.index.table("tflite.Model", "")
        one = np.zeros(1, np.int64)
        self.root_differs = bool(self._differs("tflite.Model", self.root_a, self.root_b,
                                               one, one)[0])

    # -- step 1 and 2 ------------------------------------------------------------------------
    def _differs(self, tname: str, ba, bb, ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
        out = np.zeros(ra.size, bool)
        if ra.size == 0:
            return out
        A, B = self.a, self.b
        for f in LAYOUT["objects"][tname]["fields"]:
            if f["deprecated"] or (tname, f["name"]) in _LAYOUT_FIELDS:
                continue
            name, t = f["name"], f["type"]
            base = t["base"]
            if base in _SCALARS:
                va = A.index.scalar(ba, name)[ra]
                vb = B.index.scalar(bb, name)[rb]
                out |= ~(va == vb)
            elif base == "String" or (base == "Vector" and t["element"] in _SCALARS):
                elem = 1 if base == "String" else _SIZES[t["element"]]
                pa, sa, na = A.vector_ranges(ba, name, ra, elem)
                pb, sb, nb = B.vector_ranges(bb, name, rb, elem)
                if (tname, name) == ("tflite.Buffer", "data"):
                    pa, sa, na = self._large(A, ba, ra, "offset", "size", pa, sa, na)
                    pb, sb, nb = self._large(B, bb, rb, "offset", "size", pb, sb, nb)
                elif (tname, name) == ("tflite.Operator", "custom_options"):
                    pa, sa, na = self._large(A, ba, ra, "large_custom_options_offset",
                                             "large_custom_options_size", pa, sa, na)
                    pb, sb, nb = self._large(B, bb, rb, "large_custom_options_offset",
                                             "large_custom_options_size", pb, sb, nb)
                bad = (pa != pb) | (na != nb)
                same = np.flatnonzero(~bad & pa)
                eq = _ranges_equal(A.data, sa[same], B.data, sb[same], na[same], self.shared)
                bad[same[~eq]] = True
                out |= bad
            elif base == "Vector" and t["element"] == "Obj":
                out |= self._vector_of_tables(t["object"], name, ba, bb, ra, rb)
            elif base == "Obj":
                out |= self._child_table(name, ba, bb, ra, rb)
            elif base == "Union":
                out |= self._child_table(name, ba, bb, ra, rb)
            else:  # a field kind these schemas do not use: compare conservatively
                out[:] = True
        return out

    @staticmethod
    def _large(side: _Side, batch, rows, off_name, size_name, present, start, n):
        big, off, size = side.large_ranges(batch, off_name, size_name, rows)
        if big.any():
            present, start, n = present.copy(), start.copy(), n.copy()
            present[big], start[big], n[big] = True, off[big], size[big]
        return present, start, n

    def _vector_of_tables(self, child_type: str, name: str, ba, bb, ra, rb) -> np.ndarray:
        A, B = self.a, self.b
        pa, _ = A.field_pos(ba, name, ra)
        pb, _ = B.field_pos(bb, name, rb)
        la = A.index.lengths(ba, name)[ra]
        lb = B.index.lengths(bb, name)[rb]
        bad = (pa != pb) | (la != lb)
        ok = np.flatnonzero(~bad & (la > 0))
        ca, cb = A.children(ba, name), B.children(bb, name)
        if ok.size == 0 or not ca or not cb:
            return bad
        CA, CB = ca[0], cb[0]
        count = la[ok]
        rows_a = _expand(np.searchsorted(CA.parent, ra[ok]), count)
        rows_b = _expand(np.searchsorted(CB.parent, rb[ok]), count)
        up = np.repeat(ok, count)
        child = self._differs(child_type, CA, CB, rows_a, rows_b)
        self.pairs[id(CA)] = (rows_a, rows_b, child)
        bad[up[child]] = True
        return bad

    def _child_table(self, name: str, ba, bb, ra, rb) -> np.ndarray:
        """A table or union field: pair the children by parent (union members by type)."""
        A, B = self.a, self.b
        pa, _ = A.field_pos(ba, name, ra)
        pb, _ = B.field_pos(bb, name, rb)
        bad = pa != pb
        cb_by_type = {c.type_name: c for c in B.children(bb, name)}
        found_a = np.zeros(ra.size, bool)
        found_b = np.zeros(ra.size, bool)
        for CA in A.children(ba, name):
            inv_a = np.full(len(ba), -1, np.int64)
            inv_a[CA.parent] = np.arange(len(CA))
            ka = inv_a[ra]
            CB = cb_by_type.get(CA.type_name)
            if CB is None:
                found_a |= ka >= 0
                continue
            inv_b = np.full(len(bb), -1, np.int64)
            inv_b[CB.parent] = np.arange(len(CB))
            kb = inv_b[rb]
            found_a |= ka >= 0
            found_b |= kb >= 0
            both = np.flatnonzero((ka >= 0) & (kb >= 0))
            bad[(ka >= 0) != (kb >= 0)] = True
            if both.size:
                child = self._differs(CA.type_name, CA, CB, ka[both], kb[both])
                bad[both[child]] = True
        for CB in B.children(bb, name):
            inv_b = np.full(len(bb), -1, np.int64)
            inv_b[CB.parent] = np.arange(len(CB))
            found_b |= inv_b[rb] >= 0
        bad |= found_a != found_b
        return bad

    # -- step 3 --------------------------------------------------------------------------------
    def dirty_items(self, child_a, parent_row_a: int) -> list[tuple[int, int]]:
        """(vector index, row in a) of the differing children of one parent row of a."""
        entry = self.pairs.get(id(child_a))
        if entry is None:
            return []
        rows_a, _rows_b, child = entry
        sel = rows_a[child]
        sel = sel[child_a.parent[sel] == parent_row_a]
        return [(int(child_a.index[r]), int(r)) for r in sel]


class _Shallow:
    """An accessor that reports its vectors of tables as empty (for a shallow unpack)."""

    def __init__(self, acc: Any, vectors: list[str]) -> None:
        self._acc = acc
        self._zero = {_camel(v) + "Length" for v in vectors}

    def __getattr__(self, name: str):
        if name in self._zero:
            return lambda: 0
        return getattr(self._acc, name)


def _vectors_of_tables(tname: str) -> list[str]:
    return [f["name"] for f in LAYOUT["objects"][tname]["fields"]
            if not f["deprecated"] and f["type"]["base"] == "Vector"
            and f["type"]["element"] == "Obj"]


def _unpack_at(tname: str, buf, pos: int, data: np.ndarray) -> Any:
    """The object-API copy of one table of the original, normalised like `tree.unpack`."""
    short = tname.split(".")[-1]
    obj = getattr(S, short + "T").InitFromBuf(buf, pos)
    if short == "Buffer" and obj.offset > 1:
        obj.data = data[obj.offset:obj.offset + obj.size]
        obj.offset = obj.size = 0
    elif short == "Operator" and obj.largeCustomOptionsOffset > 1:
        off, size = obj.largeCustomOptionsOffset, obj.largeCustomOptionsSize
        obj.customOptions = data[off:off + size]
        obj.largeCustomOptionsOffset = obj.largeCustomOptionsSize = 0
    return obj


def _unpack_item(tname: str, batch, buf, data, row: int) -> Any:
    return _unpack_at(tname, buf, int(batch.pos[row]), data)


def _shallow(tname: str, buf, pos: int) -> Any:
    short = tname.split(".")[-1]
    acc = getattr(S, short)()
    acc.Init(buf, pos)
    obj = getattr(S, short + "T")()
    obj._UnPack(_Shallow(acc, _vectors_of_tables(tname)))
    return obj


def changes(original: Model, current: Model, tree_model: Any,
            shared: Shared | None = None) -> list[str]:
    """The lines of `diff.diff(unpack(original).model, tree_model)`, from the columns."""
    cd = ColumnDiff(original, current, shared)
    if not cd.root_differs:
        return []
    buf = memoryview(original.data)  # as `tree.unpack` reads it
    data = original.data
    return _lines(cd, "tflite.Model", cd.root_a, 0, tree_model, "", buf, data)


def _lines(cd: ColumnDiff, tname: str, batch_a, row_a: int, obj_b: Any, path: str,
           buf=None, data=None) -> list[str]:
    a = _shallow(tname, buf, int(batch_a.pos[row_a]))
    plans: dict[str, VectorPlan] = {}
    side = cd.a
    for f in LAYOUT["objects"][tname]["fields"]:
        if f["deprecated"] or f["type"]["base"] != "Vector" or f["type"]["element"] != "Obj":
            continue
        name, child_type = f["name"], f["type"]["object"]
        present = bool(batch_a.fo.get(name, np.zeros(len(batch_a), np.int64))[row_a])
        length = int(side.index.lengths(batch_a, name)[row_a]) if present else None
        kids = side.children(batch_a, name)
        if not kids:
            plans[name] = VectorPlan(length, [], None, None)
            continue
        child = kids[0]
        get = partial(_unpack_item, child_type, child, buf, data)
        sub = partial(_lines, cd, child_type, child, buf=buf, data=data) \
            if child_type == "tflite.SubGraph" else None
        plans[name] = VectorPlan(length, cd.dirty_items(child, row_a), get, sub)
    return diff(a, obj_b, path, plans)
