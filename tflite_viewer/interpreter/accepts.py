"""What each kernel implements, per input and output: tensor types and quantization forms.

No silent wrong result, as a rule: a kernel computes only the tensor types and the
quantization forms it was written for.  Each registration carries an `Accepts`
declaration; `check_accepts` (run by the builder for every node, before the kernel's own
check and before any weight is decoded) refuses everything else with an
`UnsupportedOpError` naming the op, the tensor and the form.  A kernel that ignored a
form's parameters (blockwise scales, a per-channel axis it does not read, custom details)
would compute plausible numbers that are wrong; refusing is the only honest answer.

A declaration is a *slot* per input position (plus one for the other inputs and one for
the outputs), written as text::

    "FLOAT32 FLOAT16: none | INT8 UINT8: per-tensor per-channel:0 | INT4: blockwise"

Groups are separated by ``|``; each is ``TYPES: FORMS``.  ``TYPES`` are TensorType names,
or ``*`` for every whole-byte type (sub-byte INT4, INT2 and UINT4 values are unpacked to
one int8 per value and must be named where a kernel reads them).  ``FORMS`` are
``none``, ``per-tensor``, ``per-channel:K`` (axis K; negative counts from the last;
``per-channel:*`` any axis), ``blockwise``, ``custom``, ``multi-axis`` (the forms of
`tflite_viewer.model.quantization`).

The default slot, for every input and output a kernel does not declare, is `BASIC`:
whole-byte types, unquantized or with one scale, and float, INT32, INT64 and BOOL tensors
with any parameters (their parameters define no value: neither LiteRT's kernels for these
types nor these read them; tests/interpreter/test_refusal_audit.py checks both).  A kernel that reads
per-channel or blockwise parameters says so on its register line.

What a weight may be often depends on the activations: a FULLY_CONNECTED with float input
takes FLOAT32 weights or quantized hybrid ones, with int8 input only int8 or int4 weights.
So a declaration may give slots per *node kind* (``kinds``: "float", "hybrid", "uint8",
"int8", "int16", as `registration.node_kind` names them, or the kernel's own
``node_kind``), which replace the general slots for nodes of that kind.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..model.quantization import FORMS
from .tensor import QUANTIZED_INT_TYPES

if TYPE_CHECKING:
    from .node import Node
    from .subgraph import Subgraph
    from .tensor import Tensor

#: types stored below a byte: the runtime holds one int8 (uint8) per value
SUB_BYTE = frozenset({"INT4", "INT2", "UINT4"})
_FORM_TOKENS = frozenset(FORMS) - {"per-channel"}


def tensor_form(t: "Tensor") -> tuple[str, int | None]:
    """(form, per-channel axis or None) of a runtime tensor's quantization."""
    q = t.quantization
    if q is None:
        return "none", None
    form = q.form
    if form != "per-channel":
        return form, None
    axis = q.effective_dimension(tuple(t.shape)) if t.shape is not None else None
    return form, q.quantized_dimension if axis is None else axis


def form_text(form: str, axis: int | None) -> str:
    """``per-channel:0`` for a per-channel form, the form's name otherwise."""
    return f"{form}:{axis}" if axis is not None else form


