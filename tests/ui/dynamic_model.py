"""A model with a dynamic input, written with the schema's object API: its stored shapes are
placeholders ([1, 1] for a signature of [-1, -1]), as openWakeWord's melspectrogram stores
them.  x[:, 1:] (STRIDED_SLICE) then ABS: from the placeholder input the slice computes a
0-length [1, 0], from a real input [1, n] it computes [1, n - 1]."""
from __future__ import annotations

import flatbuffers
import numpy as np

from tflite_viewer.schema import schema_generated as S


def _tensor(name: str, shape, signature, tensor_type, buffer: int) -> S.TensorT:
    t = S.TensorT()
    t.name, t.shape, t.type, t.buffer = name, list(shape), tensor_type, buffer
    if signature is not None:
        t.shapeSignature = list(signature)
    return t


def dynamic_slice_model(with_signature: bool = True) -> bytes:
    sig = [-1, -1] if with_signature else None
    model = S.ModelT()
    model.version = 3
    model.buffers = [S.BufferT()]
    for values in ([0, 1], [0, 0], [1, 1]):  # begin, end, strides
        b = S.BufferT()
        b.data = np.frombuffer(np.array(values, np.int32).tobytes(), np.uint8)
        model.buffers.append(b)
    sg = S.SubGraphT()
    sg.tensors = [_tensor("samples", [1, 1], sig, S.TensorType.FLOAT32, 0),
                  _tensor("begin", [2], None, S.TensorType.INT32, 1),
                  _tensor("end", [2], None, S.TensorType.INT32, 2),
                  _tensor("strides", [2], None, S.TensorType.INT32, 3),
                  _tensor("frames", [1, 1], sig, S.TensorType.FLOAT32, 0),
                  _tensor("magnitude", [1, 1], sig, S.TensorType.FLOAT32, 0)]
    sg.inputs, sg.outputs = [0], [5]
    codes = []
    for op in ("STRIDED_SLICE", "ABS"):
        oc = S.OperatorCodeT()
        oc.builtinCode = getattr(S.BuiltinOperator, op)
        oc.deprecatedBuiltinCode = min(oc.builtinCode, 127)
        oc.version = 1
        codes.append(oc)
    model.operatorCodes = codes
    slice_op = S.OperatorT()
    slice_op.opcodeIndex, slice_op.inputs, slice_op.outputs = 0, [0, 1, 2, 3], [4]
    slice_op.builtinOptionsType = S.BuiltinOptions.StridedSliceOptions
    opts = S.StridedSliceOptionsT()
    opts.beginMask, opts.endMask = 1, 3  # x[:, 1:]
    slice_op.builtinOptions = opts
    abs_op = S.OperatorT()
    abs_op.opcodeIndex, abs_op.inputs, abs_op.outputs = 1, [4], [5]
    sg.operators = [slice_op, abs_op]
    sg.name = "main"
    model.subgraphs = [sg]
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
