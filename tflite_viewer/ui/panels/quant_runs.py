"""The Quantization dock's work on pool threads: the spec check of a model and the float
comparison, each for the workspace it was started for, and `QuantRun`, what every run
with progress and Cancel shares (the comparison here, `quant_fix.RequantizeRun`,
`quant_generation.GenerationRun`).

A run writes its result into its part of that workspace (`state.quant.quant_state`,
never into whatever is open when it ends) and tells the hub, which drops the news if
another model was opened since.
Each run has its own receiver, a child of the dock: results delivered after the dock is
gone are dropped by Qt.  A run's cancel flag is set when its workspace closes.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QObject, Signal

from ...model import load_model
from ...quant import analysis
from ...quant.spec import check_spec
from ..workers import Task
from ..state.quant import TOPIC, QuantState, findings_status, quant_state, report_summary
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


def _end_run(part: Any) -> None:
    """``part`` (a workspace's `quant_state` or `generation_state`) has no run under way."""
    part.run, part.cancel, part.running, part.progress = None, None, False, None


class QuantRun(QObject):
    """One run of the Quantization dock for ``ws`` on a pool thread, held as the run of
    its workspace part (`part_of`: the part's ``run``, ``cancel``, ``running``,
    ``progress`` and ``status``), so that the dock's progress bar and Cancel drive it.

    The run counts while it is `current`: still its part's run, on the model it started
    with.  A run cancelled, replaced or edited away drops its progress and its outcome.
    A subclass sets up its part, hands its work to `_start` and writes the result in
    `_succeeded`; a failure, or `Cancelled` from the work, ends in the status line."""

    progressed = Signal(int, int, str)  # emitted on the pool thread, delivered here
    #: the workspace part a run lives in, and the hub topic its changes go to
    part_of: Callable[[Workspace], Any] = staticmethod(quant_state)
    topic = TOPIC
    #: the status line when the work stopped on its cancel flag, and before a failure
    cancelled_status = "Cancelled."
    failed_status = "The comparison failed"

    def __init__(self, hub, ws: Workspace, on_progress: Callable[[int, int, str], None],
                 on_failed: Callable[[str], None], parent: QObject) -> None:
        super().__init__(parent)
        self.hub, self.ws, self.model = hub, ws, ws.model
        self.on_progress, self.on_failed = on_progress, on_failed
        self.cancel = threading.Event()
        ws.on_close(self.cancel.set)
        part = self.part_of(ws)
        part.run, part.cancel, part.running, part.progress = self, self.cancel, True, None
        self.progressed.connect(self._progressed)

    @classmethod
    def cancel_run(cls, hub, ws: Workspace) -> None:
        """Cancel: the run under way in ``ws``'s part stops (its worker sees the flag, and
        what it still delivers is no longer current)."""
        part = cls.part_of(ws)
        if part.run is None:
            return
        if part.cancel is not None:
            part.cancel.set()
        _end_run(part)
        part.status = "Cancelled."
        hub.changed(cls.topic, ws)

    def _start(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)`` on a pool thread, its outcome delivered to this run."""
        self.task = Task(fn, *args)
        self.task.signals.finished.connect(self._finished)
        self.task.signals.failed.connect(self._failed)
        self.task.start()

    @property
    def current(self) -> bool:
        """Whether this is still its workspace's run (not cancelled, replaced or edited)."""
        return self.part_of(self.ws).run is self and self.ws.model is self.model

    def _progressed(self, done: int, total: int, message: str) -> None:
        if self.current:
            self.part_of(self.ws).progress = (done, total, message)
            if self.ws is self.hub.workspace:
                self.on_progress(done, total, message)

    def _succeeded(self, part: Any, result: Any) -> None:
        """Write ``result`` into ``part`` (the run has ended) and tell the hub."""
        raise NotImplementedError

    def _ended(self) -> Any:
        """The part this run has ended in, or None when the run no longer counts."""
        self.deleteLater()
        if not self.current:
            return None
        part = self.part_of(self.ws)
        _end_run(part)
        return part

    def _finished(self, _serial: int, result: Any) -> None:
        part = self._ended()
        if part is not None:
            self._succeeded(part, result)

    def _failed(self, _serial: int, exc: BaseException) -> None:
        part = self._ended()
        if part is None:
            return
        if isinstance(exc, analysis.Cancelled):
            part.status = self.cancelled_status
            self.hub.changed(self.topic, self.ws)
            return
        part.status = f"{self.failed_status}: {exc}"
        if self.hub.changed(self.topic, self.ws):
            self.on_failed(part.status)


class FloatComparison(QuantRun):
    """One float comparison of ``ws``'s model on the samples ``kwargs`` name, described by
    ``inputs`` (see the module docstring)."""

    def __init__(self, hub, ws: Workspace, float_path: str | Path, kwargs: dict, inputs: str,
                 on_progress: Callable[[int, int, str], None],
                 on_failed: Callable[[str], None], parent: QObject) -> None:
        super().__init__(hub, ws, on_progress, on_failed, parent)
        q = quant_state(ws)
        q.report, q.float_path, q.inputs = None, Path(float_path), inputs
        cancel, progress, model = self.cancel, self.progressed, ws.model

        def work():
            fm = load_model(float_path)
            return analysis.analyze(model, fm, keep_values=True, cancel=cancel.is_set,
                                    progress=lambda d, t, m: progress.emit(d, t, m), **kwargs)
        self._start(work)

    def _succeeded(self, q: QuantState, report) -> None:
        q.report = report
        q.status = report_summary(report, q.inputs)
        self.hub.changed(TOPIC, self.ws)
