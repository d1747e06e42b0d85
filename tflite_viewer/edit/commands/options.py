"""Builtin and custom (FlexBuffer) operator options."""
from __future__ import annotations

from typing import Any

import numpy as np
from flatbuffers import flexbuffers

from ...model.errors import EditError
from ...model.operator import SUBGRAPH_FIELDS, load_flexbuffer
from ..op_version import builtin_name
from ..patch import FieldTarget
from ..tree import ModelTree, attr_name, schema_fields, union_member
from ..values import coerce_bool, coerce_field, coerce_float, coerce_int, display
from .base import EditCommand, Scope, lookup_operator

# -- builtin options -------------------------------------------------------------------------

class SetOption(EditCommand):
    """Set one field of an operator's builtin options (or builtin_options_2).

    ``value`` is typed by the schema: ints, floats, bools, enum names (``"VALID"``), or text
    that parses as one of them.  The field is looked up in whichever options table the
    operator carries; ``table="builtin_options_2"`` forces the second union.
    """

    def __init__(self, subgraph: int, operator: int, field_name: str, value: Any,
                 table: str | None = None) -> None:
        super().__init__()
        self.subgraph, self.operator, self.field, self.value = subgraph, operator, field_name, value
        self.table = table
        self._old: Any = None
        self._attr = ""
        self._new: Any = None
        self._target: Any = None
        self.description = f"Set subgraphs[{subgraph}].operators[{operator}].{field_name} = {value}"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, {self.operator})

    def _options(self, op) -> tuple[str, str, Any, str]:
        """(union field name, member table name, options object, enum)"""
        candidates = []
        if self.table in (None, "builtin_options") and op.builtinOptions is not None:
            candidates.append(("builtin_options", union_member("BuiltinOptions",
                                                                op.builtinOptionsType),
                               op.builtinOptions))
        if self.table in (None, "builtin_options_2") and op.builtinOptions2 is not None:
            candidates.append(("builtin_options_2", union_member("BuiltinOptions2",
                                                                  op.builtinOptions2Type),
                               op.builtinOptions2))
        if self.table not in (None, "builtin_options", "builtin_options_2"):
            raise EditError(f"table must be builtin_options or builtin_options_2, "
                            f"not {self.table!r}")
        where = f"subgraphs[{self.subgraph}].operators[{self.operator}]"
        if not candidates:
            raise EditError(f"{where}: the operator has no builtin options to set")
        for union, member, obj in candidates:
            if member and self.field in schema_fields(member):
                return union, member, obj, where
        names = sorted(f for _, m, _ in candidates if m for f in schema_fields(m))
        member = candidates[0][1] or "options"
        raise EditError(f"{where}: {member} has no field {self.field!r} "
                        f"(fields: {', '.join(names) or 'none'})")

    def _check(self, tree: ModelTree) -> None:
        sg, op = lookup_operator(tree, self.subgraph, self.operator)
        union, member, obj, where = self._options(op)
        spec = schema_fields(member)[self.field]
        path = f"{where}.{union}.{self.field}"
        new = coerce_field(spec, self.value, path)
        if self.field in SUBGRAPH_FIELDS.get(member, ()):
            n = len(tree.model.subgraphs or [])
            for v in (new if isinstance(new, list) else [new]):
                if not 0 <= v < n:
                    raise EditError(f"{path}: subgraph {v} out of range (0..{n - 1})")
        self._attr = attr_name(member, self.field)
        self._target = obj
        self._new = new
        self._union, self._member = union, member
        self.description = (f"Set {path} = {display(spec, new)}"
                            f" ({builtin_name(tree.model, op)})")

    def _do(self, tree: ModelTree) -> None:
        self._old = getattr(self._target, self._attr)
        setattr(self._target, self._attr, self._new)

    def targets(self, tree: ModelTree) -> list[FieldTarget] | None:
        path = (("subgraphs", self.subgraph), ("operators", self.operator), (self._union, None))
        return [FieldTarget(path, "tflite." + self._member, self.field,
                            getattr(self._target, self._attr), owner=self._target)]

    def _undo(self, tree: ModelTree) -> None:
        setattr(self._target, self._attr, self._old)


# -- custom options --------------------------------------------------------------------------

