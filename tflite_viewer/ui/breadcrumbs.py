"""The bar above the canvas: a subgraph selector, the trail of subgraphs opened through
control-flow operators ("main > WHILE #0 body > ..."), and beside it the other subgraphs the
last call's operator runs (an IF's else-branch while its then-branch is shown).

However long the trail, the bar asks for no more width than the selector: a long trail is
cut at the canvas's edge (each crumb keeps its full name in its tooltip) instead of widening
the centre and crushing the docks beside it (lstm_float's WHILE bodies left the Model dock
140 px wide for as long as the window stayed open).
"""
from __future__ import annotations

from PySide6.QtCore import QSize, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSizePolicy, QToolButton, QWidget

from ..model import Model
from .navigation import Call, Crumb

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
        self.combo.setMinimumWidth(220)
        # long subgraph names must not widen it: it shows 36 characters, the list all
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.combo.setMinimumContentsLength(36)
        self.combo.setToolTip("Subgraph (name or signature key)")
        self.combo.activated.connect(self.subgraphChosen)
        self._crumbs = QHBoxLayout()
        self._crumbs.setSpacing(2)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        layout.addWidget(QLabel("Subgraph"))
        layout.addWidget(self.combo)
        layout.addSpacing(12)
        layout.addLayout(self._crumbs)
        layout.addStretch(1)
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
                item.widget().deleteLater()
        if len(trail) < 2:
            return
        self._add_crumbs(trail)
        if siblings:
            self._crumbs.addSpacing(10)
            self._crumbs.addWidget(QLabel("also:"))
        for call, label in siblings:
            button = QToolButton()
            button.setText(label)
            button.setAutoRaise(True)
            button.setToolTip(f"Show the {call.role} subgraph of the same operator instead")
            button.setStyleSheet("color: #0969da;")
            button.clicked.connect(lambda _=False, c=call: self.callChosen.emit(c))
            self._crumbs.addWidget(button)
            self.sibling_buttons.append(button)

    def _add_crumbs(self, trail: list[Crumb]) -> None:
        for i, crumb in enumerate(trail):
            if i:
                self._crumbs.addWidget(QLabel("\u203a"))
            if i == len(trail) - 1:  # where we are: plain bold text
                here = QLabel(crumb.label)
                here.setStyleSheet("font-weight: bold; color: #1f2328;")
                here.setToolTip(crumb.label)
                self._crumbs.addWidget(here)
                continue
            button = QToolButton()
            button.setText(crumb.label)
            button.setAutoRaise(True)
            button.setToolTip(f"Back to subgraph {crumb.subgraph}: {crumb.label}")
            button.setStyleSheet("color: #0969da;")
            button.clicked.connect(lambda _=False, pos=i: self.crumbChosen.emit(pos))
            self._crumbs.addWidget(button)
