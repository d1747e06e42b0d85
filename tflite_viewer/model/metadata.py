"""Model metadata entries and their decoders.

Known entries are decoded: ``min_runtime_version`` (a NUL-padded string),
``CONVERSION_METADATA`` (conversion_metadata.fbs) and ``TFLITE_METADATA`` (the TFLite
Support metadata_schema.fbs, with normalization, image properties and associated files).
Associated files (label maps, vocabularies) live in a zip archive appended to the model;
they are read from the mapped file without extracting anything to disk.
"""
from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from flatbuffers.table import Table

from ..schema.conversion_metadata_layout import LAYOUT as CONVERSION_LAYOUT
from ..schema.metadata_schema_layout import LAYOUT as METADATA_LAYOUT
from .errors import ModelFormatError
from .options import table_to_dict
from .verify import verify_buffer

MIN_RUNTIME_VERSION = "min_runtime_version"
CONVERSION_METADATA = "CONVERSION_METADATA"
TFLITE_METADATA = "TFLITE_METADATA"


@dataclass(frozen=True)
class Metadata:
    """One ``Model.metadata`` entry: a name and the buffer that holds its bytes."""

    index: int
    name: str
    buffer: int
    data: np.ndarray  # uint8 view on the file (empty if the buffer is missing)

    def decoded(self) -> Any:
        """str, dict (flatbuffer metadata) or bytes; a broken entry gives a `ModelFormatError`."""
        where = f"metadata[{self.index}] ({self.name})"
        if self.name == MIN_RUNTIME_VERSION:
            return decode_min_runtime_version(self.data)
        if self.name == CONVERSION_METADATA:
            return decode_flatbuffer(self.data, CONVERSION_LAYOUT, None, where)
        if self.name == TFLITE_METADATA:
            return decode_flatbuffer(self.data, METADATA_LAYOUT, "M001", where)
        return self.data.tobytes()


def decode_min_runtime_version(data: np.ndarray) -> str:
    return data.tobytes().split(b"\0", 1)[0].decode("ascii", "replace")


def decode_flatbuffer(data: np.ndarray, layout: dict, identifier: str | None, where: str) -> dict:
    """Verify a nested flatbuffer and return its root table as a dict."""
    try:
        verify_buffer(layout, data, identifier)
    except ModelFormatError as exc:
        raise ModelFormatError(f"{where}.{exc.where}" if exc.where else where, exc.reason) from None
    buf = data.tobytes()
    root = int.from_bytes(buf[:4], "little")
    return table_to_dict(layout, layout["root_table"], Table(buf, root))


class _ViewFile(io.RawIOBase):
    """A read-only, seekable file over a mapped model, so zipfile reads it without copying."""

    def __init__(self, view: np.ndarray) -> None:
        self._view = view
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._view.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, b) -> int:
        chunk = self._view[self._pos:self._pos + len(b)]
        n = chunk.size
        memoryview(b)[:n] = chunk.data
        self._pos += n
        return n


#: what zipfile raises on a damaged archive or member, besides BadZipFile: a bad deflate
#: stream (zlib.error), an unknown compression or encryption (NotImplementedError,
#: RuntimeError), a short member (EOFError), headers past the end (struct.error, OSError),
#: undecodable names (UnicodeDecodeError, a ValueError)
ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, EOFError,
              struct.error, OSError, ValueError, OverflowError)

#: the largest associated file read into memory: its size is declared by the (untrusted)
#: archive, and a deflate stream of a few KB can claim gigabytes
MAX_ASSOCIATED_FILE_BYTES = 256 << 20


def open_associated_files(data: np.ndarray) -> zipfile.ZipFile | None:
    """The zip archive appended to a model, or None when there is none (or its central
    directory is unreadable: then no file can be listed, as for a model without one)."""
    try:
        return zipfile.ZipFile(io.BufferedReader(_ViewFile(data)))
    except ZIP_ERRORS:
        return None


def read_associated_file(zf: zipfile.ZipFile, name: str, where: str) -> bytes:
    """One member of the associated-files archive; a damaged member (bad CRC, bad header,
    corrupt deflate data, unsupported compression or encryption, a declared size past
    `MAX_ASSOCIATED_FILE_BYTES`) is a `ModelFormatError` at ``where``.  A name the archive
    does not hold is a KeyError, as for any mapping."""
    info = zf.getinfo(name)  # KeyError: no such file
    if info.file_size > MAX_ASSOCIATED_FILE_BYTES:
        raise ModelFormatError(where, f"associated file {name!r} declares {info.file_size:,} "
                               f"bytes, more than the {MAX_ASSOCIATED_FILE_BYTES:,} bytes a "
                               "packed file may hold here")
    try:
        return zf.read(info)
    except ZIP_ERRORS as exc:
        raise ModelFormatError(where, f"associated file {name!r} cannot be read: "
                               f"{type(exc).__name__}: {exc}") from None
