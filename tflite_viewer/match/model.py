"""Matching two models: subgraphs, then the operators and tensors inside each pair.

>>> from tflite_viewer.match import match_models
>>> m = match_models(load_model("float.tflite"), load_model("int8.tflite"))
>>> m.op((0, 3))                 # A's op 3 of subgraph 0 -> (subgraph, op) in B, or None
>>> m.op_evidence((0, 3))        # Evidence("structure", "writes tensor 70 ..., matched by name")
>>> m.inserted_ops()             # [((0, 0), "QUANTIZE inserted by the converter: ..."), ...]

Subgraphs pair by signature key (the subgraph a signature runs on both sides), then
subgraph 0 with subgraph 0, then by unique name, then as the callee of matched control-flow
operators in the same role (the body of a matched WHILE with that WHILE's body), and last
by index when both models have as many.  Inside each pair `SubgraphMatcher` does the work.
Keys are (subgraph, index) on the model they belong to.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from ..model import Model
from .graph import SideGraph
from .subgraph import Evidence, SubgraphMatcher

Key = tuple[int, int]

#: op types whose options name the subgraphs they run
CALLING_OPS = frozenset({
    "WHILE", "IF", "CALL_ONCE", "CALL", "STABLEHLO_WHILE", "STABLEHLO_REDUCE",
    "STABLEHLO_REDUCE_WINDOW", "STABLEHLO_SORT", "STABLEHLO_SCATTER", "STABLEHLO_COMPOSITE",
    "STABLEHLO_CASE"})


@dataclass
class ModelMatch:
    """Which subgraph, operator and tensor of model ``a`` is which of model ``b``."""

    a: Model
    b: Model
    subgraphs: dict[int, int] = field(default_factory=dict)          # A -> B
    subgraph_evidence: dict[int, Evidence] = field(default_factory=dict)
    parts: dict[int, SubgraphMatcher] = field(default_factory=dict)  # by A subgraph

    # -- lookups -------------------------------------------------------------------------
    def subgraph_in_a(self, sb: int) -> int | None:
        return next((sa for sa, x in self.subgraphs.items() if x == sb), None)

    def _part_b(self, sb: int) -> tuple[int, SubgraphMatcher] | None:
        sa = self.subgraph_in_a(sb)
        return None if sa is None else (sa, self.parts[sa])

    def op(self, key: Key) -> Key | None:
        """A's op -> B's op."""
        part = self.parts.get(key[0])
        hit = part.o_ab.get(key[1]) if part else None
        return None if hit is None else (self.subgraphs[key[0]], hit)

    def op_in_a(self, key: Key) -> Key | None:
        """B's op -> A's op."""
        found = self._part_b(key[0])
        hit = found[1].o_ba.get(key[1]) if found else None
        return None if hit is None else (found[0], hit)

    def tensor(self, key: Key, aliases: bool = False) -> Key | None:
        """A's tensor -> B's tensor (with ``aliases``, also the B tensor an inserted
        QUANTIZE/DEQUANTIZE made of it, for an A tensor that has no match of its own)."""
        part = self.parts.get(key[0])
        if part is None:
            return None
        hit = part.t_ab.get(key[1])
        if hit is None and aliases:
            hit = part.alias_a.get(key[1])
        return None if hit is None else (self.subgraphs[key[0]], hit)

    def tensor_in_a(self, key: Key, aliases: bool = False) -> Key | None:
        """B's tensor -> A's tensor (with ``aliases``, also for the tensors of inserted
        QUANTIZE/DEQUANTIZE ops: the A tensor whose values they carry)."""
        found = self._part_b(key[0])
        if found is None:
            return None
        sa, part = found
        hit = part.t_ba.get(key[1])
        if hit is None and aliases:
            hit = part.alias_b.get(key[1])
        return None if hit is None else (sa, hit)

    def op_evidence(self, key: Key) -> Evidence | None:
        part = self.parts.get(key[0])
        return part.o_evidence.get(key[1]) if part else None

    # -- listings ------------------------------------------------------------------------
    def op_pairs(self) -> Iterator[tuple[Key, Key, Evidence]]:
        for sa, part in self.parts.items():
            sb = self.subgraphs[sa]
            for oa in sorted(part.o_ab):
                yield (sa, oa), (sb, part.o_ab[oa]), part.o_evidence[oa]

    def tensor_pairs(self) -> Iterator[tuple[Key, Key, Evidence]]:
        for sa, part in self.parts.items():
            sb = self.subgraphs[sa]
            for ta in sorted(part.t_ab):
                yield (sa, ta), (sb, part.t_ab[ta]), part.t_evidence[ta]

    def aliases(self) -> Iterator[tuple[Key, Key]]:
        """(A tensor, B tensor) pairs that carry the same values without being matched:
        the tensors of QUANTIZE/DEQUANTIZE ops inserted on one side."""
        for sa, part in self.parts.items():
            sb = self.subgraphs[sa]
            for tb, ta in sorted(part.alias_b.items()):
                yield (sa, ta), (sb, tb)
            for ta, tb in sorted(part.alias_a.items()):
                yield (sa, ta), (sb, tb)

    def inserted_ops(self) -> list[tuple[Key, str]]:
        """B's operators without a match, and what each is."""
        out = []
        for sa, part in self.parts.items():
            out += [((self.subgraphs[sa], k), why) for k, why in sorted(part.inserted.items())]
        for sb in self.unmatched_subgraphs_b():
            out += [((sb, k), "in a subgraph only B has")
                    for k in range(len(self.b.subgraphs[sb].operators))]
        return out

    def removed_ops(self) -> list[tuple[Key, str]]:
        """A's operators without a match, and what each was."""
        out = []
        for sa, part in self.parts.items():
            out += [((sa, k), why) for k, why in sorted(part.removed.items())]
        for sa in self.unmatched_subgraphs_a():
            out += [((sa, k), "in a subgraph only A has")
                    for k in range(len(self.a.subgraphs[sa].operators))]
        return out

    def unmatched_subgraphs_a(self) -> list[int]:
        return [k for k in range(len(self.a.subgraphs)) if k not in self.subgraphs]

    def unmatched_subgraphs_b(self) -> list[int]:
        taken = set(self.subgraphs.values())
        return [k for k in range(len(self.b.subgraphs)) if k not in taken]


