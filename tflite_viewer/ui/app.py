"""Starting the window: `tflite-viewer [MODEL] [--screenshot OUT.png] [--select ...] [--subgraph S]`.

With ``--screenshot`` the window is opened offscreen (when there is no display), the model
is loaded synchronously, the selection made, and the whole window grabbed to a PNG: the
way README screenshots are made and the way tests check what a user would see.
"""
from __future__ import annotations

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


def run_app(args: Namespace) -> int:
    """Run the window (returns the exit code) or take a screenshot and exit."""
    screenshot = getattr(args, "screenshot", None)
    if screenshot and _headless():
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    logging.basicConfig(level=logging.INFO if os.environ.get("TFLITE_VIEWER_DEBUG") else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    # Qt aborts with a generic message when its xcb plugin's libraries are missing: say
    # which, and how to install them, before any QApplication exists
    from . import platform_check
    if platform_check.uses_xcb():
        missing = [s for s in platform_check.library_status() if not s[2]]
        if missing:
            sys.stderr.write(f"tflite-viewer: error: {platform_check.missing_message(missing)}\n")
            return 1
    app = make_app()
    from ..samples import sample_model_path
    from .errors import install_excepthook, reporter
    from .main_window import MainWindow

    model = Path(args.model) if getattr(args, "model", None) else sample_model_path()
    select = getattr(args, "select", None)
    subgraph = getattr(args, "subgraph", None)
    run_to = getattr(args, "run_to", None)
    steps = {k: getattr(args, k, None) for k in ("cross_check", "compare_float", "overlay")}
    for flag, value in (("--run-to", run_to), ("--cross-check", steps["cross_check"] or None),
                        ("--compare-float", steps["compare_float"])):
        if value is not None and not screenshot:
            sys.stderr.write(f"tflite-viewer: error: {flag} goes with --screenshot\n")
            return 2
    if screenshot:
        return take_screenshot(model, Path(screenshot), select=select, subgraph=subgraph,
                               run_to=run_to, inputs=getattr(args, "inputs", None), **steps)

    install_excepthook()
    window = MainWindow(errors=reporter())
    window.show()
    if select:
        window.select_later(select)
    window.open_path(model, subgraph=subgraph)
    return int(app.exec())


def take_screenshot(model: Path, out: Path, *, select: str | None = None, subgraph: str | None = None,
                    size: tuple[int, int] = SCREENSHOT_SIZE, run_to: int | None = None,
                    inputs: str | None = None, cross_check: bool = False,
                    compare_float: str | None = None, overlay: str | None = None) -> int:
    """Open ``model`` in a window of ``size`` (the default layout), select, and save the
    window to ``out``; with ``run_to``, first run the debugger to just before that operator;
    with ``cross_check`` / ``compare_float``, show that analysis (`screenshot_steps`)."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from .errors import ErrorReporter
    from .main_window import MainWindow
    from .render import save_png

    if out.suffix.lower() != ".png":
        sys.stderr.write(f"tflite-viewer: error: --screenshot {out.name}: the output must end in .png\n")
        return 2
    make_app()
    # settings of this screenshot alone: nothing chosen in an earlier one (a dock's overlay,
    # sample count, layout) changes what this one shows
    scratch = tempfile.TemporaryDirectory(prefix="tflite-viewer-screenshot-")
    settings = QSettings(str(Path(scratch.name) / "settings.ini"), QSettings.Format.IniFormat)
    errors = ErrorReporter(interactive=False)  # messages go to stderr, no modal dialog
    window = MainWindow(settings=settings, errors=errors, remember_layout=False)
    window.resize(*size)
    window.show()
    QApplication.processEvents()
    if not window.open_path(model, subgraph=subgraph, wait=True):
        window.close()
        return 2
    try:
        if run_to is not None:
            from .debugger.screenshot import pause_before
            pause_before(window, run_to, inputs)
        if cross_check or compare_float:
            from . import screenshot_steps
            if cross_check:
                screenshot_steps.cross_check(window)
            if compare_float:
                screenshot_steps.compare_float(window, compare_float, overlay)
        if select:
            window.select_spec(select)
    except ValueError as exc:
        sys.stderr.write(f"tflite-viewer: error: {exc}\n")
        window.close()
        return 2
    for _ in range(3):
        QApplication.processEvents()
    image = window.grab()
    window.close()
    try:
        save_png(image, out)
    except OSError as exc:
        sys.stderr.write(f"tflite-viewer: error: {exc}\n")
        return 2
    return 0
