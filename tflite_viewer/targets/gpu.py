"""LiteRT's GPU delegate with its default options: what it takes, and the one partition it keeps.

The delegate (google-ai-edge/LiteRT ``tflite/delegates/gpu/``) decides in three steps,
transcribed here:

1. ``NewOperationParser`` (``common/model_builder.cc``): an operator the delegate has a
   parser for, within the parser's version limit, passing its ``IsSupported`` (most call
   ``CheckGpuDelegateCompatibility``, `gpu_checks`; a few accept everything, a few add
   rules of their own: comparisons only when they feed a CAST or SELECT to float, CAST from
   BOOL only from a comparison).  QUANTIZE and DEQUANTIZE only with quantized operators
   allowed (TFLITE_GPU_EXPERIMENTAL_FLAGS_ENABLE_QUANT is in the default options).
2. ``IsAllAllowedTensors``: no tensor of rank 5 or more, and every non-constant tensor
   FLOAT32, FLOAT16 (INT8/UINT8 with quantized operators; BOOL, INT32 where an op needs it).
3. ``FP16GraphPartitionHelper``: a DEQUANTIZE of a float16 constant is left out and the
   operators reading it read the float16 constant instead; LiteRT's partitioner groups the
   supported operators, and the delegate keeps the largest group only
   (``max_delegated_partitions`` = 1), or everything when only those DEQUANTIZEs are left
   out.

Not modelled: a subgraph with dynamic tensors (shapes that depend on values) makes LiteRT
refuse this delegate altogether; SPLIT and SPLIT_V are taken only where OpenCL is available
(assumed here).  No GPU delegate runs here to check against (see `gpu_checks`).
"""
from __future__ import annotations

from ..delegation.facts import ModelFacts, SubgraphFacts
from .gpu_checks import Signature, Spec, compatibility
from ..delegation.partition import Crossing
from ..delegation.partition import partition
from .verdict import FALLS_BACK, RUNS, OpVerdict, Partition, TargetResult

TITLE = "GPU delegate (LiteRT, default options)"
SOURCE = ("tflite/tools/versioning/gpu_compatibility.cc, tflite/delegates/gpu/common/"
          "model_builder.cc, tflite/delegates/utils.cc (google-ai-edge/LiteRT); not checked "
          "against a running GPU delegate: none runs on this machine")

_E = "compat"
# op -> (max version or None, how IsSupported decides)
PARSERS: dict[str, tuple[int | None, str]] = {
    **{op: (2, _E) for op in ("ABS", "ADD", "ADD_N", "AVERAGE_POOL_2D", "CONCATENATION",
                              "COS", "DIV", "ELU", "EXP", "FLOOR", "FLOOR_DIV", "FLOOR_MOD",
                              "GELU", "LOGISTIC", "LOG", "LOGICAL_AND", "MAXIMUM",
                              "MAX_POOL_2D", "MINIMUM", "MIRROR_PAD", "NEG", "PAD", "PADV2",
                              "POW", "QUANTIZE", "RSQRT", "SIGN", "SIN", "SLICE", "SOFTMAX",
                              "SPACE_TO_DEPTH", "SQRT", "SQUARE", "SQUARED_DIFFERENCE", "SUB",
                              "TANH")},
    **{op: (2, "logical") for op in ("EQUAL", "GREATER", "GREATER_EQUAL", "LESS",
                                     "LESS_EQUAL", "NOT_EQUAL")},
    **{op: (2, "ok") for op in ("RELU", "RELU6", "RELU_0_TO_1", "RELU_N1_TO_1", "LEAKY_RELU")},
    **{op: (None, _E) for op in ("BATCH_MATMUL", "DEPTH_TO_SPACE", "HARD_SWISH", "MEAN",
                                 "PACK", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD", "SPLIT",
                                 "SPLIT_V", "SUM", "TILE")},
    "CAST": (None, "cast"), "CONV_2D": (6, _E), "CUMSUM": (1, _E), "DENSIFY": (1, _E),
    "DEPTHWISE_CONV_2D": (6, _E), "DEQUANTIZE": (3, _E), "FULLY_CONNECTED": (9, _E),
    "GATHER": (1, _E), "LSTM": (4, _E), "MUL": (3, _E), "ONE_HOT": (1, _E),
    "PRELU": (1, "ok"), "RESHAPE": (1, _E), "RESIZE_BILINEAR": (3, _E),
    "RESIZE_NEAREST_NEIGHBOR": (3, _E), "SELECT": (1, _E), "SELECT_V2": (1, _E),
    "STRIDED_SLICE": (4, _E), "TRANSPOSE": (4, _E), "TRANSPOSE_CONV": (3, _E),
    "UNPACK": (None, "ok"),
}
CUSTOM_PARSERS = {"Convolution2DTransposeBias": None, "MaxPoolingWithArgmax2D": 2,
                  "MaxUnpooling2D": None, "Resampler": None}
