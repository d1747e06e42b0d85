"""A two-signature model, written by the project's own writer, where a positional mix-up
gives wrong numbers instead of an error.

Both subgraphs take float32 [1, 4] inputs only (same dtype, same shape), and each
signature lists its inputs in another order than its subgraph's ``inputs`` vector, with
names that are not the tensor names:

* subgraph 0 (``sub_first``): inputs (x, y) -> FULLY_CONNECTED(x, W, b) - y.
  Signature ``first`` lists ``y_in`` (tensor y), then ``x_in`` (tensor x).
* subgraph 1 (``sub_second``): inputs (p, q, r) -> FULLY_CONNECTED(p, W, b) * q - r.
  Signature ``second`` lists ``r_in``, ``p_in``, ``q_in``; its outputs (the result and
  the FULLY_CONNECTED's output) are listed in the other order than the subgraph's.

Both FULLY_CONNECTED ops read the same weight and bias *buffers* (W: 4x4 = 16
elements, b: 4), as the prefill and decode signatures of an LLM export share their
weights: the model holds 20 parameters, not 40.
"""
from __future__ import annotations

import numpy as np

from tflite_viewer.edit.tree import ModelTree
from tflite_viewer.edit.writer import serialize
from tflite_viewer.schema import schema_generated as S

WEIGHTS = (np.arange(16, dtype=np.float32).reshape(4, 4) - 7.5) / 4.0
BIAS = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
#: elements of the distinct constant buffers (W and b), counted once
UNIQUE_PARAMETERS = WEIGHTS.size + BIAS.size
#: signature key -> its input names in the signature's order
SIGNATURE_INPUTS = {"first": ["y_in", "x_in"], "second": ["r_in", "p_in", "q_in"]}


def _tensor(name: str, shape, buffer: int = 0) -> S.TensorT:
    t = S.TensorT()
    t.name, t.shape, t.type, t.buffer = name, list(shape), S.TensorType.FLOAT32, buffer
    return t


def _op(opcode: int, inputs, outputs, options_type=None, options=None) -> S.OperatorT:
    o = S.OperatorT()
    o.opcodeIndex, o.inputs, o.outputs = opcode, list(inputs), list(outputs)
    if options_type is not None:
        o.builtinOptionsType, o.builtinOptions = options_type, options
    return o


def _map(name: str, tensor: int) -> S.TensorMapT:
    m = S.TensorMapT()
    m.name, m.tensorIndex = name, tensor
    return m


def _signature(key: str, subgraph: int, inputs, outputs) -> S.SignatureDefT:
    s = S.SignatureDefT()
    s.signatureKey, s.subgraphIndex = key, subgraph
    s.inputs = [_map(n, t) for n, t in inputs]
    s.outputs = [_map(n, t) for n, t in outputs]
    return s


def two_signature_model() -> bytes:
    """The model described in the module docstring, as .tflite bytes."""
    m = S.ModelT()
    m.version = 3
    m.description = "two signatures whose inputs are listed out of subgraph order"
    codes = []
    for op in ("FULLY_CONNECTED", "SUB", "MUL"):
        oc = S.OperatorCodeT()
        oc.builtinCode = oc.deprecatedBuiltinCode = getattr(S.BuiltinOperator, op)
        oc.version = 1
        codes.append(oc)
    m.operatorCodes = codes
    bufs = [S.BufferT(), S.BufferT(), S.BufferT()]
    bufs[1].data = np.frombuffer(WEIGHTS.tobytes(), np.uint8)
    bufs[2].data = np.frombuffer(BIAS.tobytes(), np.uint8)
    m.buffers = bufs
    fc_opts = S.FullyConnectedOptionsT()

    first = S.SubGraphT()
    first.name = "sub_first"
    first.tensors = [_tensor("first/x", (1, 4)), _tensor("first/y", (1, 4)),
                     _tensor("first/w", (4, 4), 1), _tensor("first/b", (4,), 2),
                     _tensor("first/fc", (1, 4)), _tensor("first/out", (1, 4))]
    first.inputs, first.outputs = [0, 1], [5]
    first.operators = [
        _op(0, [0, 2, 3], [4], S.BuiltinOptions.FullyConnectedOptions, fc_opts),
        _op(1, [4, 1], [5], S.BuiltinOptions.SubOptions, S.SubOptionsT())]

    second = S.SubGraphT()
    second.name = "sub_second"
    second.tensors = [_tensor("second/p", (1, 4)), _tensor("second/q", (1, 4)),
                      _tensor("second/r", (1, 4)), _tensor("second/w", (4, 4), 1),
                      _tensor("second/b", (4,), 2), _tensor("second/fc", (1, 4)),
                      _tensor("second/m", (1, 4)), _tensor("second/out", (1, 4))]
    second.inputs, second.outputs = [0, 1, 2], [7, 5]
    second.operators = [
        _op(0, [0, 3, 4], [5], S.BuiltinOptions.FullyConnectedOptions, fc_opts),
        _op(2, [5, 1], [6], S.BuiltinOptions.MulOptions, S.MulOptionsT()),
        _op(1, [6, 2], [7], S.BuiltinOptions.SubOptions, S.SubOptionsT())]

    m.subgraphs = [first, second]
    m.signatureDefs = [
        _signature("first", 0, [("y_in", 1), ("x_in", 0)], [("out", 5)]),
        _signature("second", 1, [("r_in", 2), ("p_in", 0), ("q_in", 1)],
                   [("fc_out", 5), ("result", 7)])]
    return serialize(ModelTree(m))


def signature_inputs(key: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Distinct float32 [1, 4] values for each input of signature ``key``, by name."""
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(-2, 2, (1, 4)).astype(np.float32)
            for name in SIGNATURE_INPUTS[key]}


def by_hand(key: str, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """The signature's output computed in float64 from the docstring's formulas."""
    w, b = WEIGHTS.astype(np.float64), BIAS.astype(np.float64)
    if key == "first":
        return inputs["x_in"] @ w.T + b - inputs["y_in"]
    return (inputs["p_in"] @ w.T + b) * inputs["q_in"] - inputs["r_in"]
