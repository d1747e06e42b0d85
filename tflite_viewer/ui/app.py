"""Starting the window: `tflite-viewer [MODEL] [--screenshot OUT.png] [--select ...] [--subgraph S]`.

The command line hands over one `state.launch.Launch` (the options it parsed and checked).
With ``screenshot`` the window is opened offscreen (when there is no display), the model
is loaded synchronously, the selection made, and the whole window grabbed to a PNG: the
way README screenshots are made and the way tests check what a user would see.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from pathlib import Path

from .state.launch import Launch

log = logging.getLogger("tflite_viewer.ui")


def _headless() -> bool:
    return (sys.platform.startswith("linux") and not os.environ.get("DISPLAY")
            and not os.environ.get("WAYLAND_DISPLAY"))


def make_app():
    """The QApplication (created once), with the app's names for QSettings."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        app = QApplication([sys.argv[0] if sys.argv else "tflite-viewer"])
    app.setApplicationName("tflite-viewer")
    app.setOrganizationName("tflite-viewer")
    return app


@contextlib.contextmanager
def _quiet_qt_and_logs():
    """Headless runs say one line on failure: while this is active Qt's own messages (the
    offscreen plugin's "does not support propagateSizeHints()") and the package's log
    records go to the log, which is silent unless TFLITE_VIEWER_DEBUG is set."""
    from PySide6.QtCore import QtMsgType, qInstallMessageHandler

    qt_log = logging.getLogger("tflite_viewer.qt")

    def handler(kind, _context, message: str) -> None:
        if kind == QtMsgType.QtFatalMsg:
            sys.stderr.write(f"{message}\n")
        else:
            qt_log.debug("%s", message)

    previous = qInstallMessageHandler(handler)
    package_log = logging.getLogger("tflite_viewer")
    quiet = not os.environ.get("TFLITE_VIEWER_DEBUG")
    null, propagate = logging.NullHandler(), package_log.propagate
    if quiet:
        package_log.addHandler(null)
        package_log.propagate = False
    try:
        yield
    finally:
        qInstallMessageHandler(previous)
        if quiet:
            package_log.removeHandler(null)
            package_log.propagate = propagate


def drain_workers(timeout_ms: int = 30_000) -> None:
    """Let background tasks (a shape check, a layout) finish before the process exits: a
    task still running while Python tears its objects down would report to a deleted
    signal source."""
    from PySide6.QtCore import QThreadPool

    pool = QThreadPool.globalInstance()
    pool.clear()  # tasks not started yet never start
    pool.waitForDone(timeout_ms)


def run_app(launch: Launch) -> int:
    """Run the window (returns the exit code) or take a screenshot and exit.

    The command line (`tflite_viewer.cli.window`) has checked the arguments, the model and
    the display before this is called; a failure here raises ValueError or OSError with
    the reason, which the command line prints on one line."""
    if launch.screenshot and _headless():
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    debug = bool(os.environ.get("TFLITE_VIEWER_DEBUG"))
    if debug or not launch.screenshot:  # a screenshot logs nothing unless asked to
        logging.basicConfig(level=logging.INFO if debug else logging.WARNING,
                            format="%(levelname)s %(name)s: %(message)s")
    app = make_app()
    if launch.screenshot:
        return take_screenshot(launch)
    from ..samples import sample_model_path
    from .errors import install_excepthook, reporter
    from .main_window import MainWindow
    from .recovery import offer_recoveries

    install_excepthook()
    window = MainWindow(errors=reporter())
    fit_to_screen(window)
    window.show()
    app.processEvents()  # the window on screen behind the recovery question
    # edits a crash left unsaved are offered first: a restored model is the one shown
    if not offer_recoveries(window):
        if launch.select:
            window.select_later(launch.select)
        window.open_path(launch.model or sample_model_path(), subgraph=launch.subgraph)
    code = int(app.exec())
    drain_workers()
    return code


def fit_to_screen(window) -> None:
    """Shrink the window (its default 1440x900, or a size remembered from a larger
    monitor) to the screen's free area, title bar and frame included, and move it inside:
    on a 1024x700 screen its bottom docks and status bar would be off screen."""
    screen = window.screen()
    if screen is None:
        return
    free = screen.availableGeometry()
    frame = window.frameGeometry().size() - window.geometry().size()
    # before the first show the window manager has not framed it yet: allow for a title bar
    extra_w, extra_h = max(frame.width(), 8), max(frame.height(), 40)
    width = min(window.width(), free.width() - extra_w)
    height = min(window.height(), free.height() - extra_h)
    if (width, height) != (window.width(), window.height()):
        window.resize(width, height)
        window.move(free.topLeft())


def take_screenshot(launch: Launch) -> int:
    """Open ``launch.model`` in a window of ``launch.size`` (the default layout), do what
    the launch asks (run the debugger to an operator, a generation, a cross-check, the
    quantization analysis, memory, a target, a comparison: `screenshot_steps`), select,
    and save the window to ``launch.screenshot``.  Returns 0; raises ValueError (or
    OSError) with the reason when it cannot."""
    from .render import save_png

    out = launch.screenshot
    if out is None or out.suffix.lower() != ".png":
        raise ValueError(f"--screenshot {out.name if out else ''}: the output must end in .png")
    make_app()
    with _quiet_qt_and_logs():
        image = _grab(launch)
    save_png(image, out)
    return 0


def _grab(launch: Launch):
    """The window with the model open (and paused, checked, selected) as an image; the
    window is closed and its background tasks finished however this ends."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from ..samples import sample_model_path
    from .errors import ErrorReporter
    from .main_window import MainWindow

    # settings of this screenshot alone: nothing chosen in an earlier one (a dock's overlay,
    # sample count, layout) changes what this one shows
    scratch = tempfile.TemporaryDirectory(prefix="tflite-viewer-screenshot-")
    settings = QSettings(str(Path(scratch.name) / "settings.ini"), QSettings.Format.IniFormat)
    errors = ErrorReporter(interactive=False, echo=False)  # the caller says it, on one line
    window = MainWindow(settings=settings, errors=errors, remember_layout=False)
    model = launch.model or sample_model_path()
    try:
        if launch.expand_composites:
            window.composites.set_folded(False)
        window.show()
        window.resize(*launch.size)
        QApplication.processEvents()
        window.docks.size_docks()
        if not window.open_path(model, subgraph=launch.subgraph, wait=True):
            title, message = errors.last or ("Cannot open model", f"{model}: cannot open it")
            raise ValueError(message)
        from . import screenshot_steps
        screenshot_steps.prepare(window, launch)
        if launch.select:
            window.select_spec(launch.select)
        for _ in range(3):
            QApplication.processEvents()
        return window.grab()
    finally:
        window.close()
        drain_workers()
        scratch.cleanup()