_COMPARISONS = ("EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL", "NOT_EQUAL")
_CONTEXTUAL = _COMPARISONS + ("CAST", "CUSTOM")  # decided by their neighbours too


class _Graph:
    """The subgraph with the float16-constant DEQUANTIZEs folded into their readers."""

    def __init__(self, f: SubgraphFacts) -> None:
        self.f = f
        self.fp16_map: dict[int, int] = {}  # DEQUANTIZE output -> its float16 constant
        self.fp16_nodes: set[int] = set()
        self.consumers = f.consumers

    def producers(self, t: int) -> list[int]:
        k = self.f.producer.get(t)
        return [] if k is None else [k]

    def spec(self, t: int, remap: bool) -> Spec:
        if t < 0:
            return Spec("NOTYPE")
        if remap:
            t = self.fp16_map.get(t, t)
        f = self.f
        return Spec(f.type(t), tuple(f.shapes[t]), f.static[t])

    def signature(self, k: int) -> Signature:
        f = self.f
        custom = f.custom[k] if f.builtin[k] == "CUSTOM" else ""
        data = f.operator(k).custom_options_bytes if custom else None
        return Signature(f.builtin[k], [self.spec(t, True) for t in f.inputs[k]],
                         [self.spec(t, False) for t in f.outputs[k]], f.options(k) or {},
                         custom, data, f.version[k])


def _parser_check(g: _Graph, k: int) -> str | None:
    """NewOperationParser(...)->IsSupported(...)."""
    f = g.f
    b = f.builtin[k]
    if b == "CUSTOM":
        name = f.custom[k] or ""
        if name not in CUSTOM_PARSERS:
            return f"custom op {name!r} has no GPU implementation"
        cap, how = CUSTOM_PARSERS[name], _E
    else:
        if b not in PARSERS:
            return f"the GPU delegate has no {b}"
        cap, how = PARSERS[b]
    if cap is not None and f.version[k] > cap:
        return f"version {f.version[k]}: the GPU delegate takes {b} up to v{cap}"
    if how == "ok":
        return None
    if how == "logical":
        readers = g.consumers.get(f.outputs[k][0], []) if f.outputs[k] else []
        if len(g.producers(f.outputs[k][0])) != 1 or len(readers) != 1:
            return "a comparison is taken only when one CAST or SELECT reads it"
        nxt = readers[0]
        dst = f.type(f.outputs[nxt][0]) if f.outputs[nxt] else "NOTYPE"
        if f.builtin[nxt] in ("CAST", "SELECT", "SELECT_V2") and dst in ("FLOAT16", "FLOAT32"):
            return None
        return "a comparison is taken only when a CAST or SELECT to float reads it"
    if how == "cast":
        x, y = f.inputs[k][0], f.outputs[k][0]
        if f.type(x) == "BOOL" and f.type(y) in ("FLOAT16", "FLOAT32"):
            prod, cons = g.producers(x), g.consumers.get(x, [])
            if len(prod) != 1 or len(cons) != 1:
                return "CAST from BOOL: not a single comparison feeding it"
            if len(g.consumers.get(y, [])) != 1:
                return "CAST from BOOL of a model output runs on the CPU"
            if f.builtin[prod[0]] in _COMPARISONS:
                return None
    return compatibility(g.signature(k))


def _allowed_tensors(g: _Graph, k: int, allow_quant: bool = True) -> str | None:
    """IsAllAllowedTensors on the inputs (float16 constants remapped) and outputs."""
    f = g.f
    b = f.builtin[k]
    ins = ["FLOAT32", "FLOAT16"] + (["INT8", "UINT8"] if allow_quant else [])
    outs = list(ins)
    if b in _COMPARISONS:
        outs.append("BOOL")
    if b == "CAST":
        ins += ["BOOL", "FLOAT32", "INT32"]
        outs += ["FLOAT32", "INT32", "BOOL"]
    if b == "ONE_HOT" or b == "GATHER":
        ins.append("INT32")
    if b in ("SELECT", "SELECT_V2"):
        ins.append("BOOL")
    if b == "LOGICAL_AND":
        ins.append("BOOL")
        outs.append("BOOL")
    for tensors, allowed, remap in ((f.inputs[k], ins, True), (f.outputs[k], outs, False)):
        for t in tensors:
            if t < 0:
                continue
            if remap:
                t = g.fp16_map.get(t, t)
            if f.rank(t) >= 5:
                return f"tensor {t} has rank {f.rank(t)}; the GPU delegate stops at 4"
            arena = not f.static[t] and not f.variable[t]
            if arena and f.type(t) not in allowed:
                return f"tensor {t} is {f.type(t)}; the GPU delegate takes {', '.join(allowed)}"
    return None


