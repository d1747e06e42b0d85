"""The Model view: the root of everything the reader exposes."""
from __future__ import annotations

import mmap

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ..schema import schema_generated as S
from . import opcodes
from .errors import Finding
from .external import NoSource, SideFiles, WeightSource
from .lazy import LazySequence
from .metadata import (CONVERSION_METADATA, MIN_RUNTIME_VERSION, TFLITE_METADATA, Metadata,
                       open_associated_files, read_associated_file)
from .subgraph import Subgraph
from .verify import FileIndex


@dataclass(frozen=True)
class OperatorCode:
    index: int
    builtin_code: int  # max(builtin_code, deprecated_builtin_code), as LiteRT resolves it
    deprecated_builtin_code: int
    custom_code: str | None
    version: int

    @property
    def is_custom(self) -> bool:
        return self.builtin_code == opcodes.CUSTOM

    @property
    def name(self) -> str:
        """`CONV_2D`, the custom code for custom ops, or the number for unknown codes."""
        if self.is_custom:
            return self.custom_code or "CUSTOM"
        return opcodes.builtin_name(self.builtin_code)

    @property
    def builtin_name(self) -> str:
        return opcodes.builtin_name(self.builtin_code)

    @property
    def category(self) -> str:
        return opcodes.category(self.builtin_code)


@dataclass(frozen=True)
class Buffer:
    """A buffer's bytes as a read-only view on the file (inline, or at offset/size)."""

    index: int
    data: np.ndarray
    offset: int  # > 1: data lives after the flatbuffer (buffer-offset layout)
    size: int

    @property
    def nbytes(self) -> int:
        return int(self.data.size)

    @property
    def is_external_layout(self) -> bool:
        return self.offset > 1


@dataclass(frozen=True)
class TensorMap:
    name: str
    tensor_index: int


@dataclass(frozen=True)
class SignatureDef:
    index: int
    key: str
    subgraph_index: int
    inputs: tuple[TensorMap, ...]
    outputs: tuple[TensorMap, ...]


@dataclass(frozen=True)
class ExternalBufferGroup:
    index: int
    name: str


@dataclass(frozen=True)
class ExternalBuffer:
    index: int
    id: int
    group: int
    offset: int
    length: int
    packing: str


def _text(raw: bytes | None) -> str:
    return raw.decode("utf-8", "replace") if raw is not None else ""


