"""The minimum LiteRT runtime a model needs, from its (operator, version) pairs.

Transcribed from LiteRT's ``tflite/tools/versioning/runtime_version.cc`` (now
``tflite/converter/tools/versioning/runtime_version.cc``; every pair of its table at
google-ai-edge/LiteRT f67457790c9c, up to the 2.23.0 entries)
(``FindMinimumRuntimeVersionForOp`` / ``UpdateMinimumRuntimeVersionForModel``): the
converter stamps the largest runtime version over all operators into the
``min_runtime_version`` metadata buffer (16 bytes, NUL padded).  Pairs missing from the
table are skipped, as there.
"""
from __future__ import annotations

from collections.abc import Iterable

# One line per op: the runtime of version 1, 2, 3, ...; "-" marks a version with no entry.
_TABLE = """
AVERAGE_POOL_2D 1.5.0 1.14.0 2.3.0
BATCH_MATMUL 2.3.0 2.3.0 2.4.0 2.5.0
BROADCAST_TO - 2.5.0 2.5.0 2.23.0
CONV_2D 1.5.0 1.14.0 1.14.0 2.3.0 2.4.0 2.9.0 2.11.0 2.15.0
DEPTHWISE_CONV_2D 1.5.0 1.12.0 1.14.0 2.2.0 2.3.0 2.3.0 2.11.0
ADD 1.5.0 1.14.0 2.4.0 2.6.0 2.13.0 2.23.0
ADD_N 1.14.0
SPACE_TO_BATCH_ND 1.6.0 1.14.0 2.3.0 2.12.0
SUB 1.6.0 1.14.0 2.3.0 2.4.0 2.4.0
DENSIFY 2.2.0
DIV 1.6.0 2.3.0
BATCH_TO_SPACE_ND 1.6.0 1.14.0 2.3.0 2.12.0
CAST 1.5.0 2.7.0 2.8.0 2.9.0 2.12.0 2.15.0 2.17.0 2.21.0 2.23.0
CONCATENATION 1.5.0 1.14.0 2.3.0 2.14.0 2.21.0 2.23.0 2.23.0
DEPTH_TO_SPACE 2.1.0 2.5.0
EMBEDDING_LOOKUP 1.13.0 1.14.0 1.14.0 2.18.0 2.21.0
EMBEDDING_LOOKUP_SPARSE 1.5.0
FAKE_QUANT 1.5.0 1.10.0
FULLY_CONNECTED 1.5.0 1.10.0 1.14.0 1.14.0 2.0.0 2.1.0 2.3.0 2.3.0 2.3.0 2.11.0 2.15.0 2.17.0 2.18.0 2.21.0
GATHER 1.6.0 1.14.0 1.15.0 2.4.0 2.5.0 2.13.0 2.15.0 2.23.0
GATHER_ND 1.14.0 2.3.0 2.5.0 2.13.0 2.16.0 2.23.0
HASHTABLE_LOOKUP 1.5.0
SVDF 1.5.0 1.14.0 2.2.0 2.3.0
L2_NORMALIZATION 1.5.0 1.14.0
L2_POOL_2D 1.5.0
LOCAL_RESPONSE_NORMALIZATION 1.5.0
MAX_POOL_2D 1.5.0 1.14.0 2.3.0
MAXIMUM 1.14.0 1.14.0 2.3.0 2.3.0
MINIMUM 1.14.0 1.14.0 2.3.0 2.3.0
MUL 1.5.0 1.14.0 1.15.0 2.3.0 2.6.0 2.11.0 2.13.0 2.23.0
NON_MAX_SUPPRESSION_V4 2.1.0
NON_MAX_SUPPRESSION_V5 2.1.0
PAD 1.5.0 1.14.0 2.4.0 2.6.0 2.20.0 2.23.0
TILE 1.10.1 2.2.0 2.8.0
PADV2 1.9.0 1.14.0 2.4.0 2.6.0 2.20.0 2.23.0
RESHAPE 1.5.0
SOFTMAX 1.5.0 1.14.0 2.3.0 2.23.0
SPACE_TO_DEPTH 1.5.0 1.14.0
TRANSPOSE 1.6.0 1.14.0 1.15.0 2.3.0 2.4.0 2.12.0 2.14.4 2.22.0 2.23.0
LSTM 1.7.0 1.10.0 1.14.0 2.3.0
UNIDIRECTIONAL_SEQUENCE_LSTM 1.13.1 1.14.0 2.3.0 2.12.0
BIDIRECTIONAL_SEQUENCE_LSTM 1.14.0 1.14.0 1.14.0
BIDIRECTIONAL_SEQUENCE_RNN 1.14.0 1.14.0 2.3.0
MEAN 1.6.0 1.14.0 2.4.0
SUM 1.10.0 1.15.0
REDUCE_MAX 1.11.0 1.14.0 2.5.0
REDUCE_MIN 1.11.0 1.14.0 2.5.0
REDUCE_PROD 1.11.0 2.6.0
REDUCE_ANY 1.11.0
RELU6 1.5.0 1.14.0 2.5.0
RESIZE_BILINEAR 1.7.0 1.14.0 2.2.0 2.5.0
RESIZE_NEAREST_NEIGHBOR 1.13.1 1.14.0 2.3.0 2.4.0
RNN 1.5.0 1.14.0 2.3.0
SKIP_GRAM 1.5.0
SQUEEZE 1.6.0 2.5.0
SPLIT 1.5.0 1.14.0 1.14.0 2.3.0 2.23.0
SPLIT_V 1.13.1 2.3.0 2.23.0
STRIDED_SLICE 1.6.0 1.14.0 2.1.0 2.2.0 2.5.0 2.6.0 2.14.0 2.14.0
TOPK_V2 1.7.0 1.14.0 2.13.0
ARG_MAX 1.9.0 1.14.0 2.9.0
ARG_MIN 1.9.0 1.14.0 2.9.0
TRANSPOSE_CONV 1.9.0 2.2.0 2.3.0 2.13.0 2.15.0
SPARSE_TO_DENSE 1.9.0 1.14.0 1.15.0
EXPAND_DIMS 1.10.0
PACK 1.11.0 1.14.0 2.3.0 2.13.0 2.23.0
SHAPE 1.10.0
SLICE 1.14.0 1.14.0 1.14.0 2.4.0 2.5.0 2.14.0 2.21.0 2.23.0
TANH 1.14.0 1.14.0 2.3.0
ONE_HOT 1.11.0
UNPACK 1.11.0 1.14.0 2.2.0 2.3.0 2.22.0 2.23.0
LEAKY_RELU 1.13.1 2.3.0
LOGISTIC 1.14.0 1.14.0 2.3.0
LOG_SOFTMAX 1.14.0 1.14.0
LSH_PROJECTION 1.5.0
SQUARED_DIFFERENCE 1.13.1 2.5.0
MIRROR_PAD 1.13.1 2.3.0 2.12.0
UNIQUE 1.14.0
UNIDIRECTIONAL_SEQUENCE_RNN 1.14.0 1.14.0 2.3.0
WHERE 1.14.0 2.8.0
DEQUANTIZE 1.13.1 1.14.0 1.15.0 2.2.0 2.7.0 2.18.0 2.21.0 2.22.0 2.23.0
REVERSE_SEQUENCE 1.14.0
EQUAL 1.14.0 1.14.0 2.3.0 2.13.0 2.21.0
NOT_EQUAL 1.14.0 1.14.0 2.3.0 2.21.0
GREATER 1.14.0 1.14.0
GREATER_EQUAL 1.14.0 1.14.0 2.13.0
LESS 1.14.0 1.14.0 2.13.0
LESS_EQUAL 1.14.0 1.14.0
SCATTER_ND 2.1.0
SEGMENT_SUM 2.2.0
SELECT 1.14.0 1.14.0 2.12.0 2.12.0
SELECT_V2 2.2.0 2.12.0
IF 1.15.0
FLOOR_DIV 1.14.0 1.14.0 2.13.0
FLOOR 1.9.0
CEIL 1.14.0
MATRIX_DIAG 1.14.0
MATRIX_SET_DIAG 1.14.0
ELU 1.14.0
QUANTIZE 1.14.0 1.15.0 2.7.0 2.21.0 2.21.0 2.21.0
ROUND 1.14.0
RELU 1.5.0 2.1.0 2.5.0
RELU_N1_TO_1 1.5.0
RELU_0_TO_1 2.10.0
PRELU 1.8.0
EXP 1.7.0 2.12.0
COS 1.14.0 2.23.0
NEG 1.9.0
POW 1.10.0
LOGICAL_OR 1.11.0
LOGICAL_AND 1.11.0
LOGICAL_NOT 1.11.0
FLOOR_MOD 1.13.0 2.13.0
RANGE 1.13.0 2.14.0
SIN 1.9.0 2.23.0
LOG 1.14.0 2.15.0
SQRT 1.10.0 2.21.0
RSQRT 1.10.0 2.5.0 2.15.0
SQUARE 1.12.0
ZEROS_LIKE 1.12.0
ABS 1.13.0 2.4.0 2.5.0 2.6.0 2.12.0
HARD_SWISH 1.15.0
FILL 1.13.0 2.3.0 2.5.0 2.12.0 2.23.0
REVERSE_V2 1.14.0 2.2.0 2.5.0 2.23.0
RANK 1.14.0
WHILE 1.15.0
CUMSUM 2.4.0
CALL_ONCE 2.5.0
RFFT2D 2.5.0
CONV_3D 2.5.0
IMAG 2.5.0
REAL 2.5.0
COMPLEX_ABS 2.5.0
HASHTABLE 2.5.0
HASHTABLE_FIND 2.5.0
HASHTABLE_IMPORT 2.5.0
HASHTABLE_SIZE 2.5.0
REDUCE_ALL 2.6.0
CONV_3D_TRANSPOSE 2.6.0
VAR_HANDLE 2.6.0
READ_VARIABLE 2.6.0
ASSIGN_VARIABLE 2.6.0
BROADCAST_ARGS 2.6.0
RANDOM_STANDARD_NORMAL 2.8.0
BUCKETIZE 2.8.0
RANDOM_UNIFORM 2.8.0
MULTINOMIAL 2.8.0
GELU 2.9.0 2.9.0 2.23.0
DYNAMIC_UPDATE_SLICE 2.9.0 2.17.0 2.19.0 2.20.0 2.21.0 2.22.0
UNSORTED_SEGMENT_PROD 2.10.0
UNSORTED_SEGMENT_MAX 2.10.0
UNSORTED_SEGMENT_MIN 2.11.0
UNSORTED_SEGMENT_SUM 2.10.0
ATAN2 2.10.0
SIGN 2.11.0 2.12.0
BITCAST 2.13.0
BITWISE_XOR 2.13.0
RIGHT_SHIFT 2.13.0
STABLEHLO_SCATTER 2.15.0
DILATE 2.15.0
STABLEHLO_RNG_BIT_GENERATOR 2.15.0
REDUCE_WINDOW 2.15.0
STABLEHLO_GATHER 2.16.0
STABLEHLO_ADD 2.16.0
STABLEHLO_MULTIPLY 2.16.0
STABLEHLO_REDUCE_WINDOW 2.16.0
STABLEHLO_MAXIMUM 2.16.0
STABLEHLO_MINIMUM 2.16.0
STABLEHLO_PAD 2.16.0
STABLEHLO_COMPOSITE 2.17.0
STABLEHLO_AND 2.17.0
STABLEHLO_SHIFT_LEFT 2.17.0
STABLEHLO_CBRT 2.17.0
STABLEHLO_CASE 2.17.0
"""


