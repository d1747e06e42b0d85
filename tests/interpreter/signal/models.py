"""Models of custom ops for the signal-library and MediaPipe tests, written by the project's
own writer (`tflite_viewer.edit.writer`), and the TFLite Micro runs that are their oracle.

A model is a list of tensors and a list of custom ops::

    model = custom_model(
        tensors=[((16,), np.int16), (window_weights,), ((16,), np.int16)],
        ops=[CustomOp("SignalWindow", [0, 1], [2], {"shift": 12})],
        inputs=[0], outputs=[2])

A tensor is ``(shape, dtype)`` (computed, or a model input) or ``(constant array,)``.
Options are a dict written as a FlexBuffer map (`flex_map`), as TensorFlow's converter
writes the attributes of a custom op.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from flatbuffers import flexbuffers

from tflite_viewer.edit.tree import ModelTree
from tflite_viewer.edit.writer import serialize
from tflite_viewer.schema import schema_generated as S

from tests.micro_oracle import tflm

_TYPES = {np.dtype(np.float32): S.TensorType.FLOAT32, np.dtype(np.int16): S.TensorType.INT16,
          np.dtype(np.int32): S.TensorType.INT32, np.dtype(np.uint32): S.TensorType.UINT32,
          np.dtype(np.uint64): S.TensorType.UINT64, np.dtype(np.bool_): S.TensorType.BOOL,
          np.dtype(np.int8): S.TensorType.INT8}

#: TensorType codes TFLM's signal ops take as their "T" option
TYPE_CODE = {np.dtype(np.int16): S.TensorType.INT16, np.dtype(np.int32): S.TensorType.INT32,
             np.dtype(np.float32): S.TensorType.FLOAT32}


def flex_map(options: dict[str, Any]) -> bytes:
    """A FlexBuffer map of ints, floats, bools, strings and lists of ints; lists become
    typed vectors, which MediaPipe's parsers require (``AsTypedVector``)."""
    b = flexbuffers.Builder()
    with b.Map():
        for key in sorted(options):
            value = options[key]
            if isinstance(value, bool):
                b.Bool(key, value)
            elif isinstance(value, int):
                b.Int(key, value)
            elif isinstance(value, float):
                b.Float(key, value)
            elif isinstance(value, str):
                b.String(key, value)
            else:
                b.Key(key)
                b.TypedVectorFromElements([int(v) for v in value])
    return bytes(b.Finish())


@dataclass
class CustomOp:
    """One operator: a custom code (or, for ``builtin=True``, a BuiltinOperator name such
    as "RESHAPE"), tensor indices and custom options (a FlexBuffer map, or raw bytes)."""

    code: str
    inputs: Sequence[int]
    outputs: Sequence[int]
    options: dict[str, Any] | bytes | None = None
    version: int = 1
    builtin: bool = False


def custom_model(tensors: Sequence[tuple], ops: Sequence[CustomOp], inputs: Sequence[int],
                 outputs: Sequence[int]) -> bytes:
    """The .tflite bytes of a one-subgraph model of custom ops (see the module docstring)."""
    model = S.ModelT()
    model.version = 3
    model.description = "signal test model"
    model.buffers = [S.BufferT()]
    sg = S.SubGraphT()
    sg.name = "main"
    sg.tensors = []
    for k, spec in enumerate(tensors):
        t = S.TensorT()
        t.name = f"t{k}"
        if len(spec) == 1:
            arr = np.ascontiguousarray(spec[0])
            buf = S.BufferT()
            buf.data = arr.reshape(-1).view(np.uint8)
            model.buffers.append(buf)
            t.shape, t.type, t.buffer = list(arr.shape), _TYPES[arr.dtype], len(model.buffers) - 1
        else:
            t.shape, t.type, t.buffer = [int(d) for d in spec[0]], _TYPES[np.dtype(spec[1])], 0
        sg.tensors.append(t)
    sg.inputs, sg.outputs = list(inputs), list(outputs)
    codes: dict[tuple[str, int], int] = {}
    model.operatorCodes = []
    sg.operators = []
    for spec in ops:
        key = (spec.code, spec.version)
        if key not in codes:
            oc = S.OperatorCodeT()
            if spec.builtin:
                oc.builtinCode = oc.deprecatedBuiltinCode = getattr(S.BuiltinOperator, spec.code)
            else:
                oc.builtinCode = oc.deprecatedBuiltinCode = S.BuiltinOperator.CUSTOM
                oc.customCode = spec.code
            oc.version = spec.version
            codes[key] = len(model.operatorCodes)
            model.operatorCodes.append(oc)
        o = S.OperatorT()
        o.opcodeIndex = codes[key]
        o.inputs, o.outputs = list(spec.inputs), list(spec.outputs)
        if spec.options is not None:
            raw = spec.options if isinstance(spec.options, bytes) else flex_map(spec.options)
            o.customOptions = np.frombuffer(raw, np.uint8)
            o.customOptionsFormat = S.CustomOptionsFormat.FLEXBUFFERS
        sg.operators.append(o)
    model.subgraphs = [sg]
    return serialize(ModelTree(model))


