"""What the memory planners need to know about a model, read once as plain lists.

The planners run on 20,000-operator models and are re-run by the reorder search, so they
work on columns (`Subgraph.columns`, `Subgraph.tensor_columns`) rather than on one view
object per operator.  An operator order other than the file's can be given per subgraph:
TFLite Micro and LiteRT both execute operators in the order the file lists them, so a
permutation here is exactly what a re-serialized model would do.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..model import Model
from ..model.opcodes import BUILTIN_CODES, CUSTOM

IF, WHILE, CALL_ONCE = BUILTIN_CODES["IF"], BUILTIN_CODES["WHILE"], BUILTIN_CODES["CALL_ONCE"]


@dataclass
class MemorySubgraphFacts:
    """One subgraph: its tensors' descriptions and its operators in execution order."""

    index: int
    names: list[str]
    types: list[int]
    shapes: list[tuple[int, ...]]
    is_variable: list[bool]
    has_data: list[bool]          # an inline buffer with bytes (what TFLM maps read-only)
    has_any_data: list[bool]      # inline or offset-layout bytes (what LiteRT maps)
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    op_codes: list[int]           # builtin code per operator (CUSTOM for custom ops)
    op_custom: list[str | None]
    op_inputs: list[list[int]]
    op_outputs: list[list[int]]
    op_intermediates: dict[int, list[int]] = field(default_factory=dict)  # only ops that have any
    calls: dict[int, list[int]] = field(default_factory=dict)  # op -> subgraphs it runs, in order
    original: list[int] = field(default_factory=list)  # file index of each operator here

    @property
    def n_ops(self) -> int:
        return len(self.op_codes)

    @property
    def n_tensors(self) -> int:
        return len(self.types)

    def reordered(self, order: list[int]) -> "MemorySubgraphFacts":
        """The same subgraph with its operators executed in ``order`` (file indices)."""
        pos = {k: i for i, k in enumerate(self.original)}
        take = [pos[k] for k in order]
        return MemorySubgraphFacts(
            self.index, self.names, self.types, self.shapes, self.is_variable, self.has_data,
            self.has_any_data, self.inputs, self.outputs,
            [self.op_codes[i] for i in take], [self.op_custom[i] for i in take],
            [self.op_inputs[i] for i in take], [self.op_outputs[i] for i in take],
            {j: self.op_intermediates[i] for j, i in enumerate(take) if i in self.op_intermediates},
            {j: self.calls[i] for j, i in enumerate(take) if i in self.calls},
            [self.original[i] for i in take])


@dataclass
class MemoryFacts:
    """Every subgraph of a model, plus the model itself for the few ops read in detail."""

    model: Model
    subgraphs: list[MemorySubgraphFacts]
    offset_buffers: bool  # some buffer lives after the flatbuffer (> 2 GB layout)

    def with_order(self, subgraph: int, order: list[int]) -> "MemoryFacts":
        subs = list(self.subgraphs)
        subs[subgraph] = subs[subgraph].reordered(order)
        return MemoryFacts(self.model, subs, self.offset_buffers)

    @cached_property
    def total_tensors(self) -> int:
        return sum(sg.n_tensors for sg in self.subgraphs)


def _called(op) -> list[int]:
    """The subgraphs a control-flow operator runs, in the order TFLM plans them."""
    opts = op.builtin_options
    code = op.builtin_code
    if code == IF:
        keys = ("then_subgraph_index", "else_subgraph_index")
    elif code == WHILE:
        keys = ("cond_subgraph_index", "body_subgraph_index")
    elif code == CALL_ONCE:
        keys = ("init_subgraph_index",)
    else:
        return []
    return [int(opts[k]) for k in keys if opts.get(k) is not None]


def read_facts(model: Model) -> MemoryFacts:
    """The planners' view of ``model`` (columns, so large models read in milliseconds)."""
    index = model.index
    buffers = index.table("tflite.Buffer")
    inline = np.zeros(len(model.buffers), dtype=np.int64)
    inline[buffers.index] = index.lengths(buffers, "data")
    any_bytes = model.buffer_sizes
    offset_buffers = bool((any_bytes > inline).any())
    codes = [c.builtin_code for c in model.operator_codes]
    customs = [c.custom_code if c.builtin_code == CUSTOM else None for c in model.operator_codes]
    subs = []
    for sg in model.subgraphs:
        cols = sg.columns
        tcols = sg.tensor_columns
        buf = tcols.buffer
        valid = (buf >= 0) & (buf < inline.size)
        has = np.zeros(buf.size, dtype=bool)
        has[valid] = inline[buf[valid]] > 0
        has_any = np.zeros(buf.size, dtype=bool)
        has_any[valid] = any_bytes[buf[valid]] > 0
        opcode = cols.opcode_index.tolist()
        ins, in_off = cols.inputs.tolist(), cols.input_offsets.tolist()
        outs, out_off = cols.outputs.tolist(), cols.output_offsets.tolist()
        n = len(opcode)
        op_codes = [codes[c] if 0 <= c < len(codes) else -1 for c in opcode]
        facts = MemorySubgraphFacts(
            sg.index, tcols.name, tcols.type.tolist(), tcols.shape,
            tcols.is_variable.tolist(), has.tolist(), has_any.tolist(), sg.inputs, sg.outputs,
            op_codes, [customs[c] if 0 <= c < len(customs) else None for c in opcode],
            [ins[in_off[k]:in_off[k + 1]] for k in range(n)],
            [outs[out_off[k]:out_off[k + 1]] for k in range(n)],
            original=list(range(n)))
        for k, code in enumerate(op_codes):
            if code in (IF, WHILE, CALL_ONCE):
                facts.calls[k] = _called(sg.operators[k])
        _intermediates(sg, facts)
        subs.append(facts)
    return MemoryFacts(model, subs, offset_buffers)


def _intermediates(sg, facts: MemorySubgraphFacts) -> None:
    """Operators' intermediates (LSTM's), which TFLM requires to be empty."""
    index = sg.model.index
    ops = index.table("tflite.Operator")
    lengths = index.lengths(ops, "intermediates")
    rows = np.flatnonzero((ops.parent == sg.index) & (lengths > 0))
    for row in rows.tolist():
        k = int(ops.index[row])
        facts.op_intermediates[k] = list(sg.operators[k].intermediates)
