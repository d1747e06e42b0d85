"""ModelDocument: an open model, its edits, and their undo history.

Every change goes the same way (docs/ARCHITECTURE.md, "Three data flows"): the command
mutates the object tree -> op versions that became too low are raised and ``min_runtime_version`` follows ->
the tree is checked -> written -> re-read with `load_model` -> listeners get the new
`Model`.  So what the UI shows is always a model that was just serialized and read back:
what you see is what you export.  If any step fails, everything done so far is reverted
and an `EditError` says why; the document does not change.

Undo and redo replay commands (``revert`` / ``apply``), not stored files, so memory stays
flat for large models, and every state of the history has one byte string (the tests
check that undo and redo give it back byte for byte).

Fast path.  An edit that only changes fixed-size fields the file already stores (an
option's stride or activation, an op version that is stored, quantization scales of the
same count, a constant's bytes) is written by overwriting those bytes of the previous
state's bytes (`patch`), then re-read like any other; the object tree is changed too, so a
later full serialize sees it.  So the bytes of a state are defined as:

* state 0: the opened file as it is (with ``layout="auto"``), else the tree serialized;
* after a *patched* edit: the previous state's bytes with the edit's patches;
* after any other edit: the tree serialized (`writer.serialize`).

Undoing a patched edit writes the old bytes back.  Undoing a serialized edit rebuilds the
previous state from its definition: the last serialized state before it (re-serialized
from the tree, rolled back to it for the moment) or the opened file, plus the patches
made since.

Qt: wrap each applied command in one QUndoCommand whose ``redo()`` calls
``document.redo()`` (skipping the first call, made by ``push``) and whose ``undo()`` calls
``document.undo()``; the document's history then moves in step with the QUndoStack.
"""
from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..model.errors import EditError, ModelFormatError
from ..model.loader import load_model
from ..model.metadata import MIN_RUNTIME_VERSION
from ..model.model import Model
from .commands import EditCommand, Scope
from .coldiff import changes as column_changes
from .op_version import op_required_version
from .runtime_version import (encode_min_runtime, min_runtime_version, runtime_less)
from .tree import ModelTree, text, unpack
from .patch import FieldTarget, Locator, Patch, apply_patches, plan
from .validate import check_tree, new_errors
from .writer import serialize


@dataclass(frozen=True)
class VersionRaise:
    """An operator code whose version an edit raised (as the converter would)."""

    opcode_index: int
    op: str
    old: int
    new: int

    def __str__(self) -> str:
        return f"{self.op} (operator_codes[{self.opcode_index}]) version {self.old} -> {self.new}"


@dataclass
class EditResult:
    """What one apply / undo / redo did: passed to listeners and returned to the caller."""

    kind: str  # "apply" | "undo" | "redo"
    description: str
    scope: Scope
    warnings: list[str] = field(default_factory=list)
    raised_versions: list[VersionRaise] = field(default_factory=list)
    min_runtime_version: str | None = None  # the model's value after the change
    min_runtime_changed: tuple[str, str] | None = None  # (old, new)

    def lines(self) -> list[str]:
        out = [self.description]
        out += [f"  raised {r}" for r in self.raised_versions]
        if self.min_runtime_changed:
            old, new = self.min_runtime_changed
            out.append(f"  min_runtime_version {old or '(none)'} -> {new}")
        out += [f"  warning: {w}" for w in self.warnings]
        return out


@dataclass
class _Record:
    """One history entry: the command and what the document changed automatically after it."""

    command: EditCommand
    raised: list[tuple[Any, int, int]] = field(default_factory=list)  # (OperatorCodeT, old, new)
    runtime: tuple[Any, Any, Any] | None = None  # (BufferT, old data, new data)
    result: EditResult | None = None
    patches: list[Patch] | None = None  # the bytes it overwrote (None: it re-serialized)


Listener = Callable[[Model, EditResult], None]


