"""Edits that change a model's arena: running operators in another order, and storing a
TFLite Micro memory plan (``OfflineMemoryAllocation``) in the model.

Both get their facts from `tflite_viewer.memory`: which orders are valid (an operator
never runs before one it depends on), which order needs least memory, what TFLM would plan.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...memory import encode_offline, plan_tflm
from ...memory.facts import MemorySubgraphFacts
from ...memory.offline import METADATA_NAME
from ...memory.offline_search import best_offline_plan
from ...memory.reorder import best_order, check_order
from ...model.errors import EditError
from ...model.opcodes import CUSTOM
from ..tree import ModelTree, text
from .base import EditCommand, Scope, lookup_subgraph
from .header import SetMetadata


def _tree_facts(tree: ModelTree, s: int) -> MemorySubgraphFacts:
    """The planners' view of subgraph ``s`` of the object tree (what `check_order` needs)."""
    sg = lookup_subgraph(tree, s)
    codes = tree.model.operatorCodes or []
    bufs = tree.model.buffers or []
    tensors = sg.tensors or []
    ops = sg.operators or []

    def ints(v) -> list[int]:
        return [] if v is None else [int(i) for i in v]

    def code(op) -> int:
        c = codes[op.opcodeIndex]
        return max(int(c.builtinCode), int(c.deprecatedBuiltinCode))

    def has_data(t) -> bool:
        return 0 < t.buffer < len(bufs) and bufs[t.buffer].data is not None and len(
            bufs[t.buffer].data) > 0

    return MemorySubgraphFacts(
        s, [text(t.name) for t in tensors], [int(t.type) for t in tensors],
        [tuple(ints(t.shape)) for t in tensors], [bool(t.isVariable) for t in tensors],
        [has_data(t) for t in tensors], [has_data(t) for t in tensors],
        tuple(ints(sg.inputs)), tuple(ints(sg.outputs)), [code(op) for op in ops],
        [text(codes[op.opcodeIndex].customCode) if code(op) == CUSTOM else None for op in ops],
        [ints(op.inputs) for op in ops], [ints(op.outputs) for op in ops],
        original=list(range(len(ops))))


class ReorderOperators(EditCommand):
    """Run a subgraph's operators in another (valid) order.

    ``order`` lists the operators' current indices in the new execution order, or is
    ``"memory"``: the order `memory.reorder.best_order` finds for TFLM's arena.
    """
    changes_op_signatures = False  # the same operators, with the same tensors

    def __init__(self, subgraph: int, order: list[int] | str, pointer_bytes: int = 4) -> None:
        super().__init__()
        self.subgraph, self.order, self.pointer_bytes = subgraph, order, pointer_bytes
        self._sg: Any = None
        self._old: Any = None
        self._new: list[int] = []
        self.description = f"Reorder the operators of subgraph {subgraph}"

    def scope(self, tree: ModelTree) -> Scope:
        n = len(lookup_subgraph(tree, self.subgraph).operators or [])
        return Scope(self.subgraph, set(range(n)), structural=True)

    def _check(self, tree: ModelTree) -> None:
        sg = lookup_subgraph(tree, self.subgraph)
        facts = _tree_facts(tree, self.subgraph)
        if self.order == "memory":
            from ...model import load_model
            from ..writer import serialize
            found = best_order(load_model(serialize(tree)), self.subgraph, self.pointer_bytes)
            if found is None:
                raise EditError(f"subgraph {self.subgraph}: no operator order found that needs "
                                "less TFLite Micro arena than the current one")
            order = found.order
            self.description = (f"Reorder the operators of subgraph {self.subgraph} for memory "
                                f"(TFLM head {found.head_before:,} -> {found.head_after:,} bytes)")
        else:
            try:
                order = [int(k) for k in self.order]
            except (TypeError, ValueError):
                raise EditError(f"an operator order is a list of operator indices, not "
                                f"{self.order!r}") from None
            reason = check_order(facts, order)
            if reason is not None:
                raise EditError(f"subgraph {self.subgraph}: {reason}")
        if order == list(range(len(order))):
            self.warnings.append("the order is the current one: nothing changes")
        self._sg, self._new = sg, order

    def _do(self, tree: ModelTree) -> None:
        self._old = self._sg.operators
        self._sg.operators = [self._old[k] for k in self._new]

    def _undo(self, tree: ModelTree) -> None:
        self._sg.operators = self._old


class SetOfflineMemoryPlan(SetMetadata):
    """Store an arena plan as TFLite Micro's ``OfflineMemoryAllocation`` metadata.

    ``offsets``: one per tensor of every subgraph (subgraph 0's first), -1 where TFLM
    should plan the tensor itself; None stores the plan TFLM computes for the model now
    (its tensors' offsets; scratch buffers stay planned at run time, around them);
    ``"best"`` the smallest plan `memory.offline_search` finds (refused when none beats
    TFLM's own).
    """

    def __init__(self, offsets: list[int] | str | None = None, pointer_bytes: int = 4) -> None:
        super().__init__(METADATA_NAME, b"")
        self.offsets, self.pointer_bytes = offsets, pointer_bytes
        self.description = "Store the TFLite Micro arena plan (OfflineMemoryAllocation)"

    def _check(self, tree: ModelTree) -> None:
        subs = tree.model.subgraphs or []
        total = sum(len(sg.tensors or []) for sg in subs)
        offsets = self.offsets
        if offsets == "best":
            from ...model import load_model
            from ..writer import serialize
            found = best_offline_plan(load_model(serialize(tree)), self.pointer_bytes)
            if found is None:
                raise EditError("no offline plan found that needs less TFLite Micro arena than "
                                "TFLM's own plan")
            offsets = found.offsets
            self.description = (f"Store a TFLite Micro arena plan ({found.strategy}: head "
                                f"{found.head_before:,} -> {found.head_after:,} bytes)")
        elif offsets is None:
            from ...model import load_model
            from ..writer import serialize
            plan = plan_tflm(load_model(serialize(tree)), self.pointer_bytes, offline=False)
            starts = np.cumsum([0] + [len(sg.tensors or []) for sg in subs])
            offsets = [-1] * total
            for b in plan.buffers:
                if b.tensor >= 0:
                    offsets[int(starts[b.subgraph]) + b.tensor] = b.offset
            self.description = (f"Store the TFLite Micro arena plan ({plan.head_bytes:,}-byte "
                                "head) as OfflineMemoryAllocation")
        else:
            try:
                offsets = [int(v) for v in offsets]  # type: ignore[union-attr]
            except (TypeError, ValueError):
                raise EditError("offline offsets must be integers") from None
            if len(offsets) != total:
                raise EditError(f"{len(offsets)} offsets for {total} tensors: TFLM refuses a "
                                "plan that does not give one per tensor of every subgraph")
            if any(v < -1 for v in offsets):
                raise EditError("offline offsets are arena offsets (>= 0) or -1 (planned by TFLM)")
        self.value = encode_offline(offsets, len(subs))
        description = self.description
        super()._check(tree)
        self.description = description
