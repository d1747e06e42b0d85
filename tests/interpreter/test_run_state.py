"""One run state (issue 40, item 5): the interpreter owns a `RunState` that its executor and
debugger are given, and kernels reach it through their context, never through the
interpreter's private fields."""
from __future__ import annotations

import ast
from pathlib import Path

from tflite_viewer.interpreter import Interpreter

from .conftest import model_path

PACKAGE = Path(__file__).resolve().parents[2] / "tflite_viewer" / "interpreter"
#: what a kernel's code calls the interpreter, its run state or its executor
RUNTIME_NAMES = {"ctx", "interp", "interpreter", "run", "run_state", "executor", "body"}


def _private_runtime_accesses(source: str, where: str) -> list[str]:
    """``x._name`` where x is the kernel's context, the interpreter, its run state or its
    executor (a name from `RUNTIME_NAMES`, or an attribute of that name)."""
    found = []
    for node in ast.walk(ast.parse(source, where)):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            continue
        owner = node.value
        name = owner.id if isinstance(owner, ast.Name) else \
            owner.attr if isinstance(owner, ast.Attribute) else None
        if name in RUNTIME_NAMES:
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_kernels_touch_no_private_field_of_the_interpreter():
    kernels = sorted((PACKAGE / "kernels").rglob("*.py")) + [PACKAGE / "fused_loops.py"]
    assert len(kernels) > 30
    found = [hit for path in kernels for hit in
             _private_runtime_accesses(path.read_text(), str(path.relative_to(PACKAGE)))]
    assert found == []


def test_modules_outside_the_kernels_import_no_private_name_of_theirs():
    """fused_loops multiplies with FULLY_CONNECTED's public product, not ``_product``."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "kernels" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and "kernels" in (node.module or ""):
                found += [f"{path.name}: {a.name}" for a in node.names
                          if a.name.startswith("_")]
    assert found == []


def test_the_check_sees_the_accesses_issue_40_named():
    """The check above fires on what control_flow.py did before (a control)."""
    hits = _private_runtime_accesses("def prepare(ctx, node):\n"
                                     "    interp = ctx.interpreter\n"
                                     "    if 3 in interp._preparing or ctx.interpreter._direct:\n"
                                     "        ctx.run._x = t._shape\n", "sample")
    assert sorted(h.split(": ", 1)[1] for h in hits) == [
        "ctx.interpreter._direct", "ctx.run._x", "interp._preparing"]  # not t._shape


def test_the_executor_and_the_debugger_share_the_interpreters_run_state():
    interp = Interpreter(model_path("control_flow"))
    state = interp.run_state
    assert interp.executor.state is state and interp.debugger.state is state
    assert all(sg.run is state for sg in interp.subgraphs)
    interp.fuse_loops = False  # the options the interpreter always had live there
    assert state.fuse_loops is False and interp.budget is state.budget
    other = Interpreter(model_path("control_flow"))
    assert other.run_state is not state and other.subgraphs is not interp.subgraphs
