"""Starting the window: `tflite-viewer [MODEL] [--screenshot OUT.png] [--select ...] [--subgraph S]`.

With ``--screenshot`` the window is opened offscreen (when there is no display), the model
is loaded synchronously, the selection made, and the whole window grabbed to a PNG: the
way README screenshots are made and the way tests check what a user would see.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from argparse import Namespace
from pathlib import Path

SCREENSHOT_SIZE = (1600, 1000)
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


def run_app(args: Namespace) -> int:
    """Run the window (returns the exit code) or take a screenshot and exit.

    The command line (`tflite_viewer.cli.window`) has checked the arguments, the model and
    the display before this is called; a failure here raises ValueError or OSError with
    the reason, which the command line prints on one line."""
    screenshot = getattr(args, "screenshot", None)
    if screenshot and _headless():
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    debug = bool(os.environ.get("TFLITE_VIEWER_DEBUG"))
    if debug or not screenshot:  # a screenshot logs nothing unless asked to
        logging.basicConfig(level=logging.INFO if debug else logging.WARNING,
                            format="%(levelname)s %(name)s: %(message)s")
    app = make_app()
    from ..samples import sample_model_path
    from .errors import install_excepthook, reporter
    from .main_window import MainWindow

    model = Path(args.model) if getattr(args, "model", None) else sample_model_path()
    select = getattr(args, "select", None)
    subgraph = getattr(args, "subgraph", None)
    if screenshot:
        return take_screenshot(model, Path(screenshot), select=select, subgraph=subgraph,
                               run_to=getattr(args, "run_to", None),
                               inputs=getattr(args, "inputs", None),
                               **{k: getattr(args, k, None)
                                  for k in ("cross_check", "compare_float", "overlay", "memory",
                                            "target", "compare_with", "generate", "prompt",
                                            "decode_step", "watch", "expand_composites")})

    install_excepthook()
    window = MainWindow(errors=reporter())
    window.show()
    if select:
        window.select_later(select)
    window.open_path(model, subgraph=subgraph)
    code = int(app.exec())
    drain_workers()
    return code


def take_screenshot(model: Path, out: Path, *, select: str | None = None, subgraph: str | None = None,
                    size: tuple[int, int] = SCREENSHOT_SIZE, run_to: int | None = None,
                    inputs: str | None = None, cross_check: bool = False,
                    compare_float: str | None = None, overlay: str | None = None,
                    memory: bool = False, target: str | None = None,
                    compare_with: str | None = None, **debugging) -> int:
    """Open ``model`` in a window of ``size`` (the default layout), select, and save the
    window to ``out``; with ``run_to``, first run the debugger to just before that
    operator; with ``cross_check`` / ``compare_float`` / ``memory`` / ``target``, show
    that analysis; with ``compare_with``, File > Compare With that model
    (`screenshot_steps`).  ``debugging``: ``generate`` (K tokens), ``prompt``,
    ``decode_step``, ``watch`` (tensor names or indices) and ``expand_composites``
    (`screenshot_steps.generation`, `screenshot_steps.watch`).  Returns 0; raises
    ValueError (or OSError) with the reason when it cannot."""
    from .render import save_png

    if out.suffix.lower() != ".png":
        raise ValueError(f"--screenshot {out.name}: the output must end in .png")
    make_app()
    with _quiet_qt_and_logs():
        image = _grab(model, size, select, subgraph, run_to, inputs, bool(cross_check),
                      compare_float, overlay, bool(memory), target, compare_with, debugging)
    save_png(image, out)
    return 0


def _grab(model: Path, size: tuple[int, int], select: str | None, subgraph: str | None,
          run_to: int | None, inputs: str | None, cross_check: bool = False,
          compare_float: str | None = None, overlay: str | None = None, memory: bool = False,
          target: str | None = None, compare_with: str | None = None,
          debugging: dict | None = None):
    """The window with ``model`` open (and paused, checked, selected) as an image; the
    window is closed and its background tasks finished however this ends."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from .errors import ErrorReporter
    from .main_window import MainWindow

    # settings of this screenshot alone: nothing chosen in an earlier one (a dock's overlay,
    # sample count, layout) changes what this one shows
    scratch = tempfile.TemporaryDirectory(prefix="tflite-viewer-screenshot-")
    settings = QSettings(str(Path(scratch.name) / "settings.ini"), QSettings.Format.IniFormat)
    errors = ErrorReporter(interactive=False, echo=False)  # the caller says it, on one line
    window = MainWindow(settings=settings, errors=errors, remember_layout=False)
    try:
        debugging = {k: v for k, v in (debugging or {}).items() if v}
        window.resize(*size)
        if debugging.get("expand_composites"):
            window.set_fold_composites(False)
        window.show()
        QApplication.processEvents()
        if not window.open_path(model, subgraph=subgraph, wait=True):
            title, message = errors.last or ("Cannot open model", f"{model}: cannot open it")
            raise ValueError(message)
        from . import screenshot_steps
        if debugging.get("generate"):
            screenshot_steps.generation(window, debugging["generate"],
                                        debugging.get("prompt") or "1")
        if run_to is not None:
            from .debugger.screenshot import pause_before
            pause_before(window, run_to, inputs, call=debugging.get("decode_step"))
        if debugging.get("watch"):
            screenshot_steps.watch(window, debugging["watch"])
        if cross_check or compare_float:
            if cross_check:
                screenshot_steps.cross_check(window)
            if compare_float:
                screenshot_steps.compare_float(window, compare_float, overlay)
        if memory:
            screenshot_steps.memory(window, select_peak=not select)
        if target:
            screenshot_steps.show_target(window, target)
        if compare_with:
            screenshot_steps.compare_with(window, compare_with)
        if select:
            window.select_spec(select)
        for _ in range(3):
            QApplication.processEvents()
        return window.grab()
    finally:
        window.close()
        drain_workers()
        scratch.cleanup()
