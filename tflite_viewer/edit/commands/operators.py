"""Operator edits: op version, exposing a tensor as a model output, removing an operator."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...model import dtypes
from ...model.errors import EditError
from ...schema import schema_generated as S
from ..op_version import builtin_name, op_required_version
from ..patch import FieldTarget
from ..shapes import operators_touching
from ..splice import VectorShrink
from ..tree import ModelTree, text
from ..values import coerce_int
from .base import (
    EditCommand,
    Scope,
    buffer_data,
    lookup_operator,
    lookup_tensor,
    utf8_name,
)

# -- operators -------------------------------------------------------------------------------

class SetOpVersion(EditCommand):
    """Set the version of an operator's code (shared by every operator using that code)."""

    def __init__(self, subgraph: int, operator: int, version: int) -> None:
        super().__init__()
        self.subgraph, self.operator, self.version = subgraph, operator, version
        self._code: Any = None
        self._old = 0
        self._new = 0
        self.description = f"Set version of subgraphs[{subgraph}].operators[{operator}] to {version}"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, {self.operator})

    def _check(self, tree: ModelTree) -> None:
        sg, op = lookup_operator(tree, self.subgraph, self.operator)
        where = f"subgraphs[{self.subgraph}].operators[{self.operator}].version"
        v = coerce_int(self.version, where, "Int")
        if v < 1:
            raise EditError(f"{where}: versions start at 1, got {v}")
        self._new = v
        self._code = tree.model.operatorCodes[op.opcodeIndex]
        self._code_index = int(op.opcodeIndex)
        name = builtin_name(tree.model, op)
        need = op_required_version(tree.model, sg, op)
        if need is not None and v < need:
            self.warnings.append(f"{name} here needs at least version {need}; version {v} "
                                 "selects a kernel that may not handle it")
        sharing = sum(1 for s in tree.model.subgraphs for o in s.operators or []
                      if o.opcodeIndex == op.opcodeIndex) - 1
        if sharing:
            self.warnings.append(f"operator_codes[{op.opcodeIndex}] is shared: the version of "
                                 f"{sharing} other {name} operator(s) changes too")
        self.description = f"Set version of {name} (operator_codes[{op.opcodeIndex}]) to {v}"

    def _do(self, tree: ModelTree) -> None:
        self._old = self._code.version
        self._code.version = self._new

    def targets(self, tree: ModelTree) -> list[FieldTarget] | None:
        return [FieldTarget((("operator_codes", self._code_index),), "tflite.OperatorCode",
                            "version", self._code.version, owner=self._code)]

    def _undo(self, tree: ModelTree) -> None:
        self._code.version = self._old


