"""Edit commands: small, reversible changes to a `ModelTree`.

Each command checks everything it can *before* touching the tree and raises `EditError`
if the edit is invalid, so a refused command changes nothing.  ``apply`` remembers what it
overwrote; ``revert`` puts exactly that back, so undo restores the byte-identical file.
A command is applied to the state it was created for: `ModelDocument` replays them in
order, as a QUndoStack replays its QUndoCommands (one EditCommand per QUndoCommand).

``scope`` names the operators and tensors a command touches (before it is applied), which
the document uses to recompute op versions and the UI to refresh and keep its selection.
``warnings`` lists what is legal but probably not what the user wants (shapes that stop
agreeing, per-channel scales on a per-tensor op, ...).
"""
from .activation import SplitFusedActivation
from .base import EditCommand, Scope
from .header import (
           RemoveMetadata,
           RenameSignature,
           RenameSignatureTensor,
           SetDescription,
           SetMetadata,
)
from .memory import ReorderOperators, SetOfflineMemoryPlan
from .operators import ExposeTensor, RemoveOperator, SetOpVersion
from .options import RemoveCustomOption, SetCustomOption, SetOption
from .tensors import RenameTensor, ReplaceTensorData, SetQuantization, SetTensorShape

__all__ = ["EditCommand", "ExposeTensor", "RemoveCustomOption", "RemoveMetadata", "RemoveOperator",
           "RenameSignature", "RenameSignatureTensor", "RenameTensor", "ReorderOperators",
           "ReplaceTensorData", "Scope", "SetCustomOption", "SetDescription", "SetMetadata",
           "SetOfflineMemoryPlan", "SetOpVersion", "SetOption", "SetQuantization",
           "SetTensorShape", "SplitFusedActivation"]
