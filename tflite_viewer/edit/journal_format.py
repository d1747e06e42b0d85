"""What the recovery journal holds, and how it is written on disk (see `edit.journal`).

A journal is a text file of entries, one a line: ``<crc32 of the JSON, 8 hex digits> <JSON>``.
A line whose checksum does not match, or that does not end in a newline, is where the
journal was cut short (a kill or a power cut in the middle of a write) or damaged: the
reader keeps the entries before it.  Entries:

* the header (first line): ``{"journal": "tflite-viewer", "version": 1, "source": stamp,
  "layout": ..., "settings": {...}}`` -- which file the edits apply to, as it was then;
* ``{"description": "...", "apply": {"kind": "SetOption", "args": {...}}}`` -- a command
  applied at the current position: the commands after the position (undone ones) are
  dropped, as `ModelDocument.apply` drops them;
* ``{"at": 3}`` -- the history's position after an undo or a redo;
* ``{"sha256": "..."}`` -- the source file's hash, when the header went out before the
  thread hashing the file was done (a large model);
* ``{"saved": "/path/out.tflite"}`` -- the model was saved there (for the restore's message).

A command is recorded as the call that made it (`EditCommand.arguments`): JSON for what
JSON carries; bytes and numpy arrays go to side files in the journal's data folder, named
by the SHA-256 of their contents (so a damaged or missing side file is known), written
and synced before the line that names them.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..model.durable import replace_file, sync_folder, write_all
from ..model.errors import TFLiteViewerError
from .commands import (EditCommand, ExposeTensor, RemoveCustomOption, RemoveMetadata,
                       RemoveOperator, RenameSignature, RenameSignatureTensor, RenameTensor,
                       ReorderOperators, ReplaceTensorData, SetCustomOption, SetDescription,
                       SetMetadata, SetOfflineMemoryPlan, SetOpVersion, SetOption,
                       SetQuantization, SetTensorShape, SplitFusedActivation)
from .shape_commands import UpdateStoredShapes


MAGIC = "tflite-viewer"
VERSION = 1

#: every command the journal can record, by the name it is recorded under
KINDS: dict[str, type[EditCommand]] = {cls.__name__: cls for cls in (
    ExposeTensor, RemoveCustomOption, RemoveMetadata, RemoveOperator, RenameSignature,
    RenameSignatureTensor, RenameTensor, ReorderOperators, ReplaceTensorData, SetCustomOption,
    SetDescription, SetMetadata, SetOfflineMemoryPlan, SetOpVersion, SetOption,
    SetQuantization, SetTensorShape, SplitFusedActivation, UpdateStoredShapes)}


class JournalError(TFLiteViewerError):
    """A journal cannot be written or read back; the message says why, for a person."""


class DataFolder:
    """The side files of one journal: contents named by their SHA-256."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def put(self, data: bytes, suffix: str) -> str:
        """Store ``data`` durably; its name (the same contents are stored once)."""
        name = hashlib.sha256(data).hexdigest()[:40] + suffix
        target = self.path / name
        if not target.exists():
            if not self.path.is_dir():
                self.path.mkdir(mode=0o700)
                sync_folder(self.path.parent)
            replace_file(target, lambda fd: write_all(fd, data), 0o600)
        return name

    def get(self, name: str) -> bytes:
        """The contents of side file ``name``, or JournalError if missing or damaged."""
        if not isinstance(name, str) or os.sep in name or "/" in name or name.startswith("."):
            raise JournalError(f"a side file is named {name!r}")
        try:
            data = (self.path / name).read_bytes()
        except OSError as exc:
            raise JournalError(f"its data file {name} cannot be read "
                               f"({exc.strerror or exc})") from None
        if hashlib.sha256(data).hexdigest()[:40] != name.split(".", 1)[0]:
            raise JournalError(f"its data file {name} is damaged")
        return data


# -- values ----------------------------------------------------------------------------------

