"""Build small .tflite models with the flatc object API, for kernel tests: the one model
builder every test uses.

* `single_op_model`: one operator, its runtime inputs the model's inputs;
* `graph_model`: several operators (and subgraphs) wired by tensor index;
* `batch_model`: many independent operators in one model (each an `Op` with tensors of its
  own, `T`), so one LiteRT interpreter checks hundreds of parameter combinations at once
  (`run_batch_litert`, `run_batch_ours`).

>>> data = single_op_model("CONV_2D", [Input((1, 8, 8, 3)), filt, bias], [np.float32],
...                        "Conv2DOptions", {"padding": "SAME", "stride_w": 2})
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import flatbuffers
import numpy as np

from tflite_viewer.schema import schema_generated as S

_TYPES = {np.dtype(np.float32): S.TensorType.FLOAT32, np.dtype(np.float16): S.TensorType.FLOAT16,
          np.dtype(np.int32): S.TensorType.INT32, np.dtype(np.uint8): S.TensorType.UINT8,
          np.dtype(np.int64): S.TensorType.INT64, np.dtype(np.bool_): S.TensorType.BOOL,
          np.dtype(np.int16): S.TensorType.INT16, np.dtype(np.int8): S.TensorType.INT8,
          np.dtype(np.complex64): S.TensorType.COMPLEX64, np.dtype(np.float64): S.TensorType.FLOAT64,
          np.dtype(np.uint16): S.TensorType.UINT16, np.dtype(np.uint32): S.TensorType.UINT32,
          np.dtype(np.uint64): S.TensorType.UINT64, np.dtype(np.complex128): S.TensorType.COMPLEX128}
_ENUMS = {"padding": S.Padding, "fused_activation_function": S.ActivationFunctionType,
          "mode": S.MirrorPadMode, "out_type": S.TensorType, "output_type": S.TensorType,
          "idx_out_type": S.TensorType, "weights_format": S.FullyConnectedOptionsWeightsFormat,
          "combiner": S.CombinerType, "lsh_type": S.LSHProjectionType,
          "quantized_bias_type": S.TensorType, "kernel_type": S.LSTMKernelType,
          "key_dtype": S.TensorType, "value_dtype": S.TensorType, "algorithm": S.RngAlgorithm,
          "reduce_function": S.ReduceWindowFunction, "type": S.LSHProjectionType}


@dataclass
class Input:
    """A runtime input of the model (a constant is given as a numpy array instead)."""

    shape: Sequence[int]
    dtype: Any = np.float32
    quant: tuple[float, int] | None = None  # (scale, zero_point)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def options_table(options_type: str, options: dict[str, Any]):
    obj = getattr(S, options_type + "T")()
    for k, v in options.items():
        if isinstance(v, str) and k in _ENUMS:
            v = getattr(_ENUMS[k], v)
        attr = _camel(k)
        if not hasattr(obj, attr):
            raise AttributeError(f"{options_type} has no field {k} ({attr})")
        setattr(obj, attr, v)
    return obj


def set_options(o: S.OperatorT, options_type: str, options: dict[str, Any]) -> None:
    """An operator's options table: in builtin_options, or builtin_options_2 for the
    options the second union holds (the StableHLO ones)."""
    if hasattr(S.BuiltinOptions, options_type):
        o.builtinOptionsType = getattr(S.BuiltinOptions, options_type)
        o.builtinOptions = options_table(options_type, options)
    else:
        o.builtinOptions2Type = getattr(S.BuiltinOptions2, options_type)
        o.builtinOptions2 = options_table(options_type, options)


def _tensor(name: str, shape, dtype, buffer: int, quant=None) -> S.TensorT:
    t = S.TensorT()
    t.name = name
    t.shape = list(int(d) for d in shape)
    t.type = _TYPES[np.dtype(dtype)]
    t.buffer = buffer
    if quant is not None:
        q = S.QuantizationParametersT()
        scales = np.atleast_1d(quant[0])
        q.scale = [float(v) for v in scales]
        q.zeroPoint = [int(v) for v in np.broadcast_to(np.atleast_1d(quant[1]), scales.shape)]
        if len(quant) > 2:
            q.quantizedDimension = int(quant[2])
        t.quantization = q
    return t


def single_op_model(op: str, inputs: Sequence[Input | np.ndarray | None],
                    outputs: Sequence[Any], options_type: str | None = None,
                    options: dict[str, Any] | None = None, version: int = 1,
                    custom_code: str | None = None, custom_options: bytes | None = None,
                    output_shapes: Sequence[Sequence[int]] | None = None) -> bytes:
    """A model running one ``op`` (a BuiltinOperator name, or "CUSTOM" with
    ``custom_code``); ``inputs`` are Input specs, constant arrays, or None (omitted)."""
    model = S.ModelT()
    model.version = 3
    model.buffers = [S.BufferT()]  # buffer 0: the empty buffer
    sg = S.SubGraphT()
    sg.tensors, sg.inputs, sg.outputs = [], [], []
    op_inputs = []
    for k, spec in enumerate(inputs):
        if spec is None:
            op_inputs.append(-1)
            continue
        if isinstance(spec, Input):
            sg.tensors.append(_tensor(f"in{k}", spec.shape, spec.dtype, 0, spec.quant))
            sg.inputs.append(len(sg.tensors) - 1)
        else:
            arr = np.array(spec, copy=True)  # (ascontiguousarray would make a scalar 1-D)
            buf = S.BufferT()
            buf.data = np.frombuffer(arr.tobytes(), dtype=np.uint8)
            model.buffers.append(buf)
            sg.tensors.append(_tensor(f"const{k}", arr.shape, arr.dtype, len(model.buffers) - 1))
        op_inputs.append(len(sg.tensors) - 1)
    op_outputs = []
    for k, dtype in enumerate(outputs):
        shape = output_shapes[k] if output_shapes else []
        quant = None
        if isinstance(dtype, tuple):
            dtype, quant = dtype
        sg.tensors.append(_tensor(f"out{k}", shape, dtype, 0, quant))
        op_outputs.append(len(sg.tensors) - 1)
        sg.outputs.append(len(sg.tensors) - 1)
    oc = S.OperatorCodeT()
    code = getattr(S.BuiltinOperator, op)
    oc.builtinCode = code
    oc.deprecatedBuiltinCode = min(code, 127)
    oc.version = version
    if custom_code is not None:
        oc.customCode = custom_code
    model.operatorCodes = [oc]
    o = S.OperatorT()
    o.opcodeIndex = 0
    o.inputs, o.outputs = op_inputs, op_outputs
    if options_type is not None:
        set_options(o, options_type, options or {})
    if custom_options is not None:
        o.customOptions = list(custom_options)
    sg.operators = [o]
    sg.name = "main"
    model.subgraphs = [sg]
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def run_litert(model: bytes, inputs: Sequence[np.ndarray], reference: bool = True) -> list[np.ndarray]:
    """Outputs of LiteRT (reference kernels by default) on a model's inputs."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT, OpResolverType
    kind = OpResolverType.BUILTIN_REF if reference else OpResolverType.BUILTIN
    li = LiteRT(model_content=model, experimental_op_resolver_type=kind)
    for d, x in zip(li.get_input_details(), inputs):
        if tuple(d["shape"]) != np.shape(x):
            li.resize_tensor_input(d["index"], np.shape(x))
    li.allocate_tensors()
    for d, x in zip(li.get_input_details(), inputs):
        li.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]))
    li.invoke()
    return [li.get_tensor(d["index"]) for d in li.get_output_details()]


