"""What is selected in the window, as a value that survives edits (no Qt).

A selection names an operator or a tensor of the shown subgraph.  Tensor indices never
shift under an edit; operator indices do (removing an operator, or undoing that, moves the
ones after it), so an operator selection also remembers the tensors the operator produces
and `resolve` finds it again in the edited model by them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from ...model import Model, Subgraph, Tensor

OP = "op"
TENSOR = "tensor"


@dataclass(frozen=True)
class Selection:
    """An operator (``kind == "op"``) or a tensor of one subgraph.

    It unpacks, indexes and compares like the ``("op", n)`` pair the window used to keep,
    so code written as ``kind, n = window.selection`` or ``== ("tensor", 3)`` keeps working.
    """

    kind: str
    index: int
    # what identifies the operator after an edit: the tensors it produces (not compared)
    outputs: tuple[int, ...] = field(default=(), compare=False)
    #: an operator or tensor of another subgraph drawn inline on the canvas (a composite's
    #: decomposition, composites expanded); None: of the shown subgraph
    subgraph: int | None = field(default=None, compare=False)

    @classmethod
    def op(cls, subgraph: Subgraph, k: int) -> Selection:
        ops = subgraph.operators
        return cls(OP, int(k), tuple(int(t) for t in ops[k].outputs) if 0 <= k < len(ops) else ())

    @classmethod
    def tensor(cls, t: int) -> Selection:
        return cls(TENSOR, int(t))

    @property
    def is_op(self) -> bool:
        return self.kind == OP

    @property
    def is_tensor(self) -> bool:
        return self.kind == TENSOR

    def __iter__(self) -> Iterator:
        return iter((self.kind, self.index))

    def __getitem__(self, i: int):
        return (self.kind, self.index)[i]

    def __len__(self) -> int:
        return 2

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Selection):
            return (self.kind, self.index) == (other.kind, other.index)
        if isinstance(other, tuple):
            return (self.kind, self.index) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.kind, self.index))

    def resolve(self, subgraph: Subgraph) -> Selection | None:
        """The same object in ``subgraph`` of an edited model, or None when it is gone."""
        if self.kind == TENSOR:
            return self if self.index < len(subgraph.tensors) else None
        k = find_op(subgraph, self.index, self.outputs)
        return None if k is None else Selection.op(subgraph, k)


def find_op(sg: Subgraph, n: int, outs: tuple) -> int | None:
    """The operator of ``sg`` that produces exactly ``outs`` (the one at ``n`` when it has
    no outputs to go by)."""
    ops = sg.operators
    real = [t for t in outs if t >= 0]
    if not real:
        return n if n < len(ops) else None
    if n < len(ops) and tuple(ops[n].outputs) == tuple(outs):
        return n
    producers, _ = producers_consumers(sg.tensors[real[0]]) if real[0] < len(sg.tensors) else ([], [])
    for k in producers:
        if tuple(ops[k].outputs) == tuple(outs):
            return k
    return None


def producers_consumers(tensor: Tensor) -> tuple[list[int], list[int]]:
    """Operators of the tensor's subgraph that write it and that read it."""
    cols = tensor.subgraph.columns
    t = tensor.index

    def owners(values: np.ndarray, offsets: np.ndarray) -> list[int]:
        pos = np.flatnonzero(values == t)
        return sorted(set((np.searchsorted(offsets, pos, side="right") - 1).tolist()))

    return owners(cols.outputs, cols.output_offsets), owners(cols.inputs, cols.input_offsets)


def parse_spec(model: Model, subgraph: int, spec: str) -> Selection:
    """``op:N`` or ``tensor:N`` (the --select argument) checked against the subgraph;
    ValueError with a message for the command line otherwise."""
    kind, _, value = spec.partition(":")
    if kind not in (OP, TENSOR) or not value.strip().isdigit():
        raise ValueError(f"--select {spec!r}: use op:N or tensor:N")
    n = int(value)
    sg = model.subgraphs[subgraph]
    limit = len(sg.operators) if kind == OP else len(sg.tensors)
    if n >= limit:
        raise ValueError(f"--select {spec}: the subgraph has {limit} {'operators' if kind == OP else 'tensors'}")
    return Selection.op(sg, n) if kind == OP else Selection.tensor(n)


def find_tensor(model: Model, subgraph: int, name: str) -> int:
    """A tensor of ``subgraph`` by index, by a signature's input or output name, or by its
    own name (the --watch argument); ValueError with a message for the command line."""
    sg = model.subgraphs[subgraph]
    text = str(name).strip()
    if text.isdigit() and int(text) < len(sg.tensors):
        return int(text)
    for sig in model.signature_defs:
        if sig.subgraph_index == subgraph:
            for m in (*sig.inputs, *sig.outputs):
                if m.name == text:
                    return m.tensor_index
    hits = [t.index for t in sg.tensors if t.name == text]
    if hits:
        return hits[0]
    raise ValueError(f"--watch {name}: subgraph {subgraph} ({sg.display_name}) has no tensor "
                     f"of that index or name")