class ExposeTensor(EditCommand):
    """Make an intermediate tensor a subgraph output (and an output of its signatures)."""
    changes_op_signatures = False  # subgraph outputs are not part of an op signature


    def __init__(self, subgraph: int, tensor: int, name: str | None = None,
                 signatures: bool = True) -> None:
        super().__init__()
        self.subgraph, self.tensor, self.name, self.signatures = subgraph, tensor, name, signatures
        self._sg: Any = None
        self._old_outputs: Any = None
        self._sig_old: list = []
        self._sig_name = ""
        self.description = f"Expose subgraphs[{subgraph}].tensors[{tensor}] as an output"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, tensors={self.tensor}, structural=True)

    def _check(self, tree: ModelTree) -> None:
        sg, t = lookup_tensor(tree, self.subgraph, self.tensor)
        outs = [int(i) for i in sg.outputs] if sg.outputs is not None else []
        if self.tensor in outs:
            raise EditError(f"subgraphs[{self.subgraph}].tensors[{self.tensor}] "
                            f"({text(t.name)!r}) is already an output")
        if buffer_data(tree, t) is not None and buffer_data(tree, t).size:
            self.warnings.append(f"tensor {text(t.name)!r} is a constant")
        self._sg = sg
        if self.name is not None:
            utf8_name(self.name, "an output name")
        base = self.name or text(t.name) or f"tensor_{self.tensor}"
        self._sig_name = base
        self.description = f"Expose tensor {text(t.name)!r} as an output of subgraph {self.subgraph}"

    def _do(self, tree: ModelTree) -> None:
        sg = self._sg
        self._old_outputs = sg.outputs
        outs = [int(i) for i in sg.outputs] if sg.outputs is not None else []
        sg.outputs = np.asarray(outs + [self.tensor], dtype=np.int32)
        self._sig_old = []
        if not self.signatures:
            return
        for sig in tree.model.signatureDefs or []:
            if sig.subgraphIndex != self.subgraph:
                continue
            names = {text(m.name) for m in sig.outputs or []}
            name, k = self._sig_name, 1
            while name in names:
                name, k = f"{self._sig_name}_{k}", k + 1
            tm = S.TensorMapT()
            tm.name = name.encode("utf-8")
            tm.tensorIndex = self.tensor
            self._sig_old.append((sig, sig.outputs))
            sig.outputs = list(sig.outputs or []) + [tm]

    def _undo(self, tree: ModelTree) -> None:
        self._sg.outputs = self._old_outputs
        for sig, old in reversed(self._sig_old):
            sig.outputs = old

    def targets(self, tree: ModelTree) -> list | None:
        out: list = [FieldTarget((("subgraphs", self.subgraph),), "tflite.SubGraph", "outputs",
                                 self._sg.outputs, owner=self._sg)]
        sigs = tree.model.signatureDefs or []
        for sig, _old in self._sig_old:
            k = next(i for i, s in enumerate(sigs) if s is sig)
            out.append(FieldTarget((("signature_defs", k),), "tflite.SignatureDef", "outputs",
                                   list(sig.outputs), owner=sig))
        return out


