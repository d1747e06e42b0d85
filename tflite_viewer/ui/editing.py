"""The window's edit session: one `ModelDocument` and the QUndoStack that mirrors its history.

Every change the user makes is one core `EditCommand` wrapped in one `DocumentCommand`
(a QUndoCommand).  The first ``redo()`` (the one `QUndoStack.push` makes) does nothing:
the document already applied the command.  Every later ``redo()`` / ``undo()`` calls
``document.redo()`` / ``document.undo()``, so the stack's index and the document's history
index always move together (the tests check byte-identical states both ways).

An `EditError` never escapes: `apply` returns None and ``failed`` carries the message; the
document is unchanged (the edit layer guarantees it) and nothing is pushed.

``changed(model, result, seconds)`` follows every apply/undo/redo; ``seconds`` is how long
the document took (command, re-serialization, re-read), measured up to its notification.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from ..edit import EditCommand, EditResult, ModelDocument
from ..model import EditError, Model

log = logging.getLogger(__name__)


class DocumentCommand(QUndoCommand):
    """One undo step: an EditCommand the document applied."""

    def __init__(self, session: EditSession, command: EditCommand) -> None:
        super().__init__(command.description)
        self.session = session
        self.command = command
        self._pushed = False

    def redo(self) -> None:
        if not self._pushed:  # the push itself: the document applied the command already
            self._pushed = True
            return
        if not self.session._resyncing:
            self.session._step("redo")

    def undo(self) -> None:
        if not self.session._resyncing:
            self.session._step("undo")


class EditSession(QObject):
    """A document being edited, its undo stack, and what each change did."""

    changed = Signal(object, object, float)  # Model, EditResult, seconds
    failed = Signal(str)  # an edit was refused: the EditError message

    def __init__(self, document: ModelDocument, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.stack = QUndoStack(self)
        self.last_command: EditCommand | None = None
        self._started: float | None = None
        self._resyncing = False
        self._unsubscribe = document.subscribe(self._notified)
        self.journal_warned = False  # the window said its journal stopped (`Journal.error`)

    @property
    def model(self) -> Model:
        return self.document.model

    @property
    def is_modified(self) -> bool:
        return self.document.is_modified

    def apply(self, command: EditCommand) -> EditResult | None:
        """Apply ``command`` as one undo step; None (and ``failed``) if it was refused."""
        self.last_command = command
        self._started = time.perf_counter()
        try:
            result = self.document.apply(command)
        except EditError as exc:
            self.failed.emit(str(exc))
            return None
        except (ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
            # A command's own check that did not phrase its refusal as an EditError: the
            # document reverted the tree, so this is still a refused edit, not a crash.
            log.exception("edit %r failed", command)
            self.failed.emit(f"{command.description}: {type(exc).__name__}: {exc}")
            return None
        finally:
            self._started = None
        self.stack.push(DocumentCommand(self, command))
        return result

    def _step(self, kind: str) -> None:
        self._started = time.perf_counter()
        try:
            (self.document.undo if kind == "undo" else self.document.redo)()
        except EditError as exc:
            # The document did not move but the stack did: put the stack back (without
            # touching the document) once it has finished this step.
            self.failed.emit(f"{kind} failed: {exc}")
            QTimer.singleShot(0, self._resync)
        finally:
            self._started = None

    def _resync(self) -> None:
        self._resyncing = True
        try:
            self.stack.setIndex(self.document.history_index)
        finally:
            self._resyncing = False

    def _notified(self, model: Model, result: EditResult) -> None:
        started = self._started
        seconds = time.perf_counter() - started if started is not None else 0.0
        self.changed.emit(model, result, seconds)

    def mark_saved(self) -> None:
        self.stack.setClean()

    def mirror_history(self) -> None:
        """A document restored with its history (`edit.recovery`): each of its commands
        becomes an undo step, and the stack moves to the document's position, without
        applying or undoing anything again."""
        self._resyncing = True
        try:
            for command in self.document.commands:
                self.stack.push(DocumentCommand(self, command))
            self.stack.setIndex(self.document.history_index)
        finally:
            self._resyncing = False

    def close(self) -> None:
        """The document is closed (its edits saved or given up): its journal goes too."""
        self._unsubscribe()
        self.stack.clear()
        if self.document.journal is not None:
            self.document.journal.close()


# -- what a change did, in words ------------------------------------------------------------

@dataclass
class ChangeNotes:
    """Op versions and min_runtime_version that moved between two models."""

    versions: list[str]  # "DEPTHWISE_CONV_2D v1 -> v2"
    runtime: tuple[str, str] | None  # (old, new)

    def text(self) -> str:
        parts = list(self.versions)
        if self.runtime is not None:
            old, new = self.runtime
            parts.append(f"needs runtime {new}" if runtime_newer(new, old) else
                         f"min runtime {old or '(none)'} -> {new or '(none)'}")
        return "; ".join(parts)

    def __bool__(self) -> bool:
        return bool(self.versions or self.runtime)


def runtime_newer(a: str | None, b: str | None) -> bool:
    def key(v: str | None) -> tuple:
        out = []
        for part in (v or "").split("."):
            out.append(int(part) if part.isdigit() else -1)
        return tuple(out)
    return key(a) > key(b)


def change_notes(old: Model | None, new: Model) -> ChangeNotes:
    """Compare the operator-code versions and min_runtime_version of two versions of a model."""
    versions: list[str] = []
    runtime = None
    if old is None:
        return ChangeNotes(versions, runtime)
    try:
        before, after = old.operator_codes, new.operator_codes
        if len(before) == len(after):
            for a, b in zip(before, after):
                if a.version != b.version:
                    versions.append(f"{b.name} v{a.version} -> v{b.version}")
        if (old.min_runtime_version or "") != (new.min_runtime_version or ""):
            runtime = (old.min_runtime_version or "", new.min_runtime_version or "")
    except Exception:  # noqa: BLE001 - a note must never break the refresh
        log.exception("comparing versions")
    return ChangeNotes(versions, runtime)


def human_size(n: int) -> str:
    return f"{n:,} bytes" if n < 10 * 1024 else (
        f"{n / 1024:,.1f} KB" if n < 10 * 1024 * 1024 else f"{n / 1024 / 1024:,.1f} MB")


def parse_value(text: str):
    """A value typed for a new custom-option key: int, float, bool or text."""
    s = text.strip()
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(s, 0)
    except ValueError:
        pass
    try:
        v = float(s)
        if math.isfinite(v):
            return v
    except ValueError:
        pass
    return text
