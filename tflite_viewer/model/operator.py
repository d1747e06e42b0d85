"""Operator views: opcode, tensor indices, options as dicts, custom options."""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from flatbuffers import flexbuffers

from ..schema import schema_generated as S
from ..schema.schema_layout import LAYOUT
from .options import table_to_dict, union_value

if TYPE_CHECKING:
    from .model import Model, OperatorCode
    from .subgraph import Subgraph

_OP_FIELDS = LAYOUT["objects"]["tflite.Operator"]["fields"]
_OPTIONS_FIELD = next(f for f in _OP_FIELDS if f["name"] == "builtin_options")
_OPTIONS2_FIELD = next(f for f in _OP_FIELDS if f["name"] == "builtin_options_2")
_EMPTY = np.zeros(0, dtype=np.int32)

# Subgraph-index fields of options tables: which subgraphs an operator calls.
SUBGRAPH_FIELDS = {
    "WhileOptions": ("cond_subgraph_index", "body_subgraph_index"),
    "IfOptions": ("then_subgraph_index", "else_subgraph_index"),
    "CallOnceOptions": ("init_subgraph_index",),
    "CallOptions": ("subgraph",),
    "StablehloWhileOptions": ("cond_subgraph_index", "body_subgraph_index"),
    "StablehloReduceOptions": ("body_subgraph_index",),
    "StablehloReduceWindowOptions": ("body_subgraph_index",),
    "StablehloSortOptions": ("comparator_subgraph_index",),
    "StablehloScatterOptions": ("update_computation_subgraph_index",),
    "StableHLOCompositeOptions": ("decomposition_subgraph_index",),
    "StablehloCaseOptions": ("branch_subgraph_indices",),
}


class Operator:
    """One operator (a node) of a subgraph."""

    def __init__(self, subgraph: "Subgraph", index: int, fb: S.Operator) -> None:
        self.subgraph = subgraph
        self.index = index
        self._fb = fb

    def __repr__(self) -> str:
        return f"<Operator {self.index} {self.name} v{self.version}>"

    @property
    def model(self) -> "Model":
        return self.subgraph.model

    @property
    def where(self) -> str:
        return f"subgraphs[{self.subgraph.index}].operators[{self.index}]"

    # -- what it is ----------------------------------------------------------------------
    @cached_property
    def opcode_index(self) -> int:
        return int(self._fb.OpcodeIndex())

    @property
    def opcode(self) -> "OperatorCode":
        return self.model.operator_codes[self.opcode_index]

    @property
    def name(self) -> str:
        """`CONV_2D`, or the custom code for custom ops."""
        return self.opcode.name

    @property
    def builtin_code(self) -> int:
        return self.opcode.builtin_code

    @property
    def version(self) -> int:
        return self.opcode.version

    @property
    def category(self) -> str:
        return self.opcode.category

    # -- tensors -------------------------------------------------------------------------
    @cached_property
    def inputs_array(self) -> np.ndarray:
        return self._fb.InputsAsNumpy() if not self._fb.InputsIsNone() else _EMPTY

    @cached_property
    def outputs_array(self) -> np.ndarray:
        return self._fb.OutputsAsNumpy() if not self._fb.OutputsIsNone() else _EMPTY

    @cached_property
    def intermediates_array(self) -> np.ndarray:
        return self._fb.IntermediatesAsNumpy() if not self._fb.IntermediatesIsNone() else _EMPTY

    @cached_property
    def inputs(self) -> tuple[int, ...]:
        """Tensor indices; -1 marks an omitted optional input."""
        return tuple(int(i) for i in self.inputs_array)

    @cached_property
    def outputs(self) -> tuple[int, ...]:
        return tuple(int(i) for i in self.outputs_array)

    @cached_property
    def intermediates(self) -> tuple[int, ...]:
        return tuple(int(i) for i in self.intermediates_array)

    @cached_property
    def mutating_variable_inputs(self) -> tuple[bool, ...]:
        if self._fb.MutatingVariableInputsIsNone():
            return ()
        return tuple(bool(b) for b in self._fb.MutatingVariableInputsAsNumpy())

    # -- options -------------------------------------------------------------------------
    @cached_property
    def _options(self) -> tuple[str | int | None, dict]:
        return _union_options(self._fb, _OPTIONS_FIELD, "tflite.BuiltinOptions")

    @cached_property
    def _options2(self) -> tuple[str | int | None, dict]:
        return _union_options(self._fb, _OPTIONS2_FIELD, "tflite.BuiltinOptions2")

    @property
    def builtin_options_type(self) -> str | int | None:
        """`Conv2DOptions`, a number for options newer than our schema, or None."""
        return self._options[0]

    @property
    def builtin_options(self) -> dict[str, Any]:
        """Every field of the builtin options, enum values by name (`{"padding": "SAME"}`)."""
        return self._options[1]

    @property
    def builtin_options_2_type(self) -> str | int | None:
        return self._options2[0]

    @property
    def builtin_options_2(self) -> dict[str, Any]:
        return self._options2[1]

    @property
    def options(self) -> dict[str, Any]:
        """builtin_options and builtin_options_2 merged (an op uses at most one of them)."""
        return {**self.builtin_options, **self.builtin_options_2}

    @cached_property
    def fused_activation(self) -> str | None:
        act = self.options.get("fused_activation_function")
        return act if act not in (None, "NONE", 0) else None

    @cached_property
    def called_subgraphs(self) -> dict[str, int]:
        """Subgraphs this operator runs, by role: {"cond": 1, "body": 2} for WHILE."""
        out: dict[str, int] = {}
        for otype, opts in ((self.builtin_options_type, self.builtin_options),
                            (self.builtin_options_2_type, self.builtin_options_2)):
            for field in SUBGRAPH_FIELDS.get(str(otype), ()):
                value = opts.get(field)
                role = field.replace("_subgraph_index", "").replace("_indices", "")
                if isinstance(value, list):
                    out.update({f"{role}[{i}]": int(v) for i, v in enumerate(value)})
                elif value is not None:
                    out[role] = int(value)
        return out

    # -- composites ----------------------------------------------------------------------
    @property
    def composite_name(self) -> str | None:
        """A STABLEHLO_COMPOSITE's name (``odml.scaled_dot_product_attention``), else None."""
        if self.builtin_options_2_type != "StableHLOCompositeOptions":
            return None
        name = self.builtin_options_2.get("name")
        return str(name) if name else None

    @cached_property
    def composite_attributes(self) -> Any:
        """A STABLEHLO_COMPOSITE's ``composite_attributes`` decoded from FlexBuffers (a
        dict such as ``{"scale": 0.25}``); the raw bytes when they are in another format
        or do not decode; None when the op is no composite or has none."""
        if self.builtin_options_2_type != "StableHLOCompositeOptions":
            return None
        opts = self.builtin_options_2
        raw = opts.get("composite_attributes")
        if not raw:
            return None
        raw = bytes(raw)
        if opts.get("composite_attributes_format", "FLEXBUFFERS") != "FLEXBUFFERS":
            return raw
        try:
            return flexbuffers.Loads(raw)
        except Exception:  # noqa: BLE001 - arbitrary bytes: anything may fail inside
            return raw

    # -- custom options ------------------------------------------------------------------
    @cached_property
    def custom_options_bytes(self) -> bytes | None:
        """Raw custom options, inline or (large_custom_options) stored after the flatbuffer."""
        if not self._fb.CustomOptionsIsNone():
            return self._fb.CustomOptionsAsNumpy().tobytes()
        off, size = self.large_custom_options_offset, self.large_custom_options_size
        if off > 1 and size:
            data = self.model.data
            if off + size > data.size:
                return None
            return data[off:off + size].tobytes()
        return None

    @property
    def custom_options_format(self) -> str | int:
        from .options import enum_name
        return enum_name(LAYOUT, "tflite.CustomOptionsFormat", self._fb.CustomOptionsFormat())

    @cached_property
    def custom_options(self) -> Any:
        """Custom options decoded from FlexBuffers, or the raw bytes when they are not one
        (some custom ops, e.g. MediaPipe's, store a packed C struct)."""
        raw = self.custom_options_bytes
        if raw is None:
            return None
        if self.custom_options_format == "FLEXBUFFERS":
            try:
                return load_flexbuffer(raw)
            except ValueError:
                return raw
        return raw

    @property
    def large_custom_options_offset(self) -> int:
        return int(self._fb.LargeCustomOptionsOffset())

    @property
    def large_custom_options_size(self) -> int:
        return int(self._fb.LargeCustomOptionsSize())

    @property
    def debug_metadata_index(self) -> int:
        return int(self._fb.DebugMetadataIndex())


