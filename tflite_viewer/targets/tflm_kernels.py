"""TFLite Micro's kernels: which operators its all-ops resolver registers, and the tensor
types each kernel takes.

Transcribed from tensorflow/tflite-micro: ``python/tflite_micro/python_ops_resolver.cc``
(the resolver of the ``tflite_micro`` Python package, every builtin of the all-ops
resolver plus the signal and utility custom ops) and each kernel's Prepare and Eval in
``tensorflow/lite/micro/kernels/`` (the reference kernels).  TFLM's resolver ignores op
versions: a registered op runs at any version.

Each rule returns why the kernel refuses an operator (in Prepare, or in Eval, where some
kernels first look at a type) or None.  The oracle is the ``tflite_micro`` interpreter
(tests/targets/test_tflm_micro.py).
"""
from __future__ import annotations

from collections.abc import Callable

from ..delegation.facts import SubgraphFacts

Rule = Callable[[SubgraphFacts, int], "str | None"]

F, I8, I16, I32, I64, U8, B = ("FLOAT32", "INT8", "INT16", "INT32", "INT64", "UINT8", "BOOL")
U32 = "UINT32"

CUSTOM_OPS = frozenset({
    "CIRCULAR_BUFFER", "SignalDelay", "SignalEnergy", "SignalFftAutoScale", "SignalFilterBank",
    "SignalFilterBankLog", "SignalFilterBankSpectralSubtraction", "SignalFilterBankSquareRoot",
    "SignalFramer", "SignalIrfft", "SignalOverlapAdd", "SignalPCAN", "SignalRfft",
    "SignalStacker", "SignalWindow", "TFLM_DECODE", "TFLite_Detection_PostProcess"})


def _t(f: SubgraphFacts, k: int, role: str) -> int | None:
    side, n = role[:-1], int(role[-1])
    ts = f.inputs[k] if side == "in" else f.outputs[k]
    return ts[n] if n < len(ts) and ts[n] >= 0 else None


def types(role: str, allowed: tuple[str, ...], phase: str = "Eval") -> Rule:
    def rule(f: SubgraphFacts, k: int) -> str | None:
        t = _t(f, k, role)
        if t is None:
            return f"{role} is missing"
        if f.type(t) not in allowed:
            return (f"{phase}: {f.type(t)} {'input' if role[:2] == 'in' else 'output'} "
                    f"{role[-1]}; TFLM's kernel takes {', '.join(allowed)}")
        return None
    return rule


def same(a: str, b: str) -> Rule:
    def rule(f: SubgraphFacts, k: int) -> str | None:
        ta, tb = _t(f, k, a), _t(f, k, b)
        if ta is not None and tb is not None and f.type(ta) != f.type(tb):
            return f"Prepare: {a} is {f.type(ta)} but {b} is {f.type(tb)}"
        return None
    return rule


def const(role: str, what: str) -> Rule:
    def rule(f: SubgraphFacts, k: int) -> str | None:
        t = _t(f, k, role)
        if t is not None and not f.static[t]:
            return f"Prepare: the {what} must be a constant in TFLM"
        return None
    return rule


def zero_points(roles: tuple[str, ...], value: int, when: tuple[str, ...]) -> Rule:
    """Quantized kernels that need a given zero point (int16 paths: 0)."""
    def rule(f: SubgraphFacts, k: int) -> str | None:
        x = _t(f, k, "in0")
        if x is None or f.type(x) not in when:
            return None
        for role in roles:
            t = _t(f, k, role)
            q = f.quant(t) if t is not None else None
            zp = q.legacy_zero_point if q else 0
            if zp != value:
                return f"Prepare: {role} zero point {zp}; TFLM needs {value} here"
        return None
    return rule


def all_of(*rules: Rule) -> Rule:
    def rule(f: SubgraphFacts, k: int) -> str | None:
        for r in rules:
            why = r(f, k)
            if why:
                return why
        return None
    return rule


