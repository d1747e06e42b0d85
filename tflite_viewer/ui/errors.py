"""No traceback ever reaches the user: errors become a dialog and a log entry.

`install_excepthook` routes any exception that escapes a slot (Qt calls `sys.excepthook`
for those) to the `ErrorReporter`, which logs it with its traceback and shows one dialog.
The reporter can be told not to show dialogs (headless screenshots, tests): it then only
logs and emits ``reported``, which tests listen to.
"""
from __future__ import annotations

import logging
import sys
import traceback
from types import TracebackType

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication, QMessageBox, QWidget

log = logging.getLogger("tflite_viewer.ui")


class ErrorReporter(QObject):
    """Shows errors to the user (title, message, optional details) and remembers the last."""

    reported = Signal(str, str)  # title, message

    def __init__(self, interactive: bool = True, echo: bool = True) -> None:
        super().__init__()
        self.interactive = interactive
        self.echo = echo  # without dialogs: write each error to stderr, on one line
        self.last: tuple[str, str] | None = None

    def report(self, title: str, message: str, details: str | None = None,
               parent: QWidget | None = None) -> None:
        self.last = (title, message)
        log.error("%s: %s", title, message)
        self.reported.emit(title, message)
        if not self.interactive or QApplication.instance() is None:
            if self.echo:
                flat = "; ".join(ln.strip() for ln in message.splitlines() if ln.strip())
                sys.stderr.write(f"tflite-viewer: {title}: {flat}\n")
            return
        box = QMessageBox(QMessageBox.Icon.Critical, title, message, QMessageBox.StandardButton.Ok, parent)
        if details:
            box.setDetailedText(details)
        box.exec()

    def unexpected(self, exc: BaseException, tb: TracebackType | None = None) -> None:
        details = "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))
        log.error("unexpected error\n%s", details)
        self.report("Unexpected error",
                    f"{type(exc).__name__}: {exc}\n\nThe window keeps working; details are in the log.",
                    details)


_reporter: ErrorReporter | None = None


def reporter() -> ErrorReporter:
    global _reporter
    if _reporter is None:
        _reporter = ErrorReporter()
    return _reporter


def install_excepthook() -> None:
    """Send exceptions escaping Qt slots to the reporter instead of stderr tracebacks."""
    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            QApplication.quit()
            return
        try:
            reporter().unexpected(exc, tb)
        except Exception:  # noqa: BLE001 - last resort: never raise from the hook
            sys.__excepthook__(kind, exc, tb)
    sys.excepthook = hook
