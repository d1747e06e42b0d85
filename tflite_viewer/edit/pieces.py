"""A model's bytes as pieces: ranges of the opened file and small in-memory parts.

An edit of a 2.5 GB model changes a few hundred bytes of it.  Holding each state of the
document as one ``bytes`` object would copy the weights on every edit and hold the model
twice; so a state is a `Pieces`: an immutable sequence of parts, each either a range of the
opened file (`FileRange`, never read into memory) or a bytes-like object.  Overwriting or
inserting bytes (`Pieces.replace`) splits parts and shares everything else, so a state
costs the bytes that changed.

Two ways out:

* `Pieces.write_to` streams the parts into a file: file ranges go kernel to kernel
  (``os.sendfile``, else ``os.copy_file_range``, else bounded reads), so saving never maps
  the weights into the process.
* `Pieces.materialize` gives one contiguous read-only buffer for the reader.  Small files
  are joined.  Large ones, on Linux and macOS, are *composed*: an anonymous mapping of the
  whole length over which every page that lies wholly inside a file range is mapped from
  the file itself (``mmap(MAP_FIXED | MAP_PRIVATE)``); only the other bytes are copied.
  A file range can be mapped only where its position in the state is congruent to its
  position in the file modulo the page size, which is why inserted blocks before large
  ranges are whole multiples of `INSERT_GRANULE`.  The composed buffer is a Python
  ``mmap`` object: it is unmapped, file pages included, when the last view of it goes.
  The bytes are the same either way; composition only decides what is copied.
"""
from __future__ import annotations

import bisect
import ctypes
import mmap
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Union

#: inserted blocks that move large file ranges are multiples of this (a common page size
#: multiple: 4 KiB and 16 KiB pages both divide it)
INSERT_GRANULE = 1 << 14
#: files smaller than this are joined rather than composed
COMPOSE_MIN_BYTES = 32 << 20
_CHUNK = 8 << 20


class SourceFile:
    """The opened file: its path, a read-only mapping of it, and a descriptor for
    composing and streaming (kept open as long as a state refers to it)."""

    def __init__(self, path: Path, mapping, size: int) -> None:
        self.path = Path(path)
        self.mapping = mapping  # the loader's read-only mmap (or bytes)
        self.size = size
        self.fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        if os.fstat(self.fd).st_size != size:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        fd = getattr(self, "fd", -1)
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:  # pragma: no cover - interpreter shutdown
                pass

    def view(self, start: int, stop: int) -> memoryview:
        return memoryview(self.mapping)[start:stop]


@dataclass(frozen=True)
class FileRange:
    """Bytes ``[start, stop)`` of the opened file."""

    source: SourceFile
    start: int
    stop: int

    def __len__(self) -> int:
        return self.stop - self.start


Part = Union[bytes, bytearray, memoryview, FileRange]


def _length(part: Part) -> int:
    return len(part) if not isinstance(part, memoryview) else part.nbytes


class Pieces:
    """An immutable byte string made of parts (see the module docstring)."""

    def __init__(self, parts: Iterable[Part]) -> None:
        kept: list[Part] = []
        for p in parts:
            if isinstance(p, memoryview):
                p = p.cast("B") if p.format != "B" or p.ndim != 1 else p
            if _length(p):
                kept.append(p)
        self.parts: tuple[Part, ...] = tuple(kept)
        starts = [0]
        for p in self.parts:
            starts.append(starts[-1] + _length(p))
        self._starts = starts
        self._buffer = None

    @classmethod
    def of_file(cls, source: SourceFile) -> "Pieces":
        return cls([FileRange(source, 0, source.size)])

    @classmethod
    def of_bytes(cls, data) -> "Pieces":
        return cls([data])

    def __len__(self) -> int:
        return self._starts[-1]

    # -- reading -------------------------------------------------------------------------
    def _slices(self, start: int, stop: int) -> list[Part]:
        """The parts covering ``[start, stop)``, cut to it (no copies)."""
        out: list[Part] = []
        if start >= stop:
            return out
        k = bisect.bisect_right(self._starts, start) - 1
        while k < len(self.parts) and self._starts[k] < stop:
            p, base = self.parts[k], self._starts[k]
            a, b = max(start, base) - base, min(stop, self._starts[k + 1]) - base
            if isinstance(p, FileRange):
                out.append(FileRange(p.source, p.start + a, p.start + b))
            else:
                out.append(memoryview(p)[a:b] if (a, b) != (0, _length(p)) else p)
            k += 1
        return out

    def file_offset(self, start: int, stop: int, source: "SourceFile") -> int | None:
        """Where ``[start, stop)`` lies in ``source`` when one range of that file holds all
        of it (None otherwise): those bytes are the file's, unread."""
        k = bisect.bisect_right(self._starts, start) - 1
        if not 0 <= k < len(self.parts) or stop > self._starts[k + 1]:
            return None
        p = self.parts[k]
        if not isinstance(p, FileRange) or p.source is not source:
            return None
        return p.start + start - self._starts[k]

    def read(self, start: int, stop: int) -> bytes:
        return b"".join(_as_buffer(p) for p in self._slices(start, stop))

    def replace(self, edits: Iterable[tuple[int, int, bytes]]) -> "Pieces":
        """A new Pieces with each ``(pos, n, new)`` applied: the ``n`` bytes at ``pos`` (in
        this string's positions) become ``new``; ``n == 0`` inserts.  Edits must not overlap."""
        ordered = sorted(edits, key=lambda e: (e[0], e[1]))
        parts: list[Part] = []
        at = 0
        for pos, n, new in ordered:
            if pos < at or pos + n > len(self):
                raise ValueError("overlapping or out-of-range edits")
            parts += self._slices(at, pos)
            parts.append(new)
            at = pos + n
        parts += self._slices(at, len(self))
        return Pieces(parts)

    # -- out -----------------------------------------------------------------------------
    def tobytes(self) -> bytes:
        buf = self._buffer
        if buf is not None:
            return bytes(buf)
        if len(self.parts) == 1 and isinstance(self.parts[0], bytes):
            return self.parts[0]
        return b"".join(_as_buffer(p) for p in self.parts)

    def materialize(self):
        """One contiguous read-only buffer of the bytes (cached): ``bytes`` or an ``mmap``."""
        if self._buffer is None:
            if len(self.parts) == 1 and isinstance(self.parts[0], bytes):
                self._buffer = self.parts[0]
            elif len(self.parts) == 1 and isinstance(self.parts[0], FileRange) and \
                    self.parts[0].start == 0 and self.parts[0].stop == self.parts[0].source.size:
                self._buffer = self.parts[0].source.mapping
            else:
                self._buffer = _compose(self) if _composable(self) else self.tobytes()
        return self._buffer

    def write_to(self, fd: int) -> None:
        """Write every byte to an open descriptor, file ranges without passing through
        this process's memory where the platform allows."""
        for p in self.parts:
            if isinstance(p, FileRange):
                _copy_range(p, fd)
            else:
                view = memoryview(p).cast("B")
                while view.nbytes:
                    n = os.write(fd, view[:_CHUNK])
                    view = view[n:]


