"""ModelDocument: an open model, its edits, and their undo history.

Every change goes the same way (docs/ARCHITECTURE.md, "Three data flows"): the command
mutates the object tree -> op versions that became too low are raised and
``min_runtime_version`` follows (`followups`) -> the tree is checked -> written -> re-read
with `load_model` -> listeners get the new `Model`.  So what the UI shows is always a model that was just serialized and read back:
what you see is what you export.  If any step fails, everything done so far is reverted
and an `EditError` says why; the document does not change.

Undo and redo replay commands (``revert`` / ``apply``), not stored files, so memory stays
flat for large models, and every state of the history has one byte string (the tests
check that undo and redo give it back byte for byte).

Fast paths.  An edit that only changes fixed-size fields the file already stores (an
option's stride or activation, an op version that is stored, quantization scales of the
same count, a constant's bytes) is written by overwriting those bytes of the previous
state's bytes (`patch`).  Most other edits (a rename, a shape of another rank, a new
quantization table, an exposed output, a removed operator) are *spliced* (`splice`): the
new objects are appended and the references to them re-pointed; an inserted operator's
grown vectors go into a block at the front of the file (`front`).  Either way the result is
re-read like any other, and the object tree is changed too, so a later full serialize sees
it.  So the bytes of a state are defined as:

* state 0: the opened file as it is (with ``layout="auto"``), else the tree serialized;
* after a *patched* or *spliced* edit: the previous state's bytes with the edit's edits;
* after any other edit: the tree serialized (`writer.serialize`).

A state's bytes are `pieces.Pieces`: ranges of the opened file plus what changed, so an
edit of a 2.5 GB model neither copies nor reads its weights, and `save` streams them.
Undoing a patched or spliced edit restores the previous state's pieces (kept with the
edit: they share everything but the changed bytes).  Undoing a serialized edit rebuilds
the previous state from its definition: the last serialized state before it
(re-serialized from the tree, rolled back to it for the moment) or the opened file, plus
the edits made since.  The models of the last few states are kept, so an undo right
after an edit does not re-read anything.

Qt: wrap each applied command in one QUndoCommand whose ``redo()`` calls
``document.redo()`` (skipping the first call, made by ``push``) and whose ``undo()`` calls
``document.undo()``; the document's history then moves in step with the QUndoStack.
"""
from __future__ import annotations

import os
import stat
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..model.durable import replace_file
from ..model.errors import EditError, ModelFormatError
from ..model.loader import load_model
from ..model.model import Model
from .commands import EditCommand, Scope
from .coldiff import changes as column_changes
from .followups import FollowUps, VersionRaise, affected_ops
from .op_version import op_required_version
from .tree import ModelTree, text, unpack
from .patch import FieldTarget, Locator, Patch, plan
from .pieces import Pieces, SourceFile
from .sidefiles import copy_side_files
from .splice import plan_splice
from .validate import check_tree, new_errors
from .writer import serialize

if TYPE_CHECKING:
    from .journal import Journal


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
    auto: FollowUps = field(default_factory=FollowUps)  # versions and min_runtime_version
    result: EditResult | None = None
    patches: list[Patch] | None = None  # the bytes it overwrote (None: not patched)
    splice: list | None = None  # its `splice` edits (None: not spliced)
    before: Pieces | None = None  # the state's bytes before it (patched or spliced edits)

    def edits(self) -> list | None:
        """What it did to the previous state's bytes, if it did not re-serialize."""
        if self.patches is not None:
            return [(p.pos, len(p.new), p.new) for p in self.patches]
        return self.splice


Listener = Callable[[Model, EditResult], None]
_KEPT_MODELS = 4  # models of recent states kept for undo/redo (each holds its index)


