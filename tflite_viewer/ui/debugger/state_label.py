"""The debugger's state in the status bar ("Debug: paused at main/op CONV_2D - 12 ops run").

A view of the open workspace's session (``ws.debug``): another model, or the end of the
session, empties it.  Its size is fixed.  A label that grows with its text asks the status
bar, and through it the main window's whole dock layout, to lay out again at every step
(every dock animates its geometry): a fixed size keeps a step's text change a repaint of the
label alone.  A text too long for it is elided in the middle; the tooltip has all of it.
Without a session it is hidden, and the status bar's messages have its room.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QLabel, QWidget

from ...interpreter.session import STOPPED
from ..state.workspace import DEBUG, MODEL

WIDTH_CHARS = 96  # room for "Debug: decode #3: paused at decode/op 51 STABLEHLO_COMPOSITE - 533 ops run"


def state_text(ws) -> str:
    """What the label says about ``ws``'s session ("" without one)."""
    d = ws.debug
    if not d.active:
        return ""
    if d.busy:
        return "Debug: running\u2026"
    stop = d.last_stop
    if stop is None:
        return "Debug: starting\u2026"
    names = [] if ws.model is None else [sg.display_name for sg in ws.model.subgraphs]
    if stop.state == STOPPED:  # the run was abandoned: its op count is gone with it
        return "Debug: stopped"
    ops = f"{stop.ops_run:,} op{'' if stop.ops_run == 1 else 's'} run"
    # BLAS sums are the exception (a model with big float32 filters, `float_sums`): said,
    # since its float outputs then differ from LiteRT's reference kernels in the last bits
    sums = " \u2014 BLAS float sums" if stop.float_sums == "blas" else ""
    return f"Debug: {stop.describe(names)} \u2014 {ops}{sums}"


class StateLabel(QLabel):
    def __init__(self, hub=None, parent: QWidget | None = None) -> None:
        super().__init__("", parent)
        metrics = self.fontMetrics()
        self.setFixedSize(metrics.averageCharWidth() * WIDTH_CHARS, metrics.height() + 4)
        if hub is not None:
            hub.subscribe(lambda ws: self.setText(state_text(ws)), MODEL, DEBUG)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt API
        super().setText(text)
        self.setToolTip(text)
        # without a session it takes no room: the status bar's messages get the width
        # (set only when a session starts or ends, not at every step)
        if self.isHidden() == bool(text):
            self.setVisible(bool(text))

    def paintEvent(self, _event) -> None:  # noqa: N802 - Qt API
        painter = QPainter(self)
        painter.setPen(self.palette().color(QPalette.ColorRole.WindowText))
        text = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideMiddle, self.width())
        painter.drawText(self.rect(), int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), text)
