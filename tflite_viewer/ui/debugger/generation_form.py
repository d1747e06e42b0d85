"""The Inputs dialog's generation form: a run that is a chain of signature calls (prefill,
then decode steps, the KV cache carried by name), for an on-device LLM.

The prompt's ids and the number of tokens, and the loop's pieces as
`interpreter.generation.find_plan` finds them from litert-torch's names, each one a
choice the user can change when a model names them otherwise: the prefill and decode
signatures, the token and position inputs, the logits output, the KV-cache names (names or
globs).  `setup()` checks all of it (`GenerationError` naming what is wrong) and gives the
`workspace.GenerationSetup` the debugger runs.
"""
from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QLineEdit, QSpinBox, QWidget

from ...interpreter.generation import (Generation, GenerationError, GenerationPlan,
                                       find_plan, parse_prompt)
from ..state.workspace import GenerationSetup

DEFAULT_STEPS = 8


def default_plan(model) -> tuple[GenerationPlan | None, str]:
    """The plan found from litert-torch's names, or None and why not."""
    try:
        return find_plan(model), ""
    except GenerationError as exc:
        return None, str(exc)


class GenerationForm(QWidget):
    """The form (see the module docstring)."""

    def __init__(self, model, setup: GenerationSetup | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        plan = setup.plan if setup is not None else default_plan(model)[0]
        self.prompt = QLineEdit(", ".join(map(str, setup.prompt)) if setup else "1")
        self.prompt.setToolTip("The prompt's token ids, comma-separated: the prefill gets "
                               "them padded with 0 to its length")
        self.steps = QSpinBox()
        self.steps.setRange(1, 100_000)
        self.steps.setValue(setup.steps if setup else DEFAULT_STEPS)
        self.steps.setToolTip("Decode steps: each generates one token (the argmax of its "
                              "logits), fed to the next")
        keys = [s.key for s in model.signature_defs]
        self.prefill, self.decode = QComboBox(), QComboBox()
        self.prefill.addItems(keys)
        self.decode.addItems(keys)
        self.tokens, self.position, self.logits = QComboBox(), QComboBox(), QComboBox()
        self.kv = QLineEdit()
        self.kv.setToolTip("The KV-cache tensors: names both an input and an output of the "
                           "two signatures, comma-separated; globs (kv_cache_*) allowed")
        if plan is not None:
            self.prefill.setCurrentText(plan.prefill)
            self.decode.setCurrentText(plan.decode)
        self._fill_names(plan)
        self.decode.currentTextChanged.connect(lambda _t: self._fill_names(None))
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setStyleSheet("color: #57606a;")
        form = QFormLayout(self)
        form.addRow("Prompt token ids", self.prompt)
        form.addRow("Tokens to generate", self.steps)
        form.addRow("Prefill signature", self.prefill)
        form.addRow("Decode signature", self.decode)
        form.addRow("Token ids input", self.tokens)
        form.addRow("Position input", self.position)
        form.addRow("Logits output", self.logits)
        form.addRow("KV cache", self.kv)
        form.addRow(self.summary)
        self._describe(plan)
        for edit in (self.prompt, self.kv):
            edit.textChanged.connect(lambda _t: self.summary.setText(""))

    def _fill_names(self, plan: GenerationPlan | None) -> None:
        """The decode signature's inputs and outputs as the choices of the name pieces."""
        key = self.decode.currentText()
        try:
            sig = self.model.signature(key)
        except KeyError:
            return
        ins, outs = [m.name for m in sig.inputs], [m.name for m in sig.outputs]
        for combo, names in ((self.tokens, ins), (self.position, ins), (self.logits, outs)):
            combo.clear()
            combo.addItems(names)
        if plan is None:
            try:
                plan = find_plan(self.model, prefill=self.prefill.currentText() or None,
                                 decode=key)
            except GenerationError:
                plan = None
        if plan is not None:
            self.tokens.setCurrentText(plan.tokens)
            self.position.setCurrentText(plan.position)
            self.logits.setCurrentText(plan.logits)
            self.kv.setText(", ".join(plan.kv))

    def _describe(self, plan: GenerationPlan | None) -> None:
        if plan is None:
            self.summary.setText(default_plan(self.model)[1] + " \u2014 choose the pieces "
                                 "above")
        else:
            self.summary.setText("Loop: " + plan.describe())

    def setup(self) -> GenerationSetup:
        """The loop as chosen, checked (a `GenerationError` says what is wrong)."""
        prompt = parse_prompt(self.prompt.text())
        found = default_plan(self.model)[0]  # left as found: every prefill, in chunks
        prefill = self.prefill.currentText()
        plan = find_plan(self.model, len(prompt),
                         prefill=None if found and prefill == found.prefill else prefill,
                         decode=self.decode.currentText(), tokens=self.tokens.currentText(),
                         position=self.position.currentText(),
                         logits=self.logits.currentText(), kv=self.kv.text())
        Generation(self.model, plan, prompt, self.steps.value())  # lengths and positions
        self._describe(plan)
        return GenerationSetup(plan, tuple(prompt), self.steps.value())
