"""Control flow (WHILE, IF, CALL_ONCE) and resource variables (VAR_HANDLE, READ_VARIABLE,
ASSIGN_VARIABLE).

A WHILE whose cond and body are a standard Keras LSTM step (`fused_loops`) runs as one
compiled loop in `invoke()` when no hook watches its operators; stepping, breakpoints and
hooks always see the body op by op.

WHILE runs within the interpreter's budgets (`tflite_viewer.interpreter.budget`): an
iteration count, a deadline and a stop request are checked before every iteration.

Control-flow kernels are generators: they ``yield from`` their context's `call_subgraph`
(``ctx.call_subgraph``), so the debugger can pause inside the subgraphs they run.  What
they keep between ops lives in the run state (``ctx.run``: the subgraphs being prepared,
the CALL_ONCE subgraphs that ran, the resource variables).  Arrays pass between caller and
callee without copies (no kernel writes into an array it did not create).
"""
from __future__ import annotations

import itertools

import numpy as np

from .common import ANYTHING, BuiltinOperator as Op, Kernel, option, register


class SubgraphKernel(Kernel):
    """A kernel that runs subgraphs (WHILE, IF, CALL_ONCE, STABLEHLO_CASE/COMPOSITE): any
    tensor type passes through, and ``invoke`` is a generator the debugger steps into."""

    types = "any"
    calls_subgraphs = True
    #: the tensors go on to the called subgraph, whose kernels check what they read
    accepts = ANYTHING


def prepare_callee(ctx, index: int, shapes) -> list | None:
    """Prepare subgraph ``index`` for inputs of ``shapes``; its output shapes (None where
    unknown)."""
    run = ctx.run
    if not 0 <= index < len(run.subgraphs):
        raise ValueError(f"subgraph index {index} out of range (0..{len(run.subgraphs) - 1})")
    sg = run.subgraphs[index]
    if len(shapes) != len(sg.inputs):
        raise ValueError(f"subgraph {index} takes {len(sg.inputs)} inputs, given {len(shapes)}")
    if index in run.preparing:
        return None
    run.preparing.add(index)
    try:
        for i, s in zip(sg.inputs, shapes):
            sg.tensors[i].shape = s
        sg.prepare()
    finally:
        run.preparing.discard(index)
    return [sg.tensors[o].shape for o in sg.outputs]


def set_outputs(ctx, node, values) -> None:
    for o, v in zip(node.outputs, values):
        if o >= 0:
            ctx.set_output(ctx.tensors[o], v)


def prepare_branches(ctx, node, branches: list[int], first_input: int) -> None:
    """Prepare each branch subgraph for the node's inputs from ``first_input`` on.

    IF, STABLEHLO_CASE and STABLEHLO_COMPOSITE (one branch) run one of several callees
    chosen at run time, so an output is static only where every branch gives it the same
    shape; elsewhere it is dynamic and sized when the branch has run.
    """
    shapes = [ctx.tensors[i].shape for i in node.inputs[first_input:]]
    results = [prepare_callee(ctx, b, shapes) for b in branches]
    agreed = None
    if results and all(r is not None for r in results):
        agreed = [r[0] if all(x == r[0] for x in r) else None for r in zip(*results)]
    for k, o in enumerate(node.outputs):
        if o < 0:
            continue
        if agreed is not None and k < len(agreed) and agreed[k] is not None:
            ctx.resize(ctx.tensors[o], agreed[k])
        else:
            ctx.set_dynamic(ctx.tensors[o])


def run_branch(ctx, node, index: int, first_input: int):
    """Call subgraph ``index`` on the node's inputs from ``first_input`` on (a generator:
    the debugger steps into it); its results become the node's outputs."""
    outs = yield from ctx.call_subgraph(index, _branch_inputs(ctx, node, first_input))
    _finish_branch(ctx, node, outs)


