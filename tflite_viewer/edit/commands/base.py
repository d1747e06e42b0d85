"""The base of every edit command, what it touches (`Scope`), and the lookups that turn
indices into tree objects or refuse them with `EditError` before anything changes."""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...model.errors import EditError
from ..patch import FieldTarget
from ..tree import ModelTree, text


@dataclass
class Scope:
    """What a command touches, by index in the state it applies to."""

    subgraph: int | None = None
    operators: set[int] = field(default_factory=set)
    tensors: set[int] = field(default_factory=set)
    structural: bool = False  # operators/tensors added or removed: views must rebuild


class EditCommand:
    """Base of every edit.  Subclasses implement `_check`, `_do` and `_undo`."""

    description = "edit"
    #: whether the edit can change what LiteRT's op versioning reads (types, shapes,
    #: quantization, options, constness of its operators' tensors); if not, the document
    #: does not recompute the versions of the operators in its scope
    changes_op_signatures = True

    def __new__(cls, *args: Any, **kwargs: Any) -> "EditCommand":
        self = super().__new__(cls)
        self._call = (args, kwargs)  # the call that made it: see `arguments`
        return self

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self._applied = False

    def arguments(self) -> dict[str, Any]:
        """The arguments the command was made with, by parameter name (defaults left out).

        A command is a pure function of its arguments and the state it is applied to, so
        ``type(cmd)(**cmd.arguments())`` applied to the same state makes the same edit:
        the recovery journal (`edit.journal`) stores exactly this."""
        args, kwargs = self._call
        bound = inspect.signature(type(self).__init__).bind(self, *args, **kwargs)
        return {k: v for k, v in list(bound.arguments.items())[1:]}

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.description}>"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope()

    def targets(self, tree: ModelTree) -> list[FieldTarget] | None:
        """After `apply`: every field the command changed, if all of them are fixed-size
        fields of tables that were already there (see `patch`); None otherwise.

        The document then overwrites those bytes in place instead of re-serializing.
        """
        return None

    def apply(self, tree: ModelTree) -> None:
        """Check, then change the tree; raises EditError (tree untouched) when invalid."""
        if self._applied:
            raise EditError(f"{self.description}: already applied")
        self.warnings = []
        self._check(tree)
        self._do(tree)
        self._applied = True

    def revert(self, tree: ModelTree) -> None:
        if not self._applied:
            raise EditError(f"{self.description}: not applied")
        self._undo(tree)
        self._applied = False

    # -- for subclasses ------------------------------------------------------------------
    def _check(self, tree: ModelTree) -> None:
        pass

    def _do(self, tree: ModelTree) -> None:
        raise NotImplementedError

    def _undo(self, tree: ModelTree) -> None:
        raise NotImplementedError


# -- lookups ---------------------------------------------------------------------------------

def lookup_subgraph(tree: ModelTree, s: int):
    subs = tree.model.subgraphs or []
    if not isinstance(s, int) or not 0 <= s < len(subs):
        raise EditError(f"subgraph {s} out of range (0..{len(subs) - 1})")
    return subs[s]


def _lookup_in_subgraph(tree: ModelTree, s: int, field: str, k: int, what: str):
    """(subgraph, item ``k`` of its ``field`` list), or the EditError naming the range."""
    sg = lookup_subgraph(tree, s)
    items = getattr(sg, field) or []
    if not isinstance(k, int) or not 0 <= k < len(items):
        raise EditError(f"subgraphs[{s}].{field}[{k}]: {what} index out of range "
                        f"(0..{len(items) - 1})")
    return sg, items[k]


def lookup_operator(tree: ModelTree, s: int, n: int):
    return _lookup_in_subgraph(tree, s, "operators", n, "operator")


def lookup_tensor(tree: ModelTree, s: int, t: int):
    return _lookup_in_subgraph(tree, s, "tensors", t, "tensor")


def utf8_name(value: Any, what: str) -> bytes:
    """Names are stored as UTF-8; refuse what cannot be (lone surrogates) before changing."""
    if not isinstance(value, str):
        raise EditError(f"{what} must be text, got {value!r}")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EditError(f"{what} cannot be stored as UTF-8: {exc.reason}") from None


def lookup_signature(tree: ModelTree, key: str):
    for sig in tree.model.signatureDefs or []:
        if text(sig.signatureKey) == key:
            return sig
    keys = ", ".join(text(s.signatureKey) for s in tree.model.signatureDefs or []) or "none"
    raise EditError(f"no signature {key!r} (signatures: {keys})")


def buffer_data(tree: ModelTree, t) -> np.ndarray | None:
    """A tensor's constant data as stored in the tree (None: no buffer or no data)."""
    bufs = tree.model.buffers or []
    if 0 < t.buffer < len(bufs):
        return None if bufs[t.buffer].data is None else np.asarray(bufs[t.buffer].data)
    return None
