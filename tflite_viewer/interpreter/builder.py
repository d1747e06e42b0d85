"""Building the runtime graph from a model: LiteRT's interpreter_builder.

`build_nodes` turns every operator of every subgraph into a `Node` bound to the kernel
registration the op resolver returns for it, and refuses, all at once, what cannot run.
Allocation and preparation stay with the subgraphs (`Subgraph.prepare`), execution with
`executor.Executor`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import folding, validation
from .accepts import check_accepts
from .type_rules import check_call_types, check_output_types
from .errors import PASS_THROUGH, UnsupportedOpError, call_kernel
from .node import Node
from .subgraph import Subgraph

if TYPE_CHECKING:
    from .interpreter import Interpreter


def build_nodes(interp: "Interpreter") -> None:
    """Resolve every operator of every subgraph into a `Node`; report every problem at once.

    LiteRT's InterpreterBuilder::ParseNodes: each operator's (builtin code, version) or
    custom name is looked up in the op resolver, the nodes are validated (arity, tensor
    references) before any kernel sees them, each kernel's ``check`` refuses what it cannot
    compute (first the types and quantization forms its registration declares,
    `accepts.check_accepts`, then its own ``check``), and only then does every kernel's
    ``init`` run. Missing kernels, unsupported
    versions and refused types are gathered into one `UnsupportedOpError`.
    """
    problems: dict[tuple[str, int, str], list[str]] = {}
    pending: list[tuple[Subgraph, Node]] = []
    for sg in interp.subgraphs:
        sg.nodes = []
        for op in sg.model_subgraph.operators:
            code = op.opcode
            version = code.version
            if code.is_custom:
                name = code.custom_code or "CUSTOM"
                reg = interp.op_resolver.find_custom(name, version)
                ranges = interp.op_resolver.custom_versions(name)
                label = f"custom op {name!r}"
            else:
                name = code.builtin_name
                reg = interp.op_resolver.find_builtin(code.builtin_code, version)
                ranges = interp.op_resolver.builtin_versions(code.builtin_code)
                label = name
            where = f"subgraph {sg.index} op {op.index}"
            if reg is None:
                if ranges:
                    rng = ", ".join(f"{a}..{b}" for a, b in ranges)
                    why = (f"{label} version {version} is not supported "
                           f"(supported versions: {rng})")
                elif code.is_custom and name.startswith("Flex"):
                    why = (f"{label} (v{version}) is a Flex (TF Select) op: it needs "
                           "TensorFlow's own kernel (the Flex delegate), not a TFLite one")
                else:
                    why = f"{label} (v{version}): no kernel"
                problems.setdefault((name, version, why), []).append(where)
                continue
            node = Node(op.index, sg.index, name, version, op.inputs, op.outputs,
                        op.intermediates, op.options, None, reg, op)
            if code.is_custom:
                node.custom_data = op.custom_options
            sg.nodes.append(node)
            pending.append((sg, node))
        sg.execution_plan = list(range(len(sg.nodes)))
        sg.plan_nodes = list(sg.nodes)
        bind_plan(sg)
        for t in sg.tensors:
            t.consumers = []
        for node in sg.nodes:
            for i in node.inputs:
                if i >= 0:
                    sg.tensors[i].consumers.append(node)
    for sg in interp.subgraphs:  # arity, omitted inputs, tensors: before any kernel
        validation.check_subgraph(sg, interp.subgraphs, order=not problems)
    # type checks of resolved ops, reported with the missing ones: the declared types and
    # quantization forms first (accepts.py), then the kernel's own check; neither decodes
    # a weight
    for sg, node in pending:
        why = check_accepts(sg, node) or check_output_types(sg, node) or \
            check_call_types(sg, node) or kernel_hook(sg, node, "check")
        if why:
            problems.setdefault((node.name, node.version, why), []).append(
                f"subgraph {sg.index} op {node.index}")
    if problems:
        lines = []
        for (name, version, why), wheres in problems.items():
            more = f" and {len(wheres) - 3} more" if len(wheres) > 3 else ""
            lines.append(f"  {why} [{', '.join(wheres[:3])}{more}]")
        err = UnsupportedOpError(
            f"cannot run this model: {len(problems)} unsupported operator"
            f"{'s' if len(problems) > 1 else ''}:\n" + "\n".join(lines))
        err.problems = [  # type: ignore[attr-defined]
            {"op": n, "version": v, "reason": w, "where": ws}
            for (n, v, w), ws in problems.items()]
        raise err
    for sg, node in pending:
        node.user_data = kernel_hook(sg, node, "init")

def bind_plan(sg: Subgraph) -> None:
    """The prepared execution plan `Executor.execute` walks: per node of the plan, the
    node, its kernel's invoke bound once and its index; and the per-node op time and call
    counters (`Interpreter.op_times` / `op_calls`).  A node that calls subgraphs is bound
    to its kernel's ``invoke_direct`` (a plain call for runs nothing pauses), or to None
    when the kernel has none: the executor then drives its generator.

    Binding here is what makes invoke a loop of direct calls: no registration, kernel or
    method lookup and no dict update per op."""
    sg.plan_steps = [(node, getattr(node.kernel, "invoke_direct", None)
                      if node.calls_subgraphs else node.kernel.invoke, node.index)
                     for node in sg.plan_nodes]
    sg.folded = False
    sg.plan_key = None
    sg.clear_op_stats()


def bind_kernels(sg: Subgraph) -> None:
    """Replace the plan's bound invokes by the kernels' specialised ones (`Kernel.bind`),
    for the nodes whose kernel offers one; a kernel failing to bind keeps its invoke."""
    steps = []
    for node, fn, i in sg.plan_steps:
        bind = getattr(node.kernel, "bind", None)
        if bind is not None and fn is not None and not node.calls_subgraphs \
                and fn == node.kernel.invoke:
            try:
                fn = bind(sg, node) or fn
            except PASS_THROUGH:
                raise
            except Exception:  # noqa: BLE001 - binding is an optimisation: invoke still works
                pass
        steps.append((node, fn, i))
    sg.plan_steps = steps


def specialize_plan(sg: Subgraph, key: tuple[int, bool, bool]) -> None:
    """After a run at prepare epoch ``key[0]`` with no re-preparation: kernels' bound
    invokes (when ``key[1]``) and replays of folded shape arithmetic (when ``key[2]``,
    `folding.fold`) in the plan.  Tried once per key."""
    sg.tried_key = key
    _, bind, fold = key
    if bind:
        bind_kernels(sg)
    if fold:
        folding.fold(sg)
    if bind or sg.folded:
        sg.plan_key = key


def unspecialize_plan(sg: Subgraph) -> None:
    """The plain plan again (a node was prepared again, or the options changed), keeping
    the run's op counters."""
    seconds, counts = sg.op_seconds, sg.op_counts
    bind_plan(sg)
    sg.op_seconds, sg.op_counts = seconds, counts


def kernel_hook(sg: Subgraph, node: Node, hook: str) -> Any:
    """A kernel's load-time hook (check, init); a failure names the op."""
    return call_kernel(getattr(node.registration.kernel, hook), sg, node, hook)
