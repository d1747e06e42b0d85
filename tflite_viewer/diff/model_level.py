"""Model-level differences: the header, metadata, min_runtime_version and signatures."""
from __future__ import annotations

from typing import Iterator

from ..match import ModelMatch
from ..model.metadata import MIN_RUNTIME_VERSION
from .differences import Difference, Ref
from .structure import SubgraphComparison

_MODEL = Ref(-1, -1, "")


def _metadata(model) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for entry in model.metadata:
        out.setdefault(entry.name, entry.data.tobytes())
    return out


def compare_header(match: ModelMatch) -> Iterator[Difference]:
    a, b = match.a, match.b
    if a.version != b.version:
        yield Difference("model", "changed", "version", _MODEL, _MODEL, a.version, b.version,
                         "the schema version")
    if a.description != b.description:
        yield Difference("model", "changed", "description", _MODEL, _MODEL, a.description,
                         b.description)
    if a.min_runtime_version != b.min_runtime_version:
        yield Difference("model", "changed", "min_runtime_version", _MODEL, _MODEL,
                         a.min_runtime_version, b.min_runtime_version)
    ma, mb = _metadata(a), _metadata(b)
    for name in sorted(set(ma) | set(mb)):
        x, y = ma.get(name), mb.get(name)
        if name == MIN_RUNTIME_VERSION and x is not None and y is not None:
            continue  # compared as text above (the buffer's padding is no difference)
        if x is None:
            yield Difference("model", "added", f"metadata.{name}", None, _MODEL,
                             detail=f"{len(y)} bytes")
        elif y is None:
            yield Difference("model", "removed", f"metadata.{name}", _MODEL, None,
                             detail=f"{len(x)} bytes")
        elif x != y:
            yield Difference("model", "changed", f"metadata.{name}", _MODEL, _MODEL,
                             f"{len(x)} bytes", f"{len(y)} bytes", "the entry's bytes differ")


def compare_signatures(match: ModelMatch) -> Iterator[Difference]:
    """Signatures by key; a key only A has and one only B has that run matched subgraphs
    are one renamed signature.  Inputs and outputs by name: which names came and went,
    and which name now points at a tensor that is not its old tensor's match."""
    a, b = match.a, match.b
    sa = {s.key: s for s in a.signature_defs}
    sb = {s.key: s for s in b.signature_defs}
    only_a = [k for k in sa if k not in sb]
    only_b = [k for k in sb if k not in sa]
    pairs = [(k, k) for k in sa if k in sb]
    for ka in list(only_a):
        hit = [kb for kb in only_b
               if match.subgraphs.get(sa[ka].subgraph_index) == sb[kb].subgraph_index]
        if len(hit) == 1:
            only_a.remove(ka)
            only_b.remove(hit[0])
            pairs.append((ka, hit[0]))
    for k in only_a:
        yield Difference("signature", "removed", "", Ref(sa[k].subgraph_index, -1, k), None)
    for k in only_b:
        yield Difference("signature", "added", "", None, Ref(sb[k].subgraph_index, -1, k))
    for ka, kb in pairs:
        x, y = sa[ka], sb[kb]
        ra, rb = Ref(x.subgraph_index, -1, ka), Ref(y.subgraph_index, -1, kb)
        if ka != kb:
            yield Difference("signature", "changed", "key", ra, rb, ka, kb)
        if match.subgraphs.get(x.subgraph_index) != y.subgraph_index:
            yield Difference("signature", "changed", "subgraph", ra, rb, x.subgraph_index,
                             y.subgraph_index, "runs a subgraph that is not the match of A's")
            continue
        comp = SubgraphComparison(match, x.subgraph_index) \
            if x.subgraph_index in match.parts else None
        for what in ("inputs", "outputs"):
            detail = _maps(getattr(x, what), getattr(y, what), comp)
            if detail:
                yield Difference("signature", "changed", what, ra, rb,
                                 [m.name for m in getattr(x, what)],
                                 [m.name for m in getattr(y, what)], detail)


def _maps(xs, ys, comp: SubgraphComparison | None) -> str:
    by_a = {m.name: m.tensor_index for m in xs}
    by_b = {m.name: m.tensor_index for m in ys}
    parts = []
    added = [n for n in by_b if n not in by_a]
    removed = [n for n in by_a if n not in by_b]
    if added:
        parts.append("added " + ", ".join(repr(n) for n in added))
    if removed:
        parts.append("removed " + ", ".join(repr(n) for n in removed))
    moved = [n for n in by_a if n in by_b and (
        comp is None or not comp.connected(by_a[n], by_b[n]))]
    if moved:
        parts.append("now names another tensor: " + ", ".join(repr(n) for n in moved))
    if not parts and [m.name for m in xs] != [m.name for m in ys]:
        parts.append("reordered")
    return "; ".join(parts)