class ModelDocument:
    """An editable model.  ``document.model`` is always the model as it would be saved."""

    def __init__(self, source: Model | str | os.PathLike | bytes, layout: str = "auto") -> None:
        self.original: Model = source if isinstance(source, Model) else load_model(source)
        self.path: Path | None = self.original.path
        self.model: Model = self.original
        self.layout = layout
        self._tree: ModelTree = unpack(self.original)
        self._source: SourceFile | None = None
        self._pieces: Pieces | None = None  # this state's bytes (None: state 0, not made yet)
        self._models: OrderedDict[int, tuple[Pieces, Model]] = OrderedDict()
        self._locator: Locator | None = None
        self.fast_path_enabled = True
        #: models from this many operators and tensors, or this many bytes, are spliced
        #: (`splice`) rather than re-serialized when an edit is not a plain patch
        self.splice_min_objects = 2000
        self.splice_min_bytes = 32 << 20
        self._history: list[_Record] = []
        self._index = 0  # records [0, index) are applied
        self._clean = 0
        self._listeners: list[Listener] = []
        #: the recovery journal following this document (`edit.journal.Journal` sets it)
        self.journal: Journal | None = None

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
    def history(self) -> list[str]:
        """Descriptions of every command, applied ones first (see `history_index`)."""
        return [r.command.description for r in self._history]

    @property
    def history_index(self) -> int:
        return self._index

    @property
    def commands(self) -> list[EditCommand]:
        """The history's commands, in order (the first `history_index` are applied)."""
        return [r.command for r in self._history]

    @property
    def clean_index(self) -> int:
        """The history position last saved (0: the opened file; -1: no longer reachable)."""
        return self._clean

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
        self._journal_change()
        self._notify(result)
        return result

    def undo(self) -> EditResult:
        if not self.can_undo:
            raise EditError("nothing to undo")
        record = self._history[self._index - 1]
        record.auto.revert()
        record.command.revert(self._tree)
        try:
            if record.before is not None:
                self._set_bytes(record.before, self._index - 1)
            else:
                self._set_bytes(self._rebuild(self._index - 1), self._index - 1)
        except Exception:
            record.command.apply(self._tree)
            record.auto.reapply()
            raise
        self._index -= 1
        self._journal_change()
        result = EditResult("undo", f"Undo: {record.command.description}",
                            record.result.scope if record.result else Scope(),
                            min_runtime_version=self.model.min_runtime_version)
        self._notify(result)
        return result

    def redo(self) -> EditResult:
        if not self.can_redo:
            raise EditError("nothing to redo")
        record = self._history[self._index]
        record.auto, record.patches, record.splice, record.before = FollowUps(), None, None, None
        result = self._execute(record, "redo")
        self._index += 1
        self._journal_change()
        self._notify(result)
        return result

    def _journal_change(self) -> None:
        """Journal the history before anyone sees the change (durable first)."""
        if self.journal is not None:
            self.journal.changed()

    def _execute(self, record: _Record, kind: str) -> EditResult:
        tree = self._tree
        command = record.command
        scope = command.scope(tree)
        affected = affected_ops(tree, self.model, scope) if command.changes_op_signatures else []
        before = {op: op_required_version(tree.model, sg, op) for sg, op in affected}
        versions = [int(c.version) for c in tree.model.operatorCodes or []]
        command.apply(tree)  # raises EditError with the tree untouched
        try:
            record.auto.raise_versions(tree, scope, affected, before)
            record.auto.update_runtime(tree, versions)
            check_tree(tree)
            previous = self.model
            patches = self._plan(record)
            splice = None if patches is not None else self._plan_splice(record)
            if patches is not None or splice is not None:
                before = self._current()
                edits = splice if splice is not None else \
                    [(p.pos, len(p.new), p.new) for p in patches]
                self._publish_bytes(before.replace(edits), check_against=previous)
                record.patches, record.splice, record.before = patches, splice, before
            else:
                self._publish(check_against=previous)
        except Exception as exc:
            record.auto.revert()
            command.revert(tree)
            if isinstance(exc, EditError):
                raise
            if isinstance(exc, ModelFormatError):
                raise EditError(f"{command.description}: the result is not a valid model: "
                                f"{exc}") from None
            raise
        result = EditResult(
            kind, command.description if kind == "apply" else f"Redo: {command.description}",
            scope, list(command.warnings), record.auto.version_raises(tree),
            self.model.min_runtime_version,
            record.auto.runtime_change(self.model.min_runtime_version))
        record.result = result
        return result

    def _publish(self, check_against: Model | None = None) -> None:
        """Serialize and re-read the tree; make it the document's model."""
        self._publish_bytes(Pieces.of_bytes(serialize(self._tree, self.layout)), check_against)

    def _publish_bytes(self, pieces: Pieces, check_against: Model | None = None) -> None:
        model = self._load(pieces)
        if check_against is not None:
            errors = new_errors(check_against, model)
            if errors:
                raise EditError(f"the edit would make the model invalid: {errors[0]}")
        self._pieces = pieces
        self.model = model

    def _load(self, pieces: Pieces) -> Model:
        """The model of a state's bytes: kept for the last few states (undo, redo)."""
        hit = self._models.get(id(pieces))
        if hit is not None and hit[0] is pieces:
            self._models.move_to_end(id(pieces))
            return hit[1]
        model = load_model(pieces.materialize(), weights=self.original.weights)
        self._models[id(pieces)] = (pieces, model)
        while len(self._models) > _KEPT_MODELS:
            self._models.popitem(last=False)
        return model

    def _set_bytes(self, pieces: Pieces, state: int) -> None:
        """Make ``pieces`` (the bytes of ``state``) the document's model."""
        if state == 0 and self.layout == "auto":  # the opened file itself
            self._pieces, self.model = None, self.original
            return
        self._publish_bytes(pieces)

    # -- the bytes of a state ----------------------------------------------------------------
    def _original_pieces(self) -> Pieces:
        """The opened file as pieces: a range of the file itself when it was opened from
        one (so it is never read into memory), else its bytes."""
        source = self.original._source
        if self.path is not None and not isinstance(source, (bytes, bytearray)):
            if self._source is None:
                self._source = SourceFile(self.path, source, self.original.file_size)
            if self._source.fd >= 0:
                return Pieces.of_file(self._source)
        if isinstance(source, bytes):
            return Pieces.of_bytes(source)
        return Pieces.of_bytes(self.original.data.tobytes())

    def _current(self) -> Pieces:
        """This state's bytes (the opened file's at state 0)."""
        if self._pieces is not None:
            return self._pieces
        if self.layout == "auto" and self._index == 0:
            self._pieces = self._original_pieces()
            self._models[id(self._pieces)] = (self._pieces, self.original)
            return self._pieces
        self._pieces = Pieces.of_bytes(serialize(self._tree, self.layout))
        return self._pieces

    @property
    def nbytes(self) -> int:
        """Size of the model as it would be saved."""
        return len(self._current())

    def _plan(self, record: _Record) -> list[Patch] | None:
        """The patches that make this edit, if it is a fast-path edit (see the docstring)."""
        if not self.fast_path_enabled or (self._index == 0 and self.layout != "auto"):
            return None  # state 0 is then the serialized tree, not the model shown: slow
        targets = record.command.targets(self._tree)
        if targets is None:
            return None
        auto = record.auto.field_targets(self._tree)
        if auto is None:
            return None
        targets = list(targets) + auto
        if self._locator is None or self._locator.model is not self.model:
            self._locator = Locator(self.model)
        if any(not isinstance(t, FieldTarget) for t in targets):
            return None
        return plan(self._locator, targets)

    def _plan_splice(self, record: _Record) -> list | None:
        """The `splice` edits that make this edit, if it can be spliced."""
        if not self.fast_path_enabled or (self._index == 0 and self.layout != "auto") or \
                not self._worth_splicing():
            return None
        targets = record.command.targets(self._tree)
        if targets is None:
            return None
        auto = record.auto.field_targets(self._tree, owners=True)
        if auto is None:
            return None
        return plan_splice(self.model, self._tree, list(targets) + auto, len(self._current()),
                           appendix=self._tree.appendix is not None)

    def _worth_splicing(self) -> bool:
        """Splice only where a serialize would be slow: a small model is re-serialized, so
        its saved bytes stay compact and canonical (no objects left behind by edits)."""
        index = self.original.index
        objects = sum(len(b) for name in ("tflite.Operator", "tflite.Tensor")
                      for b in index.batches.get(name, ()))
        return objects >= self.splice_min_objects or \
            self.original.file_size >= self.splice_min_bytes

    def _rebuild(self, state: int) -> Pieces:
        """The bytes of ``state`` (the tree is at that state): see the module docstring."""
        last = state - 1
        while last >= 0 and self._history[last].edits() is not None:
            last -= 1
        patched = self._history[last + 1:state]
        if last < 0 and self.layout == "auto":
            base = self._original_pieces()
        else:
            tree = self._tree
            for r in reversed(patched):
                r.auto.revert()
                r.command.revert(tree)
            try:
                base = Pieces.of_bytes(serialize(tree, self.layout))
            finally:
                for r in patched:
                    r.command.apply(tree)
                    r.auto.reapply()
        for r in patched:
            base = base.replace(r.edits())
        return base

    # -- output ------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The model as it would be saved (serialized now if nothing was edited yet).

        For large models prefer `save`, which streams the bytes instead of joining them."""
        return self._current().tobytes()

    def changes(self) -> list[str]:
        """What differs from the original file, field by field (schema names)."""
        if self.model is self.original:
            return []
        return [_annotate(line, self._tree.model) for line in
                column_changes(self.original, self.model, self._tree.model,
                               self._shared_with_file())]

    def _shared_with_file(self):
        """For `coldiff`: whether bytes of this state are the opened file's own, at the
        same place in the file as in the original model (the original *is* the file),
        known from the pieces without reading them; None when there is no such file."""
        source, pieces = self._source, self._pieces
        if source is None or pieces is None or self.original.path is None \
                or self.original.file_size != source.size:  # a section of a container
            return None

        def shared(a: int, b: int, n: int) -> bool:
            return pieces.file_offset(b, b + n, source) == a
        return shared

    def save(self, path: str | os.PathLike, overwrite_original: bool = False) -> Path:
        """Write the model: to a temporary file in the target's directory, then rename.

        Refuses to replace the file the document was opened from unless asked; keeps the
        permissions of the file it replaces (or of the opened file for a new path).  Side
        files of external buffers are copied next to a model saved to another folder.
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
        pieces = self._current()
        copy_side_files(self.model, target)  # external buffers' files go with the model
        mode = None
        for ref in (target, self.path):
            if ref is not None and Path(ref).exists():
                mode = stat.S_IMODE(os.stat(ref).st_mode)
                break
        replace_file(target, pieces.write_to, mode)
        self._clean = self._index
        if self.journal is not None:
            self.journal.saved(target)
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