class ModelDocument:
    """An editable model.  ``document.model`` is always the model as it would be saved."""

    def __init__(self, source: Model | str | os.PathLike | bytes, layout: str = "auto") -> None:
        self.original: Model = source if isinstance(source, Model) else load_model(source)
        self.path: Path | None = self.original.path
        self.model: Model = self.original
        self.layout = layout
        self._tree: ModelTree = unpack(self.original)
        self._bytes: bytes | None = None  # this state's bytes (None: state 0, not made yet)
        self._locator: Locator | None = None
        self.fast_path_enabled = True
        self._history: list[_Record] = []
        self._index = 0  # records [0, index) are applied
        self._clean = 0
        self._listeners: list[Listener] = []

    # -- listeners ---------------------------------------------------------------------------
    def subscribe(self, callback: Listener) -> Callable[[], None]:
        """Call ``callback(model, result)`` after every apply/undo/redo; returns an unsubscribe."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def _notify(self, result: EditResult) -> None:
        for callback in list(self._listeners):
            callback(self.model, result)

    # -- history -----------------------------------------------------------------------------
    @property
    def can_undo(self) -> bool:
        return self._index > 0

    @property
    def can_redo(self) -> bool:
        return self._index < len(self._history)

    @property
    def undo_text(self) -> str:
        return self._history[self._index - 1].command.description if self.can_undo else ""

    @property
    def redo_text(self) -> str:
        return self._history[self._index].command.description if self.can_redo else ""

    @property
    def history(self) -> list[str]:
        """Descriptions of every command, applied ones first (see `history_index`)."""
        return [r.command.description for r in self._history]

    @property
    def history_index(self) -> int:
        return self._index

    @property
    def is_modified(self) -> bool:
        """Whether the document differs from the file it was opened from (or last saved to)."""
        return self._index != self._clean

    @property
    def tree(self) -> ModelTree:
        """The object tree (read it; change it only through commands)."""
        return self._tree

    # -- edits -------------------------------------------------------------------------------
    def apply(self, command: EditCommand) -> EditResult:
        """Apply a command, or raise EditError and change nothing.  Clears the redo history."""
        record = _Record(command)
        result = self._execute(record, "apply")
        del self._history[self._index:]
        if self._clean > self._index:
            self._clean = -1  # the saved state can no longer be reached
        self._history.append(record)
        self._index += 1
        self._notify(result)
        return result

    def undo(self) -> EditResult:
        if not self.can_undo:
            raise EditError("nothing to undo")
        record = self._history[self._index - 1]
        self._revert_auto(record)
        record.command.revert(self._tree)
        try:
            if record.patches is not None:
                self._set_bytes(apply_patches(self._current(), record.patches, reverse=True),
                                self._index - 1)
            else:
                self._set_bytes(self._rebuild(self._index - 1), self._index - 1)
        except Exception:
            record.command.apply(self._tree)
            self._reapply_auto(record)
            raise
        self._index -= 1
        result = EditResult("undo", f"Undo: {record.command.description}",
                            record.result.scope if record.result else Scope(),
                            min_runtime_version=self.model.min_runtime_version)
        self._notify(result)
        return result

    def redo(self) -> EditResult:
        if not self.can_redo:
            raise EditError("nothing to redo")
        record = self._history[self._index]
        record.raised, record.runtime, record.patches = [], None, None
        result = self._execute(record, "redo")
        self._index += 1
        self._notify(result)
        return result

    def _execute(self, record: _Record, kind: str) -> EditResult:
        tree = self._tree
        command = record.command
        scope = command.scope(tree)
        affected = self._affected(scope)
        before = {op: op_required_version(tree.model, sg, op) for sg, op in affected}
        versions = [int(c.version) for c in tree.model.operatorCodes or []]
        command.apply(tree)  # raises EditError with the tree untouched
        try:
            self._raise_versions(record, scope, affected, before)
            self._update_runtime(record, versions)
            check_tree(tree)
            previous = self.model
            patches = self._plan(record)
            if patches is not None:
                self._publish_bytes(apply_patches(self._current(), patches),
                                    check_against=previous)
                record.patches = patches
            else:
                self._publish(check_against=previous)
        except Exception as exc:
            self._revert_auto(record)
            command.revert(tree)
            if isinstance(exc, EditError):
                raise
            if isinstance(exc, ModelFormatError):
                raise EditError(f"{command.description}: the result is not a valid model: "
                                f"{exc}") from None
            raise
        result = EditResult(
            kind, command.description if kind == "apply" else f"Redo: {command.description}",
            scope, list(command.warnings),
            [VersionRaise(self._code_index(c), self._code_name(c), old, new)
             for c, old, new in record.raised],
            self.model.min_runtime_version,
            None if record.runtime is None else (
                _runtime_text(record.runtime[1]), self.model.min_runtime_version or ""))
        record.result = result
        return result

    def _publish(self, check_against: Model | None = None) -> None:
        """Serialize and re-read the tree; make it the document's model."""
        self._publish_bytes(serialize(self._tree, self.layout), check_against)

    def _publish_bytes(self, data: bytes, check_against: Model | None = None) -> None:
        model = load_model(data)
        if check_against is not None:
            errors = new_errors(check_against, model)
            if errors:
                raise EditError(f"the edit would make the model invalid: {errors[0]}")
        self._bytes = data
        self.model = model

    def _set_bytes(self, data: bytes, state: int) -> None:
        """Make ``data`` (the bytes of ``state``) the document's model."""
        if state == 0 and self.layout == "auto":  # the opened file itself
            self._bytes, self.model = None, self.original
            return
        self._publish_bytes(data)

    # -- the bytes of a state ----------------------------------------------------------------
    def _original_bytes(self):
        return self.original.data

    def _current(self):
        """This state's bytes (a bytes-like object; the opened file's at state 0)."""
        if self._bytes is not None:
            return self._bytes
        if self.layout == "auto":
            return self._original_bytes()
        return self.to_bytes()

    def _plan(self, record: _Record) -> list[Patch] | None:
        """The patches that make this edit, if it is a fast-path edit (see the docstring)."""
        if not self.fast_path_enabled or (self._index == 0 and self.layout != "auto"):
            return None  # state 0 is then the serialized tree, not the model shown: slow
        targets = record.command.targets(self._tree)
        if targets is None:
            return None
        targets = list(targets)
        for code, _old, new in record.raised:
            targets.append(FieldTarget((("operator_codes", self._code_index(code)),),
                                       "tflite.OperatorCode", "version", new))
        if record.runtime is not None:
            buf, _old, new = record.runtime
            k = next((i for i, b in enumerate(self._tree.model.buffers or []) if b is buf), -1)
            if k < 0:
                return None
            targets.append(FieldTarget((("buffers", k),), "tflite.Buffer", "data", new))
        if self._locator is None or self._locator.model is not self.model:
            self._locator = Locator(self.model)
        return plan(self._locator, targets)

    def _rebuild(self, state: int) -> bytes:
        """The bytes of ``state`` (the tree is at that state): see the module docstring."""
        last = state - 1
        while last >= 0 and self._history[last].patches is not None:
            last -= 1
        patched = self._history[last + 1:state]
        patches = [p for r in patched for p in r.patches]
        if last < 0 and self.layout == "auto":
            return apply_patches(self._original_bytes(), patches)
        tree = self._tree
        for r in reversed(patched):
            self._revert_auto(r)
            r.command.revert(tree)
        try:
            base = serialize(tree, self.layout)
        finally:
            for r in patched:
                r.command.apply(tree)
                self._reapply_auto(r)
        return apply_patches(base, patches)

    # -- automatic follow-ups ------------------------------------------------------------------
    def _affected(self, scope: Scope) -> list[tuple[Any, Any]]:
        """(subgraph, operator) pairs whose version may change with this scope."""
        subs = self._tree.model.subgraphs or []
        if scope.subgraph is None or not 0 <= scope.subgraph < len(subs):
            return []
        sg = subs[scope.subgraph]
        ops = sg.operators or []
        out = [ops[k] for k in scope.operators if 0 <= k < len(ops)]
        if scope.tensors:
            for op in ops:
                idx = set()
                if op.inputs is not None:
                    idx.update(int(i) for i in op.inputs)
                if op.outputs is not None:
                    idx.update(int(i) for i in op.outputs)
                if idx & scope.tensors:
                    out.append(op)
        seen: dict[int, Any] = {}
        for op in out:
            seen.setdefault(id(op), op)
        return [(sg, op) for op in seen.values()]

    def _raise_versions(self, record: _Record, scope: Scope, affected, before) -> None:
        """Raise operator-code versions the edit made too low (never lower one)."""
        tree = self._tree
        subs = tree.model.subgraphs or []
        present = set()
        if scope.subgraph is not None and 0 <= scope.subgraph < len(subs):
            present = {id(op) for op in subs[scope.subgraph].operators or []}
        after = [(sg, op) for sg, op in affected if id(op) in present]
        after += [p for p in self._affected(Scope(scope.subgraph, set(), scope.tensors))
                  if p[1] not in before]
        for sg, op in after:
            need = op_required_version(tree.model, sg, op)
            if need is None:
                continue
            was = before.get(op)
            code = tree.model.operatorCodes[op.opcodeIndex]
            if need > code.version and (was is None or need > was):
                record.raised.append((code, int(code.version), need))
                code.version = need

    def _update_runtime(self, record: _Record, versions: list[int]) -> None:
        """Follow op-version changes in ``min_runtime_version`` (never lowering it)."""
        m = self._tree.model
        now = [int(c.version) for c in m.operatorCodes or []]
        if now == versions:
            return
        entry = next((e for e in m.metadata or [] if text(e.name) == MIN_RUNTIME_VERSION), None)
        if entry is None or not 0 < entry.buffer < len(m.buffers or []):
            return
        buf = m.buffers[entry.buffer]
        old = _runtime_text(buf.data)
        used = {int(op.opcodeIndex) for sg in m.subgraphs or [] for op in sg.operators or []}
        pairs = []
        for k in sorted(used):
            if k < len(m.operatorCodes):
                code = m.operatorCodes[k]
                pairs.append((_code_name_of(code), int(code.version)))
        needed = min_runtime_version(pairs)
        if not needed or not runtime_less(old, needed):
            return
        size = max(16, len(buf.data) if buf.data is not None else 0)
        new = np.frombuffer(encode_min_runtime(needed, size), dtype=np.uint8).copy()
        record.runtime = (buf, buf.data, new)
        buf.data = new

    def _revert_auto(self, record: _Record) -> None:
        if record.runtime is not None:
            buf, old, _new = record.runtime
            buf.data = old
        for code, old, _new in reversed(record.raised):
            code.version = old

    def _reapply_auto(self, record: _Record) -> None:
        for code, _old, new in record.raised:
            code.version = new
        if record.runtime is not None:
            buf, _old, new = record.runtime
            buf.data = new

    def _code_index(self, code) -> int:
        for k, c in enumerate(self._tree.model.operatorCodes or []):
            if c is code:
                return k
        return -1

    def _code_name(self, code) -> str:
        return _code_name_of(code)

    # -- output ------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The model as it would be saved (serialized now if nothing was edited yet)."""
        if self._bytes is None:
            if self.layout == "auto" and self._index == 0:
                self._bytes = self._original_bytes().tobytes()
            else:
                self._bytes = serialize(self._tree, self.layout)
        return self._bytes

    def changes(self) -> list[str]:
        """What differs from the original file, field by field (schema names)."""
        if self.model is self.original:
            return []
        return [_annotate(line, self._tree.model) for line in
                column_changes(self.original, self.model, self._tree.model)]

    def save(self, path: str | os.PathLike, overwrite_original: bool = False) -> Path:
        """Write the model: to a temporary file in the target's directory, then rename.

        Refuses to replace the file the document was opened from unless asked; keeps the
        permissions of the file it replaces (or of the opened file for a new path).
        """
        target = Path(path)
        if self.path is not None and target.exists() and not overwrite_original:
            try:
                same = os.path.samefile(target, self.path)
            except OSError:
                same = False
            if same:
                raise EditError(f"{target} is the opened model; save elsewhere or pass "
                                "overwrite_original=True")
        data = self.to_bytes()
        mode = None
        for ref in (target, self.path):
            if ref is not None and Path(ref).exists():
                mode = stat.S_IMODE(os.stat(ref).st_mode)
                break
        directory = target.parent if str(target.parent) else Path(".")
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            if mode is not None:
                os.chmod(tmp, mode)
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, target)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        self._clean = self._index
        return target


def _annotate(line: str, model) -> str:
    """Say what a changed buffer is: ``buffers[27].data: ... (metadata min_runtime_version)``."""
    if not line.startswith("buffers["):
        return line
    try:
        k = int(line[len("buffers["):line.index("]")])
    except ValueError:
        return line
    owners = [f"metadata {text(e.name)}" for e in model.metadata or [] if e.buffer == k]
    owners += [f"tensor {text(t.name)!r}" for sg in model.subgraphs or []
               for t in sg.tensors or [] if t.buffer == k][:3]
    return f"{line} ({', '.join(owners)})" if owners else line


def _runtime_text(data) -> str:
    if data is None:
        return ""
    return bytes(np.asarray(data, dtype=np.uint8)).split(b"\0", 1)[0].decode("ascii", "replace")


def _code_name_of(code) -> str:
    from ..model.opcodes import BUILTIN_NAMES
    c = max(int(code.builtinCode), int(code.deprecatedBuiltinCode))
    return BUILTIN_NAMES.get(c, str(c))