def _weights(accepted: dict[str, tuple[str, ...]]) -> Rule:
    """Convolutions and FULLY_CONNECTED: input/weights pairs (no hybrid models)."""
    def rule(f: SubgraphFacts, k: int) -> str | None:
        x, w = _t(f, k, "in0"), _t(f, k, "in1")
        if x is None or w is None:
            return "an input is missing"
        tx, tw = f.type(x), f.type(w)
        if tx not in accepted or tw not in accepted[tx]:
            if tx == F and tw in (I8, I4):
                return "Prepare: hybrid (float input, int8 weights): not supported on TFLM"
            return f"Prepare: {tx} input with {tw} weights is not supported"
        return None
    return rule


I4 = "INT4"


def _quantize(f: SubgraphFacts, k: int) -> str | None:
    x, y = _t(f, k, "in0"), _t(f, k, "out0")
    tx, ty = f.type(x), f.type(y)
    q = f.quant(y)
    if q is None or len(q.scale) != 1:
        return "Prepare: the output must be quantized per tensor"
    if tx not in (F, I32, I16, I8, U8) or ty not in (I8, I16, I32, U8):
        return f"Prepare: QUANTIZE from {tx} to {ty}"
    ok = {F: (I8, I16), I32: (I8, I16), I16: (I8, I16, I32), I8: (I8, U8, I16, I32),
          U8: (I8,)}
    if ty not in ok[tx]:
        return f"Eval: QUANTIZE from {tx} to {ty} is not implemented"
    return None


def _dequantize(f: SubgraphFacts, k: int) -> str | None:
    """DequantizePrepare keeps the per-tensor params only: a per-channel input is
    dequantized with channel 0's scale and zero point everywhere."""
    x = _t(f, k, "in0")
    q = f.quant(x) if x is not None else None
    if q is not None and len(q.scale) > 1:
        return ("Silently wrong: TFLM's DEQUANTIZE applies the first channel's scale and "
                "zero point to every channel")
    return None


def _softmax(f: SubgraphFacts, k: int) -> str | None:
    x, y = _t(f, k, "in0"), _t(f, k, "out0")
    tx, ty = f.type(x), f.type(y)
    if tx == F:
        return None if ty == F else f"Prepare: FLOAT32 input with {ty} output"
    qy = f.quant(y)
    zp, scale = (qy.legacy_zero_point, qy.legacy_scale) if qy else (0, 0.0)
    if tx == I16:
        if ty != I16 or zp != 0 or abs(scale - 1 / 32768) > 0.001 / 32768:
            return "Prepare: INT16 softmax needs an INT16 output, zero point 0, scale 1/32768"
        return None
    if tx == I8:
        if not ((ty == I16 and zp == -32768 and abs(scale - 1 / 65536) <= 0.001 / 65536)
                or (ty == I8 and zp == -128 and scale == 1 / 256)):
            return ("Prepare: INT8 softmax needs an INT8 output (zero point -128, scale "
                    "1/256) or INT16 (-32768, 1/65536)")
        qx = f.quant(x)
        beta = (f.options(k) or {}).get("beta", 0.0)
        # PreprocessSoftmaxScaling -> QuantizeMultiplierGreaterThanOne: TFLITE_CHECK > 1
        m = min(beta * (qx.legacy_scale if qx else 0.0) * (1 << 26), (1 << 31) - 1.0)
        if m <= 1.0:
            return (f"Prepare: TFLM aborts (a failed TFLITE_CHECK, the process ends): input "
                    f"scale x beta x 2^26 = {m:.3g} is not above 1")
        return None
    return f"Prepare: {tx} softmax"


def _logistic(f: SubgraphFacts, k: int) -> str | None:
    x, y = _t(f, k, "in0"), _t(f, k, "out0")
    if f.type(x) == I8:
        q = f.quant(y)
        if (q.legacy_zero_point if q else 0) != -128:
            return "Prepare: INT8 LOGISTIC needs output zero point -128"
    return None