def run_branch_direct(ctx, node, index: int, first_input: int) -> None:
    """`run_branch` for runs nothing pauses: a plain call (``ctx.run_subgraph``)."""
    outs = ctx.run_subgraph(index, _branch_inputs(ctx, node, first_input))
    _finish_branch(ctx, node, outs)


def _branch_inputs(ctx, node, first_input: int) -> list:
    return [ctx.value(node, k) for k in range(first_input, len(node.inputs))]


def _finish_branch(ctx, node, outs) -> None:
    """A branch's results become the node's outputs, dynamic where a shape differs from
    the prepared one."""
    for o, v in zip(node.outputs, outs):
        if o >= 0 and ctx.tensors[o].shape != np.shape(v):
            ctx.set_dynamic(ctx.tensors[o])
    set_outputs(ctx, node, outs)


def _cond_and_body(node) -> tuple[int, int]:
    """WHILE's condition and body subgraph indices."""
    return int(option(node, "cond_subgraph_index")), int(option(node, "body_subgraph_index"))


@register(Op.WHILE, versions=(1, 1))
class While(SubgraphKernel):
    def prepare(self, ctx, node):
        shapes = [ctx.tensors[i].shape for i in node.inputs]
        cond, body = _cond_and_body(node)
        prepare_callee(ctx, cond, shapes)
        outs = prepare_callee(ctx, body, shapes)
        static = outs is not None and all(o == s for o, s in zip(outs, shapes))
        for o, s in zip(node.outputs, shapes):
            if static:
                ctx.resize(ctx.tensors[o], s)
            else:
                ctx.set_dynamic(ctx.tensors[o])
        from ..fused_loops import match_keras_lstm  # it imports kernels: not at load time

        subgraphs = ctx.run.subgraphs
        node.user_data = match_keras_lstm(subgraphs[cond], subgraphs[body])

    def invoke(self, ctx, node):
        """The loop, pausable: the debugger can stop inside cond and body."""
        values = self._fused(ctx, node)
        if values is None:
            call = ctx.call_subgraph
            cond, body, values, where = _loop_start(ctx, node)
            for count in itertools.count(1):
                _iteration(ctx, node, count, where)
                if not _true((yield from call(cond, values))[0]):
                    break
                values = yield from call(body, values)
        _finish(ctx, node, values)

    def invoke_direct(self, ctx, node):
        """`invoke` for runs nothing pauses: cond and body are plain calls
        (``ctx.run_subgraph``), the same iterations and budget checks."""
        values = self._fused(ctx, node)
        if values is None:
            run = ctx.run_subgraph
            cond, body, values, where = _loop_start(ctx, node)
            count = 1
            while _iteration(ctx, node, count, where) and _true(run(cond, values)[0]):
                values = run(body, values)
                count += 1
        _finish(ctx, node, values)

    @staticmethod
    def _fused(ctx, node) -> list | None:
        """A recognised Keras LSTM loop in a run nothing watches op by op, run as one
        compiled step: the WHILE's output values (None: run the loop op by op)."""
        fused = node.user_data
        run = ctx.run
        if fused is None or not run.direct or not run.fuse_loops or run.watched:
            return None
        values = [ctx.value(node, k) for k in range(len(node.inputs))]
        key, where = (ctx.index, node.index), _where(ctx, node)
        return fused.run(values, lambda count: run.iteration(key, where, count))


def _where(ctx, node) -> str:
    return f"subgraph {ctx.index} op {node.index} (WHILE)"


def _loop_start(ctx, node) -> tuple[int, int, list, str]:
    """WHILE's cond and body subgraphs, its initial values, and its place for messages."""
    cond, body = _cond_and_body(node)
    return cond, body, [ctx.value(node, k) for k in range(len(node.inputs))], _where(ctx, node)


def _iteration(ctx, node, count: int, where: str) -> bool:
    """Before iteration ``count``: the position for messages, the budgets (a run that
    nothing pauses also sees the stop request here) and the progress
    (`RunState.iteration`).  True: the loop may go on."""
    ctx.run.iteration((ctx.index, node.index), where, count)
    return True


