"""One operator of a quantized model, rebuilt as a float model of that op alone.

The per-layer fallback computes a quantized op in float: its activations dequantized, its
weights in float (the float model's own when paired, else dequantized), the float kernel of
this project's interpreter.  The op is copied with the schema's object API (options,
version and all) into a one-op model whose real-valued tensors are FLOAT32 without
quantization; integer tensors that are not quantized (shapes, axes, paddings) stay as they
are.  `FloatOp.run` takes the op's non-constant inputs as real values and returns its
outputs as real values.  `float_ops` builds the ops of an analysis together, as the
subgraphs (and signatures) of one model.
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


def _op_subgraph(model: Model, subgraph: int, index: int, root: S.Model, m: S.ModelT,
                 float_weights: dict[int, np.ndarray] | None) -> tuple[S.SubGraphT, list, list]:
    """The op as a subgraph of ``m`` (its opcode and constant buffers appended to m's):
    (the subgraph, the op's non-constant inputs, its outputs), as tensor indices of the
    quantized model."""
    sg = model.subgraphs[subgraph]
    op = sg.operators[index]
    inputs = [i for i in op.inputs if i >= 0 and not sg.tensors[i].is_constant]
    outputs = [o for o in op.outputs if o >= 0]
    fb_op = root.Subgraphs(subgraph).Operators(index)
    op_t = S.OperatorT.InitFromObj(fb_op)
    m.operatorCodes.append(S.OperatorCodeT.InitFromObj(root.OperatorCodes(fb_op.OpcodeIndex())))
    g = S.SubGraphT()
    g.name = f"op{subgraph}_{index}"
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
    op_t.opcodeIndex = len(m.operatorCodes) - 1
    g.inputs = [local[i] for i in inputs]
    g.outputs = [local[o] for o in outputs]
    g.operators = [op_t]
    return g, inputs, outputs


def _new_model() -> S.ModelT:
    m = S.ModelT()
    m.version = 3
    m.buffers = [S.BufferT()]
    m.operatorCodes = []
    m.subgraphs = []
    m.signatureDefs = []
    return m


def _finish(m: S.ModelT) -> bytes:
    builder = flatbuffers.Builder(0)
    builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _root(model: Model) -> S.Model:
    return S.Model.GetRootAs(bytes(np.asarray(model.data, dtype=np.uint8)), 0)


class FloatOp:
    """A quantized model's op ``index`` of ``subgraph`` as a runnable float op: the one
    subgraph of a model of its own (or, through `float_ops`, one subgraph of a model that
    holds many ops, each its own signature)."""

    def __init__(self, model: Model, index: int, float_weights: dict[int, np.ndarray] | None = None,
                 root: S.Model | None = None, subgraph: int = 0, float_sums: str = "auto"
                 ) -> None:
        m = _new_model()
        g, self.inputs, self.outputs = _op_subgraph(
            model, subgraph, index, root if root is not None else _root(model), m,
            float_weights)
        g.name = "main"
        m.subgraphs = [g]
        self.index = index
        self.subgraph = subgraph
        self.model_bytes = _finish(m)
        self.interpreter = Interpreter(self.model_bytes, float_sums=float_sums)
        self.signature: str | None = None
        self._sg = 0

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The op's outputs (real values) on its non-constant inputs (real values)."""
        interp = self.interpreter
        sg = interp.subgraphs[self._sg]
        arrays = []
        for k, a in zip(sg.inputs, inputs):
            t = sg.tensors[k]
            arrays.append(np.asarray(a).astype(t.dtype) if t.dtype is not None else a)
        if self._invoke_node(sg, arrays):
            return [sg.tensors[o].data for o in sg.outputs]
        if self.signature is not None:  # a signature takes its inputs by name (`float_ops`)
            interp.invoke({f"i{j}": a for j, a in enumerate(arrays)}, signature=self.signature)
        else:
            interp.invoke(arrays)
        return [sg.tensors[o].data for o in sg.outputs]

    @staticmethod
    def _invoke_node(sg, arrays: list[np.ndarray]) -> bool:
        """The op's kernel called directly when its node is prepared for these inputs'
        shapes (every run after the first): what the interpreter's invoke of the one-node
        subgraph computes, without its per-run set-up (op statistics and activations of
        all the float ops' subgraphs cleared, the signature looked up), which cost more
        than computing most ops.  False: run it through the interpreter."""
        nodes = sg.plan_nodes
        if len(nodes) != 1:
            return False
        node = nodes[0]
        tensors = sg.tensors
        if node.shapes_dirty or any(tensors[k].shape != a.shape
                                    for k, a in zip(sg.inputs, arrays)):
            return False
        for k, a in zip(sg.inputs, arrays):
            tensors[k].data = a
        with np.errstate(all="ignore"):  # float kernels follow IEEE, as in an invoke
            node.kernel.invoke(sg, node)
        return True


def float_ops(model: Model, ops: Sequence[tuple[int, int]],
              weights: dict[tuple[int, int], dict[int, np.ndarray]], float_sums: str = "auto"
              ) -> dict[tuple[int, int], FloatOp | Exception]:
    """Every op of ``ops`` ((subgraph, op) pairs) as a `FloatOp`, all of them subgraphs of
    one model run by one interpreter (building a model and an interpreter per op costs
    more than computing most ops); where that model cannot be built or loaded, each op on
    its own, so that an op the float kernels refuse is that op's error alone.
    ``weights[op]`` are the float model's values of the op's weights; ``float_sums`` is
    the interpreter's (`interpreter.float_sums`)."""
    out: dict[tuple[int, int], FloatOp | Exception] = {}
    if not ops:
        return out
    root = _root(model)
    try:
        m = _new_model()
        io = {}
        for n, k in enumerate(ops):
            g, ins, outs = _op_subgraph(model, k[0], k[1], root, m, weights.get(k))
            io[k] = (len(m.subgraphs), ins, outs)
            sig = S.SignatureDefT()
            sig.signatureKey = f"op{n}"
            sig.subgraphIndex = len(m.subgraphs)
            sig.inputs = [_tensor_map(f"i{j}", x) for j, x in enumerate(g.inputs)]
            sig.outputs = [_tensor_map(f"o{j}", x) for j, x in enumerate(g.outputs)]
            m.subgraphs.append(g)
            m.signatureDefs.append(sig)
        data = _finish(m)
        interp = Interpreter(data, float_sums=float_sums)
    except Exception:  # noqa: BLE001 - one op the float kernels refuse: build them one by one
        for k in ops:
            try:
                out[k] = FloatOp(model, k[1], weights.get(k), root, subgraph=k[0],
                                 float_sums=float_sums)
            except Exception as exc:  # noqa: BLE001 - reported per op
                out[k] = exc
        return out
    for n, k in enumerate(ops):
        fop = FloatOp.__new__(FloatOp)
        fop.index, fop.subgraph = k[1], k[0]
        fop._sg, fop.inputs, fop.outputs = io[k]
        fop.model_bytes, fop.interpreter, fop.signature = data, interp, f"op{n}"
        out[k] = fop
    return out


def _tensor_map(name: str, index: int) -> S.TensorMapT:
    t = S.TensorMapT()
    t.name, t.tensorIndex = name, index
    return t
