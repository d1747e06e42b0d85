"""Build small .tflite models of independent operators with the flatc object API.

Many test cases are batched into one model: every :class:`Op` gets its own tensors, its
runtime inputs become subgraph inputs and its outputs subgraph outputs, so one LiteRT
interpreter checks hundreds of parameter combinations at once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import flatbuffers
import numpy as np

from tflite_viewer.schema import schema_generated as S

from tests.interpreter.singleop import options_table

_TYPES = {np.dtype(np.float32): S.TensorType.FLOAT32, np.dtype(np.float16): S.TensorType.FLOAT16,
          np.dtype(np.int32): S.TensorType.INT32, np.dtype(np.uint8): S.TensorType.UINT8,
          np.dtype(np.int64): S.TensorType.INT64, np.dtype(np.bool_): S.TensorType.BOOL,
          np.dtype(np.int16): S.TensorType.INT16, np.dtype(np.int8): S.TensorType.INT8}
@dataclass
class T:
    """A tensor: runtime input when ``data`` is None, else a constant."""

    shape: Sequence[int]
    dtype: Any = np.int8
    scale: Any = None  # float or per-channel sequence
    zero_point: Any = None
    data: np.ndarray | None = None
    quantized_dimension: int = 0
    variable: bool = False

    @staticmethod
    def const(data: np.ndarray, scale=None, zero_point=None, quantized_dimension: int = 0) -> "T":
        data = np.asarray(data)
        return T(data.shape, data.dtype, scale, zero_point, data, quantized_dimension)


@dataclass
class Op:
    op: str
    inputs: Sequence[T | None]
    outputs: Sequence[T]
    options_type: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    version: int = 1
    intermediates: Sequence[T] = ()


@dataclass
class Built:
    model: bytes
    inputs: list[list[int]]  # per op: positions in the model's input list (None for consts)
    outputs: list[list[int]]  # per op: positions in the model's output list


def build(ops: Sequence[Op]) -> Built:
    model = S.ModelT()
    model.version = 3
    model.buffers = [S.BufferT()]
    sg = S.SubGraphT()
    sg.tensors, sg.inputs, sg.outputs, sg.operators = [], [], [], []
    codes: dict[tuple[str, int], int] = {}
    model.operatorCodes = []
    in_pos: list[list[int]] = []
    out_pos: list[list[int]] = []

    def add_tensor(t: T, name: str) -> int:
        tt = S.TensorT()
        tt.name = name
        tt.shape = [int(d) for d in t.shape]
        tt.type = _TYPES[np.dtype(t.dtype)]
        tt.isVariable = t.variable
        if t.data is not None:
            buf = S.BufferT()
            buf.data = np.ascontiguousarray(t.data, dtype=t.dtype).view(np.uint8).reshape(-1)
            model.buffers.append(buf)
            tt.buffer = len(model.buffers) - 1
        else:
            tt.buffer = 0
        if t.scale is not None:
            q = S.QuantizationParametersT()
            q.scale = [float(s) for s in np.atleast_1d(t.scale)]
            zp = t.zero_point if t.zero_point is not None else 0
            zp = np.atleast_1d(zp)
            if zp.size == 1 and len(q.scale) > 1:
                zp = np.zeros(len(q.scale), np.int64) + zp[0]
            q.zeroPoint = [int(z) for z in zp]
            q.quantizedDimension = t.quantized_dimension
            tt.quantization = q
        sg.tensors.append(tt)
        return len(sg.tensors) - 1

    for k, op in enumerate(ops):
        o = S.OperatorT()
        code = getattr(S.BuiltinOperator, op.op)
        key = (op.op, op.version)
        if key not in codes:
            oc = S.OperatorCodeT()
            oc.builtinCode = code
            oc.deprecatedBuiltinCode = min(code, 127)
            oc.version = op.version
            model.operatorCodes.append(oc)
            codes[key] = len(model.operatorCodes) - 1
        o.opcodeIndex = codes[key]
        o.inputs, positions = [], []
        for j, t in enumerate(op.inputs):
            if t is None:
                o.inputs.append(-1)
                continue
            idx = add_tensor(t, f"op{k}_in{j}")
            o.inputs.append(idx)
            if t.data is None and not t.variable:
                positions.append(len(sg.inputs))
                sg.inputs.append(idx)
        o.outputs, opos = [], []
        for j, t in enumerate(op.outputs):
            idx = add_tensor(t, f"op{k}_out{j}")
            o.outputs.append(idx)
            opos.append(len(sg.outputs))
            sg.outputs.append(idx)
        if op.intermediates:
            o.intermediates = [add_tensor(t, f"op{k}_im{j}") for j, t in enumerate(op.intermediates)]
        if op.options_type:
            o.builtinOptionsType = getattr(S.BuiltinOptions, op.options_type)
            o.builtinOptions = options_table(op.options_type, op.options)
        sg.operators.append(o)
        in_pos.append(positions)
        out_pos.append(opos)
    model.subgraphs = [sg]
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return Built(bytes(builder.Output()), in_pos, out_pos)


def run_litert(built: Built, inputs: Sequence[Sequence[np.ndarray]],
               resolver: str = "BUILTIN_REF") -> list[list[np.ndarray]]:
    """Run every op of ``built`` in LiteRT; ``inputs[k]`` are op k's runtime inputs."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interp = Interpreter(model_content=built.model,
                         experimental_op_resolver_type=getattr(OpResolverType, resolver))
    interp.allocate_tensors()
    details = interp.get_input_details()
    for positions, arrays in zip(built.inputs, inputs):
        for pos, arr in zip(positions, arrays):
            interp.set_tensor(details[pos]["index"], np.ascontiguousarray(arr))
    interp.invoke()
    out = interp.get_output_details()
    return [[interp.get_tensor(out[p]["index"]) for p in positions] for positions in built.outputs]


def flat_inputs(built: Built, inputs: Sequence[Sequence[np.ndarray]]) -> list[np.ndarray]:
    """The model's input list from per-op runtime inputs (``inputs[k]`` for op k)."""
    flat: list[np.ndarray | None] = [None] * sum(len(p) for p in built.inputs)
    for positions, arrays in zip(built.inputs, inputs):
        for pos, arr in zip(positions, arrays):
            flat[pos] = np.ascontiguousarray(arr)
    return flat  # type: ignore[return-value]


def run_ours(built: Built, inputs: Sequence[Sequence[np.ndarray]],
             **interpreter_options: Any) -> list[list[np.ndarray]]:
    """`run_litert` through our `Interpreter`: every op's outputs, in the same layout."""
    from tflite_viewer.interpreter import Interpreter

    outs = list(Interpreter(built.model, **interpreter_options)
                .invoke(flat_inputs(built, inputs)).values())
    return [[outs[p] for p in positions] for positions in built.outputs]
