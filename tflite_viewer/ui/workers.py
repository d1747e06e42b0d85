"""Running the slow parts of opening a model (parse, graph, layout) off the GUI thread.

A `Task` wraps a plain function in a QRunnable for the global QThreadPool; its result or
exception comes back through Qt signals, which Qt delivers on the GUI thread (queued,
because the receivers live there).  Every task carries a serial number so the window can
drop results that a newer request has made stale (open A, then B before A finished).
Before the process exits, `ui.app.drain_workers` lets running tasks finish.
"""
from __future__ import annotations

import contextlib
import gc
import itertools
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from ..model import Model, load_model
from .graph_scene import plan_scene
from .state.scene_data import SceneData, TextMeasure, build_scene_data
from .state.summary import ModelSummary, summarize

log = logging.getLogger(__name__)
_serial = itertools.count(1)


class TaskSignals(QObject):
    finished = Signal(int, object)  # serial, result
    failed = Signal(int, object)  # serial, exception


class Task(QRunnable):
    """``fn(*args)`` on a pool thread; ``signals.finished`` / ``signals.failed`` report back."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        super().__init__()
        self.serial = next(_serial)
        self.signals = TaskSignals()
        self._fn = fn
        self._args = args
        self.setAutoDelete(True)

    def run(self) -> None:
        try:
            result = self._fn(*self._args)
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the window
            self._report(self.signals.failed, exc)
        else:
            self._report(self.signals.finished, result)

    def _report(self, signal, value: Any) -> None:
        """Emit the outcome; when the process is already tearing Qt down (the window closed
        and its objects deleted while this task ran) there is nobody left to tell, and
        PySide's "Signal source has been deleted" is not worth a traceback at exit."""
        try:
            signal.emit(self.serial, value)
        except RuntimeError:
            log.debug("task %d finished after its receiver was deleted", self.serial)

    def start(self, pool: QThreadPool | None = None) -> int:
        (pool or QThreadPool.globalInstance()).start(self)
        return self.serial


@dataclass
class Opened:
    """What opening a file produces: the model and the first subgraph, laid out."""

    path: Path | None
    model: Model
    scene: SceneData
    summary: ModelSummary
    seconds: float


def open_model(source: str | Path | bytes, subgraph: int | str | None,
               measure: TextMeasure, section: int | None = None,
               expand: bool = False) -> Opened:
    """Parse, build the graph and lay out the requested subgraph (runs in a worker);
    ``section``: the TFLite section of a .litertlm container (the first by default);
    ``expand``: composites drawn expanded (View > Fold Composites off)."""
    start = time.perf_counter()
    model = load_model(source, section=section)
    index = model.subgraph_index(subgraph)
    scene = lay_out(model, index, measure, expand=expand)
    summary = summarize(model)
    seconds = time.perf_counter() - start
    path = Path(source) if isinstance(source, (str, Path)) else None
    log.info("opened %s in %.3f s", path or "bytes", seconds)
    return Opened(path, model, scene, summary, seconds)


def lay_out(model: Model, subgraph: int, measure: TextMeasure, reuse_layout=None,
            computed_shapes: dict | None = None, expand: bool = False) -> SceneData:
    """Graph, layout and canvas chunks of one subgraph of an open model (runs in a worker).

    ``reuse_layout``: the layout of the same subgraph before an edit that kept its structure;
    ``computed_shapes``: stale tensors' computed shapes (see `build_scene_data`)."""
    with _no_gc():
        scene = build_scene_data(model, subgraph, measure, reuse_layout=reuse_layout,
                                 computed_shapes=computed_shapes, expand_composites=expand)
        scene.plan = plan_scene(scene, measure)
    return scene


@contextlib.contextmanager
def _no_gc():
    """Pause the cyclic garbage collector while a scene is built.

    The build makes a few hundred thousand short-lived objects with no reference cycles;
    the collector would walk all of them several times (a quarter of the time on a
    20,000-operator graph) and find nothing to free.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