def one_op(code: str, inputs: Sequence[tuple], outputs: Sequence[tuple],
           options: dict[str, Any] | bytes | None, version: int = 1) -> bytes:
    """A model of one custom op: ``inputs`` are ``(shape, dtype)`` model inputs or
    ``(constant,)``; ``outputs`` ``(shape, dtype)``."""
    n_in = len(inputs)
    model_inputs = [k for k, spec in enumerate(inputs) if len(spec) != 1]
    outs = list(range(n_in, n_in + len(outputs)))
    return custom_model(list(inputs) + list(outputs),
                        [CustomOp(code, list(range(n_in)), outs, options, version)],
                        model_inputs, outs)


def run_tflm(model: bytes, frames: Sequence[Sequence[np.ndarray]]) -> list[list[np.ndarray]]:
    """TFLite Micro's outputs for each frame of inputs, invoked in order on one interpreter
    (state carried from frame to frame, as on a device)."""
    interp = tflm(model)
    results = []
    for inputs in frames:
        for k, x in enumerate(inputs):
            interp.set_input(np.array(x, order="C"), k)
        interp.invoke()
        results.append([np.array(interp.get_output(k)) for k in range(_n_outputs(model))])
    return results


def run_viewer(model: bytes, frames: Sequence[Sequence[np.ndarray]]) -> list[list[np.ndarray]]:
    """The interpreter's outputs for each frame, invoked in order (state carried)."""
    from tflite_viewer.interpreter import Interpreter

    interp = Interpreter(model)
    results = []
    for inputs in frames:
        out = interp.invoke(list(inputs))
        results.append([np.array(v) for v in out.values()])
    return results


def _n_outputs(model: bytes) -> int:
    m = S.Model.GetRootAs(model, 0)
    return m.Subgraphs(0).OutputsLength()


def assert_same_stream(model: bytes, frames: Sequence[Sequence[np.ndarray]]) -> int:
    """Both runtimes' outputs equal, bit for bit, frame by frame; returns how many output
    values were compared."""
    ours, theirs = run_viewer(model, frames), run_tflm(model, frames)
    count = 0
    for f, (a, b) in enumerate(zip(ours, theirs)):
        assert len(a) == len(b)
        for k, (x, y) in enumerate(zip(a, b)):
            assert x.dtype == y.dtype, (f, k, x.dtype, y.dtype)
            assert x.shape == y.shape, (f, k, x.shape, y.shape)
            if x.dtype.kind == "f":
                same = np.array_equal(x.view(np.uint32), y.view(np.uint32))
            else:
                same = np.array_equal(x, y)
            if not same:
                bad = np.flatnonzero(x.reshape(-1) != y.reshape(-1))
                raise AssertionError(f"frame {f} output {k}: {bad.size} of {x.size} values differ, "
                                     f"first at {bad[:5].tolist()}: ours "
                                     f"{x.reshape(-1)[bad[:5]].tolist()} TFLM "
                                     f"{y.reshape(-1)[bad[:5]].tolist()}")
            count += x.size
    return count
