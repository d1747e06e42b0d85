"""Running a model on samples and keeping every tensor of subgraph 0.

Two backends: this project's `Interpreter` (the default; every activation stays on its
runtime tensor after `invoke`, nothing is copied), or LiteRT with all tensors preserved
(``backend="litert"``, through the interpreter's cross-check runner in a child process),
so an analysis can be checked against, or computed on, LiteRT's own values.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..interpreter import Interpreter
from ..interpreter.inputs import input_specs
from ..model import Model
from .samples import Sample, model_inputs

BACKENDS = ("interpreter", "litert")


class ModelRunner:
    """Runs one model on samples; `run` returns {tensor index: array} of subgraph 0."""

    def __init__(self, model: Model, backend: str = "interpreter") -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        self.model = model
        self.backend = backend
        self.interpreter = Interpreter(model) if backend == "interpreter" else None
        self._names = [s.name for s in input_specs(model)]

    def run(self, sample: Sample, after_op: Callable | None = None) -> dict[int, np.ndarray]:
        """Every computed or constant tensor of subgraph 0 after running ``sample``.

        ``after_op(interpreter, event)`` is installed as an after-hook for this run (the
        per-layer fallback rewrites one op's output through it)."""
        arrays = model_inputs(self.model, sample)
        if self.backend == "litert":
            if after_op is not None:
                raise ValueError("op hooks need the interpreter backend")
            from ..interpreter.crosscheck import run_litert
            run = run_litert(self.model, dict(zip(self._names, arrays)),
                             resolver="BUILTIN_WITHOUT_DEFAULT_DELEGATES")
            return run.tensors
        interp = self.interpreter
        if after_op is not None:
            interp.add_hook("after", after_op)
        try:
            interp.invoke(arrays)
        finally:
            if after_op is not None:
                interp.remove_hook(after_op)
        return {t.index: t.data for t in interp.subgraphs[0].tensors if t.data is not None}
