"""Checks a model must pass before any kernel sees it.

The reader (`tflite_viewer.model.checks`) already refuses tensor indices out of range.
What it cannot know is what each *kernel* expects: how many inputs and outputs a node
has, which of them may be omitted (index -1), that zero points fit their type.  LiteRT
checks these in each kernel's Prepare (``TF_LITE_ENSURE_EQ(context, NumInputs(node), 2)``)
and crashes on some that it forgets; here they are checked in one
place when the interpreter is built, so a kernel never receives a node it cannot handle
and a malformed model gets a `ModelFormatError` naming where:
``subgraphs[0].operators[3].inputs: ADD takes 2 inputs, the operator has 0``.

Arity comes from `ARITY` (read from LiteRT's kernels) or from a kernel class attribute
``arity = (min_inputs, max_inputs, min_outputs, max_outputs)`` (``None`` = no maximum),
which custom kernels may declare; ops with neither get only the generic checks.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..model.errors import ModelFormatError
from .budget import check_bytes

if TYPE_CHECKING:
    from .node import Node
    from .subgraph import Subgraph


class Arity(NamedTuple):
    min_inputs: int
    max_inputs: int | None
    min_outputs: int
    max_outputs: int | None
    #: input positions that must name a tensor (default: the first ``min_inputs``)
    required: tuple[int, ...] | None = None


_UNARY = Arity(1, 1, 1, 1)
_BINARY = Arity(2, 2, 1, 1)

#: what LiteRT's kernels ensure in Prepare (tflite/kernels/*.cc), by op name
ARITY: dict[str, Arity] = {
    **{name: _UNARY for name in (
        "ABS CEIL COS EXP FLOOR LOG LOGICAL_NOT LOGISTIC NEG RELU RELU6 RELU_0_TO_1 "
        "RELU_N1_TO_1 ROUND RSQRT SIGN SIN SQRT SQUARE TANH ELU GELU HARD_SWISH LEAKY_RELU "
        "COMPLEX_ABS REAL IMAG L2_NORMALIZATION LOCAL_RESPONSE_NORMALIZATION LOG_SOFTMAX "
        "SOFTMAX ZEROS_LIKE SHAPE RANK CAST DEQUANTIZE QUANTIZE DENSIFY AVERAGE_POOL_2D "
        "MAX_POOL_2D L2_POOL_2D SPACE_TO_DEPTH DEPTH_TO_SPACE SQUEEZE WHERE "
        "READ_VARIABLE").split()},
    **{name: _BINARY for name in (
        "ADD SUB MUL DIV FLOOR_DIV FLOOR_MOD POW MAXIMUM MINIMUM SQUARED_DIFFERENCE EQUAL "
        "NOT_EQUAL GREATER GREATER_EQUAL LESS LESS_EQUAL LOGICAL_AND LOGICAL_OR PRELU "
        "BATCH_MATMUL ARG_MAX ARG_MIN EXPAND_DIMS BROADCAST_TO FILL GATHER GATHER_ND "
        "EMBEDDING_LOOKUP TILE TRANSPOSE REVERSE_V2 CUMSUM MEAN SUM REDUCE_MAX REDUCE_MIN "
        "REDUCE_PROD REDUCE_ALL REDUCE_ANY RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR "
        "MIRROR_PAD RFFT2D").split()},
    **{name: Arity(3, 3, 1, 1) for name in (
        "SELECT SELECT_V2 SLICE RANGE SCATTER_ND DYNAMIC_UPDATE_SLICE SPACE_TO_BATCH_ND "
        "BATCH_TO_SPACE_ND").split()},
    "STRIDED_SLICE": Arity(4, 4, 1, 1),
    "RESHAPE": Arity(1, 2, 1, 1),
    "PAD": Arity(2, 3, 1, 1, (0, 1)),
    "PADV2": Arity(2, 3, 1, 1, (0, 1)),
    "TOPK_V2": Arity(2, 2, 2, 2),
    "SPLIT": Arity(2, 2, 1, None),
    "SPLIT_V": Arity(3, 3, 1, None),
    "UNPACK": Arity(1, 1, 1, None),
    "PACK": Arity(1, None, 1, 1),
    "CONCATENATION": Arity(1, None, 1, 1),
    "CONV_2D": Arity(2, 3, 1, 1),
    "DEPTHWISE_CONV_2D": Arity(2, 3, 1, 1),
    "TRANSPOSE_CONV": Arity(3, 4, 1, 1),
    "FULLY_CONNECTED": Arity(2, 3, 1, 2),
    "NON_MAX_SUPPRESSION_V4": Arity(5, 5, 2, 2),
    "NON_MAX_SUPPRESSION_V5": Arity(6, 6, 3, 3),
    "SVDF": Arity(5, 5, 1, 1, (0, 1, 2, 4)),
    "UNIDIRECTIONAL_SEQUENCE_RNN": Arity(5, 5, 1, 1),
    "UNIDIRECTIONAL_SEQUENCE_LSTM": Arity(20, 24, 1, 1, (0, 2, 3, 4, 6, 7, 8, 13, 14, 15,
                                                          18, 19)),
    "BIDIRECTIONAL_SEQUENCE_LSTM": Arity(48, 48, 1, 2, (0,)),
    "WHILE": Arity(0, None, 0, None),  # as many outputs as inputs (checked below)
    "IF": Arity(1, None, 0, None),
    "CALL_ONCE": Arity(0, 0, 0, 0),
    "VAR_HANDLE": Arity(0, 0, 1, 1),
    "ASSIGN_VARIABLE": Arity(2, 2, 0, 0),
    "HASHTABLE_LOOKUP": Arity(3, 3, 2, 2),
    "MULTINOMIAL": Arity(2, 2, 1, 1),
    "STABLEHLO_GATHER": Arity(2, 2, 1, 1),
    "STABLEHLO_SCATTER": Arity(3, 3, 1, 1),
    "STABLEHLO_RNG_BIT_GENERATOR": Arity(1, 1, 2, 2),
    # custom ops with kernels here
    "TFLite_Detection_PostProcess": Arity(3, 3, 4, 4),
    "Convolution2DTransposeBias": Arity(3, 3, 1, 1),
    "MaxPoolingWithArgmax2D": Arity(1, 1, 2, 2),
    "MaxUnpooling2D": Arity(2, 2, 1, 1),
}


def arity_of(node: "Node") -> Arity | None:
    declared = getattr(node.registration.kernel, "arity", None)
    if declared is not None:
        return Arity(*declared)
    return ARITY.get(node.name)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _expect(lo: int, hi: int | None, what: str) -> str:
    if hi is None:
        return f"at least {_count(lo, what)}"
    if lo == hi:
        return _count(lo, what)
    return f"{lo} to {hi} {what}s"


def check_node(sg: "Subgraph", node: "Node") -> None:
    """Raise ModelFormatError unless the node fits what its kernel declares."""
    where = f"subgraphs[{sg.index}].operators[{node.index}]"
    n_in, n_out = len(node.inputs), len(node.outputs)
    arity = arity_of(node)
    if arity is not None:
        lo, hi, olo, ohi, required = arity
        if n_in < lo or (hi is not None and n_in > hi):
            raise ModelFormatError(f"{where}.inputs", f"{node.name} takes "
                                   f"{_expect(lo, hi, 'input')}, the operator has {n_in}")
        if n_out < olo or (ohi is not None and n_out > ohi):
            raise ModelFormatError(f"{where}.outputs", f"{node.name} has "
                                   f"{_expect(olo, ohi, 'output')}, the operator lists {n_out}")
        for k in (range(lo) if required is None else required):
            if k < n_in and node.inputs[k] < 0:
                raise ModelFormatError(f"{where}.inputs[{k}]", f"input {k} of {node.name} "
                                       "is required but omitted (-1)")
    if node.name == "WHILE" and n_out != n_in:
        raise ModelFormatError(f"{where}.outputs", f"WHILE has as many outputs as inputs "
                               f"({n_in}), the operator lists {n_out}")
    for k, o in enumerate(node.outputs):
        if o < 0:
            raise ModelFormatError(f"{where}.outputs[{k}]", "an output cannot be omitted (-1)")
        if sg.tensors[o].is_constant:
            raise ModelFormatError(f"{where}.outputs[{k}]", f"tensor {o} "
                                   f"({sg.tensors[o].name!r}) is a constant of the model and "
                                   "cannot be an operator's output")


def check_tensors(sg: "Subgraph") -> None:
    """Raise ModelFormatError for quantization parameters a kernel would index past (zero
    points that are not one per scale or do not fit their type), and variables whose
    stored initial value does not fit their shape (negative dimensions are refused when
    the runtime Tensor is made).  Scales that are zero, negative or not finite are no
    load error: LiteRT loads them, and `accepts.check_scales` refuses them only at the
    kernels that would use them."""
    limit = sg.interpreter.max_allocation_bytes
    for t in sg.tensors:
        where = f"subgraphs[{sg.index}].tensors[{t.index}]"
        sig = t.shape_signature
        if sig is not None and t.shape is not None and (len(sig) != len(t.shape) or any(
                s != -1 and s != d for s, d in zip(sig, t.shape))):
            raise ModelFormatError(f"{where}.shape_signature", f"{list(sig)} does not fit the "
                                   f"shape {list(t.shape)} (only -1 may differ)")
        if t.sparsity is not None and t.shape is not None and t.dtype is not None:
            # a sparse constant is densified by the kernel that reads it
            check_bytes(int(np.prod(t.shape, dtype=np.float64)) * t.dtype.itemsize, limit,
                        f"sparse tensor {t.index} ({t.name!r}) densified to "
                        f"{t.type_name}{list(t.shape)}")
        initial = t._initial
        if initial is not None and t.shape is not None and \
                initial.size != int(np.prod(t.shape, dtype=np.int64)):
            raise ModelFormatError(f"{where}.buffer", f"variable tensor {t.name!r} of shape "
                                   f"{list(t.shape)} starts from {initial.size} values")
        q = t.quantization
        if q is None or not q.scale.size:
            continue
        if q.zero_point.size and q.zero_point.size != q.scale.size:
            raise ModelFormatError(f"{where}.quantization", f"{q.scale.size} scales but "
                                   f"{q.zero_point.size} zero points")
        if q.zero_point.size and t.dtype is not None and t.dtype.kind in "iu":
            info = np.iinfo(t.dtype)
            outside = (q.zero_point < info.min) | (q.zero_point > info.max)
            if outside.any():
                raise ModelFormatError(f"{where}.quantization", f"zero point "
                                       f"{int(q.zero_point[outside][0])} does not fit "
                                       f"{t.type_name} ({info.min}..{info.max})")


def check_calls(sg: "Subgraph", node: "Node", subgraphs: list["Subgraph"]) -> None:
    """A control-flow node's callees take and return what the node passes and expects."""
    where = f"subgraphs[{sg.index}].operators[{node.index}]"
    n_in, n_out = len(node.inputs), len(node.outputs)
    expect = {"WHILE": {"cond": (n_in, 1), "body": (n_in, n_in)},
              "IF": {"then": (n_in - 1, n_out), "else": (n_in - 1, n_out)},
              "CALL_ONCE": {"init": (0, None)}}.get(node.name)
    if expect is None or node.op is None:
        return
    calls = node.op.called_subgraphs
    for role, (ins, outs) in expect.items():
        if role not in calls:
            raise ModelFormatError(f"{where}.builtin_options", f"{node.name} names no {role} "
                                   "subgraph")
        callee = subgraphs[calls[role]]
        if len(callee.inputs) != ins or (outs is not None and len(callee.outputs) != outs):
            raise ModelFormatError(
                f"{where}.builtin_options.{role}", f"{node.name} passes {ins} inputs"
                + (f" and expects {outs} outputs" if outs is not None else "")
                + f"; its {role} subgraph {callee.index} takes {len(callee.inputs)} and "
                f"returns {len(callee.outputs)}")


