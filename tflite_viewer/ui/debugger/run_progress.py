"""A long run's progress in the status bar, and Cancel (issue 40 items 3 and 5).

The worker forwards the session's `RunProgress` reports (`DebugWorker.progressed`, every
0.1 s of a command).  Once a command has run for `SHOW_AFTER` seconds, the status bar shows
a progress bar (ops of the entry plan done, the running op's share counted), the op running
now with the time left in the debugger's state label, and a Cancel button; Esc cancels too
(an action enabled only while a command runs, so Esc keeps its other uses otherwise).
Cancel is the worker's stop request: the command returns within the op it is in (within
a block of a long float convolution) and the session ends its run, state ``stopped``, as
Stop does; the inputs, breakpoints and watches stay, and F5 runs again from the first op.
A quick command never shows any of it.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QToolButton, QWidget

from ...interpreter.progress import RunProgress
from ..state.workspace import DEBUG, MODEL

#: seconds a command runs before its progress shows
SHOW_AFTER = 0.5
#: the state label's room for where the run is (`RunProgress.describe`)
WHERE_CHARS = 64
#: the progress bar's steps
STEPS = 1000


def running_text(p: RunProgress) -> str:
    """The state label while a long command runs: ``Debug: running subgraph 0 op 12
    (CONV_2D), 3.2 s left - 12 of 65 ops``."""
    return f"Debug: running {p.describe(WHERE_CHARS)} \u2014 {p.done:,} of {p.total:,} ops"


def cancelled_text(p: RunProgress | None) -> str:
    """The status bar's message when Cancel ended a run (``p``: its last report); the
    state label says the run ended."""
    if p is None:
        return "Run cancelled"
    return f"Run cancelled after {p.elapsed:.1f} s in {p.path or 'its first op'}"


class RunProgressView(QWidget):
    """The progress bar and Cancel button (hidden while no long command runs)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bar = QProgressBar()
        self.bar.setRange(0, STEPS)
        self.bar.setFixedWidth(120)
        self.bar.setFormat("%p%")
        self.cancel = QToolButton()
        self.cancel.setText("Cancel")
        self.cancel.setToolTip("Cancel the run (Esc): it ends within the operator it is in")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel)
        self.hide()

    def show_progress(self, p: RunProgress) -> bool:
        """Show ``p`` if its command has run long enough; whether it is shown."""
        if p.finished or p.elapsed < SHOW_AFTER:
            return self.isVisible()
        self.bar.setValue(round(p.fraction * STEPS))
        self.bar.setToolTip(p.describe())
        self.show()
        return True


class ProgressControl:
    """Connects a `DebuggerController`'s worker to the view and the Cancel action; a view
    of the open workspace's session (``ws.debug.busy``)."""

    def __init__(self, ctl) -> None:
        self.ctl = ctl
        self.last: RunProgress | None = None  # the running command's last report
        self.cancelled = False                # Cancel was asked of the running command
        self.busy = False
        self.view = RunProgressView()
        ctl.window.statusBar().addPermanentWidget(self.view)
        self.action = QAction("&Cancel Run", ctl.window)
        self.action.setShortcut(QKeySequence(Qt.Key.Key_Escape))
        self.action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.action.setStatusTip("Cancel the running command (it ends the run)")
        self.action.setEnabled(False)
        self.action.triggered.connect(self.cancel)
        ctl.menu.insertAction(ctl.restart_action, self.action)  # after Stop
        self.view.cancel.clicked.connect(self.cancel)
        ctl.hub.subscribe(self._workspace_changed, DEBUG, MODEL)

    def progressed(self, p: RunProgress, serial) -> None:
        """A report from the worker (queued to the GUI thread): shown for the open
        workspace's running session only."""
        d = self.ctl.ws.debug
        if not (d.active and d.busy and serial == d.serial):
            return
        self.last = p
        if self.view.show_progress(p) and not p.finished:
            self.ctl.state_label.setText(running_text(p))

    def _workspace_changed(self, ws) -> None:
        """A command started (Esc cancels it) or returned (the progress goes)."""
        busy = ws.debug.active and ws.debug.busy
        if busy == self.busy:
            return
        self.busy = busy
        self.action.setEnabled(busy)
        self.view.cancel.setEnabled(busy)
        if busy:
            self.last, self.cancelled = None, False
        else:
            self.view.hide()

    def cancel(self) -> None:
        """Cancel (the button, Esc): the worker's stop request, seen within the op."""
        if self.busy:
            self.cancelled = True
            self.view.cancel.setEnabled(False)  # asked once: the command ends shortly
            self.ctl.worker.request_stop()

    def take_cancelled(self) -> str | None:
        """The message for a command that returned after Cancel (None: not cancelled)."""
        if not self.cancelled:
            return None
        self.cancelled = False
        return cancelled_text(self.last)
