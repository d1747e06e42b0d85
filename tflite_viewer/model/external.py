"""External buffers: constant data kept in side files next to the model (schema 3d).

A tensor whose ``external_buffer`` is not 0 names, by *id* (not by index), an entry of the
model's ``external_buffers``; that entry names a group (an index into
``external_buffer_groups``), a byte ``offset`` and ``length`` and a ``packing``.  The
group's name is the side file: a path relative to the model's folder, or absolute.  This
is how LiteRT's own reader resolves them (``weight_loader/external_weight_loader_litert``:
group path joined to the model directory, the slice checked against the file's size, the
bytes mapped, never copied); its converter gives ids with the top bit set, so they never
look like buffer indices.  Only the ``"unpacked"`` packing (the tensor's bytes as an
inline buffer would hold them) is known; an empty packing is read the same way.

Side files are mapped on first use, once per model, so a tensor's values are a read-only
numpy view on the side file exactly as an inline weight is a view on the model file.

Where the groups come from is a `WeightSource`: `SideFiles` (a folder on disk) for a
.tflite file; a .litertlm container's TFLiteWeights section for models opened from one
(see `litertlm.py`).  A model read from bytes has no folder: its external tensors say so
when asked for values, and `load_model(..., weights_dir=...)` gives it one.
"""
from __future__ import annotations

import mmap
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from . import dtypes
from .errors import Finding, ModelFormatError

if TYPE_CHECKING:
    from .model import ExternalBuffer, Model

KNOWN_PACKINGS = ("", "unpacked")


@dataclass(frozen=True)
class GroupData:
    """A group's bytes (a read-only view) and how to name where they live."""

    data: np.ndarray
    label: str  # "side file /models/weights.bin", "section 2 (TFLiteWeights) of x.litertlm"


class WeightSource(Protocol):
    """Resolves an external buffer group's name to its bytes."""

    def describe(self, name: str) -> str:
        """Where a group of this name is looked for, for messages ("side file /d/w.bin")."""

    def size(self, name: str) -> int | None:
        """The group's size in bytes without reading it, or None when it does not exist."""

    def group(self, name: str) -> GroupData:
        """The group's bytes; ModelFormatError (naming `describe`) when it cannot be had."""


class SideFiles:
    """Groups are files named relative to a folder (the model's), or absolute paths."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self._mapped: dict[str, GroupData] = {}

    def path(self, name: str) -> Path:
        p = Path(name)
        return p if p.is_absolute() else self.directory / p

    def describe(self, name: str) -> str:
        return f"side file {self.path(name)}"

    def size(self, name: str) -> int | None:
        try:
            st = os.stat(self.path(name))
        except (OSError, ValueError):  # ValueError: a NUL byte in the name
            return None
        return int(st.st_size) if stat.S_ISREG(st.st_mode) else None

    def group(self, name: str) -> GroupData:
        hit = self._mapped.get(name)
        if hit is not None:
            return hit
        path = self.path(name)
        if not name:
            raise ModelFormatError("external_buffer_groups", "a group with an empty name "
                                   "names no side file")
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device would block
                raise ModelFormatError("external_buffer_groups", f"side file {path} is not a "
                                       f"regular file (group {name!r})")
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                raw = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        except FileNotFoundError:
            raise ModelFormatError("external_buffer_groups", f"side file {path} is missing "
                                   f"(group {name!r}, looked for next to the model)") from None
        except (OSError, ValueError) as exc:
            raise ModelFormatError("external_buffer_groups", f"side file {path} cannot be "
                                   f"read: {getattr(exc, 'strerror', None) or exc}") from None
        data = np.frombuffer(raw, dtype=np.uint8)
        data.flags.writeable = False
        out = GroupData(data, f"side file {path}")
        self._mapped[name] = out
        return out


class NoSource:
    """A model read from bytes: its side files have no folder to be found in."""

    def describe(self, name: str) -> str:
        return f"side file {name!r}"

    def size(self, name: str) -> int | None:
        return None

    def group(self, name: str) -> GroupData:
        raise ModelFormatError("external_buffer_groups", f"side file {name!r}: the model was "
                               "read from bytes, so there is no folder to find it in (pass "
                               "weights_dir= to load_model)")


def lookup(model: "Model", ext_id: int) -> "ExternalBuffer":
    """The external_buffers entry of an id; ModelFormatError when no entry has it."""
    entry = model.external_buffers_by_id.get(ext_id)
    if entry is None:
        known = ", ".join(f"{e.id:#x}" for e in model.external_buffers[:6]) or "none"
        raise ModelFormatError("external_buffer", f"id {ext_id:#x} is not in the model's "
                               f"external_buffers (ids: {known})")
    return entry


def group_name(model: "Model", entry: "ExternalBuffer") -> str:
    groups = model.external_buffer_groups
    if not 0 <= entry.group < len(groups):
        n = len(groups)
        raise ModelFormatError(f"external_buffers[{entry.index}].group", f"group {entry.group} "
                               f"out of range ({'0..%d' % (n - 1) if n else 'there are none'})")
    return groups[entry.group].name


def slice_of(model: "Model", ext_id: int) -> np.ndarray:
    """The bytes of an external buffer: a read-only view on its group's data."""
    entry = lookup(model, ext_id)
    where = f"external_buffers[{entry.index}]"
    if entry.packing not in KNOWN_PACKINGS:
        raise ModelFormatError(f"{where}.packing", f"packing {entry.packing!r} is not one "
                               "this reader knows ('unpacked')")
    name = group_name(model, entry)
    try:
        group = model.weights.group(name)
    except ModelFormatError as exc:
        raise ModelFormatError(where, f"{exc.reason}") from None
    end = entry.offset + entry.length
    if end > group.data.size:
        raise ModelFormatError(where, f"{group.label} holds {group.data.size:,} bytes; "
                               f"this buffer needs bytes {entry.offset:,}..{end:,} (group "
                               f"{entry.group} {name!r}): the file is too short")
    return group.data[entry.offset:end]


