"""Restoring unsaved edits after the program ended without closing its documents (a
crash, a kill, a power cut): the journals `edit.journal` left behind.

At start, `pending_recoveries(folder)` lists them (never a journal another running instance
is still writing).  Each `Recovery` says what it holds and whether the model's file
changed since (`message`, `source_changed`); `Recovery.restore` opens the file again,
replays the journaled commands and returns the `ModelDocument` as it was, with its undo
history; `Recovery.discard` drops it.

A journal cut short or damaged (a kill in the middle of a write, a bad sector) gives back
the commands before the damage, and `lost` says what could not be restored: the edit whose
record was cut short (by its description when the line still holds it), the entries after
a damaged line, a command that no longer applies to a file that changed.  Reading never
raises; `restore` raises only `JournalError`, whose message says why, for a person.
"""
from __future__ import annotations

import datetime
import json
import logging
import os
import re
import shutil
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

from ..model.durable import lock
from ..model.loader import load_model
from .commands import EditCommand
from .document import ModelDocument
from .journal import HOME_NAME, Journal, default_folder
from .journal_format import (MAGIC, VERSION, DataFolder, JournalError, SourceStamp,
                             decode_command, unframe)
from .writer import LAYOUTS

log = logging.getLogger(__name__)

#: the document's settings a journal records (they decide how states are written)
_SETTINGS = {"fast_path_enabled": bool, "splice_min_objects": int, "splice_min_bytes": int}