def _signature_seeds(a: Model, b: Model, sa: int, sb: int) -> list[tuple[int, int, Evidence]]:
    """Tensors a signature names on both sides, for the subgraphs it runs."""
    seeds = []
    sigs_b = {s.key: s for s in b.signature_defs}
    for sig in a.signature_defs:
        other = sigs_b.get(sig.key)
        if other is None or sig.subgraph_index != sa or other.subgraph_index != sb:
            continue
        for what, xs, ys in (("input", sig.inputs, other.inputs),
                             ("output", sig.outputs, other.outputs)):
            by_name = {m.name: m.tensor_index for m in ys}
            for m in xs:
                if m.name in by_name:
                    seeds.append((m.tensor_index, by_name[m.name],
                                  Evidence("signature", f"{what} {m.name!r} of signature "
                                                        f"{sig.key!r}")))
    return seeds


def _calls(model: Model, subgraph: int, ops: list[int], g: SideGraph) -> dict[int, dict[str, int]]:
    """op -> {role: called subgraph} for the control-flow ops among ``ops``."""
    out = {}
    sg = model.subgraphs[subgraph]
    for k in ops:
        if g.opcode[k] in CALLING_OPS:
            out[k] = sg.operators[k].called_subgraphs
    return out


def match_models(a: Model, b: Model) -> ModelMatch:
    """Match every subgraph, operator and tensor of ``a`` with ``b`` (module docstring)."""
    m = ModelMatch(a, b)
    na, nb = len(a.subgraphs), len(b.subgraphs)

    def pair(sa: int, sb: int, ev: Evidence) -> bool:
        if not (0 <= sa < na and 0 <= sb < nb) or sa in m.subgraphs or \
                sb in m.subgraphs.values():
            return False
        m.subgraphs[sa], m.subgraph_evidence[sa] = sb, ev
        return True

    sigs_b = {s.key: s for s in b.signature_defs}
    for sig in a.signature_defs:
        if sig.key in sigs_b:
            pair(sig.subgraph_index, sigs_b[sig.key].subgraph_index,
                 Evidence("signature", repr(sig.key)))
    pair(0, 0, Evidence("position", "the main subgraph"))
    names_b: dict[str, list[int]] = {}
    for g in b.subgraphs:
        names_b.setdefault(g.name, []).append(g.index)
    names_a = [g.name for g in a.subgraphs]
    for sa, name in enumerate(names_a):
        hits = names_b.get(name, [])
        if name and len(hits) == 1 and names_a.count(name) == 1:
            pair(sa, hits[0], Evidence("name", repr(name)))

    graphs_a: dict[int, SideGraph] = {}
    graphs_b: dict[int, SideGraph] = {}

    def run_pending() -> None:
        while True:
            todo = [sa for sa in m.subgraphs if sa not in m.parts]
            if not todo:
                return
            for sa in todo:
                sb = m.subgraphs[sa]
                ga = graphs_a.setdefault(sa, SideGraph.of(a, sa))
                gb = graphs_b.setdefault(sb, SideGraph.of(b, sb))
                part = SubgraphMatcher(ga, gb).run(_signature_seeds(a, b, sa, sb))
                m.parts[sa] = part
                calls_a = _calls(a, sa, list(part.o_ab), ga)
                if not calls_a:
                    continue
                calls_b = _calls(b, sb, [part.o_ab[k] for k in calls_a], gb)
                for oa, roles in calls_a.items():
                    other = calls_b.get(part.o_ab[oa], {})
                    for role, callee in roles.items():
                        if role in other:
                            pair(callee, other[role],
                                 Evidence("structure", f"{role} of matched op {oa} "
                                                       f"{ga.opcode[oa]} of subgraph {sa}"))

    run_pending()
    if na == nb:
        for k in range(na):
            pair(k, k, Evidence("position", f"subgraph {k} on both sides"))
        run_pending()
    return m