def _as_buffer(p: Part):
    return p.source.view(p.start, p.stop) if isinstance(p, FileRange) else p


def _copy_range(p: FileRange, out: int) -> None:
    """Copy a file range kernel to kernel: ``sendfile`` first (what ``shutil.copyfile``
    uses on Linux; measured 3-5x faster than ``copy_file_range`` on this machine's file
    system), then ``copy_file_range``, then bounded reads."""
    src, offset, left = p.source.fd, p.start, len(p)
    for name in ("sendfile", "copy_file_range"):
        if not left or src < 0 or not hasattr(os, name):
            continue
        try:
            while left:
                if name == "sendfile":
                    n = os.sendfile(out, src, offset, min(left, 1 << 30))
                else:
                    n = os.copy_file_range(src, out, min(left, 1 << 30), offset)
                if n <= 0:
                    break
                offset, left = offset + n, left - n
        except OSError:
            pass
    while left:  # bounded reads: never the whole range at once
        n = min(left, _CHUNK)
        if src >= 0:
            chunk = os.pread(src, n, offset)
        else:
            chunk = bytes(p.source.view(offset, offset + n))
        if not chunk:
            raise OSError(f"{p.source.path} ended early (was it changed while open?)")
        view = memoryview(chunk)
        while view.nbytes:
            w = os.write(out, view)
            view = view[w:]
        offset, left = offset + len(chunk), left - len(chunk)


# -- composition ----------------------------------------------------------------------------

_PAGE = mmap.PAGESIZE
_MAP_FIXED = 0x10  # the same on Linux and macOS
_libc_mmap = None


def _mmap_function():
    global _libc_mmap
    if _libc_mmap is None:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.mmap
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_int64]
        _libc_mmap = fn
    return _libc_mmap


def composition_available() -> bool:
    return (sys.platform.startswith("linux") or sys.platform == "darwin") and \
        INSERT_GRANULE % _PAGE == 0 and ctypes.sizeof(ctypes.c_void_p) == 8


def _mapped_pages(p: FileRange, vpos: int) -> tuple[int, int] | None:
    """The virtual page span [a, b) wholly inside the range, if it can be mapped."""
    if p.source.fd < 0 or (vpos - p.start) % _PAGE:
        return None
    a = -(-vpos // _PAGE) * _PAGE
    b = (vpos + len(p)) // _PAGE * _PAGE
    return (a, b) if b - a >= 16 * _PAGE else None


def _composable(pieces: Pieces) -> bool:
    if len(pieces) < COMPOSE_MIN_BYTES or not composition_available():
        return False
    return any(isinstance(p, FileRange) and _mapped_pages(p, s) is not None
               for p, s in zip(pieces.parts, pieces._starts))


def _compose(pieces: Pieces):
    """The bytes as an anonymous mapping with file pages mapped in place (see the module
    docstring).  Falls back to copying a part if the kernel refuses to map it."""
    total = len(pieces)
    buf = mmap.mmap(-1, total)
    anchor = ctypes.c_char.from_buffer(buf)
    base = ctypes.addressof(anchor)
    del anchor
    fn = _mmap_function()
    prot = mmap.PROT_READ | mmap.PROT_WRITE
    copies: list[tuple[int, Part]] = []
    for p, vpos in zip(pieces.parts, pieces._starts):
        span = _mapped_pages(p, vpos) if isinstance(p, FileRange) else None
        if span is not None:
            a, b = span
            got = fn(base + a, b - a, prot, mmap.MAP_PRIVATE | _MAP_FIXED, p.source.fd,
                     p.start + (a - vpos))
            if got == base + a:
                if a > vpos:
                    copies.append((vpos, FileRange(p.source, p.start, p.start + a - vpos)))
                if vpos + len(p) > b:
                    copies.append((b, FileRange(p.source, p.start + b - vpos, p.stop)))
                continue
            # MAP_FAILED: the anonymous pages are still there; copy the bytes instead
        copies.append((vpos, p))
    for vpos, p in copies:
        src = _as_buffer(p)
        n = _length(p) if not isinstance(p, FileRange) else len(p)
        buf[vpos:vpos + n] = src
    return buf
