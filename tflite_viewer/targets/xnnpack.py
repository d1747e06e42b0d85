"""The XNNPACK delegate of LiteRT 2.3.0: which operators it takes, and its partitions.

A transcription of ``Delegate::PrepareOpsToDelegate`` (google-ai-edge/LiteRT,
``tflite/delegates/xnnpack/xnnpack_delegate.cc``) and of how LiteRT applies its default
delegate (``Interpreter::ApplyLazyDelegateProviders``, ``ModifyGraphWithDelegate``):

* every subgraph is offered to the delegate, in index order, except validation subgraphs;
* a DEQUANTIZE of a constant (float16, or quantized INT8) and a DENSIFY of a constant
  sparse tensor are *unpacked* ahead of time: the delegate takes them along with the
  operators that read their outputs, and gives them back if any operator it does not
  take reads them;
* every other operator is claimed or not by its own checks (`xnnpack_ops`);
* LiteRT's partitioner (`partition`) groups the claimed operators into DELEGATE nodes;
* each partition's tensors must have an XNNPACK datatype (`xnnpack_define`): where one has
  not (a block or channel scale of 0, ...), the DELEGATE node fails to prepare and LiteRT's
  default interpreter fails on the model: those operators are *refused*.

The oracle: LiteRT's own interpreter with its default delegate, whose
``_get_ops_details()`` lists one DELEGATE node per partition with the partition's input
and output tensors (tests/targets/test_xnnpack_litert.py).
"""
from __future__ import annotations

from .facts import TargetFacts, TargetSubgraphFacts
from .partition import Crossing
from .partition import partition
from .verdict import FALLS_BACK, REFUSED, RUNS, OpVerdict, Partition, TargetResult
from .xnnpack_define import failures as define_failures
from .xnnpack_ops import visit
from .xnnpack_types import Ctx, Flags

TITLE = "XNNPACK (LiteRT 2.3.0's default CPU delegate)"
SOURCE = ("tflite/delegates/xnnpack/xnnpack_delegate.cc and tflite/graph_info.cc "
          "(google-ai-edge/LiteRT), checked against the ai-edge-litert 2.3.0 wheel")
_GEMMS = ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D")
DEFAULT_PATH_FAILS = "LiteRT's default CPU path fails on this model"


def _unpackable(f: TargetSubgraphFacts, k: int, quasi: set[int]) -> bool:
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


def claims(f: TargetSubgraphFacts, flags: Flags, var_handles: dict | None = None
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
    accepted: set[tuple] = set()  # op keys the checks passed (see TargetSubgraphFacts.op_key)
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


def analyze(facts: TargetFacts, flags: Flags | None = None) -> TargetResult:
    flags = flags or Flags()
    ops: list[OpVerdict] = []
    parts: list[Partition] = []
    crossing = 0
    var_handles: dict = {}
    broken: list[str] = []  # what makes the delegate fail to build a partition
    for s in range(len(facts)):
        f = facts[s]
        if f.name.startswith("VALIDATION:"):
            ops.extend(OpVerdict(s, k, f.op_name(k), FALLS_BACK,
                                 "validation subgraph: LiteRT offers it to no delegate")
                       for k in range(f.op_count))
            continue
        claimed, reasons, unpack, c = claims(f, flags, var_handles)
        take = [k in claimed or k in unpack for k in range(f.op_count)]
        in_part: dict[int, int] = {}
        if any(take):
            subsets = partition(f.inputs, f.outputs, f.tensor_count, f.graph_outputs, take,
                                f.side_effects)
            if subsets is None:
                reasons = {k: "LiteRT's partitioner finds no schedule (a cycle)"
                           for k in range(f.op_count)}
                subsets = []
            counter = Crossing(f.producer, f.consumers)
            for sub in subsets:
                if not sub.claimed:
                    continue
                parts.append(Partition(s, list(sub.nodes), sub.inputs, sub.outputs))
                crossing += counter.count(sub)
                for k in sub.nodes:
                    in_part[k] = len(parts) - 1
        failed = define_failures(c, in_part, unpack)
        broken.extend(_broken(f, s, k, *failed[k], in_part[k]) for k in sorted(failed))
        names = f.op_names
        for k in range(f.op_count):
            p = in_part.get(k)
            if k in failed:
                t, why = failed[k]
                ops.append(OpVerdict(s, k, names[k], REFUSED, (
                    f"{DEFAULT_PATH_FAILS}: XNNPACK takes it into partition {p}, then cannot "
                    f"define {c.desc(t)}: {why}; the partition's DELEGATE node fails to "
                    "prepare")))
            elif p is not None:
                why = (f"partition {p}" + (
                    " (unpacked ahead of time: constant weights)" if k in unpack else ""))
                ops.append(OpVerdict(s, k, names[k], RUNS, why))
            else:
                ops.append(OpVerdict(s, k, names[k], FALLS_BACK, reasons.get(k, "not taken")))
    failure = ""
    if broken:
        failure = (f"{DEFAULT_PATH_FAILS}: " + "; ".join(broken[:3])
                   + (f"; and {len(broken) - 3} more" if len(broken) > 3 else "")
                   + ". Without the delegate (BUILTIN_WITHOUT_DEFAULT_DELEGATES) LiteRT's CPU "
                   "kernels run it")
    return TargetResult("xnnpack", TITLE, ops, parts, source=SOURCE, crossing=crossing,
                        failure=failure)


def _broken(f: TargetSubgraphFacts, s: int, k: int, t: int, why: str, p: int) -> str:
    name = f.names[t] if len(f.names[t]) <= 60 else "..." + f.names[t][-57:]
    return (f"XNNPACK takes {f.op_name(k)} (subgraph {s}, operator {k}) into partition {p} "
            f"but cannot define its tensor {t} {name!r} ({f.type(t)}{list(f.shapes[t])}): "
            f"{why}")
