"""The trail of subgraphs the user walked into through control-flow operators (no Qt).

``main > WHILE #0 body > ...``: each crumb is a subgraph and, past the first, the call that
led to it (the calling subgraph, the operator and its role: ``then``, ``else``, ``body``).
Entering a subgraph through an operator cuts the trail back to the subgraph holding that
operator first, so following an IF's ``else`` link while its ``then`` branch is shown gives
``main > IF #3 else`` and not ``main > IF #3 then > else``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ...graph.build import subgraph_references
from ...model import Model

class Call(NamedTuple):
    """Operator ``op`` of subgraph ``subgraph`` calls a subgraph in role ``role``."""

    subgraph: int
    op: int
    role: str


@dataclass(frozen=True)
class Crumb:
    subgraph: int
    label: str
    call: Call | None = None  # how the user got here (None: opened directly)


def crumb_label(model: Model, index: int, via: str = "") -> str:
    name = model.subgraphs[index].display_name
    return f"{via} \u2192 {name}" if via else name


def call_text(model: Model, call: Call) -> str:
    """``IF #3 else``: the operator and role of a call, as the trail shows it."""
    op = model.subgraphs[call.subgraph].operators[call.op]
    return f"{op.name} #{call.op} {call.role}"


def call_target(model: Model, call: Call) -> int:
    """The subgraph ``call`` runs."""
    return model.subgraphs[call.subgraph].operators[call.op].called_subgraphs[call.role]


def call_crumb(model: Model, call: Call) -> Crumb:
    target = call_target(model, call)
    return Crumb(target, crumb_label(model, target, call_text(model, call)), call)


def sibling_label(model: Model, call: Call) -> str:
    """``else → cond_false``: a sibling call as offered beside the trail."""
    return f"{call.role} \u2192 {model.subgraphs[call_target(model, call)].display_name}"


def trail_to(model: Model, index: int, references: dict | None = None) -> list[Crumb]:
    """The shortest chain of calls from a subgraph nobody calls down to ``index``
    (``references`` is `graph.build.subgraph_references(model)`, computed when not given)."""
    if len(model.subgraphs) == 1:
        return [Crumb(index, crumb_label(model, index))]
    if references is None:
        references = subgraph_references(model)
    callers: dict[int, Call] = {}
    for sg, refs in references.items():
        for op, role, target in refs:
            callers.setdefault(target, Call(sg, op, role))
    chain: list[Crumb] = []
    current, seen = index, set()
    while current in callers and current not in seen:
        seen.add(current)
        call = callers[current]
        chain.append(Crumb(current, crumb_label(model, current, call_text(model, call)), call))
        current = call.subgraph
    chain.append(Crumb(current, crumb_label(model, current)))
    return chain[::-1]


def enter_call(trail: list[Crumb], model: Model, call: Call) -> list[Crumb]:
    """The trail after following ``call``: cut back to the last crumb showing the calling
    subgraph (a sibling branch replaces the branch shown), then the called subgraph."""
    cut = next((i for i in range(len(trail) - 1, -1, -1) if trail[i].subgraph == call.subgraph), None)
    base = trail[:cut + 1] if cut is not None else trail_to(model, call.subgraph)
    return [*base, call_crumb(model, call)]


def sibling_calls(trail: list[Crumb], model: Model) -> list[Call]:
    """The other subgraphs the operator that led to the shown one calls (an IF's else when
    its then-branch is shown): one click away beside the trail."""
    if not trail or trail[-1].call is None:
        return []
    call = trail[-1].call
    sgs = model.subgraphs
    if call.subgraph >= len(sgs) or call.op >= len(sgs[call.subgraph].operators):
        return []
    calls = sgs[call.subgraph].operators[call.op].called_subgraphs
    return [Call(call.subgraph, call.op, role) for role in calls if role != call.role]