class RemoveOperator(EditCommand):
    """Remove an operator whose (first) input and output have the same shape and type,
    handing its output's consumers, subgraph outputs and signature outputs its input."""

    def __init__(self, subgraph: int, operator: int) -> None:
        super().__init__()
        self.subgraph, self.operator = subgraph, operator
        self._sg: Any = None
        self._op: Any = None
        self._src = self._dst = -1
        self._saved: list = []
        self.description = f"Remove subgraphs[{subgraph}].operators[{operator}]"

    def scope(self, tree: ModelTree) -> Scope:
        sg = tree.model.subgraphs[self.subgraph] if 0 <= self.subgraph < len(
            tree.model.subgraphs or []) else None
        ops = sg.operators if sg is not None else []
        tensors: set[int] = set()
        if 0 <= self.operator < len(ops or []):
            op = ops[self.operator]
            tensors = {int(i) for i in op.outputs if i >= 0} if op.outputs is not None else set()
        return Scope(self.subgraph, {self.operator}, tensors, structural=True)

    def _check(self, tree: ModelTree) -> None:
        sg, op = lookup_operator(tree, self.subgraph, self.operator)
        where = f"subgraphs[{self.subgraph}].operators[{self.operator}]"
        name = builtin_name(tree.model, op)
        ins = [int(i) for i in op.inputs] if op.inputs is not None else []
        outs = [int(i) for i in op.outputs] if op.outputs is not None else []
        if len(outs) != 1 or not ins or ins[0] < 0:
            raise EditError(f"{where}: only an operator with one input tensor and one output "
                            f"can be removed ({name} has {len(ins)} inputs, {len(outs)} outputs)")
        a, b = sg.tensors[ins[0]], sg.tensors[outs[0]]
        sa = [int(d) for d in a.shape] if a.shape is not None else []
        sb = [int(d) for d in b.shape] if b.shape is not None else []
        if sa != sb or a.type != b.type:
            raise EditError(f"{where}: {name} changes its input ({dtypes.type_name(a.type)}"
                            f"{sa}) into a different output ({dtypes.type_name(b.type)}{sb}); "
                            "removing it would break the graph")
        if _quant_key(a) != _quant_key(b):
            self.warnings.append(f"{name}'s input and output are quantized differently: "
                                 "consumers now see the input's scale and zero point")
        for other in ins[1:]:
            if other >= 0 and buffer_data(tree, sg.tensors[other]) is None:
                self.warnings.append(f"{name}'s input {other} ({text(sg.tensors[other].name)!r}) "
                                     "is not a constant and is no longer used")
        self._sg, self._op = sg, op
        self._src, self._dst = ins[0], outs[0]
        self.description = f"Remove {name} (subgraphs[{self.subgraph}].operators[{self.operator}])"

    def _do(self, tree: ModelTree) -> None:
        sg, src, dst = self._sg, self._src, self._dst
        saved = [("operators", sg.operators)]
        ops = list(sg.operators)
        del ops[self.operator]
        sg.operators = ops
        for k in operators_touching(ops, dst, ("inputs",)):
            op = ops[k]  # its index before the removal goes with it (for `targets`)
            saved.append(("op_inputs", op, op.inputs, k + (k >= self.operator)))
            op.inputs = np.where(np.asarray(op.inputs) == dst, src,
                                 np.asarray(op.inputs)).astype(np.int32)
        if sg.outputs is not None and dst in {int(i) for i in sg.outputs}:
            saved.append(("sg_outputs", sg.outputs))
            sg.outputs = np.where(np.asarray(sg.outputs) == dst, src,
                                  np.asarray(sg.outputs)).astype(np.int32)
        for sig in tree.model.signatureDefs or []:
            if sig.subgraphIndex != self.subgraph:
                continue
            for tm in sig.outputs or []:
                if tm.tensorIndex == dst:
                    saved.append(("sig", tm, tm.tensorIndex))
                    tm.tensorIndex = src
        self._saved = saved

    def targets(self, tree: ModelTree) -> list | None:
        """Written in the state before the removal: operator paths use the old indices."""
        s, removed = self.subgraph, self.operator
        n_old = len(self._saved[0][1])
        out: list = [VectorShrink((("subgraphs", s),), "tflite.SubGraph", "operators",
                                  tuple(k for k in range(n_old) if k != removed))]
        sigs = tree.model.signatureDefs or []
        for entry in self._saved[1:]:
            kind = entry[0]
            if kind == "op_inputs":
                op, k = entry[1], entry[3]
                out.append(FieldTarget((("subgraphs", s), ("operators", k)),
                                       "tflite.Operator", "inputs", op.inputs, owner=op))
            elif kind == "sg_outputs":
                out.append(FieldTarget((("subgraphs", s),), "tflite.SubGraph", "outputs",
                                       self._sg.outputs, owner=self._sg))
            elif kind == "sig":
                tm = entry[1]
                where = next(((i, j) for i, sig in enumerate(sigs)
                              for j, m in enumerate(sig.outputs or []) if m is tm), None)
                if where is None:
                    return None
                out.append(FieldTarget((("signature_defs", where[0]), ("outputs", where[1])),
                                       "tflite.TensorMap", "tensor_index", tm.tensorIndex,
                                       owner=tm))
        return out

    def _undo(self, tree: ModelTree) -> None:
        for entry in reversed(self._saved):
            kind = entry[0]
            if kind == "operators":
                self._sg.operators = entry[1]
            elif kind == "op_inputs":
                entry[1].inputs = entry[2]
            elif kind == "sg_outputs":
                self._sg.outputs = entry[1]
            elif kind == "sig":
                entry[1].tensorIndex = entry[2]


def _quant_key(t) -> tuple:
    q = t.quantization
    if q is None or q.scale is None:
        return ()
    zp = [] if q.zeroPoint is None else [int(z) for z in q.zeroPoint]
    return (tuple(float(s) for s in q.scale), tuple(zp), int(q.quantizedDimension))
