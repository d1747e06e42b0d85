"""TensorFlow Lite Micro: does its interpreter prepare and run each operator?

TFLM has no fallback: the interpreter resolves every operator when it is built, prepares
them in order at ``AllocateTensors`` and stops at the first one whose kernel refuses its
tensors, so an operator here either runs or is refused.  What it lacks, besides kernels
(`tflm_kernels`):

* dynamic shapes: tensors keep the shapes stored in the file (nothing is resized at run
  time), so a model converted with a dynamic dimension runs at the stored size;
* tensors with a zero-sized dimension (the arena planner cannot place them);
* float16, float64, complex and string tensors outside the few kernels that read them.

The oracle: the ``tflite_micro`` Python interpreter (``Interpreter.from_file``, then
``invoke``), which either runs a model or names the operator it could not prepare
(tests/targets/test_tflm_micro.py).
"""
from __future__ import annotations

from .facts import ModelFacts, SubgraphFacts
from .tflm_kernels import CUSTOM_OPS, RULES
from .verdict import REFUSED, RUNS, OpVerdict, TargetResult

TITLE = "TFLite Micro (all-ops resolver, reference kernels)"
SOURCE = ("python/tflite_micro/python_ops_resolver.cc and tensorflow/lite/micro/kernels/ "
          "(tensorflow/tflite-micro), checked against the tflite_micro Python interpreter")


def op_reason(f: SubgraphFacts, k: int) -> str | None:
    """Why TFLM refuses operator ``k`` (None: it runs)."""
    b = f.builtin[k]
    if b == "CUSTOM":
        name = f.custom[k] or ""
        if name in CUSTOM_OPS:
            return None
        return f"custom op {name!r} is not registered in TFLM's resolver"
    rule = RULES.get(b)
    if rule is None:
        return f"TFLM's resolver has no {b}"
    for t in f.inputs[k] + f.outputs[k]:
        if t >= 0 and any(d == 0 for d in f.shapes[t]):
            return f"tensor {t} {list(f.shapes[t])} has a zero-sized dimension"
    try:
        return rule(f, k)
    except (IndexError, TypeError, AttributeError) as exc:
        return f"malformed operator ({type(exc).__name__})"


def stage(reason: str) -> int:
    """When TFLM hits a refusal: 0 resolving kernels (all operators, before anything is
    prepared), 1 preparing (in order), 2 running."""
    if "resolver" in reason:
        return 0
    return 2 if reason.startswith("Eval:") else 1


def first_failure(ops: list[OpVerdict]) -> OpVerdict | None:
    """The operator TFLM's interpreter names when it refuses the model."""
    refused = [o for o in ops if o.verdict == REFUSED]
    return min(refused, key=lambda o: stage(o.reason), default=None)


def analyze(facts: ModelFacts) -> TargetResult:
    ops = []
    dynamic: list[str] = []
    for s in range(len(facts)):
        f = facts[s]
        accepted: set[tuple] = set()  # op keys that passed (see SubgraphFacts.op_key)
        for k in range(f.op_count):
            key = f.op_key(k) if f.builtin[k] != "CUSTOM" else None
            if key is not None and key in accepted:
                ops.append(OpVerdict(s, k, f.op_name(k), RUNS, ""))
                continue
            why = op_reason(f, k)
            if why is None and key is not None:
                accepted.add(key)
            ops.append(OpVerdict(s, k, f.op_name(k), REFUSED if why else RUNS, why or ""))
        dynamic.extend(f"subgraph {s} tensor {t}" for t in f.graph_inputs if f.dynamic(t))
    first = first_failure(ops)
    notes = []
    if first is not None:
        notes.append(f"TFLM stops at the first operator it cannot prepare: subgraph "
                     f"{first.subgraph} operator {first.index} ({first.op})")
    if dynamic:
        notes.append("dynamic input dimensions run at the size stored in the file: "
                     + ", ".join(dynamic[:5]) + (" ..." if len(dynamic) > 5 else ""))
    return TargetResult("tflm", TITLE, ops, notes=notes, source=SOURCE)
