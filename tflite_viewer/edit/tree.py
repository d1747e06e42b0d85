"""The mutable object tree an edit works on, and the bridge between schema names and it.

The tree is the flatc object API (`schema_generated.ModelT`): one Python object per table,
numpy arrays for scalar vectors.  With numpy present the generated unpacker keeps every
scalar vector as a zero-copy view, so a model opens in milliseconds and buffer bytes stay
views on the mapped file until an edit replaces them.

Two things the object API does not model are normalised here, so the writer can choose the
output layout freely:

* Buffers stored after the flatbuffer (the > 2 GB "buffer-offset" layout) become ordinary
  ``BufferT.data`` views, and ``offset``/``size`` are cleared.
* Custom options stored after the flatbuffer (``large_custom_options_offset``) become
  ordinary ``customOptions`` views; the operator is remembered so the writer can put them
  back outside the flatbuffer when writing the offset layout.

Field names: the schema says ``stride_w``; the object API says ``strideW``.  Users (and
`Model` views, and `changes()`) speak schema names, so `attr_name` maps between them.
"""
from __future__ import annotations

import struct
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ..model.model import Model
from ..schema import schema_generated as S
from ..schema.schema_layout import LAYOUT

T = "tflite."


@dataclass
class Appendix:
    """Bytes after the flatbuffer that the schema does not describe: an associated-files zip.

    ``data`` is the zip exactly as it was (from its first local header or central directory
    to the end of the file); ``start`` is where it began in the original file, so the central
    directory offsets (absolute, as the TFLite metadata writer makes them) can be shifted.
    """

    data: np.ndarray
    start: int


@dataclass
class ModelTree:
    """A model as an editable object tree plus what the writer needs to know about its origin."""

    model: Any  # S.ModelT
    offset_layout: bool = False  # the input kept buffers after the flatbuffer
    large_custom_ops: set = field(default_factory=set)  # OperatorT objects (by identity)
    appendix: Appendix | None = None


def unpack(model: Model) -> ModelTree:
    """The editable tree of a loaded model; buffer bytes stay views on the model's file."""
    view = memoryview(model.data)
    tree = S.ModelT.InitFromPackedBuf(view, 0)
    data = model.data
    offset_layout = False
    for buf in tree.buffers or ():
        if buf.offset > 1:
            offset_layout = True
            buf.data = data[buf.offset:buf.offset + buf.size]
            buf.offset = 0
            buf.size = 0
    large = set()
    for sg in tree.subgraphs or ():
        for op in sg.operators or ():
            if op.largeCustomOptionsOffset > 1:
                off, size = op.largeCustomOptionsOffset, op.largeCustomOptionsSize
                op.customOptions = data[off:off + size]
                op.largeCustomOptionsOffset = 0
                op.largeCustomOptionsSize = 0
                large.add(op)
    return ModelTree(tree, offset_layout, large, find_appendix(data, _described_end(tree, data)))


def _described_end(tree, data: np.ndarray) -> int:
    """Where the bytes the model itself describes end (its last buffer or custom options).

    A zip "found" before that point is a false match inside the weights, not an appendix.
    """
    base = data.ctypes.data
    end = 0
    for buf in tree.buffers or ():
        if buf.data is not None and buf.data.size and isinstance(buf.data, np.ndarray):
            end = max(end, buf.data.ctypes.data - base + buf.data.size)
    return end


def find_appendix(data: np.ndarray, described_end: int = 0) -> Appendix | None:
    """The associated-files zip appended to a model (TFLite metadata convention), if any."""
    from ..model.metadata import open_associated_files
    zf = open_associated_files(data)
    if zf is None:
        return None
    try:
        starts = [info.header_offset for info in zf.infolist()] + [zf.start_dir]
    except AttributeError:  # pragma: no cover - zipfile internals differ
        return None
    start = min(starts)
    if not max(8, described_end) <= start < data.size:
        return None
    return Appendix(data[start:], start)


