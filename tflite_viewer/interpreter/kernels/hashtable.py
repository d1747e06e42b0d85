"""Lookup tables: HASHTABLE, HASHTABLE_IMPORT, HASHTABLE_FIND, HASHTABLE_SIZE (TF's static
hash tables, string -> int64 or int64 -> string) and the older HASHTABLE_LOOKUP.

A table is a resource like a resource variable: HASHTABLE names it by its ``table_id`` (its
output, a RESOURCE tensor, holds that id), the interpreter keeps it in its ``resources``
(under ``("hashtable", id)``) across invocations and subgraphs until `reset_variables`.  As
in LiteRT the first import fills the table and later ones are ignored; a lookup before any
import is an error.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .common import BuiltinOperator as Op, Kernel, option, register

_PAIRS = {("INT64", "STRING"), ("STRING", "INT64")}


@dataclass
class StaticHashtable:
    key_type: str
    value_type: str
    table: dict = field(default_factory=dict)
    initialized: bool = False

    def import_(self, keys: np.ndarray, values: np.ndarray) -> None:
        if self.initialized:  # the converter may leave two import nodes: the first wins
            return
        if keys.size != values.size:
            raise ValueError(f"{keys.size} keys for {values.size} values")
        for k, v in zip(keys.reshape(-1).tolist(), values.reshape(-1).tolist()):
            self.table[_key(k)] = v
        self.initialized = True

    def find(self, keys: np.ndarray, default: np.ndarray) -> np.ndarray:
        if not self.initialized:
            raise ValueError("hashtable need to be initialized before using")
        fallback = default.reshape(-1)[0]
        found = [self.table.get(_key(k), fallback) for k in keys.reshape(-1).tolist()]
        dtype = object if self.value_type == "STRING" else np.int64
        out = np.empty(len(found), dtype)
        out[:] = found
        return out.reshape(keys.shape)


def _key(k):
    return bytes(k) if isinstance(k, (bytes, bytearray, np.bytes_)) else int(k)


def _table(ctx, node, k: int = 0) -> StaticHashtable:
    tid = int(np.asarray(ctx.value(node, k)).reshape(-1)[0])
    table = ctx.interpreter.resources.get(("hashtable", tid))
    if table is None:
        raise ValueError(f"hashtable {tid} is used before a HASHTABLE op created it")
    return table


@register(Op.HASHTABLE, versions=(1, 1))
class Hashtable(Kernel):
    """Creates table ``table_id`` (once) and outputs its id."""

    types = "any"
    dtypes = ("STRING->INT64 or INT64->STRING tables",)

    def check(self, ctx, node):
        pair = (str(option(node, "key_dtype", "")), str(option(node, "value_dtype", "")))
        if pair not in _PAIRS:
            return (f"HASHTABLE v{node.version} from {pair[0]} to {pair[1]}: LiteRT's tables "
                    "map STRING to INT64 or INT64 to STRING")
        return None

    def prepare(self, ctx, node):
        ctx.resize(ctx.output(node, 0), ctx.output(node, 0).shape or (1,))

    def invoke(self, ctx, node):
        tid = int(option(node, "table_id", 0))
        ctx.interpreter.resources.setdefault(
            ("hashtable", tid), StaticHashtable(str(option(node, "key_dtype")),
                                                str(option(node, "value_dtype"))))
        out = ctx.output(node, 0)
        ctx.set_output(out, np.full(out.shape, tid, np.int32))


@register(Op.HASHTABLE_IMPORT, versions=(1, 1))
class HashtableImport(Kernel):
    """Inputs: the table handle, keys, values (same size); no output."""

    types = "any"
    dtypes = ("RESOURCE handle; STRING/INT64 keys and values",)

    def prepare(self, ctx, node):
        pass

    def invoke(self, ctx, node):
        _table(ctx, node).import_(ctx.value(node, 1), ctx.value(node, 2))


@register(Op.HASHTABLE_FIND, versions=(1, 1))
class HashtableFind(Kernel):
    """Inputs: the table handle, keys, the default value; output: a value per key."""

    types = "any"
    dtypes = ("RESOURCE handle; STRING/INT64 keys and values",)

    def prepare(self, ctx, node):
        out = ctx.output(node, 0)
        if out.type_name == "STRING":
            ctx.set_dynamic(out)
        else:
            ctx.resize(out, ctx.input(node, 1).shape)

    def invoke(self, ctx, node):
        ctx.set_output(ctx.output(node, 0),
                       _table(ctx, node).find(ctx.value(node, 1), ctx.value(node, 2)))


@register(Op.HASHTABLE_SIZE, versions=(1, 1))
class HashtableSize(Kernel):
    """The number of entries, as INT64 [1]."""

    types = "any"
    dtypes = ("RESOURCE handle; STRING/INT64 keys and values",)

    def prepare(self, ctx, node):
        ctx.resize(ctx.output(node, 0), (1,))

    def invoke(self, ctx, node):
        ctx.set_output(ctx.output(node, 0), np.array([len(_table(ctx, node).table)], np.int64))


def hashtable_lookup(lookup: np.ndarray, keys: np.ndarray, values: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``values`` whose key (``keys``: sorted int32) matches each lookup, zeros (or
    empty strings) where none does, and the hits (1/0) as uint8."""
    pos = np.searchsorted(keys, lookup)
    safe = np.minimum(pos, max(keys.size - 1, 0))
    hit = (pos < keys.size) & (keys[safe] == lookup) if keys.size else np.zeros(lookup.shape, bool)
    if values.dtype == object:
        out = np.empty(lookup.shape, object)
        out[:] = [values[i] if h else b"" for i, h in zip(safe.tolist(), hit.tolist())]
    else:
        out = np.where(hit.reshape((-1,) + (1,) * (values.ndim - 1)), values[safe], 0
                       ).astype(values.dtype)
    return out, hit.astype(np.uint8)


@register(Op.HASHTABLE_LOOKUP, versions=(1, 1))
class HashtableLookup(Kernel):
    """Inputs: lookup keys (INT32 [n]), sorted keys (INT32 [rows]), values [rows, ...]."""

    types = "any"
    dtypes = ("INT32 keys; values of any type",)

    def check(self, ctx, node):
        lk, keys = ctx.input(node, 0), ctx.input(node, 1)
        if lk.type_name != "INT32" or keys.type_name != "INT32":
            return f"HASHTABLE_LOOKUP v{node.version}: lookups and keys must be INT32"
        return None

    def prepare(self, ctx, node):
        n = ctx.input(node, 0).shape[0]
        value = ctx.input(node, 2)
        if value.type_name == "STRING":
            ctx.set_dynamic(ctx.output(node, 0))
        else:
            ctx.resize(ctx.output(node, 0), (n,) + tuple(value.shape[1:]))
        ctx.resize(ctx.output(node, 1), (n,))

    def invoke(self, ctx, node):
        values = ctx.value(node, 2)
        if values.shape[0] == 0:
            raise ValueError("HASHTABLE_LOOKUP of an empty table")
        out, hits = hashtable_lookup(ctx.value(node, 0), ctx.value(node, 1), values)
        ctx.set_output(ctx.output(node, 0), out)
        ctx.set_output(ctx.output(node, 1), hits)
