"""One operator of a model as a model of its own, for checking a verdict on that operator
alone against the runtime it names.

The operator keeps its code, version, options and tensors (types, stored shapes,
quantization, constant data, the scale tensors blockwise quantization points at); its
runtime inputs become the model's inputs and its outputs the model's outputs, in a model of
one subgraph (TFLite Micro resolves and prepares every subgraph of a model, so others would
speak for their own operators).  Operators that refer to other subgraphs (IF, WHILE,
CALL_ONCE, STABLEHLO_COMPOSITE) are not extracted: their verdicts are checked on the whole
model.
"""
from __future__ import annotations

import copy

import flatbuffers
import numpy as np

from tflite_viewer.schema import schema_generated as S

REFERS_TO_SUBGRAPHS = {"IF", "WHILE", "CALL_ONCE", "STABLEHLO_COMPOSITE"}


def _block_refs(t: S.TensorT) -> list[int]:
    q = t.quantization
    if q is None or q.detailsType != S.QuantizationDetails.BlockwiseQuantization:
        return []
    return [i for i in (q.details.scales, q.details.zeroPoints) if i is not None and i >= 0]


def unpack(model: bytes) -> S.ModelT:
    """The model as the schema's objects, to extract several operators from (unpacking a
    large model takes a while: do it once)."""
    return S.ModelT.InitFromPackedBuf(model, 0)


def extract(model: bytes | S.ModelT, subgraph: int, op: int,
            values: dict[int, np.ndarray] | None = None) -> bytes:
    """The one-operator model.  ``values`` gives some runtime inputs constant values (the
    values a verdict was computed from): they become constants of the new model.
    ``model`` is the file's bytes or `unpack`'s objects (left unchanged)."""
    m = copy.copy(unpack(model) if isinstance(model, (bytes, bytearray)) else model)
    sg = m.subgraphs[subgraph]
    o = sg.operators[op]
    used: list[int] = []
    for t in [*o.inputs, *o.outputs, *(o.intermediates if o.intermediates is not None else [])]:
        if t >= 0 and t not in used:
            used.append(t)
    for t in list(used):
        used += [r for r in _block_refs(sg.tensors[t]) if r not in used]
    where = {t: i for i, t in enumerate(used)}
    buffers = [S.BufferT()]
    tensors = []
    for t in used:
        tensor = copy.deepcopy(sg.tensors[t])
        data = m.buffers[tensor.buffer].data if 0 < tensor.buffer < len(m.buffers) else None
        if t in (values or {}):
            data = np.ascontiguousarray(values[t]).view(np.uint8).reshape(-1)
        tensor.buffer = 0
        if data is not None and len(data):
            buf = S.BufferT()
            buf.data = data
            buffers.append(buf)
            tensor.buffer = len(buffers) - 1
        if _block_refs(tensor):
            q = tensor.quantization
            q.details.scales = where[q.details.scales]
            if q.details.zeroPoints is not None and q.details.zeroPoints >= 0:
                q.details.zeroPoints = where[q.details.zeroPoints]
        tensors.append(tensor)
    new = copy.deepcopy(o)
    new.inputs = [where[t] if t >= 0 else -1 for t in o.inputs]
    new.outputs = [where[t] for t in o.outputs]
    if o.intermediates is not None and len(o.intermediates):
        new.intermediates = [where[t] for t in o.intermediates]
    one = S.SubGraphT()
    one.name, one.tensors, one.operators = "extracted", tensors, [new]
    one.inputs = [where[t] for t in dict.fromkeys(o.inputs) if t >= 0
                  and tensors[where[t]].buffer == 0 and not tensors[where[t]].isVariable]
    one.outputs = list(new.outputs)
    m.subgraphs, m.buffers, m.signatureDefs, m.metadata = [one], buffers, [], []
    m.metadataBuffer = []
    builder = flatbuffers.Builder(0)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())
