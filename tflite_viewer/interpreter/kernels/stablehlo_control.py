"""StableHLO control flow: STABLEHLO_COMPOSITE runs its decomposition subgraph and
STABLEHLO_CASE one of its branch subgraphs (an index out of range picks the last branch, as
LiteRT does).  Both are generators over ``ctx.call_subgraph``, so the debugger steps
into them as into CALL_ONCE, IF and WHILE."""
from __future__ import annotations

import numpy as np

from .common import BuiltinOperator as Op, option, register
from .control_flow import SubgraphKernel, prepare_branches, run_branch


@register(Op.STABLEHLO_COMPOSITE, versions=(1, 1))
class StablehloComposite(SubgraphKernel):
    """The composite op (``name``, attributes) computed by its decomposition subgraph."""

    def prepare(self, ctx, node):
        index = int(option(node, "decomposition_subgraph_index", -1))
        prepare_branches(ctx, node, [index], first_input=0)

    def invoke(self, ctx, node):
        index = int(option(node, "decomposition_subgraph_index", -1))
        yield from run_branch(ctx, node, index, first_input=0)


@register(Op.STABLEHLO_CASE, versions=(1, 1))
class StablehloCase(SubgraphKernel):
    """Input 0: an INT32 index choosing a branch; the other inputs go to the branch."""

    def check(self, ctx, node):
        index = ctx.input(node, 0)
        if index is None or index.type_name != "INT32":
            return f"STABLEHLO_CASE v{node.version}: the branch index must be INT32"
        if not list(option(node, "branch_subgraph_indices", []) or []):
            return f"STABLEHLO_CASE v{node.version} without branches"
        return None

    def prepare(self, ctx, node):
        branches = [int(b) for b in option(node, "branch_subgraph_indices", [])]
        prepare_branches(ctx, node, branches, first_input=1)

    def invoke(self, ctx, node):
        branches = [int(b) for b in option(node, "branch_subgraph_indices", [])]
        index = int(np.asarray(ctx.value(node, 0)).reshape(-1)[0])
        if not 0 <= index < len(branches):
            index = len(branches) - 1
        yield from run_branch(ctx, node, branches[index], first_input=1)
