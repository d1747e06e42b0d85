"""LiteRT-LM containers (.litertlm): a bundle of TFLite models, tokenizer and metadata.

The format (LiteRT-LM's ``schema/core``; resources/schema/litertlm_header.fbs here):

* bytes 0..8 ``LITERTLM``; 8..20 the format version as three little-endian uint32
  (major, minor, patch); 20..24 zero; 24..32 a little-endian uint64, where the header ends;
* the header, [32, end): a flatbuffer ``LiteRTLMMetaData`` (no file identifier) holding
  the system metadata (key/value pairs) and one ``SectionObject`` per section: its
  ``data_type``, its byte range ``[begin_offset, end_offset)`` in the file and its items
  (key/value pairs, such as ``model_type = "tf_lite_prefill_decode"``);
* the sections, each starting on a 16 KiB boundary.

A TFLiteModel section is an ordinary .tflite file; it opens as a `Model` whose bytes are
a view on the mapped container (nothing copied).  Its external buffers are found as
LiteRT-LM finds them: the group ``tflite_weights`` is the TFLiteWeights section of the
same ``model_type``; any other group name is a side file next to the container.

Only major version 1 is read (LiteRT-LM's reader refuses other majors too); the value
tables of format 1.x since the key/value values became tables (what litert-lm-builder
writes) are decoded.  Every inconsistency is a `ModelFormatError` naming where:
``header``, ``sections[2].end_offset`` ...
"""
from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Union

import numpy as np

from ..schema import litertlm_header_generated as L
from ..schema.litertlm_header_layout import LAYOUT
from .errors import ModelFormatError
from .external import GroupData, SideFiles
from .verify import verify_buffer

MAGIC = b"LITERTLM"
HEADER_START = 32
MAJOR_VERSION = 1
WEIGHTS_GROUP = "tflite_weights"  # the group name LiteRT-LM maps to a TFLiteWeights section
SECTION_TYPES = {v: k for k, v in vars(L.AnySectionDataType).items() if not k.startswith("_")}
_VALUE_TABLES = {getattr(L.VData, name): getattr(L, name) for name in (
    "UInt8", "Int8", "UInt16", "Int16", "UInt32", "Int32", "Float32", "Bool", "StringValue",
    "UInt64", "Int64", "Double")}

Source = Union[str, os.PathLike, bytes, bytearray]


def is_container(data: bytes | np.ndarray | memoryview) -> bool:
    """Whether bytes start like a LiteRT-LM container."""
    return bytes(data[:len(MAGIC)]) == MAGIC


def path_is_container(path: str | os.PathLike) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


@dataclass(frozen=True)
class Section:
    """One section of a container: what it holds and where."""

    index: int
    type_code: int
    begin: int
    end: int
    items: dict[str, Any] = field(default_factory=dict)

    @property
    def type_name(self) -> str:
        return SECTION_TYPES.get(self.type_code, f"type {self.type_code}")

    @property
    def size(self) -> int:
        return self.end - self.begin

    @property
    def is_model(self) -> bool:
        return self.type_code == L.AnySectionDataType.TFLiteModel

    @property
    def model_type(self) -> str | None:
        value = self.items.get("model_type")
        return value if isinstance(value, str) else None

    @property
    def label(self) -> str:
        """``2: TFLiteModel prefill_decode (1,234 bytes)``: one line for pickers and lists."""
        kind = f" {self.model_type.removeprefix('tf_lite_')}" if self.model_type else ""
        return f"{self.index}: {self.type_name}{kind} ({self.size:,} bytes)"


class Container:
    """An opened .litertlm file: its version, system metadata and sections."""

    def __init__(self, source: Any, data: np.ndarray, path: Path | None) -> None:
        self._source = source
        self.data = data
        self.path = path
        self.version, header_end = _read_preamble(data, self.name)
        header = data[HEADER_START:header_end]
        try:
            verify_buffer(LAYOUT, header, None)
        except ModelFormatError as exc:
            raise ModelFormatError(f"header.{exc.where}" if exc.where else "header",
                                   exc.reason) from None
        self._root = L.LiteRTLMMetaData.GetRootAs(memoryview(header), 0)
        self.sections = self._read_sections()

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else "<bytes>"

    def __repr__(self) -> str:
        return f"<Container {self.name}: {len(self.sections)} sections>"

    @cached_property
    def system_metadata(self) -> dict[str, Any]:
        sm = self._root.SystemMetadata()
        if sm is None:
            return {}
        return dict(_pair(sm.Entries(i), f"header.system_metadata.entries[{i}]")
                    for i in range(sm.EntriesLength()))

    def _read_sections(self) -> tuple[Section, ...]:
        meta = self._root.SectionMetadata()
        if meta is None:
            return ()
        out = []
        size = int(self.data.size)
        for i in range(meta.ObjectsLength()):
            obj = meta.Objects(i)
            where = f"sections[{i}]"
            begin, end = int(obj.BeginOffset()), int(obj.EndOffset())
            if begin > end:
                raise ModelFormatError(where, f"begin_offset {begin:,} is after end_offset "
                                       f"{end:,}")
            if end > size:
                raise ModelFormatError(f"{where}.end_offset", f"{end:,} is past the end of "
                                       f"{self.name} ({size:,} bytes): the file is truncated")
            if begin < HEADER_START:
                raise ModelFormatError(f"{where}.begin_offset", f"{begin:,} is inside the "
                                       f"container's preamble (the first {HEADER_START} bytes)")
            items = dict(_pair(obj.Items(k), f"{where}.items[{k}]")
                         for k in range(obj.ItemsLength()))
            out.append(Section(i, int(obj.DataType()), begin, end, items))
        return tuple(out)

    def section_data(self, index: int) -> np.ndarray:
        """A section's bytes: a read-only view on the container."""
        s = self.section(index)
        return self.data[s.begin:s.end]

    def section(self, index: int) -> Section:
        if not 0 <= index < len(self.sections):
            n = len(self.sections)
            raise KeyError(f"no section {index} in {self.name} (sections 0..{n - 1})" if n
                           else f"{self.name} has no sections")
        return self.sections[index]

    @property
    def model_sections(self) -> tuple[Section, ...]:
        return tuple(s for s in self.sections if s.is_model)

    def open_model(self, index: int | None = None):
        """The TFLiteModel section ``index`` (the first one when None) as a `Model`.

        Its bytes are a view on the container; its external buffers are read from the
        TFLiteWeights section of its model_type, or from side files next to the container.
        A section that is not a TFLite model is a KeyError naming what it is; a TFLite
        section that is not a sound model a ModelFormatError prefixed with the section."""
        from .loader import load_model
        if index is None:
            if not self.model_sections:
                raise ModelFormatError(self.name, "the container holds no TFLiteModel section "
                                       f"(sections: {', '.join(s.type_name for s in self.sections) or 'none'})")
            index = self.model_sections[0].index
        s = self.section(index)
        if not s.is_model:
            raise KeyError(f"section {index} of {self.name} is {s.type_name}, not a TFLite "
                           "model (TFLite sections: "
                           f"{', '.join(str(m.index) for m in self.model_sections) or 'none'})")
        view = memoryview(self._source)[s.begin:s.end]
        try:
            model = load_model(view, weights=SectionWeights(self, s))
        except ModelFormatError as exc:
            raise ModelFormatError(f"sections[{index}] ({s.type_name}) {exc.where}".rstrip(),
                                   exc.reason) from None
        model.origin = ContainerOrigin(self, index)
        return model


