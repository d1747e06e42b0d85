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


_TABLE = (
    # convolution
    OpInfo('CONV_2D', _CONVOLUTION, inputs={1: 'W', 2: 'b'}),
    OpInfo('DEPTHWISE_CONV_2D', _CONVOLUTION, inputs={1: 'W', 2: 'b'}),
    OpInfo('TRANSPOSE_CONV', _CONVOLUTION, inputs={0: 'shape', 1: 'W', 3: 'b'}),
    OpInfo('CONV_3D', _CONVOLUTION, inputs={1: 'W', 2: 'b'}),
    OpInfo('CONV_3D_TRANSPOSE', _CONVOLUTION),
    OpInfo('FULLY_CONNECTED', _CONVOLUTION, inputs={1: 'W', 2: 'b'}),
    OpInfo('BATCH_MATMUL', _CONVOLUTION, inputs={0: 'A', 1: 'B'}),
    OpInfo('STABLEHLO_CONVOLUTION', _CONVOLUTION),
    OpInfo('STABLEHLO_DOT_GENERAL', _CONVOLUTION),
    # pooling
    OpInfo('AVERAGE_POOL_2D', _POOLING),
    OpInfo('MAX_POOL_2D', _POOLING),
    OpInfo('L2_POOL_2D', _POOLING),
    OpInfo('STABLEHLO_REDUCE_WINDOW', _POOLING, opens='body'),
    OpInfo('REDUCE_WINDOW', _POOLING),
    # activation
    OpInfo('RELU', _ACTIVATION, keeps_shape=True),
    OpInfo('RELU6', _ACTIVATION, keeps_shape=True),
    OpInfo('RELU_N1_TO_1', _ACTIVATION, keeps_shape=True),
    OpInfo('RELU_0_TO_1', _ACTIVATION, keeps_shape=True),
    OpInfo('LEAKY_RELU', _ACTIVATION, keeps_shape=True),
    OpInfo('PRELU', _ACTIVATION, inputs={1: 'alpha'}, keeps_shape=True),
    OpInfo('HARD_SWISH', _ACTIVATION, keeps_shape=True),
    OpInfo('LOGISTIC', _ACTIVATION, keeps_shape=True),
    OpInfo('TANH', _ACTIVATION, keeps_shape=True),
    OpInfo('GELU', _ACTIVATION, keeps_shape=True),
    OpInfo('ELU', _ACTIVATION, keeps_shape=True),
    OpInfo('SOFTMAX', _ACTIVATION, keeps_shape=True),
    OpInfo('LOG_SOFTMAX', _ACTIVATION, keeps_shape=True),
    OpInfo('STABLEHLO_LOGISTIC', _ACTIVATION),
    OpInfo('STABLEHLO_TANH', _ACTIVATION),
    # elementwise
    OpInfo('ADD', _ELEMENTWISE, broadcasts=True),
    OpInfo('SUB', _ELEMENTWISE, broadcasts=True),
    OpInfo('MUL', _ELEMENTWISE, broadcasts=True),
    OpInfo('DIV', _ELEMENTWISE, broadcasts=True),
    OpInfo('SQUARED_DIFFERENCE', _ELEMENTWISE, broadcasts=True),
    OpInfo('MAXIMUM', _ELEMENTWISE, broadcasts=True),
    OpInfo('MINIMUM', _ELEMENTWISE, broadcasts=True),
    OpInfo('POW', _ELEMENTWISE, broadcasts=True),
    OpInfo('FLOOR_DIV', _ELEMENTWISE, broadcasts=True),
    OpInfo('FLOOR_MOD', _ELEMENTWISE, broadcasts=True),
    OpInfo('EXP', _ELEMENTWISE, keeps_shape=True),
    OpInfo('LOG', _ELEMENTWISE, keeps_shape=True),
    OpInfo('SQRT', _ELEMENTWISE, keeps_shape=True),
    OpInfo('RSQRT', _ELEMENTWISE, keeps_shape=True),
    OpInfo('SQUARE', _ELEMENTWISE, keeps_shape=True),
    OpInfo('ABS', _ELEMENTWISE, keeps_shape=True),
    OpInfo('NEG', _ELEMENTWISE, keeps_shape=True),
    OpInfo('SIN', _ELEMENTWISE, keeps_shape=True),
    OpInfo('COS', _ELEMENTWISE, keeps_shape=True),
    OpInfo('FLOOR', _ELEMENTWISE, keeps_shape=True),
    OpInfo('CEIL', _ELEMENTWISE, keeps_shape=True),
    OpInfo('ROUND', _ELEMENTWISE, keeps_shape=True),
    OpInfo('SIGN', _ELEMENTWISE, keeps_shape=True),
    OpInfo('ADD_N', _ELEMENTWISE),
    OpInfo('EQUAL', _ELEMENTWISE, broadcasts=True),
    OpInfo('NOT_EQUAL', _ELEMENTWISE, broadcasts=True),
    OpInfo('LESS', _ELEMENTWISE, broadcasts=True),
    OpInfo('LESS_EQUAL', _ELEMENTWISE, broadcasts=True),
    OpInfo('GREATER', _ELEMENTWISE, broadcasts=True),
    OpInfo('GREATER_EQUAL', _ELEMENTWISE, broadcasts=True),
    OpInfo('LOGICAL_AND', _ELEMENTWISE, broadcasts=True),
    OpInfo('LOGICAL_OR', _ELEMENTWISE, broadcasts=True),
    OpInfo('LOGICAL_NOT', _ELEMENTWISE, keeps_shape=True),
    OpInfo('SELECT', _ELEMENTWISE),
    OpInfo('SELECT_V2', _ELEMENTWISE),
    OpInfo('ATAN2', _ELEMENTWISE),
    OpInfo('BITWISE_XOR', _ELEMENTWISE),
    OpInfo('RIGHT_SHIFT', _ELEMENTWISE),
    OpInfo('COMPLEX_ABS', _ELEMENTWISE),
    OpInfo('REAL', _ELEMENTWISE),
    OpInfo('IMAG', _ELEMENTWISE),
    OpInfo('STABLEHLO_ADD', _ELEMENTWISE),
    OpInfo('STABLEHLO_DIVIDE', _ELEMENTWISE),
    OpInfo('STABLEHLO_MULTIPLY', _ELEMENTWISE),
    OpInfo('STABLEHLO_MAXIMUM', _ELEMENTWISE),
    OpInfo('STABLEHLO_MINIMUM', _ELEMENTWISE),
    OpInfo('STABLEHLO_ABS', _ELEMENTWISE),
    OpInfo('STABLEHLO_AND', _ELEMENTWISE),
    OpInfo('STABLEHLO_OR', _ELEMENTWISE),
    OpInfo('STABLEHLO_COSINE', _ELEMENTWISE),
    OpInfo('STABLEHLO_EXPONENTIAL', _ELEMENTWISE),
    OpInfo('STABLEHLO_FLOOR', _ELEMENTWISE),
    OpInfo('STABLEHLO_LOG', _ELEMENTWISE),
    OpInfo('STABLEHLO_NEGATE', _ELEMENTWISE),
    OpInfo('STABLEHLO_POWER', _ELEMENTWISE),
    OpInfo('STABLEHLO_REMAINDER', _ELEMENTWISE),
    OpInfo('STABLEHLO_RSQRT', _ELEMENTWISE),
    OpInfo('STABLEHLO_SELECT', _ELEMENTWISE),
    OpInfo('STABLEHLO_SUBTRACT', _ELEMENTWISE),
    OpInfo('STABLEHLO_COMPARE', _ELEMENTWISE),
    OpInfo('STABLEHLO_CLAMP', _ELEMENTWISE),
    OpInfo('STABLEHLO_SHIFT_LEFT', _ELEMENTWISE),
    OpInfo('STABLEHLO_CBRT', _ELEMENTWISE),
    # reduction
    OpInfo('MEAN', _REDUCTION, inputs={1: 'axis'}),
    OpInfo('SUM', _REDUCTION, inputs={1: 'axis'}),
    OpInfo('REDUCE_MAX', _REDUCTION),
    OpInfo('REDUCE_MIN', _REDUCTION),
    OpInfo('REDUCE_PROD', _REDUCTION),
    OpInfo('REDUCE_ANY', _REDUCTION),
    OpInfo('REDUCE_ALL', _REDUCTION),
    OpInfo('ARG_MAX', _REDUCTION),
    OpInfo('ARG_MIN', _REDUCTION),
    OpInfo('CUMSUM', _REDUCTION),
    OpInfo('TOPK_V2', _REDUCTION),
    OpInfo('STABLEHLO_REDUCE', _REDUCTION, opens='body'),
    OpInfo('UNSORTED_SEGMENT_PROD', _REDUCTION),
    OpInfo('UNSORTED_SEGMENT_MAX', _REDUCTION),
    OpInfo('UNSORTED_SEGMENT_SUM', _REDUCTION),
    OpInfo('UNSORTED_SEGMENT_MIN', _REDUCTION),
    OpInfo('SEGMENT_SUM', _REDUCTION),
    # normalization
    OpInfo('L2_NORMALIZATION', _NORMALIZATION, keeps_shape=True),
    OpInfo('LOCAL_RESPONSE_NORMALIZATION', _NORMALIZATION, keeps_shape=True),
    # recurrent
    OpInfo('LSTM', _RECURRENT),
    OpInfo('UNIDIRECTIONAL_SEQUENCE_LSTM', _RECURRENT),
    OpInfo('BIDIRECTIONAL_SEQUENCE_LSTM', _RECURRENT),
    OpInfo('RNN', _RECURRENT),
    OpInfo('UNIDIRECTIONAL_SEQUENCE_RNN', _RECURRENT),
    OpInfo('BIDIRECTIONAL_SEQUENCE_RNN', _RECURRENT),
    OpInfo('SVDF', _RECURRENT),
    # shape/layout
    OpInfo('RESHAPE', _SHAPE_LAYOUT, inputs={1: 'shape'}),
    OpInfo('SQUEEZE', _SHAPE_LAYOUT),
    OpInfo('EXPAND_DIMS', _SHAPE_LAYOUT),
    OpInfo('TRANSPOSE', _SHAPE_LAYOUT, inputs={1: 'perm'}),
    OpInfo('CONCATENATION', _SHAPE_LAYOUT),
    OpInfo('PACK', _SHAPE_LAYOUT),
    OpInfo('UNPACK', _SHAPE_LAYOUT),
    OpInfo('SPLIT', _SHAPE_LAYOUT),
    OpInfo('SPLIT_V', _SHAPE_LAYOUT),
    OpInfo('SLICE', _SHAPE_LAYOUT),
    OpInfo('STRIDED_SLICE', _SHAPE_LAYOUT, inputs={1: 'begin', 2: 'end', 3: 'strides'}),
    OpInfo('GATHER', _SHAPE_LAYOUT, inputs={0: 'params', 1: 'idx'}),
    OpInfo('GATHER_ND', _SHAPE_LAYOUT),
    OpInfo('SCATTER_ND', _SHAPE_LAYOUT),
    OpInfo('PAD', _SHAPE_LAYOUT, inputs={1: 'pad'}),
    OpInfo('PADV2', _SHAPE_LAYOUT, inputs={1: 'pad', 2: 'value'}),
    OpInfo('MIRROR_PAD', _SHAPE_LAYOUT),
    OpInfo('TILE', _SHAPE_LAYOUT),
    OpInfo('BROADCAST_TO', _SHAPE_LAYOUT),
    OpInfo('FILL', _SHAPE_LAYOUT),
    OpInfo('ZEROS_LIKE', _SHAPE_LAYOUT, keeps_shape=True),
    OpInfo('SHAPE', _SHAPE_LAYOUT),
    OpInfo('RANK', _SHAPE_LAYOUT),
    OpInfo('RANGE', _SHAPE_LAYOUT),
    OpInfo('RESIZE_BILINEAR', _SHAPE_LAYOUT),
    OpInfo('RESIZE_NEAREST_NEIGHBOR', _SHAPE_LAYOUT),
    OpInfo('DEPTH_TO_SPACE', _SHAPE_LAYOUT),
    OpInfo('SPACE_TO_DEPTH', _SHAPE_LAYOUT),
    OpInfo('SPACE_TO_BATCH_ND', _SHAPE_LAYOUT),
    OpInfo('BATCH_TO_SPACE_ND', _SHAPE_LAYOUT),
    OpInfo('EMBEDDING_LOOKUP', _SHAPE_LAYOUT, inputs={1: 'table'}),
    OpInfo('EMBEDDING_LOOKUP_SPARSE', _SHAPE_LAYOUT),
    OpInfo('REVERSE_V2', _SHAPE_LAYOUT),
    OpInfo('DYNAMIC_UPDATE_SLICE', _SHAPE_LAYOUT),
    OpInfo('BROADCAST_ARGS', _SHAPE_LAYOUT),
    OpInfo('WHERE', _SHAPE_LAYOUT),
    OpInfo('DENSIFY', _SHAPE_LAYOUT),
    OpInfo('CAST', _SHAPE_LAYOUT, keeps_shape=True),
    OpInfo('BITCAST', _SHAPE_LAYOUT),
    OpInfo('MATRIX_DIAG', _SHAPE_LAYOUT),
    OpInfo('MATRIX_SET_DIAG', _SHAPE_LAYOUT),
    OpInfo('REVERSE_SEQUENCE', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_RESHAPE', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_CONCATENATE', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_BROADCAST_IN_DIM', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_SLICE', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_DYNAMIC_SLICE', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_DYNAMIC_UPDATE_SLICE', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_PAD', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_IOTA', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_GATHER', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_SCATTER', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_TRANSPOSE', _SHAPE_LAYOUT),
    OpInfo('STABLEHLO_CONVERT', _SHAPE_LAYOUT),
    OpInfo('DILATE', _SHAPE_LAYOUT),
    OpInfo('RFFT2D', _SHAPE_LAYOUT),
    OpInfo('HASHTABLE_LOOKUP', _SHAPE_LAYOUT),
    # quantization
    OpInfo('QUANTIZE', _QUANTIZATION, keeps_shape=True),
    OpInfo('DEQUANTIZE', _QUANTIZATION, keeps_shape=True),
    OpInfo('FAKE_QUANT', _QUANTIZATION),
    # control flow
    OpInfo('WHILE', _CONTROL_FLOW, opens='body'),
    OpInfo('IF', _CONTROL_FLOW, opens='then'),
    OpInfo('CALL_ONCE', _CONTROL_FLOW, opens='init'),
    OpInfo('CALL', _CONTROL_FLOW, opens='subgraph'),
    OpInfo('STABLEHLO_WHILE', _CONTROL_FLOW, opens='body'),
    OpInfo('STABLEHLO_CASE', _CONTROL_FLOW),
    OpInfo('STABLEHLO_COMPOSITE', _CONTROL_FLOW, opens='decomposition'),
    OpInfo('STABLEHLO_SORT', _CONTROL_FLOW),
    OpInfo('VAR_HANDLE', _CONTROL_FLOW),
    OpInfo('READ_VARIABLE', _CONTROL_FLOW),
    OpInfo('ASSIGN_VARIABLE', _CONTROL_FLOW),
    # custom
    OpInfo('CUSTOM', _CUSTOM),
    OpInfo('DELEGATE', _CUSTOM),
    # other
    OpInfo('LSH_PROJECTION', _OTHER),
    OpInfo('CONCAT_EMBEDDINGS', _OTHER),
    OpInfo('SKIP_GRAM', _OTHER),
    OpInfo('SPARSE_TO_DENSE', _OTHER),
    OpInfo('ONE_HOT', _OTHER),
    OpInfo('UNIQUE', _OTHER),
    OpInfo('NON_MAX_SUPPRESSION_V4', _OTHER),
    OpInfo('NON_MAX_SUPPRESSION_V5', _OTHER),
    OpInfo('HASHTABLE', _OTHER),
    OpInfo('HASHTABLE_FIND', _OTHER),
    OpInfo('HASHTABLE_IMPORT', _OTHER),
    OpInfo('HASHTABLE_SIZE', _OTHER),
    OpInfo('RANDOM_STANDARD_NORMAL', _OTHER),
    OpInfo('BUCKETIZE', _OTHER),
    OpInfo('RANDOM_UNIFORM', _OTHER),
    OpInfo('MULTINOMIAL', _OTHER),
    OpInfo('STABLEHLO_CUSTOM_CALL', _OTHER),
    OpInfo('STABLEHLO_RNG_BIT_GENERATOR', _OTHER),
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
