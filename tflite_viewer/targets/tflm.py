"""TensorFlow Lite Micro: does its interpreter prepare and run each operator?

TFLM has no fallback: the interpreter resolves every operator when it is built, prepares
them in order at ``AllocateTensors`` and stops at the first one whose kernel refuses its
tensors, so an operator here either runs or is refused.  What it lacks, besides kernels
(`tflm_kernels`):

* dynamic shapes: tensors keep the shapes stored in the file (nothing is resized at run
  time), so a model converted with a dynamic dimension runs at the stored size;
* an operator output with a dimension of 0 (a "dynamic tensor" to TFLM, checked after each
  Prepare; the legacy scalar shape [0] excepted);
* float16, float64, complex and string tensors outside the few kernels that read them.

The oracle: the ``tflite_micro`` Python interpreter (``Interpreter.from_file``, then
``invoke``), which either runs a model or names the operator it could not prepare
(tests/targets/test_tflm_micro.py).
"""
from __future__ import annotations

from ..model.errors import TFLiteViewerError
from ..delegation.facts import ModelFacts, SubgraphFacts
from .shape_values import ShapeValues
from .tflm_kernels import CUSTOM_OPS, RULES
from .value_shapes import VALUE_INPUTS, compare, needs_values
from .verdict import REFUSED, RUNS, OpVerdict, TargetResult

SILENT = "Silently wrong:"  # TFLM runs the operator but computes something else
TITLE = "TFLite Micro (all-ops resolver, reference kernels)"
SOURCE = ("python/tflite_micro/python_ops_resolver.cc and tensorflow/lite/micro/kernels/ "
          "(tensorflow/tflite-micro), checked against the tflite_micro Python interpreter")


WRONG, DEPENDS = "wrong", "depends"  # what `value_shaped` finds


def _shape_text(shape) -> str:
    return "a shape of unknown rank" if shape is None else \
        "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _fixed(sv: ShapeValues, t: int) -> bool:
    v = sv.value(t)
    return v is not None and v.full


def value_shaped(sv: ShapeValues, k: int) -> tuple[str, str] | None:
    """Operator ``k``'s output shape comes from values computed at run time (see
    `shape_values`): (WRONG, why) when the values the file fixes give another shape than
    the stored one, into which TFLM computes; (DEPENDS, why) when the shape depends on
    values only a run knows (a model input's, a loop counter's); None when they give the
    stored shape, or nothing is computed."""
    f = sv.f
    if not needs_values(f, k):
        return None
    computed = sv.out_shapes(k) or []
    unknown = []
    for o, shape in zip(f.outputs[k], computed):
        if o < 0:
            continue
        same = compare(shape, f.shapes[o])
        if same is False:
            return WRONG, (f"{SILENT} tensor {o} is stored as {list(f.shapes[o])} but the "
                           f"values that set its shape give {_shape_text(shape)}; TFLM "
                           "computes into the stored shape")
        if same is None:
            unknown.append(o)
    if not unknown:
        return None
    ins = f.inputs[k]
    unknown_values = [i for i in VALUE_INPUTS[f.builtin[k]]
                      if i < len(ins) and ins[i] >= 0 and not _fixed(sv, ins[i])]
    if unknown_values:
        i = unknown_values[0]
        cause = (f"the output's shape comes from input {i} (tensor {ins[i]}), known only at "
                 "run time")
    else:
        cause = ("input 0's shape is not fixed by the file (an operator before it sets a "
                 "shape from values)")
    return DEPENDS, (f"depends on the input's values: {cause}; TFLM computes into the stored "
                     f"shape {list(f.shapes[unknown[0]])}, right only if a run gives that")


def op_reason(f: SubgraphFacts, k: int) -> str | None:
    """Why TFLM's kernel refuses operator ``k`` (None: it prepares and runs it)."""
    b = f.builtin[k]
    if b == "CUSTOM":
        name = f.custom[k] or ""
        if name in CUSTOM_OPS:
            return None
        return f"custom op {name!r} is not registered in TFLM's resolver"
    rule = RULES.get(b)
    if rule is None:
        return f"TFLM's resolver has no {b}"
    try:
        return rule(f, k) or _dynamic_output(f, k)
    except (IndexError, TypeError, AttributeError) as exc:
        return f"malformed operator ({type(exc).__name__})"


def _dynamic_output(f: SubgraphFacts, k: int) -> str | None:
    """``CheckDynamicTensors`` after each Prepare: an output with a dimension of 0 (or
    less) is a dynamic tensor, except the legacy scalar shape [0]; inputs are not looked
    at."""
    for t in f.outputs[k]:
        shape = f.shapes[t] if t >= 0 else ()
        if shape != (0,) and any(d <= 0 for d in shape):
            return (f"Prepare: output tensor {t} {list(shape)} has a dimension of 0, a dynamic "
                    "tensor to TFLM, which refuses it")
    return None