class _CustomOptionsEdit(EditCommand):
    def __init__(self, subgraph: int, operator: int) -> None:
        super().__init__()
        self.subgraph, self.operator = subgraph, operator
        self._op: Any = None
        self._old: Any = None
        self._new: np.ndarray | None = None

    def _decoded(self, tree: ModelTree) -> dict:
        sg, op = lookup_operator(tree, self.subgraph, self.operator)
        where = f"subgraphs[{self.subgraph}].operators[{self.operator}].custom_options"
        if builtin_name(tree.model, op) != "CUSTOM":
            raise EditError(f"{where}: {builtin_name(tree.model, op)} is not a custom op")
        if op.customOptionsFormat != 0:
            raise EditError(f"{where}: not in FlexBuffers format")
        self._op = op
        if op.customOptions is None or len(op.customOptions) == 0:
            return {}
        try:
            value = load_flexbuffer(bytes(np.asarray(op.customOptions, dtype=np.uint8)))
        except ValueError:
            raise EditError(f"{where}: the custom options are not a FlexBuffer map "
                            "(raw bytes cannot be edited by key)") from None
        if not isinstance(value, dict):
            raise EditError(f"{where}: the custom options are a FlexBuffer "
                            f"{type(value).__name__}, not a map")
        return value

    def _encode(self, value: dict) -> None:
        self._new = np.frombuffer(bytes(flexbuffers.Dumps(value)), dtype=np.uint8)

    def _do(self, tree: ModelTree) -> None:
        self._old = self._op.customOptions
        self._op.customOptions = self._new

    def targets(self, tree: ModelTree) -> list[FieldTarget] | None:
        if self._op in tree.large_custom_ops:
            return None  # stored after the flatbuffer: serialized
        return [FieldTarget((("subgraphs", self.subgraph), ("operators", self.operator)),
                            "tflite.Operator", "custom_options", self._new, owner=self._op)]

    def _undo(self, tree: ModelTree) -> None:
        self._op.customOptions = self._old


def _like(old: Any, value: Any, where: str) -> Any:
    """A text value typed like the key's current value (the UI edits text)."""
    if not isinstance(value, str) or old is None or isinstance(old, str):
        return value
    if isinstance(old, bool):
        return coerce_bool(value, where)
    if isinstance(old, int):
        return coerce_int(value, where, "Long")
    if isinstance(old, float):
        return coerce_float(value, where)
    return value


class SetCustomOption(_CustomOptionsEdit):
    """Set (or add) one key of a custom op's FlexBuffer options map."""

    def __init__(self, subgraph: int, operator: int, key: str, value: Any) -> None:
        super().__init__(subgraph, operator)
        self.key, self.value = key, value
        self.description = f"Set custom option {key} = {value!r} of subgraphs[{subgraph}].operators[{operator}]"

    def _check(self, tree: ModelTree) -> None:
        options = self._decoded(tree)
        where = f"subgraphs[{self.subgraph}].operators[{self.operator}].custom_options.{self.key}"
        value = _like(options.get(self.key), self.value, where)
        if isinstance(value, np.generic):
            value = value.item()
        if not isinstance(value, (int, float, bool, str, bytes, list, dict)) or value is None:
            raise EditError(f"{where}: {type(value).__name__} cannot be stored in a FlexBuffer")
        options[self.key] = value
        try:
            self._encode(options)
        except Exception as exc:  # noqa: BLE001 - the encoder's own errors
            raise EditError(f"{where}: cannot encode {value!r}: {exc}") from None


class RemoveCustomOption(_CustomOptionsEdit):
    """Remove one key of a custom op's FlexBuffer options map."""

    def __init__(self, subgraph: int, operator: int, key: str) -> None:
        super().__init__(subgraph, operator)
        self.key = key
        self.description = f"Remove custom option {key} of subgraphs[{subgraph}].operators[{operator}]"

    def _check(self, tree: ModelTree) -> None:
        options = self._decoded(tree)
        if self.key not in options:
            raise EditError(f"subgraphs[{self.subgraph}].operators[{self.operator}]."
                            f"custom_options: no key {self.key!r} "
                            f"(keys: {', '.join(options) or 'none'})")
        del options[self.key]
        self._encode(options)
