"""The XNNPACK delegate's claims: which operators LiteRT 2.3.0's default CPU delegate takes.

A transcription of ``Delegate::PrepareOpsToDelegate`` (google-ai-edge/LiteRT,
``tflite/delegates/xnnpack/xnnpack_delegate.cc``) and of how LiteRT applies its default
delegate (``Interpreter::ApplyLazyDelegateProviders``, ``ModifyGraphWithDelegate``):
every subgraph but the validation ones is offered, in index order; a DEQUANTIZE or
DENSIFY of constant data is *unpacked* ahead of time and taken along with its readers;
every other operator is claimed or not by its own checks (`xnnpack_ops`); LiteRT's
partitioner (`partition`) groups the claimed operators into DELEGATE nodes.

Two readers share this rule: `targets.xnnpack` (the verdicts of ``targets --target
xnnpack``) and the interpreter's ``xnnpack`` kernel set (`interpreter.kernel_sets`), which
computes the operators of a partition as XNNPACK does and every other one as LiteRT's
builtin kernels (`delegated_ops`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .facts import ModelFacts, SubgraphFacts
from .partition import partition
from .xnnpack_ops import visit
from .xnnpack_types import Ctx, Flags

_GEMMS = ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D")


def _unpackable(f: SubgraphFacts, k: int, quasi: set[int]) -> bool:
    """A DEQUANTIZE or DENSIFY the delegate unpacks from static data beforehand."""
    ins, outs = f.inputs[k], f.outputs[k]
    if len(ins) != 1 or len(outs) != 1 or ins[0] < 0:
        return False
    x, y = ins[0], outs[0]
    if f.builtin[k] == "DEQUANTIZE":
        q = f.quant(x)
        int8_ok = f.type(x) == "INT8" and q is not None
        return (not f.sparse(x) and (f.static[x] or x in quasi)
                and (f.type(x) == "FLOAT16" or int8_ok) and f.type(y) == "FLOAT32")
    if f.builtin[k] == "DENSIFY":
        return (f.static[x] and f.sparse(x) and f.type(x) in ("FLOAT16", "INT8", "FLOAT32")
                and f.type(y) == f.type(x))
    return False


_VARIABLES = ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE")
_UNPACKERS = frozenset({"DEQUANTIZE", "DENSIFY"})
# operators whose verdict depends on more than their key (custom options, variables)
_CONTEXTUAL = frozenset(("CUSTOM", "STABLEHLO_COMPOSITE") + _VARIABLES)


def claims(f: SubgraphFacts, flags: Flags, var_handles: dict | None = None
           ) -> tuple[set[int], dict[int, str], dict[int, int], Ctx]:
    """The operators the delegate takes in one subgraph, the reason for each it does not,
    the unpacking DEQUANTIZE/DENSIFY operators it takes (op -> first reader), and the
    checks' context (what it unpacked).  ``var_handles`` is the delegate's
    (container, shared_name) -> id, kept across subgraphs."""
    consumers = f.consumers
    c = Ctx(f, flags, var_handles=var_handles if var_handles is not None else {})
    producer: dict[int, int] = {}  # quasi-static tensor -> the op unpacking it
    unpack: dict[int, int] = {}  # unpacking op -> (kept while no refused reader reads it)
    claimed: set[int] = set()
    reasons: dict[int, str] = {}
    accepted: set[tuple] = set()  # op keys the checks passed (see SubgraphFacts.op_key)
    builtin, keys = f.builtin, f.op_keys
    for k in range(f.op_count):
        b = builtin[k]
        if b in _UNPACKERS and _unpackable(f, k, c.quasi_static):
            x, y = f.inputs[k][0], f.outputs[k][0]
            if f.builtin[k] == "DEQUANTIZE" and f.type(x) == "FLOAT16":
                skip = True
                for r in consumers.get(y, ()):
                    if f.builtin[r] not in _GEMMS or f.inputs[r][:1] == (y,):
                        skip = False
                if skip:
                    c.f16_for_f32[y] = x
            unpack[k] = -1
            producer[y] = k
            c.quasi_static.add(y)
            continue
        key = None
        if b not in _CONTEXTUAL:
            ins = f.inputs[k]
            key = (keys[k], tuple(t in c.quasi_static for t in ins) if c.quasi_static
                   else (), tuple(t in c.f16_for_f32 for t in ins) if c.f16_for_f32 else ())
            if key in accepted:
                claimed.add(k)
                continue
        why = visit(c, k)
        if why is None:
            claimed.add(k)
            if key is not None:
                accepted.add(key)
            continue
        reasons[k] = why
        for t in f.inputs[k]:
            p = producer.get(t)
            if p is not None and p in unpack:
                del unpack[p]
                reasons[p] = (f"unpacks constant data for operator {k} ({f.op_name(k)}), "
                              "which XNNPACK does not take")
    for res in c.resources.values():  # a variable someone reads or writes: its VAR_HANDLE
        if res.proxy >= 0 and res.var_handle >= 0:
            claimed.add(res.var_handle)
            reasons.pop(res.var_handle, None)
    return claimed, reasons, unpack, c


@dataclass
class Delegated:
    """What the delegate runs of a model: per subgraph, each operator it takes and the
    number of its partition (numbered over the whole model, in subgraph order), and the
    tensors a partition keeps to itself (written and read only inside it: LiteRT never
    holds their values)."""

    partition_of: dict[int, dict[int, int]] = field(default_factory=dict)
    internal: dict[int, set[int]] = field(default_factory=dict)

    def partition(self, subgraph: int, op: int) -> int | None:
        """The partition of an operator (None: LiteRT's own kernel runs it)."""
        ops = self.partition_of.get(subgraph)
        return None if ops is None else ops.get(op)


def delegated_ops(facts: ModelFacts, flags: Flags | None = None) -> Delegated:
    """The operators XNNPACK takes, partition by partition, as `claims` and LiteRT's
    partitioner decide (a subgraph the partitioner finds no schedule for keeps every
    operator on LiteRT's kernels, as LiteRT does)."""
    flags = flags or Flags()
    out = Delegated()
    var_handles: dict = {}
    number = 0
    for s in range(len(facts)):
        f = facts[s]
        if f.name.startswith("VALIDATION:"):
            continue
        claimed, _, unpack, _ = claims(f, flags, var_handles)
        take = [k in claimed or k in unpack for k in range(f.op_count)]
        if not any(take):
            continue
        subsets = partition(f.inputs, f.outputs, f.tensor_count, f.graph_outputs, take,
                            f.side_effects) or []
        ops: dict[int, int] = {}
        internal: set[int] = set()
        for sub in subsets:
            if not sub.claimed:
                continue
            for k in sub.nodes:
                ops[k] = number
                internal.update(t for t in f.outputs[k] if t >= 0)
            internal.difference_update(sub.outputs)
            number += 1
        out.partition_of[s] = ops
        out.internal[s] = internal
    return out