def run_ours(model: bytes, inputs: Sequence[np.ndarray],
             float_sums: str = "auto") -> list[np.ndarray]:
    """Our outputs of ``model`` on ``inputs``; ``float_sums="reference"`` where a test
    wants LiteRT's reference kernels' bits (`interpreter.float_sums`)."""
    from tflite_viewer.interpreter import Interpreter
    interp = Interpreter(model, float_sums=float_sums)
    interp.set_inputs(list(inputs))
    return list(interp.invoke().values())


def rel_error(ours: np.ndarray, ref: np.ndarray) -> float:
    """max |ours - ref| relative to the reference's range (at least 1)."""
    if ours.shape != ref.shape:
        raise AssertionError(f"shape {ours.shape} != reference {ref.shape}")
    if ref.size == 0:
        return 0.0
    ref64 = ref.astype(np.float64)
    both_nan = np.isnan(ref64) & np.isnan(ours.astype(np.float64))
    with np.errstate(invalid="ignore"):  # inf - inf where the reference is infinite:
        diff = np.where(both_nan, 0.0, np.abs(ours.astype(np.float64) - ref64))  # not read
    finite = np.isfinite(ref64)
    scale = max(1.0, float(np.max(np.abs(ref64[finite]))) if finite.any() else 1.0)
    inf_mismatch = np.any(~finite & ~both_nan & (ours != ref))
    return float("inf") if inf_mismatch else float(np.max(diff[finite | both_nan], initial=0.0)) / scale


