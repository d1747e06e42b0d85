"""The comparison of two models: the match, every difference, and (optionally) where their
numbers part; as text (a summary first, then each difference) and as a JSON document."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..match import ModelMatch, match_models
from ..model import Model, load_model
from .differences import CATEGORIES, CHANGES, Difference, sort_key
from .model_level import compare_header, compare_signatures
from .structure import compare_subgraphs, model_sizes

if TYPE_CHECKING:
    from .numeric import NumericComparison


@dataclass
class ModelDiff:
    a_label: str
    b_label: str
    match: ModelMatch
    differences: list[Difference]
    numeric: "NumericComparison | None" = field(default=None)

    @property
    def same(self) -> bool:
        """No structural difference and, when numbers were compared, none there either."""
        return not self.differences and (self.numeric is None or self.numeric.same)

    def counts(self) -> dict[str, dict[str, int]]:
        """{category: {added, removed, changed (items with at least one change)}}."""
        out = {c: {k: 0 for k in CHANGES} for c in CATEGORIES}
        changed_items: dict[str, set] = {c: set() for c in CATEGORIES}
        for d in self.differences:
            if d.change == "changed":
                changed_items[d.category].add((d.a, d.b, d.field if d.category in (
                    "model",) else ""))
            else:
                out[d.category][d.change] += 1
        for c, items in changed_items.items():
            out[c]["changed"] = len(items)
        return out

    def matched_counts(self) -> dict[str, int]:
        m = self.match
        return {"subgraphs": len(m.subgraphs),
                "operators": sum(len(p.o_ab) for p in m.parts.values()),
                "tensors": sum(len(p.t_ab) for p in m.parts.values())}

    def summary_lines(self) -> list[str]:
        sa, sb = model_sizes(self.match.a), model_sizes(self.match.b)
        mc = self.matched_counts()
        lines = [f"A: {self.a_label} ({sa['operators']} ops, {sa['tensors']} tensors, "
                 f"{sa['subgraphs']} subgraph{'s' if sa['subgraphs'] != 1 else ''})",
                 f"B: {self.b_label} ({sb['operators']} ops, {sb['tensors']} tensors, "
                 f"{sb['subgraphs']} subgraph{'s' if sb['subgraphs'] != 1 else ''})",
                 f"matched: {mc['operators']} ops, {mc['tensors']} tensors, "
                 f"{mc['subgraphs']} subgraph{'s' if mc['subgraphs'] != 1 else ''}"]
        if self.same:
            lines.append("the models are the same" + (
                " (structure and numbers)" if self.numeric is not None else ""))
            if self.numeric is not None:
                lines += self.numeric.summary_lines()
            return lines
        parts = []
        for c, row in self.counts().items():
            bits = [f"{n} {k}" for k, n in row.items() if n]
            if bits:
                noun = {"model": "model fields", "operator": "operators",
                        "tensor": "tensors", "signature": "signatures",
                        "subgraph": "subgraphs"}[c]
                parts.append(f"{noun}: {', '.join(bits)}")
        lines.append("differences: " + ("; ".join(parts) if parts else "none in structure"))
        if self.numeric is not None:
            lines += self.numeric.summary_lines()
        return lines

    def format_text(self, limit: int | None = None) -> str:
        lines = self.summary_lines()
        shown = self.differences if limit is None else self.differences[:limit]
        if shown:
            lines.append("")
            lines += [d.line() for d in shown]
        if limit is not None and len(self.differences) > limit:
            lines.append(f"... and {len(self.differences) - limit} more (--json lists all)")
        table = self.numeric.table_lines() if self.numeric is not None else []
        if table:
            lines.append("")
            lines += table
        return "\n".join(lines) + "\n"

    def to_dict(self, matches: bool = False) -> dict[str, Any]:
        m = self.match
        doc: dict[str, Any] = {
            "a": {"path": self.a_label, **model_sizes(m.a)},
            "b": {"path": self.b_label, **model_sizes(m.b)},
            "same": self.same,
            "matched": self.matched_counts(),
            "summary": self.counts(),
            "differences": [d.to_dict() for d in self.differences],
        }
        if matches:
            doc["matches"] = matches_dict(m)
        if self.numeric is not None:
            doc["numeric"] = self.numeric.to_dict()
        return doc


def matches_dict(m: ModelMatch) -> dict[str, Any]:
    """Every match with its evidence (``diff --json --matches``)."""
    return {
        "subgraphs": [{"a": sa, "b": sb, "evidence": m.subgraph_evidence[sa].to_dict()}
                      for sa, sb in sorted(m.subgraphs.items())],
        "operators": [{"a": list(a), "b": list(b), "evidence": ev.to_dict()}
                      for a, b, ev in m.op_pairs()],
        "tensors": [{"a": list(a), "b": list(b), "evidence": ev.to_dict()}
                    for a, b, ev in m.tensor_pairs()],
        "aliases": [{"a": list(a), "b": list(b)} for a, b in m.aliases()],
    }


def _load(m: Model | str | os.PathLike | bytes) -> Model:
    return m if isinstance(m, Model) else load_model(m)


def _label(m: Model, given: Any) -> str:
    if isinstance(given, (str, os.PathLike)):
        return str(given)
    return str(m.path) if m.path is not None else "<bytes>"


def structural_differences(match: ModelMatch) -> list[Difference]:
    out = list(compare_header(match)) + list(compare_signatures(match)) + \
        list(compare_subgraphs(match))
    out.sort(key=sort_key)
    return out


def diff_models(a: Model | str | os.PathLike | bytes, b: Model | str | os.PathLike | bytes,
                match: ModelMatch | None = None) -> ModelDiff:
    """Match ``a`` with ``b`` and list every structural difference (see the package
    docstring); `tflite_viewer.diff.numeric.compare_numbers` adds the numbers."""
    ma, mb = _load(a), _load(b)
    match = match if match is not None else match_models(ma, mb)
    return ModelDiff(_label(ma, a), _label(mb, b), match, structural_differences(match))
