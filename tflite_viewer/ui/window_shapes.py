"""The window's shape check: stored shapes compared with what the operators compute.

Composed into `MainWindow` (``window.shapes``).  After every edit (and for an opened file, whose shapes another
tool may have left stale) the interpreter's shape propagation
(`interpreter.shape_inference`) runs over the model: edges then show the computed shape
where the stored one is stale, the tensor panel a "computed shape" row, Problems one row
per stale tensor (and per operator whose prepare fails), and Update Stored Shapes writes
them all as one undoable command.  Small models are checked at once; larger ones in a
worker, the result applied only if that model is still the one shown.
"""
from __future__ import annotations

import logging

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMainWindow

from ..edit import EditResult, UpdateStoredShapes
from ..interpreter.shape_inference import ShapeInference, infer_shapes
from ..model import Model
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


class ShapeCheck(QObject):
    """The shape check of `MainWindow` (see the module docstring)."""

    def __init__(self, window: QMainWindow) -> None:
        super().__init__(window)
        self.w = window
        self._tasks: dict[int, tuple] = {}  # background checks: (task, model)

    def set_check(self, check: ShapeInference | None) -> None:
        self.w.workspace.shape_check = check
        self.w.tensor_panel.shape_check = check
        self.w.actions.update_shapes.setEnabled(bool(check and check.mismatches))

    def check_edited(self, model: Model) -> bool:
        """Check an edited model at once when it is small (True: it is large, check it in
        the background once it is shown)."""
        if operator_count(model) <= CHECK_AT_ONCE_MAX_OPS:
            self.set_check(_infer_shapes(model))
            return False
        self.set_check(None)
        return True

    def check_opened(self, model: Model, wait: bool) -> None:
        """An opened file's stored shapes may be stale too (edited by another tool)."""
        if wait:
            self._checked(model, _infer_shapes(model))
        elif operator_count(model) <= CHECK_ON_OPEN_MAX_OPS:
            self.check_in_background(model)

    def check_in_background(self, model: Model) -> None:
        task = Task(_infer_shapes, model)
        self._tasks[task.serial] = (task, model)
        # bound methods of this child of the window, not lambdas holding it: a check that
        # ends after the window is gone is disconnected by Qt instead of reaching it
        task.signals.finished.connect(self._task_done)
        task.signals.failed.connect(self._task_failed)
        task.start()

    def _task_done(self, serial: int, check: ShapeInference | None) -> None:
        _task, model = self._tasks.pop(serial, (None, None))
        if model is not None:
            self._checked(model, check)

    def _task_failed(self, serial: int, _exc: BaseException) -> None:
        self._tasks.pop(serial, None)

    def _checked(self, model: Model, check: ShapeInference | None) -> None:
        """Show a check's result if ``model`` is still the one shown (the scene was built
        before it: relabel it when some stored shape is stale)."""
        if model is not self.w.model:  # replaced or edited since: that one is checked anew
            return
        self.set_check(check)
        if check is None or not (check.mismatches or check.failures):
            return
        current = self.w.graph_scene.data
        if current is not None and check.mismatches:
            sd = lay_out(model, self.w.subgraph, self.w.measure, current.layout,
                         self.computed_shapes(self.w.subgraph), self.w.composites.expand)
            self.w.workspace.scenes = {self.w.subgraph: sd}
            self.w.navigator.redisplay(sd)
            self.w.refresh_highlight(False)
        self.w.editing.refresh_panels()
        self.w.show_problems()

    def computed_shapes(self, subgraph: int) -> dict[int, tuple[int, ...]]:
        """Tensor -> computed shape, for the stale stored shapes of ``subgraph``."""
        check = self.w.shape_check
        if check is None:
            return {}
        return {m.tensor: m.inferred for m in check.mismatches if m.subgraph == subgraph}

    def update_stored_shapes(self) -> EditResult | None:
        """Write the computed shapes of every stale tensor into the model (one undo step)."""
        check = self.w.shape_check
        if check is None or not check.mismatches:
            self.w.statusBar().showMessage("Every stored shape matches what the operators compute", 8000)
            return None
        return self.w.apply_edit(UpdateStoredShapes({(m.subgraph, m.tensor): m.inferred
                                                   for m in check.mismatches}))