@dataclass(frozen=True)
class Slot:
    """Type and form combinations one input (or the outputs) accepts: a tuple of
    (type names, ``*`` listed or not, form tokens)."""

    combos: tuple[tuple[frozenset[str], bool, frozenset[str]], ...]
    text: str

    @classmethod
    def parse(cls, text: str) -> "Slot":
        combos = []
        for group in text.split("|"):
            types, sep, forms = group.partition(":")
            if not sep:
                raise ValueError(f"slot {text!r}: a group needs 'TYPES: FORMS'")
            names = frozenset(types.split())
            tokens = frozenset(forms.split())
            for tok in tokens:
                base, _, axis = tok.partition(":")
                if not (tok in _FORM_TOKENS or base == "per-channel" and (
                        axis == "*" or axis.lstrip("-").isdigit())):
                    raise ValueError(f"slot {text!r}: unknown form {tok!r}")
            combos.append((names - {"*"}, "*" in names, tokens))
        return cls(tuple(combos), " ".join(text.split()))

    def _forms_for(self, type_name: str) -> frozenset[str] | None:
        """The forms accepted for a type (None: the type is not accepted at all)."""
        found: set[str] | None = None
        for types, wildcard, forms in self.combos:
            if type_name in types or wildcard and type_name not in SUB_BYTE:
                found = (found or set()) | forms
        return None if found is None else frozenset(found)

    def allows(self, type_name: str, form: str, axis: int | None = None,
               rank: int | None = None) -> bool:
        forms = self._forms_for(type_name)
        if forms is None:
            return False
        if form != "per-channel":
            return form in forms
        for tok in forms:
            base, _, want = tok.partition(":")
            if base != "per-channel":
                continue
            if want == "*" or axis is not None and (
                    int(want) == axis or rank is not None and int(want) < 0
                    and int(want) + rank == axis):
                return True
        return False

    def accepts_type(self, type_name: str) -> bool:
        return self._forms_for(type_name) is not None

    def forms_for(self, type_name: str) -> tuple[str, ...]:
        """The form tokens accepted for ``type_name``, in `FORMS` order (for reports)."""
        forms = self._forms_for(type_name) or frozenset()
        order = {f: k for k, f in enumerate(FORMS)}
        return tuple(sorted(forms, key=lambda f: (order.get(f.partition(":")[0], 99), f)))

    def type_names(self) -> tuple[str, ...]:
        """The type names listed (``*`` for the whole-byte wildcard)."""
        out: list[str] = []
        for types, wildcard, _ in self.combos:
            for name in (("*",) if wildcard else ()) + tuple(sorted(types)):
                if name not in out:
                    out.append(name)
        return tuple(out)


BASIC = ("*: none per-tensor | FLOAT32 FLOAT16 BFLOAT16 FLOAT64 INT32 INT64 BOOL: "
         "per-channel:* blockwise custom multi-axis")


@dataclass(frozen=True)
class Accepts:
    """A kernel's declaration: a `Slot` per declared input position, the slot of every
    other input (``default``) and of the outputs; ``kinds`` the declarations that replace
    it for nodes of a kind."""

    inputs: dict[int, Slot] = field(default_factory=dict)
    default: Slot = field(default_factory=lambda: Slot.parse(BASIC))
    outputs: Slot = field(default_factory=lambda: Slot.parse(BASIC))
    kinds: dict[str, "Accepts"] = field(default_factory=dict)
    #: input positions whose scales the kernel only multiplies stored values by (a
    #: weight, a table, DEQUANTIZE's input): a zero or negative scale there means what
    #: it says, as in LiteRT (`check_scales`)
    multiplied: frozenset[int] = frozenset()

    def slot(self, pos: int) -> Slot:
        return self.inputs.get(pos, self.default)

    def for_kind(self, kind: str) -> "Accepts":
        return self.kinds.get(kind, self)


def accepts(inputs: dict[int, str] | None = None, default: str = BASIC,
            outputs: str = BASIC, kinds: dict[str, dict[int, str]] | None = None,
            multiplied: tuple[int, ...] = ()) -> Accepts:
    """An `Accepts` from slot texts (see the module docstring).  ``kinds`` maps a node kind
    to input slots that replace ``inputs``' for nodes of that kind (the other inputs and
    the outputs keep ``default`` and ``outputs``); ``multiplied`` the input positions
    whose scales only multiply stored values (`Accepts.multiplied`)."""
    general = {int(k): Slot.parse(v) for k, v in (inputs or {}).items()}
    default_slot, out_slot = Slot.parse(default), Slot.parse(outputs)
    times = frozenset(multiplied)
    per_kind = {kind: Accepts({**general, **{int(k): Slot.parse(v) for k, v in slots.items()}},
                              default_slot, out_slot, multiplied=times)
                for kind, slots in (kinds or {}).items()}
    return Accepts(general, default_slot, out_slot, per_kind, times)


#: what every kernel accepts unless it declares more: whole-byte types, none or per-tensor
DEFAULT = accepts()
#: a float weight whatever quantization parameters it carries: they do not define float
#: values, and LiteRT's float kernels do not read them (measured on the weighted ops)
FLOAT_WEIGHT = "FLOAT32: none per-tensor per-channel:* blockwise custom multi-axis"
#: what a kernel that moves stored values (``Kernel.reads_scales`` False: RESHAPE, GATHER,
#: TRANSPOSE, ...) takes when it declares nothing: every whole-byte type in every form.
#: It copies the values whatever their parameters, as LiteRT's kernels do, and the kernel
#: that reads the moved tensor checks its parameters (measured by the refusal audit: a
#: per-channel or blockwise tensor carried through keeps its meaning)
MOVES = accepts(default="*: none per-tensor per-channel:* blockwise custom multi-axis",
                outputs="*: none per-tensor per-channel:* blockwise custom multi-axis")