def _subgraph(f: SubgraphFacts, s: int, ops: list[OpVerdict], parts: list[Partition]) -> int:
    g = _Graph(f)
    reasons: dict[int, str] = {}
    supported: list[bool] = []
    accepted: set[tuple] = set()  # op keys the checks passed (see SubgraphFacts.op_key)
    builtin, keys, tensor_key = f.builtin, f.op_keys, f.tensor_key
    for k in range(f.op_count):
        ins = f.inputs[k]
        b = builtin[k]
        if (b == "DEQUANTIZE" and ins and ins[0] >= 0 and f.outputs[k]
                and f.type(ins[0]) == "FLOAT16" and f.static[ins[0]]):
            g.fp16_map[f.outputs[k][0]] = ins[0]
            g.fp16_nodes.add(k)
            supported.append(False)
            continue
        key = None
        if b not in _CONTEXTUAL:
            key = (keys[k], tuple(tensor_key(g.fp16_map.get(t, t)) for t in ins)
                   if g.fp16_map else ())
            if key in accepted:
                supported.append(True)
                continue
        try:
            why = _parser_check(g, k) or _allowed_tensors(g, k)
        except (IndexError, KeyError, TypeError, ValueError, AttributeError) as exc:
            why = f"malformed operator ({type(exc).__name__})"
        supported.append(why is None)
        if why:
            reasons[k] = why
        elif key is not None:
            accepted.add(key)
    sides = f.side_effects
    take: set[int] = set()
    n_supported = sum(supported)
    if n_supported and n_supported + len(g.fp16_nodes) == f.op_count:
        take = set(range(f.op_count))  # full delegation, float16 DEQUANTIZEs included
    elif n_supported:
        subsets = partition(f.inputs, f.outputs, f.tensor_count, f.graph_outputs, supported,
                            sides) or []
        groups = [sub for sub in subsets if sub.claimed]
        # std::sort by size: insertion sort (stable) below 17 partitions, earliest wins ties
        best = sorted(groups, key=lambda sub: -len(sub.nodes))[0] if groups else None
        take = set(best.nodes) if best else set()
        for sub in groups:
            if sub is not best:
                for k in sub.nodes:
                    reasons[k] = (f"supported, but the delegate keeps only its largest partition "
                                  f"({len(best.nodes)} ops; this group has {len(sub.nodes)})")
    crossing = 0
    in_part: dict[int, int] = {}
    if take:
        inputs = [tuple(g.fp16_map.get(t, t) for t in f.inputs[k]) if k in take else f.inputs[k]
                  for k in range(f.op_count)] if g.fp16_map else f.inputs
        # (RemapFp16InputTensors on the taken operators)
        subsets = partition(inputs, f.outputs, f.tensor_count, f.graph_outputs,
                            [k in take for k in range(f.op_count)], sides) or []
        counter = Crossing(f.producer, f.consumers)
        for sub in subsets:
            if sub.claimed:
                parts.append(Partition(s, list(sub.nodes), sub.inputs, sub.outputs))
                crossing += counter.count(sub)
                for k in sub.nodes:
                    in_part[k] = len(parts) - 1
    names = f.op_names
    for k in range(f.op_count):
        p = in_part.get(k)
        if p is not None:
            ops.append(OpVerdict(s, k, names[k], RUNS, f"partition {p}"))
        elif k in g.fp16_nodes:
            ops.append(OpVerdict(s, k, names[k], FALLS_BACK,
                                 "DEQUANTIZE of float16 weights stays on the CPU; the delegate "
                                 "reads the float16 constant itself"))
        else:
            ops.append(OpVerdict(s, k, names[k], FALLS_BACK, reasons.get(k, "not taken")))
    return crossing


def analyze(facts: ModelFacts) -> TargetResult:
    ops: list[OpVerdict] = []
    parts: list[Partition] = []
    crossing = 0
    for s in range(len(facts)):
        f = facts[s]
        if f.name.startswith("VALIDATION:"):
            continue
        crossing += _subgraph(f, s, ops, parts)
    notes = ["not checked against a running GPU delegate (none runs on this machine); "
             "dynamic tensors, which make LiteRT refuse the delegate, are not detected"]
    return TargetResult("gpu", TITLE, ops, parts, notes=notes, source=SOURCE,
                        crossing=crossing)
