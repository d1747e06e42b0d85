"""Per-operator facts, one entry per builtin op: the single table the graph, the panels and
the editor read (as Netron keeps one metadata table per format).  Adding an op here adds it
everywhere: its colour category on the canvas, the names of its constant inputs on the box
and in Properties, the shape rule the editor's shape check applies, and which called
subgraph a double-click opens.

What the runtime needs (versions, kernels) lives with the kernels; what LiteRT decides
(op versions, minimum runtime versions) stays in edit/op_version.py and
edit/runtime_version.py, which transcribe LiteRT's own tables.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

CATEGORIES = (
    "convolution", "pooling", "activation", "elementwise", "reduction", "normalization",
    "recurrent", "shape/layout", "quantization", "control flow", "custom", "other", "unknown",
)
(_CONVOLUTION, _POOLING, _ACTIVATION, _ELEMENTWISE, _REDUCTION, _NORMALIZATION, _RECURRENT,
 _SHAPE_LAYOUT, _QUANTIZATION, _CONTROL_FLOW, _CUSTOM, _OTHER, _UNKNOWN) = CATEGORIES


@dataclass(frozen=True)
class OpInfo:
    """What the tool knows about one builtin operator, apart from running it."""

    name: str
    #: colour category on the canvas (one of CATEGORIES)
    category: str = _OTHER
    #: input position -> short role name ("W", "b", "axis") for constant inputs
    inputs: Mapping[int, str] = field(default_factory=dict)
    #: output 0 is the numpy broadcast of inputs 0 and 1
    broadcasts: bool = False
    #: output 0 has input 0's shape
    keeps_shape: bool = False
    #: the called subgraph a double-click opens first (a role of Operator.called_subgraphs)
    opens: str | None = None


def _plain(category: str, names: str) -> tuple[OpInfo, ...]:
    """Entries for ops of ``category`` that have no other facts (names split on spaces)."""
    return tuple(OpInfo(name, category) for name in names.split())


_TABLE: tuple[OpInfo, ...] = (
    # convolution
    OpInfo("CONV_2D", _CONVOLUTION, inputs={1: "W", 2: "b"}),
    OpInfo("DEPTHWISE_CONV_2D", _CONVOLUTION, inputs={1: "W", 2: "b"}),
    OpInfo("TRANSPOSE_CONV", _CONVOLUTION, inputs={0: "shape", 1: "W", 3: "b"}),
    OpInfo("CONV_3D", _CONVOLUTION, inputs={1: "W", 2: "b"}),
    OpInfo("FULLY_CONNECTED", _CONVOLUTION, inputs={1: "W", 2: "b"}),
    OpInfo("BATCH_MATMUL", _CONVOLUTION, inputs={0: "A", 1: "B"}),
    *_plain(_CONVOLUTION, "CONV_3D_TRANSPOSE STABLEHLO_CONVOLUTION STABLEHLO_DOT_GENERAL"),
    # pooling
    OpInfo("STABLEHLO_REDUCE_WINDOW", _POOLING, opens="body"),
    *_plain(_POOLING, "AVERAGE_POOL_2D MAX_POOL_2D L2_POOL_2D REDUCE_WINDOW"),
    # activation
    OpInfo("RELU", _ACTIVATION, keeps_shape=True),
    OpInfo("RELU6", _ACTIVATION, keeps_shape=True),
    OpInfo("RELU_N1_TO_1", _ACTIVATION, keeps_shape=True),
    OpInfo("RELU_0_TO_1", _ACTIVATION, keeps_shape=True),
    OpInfo("LEAKY_RELU", _ACTIVATION, keeps_shape=True),
    OpInfo("PRELU", _ACTIVATION, inputs={1: "alpha"}, keeps_shape=True),
    OpInfo("HARD_SWISH", _ACTIVATION, keeps_shape=True),
    OpInfo("LOGISTIC", _ACTIVATION, keeps_shape=True),
    OpInfo("TANH", _ACTIVATION, keeps_shape=True),
    OpInfo("GELU", _ACTIVATION, keeps_shape=True),
    OpInfo("ELU", _ACTIVATION, keeps_shape=True),
    OpInfo("SOFTMAX", _ACTIVATION, keeps_shape=True),
    OpInfo("LOG_SOFTMAX", _ACTIVATION, keeps_shape=True),
    *_plain(_ACTIVATION, "STABLEHLO_LOGISTIC STABLEHLO_TANH"),
    # elementwise
    OpInfo("ADD", _ELEMENTWISE, broadcasts=True),
    OpInfo("SUB", _ELEMENTWISE, broadcasts=True),
    OpInfo("MUL", _ELEMENTWISE, broadcasts=True),
    OpInfo("DIV", _ELEMENTWISE, broadcasts=True),
    OpInfo("SQUARED_DIFFERENCE", _ELEMENTWISE, broadcasts=True),
    OpInfo("MAXIMUM", _ELEMENTWISE, broadcasts=True),
    OpInfo("MINIMUM", _ELEMENTWISE, broadcasts=True),
    OpInfo("POW", _ELEMENTWISE, broadcasts=True),
    OpInfo("FLOOR_DIV", _ELEMENTWISE, broadcasts=True),
    OpInfo("FLOOR_MOD", _ELEMENTWISE, broadcasts=True),
    OpInfo("EXP", _ELEMENTWISE, keeps_shape=True),
    OpInfo("LOG", _ELEMENTWISE, keeps_shape=True),
    OpInfo("SQRT", _ELEMENTWISE, keeps_shape=True),
    OpInfo("RSQRT", _ELEMENTWISE, keeps_shape=True),
    OpInfo("SQUARE", _ELEMENTWISE, keeps_shape=True),
    OpInfo("ABS", _ELEMENTWISE, keeps_shape=True),
    OpInfo("NEG", _ELEMENTWISE, keeps_shape=True),
    OpInfo("SIN", _ELEMENTWISE, keeps_shape=True),
    OpInfo("COS", _ELEMENTWISE, keeps_shape=True),
    OpInfo("FLOOR", _ELEMENTWISE, keeps_shape=True),
    OpInfo("CEIL", _ELEMENTWISE, keeps_shape=True),
    OpInfo("ROUND", _ELEMENTWISE, keeps_shape=True),
    OpInfo("SIGN", _ELEMENTWISE, keeps_shape=True),
    OpInfo("EQUAL", _ELEMENTWISE, broadcasts=True),
    OpInfo("NOT_EQUAL", _ELEMENTWISE, broadcasts=True),
    OpInfo("LESS", _ELEMENTWISE, broadcasts=True),
    OpInfo("LESS_EQUAL", _ELEMENTWISE, broadcasts=True),
    OpInfo("GREATER", _ELEMENTWISE, broadcasts=True),
    OpInfo("GREATER_EQUAL", _ELEMENTWISE, broadcasts=True),
    OpInfo("LOGICAL_AND", _ELEMENTWISE, broadcasts=True),
    OpInfo("LOGICAL_OR", _ELEMENTWISE, broadcasts=True),
    OpInfo("LOGICAL_NOT", _ELEMENTWISE, keeps_shape=True),
    OpInfo("ADD_N", _ELEMENTWISE, keeps_shape=True),
    *_plain(_ELEMENTWISE, """SELECT SELECT_V2 ATAN2 BITWISE_XOR RIGHT_SHIFT COMPLEX_ABS
        REAL IMAG STABLEHLO_ADD STABLEHLO_DIVIDE STABLEHLO_MULTIPLY
        STABLEHLO_MAXIMUM STABLEHLO_MINIMUM STABLEHLO_ABS STABLEHLO_AND
        STABLEHLO_OR STABLEHLO_COSINE STABLEHLO_EXPONENTIAL
        STABLEHLO_FLOOR STABLEHLO_LOG STABLEHLO_NEGATE STABLEHLO_POWER
        STABLEHLO_REMAINDER STABLEHLO_RSQRT STABLEHLO_SELECT
        STABLEHLO_SUBTRACT STABLEHLO_COMPARE STABLEHLO_CLAMP
        STABLEHLO_SHIFT_LEFT STABLEHLO_CBRT"""),
    # reduction
    OpInfo("MEAN", _REDUCTION, inputs={1: "axis"}),
    OpInfo("SUM", _REDUCTION, inputs={1: "axis"}),
    OpInfo("STABLEHLO_REDUCE", _REDUCTION, opens="body"),
    *_plain(_REDUCTION, """REDUCE_MAX REDUCE_MIN REDUCE_PROD REDUCE_ANY REDUCE_ALL ARG_MAX
        ARG_MIN CUMSUM TOPK_V2 UNSORTED_SEGMENT_PROD UNSORTED_SEGMENT_MAX
        UNSORTED_SEGMENT_SUM UNSORTED_SEGMENT_MIN SEGMENT_SUM"""),
    # normalization
    OpInfo("L2_NORMALIZATION", _NORMALIZATION, keeps_shape=True),
    OpInfo("LOCAL_RESPONSE_NORMALIZATION", _NORMALIZATION, keeps_shape=True),
    # recurrent
    *_plain(_RECURRENT, """LSTM UNIDIRECTIONAL_SEQUENCE_LSTM BIDIRECTIONAL_SEQUENCE_LSTM RNN
        UNIDIRECTIONAL_SEQUENCE_RNN BIDIRECTIONAL_SEQUENCE_RNN SVDF"""),
    # shape/layout
    OpInfo("RESHAPE", _SHAPE_LAYOUT, inputs={1: "shape"}),
    OpInfo("TRANSPOSE", _SHAPE_LAYOUT, inputs={1: "perm"}),
    OpInfo("STRIDED_SLICE", _SHAPE_LAYOUT, inputs={1: "begin", 2: "end", 3: "strides"}),
    OpInfo("GATHER", _SHAPE_LAYOUT, inputs={0: "params", 1: "idx"}),
    OpInfo("PAD", _SHAPE_LAYOUT, inputs={1: "pad"}),
    OpInfo("PADV2", _SHAPE_LAYOUT, inputs={1: "pad", 2: "value"}),
    OpInfo("ZEROS_LIKE", _SHAPE_LAYOUT, keeps_shape=True),
    OpInfo("EMBEDDING_LOOKUP", _SHAPE_LAYOUT, inputs={1: "table"}),
    OpInfo("CAST", _SHAPE_LAYOUT, keeps_shape=True),
    *_plain(_SHAPE_LAYOUT, """SQUEEZE EXPAND_DIMS CONCATENATION PACK UNPACK SPLIT SPLIT_V SLICE
        GATHER_ND SCATTER_ND MIRROR_PAD TILE BROADCAST_TO FILL SHAPE RANK
        RANGE RESIZE_BILINEAR RESIZE_NEAREST_NEIGHBOR DEPTH_TO_SPACE
        SPACE_TO_DEPTH SPACE_TO_BATCH_ND BATCH_TO_SPACE_ND
        EMBEDDING_LOOKUP_SPARSE REVERSE_V2 DYNAMIC_UPDATE_SLICE
        BROADCAST_ARGS WHERE DENSIFY BITCAST MATRIX_DIAG MATRIX_SET_DIAG
        REVERSE_SEQUENCE STABLEHLO_RESHAPE STABLEHLO_CONCATENATE
        STABLEHLO_BROADCAST_IN_DIM STABLEHLO_SLICE STABLEHLO_DYNAMIC_SLICE
        STABLEHLO_DYNAMIC_UPDATE_SLICE STABLEHLO_PAD STABLEHLO_IOTA
        STABLEHLO_GATHER STABLEHLO_SCATTER STABLEHLO_TRANSPOSE
        STABLEHLO_CONVERT DILATE RFFT2D HASHTABLE_LOOKUP"""),
    # quantization
    OpInfo("QUANTIZE", _QUANTIZATION, keeps_shape=True),
    OpInfo("DEQUANTIZE", _QUANTIZATION, keeps_shape=True),
    *_plain(_QUANTIZATION, "FAKE_QUANT"),
    # control flow
    OpInfo("WHILE", _CONTROL_FLOW, opens="body"),
    OpInfo("IF", _CONTROL_FLOW, opens="then"),
    OpInfo("CALL_ONCE", _CONTROL_FLOW, opens="init"),
    OpInfo("CALL", _CONTROL_FLOW, opens="subgraph"),
    OpInfo("STABLEHLO_WHILE", _CONTROL_FLOW, opens="body"),
    OpInfo("STABLEHLO_COMPOSITE", _CONTROL_FLOW, opens="decomposition"),
    *_plain(_CONTROL_FLOW, """STABLEHLO_CASE STABLEHLO_SORT VAR_HANDLE READ_VARIABLE
        ASSIGN_VARIABLE"""),
    # custom
    *_plain(_CUSTOM, "CUSTOM DELEGATE"),
    # other
    *_plain(_OTHER, """LSH_PROJECTION CONCAT_EMBEDDINGS SKIP_GRAM SPARSE_TO_DENSE ONE_HOT
        UNIQUE NON_MAX_SUPPRESSION_V4 NON_MAX_SUPPRESSION_V5 HASHTABLE
        HASHTABLE_FIND HASHTABLE_IMPORT HASHTABLE_SIZE
        RANDOM_STANDARD_NORMAL BUCKETIZE RANDOM_UNIFORM MULTINOMIAL
        STABLEHLO_CUSTOM_CALL STABLEHLO_RNG_BIT_GENERATOR"""),
)
OPS: dict[str, OpInfo] = {info.name: info for info in _TABLE}
_NO_INFO = OpInfo("")


def op_info(name: str) -> OpInfo:
    """The facts of the op named ``name`` (custom and unknown ops get the defaults)."""
    return OPS.get(name, _NO_INFO)


def category(name: str) -> str:
    """The colouring category of a builtin op name ("other" for names not in the table)."""
    return op_info(name).category


def input_roles(name: str) -> Mapping[int, str]:
    """Input position -> role name ("W", "b", ...) of the op's constant inputs."""
    return op_info(name).inputs


def first_call(name: str, calls: Mapping[str, int]) -> str:
    """The role of the subgraph to open first among ``calls`` (an op's called_subgraphs):
    the loop body, the then-branch, the init; otherwise the first one."""
    role = op_info(name).opens
    return role if role in calls else next(iter(calls))
