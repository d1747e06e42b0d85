"""GUI test setup: offscreen Qt, a window with private settings and no modal dialogs."""
from __future__ import annotations

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
CORPUS = sorted(MODELS.glob("*.tflite"))


def model_path(name: str) -> Path:
    return MODELS / name


@pytest.fixture
def settings(tmp_path):
    from PySide6.QtCore import QSettings

    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


def _finish_background_work(win) -> None:
    """Before pytest-qt closes and deletes the window: let pool tasks (opens, layouts,
    shape checks) finish and deliver their queued results while it still exists."""
    from PySide6.QtCore import QThreadPool
    from PySide6.QtWidgets import QApplication

    QThreadPool.globalInstance().waitForDone(120_000)
    QApplication.processEvents()


@pytest.fixture
def window(qtbot, settings):
    """A shown MainWindow whose errors are recorded instead of shown in a modal dialog."""
    from tflite_viewer.ui.errors import ErrorReporter
    from tflite_viewer.ui.main_window import MainWindow

    errors = ErrorReporter(interactive=False)
    win = MainWindow(settings=settings, errors=errors)
    win.reported = []
    errors.reported.connect(lambda title, message: win.reported.append((title, message)))
    qtbot.addWidget(win, before_close_func=_finish_background_work)
    # pytest-qt closes the window before fixture teardown: a test that leaves edits behind
    # must not make closing ask Save / Discard / Cancel (a modal dialog would block).  The
    # tests of that prompt turn it back on.
    win.ask_before_discarding = False
    win.resize(1400, 900)
    win.show()
    yield win
    # let opens, layouts and shape checks still running on pool threads finish before the
    # window goes: their results are queued to it (a loaded machine can be seconds behind)
    from PySide6.QtCore import QThreadPool
    QThreadPool.globalInstance().waitForDone(120_000)
    qtbot.wait(10)


@pytest.fixture
def private_copy(tmp_path):
    """A private copy of a test model (Save may write next to it)."""
    import shutil

    def make(name: str = "small_cnn_dilated_float.tflite"):
        out = tmp_path / name
        shutil.copyfile(model_path(name), out)
        return out
    return make


@pytest.fixture(autouse=True)
def _delete_closed_widgets():
    """After each test, delete the widgets pytest-qt closed.  It closes them and calls
    ``deleteLater``, but a deferred delete posted outside an event loop waits for one
    that may never come: every window of the session would stay alive (800 widgets each),
    and each new window's set-up slow down under the application's event filters."""
    yield
    from PySide6.QtCore import QCoreApplication, QEvent
    if QCoreApplication.instance() is not None:
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
