"""The scratch buffers TFLite Micro's reference kernels ask for in their Prepare.

Each entry transcribes one kernel's ``RequestScratchBufferInArena`` calls (tflite-micro,
tensorflow/lite/micro/kernels/): the size, and the order, which matters because the
planner breaks ties between equal sizes by the order buffers were added.  Prepare runs
subgraph by subgraph, operator by operator in execution order, so that is the order of
the requests.  Optimized kernel sets (CMSIS-NN, Xtensa, ...) ask for other buffers; the
Python package and these rules are the reference kernels.
"""
from __future__ import annotations

from collections.abc import Callable

from ..model.opcodes import BUILTIN_CODES
from ..schema.schema_generated import TensorType as TT
from .facts import MemoryFacts, MemorySubgraphFacts
from .sizes import element_count
from .tflm_lifetimes import ScratchRequest

_INT_BYTES = 4  # sizeof(int) / sizeof(int32_t) on every TFLM target

Rule = Callable[[MemorySubgraphFacts, int, "Context"], list[tuple[int, str]]]


class Context:
    """What a rule may read beyond the subgraph: options, and the target's pointer size."""

    def __init__(self, facts: MemoryFacts, pointer_bytes: int) -> None:
        self.facts = facts
        self.pointer_bytes = pointer_bytes

    def operator(self, sg: MemorySubgraphFacts, k: int):
        return self.facts.model.subgraphs[sg.index].operators[sg.original[k]]


def _tensor(sg: MemorySubgraphFacts, k: int, slot: int, outputs: bool = False) -> int | None:
    ids = sg.op_outputs[k] if outputs else sg.op_inputs[k]
    if slot < len(ids) and 0 <= ids[slot] < sg.n_tensors:
        return ids[slot]
    return None


def _shape(sg: MemorySubgraphFacts, t: int | None) -> tuple[int, ...]:
    return sg.shapes[t] if t is not None else ()


def _type(sg: MemorySubgraphFacts, t: int | None) -> int | None:
    return sg.types[t] if t is not None else None


def _add_n(sg, k, ctx):
    out = _type(sg, _tensor(sg, k, 0, outputs=True))
    if out in (TT.FLOAT32, TT.INT8):
        return [(ctx.pointer_bytes * len(sg.op_inputs[k]), "pointers to the inputs")]
    return []


def _int4_filter(sg, k, ctx):
    w = _tensor(sg, k, 1)
    if _type(sg, w) == TT.INT4:
        return [(element_count(_shape(sg, w)), "INT4 filter unpacked")]
    return []


def _transpose_conv(sg, k, ctx):
    x, bias = _tensor(sg, k, 2), _tensor(sg, k, 3)
    out = element_count(_shape(sg, _tensor(sg, k, 0, outputs=True)))
    req = []
    if _type(sg, x) == TT.INT8:
        req.append((out * 4, "int32 accumulators"))
    elif _type(sg, x) == TT.INT16:
        req.append((out * 8, "int64 accumulators"))
    if _type(sg, x) == TT.INT16 and _type(sg, bias) == TT.INT16:
        req.append((element_count(_shape(sg, bias)) * 8, "int16 bias widened to int64"))
    return req


def _mirror_pad(sg, k, ctx):
    rank = len(_shape(sg, _tensor(sg, k, 0)))
    return [(rank * _INT_BYTES, "output dims' element counts"),
            (rank * _INT_BYTES, "input dims' element counts")]


def _mean_sum(sg, k, ctx):
    x, axis = _tensor(sg, k, 0), _tensor(sg, k, 1)
    req = []
    if _type(sg, x) in (TT.INT8, TT.INT16):
        out = element_count(_shape(sg, _tensor(sg, k, 0, outputs=True)))
        req.append((out * 4, "int32 accumulators"))
    req.append((len(_shape(sg, x)) * _INT_BYTES, "input iterator"))
    req.append((element_count(_shape(sg, axis)) * _INT_BYTES, "resolved axes"))
    return req


def _reduce_other(sg, k, ctx):
    x, axis = _tensor(sg, k, 0), _tensor(sg, k, 1)
    return [(len(_shape(sg, x)) * _INT_BYTES, "input iterator"),
            (element_count(_shape(sg, axis)) * _INT_BYTES, "resolved axes")]


