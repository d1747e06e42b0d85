"""Which constants of a quantized model are its weights, in which form, used how.

The forms the TFLite converter and litert_quantizer write:

* **per-tensor** / **per-channel**: an integer constant (INT2, INT4, INT8, INT16, UINT8)
  with one scale, or one per index of ``quantized_dimension``;
* **blockwise**: an integer constant with BlockwiseQuantization details: a FLOAT16 scale
  (and optionally a zero point) per block of ``block_size`` values along the last axis
  (the converter's ``dynamic_int4_block32``, the quantizer's ``dynamic_wi4b32_afp32``);
* **float16** / **bfloat16**: a FLOAT16 or BFLOAT16 constant an op reads, widened to
  float32 by a DEQUANTIZE (the converter's float16 models).

How the model uses a weight:

* **weight-only**: read through a DEQUANTIZE, the op computes in float;
* **dynamic** (hybrid): an op with float activations reads the integer weight itself
  (activations quantized on the fly by the kernel);
* **static**: the op's output is integer too: ``a8w8`` (int8 activations), ``a16w8``
  (int16 activations, the quantizer's ``static_wi8_ai16``);
* **float**: a float16/bfloat16 weight, computed in float32.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..model import Model
from .ranges import QUANTIZABLE_TYPES

#: float types a weight may be stored in and widened from at run time
FLOAT_STORAGE = {"FLOAT16": "float16", "BFLOAT16": "bfloat16"}
#: bits of each integer type, for the static scheme's name (a8w8, a16w8)
_BITS = {"INT2": 2, "INT4": 4, "UINT4": 4, "INT8": 8, "UINT8": 8, "INT16": 16, "UINT16": 16}


#: the fields of a `WeightForm` (its dict, `summary`'s rows less the count)
WEIGHT_FIELDS = ("form", "type_name", "usage", "block_size", "zero_points")


@dataclass(frozen=True)
class WeightForm:
    """The form of one weight and how the op reading it uses it."""

    form: str                   # per-tensor, per-channel, blockwise, float16, bfloat16
    type_name: str
    usage: str                  # weight-only, dynamic, static a8w8, ..., float
    block_size: int | None = None
    zero_points: bool = False   # blockwise: a zero-point tensor is given

    def describe(self) -> str:
        """``INT4 blockwise (block 32), dynamic``."""
        what = self.form
        if self.block_size:
            what += f" (block {self.block_size}{', zero points' if self.zero_points else ''})"
        return f"{self.type_name} {what}, {self.usage}"

    def to_dict(self) -> dict:
        return {"form": self.form, "type_name": self.type_name, "usage": self.usage,
                "block_size": self.block_size, "zero_points": self.zero_points}


def weight_form(tensor, readers: list) -> WeightForm | None:
    """The form of a constant ``tensor`` read by the operators ``readers``, or None when
    it is not a quantized (or reduced-precision float) weight."""
    if not tensor.is_constant or not readers:
        return None
    q = tensor.quantization
    name = tensor.type_name
    if name in FLOAT_STORAGE:
        return WeightForm(FLOAT_STORAGE[name], name, "float")
    if name not in QUANTIZABLE_TYPES or q is None:
        return None
    b = q.blockwise
    if b is not None:
        return WeightForm("blockwise", name, _usage(tensor, readers), b.block_size,
                          b.zero_points >= 0)
    if not q.has_scale:
        return None
    return WeightForm("per-channel" if q.scale.size > 1 else "per-tensor", name,
                      _usage(tensor, readers))


def _usage(tensor, readers: list) -> str:
    """How the ops reading ``tensor`` use it (module docstring)."""
    if any(op.opcode.name == "DEQUANTIZE" for op in readers):
        return "weight-only"
    sg = tensor.subgraph
    for op in readers:
        outs = [sg.tensors[o] for o in op.outputs if o >= 0]
        act = next((o.type_name for o in outs if o.type_name in _BITS), None)
        if act is not None:
            return f"static a{_BITS[act]}w{_BITS.get(tensor.type_name, 8)}"
    return "dynamic"


def readers_of(sg) -> dict[int, list]:
    """tensor -> the operators of subgraph ``sg`` that read it, in execution order."""
    users: dict[int, list] = {}
    for op in sg.operators:
        for i in op.inputs:
            if i >= 0:
                users.setdefault(i, []).append(op)
    return users


def widened_tensors(sg) -> set[int]:
    """The tensors of subgraph ``sg`` a DEQUANTIZE (or QUANTIZE) makes of a constant: a
    weight-only or float16 weight, widened at run time (its report is the weight's)."""
    const = sg.constant_mask
    return {op.outputs[0] for op in sg.operators
            if op.opcode.name in ("DEQUANTIZE", "QUANTIZE") and len(op.inputs)
            and 0 <= op.inputs[0] < len(const) and const[op.inputs[0]] and len(op.outputs)}


def model_weights(model: Model) -> list[tuple[int, int, WeightForm]]:
    """(subgraph, tensor, form) of every weight of every subgraph, in order."""
    out = []
    for sg in model.subgraphs:
        readers = readers_of(sg)
        for t in sg.tensors:
            if not t.is_constant:
                continue
            f = weight_form(t, readers.get(t.index, []))
            if f is not None:
                out.append((sg.index, t.index, f))
    return out


def is_quantized(model: Model) -> bool:
    """Whether anything in ``model`` is quantized: a tensor with a scale, blockwise
    details, or a reduced-precision float weight."""
    for sg in model.subgraphs:
        for t in sg.tensors:
            q = t.quantization
            if q is not None and (q.has_scale or q.blockwise is not None):
                return True
    return any(True for _ in model_weights(model))


def summary(forms: list[WeightForm]) -> list[dict]:
    """How many weights have each form, most common first."""
    counts: dict[WeightForm, int] = {}
    for f in forms:
        counts[f] = counts.get(f, 0) + 1
    return [{**f.to_dict(), "count": n} for f, n in
            sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].describe()))]
