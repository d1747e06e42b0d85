"""The recovery journal of an open document: its command history, on disk, synced at
every change, so a crash, a kill or a power cut loses no edit (as editors' hot exit does).

A `ModelDocument`'s undo history is a list of commands and a position in it, and a
command is the call that made it (`EditCommand.arguments`).  So the journal records the
file the document was opened from (`SourceStamp`: path, size, time and SHA-256 of its
bytes) and then, line by line, every command applied and every move of the position
(undo, redo): replaying it on the same file makes the same history, the same states and
the same bytes (`edit.recovery` reads it back).

The journal follows the document by itself once made (``Journal(document, folder)``): the
document calls `Journal.changed` after every apply, undo and redo and `Journal.saved` after
a save.  It is written only once there is a change (a model only looked at leaves no file),
is removed when the model is saved (nothing is unsaved then) and when the document is
closed (`Journal.close`), and is written again at the next change after a save.  A journal
that cannot be written (a full disk, a folder without permission, an argument no journal
can record) stops journaling and says why in `Journal.error`; the edit itself is never
refused for it.

Files, in ``folder`` (beside the window's settings; `default_folder` otherwise): a folder
``<time>-<pid>-<random>`` per open document holding ``journal`` (format: `journal_format`),
``data/`` (side files: a tensor's new values, metadata bytes) and ``lock``, an advisory
lock the writer holds while it lives, so another instance of the program never offers to
restore a journal that is still being written.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..model.durable import lock, sync, sync_folder, write_all
from .commands import EditCommand
from .journal_format import (MAGIC, VERSION, DataFolder, SourceStamp,
                             encode_command, frame, hash_file)

if TYPE_CHECKING:
    from .document import ModelDocument

APP = "tflite-viewer"
#: the name of a document's journal folder (`Journal.home`), or of one being made
HOME_NAME = re.compile(r"\.?\d{8}-\d{6}-\d+-[0-9a-f]{8}(\.new)?")
#: source files up to this size are hashed at once (~25 ms); larger ones in a thread
HASH_AT_ONCE = 16 << 20


def default_folder() -> Path:
    """``recovery`` in the platform's folder for the program's settings: where QSettings
    keeps them on Linux (``$XDG_CONFIG_HOME`` or ``~/.config``), the per-user application
    data folder on macOS and Windows (QSettings uses a plist or the registry there)."""
    if sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / APP / "recovery"


def _source_of(document: "ModelDocument") -> tuple[Path | None, int | None]:
    """(file, container section) the document's model was opened from; (None, None) for
    a model opened from bytes."""
    model = document.original
    origin = getattr(model, "origin", None)
    if origin is not None and getattr(origin, "path", None) is not None:
        return Path(origin.path), int(origin.section)
    return (Path(model.path), None) if model.path is not None else (None, None)


class Journal:
    """The journal of one open document (see the module docstring)."""

    def __init__(self, document: "ModelDocument", folder: str | os.PathLike | None = None) -> None:
        self.document = document
        self.folder = Path(folder) if folder is not None else default_folder()
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.home = self.folder / name  # made at the first change
        self.path = self.home / "journal"
        self.data = DataFolder(self.home / "data")
        #: why journaling stopped (for the window's status line), None while it works
        self.error: str | None = None
        self._fd = -1  # the journal, open for appending
        self._lock = -1  # the home's lock, held from the first change to `close`
        self._lines: dict[int, tuple[EditCommand, bytes]] = {}  # id(command) -> its line
        self._written: list[EditCommand] = []  # the history as journaled (from `_base`)
        self._at = 0  # the position as journaled
        self._base = 0  # history position the source file is at (a save over it moves it)
        self._base_commands: list[EditCommand] = []  # the commands the file has since then
        self._saved_to: str | None = None
        self._stamp: SourceStamp | None = None  # None: not known yet
        self._hash: Future | None = None  # the source's SHA-256, being computed
        self._hash_source()
        if document.journal is not None:
            document.journal.close()
        document.journal = self
        if document.commands:  # a restored document: journal its history at once
            self.changed()

    # -- the document's hooks ----------------------------------------------------------------
    def changed(self) -> None:
        """After an apply, undo or redo: journal the history as it is now (synced)."""
        if self.error is not None or self.document.journal is not self:
            return
        try:
            self._record()
        except Exception as exc:  # noqa: BLE001 - the edit is made: journaling stops, says why
            self._stop(exc)

    def saved(self, target: str | os.PathLike) -> None:
        """After a save: nothing is unsaved, so the journal goes (until the next change).
        A save over the opened file makes the saved state the one edits are replayed on."""
        if self.document.journal is not self:
            return
        self._saved_to = str(Path(target).absolute())
        source, _section = _source_of(self.document)
        try:
            over = source is not None and os.path.samefile(source, target)
        except OSError:
            over = False
        if over:
            self._base = self.document.history_index
            self._base_commands = self.document.commands[:self._base]
            self._hash_source(Path(target), None)
        try:
            self._remove_journal()
        except Exception as exc:  # noqa: BLE001 - the save is made: journaling stops, says why
            self._stop(exc)
        self._written, self._at = [], 0

    def close(self) -> None:
        """The document is closed (saved or its edits discarded): remove every file."""
        if self.document.journal is self:
            self.document.journal = None
        for fd in (self._fd, self._lock):
            if fd >= 0:
                os.close(fd)
        self._fd = self._lock = -1
        shutil.rmtree(self.home, ignore_errors=True)  # what remains: `pending_recoveries`

    # -- writing -----------------------------------------------------------------------------
    def _history(self) -> tuple[list[EditCommand], int]:
        """The commands from the source file's state on, and the position among them:
        negative before it (undone past a save over the file); ``([], -1)`` once no state
        since is reachable from the file (an edit made there)."""
        commands = self.document.commands
        base = self._base
        if len(commands) < base or any(a is not b for a, b in
                                       zip(commands[:base], self._base_commands)):
            return [], -1
        return commands[base:], self.document.history_index - base

    def _record(self) -> None:
        commands, at = self._history()
        written = self._written
        if self._fd < 0:
            self._snapshot(commands, at)
        elif len(commands) == len(written) and all(a is b for a, b in zip(commands, written)):
            if at != self._at:  # an undo or a redo
                self._append(self._hashed() + frame({"at": at}))
                self._at = at
        elif at == len(commands) == self._at + 1 and \
                all(a is b for a, b in zip(commands[:self._at], written)):
            line = self._line(commands[-1])  # an apply (undone commands dropped)
            self._append(self._hashed() + line)
            del written[self._at:]
            written.append(commands[-1])
            self._at = at
        else:  # the history changed some other way: write it whole
            self._snapshot(commands, at)

    def _line(self, command: EditCommand) -> bytes:
        """The journal line of an applied command (made once: its arguments as applied)."""
        hit = self._lines.get(id(command))
        if hit is not None and hit[0] is command:
            return hit[1]
        line = frame(encode_command(command, self.data.put))
        self._lines[id(command)] = (command, line)
        return line

    def _append(self, line: bytes) -> None:
        write_all(self._fd, line)
        sync(self._fd)

    def _header(self) -> dict:
        doc = self.document
        return {"journal": MAGIC, "version": VERSION, "source": self._source().to_json(),
                "layout": doc.layout, "created": time.time(), "pid": os.getpid(),
                "settings": {"fast_path_enabled": doc.fast_path_enabled,
                             "splice_min_objects": doc.splice_min_objects,
                             "splice_min_bytes": doc.splice_min_bytes},
                "clean": doc.clean_index - self._base if doc.clean_index >= 0 else None,
                "saved_to": self._saved_to}

    def _snapshot(self, commands: list[EditCommand], at: int) -> None:
        """Write the whole history to a new file and rename it over the journal."""
        self._make_home()
        lines = [frame(self._header())] + [self._line(c) for c in commands]
        if at != len(commands):
            lines.append(frame({"at": at}))
        keep = {id(c) for c in self.document.commands}
        self._lines = {k: v for k, v in self._lines.items() if k in keep}
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        try:
            old, self._fd = self._fd, fd
            self._append(b"".join(lines))
            os.replace(tmp, self.path)
            sync_folder(self.home)
        except BaseException:
            self._fd = old
            os.close(fd)
            raise
        if old >= 0:
            os.close(old)
        self._written, self._at = list(commands), at

    def _make_home(self) -> None:
        """The document's folder, locked: made under a hidden name and renamed, so another
        instance never sees it without its lock."""
        if self._lock >= 0:
            return
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        new = self.folder / f".{self.home.name}.new"
        new.mkdir(mode=0o700)
        fd = os.open(new / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        lock(fd)
        try:
            os.rename(new, self.home)
            sync_folder(self.folder)
        except BaseException:
            os.close(fd)
            raise
        self._lock = fd

    def _remove_journal(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self.path.exists():
            self.path.unlink()
            sync_folder(self.home)

    def _stop(self, exc: BaseException) -> None:
        reason = getattr(exc, "strerror", None) or str(exc)
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        self.error = f"recovery is off for this model: its journal cannot be written: " \
                     f"{reason}{where}"

    # -- the source file -----------------------------------------------------------------------
    def _hash_source(self, path: Path | None = None, section: int | None = None) -> None:
        """Note the source file's size, time and hash; a large file is hashed in a thread
        (a 2 GB model takes seconds) that no edit waits for: the hash is journaled when it
        is done."""
        if path is None:
            path, section = _source_of(self.document)
        self._stamp, self._hash = None, None
        if path is None:
            return  # a model opened from bytes: stamped at the first change
        try:
            self._stamp = SourceStamp.of_file(path, section)
            if self._stamp.size <= HASH_AT_ONCE:
                self._stamp = replace(self._stamp, sha256=hash_file(path))
                return
        except OSError as exc:
            self._stop(exc)
            return
        self._hash = future = Future()

        def work() -> None:
            try:
                future.set_result(hash_file(path))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever reads it
                future.set_exception(exc)
        # a daemon: quitting the program never waits for a hash
        threading.Thread(target=work, name="journal-hash", daemon=True).start()

    def _source(self) -> SourceStamp:
        """The stamp for a header, with the hash if it is known by now."""
        if self._stamp is None:  # a model opened from bytes: they go in the journal
            data = self.document.original.data.tobytes()
            self._stamp = SourceStamp(None, None, len(data), 0, hashlib.sha256(data).hexdigest(),
                                      data=self.data.put(data, ".tflite"))
        self._hashed()
        return self._stamp

    def _hashed(self) -> bytes:
        """Once the hash is done: put it in the stamp, and the line that records it for a
        journal whose header went out without it."""
        if self._hash is None or not self._hash.done():
            return b""
        future, self._hash = self._hash, None
        try:
            digest = future.result()
        except OSError:
            return b""  # the file went away: its restore will say so
        self._stamp = replace(self._stamp, sha256=digest)
        return frame({"sha256": digest}) if self._fd >= 0 else b""
