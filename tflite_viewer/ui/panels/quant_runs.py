"""The Quantization dock's work on pool threads: the spec check of a model and the float
comparison, each for the workspace it was started for.

A run writes its result into the quantization part of that workspace
(`state.quant.quant_state`, never into whatever is open when it ends) and tells the hub,
which drops the news if another model was opened since.
Each run has its own receiver, a child of the dock: results delivered after the dock is
gone are dropped by Qt.  A comparison's cancel flag is set when its workspace closes.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QObject, Signal

from ...model import load_model
from ...quant import analysis
from ...quant.spec import check_spec
from ..workers import Task
from ..state.quant import TOPIC, findings_status, quant_state, report_summary
from ..state.workspace import Workspace


class SpecCheck(QObject):
    """Checks the quantization spec of ``ws``'s model (the first check loads the
    interpreter's kernels, hence a worker); ``done(ws)`` when the findings are in."""

    def __init__(self, hub, ws: Workspace, done: Callable[[Workspace], None], parent: QObject) -> None:
        super().__init__(parent)
        self.hub, self.ws, self.model, self.done = hub, ws, ws.model, done
        self.task = Task(check_spec, ws.model)
        self.task.signals.finished.connect(self._finished)
        self.task.signals.failed.connect(self._failed)
        self.task.start()

    def _finished(self, _serial: int, findings: list) -> None:
        self.deleteLater()
        ws = self.ws
        if ws.model is not self.model:  # edited since: that model is checked anew
            return
        q = quant_state(ws)
        q.findings = list(findings)
        if not q.running and q.report is None:
            q.status = findings_status(q.findings)
        if self.hub.changed(TOPIC, ws):
            self.done(ws)

    def _failed(self, serial: int, _exc: BaseException) -> None:
        self._finished(serial, [])


class FloatComparison(QObject):
    """One float comparison of ``ws``'s model on the samples ``kwargs`` name, described by
    ``inputs`` (see the module docstring)."""

    progressed = Signal(int, int, str)  # emitted on the pool thread, delivered here

    def __init__(self, hub, ws: Workspace, float_path: str | Path, kwargs: dict, inputs: str,
                 on_progress: Callable[[int, int, str], None],
                 on_failed: Callable[[str], None], parent: QObject) -> None:
        super().__init__(parent)
        self.hub, self.ws, self.model = hub, ws, ws.model
        self.on_progress, self.on_failed = on_progress, on_failed
        self.cancel = threading.Event()
        ws.on_close(self.cancel.set)
        q = quant_state(ws)
        q.run, q.cancel, q.running, q.progress = self, self.cancel, True, None
        q.report, q.float_path, q.inputs = None, Path(float_path), inputs
        self.progressed.connect(self._progressed)
        cancel, progress, model = self.cancel, self.progressed, ws.model

        def work():
            fm = load_model(float_path)
            return analysis.analyze(model, fm, keep_values=True, cancel=cancel.is_set,
                                    progress=lambda d, t, m: progress.emit(d, t, m), **kwargs)
        self.task = Task(work)
        self.task.signals.finished.connect(self._finished)
        self.task.signals.failed.connect(self._failed)
        self.task.start()

    @property
    def current(self) -> bool:
        """Whether this is still its workspace's comparison (not cancelled or replaced)."""
        return quant_state(self.ws).run is self and self.ws.model is self.model

    def _progressed(self, done: int, total: int, message: str) -> None:
        if self.current:
            quant_state(self.ws).progress = (done, total, message)
            if self.ws is self.hub.workspace:
                self.on_progress(done, total, message)

    def _finished(self, _serial: int, report) -> None:
        self.deleteLater()
        if not self.current:
            return
        q = quant_state(self.ws)
        q.run, q.cancel, q.running, q.progress = None, None, False, None
        q.report = report
        q.status = report_summary(report, q.inputs)
        self.hub.changed(TOPIC, self.ws)

    def _failed(self, _serial: int, exc: BaseException) -> None:
        self.deleteLater()
        if not self.current:
            return
        q = quant_state(self.ws)
        q.run, q.cancel, q.running, q.progress = None, None, False, None
        if isinstance(exc, analysis.Cancelled):
            q.status = "Cancelled."
            self.hub.changed(TOPIC, self.ws)
            return
        q.status = f"The comparison failed: {exc}"
        if self.hub.changed(TOPIC, self.ws):
            self.on_failed(q.status)