class Model:
    """An immutable, lazily decoded view of a .tflite file (see `load_model`)."""

    def __init__(self, source: Any, data: np.ndarray, path: Path | None = None,
                 index: "FileIndex | None" = None, weights: "WeightSource | None" = None) -> None:
        self._source = source  # the mmap or bytes the views point into
        self.data = data  # the whole file as a read-only uint8 array
        self.path = path
        self.index = index  # the verifier's columns (every operator's inputs in one array)
        self._fb = S.Model.GetRootAs(source, 0)
        fb = self._fb
        self.subgraphs: LazySequence[Subgraph] = LazySequence(
            fb.SubgraphsLength(), lambda i: Subgraph(self, i, fb.Subgraphs(i)))
        self.buffers: LazySequence[Buffer] = LazySequence(fb.BuffersLength(), self._buffer)
        self.findings: list[Finding] = []
        #: a model opened from a .litertlm container: which one, which section (`litertlm`)
        self.origin: Any = None
        #: where external buffer groups (side files) are found: see `external.py`
        self.weights = weights if weights is not None else (
            SideFiles(path.parent) if path is not None else NoSource())

    def prime_views(self) -> None:
        """`Subgraph.prime_views` of every subgraph: for a reader of every tensor and
        operator (an interpreter, the quantization analysis); opening a model builds none."""
        if self.index is not None:
            for sg in self.subgraphs:
                sg.prime_views()

    def __repr__(self) -> str:
        where = self.path.name if self.path else f"{self.file_size} bytes"
        return f"<Model {where}: {len(self.subgraphs)} subgraphs>"

    # -- header --------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return int(self._fb.Version())

    @cached_property
    def description(self) -> str:
        return _text(self._fb.Description())

    @property
    def file_size(self) -> int:
        return int(self.data.size)

    @cached_property
    def operator_codes(self) -> tuple[OperatorCode, ...]:
        out = []
        for i in range(self._fb.OperatorCodesLength()):
            oc = self._fb.OperatorCodes(i)
            dep = int(oc.DeprecatedBuiltinCode())
            out.append(OperatorCode(i, max(int(oc.BuiltinCode()), dep), dep,
                                    oc.CustomCode().decode("utf-8", "replace")
                                    if oc.CustomCode() is not None else None,
                                    int(oc.Version())))
        return tuple(out)

    # -- buffers -------------------------------------------------------------------------
    def release(self, view: np.ndarray) -> None:
        """Let the pages under ``view`` (an array viewing the mapped file) leave this
        process's resident memory: the operating system keeps them in its file cache and
        maps them again when they are read.  A check that reads every weight once stays
        small so; nothing happens for a model read from bytes."""
        if not isinstance(self._source, mmap.mmap) or not view.size:
            return
        base = self.data.__array_interface__["data"][0]
        start = view.__array_interface__["data"][0] - base
        end = start + view.nbytes
        if start < 0 or end > self.data.size or not view.flags.c_contiguous:
            return
        page = mmap.PAGESIZE
        start -= start % page
        try:
            self._source.madvise(mmap.MADV_DONTNEED, start, min(end, self.data.size) - start)
        except (AttributeError, OSError, ValueError):  # no madvise here: pages stay
            pass

    def scanned(self, values: np.ndarray, chunk_bytes: int = 1 << 24):
        """``values`` (a view on the mapped file), flattened, a chunk at a time: each chunk
        is `release`d once the caller has read it."""
        flat = values.reshape(-1)
        step = max(1, chunk_bytes // max(1, flat.itemsize))
        for start in range(0, flat.size, step):
            part = flat[start:start + step]
            yield part
            self.release(part)

    def _buffer(self, i: int) -> Buffer:
        b = self._fb.Buffers(i)
        offset, size = int(b.Offset()), int(b.Size())
        if offset > 1:
            end = min(offset + size, self.data.size)
            data = self.data[min(offset, end):end]
        elif not b.DataIsNone():
            data = b.DataAsNumpy()
        else:
            data = self.data[:0]
        return Buffer(i, data, offset, size)

    @cached_property
    def buffer_sizes(self) -> np.ndarray:
        """Bytes of every buffer (inline or offset layout), from the verifier's columns."""
        buffers = self.index.table("tflite.Buffer")
        offset = self.index.scalar(buffers, "offset").astype(np.int64)
        size = self.index.scalar(buffers, "size").astype(np.int64)
        inline = self.index.lengths(buffers, "data")
        nbytes = np.zeros(len(self.buffers), dtype=np.int64)
        nbytes[buffers.index] = np.where(offset > 1, size, inline)
        return nbytes

    @cached_property
    def metadata_buffer(self) -> tuple[int, ...]:
        if self._fb.MetadataBufferIsNone():
            return ()
        return tuple(int(i) for i in self._fb.MetadataBufferAsNumpy())

    # -- signatures ----------------------------------------------------------------------
    @cached_property
    def signature_defs(self) -> tuple[SignatureDef, ...]:
        out = []
        for i in range(self._fb.SignatureDefsLength()):
            s = self._fb.SignatureDefs(i)
            ins = tuple(TensorMap(_text(s.Inputs(j).Name()), int(s.Inputs(j).TensorIndex()))
                        for j in range(s.InputsLength()))
            outs = tuple(TensorMap(_text(s.Outputs(j).Name()), int(s.Outputs(j).TensorIndex()))
                         for j in range(s.OutputsLength()))
            out.append(SignatureDef(i, _text(s.SignatureKey()), int(s.SubgraphIndex()), ins, outs))
        return tuple(out)

    def subgraph_index(self, which: int | str | None) -> int:
        """A subgraph index from an index (`2` or "2"), a subgraph name or a signature key.

        The command line and the window both let users name subgraphs these three ways;
        None or "" means subgraph 0.  Raises KeyError naming what exists.
        """
        n = len(self.subgraphs)
        if which is None or which == "":
            return 0
        if isinstance(which, int) or str(which).lstrip("-").isdigit():
            index = int(which)
            if not 0 <= index < n:
                raise KeyError(f"subgraph {index} out of range (0..{n - 1})")
            return index
        for sg in self.subgraphs:
            if sg.name == which:
                return sg.index
        for sig in self.signature_defs:
            if sig.key == which:
                return sig.subgraph_index
        names = ", ".join(repr(sg.display_name) for sg in self.subgraphs)
        raise KeyError(f"no subgraph or signature {which!r} (subgraphs: {names})")

    def signature(self, key: str) -> SignatureDef:
        for sig in self.signature_defs:
            if sig.key == key:
                return sig
        keys = ", ".join(s.key for s in self.signature_defs) or "none"
        raise KeyError(f"no signature {key!r} (signatures: {keys})")

    # -- external buffers ----------------------------------------------------------------
    @cached_property
    def external_buffer_groups(self) -> tuple[ExternalBufferGroup, ...]:
        return tuple(ExternalBufferGroup(i, _text(self._fb.ExternalBufferGroups(i).Name()))
                     for i in range(self._fb.ExternalBufferGroupsLength()))

    @cached_property
    def external_buffers(self) -> tuple[ExternalBuffer, ...]:
        out = []
        for i in range(self._fb.ExternalBuffersLength()):
            e = self._fb.ExternalBuffers(i)
            out.append(ExternalBuffer(i, int(e.Id()), int(e.Group()), int(e.Offset()),
                                      int(e.Length()), _text(e.Packing())))
        return tuple(out)

    @cached_property
    def external_buffers_by_id(self) -> dict[int, ExternalBuffer]:
        """Entries by the id tensors name them with (the first entry of a repeated id)."""
        out: dict[int, ExternalBuffer] = {}
        for e in self.external_buffers:
            out.setdefault(e.id, e)
        return out

    # -- metadata ------------------------------------------------------------------------
    @cached_property
    def metadata(self) -> tuple[Metadata, ...]:
        out = []
        for i in range(self._fb.MetadataLength()):
            m = self._fb.Metadata(i)
            buf = int(m.Buffer())
            data = self.buffers[buf].data if 0 <= buf < len(self.buffers) else self.data[:0]
            out.append(Metadata(i, _text(m.Name()), buf, data))
        return tuple(out)

    def metadata_entry(self, name: str) -> Metadata | None:
        return next((m for m in self.metadata if m.name == name), None)

    @cached_property
    def min_runtime_version(self) -> str | None:
        entry = self.metadata_entry(MIN_RUNTIME_VERSION)
        return entry.decoded() if entry else None

    @cached_property
    def conversion_metadata(self) -> dict | None:
        entry = self.metadata_entry(CONVERSION_METADATA)
        return entry.decoded() if entry else None

    @cached_property
    def tflite_metadata(self) -> dict | None:
        entry = self.metadata_entry(TFLITE_METADATA)
        return entry.decoded() if entry else None

    def associated_files(self) -> list[str]:
        """Names of the files packed with the model (labels, vocabularies)."""
        zf = open_associated_files(self.data)
        return zf.namelist() if zf else []

    def read_associated_file(self, name: str) -> bytes:
        """The bytes of a packed file.  A damaged archive member is a `ModelFormatError`
        naming the metadata entry that lists the files and where the archive starts; a
        name the archive does not hold is a KeyError."""
        zf = open_associated_files(self.data)
        if zf is None:
            raise KeyError(f"the model has no associated files (looking for {name!r})")
        return read_associated_file(zf, name, self._associated_files_where(zf))

    def _associated_files_where(self, zf) -> str:
        """Where a damaged associated file is reported: the TFLITE_METADATA entry (and its
        buffer) that lists the packed files, and the byte where the zip begins."""
        try:
            start = min([i.header_offset for i in zf.infolist()] + [zf.start_dir])
        except (AttributeError, ValueError):  # pragma: no cover - zipfile internals differ
            start = None
        at = f" at byte {start:,}" if start is not None else ""
        entry = self.metadata_entry(TFLITE_METADATA)
        if entry is None:
            return f"associated files (the zip appended to the model{at})"
        return (f"metadata[{entry.index}] ({entry.name}, buffer {entry.buffer}).associated "
                f"files (the zip appended to the model{at})")

    # -- summaries -----------------------------------------------------------------------
    @cached_property
    def weights_nbytes(self) -> int:
        """Bytes of tensor data (constants), counted once per buffer."""
        seen: set[int] = set()
        total = 0
        for sg in self.subgraphs:
            for t in sg.tensors:
                if t.buffer not in seen and 0 < t.buffer < len(self.buffers):
                    seen.add(t.buffer)
                    total += self.buffers[t.buffer].nbytes
        return total

    @cached_property
    def parameter_count(self) -> int:
        """Elements of constant tensors (weights, biases, other constants), each buffer
        counted once: the signatures of an LLM export (prefill, decode) are subgraphs whose
        tensors share the same weight buffers, and those weights exist once in the file.
        A buffer's elements are those of the first non-variable tensor that reads it;
        external buffers (side files) count the same way, once per id."""
        seen: set = set()
        total = 0
        for sg in self.subgraphs:
            for t in sg.tensors:
                key = ("external", t.external_buffer) if t.external_buffer else t.buffer
                if key in seen or t.is_variable or not (t.buffer_nbytes or t.external_buffer):
                    continue
                seen.add(key)
                total += t.num_elements
        return total

    def op_histogram(self) -> dict[str, int]:
        """`{"CONV_2D/v1": 15, ...}` over all subgraphs, in first-seen order."""
        hist: dict[str, int] = {}
        for sg in self.subgraphs:
            for op in sg.operators:
                key = f"{op.name}/v{op.version}"
                hist[key] = hist.get(key, 0) + 1
        return hist
