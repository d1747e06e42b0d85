"""Writing computed shapes back into the model as one undoable edit.

After an edit that changes what an operator computes, the shapes stored for the tensors
after it are stale (`tflite_viewer.interpreter.shape_inference` finds them).  The edit
layer does not run the interpreter; whoever found the shapes hands them to
`UpdateStoredShapes`, which sets each tensor's shape (its shape_signature kept consistent:
dynamic -1 entries stay -1) and undoes all of them at once.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..model import EditError
from .commands import EditCommand, Scope, SetTensorShape
from .tree import ModelTree


class UpdateStoredShapes(EditCommand):
    """Set the stored shape of several tensors: ``{(subgraph, tensor): shape}``."""

    def __init__(self, shapes: Mapping[tuple[int, int], Sequence[int]]) -> None:
        super().__init__()
        if not shapes:
            raise EditError("no shapes to update")
        self.shapes = {(int(s), int(t)): tuple(int(d) for d in shape)
                       for (s, t), shape in sorted(shapes.items())}
        self._parts = [SetTensorShape(s, t, list(shape)) for (s, t), shape in self.shapes.items()]
        n = len(self._parts)
        self.description = f"Update {n} stored shape{'s' if n != 1 else ''} to the computed ones"

    def scope(self, tree: ModelTree) -> Scope:
        subgraphs = {s for s, _ in self.shapes}
        if len(subgraphs) == 1:
            (s,) = subgraphs
            return Scope(s, tensors={t for _, t in self.shapes})
        return Scope()

    def _check(self, tree: ModelTree) -> None:
        for part in self._parts:  # every shape is valid before any is set
            part._check(tree)

    def _do(self, tree: ModelTree) -> None:
        for part in self._parts:
            part._do(tree)
            part._applied = True
        # the parts' neighbourhood checks ran one tensor at a time against half-updated
        # shapes; only what still disagrees once all are set is worth a warning
        self.warnings = []

    def targets(self, tree: ModelTree) -> list | None:
        out: list = []
        for part in self._parts:
            out += part.targets(tree)
        return out

    def _undo(self, tree: ModelTree) -> None:
        for part in reversed(self._parts):
            part._undo(tree)
            part._applied = False
