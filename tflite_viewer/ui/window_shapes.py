"""The window's shape check: stored shapes compared with what the operators compute.

A mixin of `MainWindow`.  After every edit (and for an opened file, whose shapes another
tool may have left stale) the interpreter's shape propagation
(`interpreter.shape_inference`) runs over the model: edges then show the computed shape
where the stored one is stale, the tensor panel a "computed shape" row, Problems one row
per stale tensor (and per operator whose prepare fails), and Update Stored Shapes writes
them all as one undoable command.  Small models are checked at once; larger ones in a
worker, the result applied only if that model is still the one shown.
"""
from __future__ import annotations

import logging

from ..edit import EditResult, UpdateStoredShapes
from ..interpreter.shape_inference import ShapeInference, infer_shapes
from ..model import Finding, Model
from .state.targets import findings as target_findings
from .workers import Task, lay_out

log = logging.getLogger(__name__)
# Checked at once (in the GUI thread) up to this many operators: ~1 ms per 30 operators of
# prepare; beyond it the check runs in a worker and the view is relabelled when it is done.
CHECK_AT_ONCE_MAX_OPS = 1_000
# Opened files are checked (in a worker) up to this size: a 20,000-op graph takes seconds
# of prepare that a user who only reads it should not pay for; after an edit it is checked.
CHECK_ON_OPEN_MAX_OPS = 5_000


def _infer_shapes(model: Model) -> ShapeInference | None:
    """`infer_shapes`, or None for a model the interpreter cannot even build."""
    try:
        return infer_shapes(model)
    except Exception:  # noqa: BLE001 - no check is better than a broken window
        log.exception("shape inference")
        return None


def operator_count(model: Model) -> int:
    return sum(len(sg.operators) for sg in model.subgraphs)


class ShapeCheck:
    """The shape check of `MainWindow` (see the module docstring)."""

    def _set_shape_check(self, check: ShapeInference | None) -> None:
        self.shape_check = check
        self.tensor_panel.shape_check = check
        self.update_shapes_action.setEnabled(bool(check and check.mismatches))

    def _check_edited_shapes(self, model: Model) -> bool:
        """Check an edited model at once when it is small (True: it is large, check it in
        the background once it is shown)."""
        if operator_count(model) <= CHECK_AT_ONCE_MAX_OPS:
            self._set_shape_check(_infer_shapes(model))
            return False
        self._set_shape_check(None)
        return True

    def _check_opened_shapes(self, model: Model, wait: bool) -> None:
        """An opened file's stored shapes may be stale too (edited by another tool)."""
        if wait:
            self._shapes_checked(model, _infer_shapes(model))
        elif operator_count(model) <= CHECK_ON_OPEN_MAX_OPS:
            self._check_shapes_in_background(model)

    def _check_shapes_in_background(self, model: Model) -> None:
        task = Task(_infer_shapes, model)
        self._shape_tasks[task.serial] = (task, model)
        # bound methods of the window, not lambdas holding it: a check that ends after the
        # window is gone is disconnected by Qt instead of reaching a deleted window
        task.signals.finished.connect(self._shape_task_done)
        task.signals.failed.connect(self._shape_task_failed)
        task.start()

    def _shape_task_done(self, serial: int, check: ShapeInference | None) -> None:
        _task, model = self._shape_tasks.pop(serial, (None, None))
        if model is not None:
            self._shapes_checked(model, check)

    def _shape_task_failed(self, serial: int, _exc: BaseException) -> None:
        self._shape_tasks.pop(serial, None)

    def _shapes_checked(self, model: Model, check: ShapeInference | None) -> None:
        """Show a check's result if ``model`` is still the one shown (the scene was built
        before it: relabel it when some stored shape is stale)."""
        if model is not self.model:  # replaced or edited since: that one is checked anew
            return
        self._set_shape_check(check)
        if check is None or not (check.mismatches or check.failures):
            return
        current = self.graph_scene.data
        if current is not None and check.mismatches:
            sd = lay_out(model, self.subgraph, self.measure, current.layout,
                         self.computed_shapes(self.subgraph), self.expand_composites)
            self.scenes = {self.subgraph: sd}
            self._redisplay(sd)
            self._refresh_highlight(False)
        self._refresh_panels()
        self._show_problems()

    def computed_shapes(self, subgraph: int) -> dict[int, tuple[int, ...]]:
        """Tensor -> computed shape, for the stale stored shapes of ``subgraph``."""
        check = self.shape_check
        if check is None:
            return {}
        return {m.tensor: m.inferred for m in check.mismatches if m.subgraph == subgraph}

    def shape_findings(self) -> list[Finding]:
        """What shape propagation found, as Problems rows linked to the tensor or operator."""
        check, model = self.shape_check, self.model
        if check is None or model is None:
            return []
        out = []
        for m in check.mismatches:
            sg = model.subgraphs[m.subgraph]
            out.append(Finding("warning", f"subgraphs[{m.subgraph}].tensors[{m.tensor}].shape",
                               m.message(sg.tensors[m.tensor].name, sg.operators[m.operator].name),
                               m.subgraph, m.tensor))
        for s, k, message in check.failures:
            out.append(Finding("error", f"subgraphs[{s}].operators[{k}]", message, s, operator=k))
        return out

    def _show_problems(self, _ws=None) -> None:
        """Problems lists the open workspace's findings: the reader's, the shape check's,
        the quantization spec checks' (one the reader already reports on the same tensor,
        person_detect's quantized_dimension, is not listed twice) and the picked target's.  The dock is shown while
        it lists something and folded away while it is empty (the canvas gets the room)."""
        extra = self.shape_findings() + self._quant_findings() + self._target_findings()
        stale = len(self.shape_check.mismatches) if self.shape_check else 0
        self.problems_panel.show_model(self.model, extra, stale)
        count = self.problems_panel.count()
        self.problems_dock.setWindowTitle(f"Problems ({count})")
        self.fold_problems(count == 0)

    def _target_findings(self) -> list[Finding]:
        """The picked target's refusals and fallbacks (Targets dock), once checked."""
        panel = getattr(self, "targets_panel", None)
        return [] if panel is None else target_findings(self.workspace, panel.target)

    def _quant_findings(self) -> list[Finding]:
        spec = self.workspace.quant.findings or []
        model = self.model
        known = {(f.subgraph, f.tensor) for f in (model.findings if model is not None else [])
                 if f.tensor is not None}
        return [Finding(f.severity, f"quantization spec [{f.rule}]", f.message, f.subgraph,
                        f.tensor, f.op) for f in spec
                if f.tensor is None or (f.subgraph, f.tensor) not in known]

    def update_stored_shapes(self) -> EditResult | None:
        """Write the computed shapes of every stale tensor into the model (one undo step)."""
        check = self.shape_check
        if check is None or not check.mismatches:
            self.statusBar().showMessage("Every stored shape matches what the operators compute", 8000)
            return None
        return self.apply_edit(UpdateStoredShapes({(m.subgraph, m.tensor): m.inferred
                                                   for m in check.mismatches}))