def assert_matches_litert(model: bytes, inputs: Sequence[np.ndarray], tol: float = 1e-5,
                          reference: bool = True) -> None:
    ref = run_litert(model, inputs, reference)
    ours = run_ours(model, inputs)
    assert len(ours) == len(ref)
    for k, (a, b) in enumerate(zip(ours, ref)):
        assert a.shape == b.shape, f"output {k}: shape {a.shape} != LiteRT {b.shape}"
        if b.dtype.kind in "fc":
            err = rel_error(np.abs(a) if b.dtype.kind == "c" else a,
                            np.abs(b) if b.dtype.kind == "c" else b)
            assert err <= tol, f"output {k}: relative error {err:g} > {tol:g}"
        else:
            np.testing.assert_array_equal(a, b, err_msg=f"output {k}")


@dataclass
class Op:
    """One operator: of a `graph_model`, its inputs and outputs are tensor indices into the
    model's tensor list; of a `batch_model`, tensors of its own (`T`, None: omitted)."""

    op: str
    inputs: Sequence[Any]
    outputs: Sequence[Any]
    options_type: str | None = None
    options: dict[str, Any] | None = None
    version: int = 1
    custom_code: str | None = None
    intermediates: Sequence[Any] = ()


def graph_model(tensors: Sequence[tuple], ops: Sequence[Op], inputs: Sequence[int],
                outputs: Sequence[int], subgraphs: Sequence[tuple] = ()) -> bytes:
    """A model from ``tensors`` = [(shape, dtype) or (constant array,)], ``ops`` in
    execution order, and subgraph ``inputs``/``outputs``.  A quantized tensor adds its
    ``(scale, zero_point[, quantized_dimension])`` (scales may be per channel):
    ``(shape, dtype, quant)`` or ``(constant array, quant)``.  ``subgraphs`` adds more
    subgraphs as (tensors, ops, inputs, outputs) tuples (for control flow)."""
    model = S.ModelT()
    model.version = 3
    model.buffers = [S.BufferT()]
    codes: dict[tuple, int] = {}
    model.operatorCodes = []

    def build(tensors, ops, inputs, outputs, name):
        sg = S.SubGraphT()
        sg.name = name
        sg.tensors = []
        for k, spec in enumerate(tensors):
            if len(spec) == 1 or isinstance(spec[0], np.ndarray):
                arr = np.array(spec[0], copy=True)
                buf = S.BufferT()
                buf.data = np.frombuffer(arr.tobytes(), dtype=np.uint8)
                model.buffers.append(buf)
                sg.tensors.append(_tensor(f"t{k}", arr.shape, arr.dtype, len(model.buffers) - 1,
                                          spec[1] if len(spec) > 1 else None))
            else:
                shape, dtype = spec[0], spec[1]
                quant = spec[2] if len(spec) > 2 and isinstance(spec[2], tuple) else None
                t = _tensor(f"t{k}", shape, dtype, 0, quant)
                if len(spec) > 2 and spec[2] == "variable":
                    t.isVariable = True
                if np.dtype(dtype) == np.dtype(np.int32) and len(spec) > 2 and spec[2] == "resource":
                    t.type = S.TensorType.RESOURCE
                sg.tensors.append(t)
        sg.inputs, sg.outputs = list(inputs), list(outputs)
        sg.operators = []
        for spec in ops:
            key = (spec.op, spec.version, spec.custom_code)
            if key not in codes:
                oc = S.OperatorCodeT()
                code = getattr(S.BuiltinOperator, spec.op)
                oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = code, min(code, 127), spec.version
                if spec.custom_code is not None:
                    oc.customCode = spec.custom_code
                codes[key] = len(model.operatorCodes)
                model.operatorCodes.append(oc)
            o = S.OperatorT()
            o.opcodeIndex = codes[key]
            o.inputs, o.outputs = list(spec.inputs), list(spec.outputs)
            if spec.options_type is not None:
                set_options(o, spec.options_type, spec.options or {})
            sg.operators.append(o)
        return sg

    model.subgraphs = [build(tensors, ops, inputs, outputs, "main")]
    for k, (t, o, i, out) in enumerate(subgraphs):
        model.subgraphs.append(build(t, o, i, out, f"sub{k + 1}"))
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def random_strided_slice(rng: np.random.Generator, shape: Sequence[int]
                         ) -> tuple[list[int], list[int], list[int], dict[str, int]]:
    """Random STRIDED_SLICE (begin, end, strides, options) for a rank-3 ``shape``: negative
    and out-of-range bounds, negative strides, masks, shrunk axes (with stride 1)."""
    begin = [int(rng.integers(-d, d)) for d in shape]
    end = [int(rng.integers(-d, d + 1)) for d in shape]
    strides = [int(rng.choice([1, 2, -1, 3])) for _ in shape]
    opts = {"begin_mask": int(rng.integers(0, 8)), "end_mask": int(rng.integers(0, 8)),
            "shrink_axis_mask": int(rng.choice([0, 0, 1, 4]))}
    for i in range(len(shape)):
        if opts["shrink_axis_mask"] & (1 << i):
            strides[i] = 1
    return begin, end, strides, opts


