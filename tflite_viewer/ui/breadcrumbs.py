"""The bar above the canvas: a subgraph selector, the trail of subgraphs opened through
control-flow operators ("main > WHILE #0 body > ..."), and beside it the other subgraphs the
last call's operator runs (an IF's else-branch while its then-branch is shown).

However long the trail, the bar asks for no more width than the selector: a long trail is
cut at the canvas's edge (each crumb keeps its full name in its tooltip) instead of widening
the centre and crushing the docks beside it (lstm_float's WHILE bodies left the Model dock
140 px wide for as long as the window stayed open).
"""
from __future__ import annotations

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtWidgets import (QComboBox, QFrame, QHBoxLayout, QLabel, QScrollArea, QSizePolicy,
                               QToolButton, QWidget)

from ..model import Model
from .state.navigation import Call, Crumb

__all__ = ["Crumb", "NavigationBar", "subgraph_label"]


def subgraph_label(model: Model, index: int) -> str:
    sg = model.subgraphs[index]
    keys = [s.key for s in model.signature_defs if s.subgraph_index == index]
    name = sg.name or (keys[0] if keys else "")
    extra = f" [{', '.join(keys)}]" if keys and sg.name else ""
    return f"{index}: {name or 'subgraph'}{extra} ({len(sg.operators)} ops)"


class NavigationBar(QWidget):
    """``subgraphChosen`` from the combo (a fresh trail); ``crumbChosen`` from the trail."""

    subgraphChosen = Signal(int)
    crumbChosen = Signal(int)  # position in the trail
    callChosen = Signal(object)  # a navigation.Call beside the trail (a sibling branch)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.combo = QComboBox()
        # as wide as its names, between these (a long name must not widen the centre; the
        # list shows them all)
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.combo.setMinimumWidth(220)
        self.combo.setMaximumWidth(360)
        self.combo.setToolTip("Subgraph (name or signature key)")
        self.combo.activated.connect(self.subgraphChosen)
        # the trail lives in a scroll area without bars: where the canvas is narrower than
        # the trail it is cut (scrolled to its end, where the user is), never squeezed
        # over the selector
        holder = QWidget()
        self._crumbs = QHBoxLayout(holder)
        self._crumbs.setContentsMargins(0, 0, 0, 0)
        self._crumbs.setSpacing(2)
        self._crumbs.addStretch(1)
        self.trail_area = QScrollArea()
        self.trail_area.setWidget(holder)
        self.trail_area.setWidgetResizable(True)
        self.trail_area.setFrameShape(QFrame.Shape.NoFrame)
        self.trail_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.trail_area.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.trail_area.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.trail_area.setFixedHeight(self.combo.sizeHint().height() + 2)
        self.trail_area.setStyleSheet("QScrollArea, QScrollArea > QWidget > QWidget "
                                      "{ background: transparent; }")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        layout.addWidget(QLabel("Subgraph"))
        layout.addWidget(self.combo)
        layout.addSpacing(12)
        layout.addWidget(self.trail_area, 1)
        self.trail: list[Crumb] = []
        self.sibling_buttons: list[QToolButton] = []
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        """The selector's width: the trail never widens the window's centre."""
        return QSize(self.combo.minimumWidth() + 80, super().minimumSizeHint().height())

    def set_model(self, model: Model | None) -> None:
        self.combo.blockSignals(True)
        self.combo.clear()
        if model is not None:
            for i in range(len(model.subgraphs)):
                self.combo.addItem(subgraph_label(model, i), i)
        self.combo.blockSignals(False)

    def set_trail(self, trail: list[Crumb], siblings: list[tuple[Call, str]] = ()) -> None:
        """Show ``trail``; ``siblings`` are (call, label) pairs offered beside it."""
        self.trail = list(trail)
        self.sibling_buttons = []
        if trail:
            self.combo.blockSignals(True)
            self.combo.setCurrentIndex(trail[-1].subgraph)
            self.combo.blockSignals(False)
        while self._crumbs.count():
            item = self._crumbs.takeAt(0)
            if item.widget():
                item.widget().hide()  # at once: deleted later, it would be drawn under the new
                item.widget().deleteLater()
        self._crumbs.addStretch(1)  # crumbs go before it: left-aligned
        if len(trail) < 2:
            return
        self._add_crumbs(trail)
        if siblings:
            self._crumbs.insertSpacing(self._crumbs.count() - 1, 10)
            self._add(QLabel("also:"))
        for call, label in siblings:
            button = QToolButton()
            button.setText(call.role)  # "else": short, the trail before it stays whole
            button.setAutoRaise(True)
            button.setToolTip(f"{label}: show the {call.role} subgraph of the same operator "
                              "instead")
            button.setStyleSheet("color: #0969da;")
            button.clicked.connect(lambda _=False, c=call: self.callChosen.emit(c))
            self._add(button)
            self.sibling_buttons.append(button)

    def _reveal(self, widget: QWidget) -> None:
        try:
            self.trail_area.ensureWidgetVisible(widget, 8, 0)
        except RuntimeError:  # the trail was rebuilt meanwhile: that crumb is gone
            pass

    def _add(self, widget: QWidget) -> None:
        """A crumb (or label, or sibling button) after the others, before the stretch."""
        self._crumbs.insertWidget(self._crumbs.count() - 1, widget)

    def _add_crumbs(self, trail: list[Crumb]) -> None:
        for i, crumb in enumerate(trail):
            if i:
                self._add(QLabel("\u203a"))
            if i == len(trail) - 1:  # where we are: plain bold text
                here = QLabel(crumb.label)
                here.setStyleSheet("font-weight: bold; color: #1f2328;")
                here.setToolTip(crumb.label)
                self._add(here)
                # where the user is stays in sight when the trail is cut
                QTimer.singleShot(0, here, lambda w=here: self._reveal(w))
                continue
            button = QToolButton()
            button.setText(crumb.label)
            button.setAutoRaise(True)
            button.setToolTip(f"Back to subgraph {crumb.subgraph}: {crumb.label}")
            button.setStyleSheet("color: #0969da;")
            button.clicked.connect(lambda _=False, pos=i: self.crumbChosen.emit(pos))
            self._add(button)
