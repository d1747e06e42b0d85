"""Unsaved edits after a crash: where the window journals them, and the question it asks
at the next start.

The open document's command log is journaled by `edit.journal.Journal` (synced at every
apply, undo and redo, removed on a save or a clean close) in a ``recovery`` folder beside
the window's settings (`journal_folder`).  A journal left behind means the program ended
without closing the model: a crash, a kill, a power cut.  At start, `offer_recoveries`
asks about each pending one (`edit.recovery.pending_recoveries`, which never lists one a
running instance is still writing), newest first: **Restore** opens the file again with
the edits replayed, its undo and redo history in the History dock and the model marked
modified; **Discard** deletes the journal; **Later** keeps it for the next start.  The
question says whether the file changed since, and what could not be restored.
"""
from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox, QWidget

from ..edit import JournalError, default_folder
from ..edit.recovery import Recovery, pending_recoveries

log = logging.getLogger(__name__)

RESTORE, DISCARD, LATER = "restore", "discard", "later"
#: how the window asks about one recovery: (recovery, its number, how many) -> a choice
Ask = Callable[[Recovery, int, int], str]


def journal_folder(settings: QSettings) -> Path:
    """``recovery`` beside the settings' file (an INI file, or the native one on Linux);
    `edit.journal.default_folder` where the settings are not a file (the registry, a
    macOS plist is kept by the system)."""
    native_file = sys.platform.startswith("linux")
    if settings.format() == QSettings.Format.IniFormat or native_file:
        name = settings.fileName()
        if name:
            return Path(name).absolute().parent / "recovery"
    return default_folder()


class RecoveryDialog(QMessageBox):
    """Restore / Discard / Later about one journal left behind."""

    def __init__(self, recovery: Recovery, number: int = 1, total: int = 1,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("recovery-dialog")
        self.setWindowTitle("Restore unsaved edits?")
        warn = recovery.source_changed or bool(recovery.lost)
        self.setIcon(QMessageBox.Icon.Warning if warn else QMessageBox.Icon.Question)
        which = f" ({number} of {total})" if total > 1 else ""
        self.setText(f"tflite-viewer did not close {recovery.name} last time: its unsaved "
                     f"edits can be restored{which}.")
        self.setInformativeText(recovery.message + "\n\nLater keeps them: you are asked "
                                "again at the next start.")
        self.restore_button = self.addButton("Restore", QMessageBox.ButtonRole.AcceptRole)
        self.discard_button = self.addButton("Discard", QMessageBox.ButtonRole.DestructiveRole)
        self.later_button = self.addButton("Later", QMessageBox.ButtonRole.RejectRole)
        self.setDefaultButton(self.restore_button)
        self.setEscapeButton(self.later_button)

    def choice(self) -> str:
        clicked = self.clickedButton()
        if clicked is self.restore_button:
            return RESTORE
        return DISCARD if clicked is self.discard_button else LATER


def ask_with_dialog(parent: QWidget) -> Ask:
    def ask(recovery: Recovery, number: int, total: int) -> str:
        dialog = RecoveryDialog(recovery, number, total, parent)
        dialog.exec()
        return dialog.choice()
    return ask


def offer_recoveries(window, ask: Ask | None = None) -> bool:
    """Ask about each journal left behind (newest first) until one is restored into
    ``window``; True when one was.  The others stay for the next start."""
    found = pending_recoveries(journal_folder(window.settings))
    ask = ask or ask_with_dialog(window)
    for number, recovery in enumerate(found, 1):
        choice = ask(recovery, number, len(found))
        if choice == DISCARD:
            recovery.discard()
        elif choice == RESTORE and restore_into(window, recovery):
            return True
    return False


def restore_into(window, recovery: Recovery) -> bool:
    """Replay ``recovery`` and show the document in ``window`` (modified, with its undo
    history); a recovery that cannot be restored says why, and its journal stays."""
    try:
        document = recovery.restore()  # journals again at once, in the same folder
    except JournalError as exc:
        window.errors.report("Cannot restore the edits", str(exc), parent=window)
        return False
    except Exception as exc:  # noqa: BLE001 - the model cannot be edited here: said, kept
        log.exception("restoring %s", recovery.home)
        window.errors.report("Cannot restore the edits",
                             f"the edits to {recovery.name} cannot be restored: "
                             f"{type(exc).__name__}: {exc}", parent=window)
        return False
    window.editing.show_restored(document)
    done, undone = document.history_index, len(document.commands) - document.history_index
    lines = [f"Restored {done} unsaved edit{'s' if done != 1 else ''} to {recovery.name}"
             + (f" and {undone} undone one{'s' if undone != 1 else ''} to redo"
                if undone else "") + "."]
    if recovery.source_change:
        lines.append(f"Warning: {recovery.source_change}.")
    lines += [f"Lost: {text}" for text in recovery.lost]
    window.notice.show_notice("\n".join(lines), "warning" if len(lines) > 1 else "info")
    window.statusBar().showMessage(lines[0], 20000)
    log.info("restored %s from %s", recovery.name, recovery.home)
    return True