def _svdf(sg, k, ctx):
    x, wf = _tensor(sg, k, 0), _tensor(sg, k, 1)
    xs, ws = _shape(sg, x), _shape(sg, wf)
    if not xs or not ws:
        return []
    batch, filters = xs[0], ws[0]
    rank = int(ctx.operator(sg, k).builtin_options.get("rank", 0) or 0)
    if _type(sg, x) == TT.INT8:
        units = filters // rank if rank else 0
        return [(batch * filters * 4, "int32 filter state"),
                (batch * units * 4, "int32 outputs")]
    return [(batch * filters * 4, "float filter state")]


def _lstm(sg, k, ctx):
    x, hidden, cell = _tensor(sg, k, 0), _tensor(sg, k, 18), _tensor(sg, k, 19)
    xs, hs = _shape(sg, x), _shape(sg, hidden)
    if len(xs) < 2 or len(hs) < 2:
        return []
    time_major = bool(ctx.operator(sg, k).builtin_options.get("time_major", False))
    batch = xs[1] if time_major else xs[0]
    size = {TT.FLOAT32: 4, TT.INT16: 2}.get(_type(sg, cell), 0)
    return [(batch * hs[1] * size, f"gate buffer {i}") for i in range(4)]


def _detection_postprocess(sg, k, ctx):
    boxes, scores = _tensor(sg, k, 0), _tensor(sg, k, 1)
    bs, ss = _shape(sg, boxes), _shape(sg, scores)
    if len(bs) < 2 or len(ss) < 3:
        return []
    opts = ctx.operator(sg, k).custom_options
    opts = opts if isinstance(opts, dict) else {}
    n = bs[1]
    classes = int(opts.get("num_classes", 0) or 0)
    dets = int(opts.get("max_detections", 0) or 0)
    f, i = 4, _INT_BYTES
    return [(n, "active candidates"), (n * 4 * f, "decoded boxes"),
            (ss[1] * ss[2] * f, "scores"), (n * f, "score buffer"), (n * f, "kept scores"),
            (dets * n * f, "scores after NMS"), (dets * n * f, "sorted values"),
            (n * i, "kept indices"), (dets * n * i, "sorted indices"),
            (max(classes, dets) * n * i, "buffer"), (min(n, dets) * n * i, "selected")]


RULES: dict[int | str, Rule] = {
    BUILTIN_CODES["ADD_N"]: _add_n,
    BUILTIN_CODES["CONV_2D"]: _int4_filter,
    BUILTIN_CODES["DEPTHWISE_CONV_2D"]: _int4_filter,
    BUILTIN_CODES["FULLY_CONNECTED"]: _int4_filter,
    BUILTIN_CODES["TRANSPOSE_CONV"]: _transpose_conv,
    BUILTIN_CODES["MIRROR_PAD"]: _mirror_pad,
    BUILTIN_CODES["MEAN"]: _mean_sum,
    BUILTIN_CODES["SUM"]: _mean_sum,
    BUILTIN_CODES["REDUCE_MAX"]: _reduce_other,
    BUILTIN_CODES["REDUCE_MIN"]: _reduce_other,
    BUILTIN_CODES["REDUCE_ALL"]: _reduce_other,
    BUILTIN_CODES["SVDF"]: _svdf,
    BUILTIN_CODES["UNIDIRECTIONAL_SEQUENCE_LSTM"]: _lstm,
    "TFLite_Detection_PostProcess": _detection_postprocess,
}


def scratch_requests(facts: MemoryFacts, pointer_bytes: int = 4) -> list[ScratchRequest]:
    """Every scratch buffer request, in the order TFLM's Prepare makes them."""
    ctx = Context(facts, pointer_bytes)
    out: list[ScratchRequest] = []
    for sg in facts.subgraphs:
        for k in range(sg.n_ops):
            code = sg.op_codes[k]
            rule = RULES.get(sg.op_custom[k]) if sg.op_custom[k] is not None else RULES.get(code)
            if rule is None:
                continue
            for size, what in rule(sg, k, ctx):
                out.append(ScratchRequest(sg.index, k, max(int(size), 0), what))
    return out
