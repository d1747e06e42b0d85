"""Signatures, the model description and its metadata entries."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...model.errors import EditError
from ...schema import schema_generated as S
from ..patch import FieldTarget
from ..splice import VectorShrink
from ..tree import ModelTree, text
from .base import EditCommand, lookup_signature, utf8_name

# -- signatures ------------------------------------------------------------------------------

class RenameSignature(EditCommand):
    changes_op_signatures = False  # no operator changes

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new
        self._sig: Any = None
        self._prev: Any = None
        self.description = f"Rename signature {old!r} to {new!r}"

    def _check(self, tree: ModelTree) -> None:
        sig = lookup_signature(tree, self.old)
        self._raw = utf8_name(self.new, "a signature key")
        if not self.new:
            raise EditError("a signature key must be non-empty text")
        if self.new != self.old and any(text(s.signatureKey) == self.new
                                        for s in tree.model.signatureDefs or []):
            raise EditError(f"a signature {self.new!r} already exists")
        self._sig = sig

    def _do(self, tree: ModelTree) -> None:
        self._prev = self._sig.signatureKey
        self._sig.signatureKey = self._raw

    def targets(self, tree: ModelTree) -> list | None:
        k = next(i for i, s in enumerate(tree.model.signatureDefs) if s is self._sig)
        return [FieldTarget((("signature_defs", k),), "tflite.SignatureDef", "signature_key",
                            self._raw, owner=self._sig)]

    def _undo(self, tree: ModelTree) -> None:
        self._sig.signatureKey = self._prev


class RenameSignatureTensor(EditCommand):
    """Rename one input or output name of a signature (what signature runners are called with)."""
    changes_op_signatures = False  # no operator changes


    def __init__(self, key: str, kind: str, old: str, new: str) -> None:
        super().__init__()
        self.key, self.kind, self.old, self.new = key, kind, old, new
        self._tm: Any = None
        self._prev: Any = None
        self.description = f"Rename signature {key!r} {kind[:-1]} {old!r} to {new!r}"

    def _check(self, tree: ModelTree) -> None:
        if self.kind not in ("inputs", "outputs"):
            raise EditError(f"kind must be 'inputs' or 'outputs', not {self.kind!r}")
        sig = lookup_signature(tree, self.key)
        maps = sig.inputs if self.kind == "inputs" else sig.outputs
        maps = maps or []
        names = [text(m.name) for m in maps]
        if self.old not in names:
            raise EditError(f"signature {self.key!r} has no {self.kind[:-1]} {self.old!r} "
                            f"({self.kind}: {', '.join(names) or 'none'})")
        self._raw = utf8_name(self.new, "a signature tensor name")
        if not self.new:
            raise EditError("a signature tensor name must be non-empty text")
        if self.new != self.old and self.new in names:
            raise EditError(f"signature {self.key!r} already has an {self.kind[:-1]} {self.new!r}")
        self._tm = maps[names.index(self.old)]

    def _do(self, tree: ModelTree) -> None:
        self._prev = self._tm.name
        self._tm.name = self._raw

    def targets(self, tree: ModelTree) -> list | None:
        for i, sig in enumerate(tree.model.signatureDefs or []):
            maps = (sig.inputs if self.kind == "inputs" else sig.outputs) or []
            for j, m in enumerate(maps):
                if m is self._tm:
                    return [FieldTarget((("signature_defs", i), (self.kind, j)),
                                        "tflite.TensorMap", "name", self._raw, owner=m)]
        return None

    def _undo(self, tree: ModelTree) -> None:
        self._tm.name = self._prev


# -- model header ----------------------------------------------------------------------------

class SetDescription(EditCommand):
    changes_op_signatures = False  # no operator changes

    def __init__(self, description: str) -> None:
        super().__init__()
        self.text = description
        self._prev: Any = None
        self.description = f"Set the model description to {description!r}"

    def _check(self, tree: ModelTree) -> None:
        self._raw = utf8_name(self.text, "the description")

    def _do(self, tree: ModelTree) -> None:
        self._prev = tree.model.description
        tree.model.description = self._raw

    def targets(self, tree: ModelTree) -> list | None:
        return [FieldTarget((), "tflite.Model", "description", self._raw)]

    def _undo(self, tree: ModelTree) -> None:
        tree.model.description = self._prev


class SetMetadata(EditCommand):
    """Add or replace a metadata entry (its bytes go in a buffer of their own)."""
    changes_op_signatures = False  # no operator changes


    def __init__(self, name: str, value: bytes | str) -> None:
        super().__init__()
        self.name = name
        self.value = value
        self._saved: Any = None
        self.description = f"Set metadata {name!r}"

    def _check(self, tree: ModelTree) -> None:
        self._name = utf8_name(self.name, "a metadata name")
        if not self.name:
            raise EditError("a metadata name must be non-empty text")
        raw = utf8_name(self.value, f"metadata {self.name!r}") if isinstance(self.value, str) else self.value
        if not isinstance(raw, (bytes, bytearray, memoryview, np.ndarray)):
            raise EditError(f"metadata {self.name!r}: expected text or bytes")
        self._raw = np.frombuffer(bytes(raw), dtype=np.uint8).copy()
        self.description = f"Set metadata {self.name!r} ({self._raw.size} bytes)"

    def _do(self, tree: ModelTree) -> None:
        m = tree.model
        buf = S.BufferT()
        buf.data = self._raw
        if m.buffers is None:
            m.buffers = [S.BufferT()]
        m.buffers.append(buf)
        entries = m.metadata if m.metadata is not None else []
        match = [e for e in entries if text(e.name) == self.name]
        if match:
            self._saved = ("replace", match[0], match[0].buffer, m.metadata)
            match[0].buffer = len(m.buffers) - 1
        else:
            entry = S.MetadataT()
            entry.name = self._name
            entry.buffer = len(m.buffers) - 1
            self._saved = ("add", None, None, m.metadata)
            m.metadata = list(entries) + [entry]

    def _undo(self, tree: ModelTree) -> None:
        kind, entry, old_buffer, old_list = self._saved
        tree.model.buffers.pop()
        if kind == "replace":
            entry.buffer = old_buffer
        tree.model.metadata = old_list


class RemoveMetadata(EditCommand):
    """Remove a metadata entry (its buffer stays, emptied of nothing: indices must not move)."""
    changes_op_signatures = False  # no operator changes


    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self._old: Any = None
        self.description = f"Remove metadata {name!r}"

    def _check(self, tree: ModelTree) -> None:
        names = [text(e.name) for e in tree.model.metadata or []]
        if self.name not in names:
            raise EditError(f"no metadata {self.name!r} (metadata: {', '.join(names) or 'none'})")

    def _do(self, tree: ModelTree) -> None:
        self._old = tree.model.metadata
        tree.model.metadata = [e for e in self._old if text(e.name) != self.name]

    def targets(self, tree: ModelTree) -> list | None:
        keep = tuple(k for k, e in enumerate(self._old) if text(e.name) != self.name)
        return [VectorShrink((), "tflite.Model", "metadata", keep)]

    def _undo(self, tree: ModelTree) -> None:
        tree.model.metadata = self._old
