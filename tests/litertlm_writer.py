"""A LiteRT-LM container writer for tests, from the format's definition (LiteRT-LM's
schema/core: a 32-byte preamble, the LiteRTLMMetaData flatbuffer, sections on 16 KiB
boundaries), built with the project's generated flatbuffers code.  Independent of the
reader under test: it packs with the object API, the reader reads with the verifier."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import flatbuffers

from tflite_viewer.schema import litertlm_header_generated as L

BLOCK = 16 * 1024


@dataclass
class Part:
    kind: str  # an AnySectionDataType name: "TFLiteModel", "SP_Tokenizer", ...
    data: bytes
    items: dict[str, Any] = field(default_factory=dict)


def _value(v: Any):
    """A VData member for a Python value: str, bool, int (Int64), float (Double)."""
    if isinstance(v, str):
        t = L.StringValueT()
        t.value = v
        return L.VData.StringValue, t
    if isinstance(v, bool):
        t = L.BoolT()
        t.value = v
        return L.VData.Bool, t
    if isinstance(v, int):
        t = L.Int64T()
        t.value = v
        return L.VData.Int64, t
    t = L.DoubleT()
    t.value = float(v)
    return L.VData.Double, t


def _pairs(d: dict[str, Any]) -> list:
    out = []
    for k, v in d.items():
        kv = L.KeyValuePairT()
        kv.key = k
        kv.valueType, kv.value = _value(v)
        out.append(kv)
    return out


def _header(parts: list[Part], system: dict[str, Any], offsets: list[tuple[int, int]]) -> bytes:
    meta = L.LiteRTLMMetaDataT()
    meta.systemMetadata = L.SystemMetadataT()
    meta.systemMetadata.entries = _pairs(system)
    meta.sectionMetadata = L.SectionMetadataT()
    meta.sectionMetadata.objects = []
    for p, (b, e) in zip(parts, offsets):
        o = L.SectionObjectT()
        o.items = _pairs(p.items)
        o.beginOffset, o.endOffset = b, e
        o.dataType = getattr(L.AnySectionDataType, p.kind)
        meta.sectionMetadata.objects.append(o)
    builder = flatbuffers.Builder(1024)
    builder.Finish(meta.Pack(builder))
    return bytes(builder.Output())


def build_container(parts: list[Part], system: dict[str, Any] | None = None,
                    version: tuple[int, int, int] = (1, 7, 0)) -> bytes:
    """The bytes of a .litertlm holding ``parts`` in order."""
    system = system or {}
    # offsets are ulong fields, always written: the header's size does not depend on them
    size = len(_header(parts, system, [(1, 1)] * len(parts)))
    pos = -(-(32 + size) // BLOCK) * BLOCK
    offsets = []
    for p in parts:
        offsets.append((pos, pos + len(p.data)))
        pos = -(-(pos + len(p.data)) // BLOCK) * BLOCK
    header = _header(parts, system, offsets)
    assert len(header) == size
    out = bytearray(b"LITERTLM" + struct.pack("<3I", *version) + bytes(4)
                    + struct.pack("<Q", 32 + len(header)) + header)
    for p, (b, e) in zip(parts, offsets):
        out += bytes(b - len(out))
        out += p.data
    return bytes(out)
