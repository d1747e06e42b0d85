"""Splitting a fused activation out of an operator into an operator of its own.

Delegates fuse only some activations: XNNPACK clamps (RELU, RELU6, RELU_N1_TO_1) and
refuses an operator with a fused TANH, though it runs TANH on its own.  This edit keeps
what the model computes and makes the operator acceptable: the operator writes a new
tensor with no activation, and a new activation operator reads it and writes the original
output, so every reader of the output is untouched.
"""
from __future__ import annotations

import copy
from typing import Any

from ...model.errors import EditError
from ...schema import schema_generated as S
from ..op_version import builtin_name
from ..patch import FieldTarget
from ..splice import VectorGrow
from ..tree import ModelTree, text
from .base import EditCommand, Scope, lookup_operator

# fused activation -> the builtin operator that computes it alone
ACTIVATION_OPS = {S.ActivationFunctionType.RELU: "RELU",
                  S.ActivationFunctionType.RELU6: "RELU6",
                  S.ActivationFunctionType.RELU_N1_TO_1: "RELU_N1_TO_1",
                  S.ActivationFunctionType.TANH: "TANH"}
#: operators whose "fused" activation acts inside a recurrent cell (on the gates or the
#: state), not on the output: splitting it out would change what they compute (LiteRT
#: gives other outputs for trained_lstm.tflite's UNIDIRECTIONAL_SEQUENCE_LSTM)
INTERNAL_ACTIVATION = {"LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM",
                       "RNN", "UNIDIRECTIONAL_SEQUENCE_RNN", "BIDIRECTIONAL_SEQUENCE_RNN",
                       "SVDF"}


class SplitFusedActivation(EditCommand):
    """Move operator N's fused activation into a new operator right after it (float only:
    a quantized operator would need scales for the new intermediate tensor)."""

    def __init__(self, subgraph: int, operator: int) -> None:
        super().__init__()
        self.subgraph, self.operator = subgraph, operator
        self._sg: Any = None
        self._op: Any = None
        self._saved: dict[str, Any] = {}
        self.description = f"Split the fused activation out of subgraphs[{subgraph}]." \
                           f"operators[{operator}]"

    def scope(self, tree: ModelTree) -> Scope:
        return Scope(self.subgraph, {self.operator}, set(), structural=True)

    def _check(self, tree: ModelTree) -> None:
        sg, op = lookup_operator(tree, self.subgraph, self.operator)
        where = f"subgraphs[{self.subgraph}].operators[{self.operator}]"
        name = builtin_name(tree.model, op)
        opts = op.builtinOptions
        act = getattr(opts, "fusedActivationFunction", None)
        if act is None:
            raise EditError(f"{where}: {name} has no fused activation option")
        if name in INTERNAL_ACTIVATION:
            raise EditError(f"{where}: {name}'s activation acts inside its recurrent cell, "
                            "not on its output: it cannot be split out")
        if act not in ACTIVATION_OPS:
            raise EditError(f"{where}: {name}'s fused activation "
                            f"({'NONE' if act == 0 else act}) has no operator of its own")
        outs = [int(i) for i in op.outputs] if op.outputs is not None else []
        if len(outs) != 1 or outs[0] < 0:
            raise EditError(f"{where}: {name} must have exactly one output")
        out = sg.tensors[outs[0]]
        if out.type not in (S.TensorType.FLOAT32, S.TensorType.FLOAT16):
            raise EditError(f"{where}: only a float operator can be split (a quantized one "
                            "would need scales for the new tensor)")
        self._sg, self._op = sg, op
        self._act = ACTIVATION_OPS[act]
        self.description = (f"Split {self._act} out of {name} (operator {self.operator}): "
                            f"{name} writes {text(out.name)!r}/pre_activation")

    def _do(self, tree: ModelTree) -> None:
        sg, op, m = self._sg, self._op, tree.model
        out_index = int(op.outputs[0])
        fresh = copy.copy(sg.tensors[out_index])
        fresh.name = (text(sg.tensors[out_index].name) + "/pre_activation").encode()
        fresh.buffer = 0
        code = getattr(S.BuiltinOperator, self._act)
        codes = list(m.operatorCodes or [])
        found = [i for i, c in enumerate(codes)
                 if max(int(c.builtinCode), int(c.deprecatedBuiltinCode)) == code]
        self._saved = {"codes": m.operatorCodes, "tensors": sg.tensors, "ops": sg.operators,
                       "outputs": op.outputs,
                       "act": op.builtinOptions.fusedActivationFunction}
        if found:
            code_index = found[0]
        else:
            oc = S.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = code, min(code, 127), 1
            codes.append(oc)
            m.operatorCodes = codes
            code_index = len(codes) - 1
        sg.tensors = list(sg.tensors) + [fresh]
        new_index = len(sg.tensors) - 1
        op.outputs = [new_index]
        op.builtinOptions.fusedActivationFunction = S.ActivationFunctionType.NONE
        act_op = S.OperatorT()
        act_op.opcodeIndex = code_index
        act_op.inputs, act_op.outputs = [new_index], [out_index]
        ops = list(sg.operators)
        ops.insert(self.operator + 1, act_op)
        sg.operators = ops

    def targets(self, tree: ModelTree) -> list | None:
        """Written in the state before the split: the operator's output and activation
        in place, the grown ``tensors``, ``operators`` (and ``operator_codes``) vectors
        in a block at the front of the file (`front`), so nothing is re-serialized."""
        s, k, saved = self.subgraph, self.operator, self._saved
        sg, op, opts = self._sg, self._op, self._op.builtinOptions
        where = (("subgraphs", s),)
        n_tensors, n_ops = len(saved["tensors"]), len(saved["ops"])
        out: list = [
            FieldTarget(where + (("operators", k),), "tflite.Operator", "outputs",
                        op.outputs, owner=op),
            FieldTarget(where + (("operators", k), ("builtin_options", None)),
                        "tflite." + type(opts).__name__.removesuffix("T"),
                        "fused_activation_function", opts.fusedActivationFunction,
                        owner=opts),
            VectorGrow(where, "tflite.SubGraph", "tensors",
                       (range(n_tensors), sg.tensors[n_tensors])),
            VectorGrow(where, "tflite.SubGraph", "operators",
                       (range(k + 1), sg.operators[k + 1], range(k + 1, n_ops)))]
        codes = tree.model.operatorCodes or []
        if tree.model.operatorCodes is not saved["codes"]:  # the activation's code added
            n_codes = len(saved["codes"] or [])
            out.append(VectorGrow((), "tflite.Model", "operator_codes",
                                  (range(n_codes), codes[n_codes])))
        return out

    def _undo(self, tree: ModelTree) -> None:
        s = self._saved
        tree.model.operatorCodes = s["codes"]
        self._sg.tensors, self._sg.operators = s["tensors"], s["ops"]
        self._op.outputs = s["outputs"]
        self._op.builtinOptions.fusedActivationFunction = s["act"]