def check_order(sg: "Subgraph") -> None:
    """Every input a node reads exists by the time it runs: a subgraph input, a constant,
    a variable, or the output of an earlier node (what TFLite's execution plan assumes)."""
    ready = set(sg.inputs)
    ready.update(t.index for t in sg.tensors if t.is_constant or t.is_variable)
    # a static shape with no element has its value (the empty array) without a writer:
    # an INT32 shape-[0] constant stores no bytes, as the converter writes it
    ready.update(t.index for t in sg.tensors if t.shape is not None and 0 in t.shape)
    for ni in sg.execution_plan:
        node = sg.nodes[ni]
        for k, i in enumerate(node.inputs):
            if i >= 0 and i not in ready:
                raise ModelFormatError(
                    f"subgraphs[{sg.index}].operators[{node.index}].inputs[{k}]",
                    f"{node.name} reads tensor {i} ({sg.tensors[i].name!r}) before anything "
                    "gives it a value (it is not a subgraph input, a constant, a variable or "
                    "the output of an earlier operator)")
        ready.update(node.outputs)


#: ops whose kernels pad their input by the window (filter extent times dilation)
_WINDOW_OPS = {"CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"}


def check_window(sg: "Subgraph", node: "Node") -> None:
    """At prepare: the padded input a windowed kernel builds counts against the allocation
    limit.  A dilation or filter size of 2**20 in a hostile file would otherwise make the
    kernel allocate (and loop over) gigabytes before any output shape says so."""
    if node.name not in _WINDOW_OPS or not node.inputs or node.inputs[0] < 0:
        return
    x = sg.tensors[node.inputs[0]].shape
    if x is None or len(x) != 4:
        return
    opts = node.builtin_data or {}
    if node.name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        w = sg.tensors[node.inputs[1]].shape if len(node.inputs) > 1 and node.inputs[1] >= 0 \
            else None
        if w is None or len(w) != 4:
            return
        kh, kw = int(w[1]), int(w[2])
        eh = int(opts.get("dilation_h_factor", 1) or 1) * (kh - 1) + 1
        ew = int(opts.get("dilation_w_factor", 1) or 1) * (kw - 1) + 1
    else:
        eh, ew = int(opts.get("filter_height", 1) or 1), int(opts.get("filter_width", 1) or 1)
    padded = float(x[0]) * (x[1] + abs(eh)) * (x[2] + abs(ew)) * x[3] * 8
    check_bytes(int(padded), sg.interpreter.max_allocation_bytes,
                f"subgraph {sg.index} op {node.index} ({node.name}): its {eh} x {ew} window "
                f"over input {list(x)}")


def check_subgraph(sg: "Subgraph", subgraphs: list["Subgraph"], order: bool = True) -> None:
    """Every tensor and node of a runtime subgraph (see the module docstring); ``order``
    is False while some operators have no kernel (their outputs would look unwritten)."""
    check_tensors(sg)
    for node in sg.nodes:
        check_node(sg, node)
        check_calls(sg, node, subgraphs)
    if order:
        check_order(sg)
