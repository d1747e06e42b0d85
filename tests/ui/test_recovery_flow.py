"""The window's recovery journal in process: when it is written and removed along the
window's edit paths (edit, undo, save, save as, another model, close), what the window
says when it cannot be written, and Discard / Later / a failed restore at the next start.
(`test_recovery_window` kills a real window and restores it.)"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

from tests.edit.test_journal import crash
from tests.ui.conftest import model_path
from tflite_viewer.edit import RenameTensor, SetDescription, pending_recoveries
from tflite_viewer.ui import recovery as ui_recovery
from tflite_viewer.ui.main_window import MainWindow


def _journals(folder: Path) -> list[Path]:
    return sorted(folder.glob("*/journal"))


def test_the_journal_follows_the_window_edit_paths(window, settings, private_copy, tmp_path):
    folder = ui_recovery.journal_folder(settings)
    assert folder == tmp_path / "recovery"  # beside settings.ini
    path = private_copy()
    assert window.open_path(path, wait=True)
    assert not folder.exists()  # a model only looked at leaves nothing
    window.editing.apply_edit(SetDescription("one"))
    (journal,) = _journals(folder)
    size = journal.stat().st_size
    window.editing.undo()  # journaled (an "at" entry), synced before the stack moves on
    assert journal.stat().st_size > size
    window.editing.redo()
    (found,) = pending_recoveries(_copy_of(folder, tmp_path / "a"))
    assert found.index == len(found.commands) == 1  # undone and redone
    assert window.files.save_to(tmp_path / "saved.tflite")  # Save As: nothing is unsaved
    assert _journals(folder) == []
    window.editing.apply_edit(SetDescription("two"))  # the next edit journals again
    assert len(_journals(folder)) == 1
    window.ask_before_discarding = False  # Discard at the prompt
    assert window.open_path(model_path("mobilenet_v2_int8.tflite"), wait=True)
    assert list(folder.iterdir()) == []  # another model: the old one's folder is gone
    window.editing.apply_edit(RenameTensor(0, 0, "x"))
    assert len(_journals(folder)) == 1
    window.close()  # a clean close: its edits given up, nothing to recover
    assert list(folder.iterdir()) == []


def _copy_of(folder: Path, scratch: Path) -> Path:
    """A copy of a live journal folder, as the next start would see it after a kill."""
    import shutil
    shutil.copytree(folder, scratch)
    return scratch


def _crashed_window(qtbot, settings, path: Path) -> None:
    """A window that edited ``path`` and then died: its journal stays, unlocked."""
    win = MainWindow(settings=settings)
    qtbot.addWidget(win)
    assert win.open_path(path, wait=True)
    win.editing.apply_edit(SetDescription("before the crash"))
    crash(win.workspace.edit_session.document.journal)
    win.ask_before_discarding = False


def test_discard_and_later_at_the_next_start(qtbot, window, settings, private_copy):
    path = private_copy()
    folder = ui_recovery.journal_folder(settings)
    _crashed_window(qtbot, settings, path)
    asked = []

    def later(recovery, number, total):
        asked.append((recovery.name, number, total, recovery.source_changed))
        return ui_recovery.LATER
    assert not ui_recovery.offer_recoveries(window, later)
    assert asked == [(path.name, 1, 1, False)]
    assert len(pending_recoveries(folder)) == 1  # kept for the next start
    assert not ui_recovery.offer_recoveries(window, lambda *_: ui_recovery.DISCARD)
    assert pending_recoveries(folder) == [] and window.model is None


def test_a_restore_that_cannot_open_the_file_says_why_and_keeps_the_journal(
        qtbot, window, settings, private_copy):
    path = private_copy()
    _crashed_window(qtbot, settings, path)
    path.unlink()
    assert not ui_recovery.offer_recoveries(window, lambda *_: ui_recovery.RESTORE)
    ((title, message),) = window.reported
    assert title == "Cannot restore the edits" and "cannot be opened" in message
    assert len(pending_recoveries(ui_recovery.journal_folder(settings))) == 1
    assert window.model is None


def test_a_journal_that_cannot_be_written_is_said_once_and_the_edit_made(
        qtbot, tmp_path, private_copy):
    (tmp_path / "blocked").mkdir()
    (tmp_path / "blocked" / "recovery").write_text("")  # a file where the folder goes
    settings = QSettings(str(tmp_path / "blocked" / "settings.ini"), QSettings.Format.IniFormat)
    win = MainWindow(settings=settings)
    qtbot.addWidget(win)
    win.ask_before_discarding = False
    assert win.open_path(private_copy(), wait=True)
    win.editing.apply_edit(SetDescription("made anyway"))
    assert win.model.description == "made anyway"
    assert win.notice.level == "warning" and "recovery is off" in win.notice.text()
    win.notice.dismiss()
    win.editing.apply_edit(SetDescription("again"))
    assert not win.notice.isVisible() or "recovery is off" not in win.notice.text()