def encode_value(value: Any, put: Callable[[bytes, str], str]) -> Any:
    """``value`` as JSON, with bytes and arrays stored by ``put``; JournalError for what a
    command argument should never be (an object that has no faithful record)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        if value.dtype.kind not in "biuf":
            raise JournalError(f"a numpy {value.dtype} value cannot be journaled")
        return {"$scalar": [value.dtype.str, value.item()]}
    if isinstance(value, np.ndarray):
        out = io.BytesIO()
        try:
            np.save(out, value, allow_pickle=False)
        except ValueError:
            raise JournalError(f"an array of {value.dtype} cannot be journaled") from None
        return {"$npy": put(out.getvalue(), ".npy")}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": put(bytes(value), ".bin")}
    if isinstance(value, list):
        return [encode_value(v, put) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [encode_value(v, put) for v in value]}
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: encode_value(v, put) for k, v in value.items()}
        return {"$dict": [[encode_value(k, put), encode_value(v, put)]
                          for k, v in value.items()]}
    raise JournalError(f"a {type(value).__name__} value cannot be journaled")


def decode_value(obj: Any, get: Callable[[str], bytes]) -> Any:
    """The value `encode_value` recorded (JournalError if a side file is gone or damaged)."""
    if isinstance(obj, list):
        return [decode_value(v, get) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if len(obj) == 1:
        (tag, body), = obj.items()
        if tag == "$scalar":
            return np.dtype(body[0]).type(body[1])
        if tag == "$npy":
            return np.load(io.BytesIO(get(body)), allow_pickle=False)
        if tag == "$bytes":
            return get(body)
        if tag == "$tuple":
            return tuple(decode_value(v, get) for v in body)
        if tag == "$dict":
            return {_hashable(decode_value(k, get)): decode_value(v, get) for k, v in body}
    return {k: decode_value(v, get) for k, v in obj.items()}


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, (list, tuple)) else key


def encode_command(command: EditCommand, put: Callable[[bytes, str], str]) -> dict:
    """The journal entry of an applied command."""
    kind = type(command).__name__
    if KINDS.get(kind) is not type(command):
        raise JournalError(f"{kind} is not a command the journal knows")
    args = {k: encode_value(v, put) for k, v in command.arguments().items()}
    # the description first: a line cut short still says which edit it was
    return {"description": command.description, "apply": {"kind": kind, "args": args}}


def decode_command(entry: dict, get: Callable[[str], bytes]) -> EditCommand:
    """A new command made from a journal entry (JournalError if it cannot be)."""
    body = entry["apply"]
    cls = KINDS.get(body.get("kind")) if isinstance(body, dict) else None
    if cls is None or not isinstance(body.get("args"), dict):
        raise JournalError(f"an unknown edit {body!r:.80}")
    try:
        args = {k: decode_value(v, get) for k, v in body["args"].items()}
        return cls(**args)
    except JournalError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged record can hold anything
        raise JournalError(f"{cls.__name__} cannot be made from its record "
                           f"({type(exc).__name__}: {exc})") from None


# -- lines -----------------------------------------------------------------------------------

def frame(entry: dict) -> bytes:
    """One journal line: the entry's JSON after its CRC-32."""
    payload = json.dumps(entry, separators=(",", ":")).encode("ascii")
    return b"%08x %s\n" % (zlib.crc32(payload), payload)


def unframe(line: bytes) -> dict:
    """The entry of one line (with its newline); JournalError saying what is wrong."""
    if not line.endswith(b"\n"):
        raise JournalError("it ends in the middle of a line")
    crc, _, payload = line[:-1].partition(b" ")
    try:
        ok = len(crc) == 8 and int(crc, 16) == zlib.crc32(payload)
    except ValueError:
        ok = False
    if not ok:
        raise JournalError("its checksum does not match")
    try:
        entry = json.loads(payload)
    except ValueError:
        raise JournalError("it is not JSON") from None
    if not isinstance(entry, dict):
        raise JournalError("it is not an entry")
    return entry


# -- the source file -------------------------------------------------------------------------

@dataclass(frozen=True)
class SourceStamp:
    """The file a document's edits apply to, as it was when they were made.

    ``path`` (with ``section``, for a model inside a .litertlm container), its size,
    modification time and SHA-256 (None until hashed: a journal records it when its
    thread has read the file); or, for a model opened from bytes, ``data``: the side file
    holding those bytes."""

    path: str | None
    section: int | None
    size: int
    mtime_ns: int
    sha256: str | None
    data: str | None = None

    @classmethod
    def of_file(cls, path: str | os.PathLike, section: int | None = None) -> "SourceStamp":
        """The file's size and time now; its hash is `hash_file`'s job."""
        path = Path(path).absolute()
        st = path.stat()
        return cls(str(path), section, st.st_size, st.st_mtime_ns, None)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: Any) -> "SourceStamp":
        try:
            stamp = cls(**obj)
        except TypeError:
            raise JournalError("its header does not name a source file") from None
        types = {"path": (str, type(None)), "section": (int, type(None)), "size": int,
                 "mtime_ns": int, "sha256": (str, type(None)), "data": (str, type(None))}
        if any(not isinstance(getattr(stamp, k), t) for k, t in types.items()) or \
                (stamp.path is None) == (stamp.data is None):
            raise JournalError("its header does not name a source file")
        return stamp

    def change(self) -> str | None:
        """How the file differs now from what was recorded, for a person; None if it does
        not (same size, time and SHA-256)."""
        if self.path is None:
            return None  # the bytes are in the journal itself
        path = Path(self.path)
        try:
            st = path.stat()
        except OSError as exc:
            return f"{path} cannot be read any more ({exc.strerror or exc})"
        notes = []
        if st.st_size != self.size:
            notes.append(f"its size changed from {self.size:,} to {st.st_size:,} bytes")
        if st.st_mtime_ns != self.mtime_ns:
            notes.append("it was modified since")
        if not notes and self.sha256 is not None:
            try:
                same = hash_file(path) == self.sha256
            except OSError as exc:
                return f"{path} cannot be read any more ({exc.strerror or exc})"
            if not same:
                notes.append("its contents differ")
        if not notes:
            return None
        return f"{path.name} changed since the edits were made: {', '.join(notes)}"


def hash_file(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, read a megabyte at a time (hashing releases the GIL:
    a thread hashing a large model leaves the window responsive)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        chunk = bytearray(1 << 20)
        view = memoryview(chunk)
        while n := f.readinto(chunk):
            digest.update(view[:n])
    return digest.hexdigest()
