"""The output types LiteRT's reference kernels insist on, checked for every node at load.

A kernel's result is stored cast to its output tensor's declared type
(`Subgraph.set_output`), so a model whose RELU declares an INT32 output for a FLOAT32
input would run here, its values cast to integers, while LiteRT's reference kernels refuse
it at prepare ("input->type != output->type").  A structural fuzz campaign found such
files running; an audit of every operator type of the corpus with its output retyped
(LiteRT as the oracle: tests/interpreter/test_output_types.py) found 18 operator types
that did.

LiteRT's builtin kernels do not always refuse such a file: some read a tensor's bytes as
the type they compute in whatever the tensor declares (mobilenet_v2_float with an ADD's
output declared INT32 gives its original outputs there).  This interpreter stores values
in their declared types and does not reinterpret bytes, so it refuses the file rather
than compute something else, and says whose check it follows.

The rules are LiteRT's Prepare checks, each named with its kernel's file and line in
tflite/kernels of LiteRT's repository when this was written; the test holds them to
LiteRT 2.3.0's reference kernels.  Kernels with a check of their own (``types_check`` with
``output_like``) keep it; these are checked for every node before the kernel's own check,
whatever types its registration takes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .node import Node
    from .subgraph import Subgraph

#: operator -> the input whose type every output must have (the Prepare line that says so)
OUTPUT_AS_INPUT: dict[str, int] = {
    "RELU": 0, "RELU_N1_TO_1": 0, "RELU6": 0, "RELU_0_TO_1": 0,  # activations.cc:230
    "LEAKY_RELU": 0,  # activations.cc:305
    "TANH": 0,  # activations.cc:342
    "LOGISTIC": 0,  # activations.cc:442
    "LOG_SOFTMAX": 0,  # activations.cc:662
    "AVERAGE_POOL_2D": 0, "MAX_POOL_2D": 0, "L2_POOL_2D": 0,  # pooling.cc:79
    "CONV_2D": 0,  # conv.cc:379
    "DEPTHWISE_CONV_2D": 0,  # depthwise_conv.cc:146 (data_type is the input's)
    "STRIDED_SLICE": 0,  # strided_slice.cc:314
    "SLICE": 0,  # slice.cc:138
    "PACK": 0,  # pack.cc:85
    "UNPACK": 0,  # unpack.cc:77 (every output)
    "CONCATENATION": 0,  # concatenation.cc:226
    "SPACE_TO_BATCH_ND": 0,  # space_to_batch_nd.cc:104
    "BATCH_TO_SPACE_ND": 0,  # batch_to_space_nd.cc:104
    "PAD": 0, "PADV2": 0,  # pad.cc:410
    "TRANSPOSE": 0,  # transpose.cc:81
    "TILE": 0,  # tile.cc:312
    "DEPTH_TO_SPACE": 0,  # depth_to_space.cc:61
    "SPACE_TO_DEPTH": 0,  # space_to_depth.cc:61
    "REVERSE_V2": 0,  # reverse.cc:74
    # no Prepare check: its kernels write values of the input's kind (float, or integers
    # at the output's scale) into the output whatever its type; LiteRT crashes on an INT32
    # output of a float or int8 LSTM
    "UNIDIRECTIONAL_SEQUENCE_LSTM": 0,
}
#: operators whose inputs all have one type: PACK (pack.cc:67), CONCATENATION
#: (concatenation.cc:203)
SAME_INPUT_TYPES = frozenset({"PACK", "CONCATENATION"})
#: FULLY_CONNECTED: unquantized weights take a FLOAT32 input and output
#: (fully_connected.cc:301-302), quantized ones with a FLOAT32 input (hybrid) a FLOAT32
#: output (:284); the integer forms take several output types
QUANTIZED_WEIGHTS = frozenset({"UINT8", "INT8", "INT4", "INT2", "INT16"})  # :259
#: operator -> {input 0's type: the output types LiteRT takes}; other input types refused
OUTPUTS_BY_INPUT: dict[str, dict[str, tuple[str, ...]]] = {
    # activations.cc:1303 ("Only int8_t and int16_t outputs are supported with int8_t
    # inputs") and :1316 ("Only float32, uint8_t, Int8_t, Int16_t are supported")
    # FLOAT16: SOFTMAX v4, which LiteRT 2.3.0 runs (tests/interpreter/test_float16_paths.py)
    "SOFTMAX": {"FLOAT32": ("FLOAT32",), "FLOAT16": ("FLOAT16",),
                "UINT8": ("UINT8", "INT16"), "INT8": ("INT8", "INT16"), "INT16": ("INT16",)},
}
#: REAL, IMAG, COMPLEX_ABS: the output type of each complex input type
#: (complex_support.cc:43 and :45)
COMPLEX_PART_TYPES = {"COMPLEX64": "FLOAT32", "COMPLEX128": "FLOAT64"}
COMPLEX_PARTS = frozenset({"REAL", "IMAG", "COMPLEX_ABS"})

#: what every refusal here ends with (the tests tell these refusals from others by it)
WHY = "LiteRT's reference kernels refuse it"


def check_output_types(sg: "Subgraph", node: "Node") -> str | None:
    """Why LiteRT would refuse this node's tensor types at prepare, or None."""
    name = node.name
    head = f"{name} v{node.version}"
    if name in OUTPUT_AS_INPUT:
        k = OUTPUT_AS_INPUT[name]
        source = _tensor(sg, node.inputs, k)
        if source is not None:
            for pos, t in enumerate(node.outputs):
                out = _tensor(sg, node.outputs, pos)
                if out is not None and out.type != source.type:
                    return (f"{head}: output {pos} is {out.type_name}, input {k} "
                            f"{source.type_name} ({WHY})")
    if name in SAME_INPUT_TYPES:
        first = _tensor(sg, node.inputs, 0)
        for pos in range(1, len(node.inputs)):
            t = _tensor(sg, node.inputs, pos)
            if first is not None and t is not None and t.type != first.type:
                return (f"{head}: input {pos} is {t.type_name}, input 0 "
                        f"{first.type_name} ({WHY})")
    x, out = _tensor(sg, node.inputs, 0), _tensor(sg, node.outputs, 0)
    if x is None or out is None:
        return None
    if name == "FULLY_CONNECTED":
        weights = _tensor(sg, node.inputs, 1)
        if weights is not None and weights.type_name not in QUANTIZED_WEIGHTS and \
                x.type_name != "FLOAT32":
            return f"{head}: {weights.type_name} weights with a {x.type_name} input ({WHY})"
        if x.type_name == "FLOAT32" and out.type_name != "FLOAT32":
            return f"{head}: a FLOAT32 input with a {out.type_name} output ({WHY})"
    if name in OUTPUTS_BY_INPUT:
        allowed = OUTPUTS_BY_INPUT[name].get(x.type_name)
        if allowed is None:
            return f"{head}: a {x.type_name} input ({WHY})"
        if out.type_name not in allowed:
            return (f"{head}: a {x.type_name} input with a {out.type_name} output; LiteRT "
                    f"takes {' or '.join(allowed)} ({WHY})")
    if name in COMPLEX_PARTS:
        want = COMPLEX_PART_TYPES.get(x.type_name)
        if want is not None and out.type_name != want:
            return f"{head}: a {x.type_name} input with a {out.type_name} output ({WHY})"
    return None