#: every type and form (user kernels registered from Python: they read the tensors
#: themselves; and ops that only pass tensors on to another subgraph)
ANYTHING = accepts(default="* INT4 INT2 UINT4: none per-tensor per-channel:* blockwise "
                           "custom multi-axis",
                   outputs="* INT4 INT2 UINT4: none per-tensor per-channel:* blockwise "
                           "custom multi-axis")


def declaration(kernel) -> Accepts:
    """A kernel's `Accepts` (the class attribute ``accepts``); when it declares none,
    `MOVES` for a kernel that moves stored values, `DEFAULT` for any other."""
    decl = getattr(kernel, "accepts", None)
    if not isinstance(decl, Accepts) or decl is DEFAULT:
        return MOVES if not getattr(kernel, "reads_scales", True) else DEFAULT
    return decl


def _node_kind(ctx: "Subgraph", node: "Node") -> str:
    from .registration import node_kind  # (registration imports this module)
    return node_kind(ctx, node)


def litert_without_meaning(node: "Node", pos: int, t: "Tensor", form: str,
                           axis: int | None, kind: str | None) -> str | None:
    """What LiteRT 2.3.0's builtin kernel computes for a weight in a type and form it
    computes without meaning (the generated sweep, litert_forms.py: zeros, the bias
    alone, ignored scales), or None when the sweep does not say so."""
    from .litert_forms import LITERT_FORMS, WEIGHT_POSITIONS
    if WEIGHT_POSITIONS.get(node.name) != pos:
        return None
    act = "int8" if kind == "int8" else "float" if kind in ("float", "hybrid", None) else None
    rank = len(t.shape) if t.shape is not None else 0
    if form == "per-channel":
        form = "per-channel:0" if axis == 0 else "per-channel:last" if axis == rank - 1 \
            else form
    entry = LITERT_FORMS.get((node.name, act, t.type_name, form))
    return entry[2] if entry is not None and entry[0] == "wrong" else None


def _refusal(node: "Node", what: str, t: "Tensor", slot: Slot, form: str,
             axis: int | None, kind: str | None) -> str:
    q = t.quantization
    described = q.describe(t.shape) if q is not None else "no quantization parameters"
    of = f"{what} of a {kind} {node.name}" if kind else what
    pos = int(what.split()[-1]) if what.startswith("input ") else -1
    meaningless = litert_without_meaning(node, pos, t, form, axis, kind)
    if meaningless:
        return (f"{node.name} v{node.version} {what} (tensor {t.index} {t.name!r}): "
                f"{t.type_name} with {described} [{form_text(form, axis)}] is refused: "
                f"LiteRT 2.3.0 computes this form without meaning ({meaningless})")
    if not slot.accepts_type(t.type_name):
        wanted = ", ".join(slot.type_names()).replace("*", "whole-byte types")
        return (f"{node.name} v{node.version} {what} (tensor {t.index} {t.name!r}): "
                f"{t.type_name} is not implemented here ({of} takes {wanted})")
    forms = ", ".join(slot.forms_for(t.type_name))
    return (f"{node.name} v{node.version} {what} (tensor {t.index} {t.name!r}): "
            f"{t.type_name} with {described} [{form_text(form, axis)}] is not implemented "
            f"here ({of} takes {t.type_name} as: {forms})")


def check_accepts(ctx: "Subgraph", node: "Node") -> str | None:
    """Why a node's tensors are of a type or a quantization form its kernel does not
    declare (see the module docstring), or have scales it cannot use (`check_scales`), or
    None.  Reads only types, shapes and quantization parameters: no weight is decoded."""
    return _check_forms(ctx, node) or check_scales(ctx, node)


def _pairs(text: str) -> frozenset[tuple[str, str]]:
    return frozenset((op, t) for op, types in (g.split(":") for g in text.split())
                     for t in types.split(","))


