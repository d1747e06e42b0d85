"""Writing files so that a crash, a kill or a power cut leaves either the old file or the
new one: a synced temporary file renamed over the target, then the folder synced (the
rename itself is durable only then).  Saves (`edit.ModelDocument.save`), the recovery
journal (`edit.journal`) and quantized models (`quant.requantize.write_model`) write this
way: it sits below both of those sibling layers."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no advisory locks (see `lock`)
    fcntl = None  # type: ignore[assignment]


def sync(fd: int) -> None:
    """Push a file's data (and its size) to the disk: fdatasync where there is one.

    On macOS this is fsync, not ``F_FULLFSYNC`` (which also flushes the drive's cache and
    takes tens of milliseconds): SQLite's default trade-off, kept within an edit's budget."""
    (os.fdatasync if hasattr(os, "fdatasync") else os.fsync)(fd)


def sync_folder(folder: Path) -> None:
    """Make the folder's new, renamed and removed names durable (POSIX; a no-op elsewhere)."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def replace_file(target: Path, write: Callable[[int], None], mode: int | None = None) -> None:
    """Make ``target`` what ``write(fd)`` writes, whole or not at all.

    ``mode``: the new file's permissions (default: what ``open`` would give, 0o666 less
    the umask).  The temporary file is removed if anything fails."""
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        try:
            write(fd)
            sync(fd)
        finally:
            os.close(fd)
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    sync_folder(directory)


def lock(fd: int) -> bool:
    """Take an exclusive advisory lock on an open file, held until it is closed or its
    process dies; False when another process holds it.  Without advisory locks (Windows)
    it always succeeds."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True