@dataclass(frozen=True)
class ContainerOrigin:
    """Where a model opened from a container came from (for titles, reload and save)."""

    container: Container
    section: int

    @property
    def path(self) -> Path | None:
        return self.container.path

    def __str__(self) -> str:
        s = self.container.sections[self.section]
        return f"{self.container.name} [{s.label}]"


class SectionWeights:
    """External buffer groups of a model opened from a container."""

    def __init__(self, container: Container, section: Section) -> None:
        self.container = container
        self.section = section
        folder = container.path.parent if container.path is not None else None
        self.files = SideFiles(folder) if folder is not None else None

    def _weights_section(self, name: str) -> Section | None:
        if name != WEIGHTS_GROUP:
            return None
        for s in self.container.sections:
            if s.type_code == L.AnySectionDataType.TFLiteWeights and \
                    s.model_type == self.section.model_type:
                return s
        return None

    def describe(self, name: str) -> str:
        s = self._weights_section(name)
        if s is not None:
            return f"section {s.index} (TFLiteWeights) of {self.container.name}"
        if self.files is not None:
            return self.files.describe(name)
        return f"side file {name!r}"

    def size(self, name: str) -> int | None:
        s = self._weights_section(name)
        if s is not None:
            return s.size
        return self.files.size(name) if self.files is not None else None

    def group(self, name: str) -> GroupData:
        s = self._weights_section(name)
        if s is not None:
            return GroupData(self.container.section_data(s.index), self.describe(name))
        if self.files is None:
            raise ModelFormatError("external_buffer_groups", f"group {name!r}: the container "
                                   "has no TFLiteWeights section for model_type "
                                   f"{self.section.model_type!r} and was read from bytes")
        return self.files.group(name)


def _read_preamble(data: np.ndarray, name: str) -> tuple[tuple[int, int, int], int]:
    size = int(data.size)
    if size < HEADER_START:
        raise ModelFormatError("header", f"{name} holds {size} bytes; a container starts "
                               f"with {HEADER_START}")
    if bytes(data[:8]) != MAGIC:
        raise ModelFormatError("header", f"{name} does not start with {MAGIC.decode()}")
    major, minor, patch = struct.unpack_from("<3I", data, 8)
    if major != MAJOR_VERSION:
        raise ModelFormatError("header.version", f"format {major}.{minor}.{patch}; this reader "
                               f"knows {MAJOR_VERSION}.x")
    (end,) = struct.unpack_from("<Q", data, 24)
    if not HEADER_START < end <= size:
        raise ModelFormatError("header.end", f"the header ends at {end:,}, outside "
                               f"{HEADER_START + 1}..{size:,} (the file holds {size:,} bytes)")
    return (major, minor, patch), int(end)


def _pair(kv, where: str) -> tuple[str, Any]:
    key = (kv.Key() or b"").decode("utf-8", "replace")
    cls = _VALUE_TABLES.get(int(kv.ValueType()))
    tab = kv.Value()
    if cls is None or tab is None:
        return key, None
    value = cls()
    value.Init(tab.Bytes, tab.Pos)
    out = value.Value()
    if isinstance(out, bytes):
        return key, out.decode("utf-8", "replace")
    return key, out.item() if hasattr(out, "item") else out


def load_container(source: Source) -> Container:
    """Open a .litertlm file (memory-mapped) or container bytes; ModelFormatError, naming
    where, for anything that is not a sound container."""
    if isinstance(source, (bytes, bytearray)):
        buf: Any = bytes(source)
        path = None
    else:
        path = Path(source)
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                raise ModelFormatError("header", f"{path.name} is empty")
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    data = np.frombuffer(buf, dtype=np.uint8)
    data.flags.writeable = False
    return Container(buf, data, path)
