"""Kernel registrations, shaped like TFLite's TfLiteRegistration, and the `register` decorator.

A kernel module declares a class per op::

    @register(BuiltinOperator.CONV_2D, versions=(1, 8))
    class Conv2D(Kernel):
        def prepare(self, ctx, node): ...   # shapes, validation, caches
        def invoke(self, ctx, node): ...    # compute, ctx.set_output(...)

``ctx`` is the runtime `Subgraph` (TFLite's TfLiteContext).  ``types`` says which tensor
types the kernel handles: ``"float"`` kernels refuse quantized integer tensors at load;
``"any"`` kernels move data of every type; a ``"+"``-joined list such as
``"float+uint8+int8+int16+hybrid"`` names the kinds of node the kernel computes, where a
node's kind (`node_kind`) is its first input's type (``float`` for float32/float16, the
integer type name for quantized inputs) or ``hybrid`` for float activations with quantized
weights.  Such kernels dispatch on that kind in prepare (see kernels/common.py).  ``accepts``
declares per input the tensor types and quantization forms (per-tensor, per-channel on an
axis, blockwise, ...) the kernel implements; the builder refuses the rest (accepts.py).
A kernel whose ``invoke`` runs other subgraphs
(WHILE, IF, CALL_ONCE) sets ``calls_subgraphs = True`` and writes ``invoke`` as a generator
that ``yield from``s its context's `call_subgraph`, so the debugger can step into them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ..model import opcodes
from .accepts import DEFAULT, Accepts
from .tensor import FLOAT16, QUANTIZED_INT_TYPES

if TYPE_CHECKING:
    from .node import Node
    from .subgraph import Subgraph


class Kernel:
    """Base of kernel classes; every hook is optional except `invoke`."""

    #: "float" (refuses quantized integer tensors), "any" (type-agnostic data movement), or
    #: "+"-joined node kinds ("float+uint8+int8+int16+hybrid"; see `node_kind`)
    types: str = "float"
    #: invoke is a generator that runs subgraphs (control flow)
    calls_subgraphs: bool = False
    #: the tensor types and quantization forms it implements per input and output
    #: (accepts.py); anything else is refused when the interpreter is built
    accepts: Accepts = DEFAULT

    @property
    def reads_scales(self) -> bool:
        """Whether the kernel computes with its quantized tensors' scales: all but the
        data-movement kernels (``types = "any"``), which copy stored values whatever their
        parameters.  A data-movement kernel that does read them (QUANTIZE, DEQUANTIZE,
        EMBEDDING_LOOKUP, a comparison) says so with a class attribute.  Scales that are
        zero, negative or not finite are refused only where they are read
        (`accepts.check_scales`)."""
        return self.types != "any"

    def init(self, ctx: "Subgraph", node: "Node") -> Any:
        """Called once per node at load; returns the node's user_data."""
        return None

    def check(self, ctx: "Subgraph", node: "Node") -> str | None:
        """Why this node cannot run with this kernel (checked at load), or None."""
        return check_types(ctx, node, self.types)

    def prepare(self, ctx: "Subgraph", node: "Node") -> None:
        """Validate and set output shapes; by default outputs get their shape at invoke."""
        for i in node.outputs:
            if i >= 0:
                ctx.set_dynamic(ctx.tensors[i])

    def invoke(self, ctx: "Subgraph", node: "Node") -> Any:
        raise NotImplementedError

    def bind(self, ctx: "Subgraph", node: "Node") -> Callable[["Subgraph", "Node"], Any] | None:
        """A prepared node's invoke specialised to its tensors, or None (the default: the
        plan calls `invoke`).  Called by the executor once a run went through with no
        re-preparation; the callable is used by runs nothing watches and must compute
        what `invoke` does, falling back to it when an input is not as it was at bind
        time (`builder.bind_kernels`)."""
        return None

    def free(self, ctx: "Subgraph", node: "Node") -> None:
        """Release what init made (nothing, for numpy kernels)."""

    def reset(self, ctx: "Subgraph", node: "Node") -> None:
        """Forget state kept between invocations (TFLM's ``reset``: streaming kernels such
        as the signal library's framer); called whenever the variables are reset."""


