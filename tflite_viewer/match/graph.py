"""One subgraph as plain Python lists, the form the matcher walks.

The matcher visits every operator and tensor of both models a few times; on a
20,000-operator model, building an `Operator` or `Tensor` view for each would cost about a
second, so everything here comes from the reader's columns (`Subgraph.columns`,
`Subgraph.tensor_columns`, `Subgraph.constant_mask`) in a few milliseconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..model import Model
from ..model import dtypes

#: ops that carry their input's values into another type: the converter inserts them
#: around quantized parts of a model (QUANTIZE, DEQUANTIZE), and a float16 model reads
#: every weight through one (DEQUANTIZE of a FLOAT16 constant)
VALUE_PRESERVING = frozenset({"QUANTIZE", "DEQUANTIZE"})
#: the activation ops a fused_activation_function stands for (the converter fuses them
#: into the op before; a model converted without fusion keeps them apart)
ACTIVATION_OPS = {"RELU": "RELU", "RELU6": "RELU6", "RELU_N1_TO_1": "RELU_N1_TO_1",
                  "RELU_0_TO_1": "RELU_0_TO_1", "TANH": "TANH", "SIGN_BIT": "SIGN_BIT"}


@dataclass
class SideGraph:
    """Operators and tensors of one subgraph of one model, indexed by position."""

    model: Model
    subgraph: int
    opcode: list[str]                   # op -> "CONV_2D" (custom code for custom ops)
    opcode_index: list[int]             # op -> index into model.operator_codes
    inputs: list[tuple[int, ...]]       # op -> input tensors (-1: omitted)
    outputs: list[tuple[int, ...]]      # op -> output tensors
    fused: dict[int, str]               # op -> fused activation, for ops that have one
    names: list[str]                    # tensor -> name
    types: list[int]                    # tensor -> TensorType
    shapes: list[tuple[int, ...]]       # tensor -> shape
    constant: list[bool]                # tensor -> holds data in the file
    variable: list[bool]                # tensor -> is_variable
    buffer: list[int]                   # tensor -> buffer index
    graph_inputs: tuple[int, ...]
    graph_outputs: tuple[int, ...]

    @classmethod
    def of(cls, model: Model, subgraph: int) -> "SideGraph":
        sg = model.subgraphs[subgraph]
        cols, tcols = sg.columns, sg.tensor_columns
        codes = [c.name for c in model.operator_codes]
        code_idx = cols.opcode_index.tolist()
        opcode = [codes[k] if 0 <= k < len(codes) else f"opcode {k}" for k in code_idx]
        ins, in_off = cols.inputs.tolist(), cols.input_offsets.tolist()
        outs, out_off = cols.outputs.tolist(), cols.output_offsets.tolist()
        n = len(code_idx)
        return cls(model, subgraph, opcode, code_idx,
                   [tuple(ins[in_off[k]:in_off[k + 1]]) for k in range(n)],
                   [tuple(outs[out_off[k]:out_off[k + 1]]) for k in range(n)],
                   dict(cols.fused_activation), list(tcols.name), tcols.type.tolist(),
                   list(tcols.shape), sg.constant_mask.tolist(), tcols.is_variable.tolist(),
                   tcols.buffer.tolist(), tuple(sg.inputs), tuple(sg.outputs))

    @property
    def n_ops(self) -> int:
        return len(self.opcode)

    @property
    def n_tensors(self) -> int:
        return len(self.names)

    @cached_property
    def producer(self) -> list[int]:
        """tensor -> the op that writes it (-1: none; the last writer if several)."""
        out = [-1] * self.n_tensors
        for k, outs in enumerate(self.outputs):
            for t in outs:
                if 0 <= t < len(out):
                    out[t] = k
        return out

    @cached_property
    def consumers(self) -> list[list[tuple[int, int]]]:
        """tensor -> [(op, input position), ...] in execution order."""
        out: list[list[tuple[int, int]]] = [[] for _ in range(self.n_tensors)]
        for k, ins in enumerate(self.inputs):
            for pos, t in enumerate(ins):
                if 0 <= t < len(out):
                    out[t].append((k, pos))
        return out

    @cached_property
    def kinds(self) -> list[str]:
        """tensor -> "constant", "variable", "widened" (a constant a QUANTIZE/DEQUANTIZE
        turns into another type at run time: a float16 model's weights) or "activation".
        Tensors are matched only with tensors of their kind."""
        out = []
        producer, opcode, inputs, constant = self.producer, self.opcode, self.inputs, \
            self.constant
        for t in range(self.n_tensors):
            if self.variable[t]:
                out.append("variable")
            elif constant[t]:
                out.append("constant")
            else:
                p = producer[t]
                widened = p >= 0 and opcode[p] in VALUE_PRESERVING and bool(inputs[p]) and \
                    0 <= inputs[p][0] < len(constant) and constant[inputs[p][0]]
                out.append("widened" if widened else "activation")
        return out

    def kind(self, t: int) -> str:
        return self.kinds[t]

    def constant_bytes(self, t: int) -> bytes | None:
        """A constant's stored bytes (None when it has no buffer of its own here)."""
        buf = self.buffer[t]
        bufs = self.model.buffers
        if not 0 < buf < len(bufs):
            return None
        return bufs[buf].data.tobytes()

    def type_name(self, t: int) -> str:
        return dtypes.type_name(self.types[t])

    def valid(self, t: int) -> bool:
        return 0 <= t < len(self.names)

    def describe_op(self, k: int) -> str:
        return f"op {k} {self.opcode[k]}"

    def describe_tensor(self, t: int) -> str:
        return f"tensor {t} {self.names[t]!r}"