def _parse(table: str) -> dict[tuple[str, int], str]:
    out: dict[tuple[str, int], str] = {}
    for line in table.strip().splitlines():
        name, *versions = line.split()
        for v, runtime in enumerate(versions, start=1):
            if runtime != "-":
                out[(name, v)] = runtime
    return out


RUNTIME_VERSIONS: dict[tuple[str, int], str] = _parse(_TABLE)
MIN_RUNTIME_BUFFER_SIZE = 16


def runtime_for_op(op_name: str, version: int) -> str | None:
    """The first LiteRT release that runs this op at this version (None: not in the table)."""
    return RUNTIME_VERSIONS.get((op_name, int(version)))


def version_key(version: str) -> tuple[int, ...]:
    """``"2.14.4"`` -> (2, 14, 4), comparable as LiteRT's CompareRuntimeVersion compares."""
    out = []
    for part in version.split("."):
        try:
            out.append(int(part))
        except ValueError:
            out.append(0)
    return tuple(out)


def runtime_less(a: str, b: str) -> bool:
    """CompareRuntimeVersion(a, b): a precedes b (an empty string precedes everything)."""
    if not a:
        return bool(b)
    return version_key(a) < version_key(b)


def min_runtime_version(ops: Iterable[tuple[str, int]]) -> str:
    """The largest runtime over (op name, version) pairs; ``""`` when none is in the table."""
    best = ""
    for name, version in ops:
        runtime = runtime_for_op(name, version)
        if runtime and runtime_less(best, runtime):
            best = runtime
    return best


def encode_min_runtime(version: str, size: int = MIN_RUNTIME_BUFFER_SIZE) -> bytes:
    """The metadata buffer bytes: the string NUL padded to ``size`` (the converter's 16)."""
    raw = version.encode("ascii")
    if len(raw) >= size:
        raise ValueError(f"runtime version {version!r} does not fit {size} bytes")
    return raw + bytes(size - len(raw))
