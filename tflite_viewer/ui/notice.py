"""A non-modal notice above the canvas: what an edit did that the user should know about.

Op versions an edit raised and the runtime the model now needs ("DEPTHWISE_CONV_2D v1 ->
v2; needs runtime 1.12.0"), warnings ("shapes no longer agree"), and refused edits.  It
never takes focus or blocks: it stays until closed or replaced, or hides by itself after
a while.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

MARGIN = 8

STYLES = {
    "info": "background: #ddf4ff; border: 1px solid #54aeff; color: #0a3069;",
    "warning": "background: #fff8c5; border: 1px solid #d4a72c; color: #4d2d00;",
    "error": "background: #ffebe9; border: 1px solid #ff8182; color: #82071e;",
}
HIDE_AFTER_MS = {"info": 15000, "warning": 30000, "error": 30000}


class NoticeBar(QFrame):
    """One line (or a few) of text with a close button."""

    closed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notice")
        self.label = QLabel("")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("\u2715")
        close.setAutoRaise(True)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 3, 4, 3)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.level = "info"
        self.tag: str | None = None
        self._host: QWidget | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.dismiss)
        self.hide()

    def text(self) -> str:
        return self.label.text()

    def attach(self, host: QWidget) -> None:
        """Float over the top of ``host`` (the canvas), following its size."""
        self.setParent(host)
        self._host = host
        host.installEventFilter(self)
        self.hide()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if obj is self._host and event.type() == QEvent.Type.Resize and self.isVisible():
            self.place()
        return False

    def place(self) -> None:
        host = self._host
        if host is None:
            return
        width = max(host.width() - 2 * MARGIN, 120)
        self.setFixedWidth(width)
        self.setFixedHeight(self.layout().heightForWidth(width) if self.layout().hasHeightForWidth()
                            else self.sizeHint().height())
        self.move(MARGIN, MARGIN)
        self.raise_()

    def show_notice(self, text: str, level: str = "info", tag: str | None = None) -> None:
        self.level = level
        self.tag = tag
        self.setStyleSheet(f"QFrame#notice {{ {STYLES.get(level, STYLES['info'])} }}"
                           " QLabel { border: none; background: transparent; }")
        self.label.setText(text)
        self.show()
        self.place()
        self._timer.start(HIDE_AFTER_MS.get(level, 15000))

    def dismiss(self, tag: str | None = None) -> None:
        """Hide the notice; with ``tag``, only a notice of that tag."""
        if tag is not None and (self.tag != tag or self.isHidden()):
            return
        self._timer.stop()
        self.hide()
        self.closed.emit()
