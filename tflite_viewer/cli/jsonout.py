"""Strict JSON for every document the command line writes.

Python's `json` writes ``NaN`` and ``Infinity`` for non-finite floats, which jq,
JavaScript's JSON.parse and Go refuse.  A model can hold such numbers (a NaN scale, an
infinite option value), so every JSON document goes through `dumps`:

* a non-finite float becomes ``null``;
* when the document has a ``"findings"`` list, one finding per replaced number says where
  it was and what it was (``{"severity": "warning", "where": "subgraphs[0].tensors[3]
  .quantization.scale[0]", "message": "non-finite number nan written as null"}``);
* the text is produced with ``allow_nan=False``, so nothing non-standard can slip out.

numpy arrays and scalars become lists and Python numbers; bytes become
``{"bytes_hex": "..."}``.
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def strict(value: Any, path: str = "", replaced: list[tuple[str, str]] | None = None) -> Any:
    """``value`` with non-finite floats as None (their paths and values in ``replaced``)."""
    if isinstance(value, dict):
        return {str(k): strict(v, f"{path}.{k}" if path else str(k), replaced)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v, f"{path}[{i}]", replaced) for i, v in enumerate(value)]
    if isinstance(value, np.ndarray):
        return strict(value.tolist(), path, replaced)
    if isinstance(value, np.generic):
        return strict(value.item(), path, replaced)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"bytes_hex": bytes(value).hex()}
    if isinstance(value, complex):
        return [strict(value.real, f"{path}.real", replaced),
                strict(value.imag, f"{path}.imag", replaced)]
    if isinstance(value, float) and not math.isfinite(value):
        if replaced is not None:
            replaced.append((path or "<root>", repr(value)))
        return None
    return value


def dumps(doc: Any, indent: int | None = 1) -> str:
    """The document as strict JSON (see the module docstring)."""
    replaced: list[tuple[str, str]] = []
    clean = strict(doc, "", replaced)
    if replaced and isinstance(clean, dict) and isinstance(clean.get("findings"), list):
        clean["findings"].extend(
            {"severity": "warning", "where": where,
             "message": f"non-finite number {text} written as null"}
            for where, text in replaced)
    return json.dumps(clean, indent=indent, allow_nan=False)
