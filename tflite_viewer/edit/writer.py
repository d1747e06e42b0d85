"""Serializing an edited model: the graph through the flatbuffers builder, the bytes in bulk.

Why not just ``ModelT.Pack``?  The builder writes back to front into a growing bytearray:
every weight is copied into it (``tobytes`` + slice assignment), copied again each time the
bytearray doubles, and once more by ``Output()``.  For a 60 MB model that is most of the
cost of an edit, although only a few bytes of the graph changed.

So the writer splits the file in two:

1. The *graph*: every table, string and small vector, packed by the generated object API.
   Each ``Buffer`` table is packed by a stand-in (`_BufferSlot`) that leaves a placeholder:
   for inline data a reference to one shared empty vector, for the buffer-offset layout
   ``offset = size = 1`` (LiteRT's own converter uses the same placeholder).
2. The *data*: every buffer's bytes laid out after the graph, each one's first byte at a
   multiple of 16 from the start of the file (the schema's ``force_align: 16``, which the
   Python builder ignores).  The placeholders are then patched to point at them: a
   flatbuffer ``uoffset`` may point anywhere forward, so inline vectors living after the
   tables are as valid as the builder's own.

The parts are joined with one ``bytes.join``: one copy of the weights per edit, none of
them through Python loops.  Buffer bytes may be numpy views on the original file.

Layouts: *inline* (``Buffer.data``; every reader supports it) unless the file would pass
flatbuffers' 2 GB limit, or the model came in the *offset* layout (``Buffer.offset/size``
relative to the start of the file), or the caller asks for it.  Metadata buffers stay
inline in the offset layout: readers fetch them through ``Buffer.data``.

An associated-files zip appended to the input (TFLite metadata's labels, vocabularies) is
appended again, its absolute central-directory offsets shifted to the new position.
"""
from __future__ import annotations

import copy
import struct

import flatbuffers
import numpy as np

from ..schema import schema_generated as S
from ..schema.schema_layout import LAYOUT
from .tree import ModelTree, relocate_zip

ALIGN = 16
FLATBUFFER_LIMIT = 2**31 - 1  # FLATBUFFERS_MAX_BUFFER_SIZE: offsets are signed 32-bit
FILE_IDENTIFIER = b"TFL3"
_ZEROS = bytes(64)
_BUF_FIELDS = {f["name"]: f["offset"] for f in LAYOUT["objects"]["tflite.Buffer"]["fields"]}
_OP_FIELDS = {f["name"]: f["offset"] for f in LAYOUT["objects"]["tflite.Operator"]["fields"]}
LAYOUTS = ("auto", "inline", "offset")


def needs_offset_layout(graph_bytes: int, data_bytes: int, n_buffers: int) -> bool:
    """Would an inline file exceed the flatbuffer limit?  (16-byte padding per buffer
    and its 4-byte length prefix count.)"""
    return graph_bytes + data_bytes + n_buffers * (ALIGN + 4) > FLATBUFFER_LIMIT


def choose_layout(tree: ModelTree, layout: str = "auto", graph_bytes: int = 0) -> str:
    """``"inline"`` or ``"offset"`` for this tree (see the module docstring)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    if layout != "auto":
        return layout
    if tree.offset_layout:
        return "offset"
    bufs = tree.model.buffers or []
    data = sum(int(b.data.size) if b.data is not None else 0 for b in bufs)
    return "offset" if needs_offset_layout(graph_bytes, data, len(bufs)) else "inline"


class _BufferSlot(S.BufferT):
    """Packs a Buffer table with a placeholder where its data will go; remembers where."""

    def __init__(self, kind: str, dummy: int) -> None:
        super().__init__()
        self.kind = kind  # "none" | "inline" | "external"
        self.dummy = dummy
        self.table = 0

    def Pack(self, builder):  # noqa: N802 - the generated API's name
        S.BufferStart(builder)
        if self.kind == "inline":
            S.BufferAddData(builder, self.dummy)
        elif self.kind == "external":
            S.BufferAddOffset(builder, 1)
            S.BufferAddSize(builder, 1)
        self.table = S.BufferEnd(builder)
        return self.table


class _OperatorSlot(S.OperatorT):
    """An operator whose custom options go after the flatbuffer (offset layout)."""

    table = 0

    def Pack(self, builder):  # noqa: N802
        self.table = super().Pack(builder)
        return self.table


def _field_pos(fb: bytearray, table_pos: int, voffset: int) -> int:
    """Absolute position of a table's field (it must be present)."""
    (soff,) = struct.unpack_from("<i", fb, table_pos)
    vt = table_pos - soff
    vt_len = struct.unpack_from("<H", fb, vt)[0]
    if voffset >= vt_len:
        raise AssertionError("placeholder field missing from its vtable")
    (rel,) = struct.unpack_from("<H", fb, vt + voffset)
    if rel == 0:
        raise AssertionError("placeholder field missing from its table")
    return table_pos + rel