# -- many independent operators in one model -------------------------------------------------
@dataclass
class T:
    """A tensor of a `BatchOp`: a runtime input when ``data`` is None, else a constant."""

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
class BatchModel:
    model: bytes
    inputs: list[list[int]]  # per op: positions of its runtime inputs in the model's inputs
    outputs: list[list[int]]  # per op: positions of its outputs in the model's outputs


def batch_model(ops: Sequence[Op]) -> BatchModel:
    """One model running every op of ``ops`` side by side: each op's runtime inputs become
    model inputs and its outputs model outputs."""
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
        buffer = 0
        if t.data is not None:
            buf = S.BufferT()
            buf.data = np.ascontiguousarray(t.data, dtype=t.dtype).view(np.uint8).reshape(-1)
            model.buffers.append(buf)
            buffer = len(model.buffers) - 1
        quant = None if t.scale is None else (
            t.scale, 0 if t.zero_point is None else t.zero_point, t.quantized_dimension)
        tensor = _tensor(name, t.shape, t.dtype, buffer, quant)
        tensor.isVariable = t.variable
        sg.tensors.append(tensor)
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
            o.intermediates = [add_tensor(t, f"op{k}_im{j}")
                               for j, t in enumerate(op.intermediates)]
        if op.options_type:
            o.builtinOptionsType = getattr(S.BuiltinOptions, op.options_type)
            o.builtinOptions = options_table(op.options_type, op.options or {})
        sg.operators.append(o)
        in_pos.append(positions)
        out_pos.append(opos)
    model.subgraphs = [sg]
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return BatchModel(bytes(builder.Output()), in_pos, out_pos)


def run_batch_litert(built: BatchModel, inputs: Sequence[Sequence[np.ndarray]],
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


def batch_inputs(built: BatchModel, inputs: Sequence[Sequence[np.ndarray]]) -> list[np.ndarray]:
    """The model's input list from per-op runtime inputs (``inputs[k]`` for op k)."""
    flat: list[np.ndarray | None] = [None] * sum(len(p) for p in built.inputs)
    for positions, arrays in zip(built.inputs, inputs):
        for pos, arr in zip(positions, arrays):
            flat[pos] = np.ascontiguousarray(arr)
    return flat  # type: ignore[return-value]


def run_batch_ours(built: BatchModel, inputs: Sequence[Sequence[np.ndarray]],
                   **interpreter_options: Any) -> list[list[np.ndarray]]:
    """`run_batch_litert` through our `Interpreter`: every op's outputs, in the same layout."""
    from tflite_viewer.interpreter import Interpreter

    outs = list(Interpreter(built.model, **interpreter_options)
                .invoke(batch_inputs(built, inputs)).values())
    return [[outs[p] for p in positions] for positions in built.outputs]
