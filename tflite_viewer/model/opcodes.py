"""Operator names and codes of the schema; the per-op facts are in op_metadata."""
from __future__ import annotations

from ..schema.schema_layout import LAYOUT
from . import op_metadata

BUILTIN_NAMES: dict[int, str] = LAYOUT["enums"]["tflite.BuiltinOperator"]["values"]
BUILTIN_CODES: dict[str, int] = {name: code for code, name in BUILTIN_NAMES.items()}
CUSTOM = BUILTIN_CODES["CUSTOM"]

def builtin_name(code: int) -> str:
    """The schema's name of a builtin code; codes newer than our schema show as numbers."""
    return BUILTIN_NAMES.get(int(code), str(int(code)))


def category(code: int) -> str:
    """The colouring category of a builtin code."""
    name = BUILTIN_NAMES.get(int(code))
    if name is None:
        return "unknown"
    return op_metadata.category(name)