def _true(flag) -> bool:
    """A condition tensor's truth (its first element, as TFLite reads a bool tensor)."""
    if type(flag) is np.ndarray and flag.ndim == 0:
        return bool(flag)
    return bool(np.asarray(flag).reshape(-1)[0])


def _finish(ctx, node, values) -> None:
    """The loop's final values become the WHILE's outputs (dynamic if their shape moved)."""
    for o, v in zip(node.outputs, values):
        t = ctx.tensors[o]
        if t.shape is not None and not t.is_dynamic and t.shape != np.shape(v):
            ctx.set_dynamic(t)
    set_outputs(ctx, node, values)


@register(Op.IF, versions=(1, 1))
class If(SubgraphKernel):
    def prepare(self, ctx, node):
        branches = [int(option(node, "then_subgraph_index")),
                    int(option(node, "else_subgraph_index"))]
        prepare_branches(ctx, node, branches, first_input=1)

    def invoke(self, ctx, node):
        yield from run_branch(ctx, node, self._branch(ctx, node), first_input=1)

    def invoke_direct(self, ctx, node):
        """`invoke` for runs nothing pauses (``ctx.run_subgraph``)."""
        run_branch_direct(ctx, node, self._branch(ctx, node), first_input=1)

    @staticmethod
    def _branch(ctx, node) -> int:
        """The subgraph the condition chooses."""
        flag = _true(ctx.value(node, 0))
        return int(option(node, "then_subgraph_index" if flag else "else_subgraph_index"))


@register(Op.CALL_ONCE, versions=(1, 1))
class CallOnce(SubgraphKernel):
    """Runs its init subgraph the first time only (until `reset_variables`)."""

    def prepare(self, ctx, node):
        pass

    def invoke(self, ctx, node):
        index = int(option(node, "init_subgraph_index"))
        if index in ctx.run.called_once:
            return
        yield from ctx.call_subgraph(index, [])
        ctx.run.called_once.add(index)

    def invoke_direct(self, ctx, node):
        """`invoke` for runs nothing pauses (``ctx.run_subgraph``)."""
        index = int(option(node, "init_subgraph_index"))
        if index not in ctx.run.called_once:
            ctx.run_subgraph(index, [])
            ctx.run.called_once.add(index)


@register(Op.VAR_HANDLE, versions=(1, 1))
class VarHandle(Kernel):
    """A resource id for (container, shared_name), shared by every subgraph."""

    types = "any"

    def prepare(self, ctx, node):
        ctx.resize(ctx.output(node, 0), ctx.output(node, 0).shape or ())

    def invoke(self, ctx, node):
        ids = ctx.run.resource_ids
        key = (str(option(node, "container", "")), str(option(node, "shared_name", "")))
        rid = ids.setdefault(key, len(ids))
        out = ctx.output(node, 0)
        ctx.set_output(out, np.full(out.shape, rid, dtype=np.int32))


def _resource_id(ctx, node) -> int:
    return int(np.asarray(ctx.value(node, 0)).reshape(-1)[0])


@register(Op.READ_VARIABLE, versions=(1, 1))
class ReadVariable(Kernel):
    types = "any"

    def invoke(self, ctx, node):
        rid = _resource_id(ctx, node)
        value = ctx.run.resources.get(rid)
        if value is None:
            raise ValueError(f"resource variable {rid} is read before it is assigned")
        ctx.set_output(ctx.output(node, 0), value)


@register(Op.ASSIGN_VARIABLE, versions=(1, 1))
class AssignVariable(Kernel):
    types = "any"

    def prepare(self, ctx, node):
        pass

    def invoke(self, ctx, node):
        value = np.array(ctx.value(node, 1), copy=True)
        value.setflags(write=False)
        ctx.run.resources[_resource_id(ctx, node)] = value