#: (op, type) whose first input may have a zero scale: an activation that is 0 everywhere,
#: which LiteRT's kernel computes as the op's value at 0 (its requantization multiplier is
#: then 0, or its lookup table is built from zeros; LOG and RSQRT saturate), and so does
#: this one, bit for bit.
#: Measured by the refusal audit (tests/interpreter/test_refusal_audit.py, scales family);
#: elsewhere LiteRT aborts (ADD's Prepare checks its multipliers are positive), refuses or
#: computes without meaning, and a zero activation scale is refused here.
ZERO_SCALE_INPUT = _pairs(
    "ABS:INT8,INT16 CONCATENATION:UINT8 DIV:INT8,INT16 ELU:INT8 EXP:INT8,INT16 "
    "GELU:INT8,UINT8,INT16 HARD_SWISH:INT8,UINT8 LEAKY_RELU:INT8,UINT8,INT16 LOG:INT8,INT16 "
    "MEAN:INT8,UINT8,INT16 MUL:INT8,UINT8,INT16 PRELU:INT8,UINT8 REDUCE_PROD:INT8,INT16 "
    "RELU:INT8,UINT8,INT16 RELU6:INT8,UINT8,INT16 RELU_0_TO_1:INT8,UINT8 RSQRT:INT16 "
    "RELU_N1_TO_1:INT8,UINT8 SQRT:INT8,INT16 SUM:INT8,UINT8,INT16 TANH:INT8,UINT8")


def check_scales(ctx: "Subgraph", node: "Node") -> str | None:
    """Why a node's kernel cannot use the scales of one of its quantized tensors, or None.

    LiteRT loads scales that are zero, negative or not finite (the Hadamard-rotation
    recipes of litert-quantizer write a zero scale for an all-zero row of an embedding
    table): they are findings of the reader (`model.checks`), not load errors.  Here they
    are refused only at a kernel that uses them: not a kernel that moves stored values
    (`Kernel.reads_scales` False), and for a zero or negative scale not an input the
    kernel only multiplies by its scale (`Accepts.multiplied`: it computes zeros, or
    values of the other sign, as LiteRT does), nor a zero activation scale where LiteRT
    computes the op's value at 0 (`ZERO_SCALE_INPUT`).  Everywhere else (requantization
    multipliers, the division by an output scale) the kernel would compute from a
    meaningless multiplier, so the node is refused, naming the tensor and the reason."""
    kernel = node.registration.kernel
    if not getattr(kernel, "reads_scales", True):
        return None
    decl = declaration(kernel)
    tensors = ctx.tensors
    places = [(f"input {pos}", i, pos in decl.multiplied) for pos, i in enumerate(node.inputs)]
    places += [(f"output {pos}", o, False) for pos, o in enumerate(node.outputs)]
    for what, i, multiplied in places:
        if i < 0:
            continue
        t = tensors[i]
        q = t.quantization
        if q is None or t.type not in QUANTIZED_INT_TYPES:
            continue
        for flaw in q.scale_flaws():
            if multiplied and flaw.kind != "non-finite" or what == "input 0" and \
                    flaw.kind == "zero" and (node.name, t.type_name) in ZERO_SCALE_INPUT:
                continue
            why = ("is refused: the tensor's values have no real value there (LiteRT "
                   "computes NaN or infinity from them)" if flaw.kind == "non-finite" else
                   f"is not implemented here: {node.name} computes with this scale beyond a "
                   "product (a requantization, a division), where a zero or negative scale "
                   "has no meaning; it is taken only where a kernel multiplies by it")
            return (f"{node.name} v{node.version} {what} (tensor {t.index} {t.name!r}): "
                    f"{t.type_name} with {flaw} {why}")
    return None


def _check_forms(ctx: "Subgraph", node: "Node") -> str | None:
    """The declared types and forms of `check_accepts`."""
    kernel = node.registration.kernel
    decl = declaration(kernel)
    kind = None
    if decl.kinds:
        kind_of = getattr(kernel, "node_kind", None)
        kind = kind_of(ctx, node) if kind_of is not None else _node_kind(ctx, node)
        decl = decl.for_kind(kind)
    tensors = ctx.tensors
    for pos, i in enumerate(node.inputs):
        if i < 0:
            continue
        t = tensors[i]
        slot = decl.slot(pos)
        form, axis = tensor_form(t)
        rank = len(t.shape) if t.shape is not None else None
        if not slot.allows(t.type_name, form, axis, rank):
            return _refusal(node, f"input {pos}", t, slot, form, axis, kind)
    for pos, o in enumerate(node.outputs):
        if o < 0:
            continue
        t = tensors[o]
        form, axis = tensor_form(t)
        rank = len(t.shape) if t.shape is not None else None
        if not decl.outputs.allows(t.type_name, form, axis, rank):
            return _refusal(node, f"output {pos}", t, decl.outputs, form, axis, kind)
    return None
