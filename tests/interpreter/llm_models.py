"""Decoder-shaped models for the LLM kernel tests, written by the project's own writer
(`tflite_viewer.edit.writer`): the tensors LiteRT-Torch and ai-edge-quantizer exports hold
(INT4 and INT2 packed weights, `BlockwiseQuantization` details pointing at a FLOAT16 scale
tensor, per-row INT8 embedding tables) in single-op and small multi-op models.

A tensor is a `W` (constant: unpacked integer or float values, a type name for sub-byte
types, its quantization) or an `A` (a runtime value: shape and type name).  Quantization is
``None``, `PerTensor`, `PerChannel` or `Blockwise` (whose ``scales`` is the index of the
FLOAT16 scale tensor, listed like any other tensor).

>>> model = write_model(
...     [A((2, 64)), W(q4, "INT4", Blockwise(2, 32)), W(scales16), A((2, 16))],
...     [OpSpec("FULLY_CONNECTED", [0, 1, -1], [3], "FullyConnectedOptions", {})],
...     inputs=[0], outputs=[3])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from tflite_viewer.edit.tree import ModelTree
from tflite_viewer.edit.writer import serialize
from tflite_viewer.schema import schema_generated as S

from .singleop import options_table

#: numpy storage of the whole-byte types by TensorType name
_NUMPY = {"FLOAT32": np.float32, "FLOAT16": np.float16, "INT32": np.int32, "INT64": np.int64,
          "UINT8": np.uint8, "INT8": np.int8, "INT16": np.int16, "BOOL": np.bool_}
_BITS = {"INT4": 4, "INT2": 2, "UINT4": 4}


@dataclass
class PerTensor:
    scale: float
    zero_point: int = 0


@dataclass
class PerChannel:
    scales: Sequence[float]
    zero_points: Sequence[int] | int = 0
    axis: int = 0


@dataclass
class Blockwise:
    """BlockwiseQuantization: ``scales`` (and ``zero_points``, -1 for none) are tensor
    indices of the model."""

    scales: int
    block_size: int
    zero_points: int = -1


@dataclass
class Custom:
    """CustomQuantization with these bytes."""

    data: bytes = b"\x01\x02"


@dataclass
class MultiAxis:
    """MultiAxisQuantization: a scale tensor (index) over several dimensions."""

    scales: int
    dimensions: Sequence[int] = (0, 1)
    block_size: int = 0


@dataclass
class W:
    """A constant tensor: values (unpacked integers for sub-byte types), their type name."""

    values: np.ndarray
    type: str | None = None
    quant: Any = None
    name: str | None = None


@dataclass
class A:
    """A runtime tensor (an input or an operator's output)."""

    shape: Sequence[int]
    type: str = "FLOAT32"
    quant: Any = None
    name: str | None = None


@dataclass
class OpSpec:
    op: str
    inputs: Sequence[int]
    outputs: Sequence[int]
    options_type: str | None = None
    options: dict[str, Any] | None = None
    version: int = 1
    #: a custom op's code (``op`` is then "CUSTOM")
    custom_code: str | None = None


def pack(values: np.ndarray, bits: int) -> np.ndarray:
    """Sub-byte integers packed lowest bits first (LiteRT's order), the last byte padded."""
    per = 8 // bits
    flat = (np.asarray(values).reshape(-1).astype(np.int64) & ((1 << bits) - 1)).astype(np.uint8)
    flat = np.concatenate([flat, np.zeros((-flat.size) % per, np.uint8)]).reshape(-1, per)
    return np.bitwise_or.reduce(flat << (np.arange(per) * bits).astype(np.uint8),
                                axis=1).astype(np.uint8)


def _type_name(values: np.ndarray) -> str:
    for name, dtype in _NUMPY.items():
        if np.dtype(dtype) == values.dtype:
            return name
    raise TypeError(f"no TensorType for {values.dtype}")


def _quantization(quant) -> S.QuantizationParametersT | None:
    if quant is None:
        return None
    q = S.QuantizationParametersT()
    if isinstance(quant, PerTensor):
        q.scale, q.zeroPoint = [float(quant.scale)], [int(quant.zero_point)]
    elif isinstance(quant, PerChannel):
        scales = [float(s) for s in quant.scales]
        zps = np.broadcast_to(np.asarray(quant.zero_points), (len(scales),))
        q.scale, q.zeroPoint, q.quantizedDimension = scales, [int(z) for z in zps], quant.axis
    elif isinstance(quant, Blockwise):
        d = S.BlockwiseQuantizationT()
        d.scales, d.zeroPoints, d.blockSize = quant.scales, quant.zero_points, quant.block_size
        q.detailsType, q.details = S.QuantizationDetails.BlockwiseQuantization, d
    elif isinstance(quant, MultiAxis):
        d = S.MultiAxisQuantizationT()
        d.scales, d.zeroPoints, d.blockSize = quant.scales, -1, quant.block_size
        d.quantizedDimensions = list(quant.dimensions)
        q.detailsType, q.details = S.QuantizationDetails.MultiAxisQuantization, d
    elif isinstance(quant, Custom):
        d = S.CustomQuantizationT()
        d.custom = list(quant.data)
        q.detailsType, q.details = S.QuantizationDetails.CustomQuantization, d
    else:
        raise TypeError(f"unknown quantization {quant!r}")
    return q


def write_model(tensors: Sequence[W | A], ops: Sequence[OpSpec], inputs: Sequence[int],
                outputs: Sequence[int]) -> bytes:
    """The .tflite bytes of a one-subgraph model (see the module docstring)."""
    model = S.ModelT()
    model.version = 3
    model.description = "llm kernel test model"
    model.buffers = [S.BufferT()]
    sg = S.SubGraphT()
    sg.name = "main"
    sg.tensors = []
    for k, spec in enumerate(tensors):
        t = S.TensorT()
        t.name = spec.name or f"t{k}"
        t.quantization = _quantization(spec.quant)
        if isinstance(spec, W):
            values = np.asarray(spec.values)
            tname = spec.type or _type_name(values)
            if tname in _BITS:
                raw = pack(values, _BITS[tname])
            else:
                raw = np.ascontiguousarray(values.astype(_NUMPY[tname])).reshape(-1).view(np.uint8)
            buf = S.BufferT()
            buf.data = raw
            model.buffers.append(buf)
            t.shape, t.buffer = [int(d) for d in values.shape], len(model.buffers) - 1
        else:
            tname = spec.type
            t.shape, t.buffer = [int(d) for d in spec.shape], 0
        t.type = getattr(S.TensorType, tname)
        sg.tensors.append(t)
    sg.inputs, sg.outputs = list(inputs), list(outputs)
    codes: dict[tuple[str, int, str | None], int] = {}
    model.operatorCodes, sg.operators = [], []
    for spec in ops:
        key = (spec.op, spec.version, spec.custom_code)
        if key not in codes:
            oc = S.OperatorCodeT()
            code = getattr(S.BuiltinOperator, spec.op)
            oc.builtinCode, oc.deprecatedBuiltinCode = code, min(code, 127)
            oc.version = spec.version
            if spec.custom_code is not None:
                oc.customCode = spec.custom_code
            codes[key] = len(model.operatorCodes)
            model.operatorCodes.append(oc)
        o = S.OperatorT()
        o.opcodeIndex = codes[key]
        o.inputs, o.outputs = list(spec.inputs), list(spec.outputs)
        if spec.options_type is not None:
            o.builtinOptionsType = getattr(S.BuiltinOptions, spec.options_type)
            o.builtinOptions = options_table(spec.options_type, spec.options or {})
        sg.operators.append(o)
    model.subgraphs = [sg]
    return serialize(ModelTree(model))


def litert_run(model: bytes, inputs: Sequence[np.ndarray],
               resolver: str = "BUILTIN_WITHOUT_DEFAULT_DELEGATES") -> dict[int, np.ndarray]:
    """Every tensor LiteRT holds after a run (``experimental_preserve_all_tensors``), by
    index: its builtin kernels without the XNNPACK delegate by default."""
    from tests.litert_oracle import litert

    li = litert(model, resolver)
    li.allocate_tensors()
    for d, x in zip(li.get_input_details(), inputs):
        li.set_tensor(d["index"], np.asarray(x, dtype=d["dtype"]))
    li.invoke()
    out = {}
    for d in li.get_tensor_details():
        try:
            out[d["index"]] = np.array(li.get_tensor(d["index"]))
        except ValueError:  # a tensor LiteRT holds no data for (a constant's scale, ...)
            pass
    return out


def ours_run(model: bytes, inputs: Sequence[np.ndarray]) -> dict[int, np.ndarray]:
    """Every tensor our interpreter computed (the runtime inputs and every op's outputs)."""
    from tflite_viewer.interpreter import Interpreter

    interp = Interpreter(model)
    interp.set_inputs([np.asarray(x) for x in inputs])
    interp.invoke()
    sg = interp.subgraphs[0]
    return {t.index: t.data for t in sg.tensors if t.data is not None}


def ours_run_fed(model: bytes, inputs: Sequence[np.ndarray],
                 feed: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Every op's outputs when each op reads ``feed``'s values (LiteRT's, by tensor index)
    for its computed inputs: each kernel compared on the very inputs LiteRT's kernel saw,
    so a difference upstream (a float sum in another order) does not reach it."""
    from tflite_viewer.interpreter import Interpreter

    interp = Interpreter(model)
    interp.set_inputs([np.asarray(x) for x in inputs])
    sg = interp.subgraphs[0]
    out: dict[int, np.ndarray] = {}

    def before(it, event):
        for i in event.node.inputs:
            if i >= 0 and not sg.tensors[i].is_constant and i in feed:
                it.set_tensor(0, i, feed[i])

    def after(it, event):
        for i in event.node.outputs:
            out[i] = it.tensor(0, i)

    interp.add_hook("before", before)
    interp.add_hook("after", after)
    interp.invoke()
    return out


# -- a decoder block ---------------------------------------------------------------------
#: how the weights of `decoder_model` are stored, as the exports of LiteRT-Torch and
#: ai-edge-quantizer store them
FLAVOURS = ("float32", "weight_only_int8", "dynamic_int8", "int4_blockwise")


class _Graph:
    def __init__(self, rng: np.random.Generator) -> None:
        self.rng, self.tensors, self.ops = rng, [], []

    def add(self, t: W | A) -> int:
        self.tensors.append(t)
        return len(self.tensors) - 1

    def op(self, name: str, inputs, shape, out_type="FLOAT32", options_type=None,
           options=None, out_name=None) -> int:
        o = self.add(A(shape, out_type, name=out_name))
        self.ops.append(OpSpec(name, list(inputs), [o], options_type, options))
        return o

    def blockwise(self, values: np.ndarray, block: int, name: str) -> int:
        """INT4 ``values`` [n, k] with FLOAT16 block scales: the weights' tensor index."""
        n, k = values.shape
        scales = (self.rng.random((n, k // block)) * 0.05 + 0.005).astype(np.float16)
        s = self.add(W(scales, name=f"{name}_scales"))
        return self.add(W(values, "INT4", Blockwise(s, block), name=name))


def decoder_model(flavour: str, rng: np.random.Generator, tokens: int = 8, dim: int = 64,
                  vocab: int = 96, block: int = 32) -> tuple[bytes, np.ndarray]:
    """(model, token ids) of one decoder block over ``tokens`` positions: an embedding
    lookup, RMS norm, q/k/v projections, attention (BATCH_MATMUL, SOFTMAX), the output
    projection with a residual, RMS norm, and the logits projection, weights stored as
    ``flavour`` says (`FLAVOURS`):

    * ``float32``: float tables and weights;
    * ``weight_only_int8``: INT8 per-row embedding table, INT8 per-channel weights each
      dequantized (DEQUANTIZE) before a float FULLY_CONNECTED;
    * ``dynamic_int8``: INT8 per-row table, hybrid FULLY_CONNECTED (INT8 per-channel
      weights, the input quantized per row, asymmetrically);
    * ``int4_blockwise``: INT4 blockwise table and weights (FLOAT16 scales, one per block
      of ``block`` values), as ai-edge-quantizer writes them.
    """
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour must be one of {FLAVOURS}")
    g = _Graph(rng)
    T, D, V = tokens, dim, vocab
    ids = g.add(A((T,), "INT32", name="ids"))

    def int8_rows(n, k):
        return rng.integers(-127, 128, (n, k)).astype(np.int8), \
            (rng.random(n) * 0.01 + 1e-3).tolist()

    if flavour == "float32":
        table = g.add(W((rng.standard_normal((V, D)) * 0.3).astype(np.float32), name="embed"))
    elif flavour == "int4_blockwise":
        table = g.blockwise(rng.integers(-8, 8, (V, D)).astype(np.int8), block, "embed")
    else:
        values, scales = int8_rows(V, D)
        table = g.add(W(values, "INT8", PerChannel(scales), name="embed"))
    x = g.op("EMBEDDING_LOOKUP", [ids, table], (T, D), out_name="x")

    def rms(x, name):
        sq = g.op("MUL", [x, x], (T, D), options_type="MulOptions")
        axis = g.add(W(np.array([-1], np.int32)))
        ms = g.op("MEAN", [sq, axis], (T, 1), options_type="ReducerOptions",
                  options={"keep_dims": True})
        eps = g.add(W(np.array([1e-6], np.float32)))
        r = g.op("RSQRT", [g.op("ADD", [ms, eps], (T, 1), options_type="AddOptions")], (T, 1))
        xn = g.op("MUL", [x, r], (T, D), options_type="MulOptions")
        gamma = g.add(W((1 + 0.1 * rng.standard_normal(D)).astype(np.float32)))
        return g.op("MUL", [xn, gamma], (T, D), options_type="MulOptions", out_name=name)

    def fc(x, n, k, name):
        opts = {}
        if flavour == "float32":
            w = g.add(W((rng.standard_normal((n, k)) * 0.1).astype(np.float32), name=name + "_w"))
        elif flavour == "int4_blockwise":
            w = g.blockwise(rng.integers(-8, 8, (n, k)).astype(np.int8), block, name + "_w")
        else:
            values, scales = int8_rows(n, k)
            w = g.add(W(values, "INT8", PerChannel(scales), name=name + "_w"))
            if flavour == "weight_only_int8":
                w = g.op("DEQUANTIZE", [w], (n, k))
            else:
                opts = {"asymmetric_quantize_inputs": True}
        return g.op("FULLY_CONNECTED", [x, w, -1], (T, n), options_type="FullyConnectedOptions",
                    options=opts, out_name=name)

    h = rms(x, "ln1")
    q, k, v = fc(h, D, D, "q"), fc(h, D, D, "k"), fc(h, D, D, "v")
    scores = g.op("BATCH_MATMUL", [q, k], (T, T), options_type="BatchMatMulOptions",
                  options={"adj_y": True}, out_name="scores")
    probs = g.op("SOFTMAX", [scores], (T, T), options_type="SoftmaxOptions",
                 options={"beta": 1.0 / np.sqrt(D)}, out_name="probs")
    att = g.op("BATCH_MATMUL", [probs, v], (T, D), options_type="BatchMatMulOptions",
               out_name="att")
    res = g.op("ADD", [x, fc(att, D, D, "o")], (T, D), options_type="AddOptions", out_name="res")
    logits = fc(rms(res, "ln2"), V, D, "logits")
    model = write_model(g.tensors, g.ops, [ids], [logits])
    return model, rng.integers(0, V, T).astype(np.int32)
