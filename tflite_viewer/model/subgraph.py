"""Subgraph views."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..schema import schema_generated as S
from ..schema.schema_layout import LAYOUT
from .lazy import LazySequence
from .operator import Operator
from .tensor import Tensor

if TYPE_CHECKING:
    from .model import Model

_EMPTY = np.zeros(0, dtype=np.int32)


def _whole(model: "Model", key: tuple, read):
    """``read()``, a read of one field of every table of a kind (all subgraphs'), made
    once per model: each subgraph takes its own rows of it.  Read per subgraph, a model of
    many subgraphs (the fallback's float ops: one per op) read every tensor's name once
    per subgraph.  The model never changes after it is read, and no caller writes into
    what these reads return."""
    cache = model.__dict__.setdefault("_whole_reads", {})
    if key not in cache:
        cache[key] = read()
    return cache[key]


@dataclass(frozen=True)
class OperatorColumns:
    """Every operator of a subgraph as arrays (CSR for the tensor lists).

    Building 20,000 Operator views costs a second; these arrays come from the verifier's
    columns in milliseconds and are what the graph builder uses on large models.
    """

    opcode_index: np.ndarray
    inputs: np.ndarray
    input_offsets: np.ndarray  # inputs of op k: inputs[input_offsets[k]:input_offsets[k+1]]
    outputs: np.ndarray
    output_offsets: np.ndarray
    options_type: np.ndarray  # BuiltinOptions union tag
    options_2_type: np.ndarray
    fused_activation: dict[int, str]  # op index -> activation, for ops that fuse one

    def op_inputs(self, k: int) -> np.ndarray:
        return self.inputs[self.input_offsets[k]:self.input_offsets[k + 1]]

    def op_outputs(self, k: int) -> np.ndarray:
        return self.outputs[self.output_offsets[k]:self.output_offsets[k + 1]]


@dataclass(frozen=True)
class TensorColumns:
    """Every tensor's description as lists/arrays (see `OperatorColumns` for why)."""

    name: list[str]
    type: np.ndarray
    shape: list[tuple[int, ...]]
    shape_signature: list[tuple[int, ...] | None]
    is_variable: np.ndarray
    buffer: np.ndarray


def _split(values: np.ndarray, owner: np.ndarray, lengths: np.ndarray, rows: np.ndarray,
           present: np.ndarray | None = None) -> list:
    """Per-row tuples of a concatenated vector field, for the given rows in order."""
    starts = np.concatenate([[0], np.cumsum(lengths)])
    flat = values.tolist()
    out = []
    for r in rows.tolist():
        if present is not None and not present[r]:
            out.append(None)
        else:
            out.append(tuple(flat[starts[r]:starts[r + 1]]))
    return out


class Subgraph:
    """A subgraph: its tensors, operators (in execution order), inputs and outputs."""

    def __init__(self, model: "Model", index: int, fb: S.SubGraph) -> None:
        self.model = model
        self.index = index
        self._fb = fb
        self.tensors: LazySequence[Tensor] = LazySequence(
            fb.TensorsLength(), lambda i: Tensor(self, i, fb.Tensors(i)))
        self.operators: LazySequence[Operator] = LazySequence(
            fb.OperatorsLength(), lambda i: Operator(self, i, fb.Operators(i)))
        self._primed = False  # `prime_views` done

    def __repr__(self) -> str:
        return (f"<Subgraph {self.index} {self.name!r}: {len(self.operators)} ops, "
                f"{len(self.tensors)} tensors>")

    @cached_property
    def name(self) -> str:
        raw = self._fb.Name()
        return raw.decode("utf-8", "replace") if raw is not None else ""

    @cached_property
    def inputs(self) -> tuple[int, ...]:
        return tuple(int(i) for i in (self._fb.InputsAsNumpy() if not self._fb.InputsIsNone() else _EMPTY))

    @cached_property
    def outputs(self) -> tuple[int, ...]:
        return tuple(int(i) for i in (self._fb.OutputsAsNumpy() if not self._fb.OutputsIsNone() else _EMPTY))

    @cached_property
    def columns(self) -> OperatorColumns:
        index = self.model.index
        ops = index.table("tflite.Operator")
        mine = ops.parent == self.index
        rows = np.flatnonzero(mine)
        order = rows[np.argsort(ops.index[rows], kind="stable")]

        def csr(field: str) -> tuple[np.ndarray, np.ndarray]:
            values, owner, lengths = _whole(self.model, ("op", field),
                                            lambda: index.vector(ops, field))
            starts = np.cumsum(lengths) - lengths
            sel_len = lengths[order]
            offsets = np.concatenate([[0], np.cumsum(sel_len)]).astype(np.int64)
            take = np.repeat(starts[order], sel_len) + (
                np.arange(int(sel_len.sum())) - np.repeat(offsets[:-1], sel_len))
            return values[take].astype(np.int64), offsets

        ins, in_off = csr("inputs")
        outs, out_off = csr("outputs")
        def scalar(field: str) -> np.ndarray:
            return _whole(self.model, ("op", field), lambda: index.scalar(ops, field))[order]

        return OperatorColumns(scalar("opcode_index").astype(np.int64),
                               ins, in_off, outs, out_off,
                               scalar("builtin_options_type"),
                               scalar("builtin_options_2_type"),
                               _whole(self.model, ("fused activations",),
                                      lambda: _fused_activations(index, ops))
                               .get(self.index, {}))

    def prime_views(self) -> None:
        """Fill what every tensor and operator view reads first (a tensor's name, type,
        shape, shape signature, variable flag and buffer; an operator's opcode index,
        inputs and outputs) from `tensor_columns` and `columns`: a few numpy reads of the
        whole subgraph in place of a flatbuffers call per field and view, which is most of
        building an interpreter on a big model.  The views compute the same values (the
        model is never changed after it is read: an edit reads a new one).  The views
        themselves are made at the tables' positions the verifier found, not through the
        subgraph's vectors.  Once per subgraph: every interpreter of the model calls it."""
        if self._primed:
            return
        index, buf = self.model.index, self._fb._tab.Bytes

        def at(table: str, view: type, fb_type: type):
            batch = index.table(table)
            pos = batch.pos[index.rows_of(batch, self.index)].tolist()

            def make(i: int):
                fb = fb_type()
                fb.Init(buf, pos[i])
                return view(self, i, fb)
            return make

        self.tensors.fill(at("tflite.Tensor", Tensor, S.Tensor))
        self.operators.fill(at("tflite.Operator", Operator, S.Operator))
        cols = self.tensor_columns
        for i, (name, shape, sig, buffer) in enumerate(zip(
                cols.name, cols.shape, cols.shape_signature, cols.buffer.tolist())):
            d = self.tensors[i].__dict__
            if "type" not in d:
                d.update(name=name, type=int(cols.type[i]), shape=shape,
                         shape_signature=sig, is_variable=bool(cols.is_variable[i]),
                         buffer=buffer)
        ops = self.columns
        codes = ops.opcode_index.tolist()
        ins, in_off = ops.inputs.tolist(), ops.input_offsets.tolist()
        outs, out_off = ops.outputs.tolist(), ops.output_offsets.tolist()
        for k in range(len(codes)):
            d = self.operators[k].__dict__
            if "inputs" not in d:
                d.update(opcode_index=codes[k], inputs=tuple(ins[in_off[k]:in_off[k + 1]]),
                         outputs=tuple(outs[out_off[k]:out_off[k + 1]]))
        self._primed = True

    @cached_property
    def tensor_columns(self) -> TensorColumns:
        index = self.model.index
        tensors = index.table("tflite.Tensor")
        rows = index.rows_of(tensors, self.index)
        def read(kind, field: str):
            return _whole(self.model, (kind.__name__, field), lambda: kind(tensors, field))

        names = read(index.strings, "name")
        shape = read(index.vector, "shape")
        sig = read(index.vector, "shape_signature")
        sig_present = tensors.fo.get("shape_signature", np.zeros(len(tensors), np.int64)) != 0
        return TensorColumns(
            [names[r] or "" for r in rows.tolist()],
            _tensor_scalar(self.model, "type")[rows].astype(np.int64),
            _split(shape[0], shape[1], shape[2], rows),
            _split(sig[0], sig[1], sig[2], rows, sig_present),
            _tensor_scalar(self.model, "is_variable")[rows].astype(bool),
            _tensor_scalar(self.model, "buffer")[rows].astype(np.int64))

    @cached_property
    def constant_mask(self) -> np.ndarray:
        """Which tensors hold data in the model (weights, biases, other constants)."""
        index = self.model.index
        tensors = index.table("tflite.Tensor")
        rows = np.flatnonzero(tensors.parent == self.index)
        rows = rows[np.argsort(tensors.index[rows], kind="stable")]
        buf = _tensor_scalar(self.model, "buffer")[rows].astype(np.int64)
        ext = _tensor_scalar(self.model, "external_buffer")[rows]
        sizes = self.model.buffer_sizes
        has = (buf > 0) & (buf < sizes.size)
        out = ext != 0
        out[has] |= sizes[buf[has]] > 0
        # an own but empty buffer: the rare constants that store no byte (few candidates
        # once written tensors are left out; Tensor decides, one rule for both)
        maybe = has & ~out
        maybe[[t for t in self.written_tensors if 0 <= t < maybe.size]] = False
        for t in np.flatnonzero(maybe).tolist():
            out[t] = self.tensors[t].empty_buffer_constant()
        return out

    @cached_property
    def external_buffer_ids(self) -> np.ndarray:
        """Every tensor's ``external_buffer`` id (0: none), in tensor order."""
        index = self.model.index
        tensors = index.table("tflite.Tensor")
        rows = index.rows_of(tensors, self.index)
        return _tensor_scalar(self.model, "external_buffer")[rows].astype(np.int64)

    @cached_property
    def written_tensors(self) -> frozenset[int]:
        """Tensors something writes: the subgraph's inputs and every operator's outputs."""
        return frozenset(self.inputs) | frozenset(self.columns.outputs.tolist())

    @property
    def debug_metadata_index(self) -> int:
        return int(self._fb.DebugMetadataIndex())

    @property
    def display_name(self) -> str:
        """The name, or the signature key that runs it, or `subgraph N`."""
        if self.name:
            return self.name
        for sig in self.model.signature_defs:
            if sig.subgraph_index == self.index:
                return sig.key
        return f"subgraph {self.index}"


def _tensor_scalar(model: "Model", field: str) -> np.ndarray:
    """One scalar field of every tensor of the model (`_whole`), in the verifier's rows."""
    index = model.index
    return _whole(model, ("scalar", field),
                  lambda: index.scalar(index.table("tflite.Tensor"), field))


def _fused_activations(index, ops) -> dict[int, dict[int, str]]:
    """`fused_activation_function` of every options table that has one, vectorized:
    {subgraph: {op index: activation}}."""
    names = LAYOUT["enums"]["tflite.ActivationFunctionType"]["values"]
    out: dict[int, dict[int, str]] = {}
    for type_name, batches in index.batches.items():
        fields = LAYOUT["objects"].get(type_name, {}).get("fields", ())
        if not any(f["name"] == "fused_activation_function" for f in fields):
            continue
        for batch in batches:
            if batch.parent_batch is not ops:
                continue
            act = index.scalar(batch, "fused_activation_function")
            for row, value in zip(batch.parent.tolist(), act.tolist()):
                if value:
                    out.setdefault(int(ops.parent[row]), {})[int(ops.index[row])] = \
                        names.get(value, str(value))
    return out