def _as_bytes(data) -> np.ndarray:
    arr = np.asarray(data)
    if arr.dtype != np.uint8:
        arr = arr.astype(np.uint8) if arr.dtype.kind in "biu" else arr.view(np.uint8)
    return np.ascontiguousarray(arr).reshape(-1)


def _metadata_buffers(model) -> set[int]:
    out = {int(m.buffer) for m in (model.metadata or ())}
    if model.metadataBuffer is not None:
        out.update(int(b) for b in model.metadataBuffer)
    return out


def serialize(tree: ModelTree, layout: str = "auto") -> bytes:
    """The .tflite bytes of a tree (see the module docstring for the layout rules)."""
    m = tree.model
    buffers = list(m.buffers or [])
    if not buffers:
        buffers = [S.BufferT()]
    chosen = choose_layout(tree, layout)
    meta = _metadata_buffers(m)

    builder = flatbuffers.Builder(1 << 16)
    builder.StartVector(1, 0, 1)
    dummy = builder.EndVector()
    slots: list[_BufferSlot] = []
    datas: list[np.ndarray | None] = []
    for i, buf in enumerate(buffers):
        data = None if buf.data is None else _as_bytes(buf.data)
        datas.append(data)
        if data is None:
            kind = "none"
        elif chosen == "offset" and data.size and i not in meta:
            kind = "external"
        else:
            kind = "inline"
        slots.append(_BufferSlot(kind, dummy))

    packed = copy.copy(m)
    packed.buffers = slots
    op_slots: list[tuple[_OperatorSlot, np.ndarray]] = []
    if chosen == "offset" and tree.large_custom_ops:
        packed.subgraphs = []
        for sg in m.subgraphs or []:
            sg2 = copy.copy(sg)
            ops = []
            for op in sg.operators or []:
                if op in tree.large_custom_ops and op.customOptions is not None:
                    slot = _OperatorSlot()
                    slot.__dict__.update(op.__dict__)
                    slot.customOptions = None
                    slot.largeCustomOptionsOffset = 1
                    slot.largeCustomOptionsSize = 1
                    op_slots.append((slot, _as_bytes(op.customOptions)))
                    op = slot
                ops.append(op)
            sg2.operators = ops if sg.operators is not None else None
            packed.subgraphs.append(sg2)
    root = packed.Pack(builder)
    builder.Finish(root, file_identifier=FILE_IDENTIFIER)
    fb = builder.Output()  # a bytearray copy of the graph part only: small
    size = len(fb)

    tail = _Tail(fb)
    tail.pad()
    # Inline data vectors: [padding][uint32 length][data], data 16-aligned.
    for slot, data in zip(slots, datas):
        if slot.kind != "inline" or data is None or data.size == 0:
            continue
        tail.pad(before=4)
        field = _field_pos(fb, size - slot.table, _BUF_FIELDS["data"])
        struct.pack_into("<I", fb, field, tail.pos - field)
        tail.add(struct.pack("<I", data.size), 4)
        tail.add(data, data.size)
    # Offset layout: raw data, 16-aligned, offset/size patched (absolute file positions).
    external = [(s, d) for s, d in zip(slots, datas) if s.kind == "external"]
    if external or op_slots:
        for slot, data in external:
            tail.place(size - slot.table, _BUF_FIELDS["offset"], _BUF_FIELDS["size"], data)
        tail.add(_ZEROS[:ALIGN], ALIGN)  # readers (XNNPack) may read 16 bytes past the last buffer
        for slot, data in op_slots:
            tail.place(size - slot.table, _OP_FIELDS["large_custom_options_offset"],
                       _OP_FIELDS["large_custom_options_size"], data)
    tail.pad()
    if tree.appendix is not None:
        appendix = relocate_zip(tree.appendix.data, tree.appendix.start, tail.pos)
        tail.add(appendix, len(appendix))
    return b"".join(tail.parts)


class _Tail:
    """What follows the flatbuffer, appended piece by piece with the file position known:
    each buffer (and large custom option) table is patched with where its data lands."""

    def __init__(self, fb: bytearray) -> None:
        self.fb = fb
        self.parts: list = [fb]
        self.pos = len(fb)

    def add(self, data, nbytes: int) -> None:
        self.parts.append(data)
        self.pos += nbytes

    def pad(self, before: int = 0) -> None:
        """Zeros up to where ``pos + before`` is ALIGN-aligned (an inline vector's data
        follows its 4-byte length, so the length goes ``before`` the boundary)."""
        n = (-(self.pos + before)) % ALIGN
        if n:
            self.add(_ZEROS[:n], n)

    def place(self, table: int, offset_field: int, size_field: int, data: np.ndarray) -> None:
        """Append ``data`` aligned and write its absolute offset and size into the table's
        uint64 fields (Buffer.offset/size, Operator.large_custom_options_offset/size)."""
        self.pad()
        struct.pack_into("<Q", self.fb, _field_pos(self.fb, table, offset_field), self.pos)
        struct.pack_into("<Q", self.fb, _field_pos(self.fb, table, size_field), data.size)
        self.add(data, data.size)