def _max_rank(n: int) -> Rule:
    def rule(f: SubgraphFacts, k: int) -> str | None:
        x = _t(f, k, "in0")
        return (f"Prepare: rank {f.rank(x)} above TFLM's {n}" if x is not None and f.rank(x) > n
                else None)
    return rule


def _reshape(f: SubgraphFacts, k: int) -> str | None:
    """ReshapeOutput: the output keeps its stored shape; element counts must agree."""
    x, y = _t(f, k, "in0"), _t(f, k, "out0")
    if x is None or y is None:
        return "an input or output is missing"
    shape = list(f.shapes[y])
    if len(f.inputs[k]) == 1 and shape == [0]:
        shape = []  # the legacy scalar form
    n_in = f.num_elements(x)
    known = 1
    for d in shape:
        if d != -1:
            known *= d
    n_out = known * (n_in // known if -1 in shape and known else 1)
    if n_in != n_out:
        return (f"Prepare: {n_in} input elements but the stored output shape "
                f"{list(f.shapes[y])} holds {n_out} (TFLM does not resize tensors)")
    return None


def _pad(f: SubgraphFacts, k: int) -> str | None:
    """PadPrepare: rank <= 5, constant INT32 paddings that give the stored output shape."""
    x, p, y = _t(f, k, "in0"), _t(f, k, "in1"), _t(f, k, "out0")
    if f.rank(x) > 5:
        return f"Prepare: rank {f.rank(x)} above TFLM's 5"
    out = f.shapes[y]
    if f.num_elements(p) != 2 * len(out):
        return "Prepare: the paddings do not hold two values per output dimension"
    if not f.static[p]:
        return "Prepare: the paddings must be a constant in TFLM"
    raw = f.values(p)
    if raw is None:
        return "Prepare: unreadable paddings"
    if f.type(p) != I32:  # the kernel reads the bytes as int32
        raw = raw.astype(raw.dtype).view("<i4") if raw.dtype.itemsize == 8 else raw
    flat = [int(v) for v in raw.reshape(-1)]
    for i, d in enumerate(out):
        if i >= f.rank(x) or d != f.shapes[x][i] + flat[2 * i] + flat[2 * i + 1]:
            return (f"Prepare: the stored output shape {list(out)} is not the input padded "
                    "(TFLM reads the paddings as INT32 and does not resize)")
    return None


_CONV = {F: (F,), I8: (I8, I4), I16: (I8,)}
_EW_F = types("in0", (F,))

RULES: dict[str, Rule] = {
    "ABS": all_of(same("in0", "out0"), types("in0", (F, I8, I16), "Prepare")),
    "ADD": types("out0", (F, I32, I8, I16)),
    "ADD_N": all_of(same("in0", "out0"), types("in0", (F, I8), "Prepare")),
    "ARG_MAX": all_of(types("out0", (I32,)), types("in0", (F, I8))),
    "ARG_MIN": all_of(types("out0", (I32,)), types("in0", (F, I8))),
    "AVERAGE_POOL_2D": types("in0", (F, I8, I16), "Prepare"),
    "MAX_POOL_2D": types("in0", (F, I8, I16), "Prepare"),
    "L2_POOL_2D": all_of(same("in0", "out0"), types("in0", (F,), "Prepare")),
    "BATCH_MATMUL": all_of(types("in0", (F, I8, I16), "Prepare"), same("in0", "in1"),
                           same("in0", "out0")),
    "BATCH_TO_SPACE_ND": all_of(same("in0", "out0"), types("in0", (F, I8))),
    "SPACE_TO_BATCH_ND": all_of(same("in0", "out0"), types("in0", (F, I8))),
    "BROADCAST_ARGS": types("in0", (I32, I64)),
    "BROADCAST_TO": all_of(same("in0", "out0"), const("in1", "shape")),
    "CAST": all_of(types("in0", (I8, I16, I32, U32, F, B)), types("out0", (I8, I16, I32, U32,
                                                                            F))),
    "CEIL": types("in0", (F,), "Prepare"),
    "CONCATENATION": all_of(same("in0", "out0"), types("in0", (B, F, I8, I16, I32, I64),
                                                       "Prepare")),
    "CONV_2D": all_of(same("in0", "out0"), _weights(_CONV)),
    "DEPTHWISE_CONV_2D": all_of(same("in0", "out0"), _weights(_CONV)),
    "TRANSPOSE_CONV": all_of(types("in2", (F, I8, I16))),
    "FULLY_CONNECTED": all_of(same("in0", "out0"), _weights(_CONV)),
    "COS": _EW_F, "SIN": _EW_F, "LOG": _EW_F, "SQRT": _EW_F, "SQUARE": _EW_F,
    "RSQRT": all_of(same("in0", "out0"), types("in0", (F, I8), "Prepare")),
    "CUMSUM": all_of(types("in1", (I32,), "Prepare"), types("in0", (F, I8))),
    "DEPTH_TO_SPACE": all_of(same("in0", "out0"), types("in0", (F, I8))),
    "SPACE_TO_DEPTH": all_of(same("in0", "out0"), types("in0", (F, I8))),
    "DEQUANTIZE": all_of(types("in0", (I8, I16, U8), "Prepare"), types("out0", (F,), "Prepare"),
                         _dequantize),
    "QUANTIZE": _quantize,
    "DIV": all_of(same("in0", "in1"), same("in0", "out0"), types("out0", (F, I32, I8))),
    "DYNAMIC_UPDATE_SLICE": all_of(same("in0", "in1"), types("in2", (I32, I64), "Prepare"),
                                   types("in0", (F, I8, I16, I32))),
    "ELU": all_of(same("in0", "out0"), types("in0", (F, I8))),
    "EMBEDDING_LOOKUP": all_of(types("in0", (I32,), "Prepare"), types("out0", (F,), "Prepare"),
                               types("in1", (F, I8))),
    "EQUAL": types("in0", (B, F, I32, I64, I8)),
    "NOT_EQUAL": types("in0", (B, F, I32, I64, I8)),
    "GREATER": types("in0", (F, I32, I64, I8, I16)),
    "GREATER_EQUAL": types("in0", (F, I32, I64, I8)),
    "LESS": types("in0", (F, I32, I64, I8)),
    "LESS_EQUAL": types("in0", (F, I32, I64, I8)),
    "EXP": types("in0", (F,), "Prepare"),
    "EXPAND_DIMS": all_of(const("in1", "axis"), types("in0", (F, I16, I8))),
    "FILL": types("in1", (F, I32, I8)),
    "FLOOR": types("in0", (F,)),
    "FLOOR_DIV": all_of(same("in0", "in1"), types("in0", (F,))),
    "FLOOR_MOD": all_of(same("in0", "in1"), types("in0", (F,))),
    "GATHER": all_of(types("in1", (I32,), "Prepare"), types("in0", (F, I8), "Prepare")),
    "GATHER_ND": all_of(types("in0", (F, I8), "Prepare"), types("in1", (I32,), "Prepare")),
    "HARD_SWISH": types("in0", (F, I8)),
    "IF": types("in0", (B,), "Prepare"),
    "L2_NORMALIZATION": all_of(same("in0", "out0"), types("out0", (F, I8))),
    "LEAKY_RELU": all_of(same("in0", "out0"), types("in0", (F, I8, I16))),
    "LOG_SOFTMAX": all_of(same("in0", "out0"), types("in0", (F, I8))),
    "LOGICAL_AND": types("in0", (B,)), "LOGICAL_OR": types("in0", (B,)),
    "LOGICAL_NOT": types("in0", (B,)),
    "LOGISTIC": all_of(same("in0", "out0"), types("out0", (F, I16, I8)), _logistic),
    "MAXIMUM": types("out0", (F, I8, I16, I32, I64)),
    "MINIMUM": types("out0", (F, I8, I16, I32, I64)),
    "MIRROR_PAD": all_of(types("in1", (I32, I64)), types("out0", (F, I8))),
    "MUL": all_of(same("in0", "in1"), types("in0", (I8, I16, I32, F)),
                  zero_points(("in0", "in1", "out0"), 0, (I16,))),
    "NEG": types("in0", (F,)),
    "PACK": types("out0", (F, I8, I16, I32, I64)),
    "UNPACK": types("in0", (F, I32, I16, I8)),
    "PAD": all_of(same("in0", "out0"), _pad, types("in0", (F, I8, I16, I32))),
    "PADV2": all_of(same("in0", "out0"), _pad, types("in0", (F, I8, I16, I32))),
    "PRELU": types("in0", (F, I8, I16)),
    "REDUCE_ALL": types("in0", (B,), "Prepare"),
    "REDUCE_MAX": all_of(types("in1", (I32,), "Prepare"), same("in0", "out0"),
                         types("in0", (F, I8))),
    "REDUCE_MIN": all_of(types("in1", (I32,), "Prepare"), same("in0", "out0"),
                         types("in0", (F, I8))),
    "MEAN": all_of(types("in1", (I32,), "Prepare"), types("in0", (F, I8, I16))),
    "SUM": all_of(types("in1", (I32,), "Prepare"), same("in0", "out0"),
                  types("in0", (F, I8, I16))),
    "RELU": all_of(same("in0", "out0"), types("in0", (F, I8, I16))),
    "RELU6": all_of(same("in0", "out0"), types("in0", (F, I8, I16))),
    "RESHAPE": all_of(_reshape, same("in0", "out0")),
    "RESIZE_BILINEAR": all_of(types("in1", (I32,), "Prepare"), types("in0", (F, I8, I16))),
    "RESIZE_NEAREST_NEIGHBOR": all_of(types("in1", (I32,), "Prepare"),
                                      types("in0", (F, I8, I16))),
    "REVERSE_V2": all_of(same("in0", "out0"), types("out0", (F, I32, I16, I8, U8, I64, B))),
    "ROUND": all_of(same("in0", "out0"), types("in0", (F,), "Prepare")),
    "SELECT_V2": all_of(types("in0", (B,), "Prepare"), same("in1", "in2"),
                        types("in1", (F, I8, I16))),
    "SHAPE": types("out0", (I32,)),
    "SLICE": types("in0", (F, I32, I8, I16, B)),
    "SOFTMAX": _softmax,
    "SPLIT": types("in1", (F, I8, I16, I32)),
    "SPLIT_V": types("in0", (F, I8, I16, I32)),
    "SQUARED_DIFFERENCE": all_of(same("in0", "in1"), types("in0", (F, I32, I8))),
    "SQUEEZE": same("in0", "out0"),
    "STRIDED_SLICE": types("out0", (F, I8, I16, I32, B)),
    "SUB": types("out0", (F, I32, I8, I16)),
    "SVDF": types("in0", (F, I8)),
    "TANH": all_of(same("in0", "out0"), types("in0", (F, I16, I8)),
                   zero_points(("in0", "out0"), 0, (I16,))),
    "TRANSPOSE": all_of(_max_rank(5), same("in0", "out0"), const("in1", "permutation"),
                        types("in0", (F, I8, I16))),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": types("in0", (F, I8, I16)),
    "ZEROS_LIKE": types("in0", (I64, I32, I8, F)),
    **{op: (lambda f, k: None) for op in ("ASSIGN_VARIABLE", "READ_VARIABLE", "VAR_HANDLE",
                                          "CALL_ONCE", "WHILE")},
}
