"""One operator of a quantized model, rebuilt as a float model of that op alone.

The per-layer fallback computes a quantized op in float: its activations dequantized, its
weights in float (the float model's own when paired, else dequantized), the float kernel of
this project's interpreter.  The op is copied with the schema's object API (options,
version and all) into a one-op model whose real-valued tensors are FLOAT32 without
quantization; integer tensors that are not quantized (shapes, axes, paddings) stay as they
are.  `FloatOp.run` takes the op's non-constant inputs as real values and returns its
outputs as real values.
"""
from __future__ import annotations

from typing import Sequence

import flatbuffers
import numpy as np

from ..interpreter import Interpreter
from ..model import Model
from ..schema import schema_generated as S
from .pairing import is_real
from .ranges import dequantize


class FloatOp:
    """A quantized model's op ``index`` of ``subgraph`` as a runnable float op."""

    def __init__(self, model: Model, index: int, float_weights: dict[int, np.ndarray] | None = None,
                 root: S.Model | None = None, subgraph: int = 0) -> None:
        sg = model.subgraphs[subgraph]
        op = sg.operators[index]
        self.index = index
        self.subgraph = subgraph
        self.inputs = [i for i in op.inputs if i >= 0 and not sg.tensors[i].is_constant]
        self.outputs = [o for o in op.outputs if o >= 0]
        if root is None:
            root = S.Model.GetRootAs(bytes(np.asarray(model.data, dtype=np.uint8)), 0)
        fb_op = root.Subgraphs(subgraph).Operators(index)
        op_t = S.OperatorT.InitFromObj(fb_op)
        code_t = S.OperatorCodeT.InitFromObj(root.OperatorCodes(fb_op.OpcodeIndex()))
        m = S.ModelT()
        m.version = 3
        m.buffers = [S.BufferT()]
        m.operatorCodes = [code_t]
        g = S.SubGraphT()
        g.name = "main"
        g.tensors, g.inputs, g.outputs = [], [], []
        local: dict[int, int] = {}
        weights = float_weights or {}

        def add(i: int) -> int:
            if i in local:
                return local[i]
            t = sg.tensors[i]
            tt = S.TensorT()
            tt.name = f"t{i}"
            tt.shape = [int(d) for d in t.shape]
            real = is_real(t)
            tt.type = S.TensorType.FLOAT32 if real else t.type
            tt.buffer = 0
            if t.is_constant:
                if real:
                    values = weights.get(i)
                    if values is None:
                        v = t.values()
                        values = dequantize(v, t.quantization) if v.dtype.kind in "iu" else v
                    data = np.ascontiguousarray(values, dtype=np.float32).tobytes()
                else:
                    data = np.ascontiguousarray(t.values()).tobytes()
                buf = S.BufferT()
                buf.data = np.frombuffer(data, dtype=np.uint8)
                m.buffers.append(buf)
                tt.buffer = len(m.buffers) - 1
            g.tensors.append(tt)
            local[i] = len(g.tensors) - 1
            return local[i]

        op_t.inputs = [add(i) if i >= 0 else -1 for i in op.inputs]
        op_t.outputs = [add(o) if o >= 0 else -1 for o in op.outputs]
        op_t.intermediates = []
        op_t.opcodeIndex = 0
        g.inputs = [local[i] for i in self.inputs]
        g.outputs = [local[o] for o in self.outputs]
        g.operators = [op_t]
        m.subgraphs = [g]
        builder = flatbuffers.Builder(0)
        builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
        self.model_bytes = bytes(builder.Output())
        self.interpreter = Interpreter(self.model_bytes)

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The op's outputs (real values) on its non-constant inputs (real values)."""
        interp = self.interpreter
        sg0 = interp.subgraphs[0]
        arrays = []
        for k, a in zip(sg0.inputs, inputs):
            t = sg0.tensors[k]
            arrays.append(np.asarray(a).astype(t.dtype) if t.dtype is not None else a)
        interp.invoke(arrays)
        return [sg0.tensors[o].data for o in sg0.outputs]