@dataclass
class Recovery:
    """The journal of one document that was not closed (see the module docstring)."""

    home: Path  # the document's journal folder
    source: SourceStamp
    layout: str
    settings: dict
    commands: list[EditCommand]  # the history, made again from the journal (not applied)
    descriptions: list[str]
    index: int  # the history's position (the first ``index`` commands were applied)
    saved_to: str | None = None  # where the model was last saved, if anywhere
    #: what could not be restored, one sentence each (reading; `restore` adds replay's)
    lost: list[str] = field(default_factory=list)
    clean: int | None = 0  # the position of the file on disk (None: no longer reachable)

    @property
    def name(self) -> str:
        if self.source.path is None:
            return "a model opened from bytes"
        section = f" [section {self.source.section}]" if self.source.section is not None else ""
        return Path(self.source.path).name + section

    @property
    def when(self) -> datetime.datetime:
        """When the journal was last written (the last change)."""
        try:
            return datetime.datetime.fromtimestamp((self.home / "journal").stat().st_mtime)
        except OSError:
            return datetime.datetime.now()

    @cached_property
    def source_change(self) -> str | None:
        """How the model's file changed since the edits were made, for a person; None if
        it did not (same size, modification time and SHA-256).  Computed once."""
        return self.source.change()

    @property
    def source_changed(self) -> bool:
        return self.source_change is not None

    @property
    def message(self) -> str:
        """What a restore would give back, for the question the window asks at start."""
        n, undone = self.index, len(self.commands) - self.index
        lines = [f"{n} unsaved edit{'s' if n != 1 else ''} to {self.name} "
                 f"({self.when:%Y-%m-%d %H:%M})"
                 + (f", and {undone} undone edit{'s' if undone != 1 else ''} to redo"
                    if undone else "") + "."]
        if n:
            lines.append(f"The last one: {self.descriptions[n - 1]}.")
        if self.source.path is not None:
            lines.append(f"File: {self.source.path}")
        if self.saved_to:
            lines.append(f"It was last saved as {self.saved_to}.")
        if self.source_change:
            lines.append(f"Warning: {self.source_change}; the edits may not apply to it "
                         "as they did.")
        lines += [f"Lost: {text}" for text in self.lost]
        return "\n".join(lines)

    def restore(self, *, at_position: bool = True, journal: bool = True) -> ModelDocument:
        """The document as it was: its file opened again and the journaled commands
        applied in order, then undone back to the journaled position (unless
        ``at_position`` is False: a caller mirroring the history in an undo stack moves it
        there itself, from ``len(commands)`` to `index`).

        With ``journal`` the restored document journals to the same folder at once (its
        history is written there before this journal is removed).  A command that no
        longer applies ends the replay: it and those after it are added to `lost`."""
        try:
            fd = os.open(self.home / "lock", os.O_RDWR)
        except OSError:
            raise JournalError(f"the edits to {self.name} were restored or discarded "
                               "already") from None
        try:
            if not lock(fd):
                raise JournalError(f"the edits to {self.name} are being restored by another "
                                   "tflite-viewer")
            document = ModelDocument(self._open_source(), layout=self.layout)
            for key, value in self.settings.items():
                setattr(document, key, value)
            self._replay(document, at_position)
            if journal:
                Journal(document, self.home.parent)
        finally:
            os.close(fd)
        self.discard()
        return document

    def discard(self) -> None:
        """Remove the journal and its data (nothing can be restored afterwards)."""
        shutil.rmtree(self.home, ignore_errors=True)

    def _open_source(self):
        try:
            if self.source.data is not None:
                return load_model(DataFolder(self.home / "data").get(self.source.data))
            return load_model(self.source.path, section=self.source.section)
        except (OSError, ValueError, KeyError, JournalError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise JournalError(f"the edits to {self.name} cannot be restored: the model "
                               f"cannot be opened ({reason})") from None

    def _replay(self, document: ModelDocument, at_position: bool) -> None:
        total = len(self.commands)
        for k, command in enumerate(self.commands):
            try:
                document.apply(command)
            except Exception as exc:  # noqa: BLE001 - any refusal ends the replay, reported
                self.lost.append(f"{total - k} edit{'s' if total - k != 1 else ''} from "
                                 f"\"{self.descriptions[k]}\" on: it no longer applies "
                                 f"({type(exc).__name__}: {exc})")
                break
        while at_position and document.history_index > self.index:
            try:
                document.undo()
            except Exception as exc:  # noqa: BLE001 - reported; the redo steps stay
                self.lost.append(f"the undone edits could not be undone again ({exc})")
                break


def pending_recoveries(folder: str | os.PathLike | None = None) -> list[Recovery]:
    """The journals in ``folder`` (default: `default_folder`) that hold unsaved edits,
    newest first, never one a running instance is writing.  Journals with nothing to
    restore (the model was at its saved state) and unreadable ones are removed; nothing
    else in the folder is touched (only folders named as a `Journal` names them)."""
    folder = Path(folder) if folder is not None else default_folder()
    try:
        homes = sorted((p for p in folder.iterdir()
                        if p.is_dir() and HOME_NAME.fullmatch(p.name)), reverse=True)
    except OSError:
        return []
    out = []
    for home in homes:
        try:
            fd = os.open(home / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            continue
        try:
            if not lock(fd):
                continue  # its writer is alive
            found = read_journal(home) if not home.name.startswith(".") else None
        finally:
            os.close(fd)
        if found is None or (found.index == found.clean and not found.lost):
            shutil.rmtree(home, ignore_errors=True)
        else:
            out.append(found)
    return out


def read_journal(home: Path) -> Recovery | None:
    """The recovery of one journal folder; None if it holds no readable journal."""
    try:
        lines = (home / "journal").read_bytes().splitlines(keepends=True)
    except OSError:
        return None
    try:
        if not lines:
            raise JournalError("it is empty")
        header = unframe(lines[0])
        if header.get("journal") != MAGIC or header.get("version") != VERSION:
            raise JournalError("it is not a tflite-viewer journal of this version")
        source = SourceStamp.from_json(header.get("source"))
        if header.get("layout", "auto") not in LAYOUTS:
            raise JournalError(f"its layout {header.get('layout')!r} is not one of {LAYOUTS}")
    except JournalError as exc:
        log.warning("the journal in %s is unreadable: %s", home, exc)
        return None
    settings = header.get("settings") if isinstance(header.get("settings"), dict) else {}
    settings = {k: settings[k] for k, t in _SETTINGS.items() if type(settings.get(k)) is t}
    clean = header.get("clean")
    recovery = Recovery(home, source, str(header.get("layout", "auto")),
                        settings, [], [], 0,
                        header.get("saved_to"),
                        clean=clean if isinstance(clean, int) else None)
    data = DataFolder(home / "data")
    for n, line in enumerate(lines[1:], 2):
        try:
            _read_entry(recovery, unframe(line), data)
        except (JournalError, KeyError, TypeError, ValueError) as exc:
            recovery.lost.append(_damage(lines, n, exc))
            break
    if recovery.index < 0:
        recovery.lost.append(f"the edits were undone past the save that replaced "
                             f"{recovery.name}: what was made from there needs the file as it "
                             "was before that save; restored as saved")
        recovery.index = 0
    return recovery


def _read_entry(recovery: Recovery, entry: dict, data: DataFolder) -> None:
    """Follow one journal entry: an applied command, or a move of the position."""
    history, at = recovery.commands, recovery.index
    if "apply" in entry:
        command = decode_command(entry, data.get)
        description = entry.get("description")
        if recovery.clean is not None and at < recovery.clean <= len(history):
            recovery.clean = None  # the saved state was among the dropped redo steps
        del history[max(at, 0):]
        del recovery.descriptions[max(at, 0):]
        history.append(command)
        recovery.descriptions.append(description if isinstance(description, str)
                                     else command.description)
        recovery.index = len(history)
    elif "sha256" in entry:  # the source's hash, journaled once its thread was done
        digest = entry["sha256"]
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise JournalError(f"a source hash {digest!r:.80}")
        recovery.source = replace(recovery.source, sha256=digest)
    elif "at" in entry:
        at = entry["at"]
        if not isinstance(at, int) or isinstance(at, bool) or at > len(history):
            raise JournalError(f"it moves to position {at!r} of a history of {len(history)}")
        recovery.index = at
    else:
        raise JournalError(f"an unknown entry {json.dumps(entry)[:80]}")


_DESCRIPTION = re.compile(rb'"description":("(?:[^"\\]|\\.)*")')


def _damage(lines: list[bytes], n: int, exc: Exception) -> str:
    """What the damage at line ``n`` (1-based) loses, for a person."""
    if n == len(lines) and not lines[-1].endswith(b"\n"):  # the write a kill cut short
        name = _described(lines[-1])
        return ("the last change, which was being written when the program stopped"
                + (f': "{name}"' if name else ""))
    named = [d for d in (_described(line) for line in lines[n:]) if d]
    what = "; ".join(f'"{d}"' for d in named[:5]) + (" ..." if len(named) > 5 else "")
    later = len(lines) - n
    return (f"line {n} of {len(lines)} of the journal is damaged ({exc}): it and "
            f"{later} entr{'ies' if later != 1 else 'y'} after it are not restored"
            + (f", among them {what}" if what else ""))


def _described(line: bytes) -> str | None:
    """The description an entry's line holds, even cut short or damaged, if any."""
    found = _DESCRIPTION.search(line)
    if found is None:
        return None
    try:
        return json.loads(found.group(1))
    except ValueError:
        return None