def _union_options(fb: S.Operator, field: dict, enum: str) -> tuple[str | int | None, dict]:
    member, sub = union_value(LAYOUT, enum, fb._tab, _OP_FIELDS, field)
    if member is None:
        return None, {}
    if sub is None:
        return member, {}
    return member.split(".")[-1], table_to_dict(LAYOUT, member, sub)


#: what a FlexBuffer may decode to: at most this many values, of which at most
#: `MAX_FLEXBUFFER_NODES` vectors, maps or scalars outside typed vectors.  Its vectors may
#: share children, so a few hundred bytes of custom options can describe billions of values
#: (nested vectors whose elements all point at one vector); real custom options hold tens.
MAX_FLEXBUFFER_VALUES = 1 << 22
MAX_FLEXBUFFER_NODES = 1 << 16


def _flexbuffer_values(raw: bytes, values: int, nodes: int) -> int:
    """How many values decoding ``raw`` makes, counted without making them (typed vectors
    by their length); a ValueError as soon as the count passes a budget."""
    stack = [flexbuffers.GetRoot(raw)]
    count = visited = 0
    while stack:
        ref = stack.pop()
        visited += 1
        count += 1
        if ref.IsMap:
            children = ref.AsMap.Values
            count += len(children)  # the keys
        elif ref.IsVector:
            children = ref.AsVector
        elif ref.IsTypedVector or ref.IsFixedTypedVector:
            count += len(ref.AsTypedVector if ref.IsTypedVector else ref.AsFixedTypedVector)
            children = ()
        else:
            children = ()
        if count + len(children) > values:
            raise ValueError(f"the FlexBuffer decodes to more than {values:,} values "
                             "(its vectors share children)")
        if visited + len(stack) + len(children) > nodes:
            raise ValueError(f"the FlexBuffer holds more than {nodes:,} vectors, maps and "
                             "scalars (its vectors share children)")
        stack.extend(children[i] for i in range(len(children)))
    return count


def load_flexbuffer(raw: bytes, values: int = MAX_FLEXBUFFER_VALUES,
                    nodes: int = MAX_FLEXBUFFER_NODES) -> Any:
    """``flexbuffers.Loads(raw)`` for untrusted bytes: a ValueError (never another
    exception, a hang or a memory blow-up) when they are not a FlexBuffer or decode to more
    than the budgets allow."""
    try:
        _flexbuffer_values(raw, values, nodes)
        return flexbuffers.Loads(raw)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - arbitrary bytes: anything may fail inside
        raise ValueError(f"not a FlexBuffer ({type(exc).__name__}: {exc})") from None