#: control flow whose callees take the caller's operands in order: WHILE every input
#: (cond and body), IF the inputs after the condition (then and else)
CALL_OPERANDS = {"WHILE": 0, "IF": 1}


def check_call_types(sg: "Subgraph", node: "Node") -> str | None:
    """Why a WHILE or IF gives a callee an operand of another type than its input, or
    None.  LiteRT's control-flow kernels give a callee's inputs the caller's types and
    prepare it again, so its operators meet (and may refuse) those types; here a callee
    keeps its declared types and a value would be cast into them, so the call is refused:
    with its outputs retyped, lstm_float's RESHAPE feeds its loop's FULLY_CONNECTED an
    INT32 input, which LiteRT refuses (fully_connected.cc:301) and this would cast."""
    first = CALL_OPERANDS.get(node.name)
    if first is None or node.op is None:
        return None
    model = sg.model_subgraph.model
    for role, index in node.op.called_subgraphs.items():
        if not 0 <= index < len(model.subgraphs):
            continue  # (validation names a call to a missing subgraph)
        callee = model.subgraphs[index]
        for pos, (t, c) in enumerate(zip(node.inputs[first:], callee.inputs)):
            operand = _tensor(sg, node.inputs, first + pos)
            if operand is None or not 0 <= c < len(callee.tensors):
                continue
            declared = callee.tensors[c].type_name
            if operand.type_name != declared:
                return (f"{node.name} v{node.version}: operand {first + pos} is "
                        f"{operand.type_name}, the {role} subgraph's input {pos} {declared} "
                        "(LiteRT would retype the callee; this interpreter runs a callee "
                        "in its declared types)")
    return None


def _tensor(sg: "Subgraph", indices, pos: int):
    """The tensor at ``indices[pos]``, or None where it is omitted or out of range."""
    if pos >= len(indices) or indices[pos] < 0 or indices[pos] >= len(sg.tensors):
        return None
    return sg.tensors[indices[pos]]
