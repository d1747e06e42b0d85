"""One difference between two models, as data and as a line of text.

A `Difference` says what (``category``: model, signature, subgraph, operator, tensor),
how (``change``: added, removed, changed), which field for a change (``version``,
``options.stride_w``, ``fused_activation``, ``inputs[1]``, ``quantization``, ``values``,
``min_runtime_version``, ``metadata.NAME``, ...), where on each side (``a`` / ``b``:
subgraph, index and name), the old and new values, and a detail sentence (the value
statistics of a changed constant, what an inserted op is, which tensors a list gained).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

CATEGORIES = ("model", "signature", "subgraph", "operator", "tensor")
CHANGES = ("added", "removed", "changed")
_SIGN = {"added": "+", "removed": "-", "changed": "~"}


class Ref(NamedTuple):
    """An item on one side: (subgraph, index) and its name (op type or tensor name); for
    signatures and model-level items ``index`` is -1 and ``name`` the key.  (A tuple: a
    diff of two 20,000-op models makes tens of thousands.)"""

    subgraph: int
    index: int
    name: str = ""

    @property
    def key(self) -> tuple[int, int]:
        return (self.subgraph, self.index)

    def to_dict(self) -> dict[str, Any]:
        return {"subgraph": self.subgraph, "index": self.index, "name": self.name}


@dataclass(frozen=True)
class Difference:
    category: str
    change: str
    field: str = ""
    a: Ref | None = None
    b: Ref | None = None
    old: Any = None
    new: Any = None
    detail: str = ""

    @property
    def ref(self) -> Ref | None:
        return self.a if self.a is not None else self.b

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "change": self.change, "field": self.field,
                "a": self.a.to_dict() if self.a else None,
                "b": self.b.to_dict() if self.b else None,
                "old": self.old, "new": self.new, "detail": self.detail}

    def where(self) -> str:
        """``operator 3 CONV_2D (B 4)``, ``tensor 12 'w'``, ``signature 'serving'``."""
        a, b = self.a, self.b
        if self.category == "model":
            return "model"
        if self.category == "signature":
            return f"signature {self.ref.name!r}"
        if self.category == "subgraph":
            ref = self.ref
            side = "" if a is not None else "B "
            return f"{side}subgraph {ref.subgraph}" + (f" {ref.name!r}" if ref.name else "")
        noun = self.category
        sg = (lambda r: f"{r.subgraph}:" if r.subgraph else "")
        shown = (lambda r: r.name if self.category == "operator" else repr(_elide(r.name)))
        if a is not None and b is not None:
            head = f"{noun} {sg(a)}{a.index} {shown(a)}"
            if b.key != a.key:
                head += f" (B {sg(b)}{b.index}" + (
                    f" {shown(b)})" if b.name != a.name else ")")
            return head
        ref = a if a is not None else b
        return f"{noun} {'' if a is not None else 'B '}{sg(ref)}{ref.index} {shown(ref)}"

    def line(self) -> str:
        text = f"{_SIGN[self.change]} {self.where()}"
        if self.change == "changed":
            text += f": {self.field}"
            if self.old is not None or self.new is not None:
                text += f": {_show(self.old)} -> {_show(self.new)}"
        else:
            text += f": {self.field + ' ' if self.field else ''}{self.change}"
        if self.detail:
            text += f" ({self.detail})"
        return text


def _elide(name: str, limit: int = 64) -> str:
    """A long tensor name (converters join scopes into hundreds of characters) shortened in
    the middle for a line of text; JSON keeps it whole."""
    if len(name) <= limit:
        return name
    half = (limit - 3) // 2
    return name[:half] + "..." + name[-half:]


def _show(value: Any, limit: int = 60) -> str:
    text = "(none)" if value is None else (repr(value) if isinstance(value, str) else str(value))
    return text if len(text) <= limit else text[:limit - 3] + "..."


def sort_key(d: Difference) -> tuple:
    ref = d.ref
    sub = ref.subgraph if ref is not None else -1
    order = CATEGORIES.index(d.category)
    if d.category in ("operator", "tensor"):
        order = 3  # ops and tensors of a subgraph interleave by index
    idx = ref.index if ref is not None else -1
    return (order if d.category in ("model", "signature") else 2, sub, order, d.category,
            0 if d.a is not None else 1, idx, d.field)
