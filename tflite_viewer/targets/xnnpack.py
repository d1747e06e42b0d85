"""The XNNPACK delegate of LiteRT 2.3.0: which operators it takes, and its partitions.

A transcription of ``Delegate::PrepareOpsToDelegate`` (google-ai-edge/LiteRT,
``tflite/delegates/xnnpack/xnnpack_delegate.cc``) and of how LiteRT applies its default
delegate (``Interpreter::ApplyLazyDelegateProviders``, ``ModifyGraphWithDelegate``):

* every subgraph is offered to the delegate, in index order, except validation subgraphs;
* a DEQUANTIZE of a constant (float16, or quantized INT8) and a DENSIFY of a constant
  sparse tensor are *unpacked* ahead of time: the delegate takes them along with the
  operators that read their outputs, and gives them back if any operator it does not
  take reads them;
* every other operator is claimed or not by its own checks (`delegation.xnnpack_ops`);
* LiteRT's partitioner (`delegation.partition`) groups the claimed operators into DELEGATE
  nodes;
* each partition's tensors must have an XNNPACK datatype (`xnnpack_define`): where one has
  not (a block or channel scale of 0, ...), the DELEGATE node fails to prepare and LiteRT's
  default interpreter fails on the model: those operators are *refused*.

The claims and the partitioner live in `tflite_viewer.delegation`, which the interpreter's
``xnnpack`` kernel set reads too (`interpreter.kernel_sets`); this module turns them into
verdicts.

The oracle: LiteRT's own interpreter with its default delegate, whose
``_get_ops_details()`` lists one DELEGATE node per partition with the partition's input
and output tensors (tests/targets/test_xnnpack_litert.py).
"""
from __future__ import annotations

from ..delegation.facts import ModelFacts, SubgraphFacts
from ..delegation.partition import Crossing
from ..delegation.partition import partition
from ..delegation.xnnpack import claims
from ..delegation.xnnpack_types import Flags
from .verdict import FALLS_BACK, REFUSED, RUNS, OpVerdict, Partition, TargetResult
from .xnnpack_define import failures as define_failures

TITLE = "XNNPACK (LiteRT 2.3.0's default CPU delegate)"
SOURCE = ("tflite/delegates/xnnpack/xnnpack_delegate.cc and tflite/graph_info.cc "
          "(google-ai-edge/LiteRT), checked against the ai-edge-litert 2.3.0 wheel")
DEFAULT_PATH_FAILS = "LiteRT's default CPU path fails on this model"
def analyze(facts: ModelFacts, flags: Flags | None = None) -> TargetResult:
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


def _broken(f: SubgraphFacts, s: int, k: int, t: int, why: str, p: int) -> str:
    name = f.names[t] if len(f.names[t]) <= 60 else "..." + f.names[t][-57:]
    return (f"XNNPACK takes {f.op_name(k)} (subgraph {s}, operator {k}) into partition {p} "
            f"but cannot define its tensor {t} {name!r} ({f.type(t)}{list(f.shapes[t])}): "
            f"{why}")
