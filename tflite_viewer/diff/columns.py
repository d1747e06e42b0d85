"""Fingerprints of every operator's options and every tensor's quantization, from columns.

Comparing two 20,000-operator models field by field through `Operator` and `Tensor` views
would decode 40,000 option tables (seconds).  The reader's `FileIndex` holds every table
of a type as columns, so one fingerprint per operator (its options tables' fields, custom
options bytes) and per tensor (its quantization parameters) costs a few numpy operations
per table type.  Equal fingerprints mean equal fields (defaults filled in, floats compared
by their bits so that a NaN equals itself); only the pairs whose fingerprints differ are
decoded, through the views, to say what differs.
"""
from __future__ import annotations

import numpy as np

from ..model import Model
from ..schema.schema_layout import LAYOUT

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _bits(values: np.ndarray) -> list:
    """Values as Python numbers, floats as their bit patterns (NaN == NaN)."""
    if values.dtype.kind == "f":
        values = np.ascontiguousarray(values).view(_UINT[values.dtype.itemsize])
    return values.tolist()


def _per_row(values: np.ndarray, lengths: np.ndarray) -> list[tuple]:
    flat = _bits(values)
    ends = np.cumsum(lengths).tolist()
    out, start = [], 0
    for end in ends:
        out.append(tuple(flat[start:end]))
        start = end
    return out


def _columns(model: Model, batch) -> list[list]:
    """Every field of every table in ``batch`` (an options or quantization table type)."""
    index = model.index
    cols = []
    for f in LAYOUT["objects"][batch.type_name]["fields"]:
        base, name = f["type"]["base"], f["name"]
        if f.get("deprecated"):
            continue
        if base == "Vector" and f["type"].get("element") not in (None, "Obj", "String",
                                                                 "Union"):
            values, _owner, lengths = index.vector(batch, name)
            present = batch.fo.get(name)
            rows = _per_row(values, lengths)
            if present is not None:  # an absent vector differs from an empty one
                rows = [r if p else None for r, p in zip(rows, present.tolist())]
            else:
                rows = [None] * len(batch)
            cols.append(rows)
        elif base == "String":
            cols.append(index.strings(batch, name))
        elif base in ("Union", "Obj", "Vector"):
            # a nested table: its offset says only where it is; a marker equal to nothing
            # makes every row that has one be decoded and compared through the views
            present = batch.fo.get(name)
            cols.append([object() if p else None for p in (
                present.tolist() if present is not None else [0] * len(batch))])
        else:
            cols.append(_bits(index.scalar(batch, name)))
    return cols


def _child_keys(model: Model, parent_batch, parent_rows: dict[int, int], n: int,
                type_suffixes: tuple[str, ...]) -> list[tuple]:
    """Per item (``parent_rows``: row in ``parent_batch`` -> item), the fields of its child
    tables of the given types, as one tuple."""
    keys: list[list] = [[] for _ in range(n)]
    for type_name, batches in model.index.batches.items():
        if not type_name.endswith(type_suffixes):
            continue
        for batch in batches:
            if batch.parent_batch is not parent_batch or len(batch) == 0:
                continue
            cols = _columns(model, batch)
            label = (batch.label, type_name)
            rows = zip(*cols) if cols else [()] * len(batch)
            for prow, values in zip(batch.parent.tolist(), rows):
                item = parent_rows.get(prow)
                if item is not None:
                    keys[item].append(label + (values,))
    return [tuple(k) if len(k) < 2 else tuple(sorted(k, key=repr)) for k in keys]


def _rows(model: Model, type_name: str, subgraph: int):
    index = model.index
    batch = index.table(type_name)
    rows = index.rows_of(batch, subgraph) if len(batch) else np.zeros(0, np.int64)
    return batch, rows


def option_keys(model: Model, subgraph: int) -> list[tuple]:
    """Per operator of ``subgraph``: its options tables' fields and custom options."""
    index = model.index
    ops, rows = _rows(model, "tflite.Operator", subgraph)
    order = {int(r): k for k, r in enumerate(rows.tolist())}
    keys = _child_keys(model, ops, order, len(rows), ("Options", "Options2"))
    if len(ops):
        values, _owner, lengths = index.vector(ops, "custom_options")
        fmt = index.scalar(ops, "custom_options_format")
        large = (index.scalar(ops, "large_custom_options_offset") != 0) | \
            (index.scalar(ops, "large_custom_options_size") != 0)
        if lengths.any() or fmt.any() or large.any():  # custom ops: their bytes too
            custom = _per_row(values, lengths)
            fmt_l, large_l = fmt.tolist(), large.tolist()
            keys = [k + (custom[r], fmt_l[r], large_l[r]) for k, r in zip(keys, rows.tolist())]
    return keys


def quantization_keys(model: Model, subgraph: int) -> list[tuple]:
    """Per tensor of ``subgraph``: its quantization table's fields (() when it has none)."""
    tensors, rows = _rows(model, "tflite.Tensor", subgraph)
    order = {int(r): k for k, r in enumerate(rows.tolist())}
    return _child_keys(model, tensors, order, len(rows), ("QuantizationParameters",))


def has_sparsity(model: Model, subgraph: int) -> list[bool]:
    tensors, rows = _rows(model, "tflite.Tensor", subgraph)
    fo = tensors.fo.get("sparsity")
    if fo is None:
        return [False] * len(rows)
    return (fo[rows] != 0).tolist()
