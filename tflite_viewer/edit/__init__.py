"""Changing models: a document with undoable commands, op versioning, and the writer.

>>> from tflite_viewer.edit import ModelDocument, SetOption
>>> doc = ModelDocument("model.tflite")
>>> result = doc.apply(SetOption(0, 3, "dilation_w_factor", 2))
>>> result.raised_versions, doc.changes()
>>> doc.save("fixed.tflite")
"""
from .commands import (EditCommand, ExposeTensor, RemoveCustomOption, RemoveMetadata,
                       RemoveOperator, RenameSignature, RenameSignatureTensor, RenameTensor,
                       ReorderOperators, ReplaceTensorData, Scope, SetCustomOption,
                       SetDescription, SetMetadata, SetOfflineMemoryPlan, SetOpVersion,
                       SetOption, SetQuantization, SetTensorShape, SplitFusedActivation)
from .document import EditResult, ModelDocument
from .followups import VersionRaise
from .journal import Journal, default_folder
from .journal_format import JournalError
from .recovery import Recovery, pending_recoveries
from .shape_commands import UpdateStoredShapes
from .tree import ModelTree, unpack
from .writer import serialize

__all__ = [
    "EditCommand", "EditResult", "ExposeTensor", "Journal", "JournalError", "ModelDocument",
    "ModelTree", "Recovery",
    "RemoveCustomOption", "RemoveMetadata", "RemoveOperator", "RenameSignature",
    "RenameSignatureTensor", "RenameTensor", "ReorderOperators", "ReplaceTensorData", "Scope",
    "SetCustomOption", "SetDescription", "SetMetadata", "SetOfflineMemoryPlan", "SetOpVersion", "SetOption", "SetQuantization",
    "SetTensorShape", "SplitFusedActivation", "UpdateStoredShapes", "VersionRaise", "default_folder",
    "pending_recoveries", "serialize", "unpack",
]
