"""The window's state is its open `Workspace`: the attributes the window's flows and
tests have always used (``window.model``, ``window.subgraph``, ``window.selection`` ...)
read and write the open workspace, so no copy of them lives on the window.

A mixin of `MainWindow`; ``self.hub`` (a `workspace.Hub`) owns the workspace.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..model import Model
from .state.workspace import Workspace


def _delegate(name: str, doc: str) -> property:
    def get(self) -> Any:
        return getattr(self.hub.workspace, name)

    def set_(self, value: Any) -> None:
        setattr(self.hub.workspace, name, value)
    return property(get, set_, doc=doc)


class WorkspaceState:
    """`MainWindow`'s per-model attributes, each a view of ``self.hub.workspace``."""

    model: Model | None = _delegate("model", "The open model (None before the first open).")
    path: Path | None = _delegate("path", "The file the model was opened from.")
    save_target: Path | None = _delegate("save_target", "Where Save writes.")
    subgraph: int = _delegate("subgraph", "The subgraph shown on the canvas.")
    trail: list = _delegate("trail", "The navigation trail to the shown subgraph.")
    scenes: dict = _delegate("scenes", "Subgraph -> SceneData laid out for this model.")
    selection = _delegate("selection", "The selected operator or tensor (a Selection).")
    shape_check = _delegate("shape_check", "Computed vs stored shapes (ShapeInference).")
    _references = _delegate("references", "Subgraph -> calls it makes, on demand.")
    _find_matches: list = _delegate("find_matches", "Find results in the shown subgraph.")
    _find_current = _delegate("find_current", "The Find result stepped to.")
    _session = _delegate("edit_session", "The edit session (document + undo stack).")

    @property
    def workspace(self) -> Workspace:
        """The open model's workspace (an empty one before the first open)."""
        return self.hub.workspace