def relocate_zip(raw: np.ndarray, old_start: int, new_start: int) -> bytes | np.ndarray:
    """The zip bytes with central-directory offsets shifted to a new position in the file.

    Local headers and member data are position independent; only the central directory's
    "relative offset of local header" fields and the end record's directory offset are
    absolute file positions.  ZIP64 archives are rebuilt with `zipfile` instead.
    """
    delta = new_start - old_start
    if delta == 0:
        return raw
    blob = bytearray(raw.tobytes())
    eocd = blob.rfind(b"PK\x05\x06")
    if eocd < 0 or len(blob) - eocd < 22:
        return raw
    (_, _, _, _, count, _, cd_off, _) = struct.unpack_from("<4s4H2LH", blob, eocd)
    if cd_off == 0xFFFFFFFF or count == 0xFFFF:
        return _rebuild_zip(raw, new_start)
    pos = cd_off - old_start
    try:  # a directory that is not where it says, or offsets that no longer fit 32 bits
        for _ in range(count):
            if pos < 0 or blob[pos:pos + 4] != b"PK\x01\x02":
                return _rebuild_zip(raw, new_start)
            n, m, k = struct.unpack_from("<3H", blob, pos + 28)
            (local,) = struct.unpack_from("<L", blob, pos + 42)
            if local == 0xFFFFFFFF:
                return _rebuild_zip(raw, new_start)
            struct.pack_into("<L", blob, pos + 42, local + delta)
            pos += 46 + n + m + k
        struct.pack_into("<L", blob, eocd + 16, cd_off + delta)
    except struct.error:
        return _rebuild_zip(raw, new_start)
    return bytes(blob)


class _ShiftedFile:
    """A write-only file whose tell() is offset by ``base``: zipfile then writes absolute
    offsets, as if the zip were appended to the model in place."""

    def __init__(self, base: int) -> None:
        import io
        self._io = io.BytesIO()
        self._base = base

    def write(self, b) -> int:
        return self._io.write(b)

    def tell(self) -> int:
        return self._base + self._io.tell()

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence == 0:
            return self._base + self._io.seek(pos - self._base)
        return self._base + self._io.seek(pos, whence)

    def flush(self) -> None:
        pass

    def getvalue(self) -> bytes:
        return self._io.getvalue()


def _rebuild_zip(raw: np.ndarray, new_start: int) -> bytes | np.ndarray:
    """The archive written again at ``new_start``; a damaged archive (a member that does
    not read back) is kept byte for byte: it was unreadable before the edit and stays so,
    and reading the edited model reports it (`Model.read_associated_file`)."""
    import io
    from ..model.metadata import ZIP_ERRORS
    try:
        src = zipfile.ZipFile(io.BytesIO(raw.tobytes()))
        out = _ShiftedFile(new_start)
        with zipfile.ZipFile(out, "w") as dst:  # type: ignore[arg-type]
            dst.comment = src.comment
            for info in src.infolist():
                dst.writestr(info, src.read(info))
    except ZIP_ERRORS:
        return raw
    return out.getvalue()


# -- names ---------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def attr_map(table: str) -> dict[str, str]:
    """Schema field name -> object-API attribute name for a table (``stride_w`` -> ``strideW``)."""
    short = table.split(".")[-1]
    cls = getattr(S, short + "T")
    attrs = list(vars(cls()).keys())
    by_key = {a.replace("_", "").lower(): a for a in attrs}
    out = {}
    for f in LAYOUT["objects"][T + short if not table.startswith(T) else table]["fields"]:
        attr = by_key.get(f["name"].replace("_", "").lower())
        if attr is not None:
            out[f["name"]] = attr
    return out


def attr_name(table: str, field_name: str) -> str:
    return attr_map(table)[field_name]


def schema_fields(table: str) -> dict[str, dict]:
    """Non-deprecated fields of a table by schema name (union tag fields excluded)."""
    name = table if table.startswith(T) else T + table
    return {f["name"]: f for f in LAYOUT["objects"][name]["fields"]
            if not f["deprecated"] and f["type"]["base"] != "UType"}


def union_member(enum: str, tag: int) -> str | None:
    """``"Conv2DOptions"`` for tag 1 of ``tflite.BuiltinOptions``."""
    member = LAYOUT["enums"][T + enum]["union_types"].get(int(tag))
    return member.split(".")[-1] if member else None


def enum_values(enum: str) -> dict[int, str]:
    return LAYOUT["enums"][enum if enum.startswith(T) else T + enum]["values"]


def text(value: Any) -> str:
    """Object-API strings are bytes (or None); users see str."""
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    return str(value)


def as_int_list(values: Any) -> list[int]:
    if values is None:
        return []
    return [int(v) for v in values]
