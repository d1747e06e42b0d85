"""What Find (Ctrl+F) matches in a subgraph, without Qt.

A query is read the way users type it:
- ``CONV_2D``: operators of that type, and tensors whose name holds it as a whole word;
  a STABLEHLO_COMPOSITE also by its composite name (``rms_norm``, ``odml.rms_norm``);
- ``#12``, ``op:12`` or ``op 12``: operator 12;
- ``t:12``, ``tensor:12``: tensor 12;
- ``12`` alone: operator 12 and tensor 12.
Names are compared case-insensitively, in one of three modes: ``WORD`` (the default) matches
the whole operator name or a whole word of a tensor name (``CONV_2D`` does not find
``DEPTHWISE_CONV_2D``; ``conv`` finds ``MobilenetV2/Conv/Relu6``), ``CONTAINS`` any
substring, ``REGEX`` a regular expression searched in the name.
Operators come first, in execution order, then tensors by index.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...model import Model

WORD, CONTAINS, REGEX = "word", "contains", "regex"
MODES = (WORD, CONTAINS, REGEX)
_OP_INDEX = re.compile(r"^(?:#|op[:\s]\s*)(\d+)$", re.I)
_TENSOR_INDEX = re.compile(r"^(?:t|tensor)[:\s]\s*(\d+)$", re.I)


@dataclass(frozen=True)
class Match:
    kind: str  # "op" or "tensor"
    index: int
    text: str


def name_matcher(query: str, mode: str = WORD):
    """A predicate on names for ``query`` in ``mode``; ValueError for a bad regex."""
    if mode == CONTAINS:
        needle = query.lower()
        return lambda name: needle in name.lower()
    if mode == REGEX:
        try:
            pattern = re.compile(query, re.I)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
    elif mode == WORD:
        # a word ends where letters, digits and underscores do (so _ joins CONV and 2D)
        pattern = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(query)}(?![A-Za-z0-9_])", re.I)
    else:
        raise ValueError(f"unknown find mode {mode!r} (use one of {', '.join(MODES)})")
    return lambda name: pattern.search(name) is not None


def find(model: Model, subgraph: int, query: str, limit: int = 10_000, mode: str = WORD) -> list[Match]:
    """Every match of ``query`` in subgraph ``subgraph`` (see the module docstring)."""
    q = query.strip()
    if not q:
        return []
    sg = model.subgraphs[subgraph]
    codes = model.operator_codes
    opcode_index = sg.columns.opcode_index
    n_ops, n_tensors = int(opcode_index.size), len(sg.tensors)

    def op_match(k: int) -> Match:
        return Match("op", k, f"#{k} {codes[int(opcode_index[k])].name}")

    def tensor_match(t: int) -> Match:
        return Match("tensor", t, f"tensor {t} {sg.tensors[t].name}")

    m = _OP_INDEX.match(q)
    if m:
        k = int(m.group(1))
        return [op_match(k)] if k < n_ops else []
    m = _TENSOR_INDEX.match(q)
    if m:
        t = int(m.group(1))
        return [tensor_match(t)] if t < n_tensors else []
    out: list[Match] = []
    if q.isdigit():
        i = int(q)
        if i < n_ops:
            out.append(op_match(i))
        if i < n_tensors:
            out.append(tensor_match(i))
        return out
    matches = name_matcher(q, mode)
    hit_codes = {c.index for c in codes if matches(c.name)}
    # a composite also answers to its own name (``rms_norm`` finds odml.rms_norm)
    composite_codes = {c.index for c in codes if c.name == "STABLEHLO_COMPOSITE"} - hit_codes
    if hit_codes or composite_codes:
        for k, code in enumerate(opcode_index.tolist()):
            if code in hit_codes:
                out.append(op_match(k))
            elif code in composite_codes:
                name = sg.operators[k].composite_name
                if not name or not matches(name):
                    continue
                out.append(Match("op", k, f"#{k} {name} (STABLEHLO_COMPOSITE)"))
            else:
                continue
            if len(out) >= limit:
                return out
    for t in range(n_tensors):
        if matches(sg.tensors[t].name):
            out.append(tensor_match(t))
            if len(out) >= limit:
                break
    return out