def describe(model: "Model", ext_id: int) -> str:
    """Where a tensor's data lives, for the inspector and `info`."""
    try:
        entry = lookup(model, ext_id)
        name = group_name(model, entry)
    except ModelFormatError as exc:
        return f"external buffer {ext_id:#x}: {exc.reason}"
    return (f"{model.weights.describe(name)}, bytes {entry.offset:,}..{entry.offset + entry.length:,}"
            f" ({entry.length:,} bytes, external buffer {ext_id:#x}, group {entry.group})")


def check_external(model: "Model") -> list[Finding]:
    """What is wrong with the external buffers, found without reading any side file:
    unknown ids, missing or short side files, data both inline and external (LiteRT
    refuses it), a length that does not match the tensor's shape."""
    if not model.external_buffers and not model.external_buffer_groups:
        return _ids_without_table(model)
    findings: list[Finding] = []
    sizes: dict[str, int | None] = {}
    for g in model.external_buffer_groups:
        if g.name and (os.path.isabs(g.name) or ".." in Path(g.name).parts):
            findings.append(Finding("warning", f"external_buffer_groups[{g.index}]",
                                    f"side file {g.name!r} is outside the model's folder: "
                                    "opening this model reads that file"))
    for sg in model.subgraphs:
        ext = sg.external_buffer_ids
        for t in np.flatnonzero(ext).tolist():
            tensor = sg.tensors[t]
            where = f"{tensor.where}.external_buffer"

            def add(message: str) -> None:
                findings.append(Finding("error", where, message, sg.index, t))
            try:
                entry = lookup(model, int(ext[t]))
                name = group_name(model, entry)
            except ModelFormatError as exc:
                add(str(exc))
                continue
            if tensor.buffer_nbytes:
                add(f"has data in buffer {tensor.buffer} and in external buffer "
                    f"{entry.id:#x}: LiteRT refuses a tensor with both")
            if name not in sizes:
                sizes[name] = model.weights.size(name)
            size = sizes[name]
            if size is None:
                add(f"{model.weights.describe(name)} is missing (group {entry.group} {name!r})")
            elif entry.offset + entry.length > size:
                add(f"{model.weights.describe(name)} holds {size:,} bytes; external buffer "
                    f"{entry.id:#x} needs bytes {entry.offset:,}..{entry.offset + entry.length:,}")
            info = dtypes.type_info(tensor.type)
            if info.storage is not None and info.name != "STRING" and tensor.sparsity is None \
                    and all(d >= 0 for d in tensor.shape):
                need = (tensor.num_elements * info.bits + 7) // 8
                if need != entry.length:
                    add(f"external buffer {entry.id:#x} holds {entry.length:,} bytes but shape "
                        f"{list(tensor.shape)} of {info.name} needs {need:,}")
    return findings


def _ids_without_table(model: "Model") -> list[Finding]:
    out = []
    for sg in model.subgraphs:
        for t in np.flatnonzero(sg.external_buffer_ids).tolist():
            out.append(Finding("error", f"{sg.tensors[t].where}.external_buffer",
                               f"external buffer {int(sg.external_buffer_ids[t]):#x} but the "
                               "model has no external_buffers", sg.index, t))
    return out
