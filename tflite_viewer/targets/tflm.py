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

from ..delegation.facts import ModelFacts, SubgraphFacts
from .tflm_kernels import CUSTOM_OPS, RULES
from .verdict import REFUSED, RUNS, OpVerdict, TargetResult

SILENT = "Silently wrong:"  # TFLM runs the operator but computes something else
TITLE = "TFLite Micro (all-ops resolver, reference kernels)"
SOURCE = ("python/tflite_micro/python_ops_resolver.cc and tensorflow/lite/micro/kernels/ "
          "(tensorflow/tflite-micro), checked against the tflite_micro Python interpreter")


# op -> the inputs whose values set the output's shape (LiteRT resizes the output from
# them at run time; TFLM computes into the shape stored in the file)
SHAPE_FROM_VALUES = {
    **{op: (1,) for op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD",
                           "REDUCE_ANY", "REDUCE_ALL", "RESHAPE", "RESIZE_BILINEAR",
                           "RESIZE_NEAREST_NEIGHBOR", "PAD", "PADV2", "MIRROR_PAD", "TRANSPOSE",
                           "EXPAND_DIMS", "ARG_MAX", "ARG_MIN", "BROADCAST_TO")},
    "SLICE": (1, 2), "STRIDED_SLICE": (1, 2, 3), "FILL": (0,), "SPLIT": (0,),
    "SPLIT_V": (1, 2), "SPACE_TO_BATCH_ND": (1, 2), "BATCH_TO_SPACE_ND": (1, 2),
    "TRANSPOSE_CONV": (0,),
}


def _value_shaped(f: SubgraphFacts, k: int) -> str | None:
    for i in SHAPE_FROM_VALUES.get(f.builtin[k], ()):
        if i < len(f.inputs[k]) and not f.value_known(f.inputs[k][i]):
            return (f"{SILENT} the output's shape depends on input {i}'s values at run "
                    "time; TFLM computes into the stored shape "
                    f"{list(f.shapes[f.outputs[k][0]]) if f.outputs[k] else []} "
                    "(right only if the values give that shape)")
    return None


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
        return rule(f, k) or _value_shaped(f, k)
    except (IndexError, TypeError, AttributeError) as exc:
        return f"malformed operator ({type(exc).__name__})"


def stage(reason: str) -> int:
    """When TFLM hits a refusal: 0 resolving kernels (all operators, before anything is
    prepared), 1 preparing (in order), 2 running, 3 never (it runs and computes something
    else)."""
    if "resolver" in reason:
        return 0
    if reason.startswith(SILENT):
        return 3
    return 2 if reason.startswith("Eval:") else 1


def shape_mismatches(facts: ModelFacts) -> list:
    """Operator outputs whose shape stored in the file is not what the operator computes
    (`interpreter.shape_inference.ShapeMismatch`), at the stored input shapes.

    TFLM never resizes a tensor: it computes into the stored shape.  A converter writes
    placeholder sizes where a dimension is dynamic (a batch of -1 stored as 1), and an
    operator such as SPACE_TO_BATCH_ND multiplies that batch, so the stored shape can be
    wrong even at the stored input size.  The interpreter's shape propagation finds them;
    it runs only for models with a dynamic dimension (the only ones where the converter
    guessed), once per model."""
    cached = getattr(facts, "_shape_mismatches", None)
    if cached is not None:
        return cached
    found: list = []
    if any(facts[s].dynamic(t) for s in range(len(facts))
           for t in range(facts[s].tensor_count)):
        from ..interpreter.shape_inference import infer_shapes

        found = infer_shapes(facts.model).mismatches
    facts._shape_mismatches = found  # type: ignore[attr-defined]
    return found


def stored_shape_errors(facts: ModelFacts) -> dict[tuple[int, int], str]:
    """Why TFLM computes something else at each operator with a wrong stored shape."""
    out: dict[tuple[int, int], str] = {}
    for m in shape_mismatches(facts):
        out.setdefault((m.subgraph, m.operator),
                       f"{SILENT} tensor {m.tensor} is stored as {list(m.stored)} but the "
                       f"operator computes {list(m.inferred)}; TFLM does not resize tensors")
    return out


def first_failure(ops: list[OpVerdict]) -> OpVerdict | None:
    """The operator TFLM's interpreter names when it refuses the model."""
    refused = [o for o in ops if o.verdict == REFUSED]
    return min(refused, key=lambda o: stage(o.reason), default=None)


def analyze(facts: ModelFacts) -> TargetResult:
    ops = []
    dynamic: list[str] = []
    wrong_shapes = stored_shape_errors(facts)
    for s in range(len(facts)):
        f = facts[s]
        accepted: set[tuple] = set()  # op keys that passed (see SubgraphFacts.op_key)
        builtin, keys, names = f.builtin, f.op_keys, f.op_names
        for k in range(f.op_count):
            key = (keys[k] if builtin[k] != "CUSTOM" and (not wrong_shapes
                                                          or (s, k) not in wrong_shapes)
                   else None)
            if key is not None and key in accepted:
                ops.append(OpVerdict(s, k, names[k], RUNS, ""))
                continue
            why = op_reason(f, k) or wrong_shapes.get((s, k))
            if why is None and key is not None:
                accepted.add(key)
            ops.append(OpVerdict(s, k, names[k], REFUSED if why else RUNS, why or ""))
        dynamic.extend(f"subgraph {s} tensor {t}" for t in f.graph_inputs if f.dynamic(t))
    first = first_failure(ops)
    notes = []
    if first is not None and stage(first.reason) < 3:
        notes.append(f"TFLM stops at the first operator it cannot prepare: subgraph "
                     f"{first.subgraph} operator {first.index} ({first.op})")
    elif first is not None:
        notes.append("TFLM runs this model but computes wrong values (see the operators)")
    if dynamic:
        notes.append("dynamic input dimensions run at the size stored in the file: "
                     + ", ".join(dynamic[:5]) + (" ..." if len(dynamic) > 5 else ""))
    return TargetResult("tflm", TITLE, ops, notes=notes, source=SOURCE)
