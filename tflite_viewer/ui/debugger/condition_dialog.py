"""The conditional breakpoint dialog: NaN/Inf in an output, values outside a range,
saturated quantized outputs, or "op type is X"; on any op, one op type or the selected op.
Each maps to the interpreter's own breakpoint class."""
from __future__ import annotations

from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox,
                               QFormLayout, QLabel, QWidget)

from ...interpreter import debugger as dbg

KINDS = ("NaN or Inf in an output", "an output outside a range",
         "saturated quantized output", "op type is")


class ConditionDialog(QDialog):
    """``breakpoint()`` after ``exec()`` gives the chosen `Breakpoint`."""

    def __init__(self, model, subgraph: int, selected_op: int | None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Conditional breakpoint")
        self.subgraph = subgraph
        self.selected_op = selected_op
        self.kind = QComboBox()
        self.kind.addItems(KINDS)
        self.low = QDoubleSpinBox()
        self.high = QDoubleSpinBox()
        for spin, value in ((self.low, -100.0), (self.high, 100.0)):
            spin.setRange(-1e30, 1e30)
            spin.setDecimals(6)
            spin.setValue(value)
        self.fraction = QDoubleSpinBox()
        self.fraction.setRange(0.0, 1.0)
        self.fraction.setSingleStep(0.05)
        self.fraction.setDecimals(3)
        self.fraction.setValue(0.1)
        self.op_type = QComboBox()
        names = sorted({op.name for sg in model.subgraphs for op in sg.operators})
        self.op_type.addItems(names)
        self.scope = QComboBox()
        self.scope.addItems(["any operator", "operators of the type above"]
                            + ([f"only op {selected_op} of subgraph {subgraph}"]
                               if selected_op is not None else []))
        form = QFormLayout(self)
        form.addRow("Pause after", self.kind)
        form.addRow("low", self.low)
        form.addRow("high", self.high)
        form.addRow("fraction at the limits above", self.fraction)
        form.addRow("op type", self.op_type)
        form.addRow("on", self.scope)
        form.addRow(QLabel("Conditions are checked after each op runs and pause before the "
                           "next one; \u201cop type is\u201d pauses before the op."))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.kind.currentIndexChanged.connect(self._enable)
        self._enable()

    def _enable(self) -> None:
        k = self.kind.currentIndex()
        self.low.setEnabled(k == 1)
        self.high.setEnabled(k == 1)
        self.fraction.setEnabled(k == 2)
        self.scope.setEnabled(k != 3)

    def breakpoint(self) -> dbg.Breakpoint:
        k = self.kind.currentIndex()
        if k == 3:
            return dbg.OpTypeBreakpoint(self.op_type.currentText())
        if k == 0:
            bp: dbg.Breakpoint = dbg.NonFiniteBreakpoint()
        elif k == 1:
            bp = dbg.RangeBreakpoint(low=self.low.value(), high=self.high.value())
        else:
            bp = dbg.SaturationBreakpoint(fraction=self.fraction.value())
        scope = self.scope.currentIndex()
        if scope == 1:
            bp.op_type = self.op_type.currentText()
        elif scope == 2:
            bp.subgraph, bp.op = self.subgraph, self.selected_op
        return bp
