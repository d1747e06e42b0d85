"""Every problem of the model, each linked to the tensor or operator it is about, and
apart from them, as information, the verdicts of the target shown on the canvas.

A model LiteRT refuses (person_detect's out-of-range quantized_dimension) still opens
here; this list is where the user learns why the runtime would refuse it.  After an edit
the window adds what shape propagation found (stored shapes that are stale, operators
whose prepare fails) and the "Update stored shapes" button writes the computed shapes.
What a target does not run is no problem of the model: those rows sit under their
target's name (`state.problems.TargetNotes`), only while that target colours the canvas.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QHBoxLayout, QHeaderView, QLabel, QPushButton, QTreeWidget, QTreeWidgetItem,
                               QVBoxLayout, QWidget)

from ...model import Finding
from ..state.problems import TargetNotes

FINDING_ROLE = Qt.ItemDataRole.UserRole + 2
COLORS = {"error": QColor("#cf222e"), "warning": QColor("#9a6700"), "info": QColor("#0969da")}


class ProblemsPanel(QWidget):
    """``findingActivated`` carries the Finding the user clicked."""

    findingActivated = Signal(object)
    updateShapesRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(4)
        self.tree.setHeaderLabels(["Severity", "Where", "Object", "Message"])
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        self.tree.header().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.tree.header().setStretchLastSection(True)
        self.tree.itemActivated.connect(self._activated)
        self.tree.itemClicked.connect(self._activated)
        self.shapes_note = QLabel("")
        self.update_shapes_button = QPushButton("Update stored shapes")
        self.update_shapes_button.setToolTip("Write the shapes the operators compute into the model "
                                             "(one undoable edit)")
        self.update_shapes_button.clicked.connect(self.updateShapesRequested)
        self.shapes_bar = QWidget()
        bar = QHBoxLayout(self.shapes_bar)
        bar.setContentsMargins(4, 0, 4, 0)
        bar.addWidget(self.shapes_note, 1)
        bar.addWidget(self.update_shapes_button)
        self.shapes_bar.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.shapes_bar)
        layout.addWidget(self.tree)
        self.findings: list[Finding] = []
        self.notes: TargetNotes | None = None

    def show_findings(self, problems: list[Finding], stale_shapes: int = 0,
                      notes: TargetNotes | None = None) -> None:
        """The model's ``problems``, then a target's ``notes`` grouped under its name;
        ``stale_shapes`` stored shapes that the operators compute differently offer the
        update button."""
        self.tree.clear()
        self.findings = list(problems)
        self.shapes_bar.setVisible(stale_shapes > 0)
        self.shapes_note.setText(f"{stale_shapes} stored tensor shape{'s' if stale_shapes != 1 else ''} "
                                 "differ from what the operators compute")
        for f in problems:
            self.tree.addTopLevelItem(self._item(f))
        self.notes = notes
        self.tree.setRootIsDecorated(notes is not None)
        if notes is not None:
            group = QTreeWidgetItem(self.tree, [notes.title])
            group.setFirstColumnSpanned(True)
            group.setForeground(0, COLORS["info"])
            group.addChildren([self._item(f) for f in notes.findings])
            group.setExpanded(len(notes.findings) <= 50)

    def _item(self, f: Finding) -> QTreeWidgetItem:
        obj = ""
        if f.operator is not None:
            obj = f"op #{f.operator}"
        elif f.tensor is not None:
            obj = f"tensor {f.tensor}"
        if f.subgraph is not None and obj:
            obj = f"subgraph {f.subgraph}, {obj}"
        item = QTreeWidgetItem([f.severity, f.where, obj, f.message])
        item.setForeground(0, COLORS.get(f.severity, QColor("#1f2328")))
        item.setToolTip(3, f.message)
        item.setData(0, FINDING_ROLE, f)
        return item

    def problem_count(self) -> int:
        """The model's problems listed (a target's notes are not counted)."""
        return len(self.findings)

    def count(self) -> int:
        return self.tree.topLevelItemCount()

    def _activated(self, item: QTreeWidgetItem, column: int = 0) -> None:
        finding = item.data(0, FINDING_ROLE)
        if finding is not None:
            self.findingActivated.emit(finding)
