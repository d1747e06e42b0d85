"""StableHLO control flow: STABLEHLO_COMPOSITE runs its decomposition subgraph and
STABLEHLO_CASE one of its branch subgraphs (an index out of range picks the last branch, as
LiteRT does).  Both are generators over `Interpreter.call_subgraph`, so the debugger steps
into them as into CALL_ONCE, IF and WHILE."""
from __future__ import annotations

import numpy as np

from .common import BuiltinOperator as Op, Kernel, option, register
from .control_flow import _prepare_callee, _set_outputs


def _shape_outputs(ctx, node, shapes) -> None:
    for k, o in enumerate(node.outputs):
        if o < 0:
            continue
        if shapes is not None and k < len(shapes) and shapes[k] is not None:
            ctx.resize(ctx.tensors[o], shapes[k])
        else:
            ctx.set_dynamic(ctx.tensors[o])


def _store(ctx, node, outs) -> None:
    for o, v in zip(node.outputs, outs):
        if o >= 0 and ctx.tensors[o].shape != np.shape(v):
            ctx.set_dynamic(ctx.tensors[o])
    _set_outputs(ctx, node, outs)


@register(Op.STABLEHLO_COMPOSITE, versions=(1, 1))
class StablehloComposite(Kernel):
    """The composite op (``name``, attributes) computed by its decomposition subgraph."""

    types = "any"
    calls_subgraphs = True

    def prepare(self, ctx, node):
        index = int(option(node, "decomposition_subgraph_index", -1))
        shapes = [ctx.tensors[i].shape for i in node.inputs]
        _shape_outputs(ctx, node, _prepare_callee(ctx, index, shapes))

    def invoke(self, ctx, node):
        index = int(option(node, "decomposition_subgraph_index", -1))
        values = [ctx.value(node, k) for k in range(len(node.inputs))]
        outs = yield from ctx.interpreter.call_subgraph(index, values)
        _store(ctx, node, outs)


@register(Op.STABLEHLO_CASE, versions=(1, 1))
class StablehloCase(Kernel):
    """Input 0: an INT32 index choosing a branch; the other inputs go to the branch."""

    types = "any"
    calls_subgraphs = True

    def check(self, ctx, node):
        index = ctx.input(node, 0)
        if index is None or index.type_name != "INT32":
            return f"STABLEHLO_CASE v{node.version}: the branch index must be INT32"
        if not list(option(node, "branch_subgraph_indices", []) or []):
            return f"STABLEHLO_CASE v{node.version} without branches"
        return None

    def prepare(self, ctx, node):
        branches = [int(b) for b in option(node, "branch_subgraph_indices", [])]
        shapes = [ctx.tensors[i].shape for i in node.inputs[1:]]
        results = [_prepare_callee(ctx, b, shapes) for b in branches]
        same = None
        if all(r is not None for r in results):
            same = [r[0] if all(x == r[0] for x in r) else None
                    for r in zip(*results)] if results else None
        _shape_outputs(ctx, node, same)

    def invoke(self, ctx, node):
        branches = [int(b) for b in option(node, "branch_subgraph_indices", [])]
        index = int(np.asarray(ctx.value(node, 0)).reshape(-1)[0])
        if not 0 <= index < len(branches):
            index = len(branches) - 1
        values = [ctx.value(node, k) for k in range(1, len(node.inputs))]
        outs = yield from ctx.interpreter.call_subgraph(branches[index], values)
        _store(ctx, node, outs)
