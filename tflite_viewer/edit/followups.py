"""What a document changes on its own after a command, as the converter would.

An edit can make an operator need a newer kernel version (a dilation of 2 needs CONV_2D
v2): the operator code's version is raised (never lowered), and ``min_runtime_version``
follows it when the model stores one.  `FollowUps` records both changes of one history
entry, so that `document.ModelDocument` can take them back (undo, a failed edit), make them
again (redo, a rebuild) and hand them to the fast paths as fields to write (`patch`,
`splice`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..model.metadata import MIN_RUNTIME_VERSION
from ..model.model import Model
from ..model.opcodes import BUILTIN_NAMES
from .commands import Scope
from .op_version import op_required_version
from .patch import FieldTarget
from .runtime_version import encode_min_runtime, min_runtime_version, runtime_less
from .tree import ModelTree, text


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
class FollowUps:
    """The automatic changes one command led to, with what each field held before."""

    raised: list[tuple[Any, int, int]] = field(default_factory=list)  # (OperatorCodeT, old, new)
    runtime: tuple[Any, Any, Any] | None = None  # (BufferT, old data, new data)

    def raise_versions(self, tree: ModelTree, scope: Scope, affected, before) -> None:
        """Raise operator-code versions the edit made too low (never lower one).
        ``affected`` are the (subgraph, operator) pairs of `affected_ops` taken before
        the edit, ``before`` the versions they needed then."""
        if not affected:
            return
        subs = tree.model.subgraphs or []
        if scope.structural:
            present = set()
            if scope.subgraph is not None and 0 <= scope.subgraph < len(subs):
                present = {id(op) for op in subs[scope.subgraph].operators or []}
            after = [(sg, op) for sg, op in affected if id(op) in present]
        else:
            after = list(affected)
        # No command adds a tensor to an operator, so the operators touching the scope's
        # tensors after the edit are among those that touched them before (in `affected`).
        for sg, op in after:
            need = op_required_version(tree.model, sg, op)
            if need is None:
                continue
            was = before.get(op)
            code = tree.model.operatorCodes[op.opcodeIndex]
            if need > code.version and (was is None or need > was):
                self.raised.append((code, int(code.version), need))
                code.version = need

    def update_runtime(self, tree: ModelTree, versions: list[int]) -> None:
        """Follow op-version changes (from ``versions``, the codes' versions before the
        edit) in ``min_runtime_version``, never lowering it."""
        m = tree.model
        now = [int(c.version) for c in m.operatorCodes or []]
        if now == versions:
            return
        entry = next((e for e in m.metadata or [] if text(e.name) == MIN_RUNTIME_VERSION), None)
        if entry is None or not 0 < entry.buffer < len(m.buffers or []):
            return
        buf = m.buffers[entry.buffer]
        old = runtime_text(buf.data)
        used = {int(op.opcodeIndex) for sg in m.subgraphs or [] for op in sg.operators or []}
        pairs = []
        for k in sorted(used):
            if k < len(m.operatorCodes):
                code = m.operatorCodes[k]
                pairs.append((code_name(code), int(code.version)))
        needed = min_runtime_version(pairs)
        if not needed or not runtime_less(old, needed):
            return
        size = max(16, len(buf.data) if buf.data is not None else 0)
        new = np.frombuffer(encode_min_runtime(needed, size), dtype=np.uint8).copy()
        self.runtime = (buf, buf.data, new)
        buf.data = new

    def revert(self) -> None:
        """Put back what the fields held before (the tree only)."""
        if self.runtime is not None:
            buf, old, _new = self.runtime
            buf.data = old
        for code, old, _new in reversed(self.raised):
            code.version = old

    def reapply(self) -> None:
        """Make the changes again after a `revert`."""
        for code, _old, new in self.raised:
            code.version = new
        if self.runtime is not None:
            buf, _old, new = self.runtime
            buf.data = new

    def field_targets(self, tree: ModelTree, owners: bool = False) -> list[FieldTarget] | None:
        """The changed fields for the fast paths (with their tables as ``owner`` when
        ``owners``, for `splice`); None if the runtime buffer is no longer in the tree."""
        targets = [FieldTarget((("operator_codes", code_index(tree, code)),),
                               "tflite.OperatorCode", "version", new,
                               owner=code if owners else None)
                   for code, _old, new in self.raised]
        if self.runtime is not None:
            buf, _old, new = self.runtime
            k = next((i for i, b in enumerate(tree.model.buffers or []) if b is buf), -1)
            if k < 0:
                return None
            targets.append(FieldTarget((("buffers", k),), "tflite.Buffer", "data", new))
        return targets

    def version_raises(self, tree: ModelTree) -> list[VersionRaise]:
        return [VersionRaise(code_index(tree, c), code_name(c), old, new)
                for c, old, new in self.raised]

    def runtime_change(self, now: str | None) -> tuple[str, str] | None:
        """(old, new) ``min_runtime_version`` if it changed, ``now`` being the new one."""
        return None if self.runtime is None else (runtime_text(self.runtime[1]), now or "")


def affected_ops(tree: ModelTree, model: Model, scope: Scope) -> list[tuple[Any, Any]]:
    """(subgraph, operator) pairs of the tree whose version may change with ``scope``
    (``model``: the document's model at the tree's state, read for its columns)."""
    subs = tree.model.subgraphs or []
    if scope.subgraph is None or not 0 <= scope.subgraph < len(subs):
        return []
    sg = subs[scope.subgraph]
    ops = sg.operators or []
    out = [ops[k] for k in scope.operators if 0 <= k < len(ops)]
    found = _ops_touching(model, scope.subgraph, scope.tensors, len(ops)) \
        if scope.tensors else None
    if found is not None:  # the model's columns: no Python loop over 20,000 operators
        out += [ops[k] for k in found]
    elif scope.tensors:
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


def _ops_touching(model: Model, s: int, tensors: set[int], n_ops: int) -> list[int] | None:
    """Operators of subgraph ``s`` reading or writing ``tensors``, from ``model``'s
    verifier columns; None if the tree's subgraph is not at the model's state."""
    index = model.index
    ops = index.table("tflite.Operator")
    mine = ops.parent == s if ops.parent is not None else np.zeros(len(ops), bool)
    if int(np.count_nonzero(mine)) != n_ops:
        return None
    wanted = np.fromiter(tensors, dtype=np.int64, count=len(tensors))
    rows: list[np.ndarray] = []
    for name in ("inputs", "outputs"):
        values, owner, _ = index.vector(ops, name)
        rows.append(owner[np.isin(values, wanted)])
    hit = np.unique(np.concatenate(rows))
    hit = hit[mine[hit]]
    return sorted(int(k) for k in ops.index[hit])


def code_index(tree: ModelTree, code) -> int:
    """Where ``code`` (an OperatorCodeT of the tree) is in ``operator_codes``; -1 if gone."""
    for k, c in enumerate(tree.model.operatorCodes or []):
        if c is code:
            return k
    return -1


def code_name(code) -> str:
    """The builtin name of an OperatorCodeT (the larger of its two code fields)."""
    c = max(int(code.builtinCode), int(code.deprecatedBuiltinCode))
    return BUILTIN_NAMES.get(c, str(c))


def runtime_text(data) -> str:
    """A ``min_runtime_version`` buffer's text (up to its first NUL)."""
    if data is None:
        return ""
    return bytes(np.asarray(data, dtype=np.uint8)).split(b"\0", 1)[0].decode("ascii", "replace")