@dataclass
class Registration:
    """What an OpResolver returns for an (op, version): TFLite's TfLiteRegistration."""

    kernel: Kernel
    builtin_code: int | None = None
    custom_name: str | None = None
    version_min: int = 1
    version_max: int = 1

    @property
    def name(self) -> str:
        if self.custom_name is not None:
            return self.custom_name
        return opcodes.builtin_name(self.builtin_code if self.builtin_code is not None else -1)

    # TFLite's function-pointer view of the kernel
    @property
    def init(self) -> Callable:
        return self.kernel.init

    @property
    def prepare(self) -> Callable:
        return self.kernel.prepare

    @property
    def invoke(self) -> Callable:
        return self.kernel.invoke

    @property
    def free(self) -> Callable:
        return self.kernel.free

    @property
    def calls_subgraphs(self) -> bool:
        return self.kernel.calls_subgraphs

    def supports_version(self, version: int) -> bool:
        return self.version_min <= version <= self.version_max


KIND_NAMES = {0: "float", 1: "float", 3: "uint8", 9: "int8", 7: "int16"}


def node_kind(ctx: "Subgraph", node: "Node") -> str:
    """"float", "uint8", "int8", "int16", "hybrid" (float input, quantized weights) or the
    first input's type name in lower case."""
    first = next((t for t in node.inputs if t >= 0), None)
    if first is None:
        return "float"
    t0 = ctx.tensors[first]
    kind = KIND_NAMES.get(t0.type, t0.type_name.lower())
    if kind == "float" and any(t >= 0 and ctx.tensors[t].type in QUANTIZED_INT_TYPES
                               for t in node.inputs[1:]):
        return "hybrid"
    return kind


def check_types(ctx: "Subgraph", node: "Node", types: str) -> str | None:
    """The load-time type check: float kernels refuse quantized integer tensors.

    Hybrid ops (float activations, int8 weights) are refused too: they would otherwise be
    computed on raw integer weights and give garbage.  Kernels with a ``"+"``-list of kinds
    accept the nodes whose `node_kind` is listed.
    """
    if types == "any":
        return None
    if types != "float":
        allowed = set(types.split("+"))
        kind = node_kind(ctx, node)
        if kind in allowed:
            return None
        if kind not in ("uint8", "int8", "int16", "hybrid"):
            return check_types(ctx, node, "float") if "float" in allowed else None
        which = "hybrid (float input, quantized weights)" if kind == "hybrid" else "input"
        return (f"{node.name} v{node.version} with {kind.upper()} {which}: "
                "integer kernels not implemented yet")
    for pos, t in enumerate(node.inputs):
        if t < 0:
            continue
        tensor = ctx.tensors[t]
        if tensor.type in QUANTIZED_INT_TYPES:
            which = "input" if pos == 0 else f"input {pos} ({'hybrid' if _first_float(ctx, node) else 'quantized'})"
            return (f"{node.name} v{node.version} with {tensor.type_name} {which}: "
                    "integer kernels not implemented yet")
    for t in node.outputs:
        if t >= 0 and ctx.tensors[t].type in QUANTIZED_INT_TYPES:
            return (f"{node.name} v{node.version} with {ctx.tensors[t].type_name} output: "
                    "integer kernels not implemented yet")
    return None


def _first_float(ctx: "Subgraph", node: "Node") -> bool:
    return bool(node.inputs) and node.inputs[0] >= 0 and \
        ctx.tensors[node.inputs[0]].type in (0, FLOAT16)


# -- the builtin kernel registry --------------------------------------------------------
BUILTIN_KERNELS: list[Registration] = []
CUSTOM_KERNELS: list[Registration] = []


def register(op: int | str, versions: tuple[int, int] = (1, 1)) -> Callable[[type], type]:
    """Class decorator: register a Kernel subclass for a builtin code or a custom op name."""

    def wrap(cls: type) -> type:
        kernel = cls()
        if isinstance(op, str):
            CUSTOM_KERNELS.append(Registration(kernel, None, op, versions[0], versions[1]))
        else:
            BUILTIN_KERNELS.append(Registration(kernel, int(op), None, versions[0], versions[1]))
        return cls

    return wrap