def stage(reason: str) -> int:
    """When TFLM hits a refusal: 0 resolving kernels (all operators, before anything is
    prepared), 1 preparing (in order), 2 running, 3 never (it runs and computes something
    else)."""
    if "resolver" in reason:
        return 0
    if reason.startswith(SILENT):
        return 3
    return 2 if reason.startswith("Eval:") else 1


def shape_inference(facts: ModelFacts):
    """The interpreter's shape propagation at the stored input shapes
    (`interpreter.shape_inference.ShapeInference`), or None for a model without a dynamic
    dimension, whose stored shapes no converter guessed.  Computed once per model."""
    if not hasattr(facts, "_shape_inference"):
        found = None
        if any(facts[s].dynamic(t) for s in range(len(facts))
               for t in range(facts[s].tensor_count)):
            from ..interpreter.shape_inference import infer_shapes

            try:
                found = infer_shapes(facts.model)
            except TFLiteViewerError:  # a file the interpreter refuses (its own checks):
                found = None           # the stored shapes are taken as they are
        facts._shape_inference = found  # type: ignore[attr-defined]
    return facts._shape_inference  # type: ignore[attr-defined]


def shape_mismatches(facts: ModelFacts) -> list:
    """Operator outputs whose shape stored in the file is not what the operator computes
    (`interpreter.shape_inference.ShapeMismatch`), at the stored input shapes.

    TFLM never resizes a tensor: it computes into the stored shape.  A converter writes
    placeholder sizes where a dimension is dynamic (a batch of -1 stored as 1), and an
    operator such as SPACE_TO_BATCH_ND multiplies that batch, so the stored shape can be
    wrong even at the stored input size.  The interpreter's shape propagation finds them."""
    found = shape_inference(facts)
    return [] if found is None else found.mismatches


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


class _Values:
    """Each subgraph's `ShapeValues`, made when an operator first needs one."""

    def __init__(self, facts: ModelFacts) -> None:
        self.facts = facts
        self._made: dict[int, ShapeValues] = {}

    def check(self, s: int, k: int) -> tuple[str, str] | None:
        sv = self._made.get(s)
        if sv is None:
            found = shape_inference(self.facts)
            inferred = {} if found is None else {t: shape for (g, t), shape
                                                 in found.shapes.items() if g == s}
            sv = self._made[s] = ShapeValues(self.facts[s], inferred)
        try:
            return value_shaped(sv, k)
        except (IndexError, TypeError, AttributeError, ValueError):
            return None  # a malformed operator: op_reason says so where it matters


def analyze(facts: ModelFacts) -> TargetResult:
    ops = []
    dynamic: list[str] = []
    wrong_shapes = stored_shape_errors(facts)
    values = _Values(facts)
    for s in range(len(facts)):
        f = facts[s]
        accepted: set[tuple] = set()  # op keys that passed (see SubgraphFacts.op_key)
        builtin, keys, names = f.builtin, f.op_keys, f.op_names
        for k in range(f.op_count):
            # (an operator whose shape comes from computed values is judged on its own:
            # its key holds no computed value)
            from_values = builtin[k] in VALUE_INPUTS and needs_values(f, k)
            key = (keys[k] if builtin[k] != "CUSTOM" and not from_values
                   and (not wrong_shapes or (s, k) not in wrong_shapes) else None)
            if key is not None and key in accepted:
                ops.append(OpVerdict(s, k, names[k], RUNS, ""))
                continue
            why = op_reason(f, k) or wrong_shapes.get((s, k))
            warning = ""
            if why is None and from_values:
                found = values.check(s, k)
                if found is not None:
                    why, warning = (found[1], "") if found[0] == WRONG else (None, found[1])
            if why is None and key is not None:
                accepted.add(key)
            ops.append(OpVerdict(s, k, names[k], REFUSED if why else RUNS, why or "",
                                 warning=warning))
        dynamic.extend(f"subgraph {s} tensor {t}" for t in f.graph_inputs if f.dynamic(t))
    return TargetResult("tflm", TITLE, ops, notes=_notes(ops, dynamic), source=SOURCE,
                        failure=_failure(ops))


def _failure(ops: list[OpVerdict]) -> str:
    first = first_failure(ops)
    if first is None:
        return ""
    if stage(first.reason) < 3:
        return (f"TFLM refuses this model: it stops at subgraph {first.subgraph} operator "
                f"{first.index} ({first.op}): {first.reason}")
    return (f"TFLM runs this model but computes wrong values: subgraph {first.subgraph} "
            f"operator {first.index} ({first.op}) is the first it computes into a wrong shape")


def _notes(ops: list[OpVerdict], dynamic: list[str]) -> list[str]:
    notes = []
    warned = sum(1 for o in ops if o.warning)
    if warned:
        notes.append(f"{warned} operator(s) compute into a stored shape that depends on the "
                     "input's values (see the warnings): right only if a run's values give it")
    if dynamic:
        notes.append("dynamic input dimensions run at the size stored in the file: "
                     + ", ".join(dynamic[:5]) + (" ..." if len(dynamic) > 5 else ""))
    return notes
