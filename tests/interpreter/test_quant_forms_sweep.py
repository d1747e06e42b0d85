"""No silent wrong result, as a rule: every registered kernel, each tensor type and
quantization form on its weight-like inputs, is either refused at load with the
documented error (an `UnsupportedOpError` naming the op, the tensor and the form) or
computes what LiteRT computes.

* `test_undeclared_forms_are_refused`: for EVERY registration of the builtin resolver
  (builtin and custom kernels), its weight-like inputs (op_metadata's roles, a recurrent
  op's first weight; the first input of an op without weights) in every type (FLOAT32,
  FLOAT16, INT8, UINT8, INT16, INT32, INT4, INT2) and form (none, per-tensor,
  per-channel on the first and the last axis, blockwise, custom, multi-axis): what the
  kernel's declaration (interpreter/accepts.py) does not list is refused when the model
  is loaded, with the op, the tensor and the form in the message.  What it lists beyond
  plain tensors (a per-channel, blockwise or custom form, a sub-byte type) must be
  compared with LiteRT somewhere: in the weights matrix below or in a test named in
  `COMPARED_ELSEWHERE`.
* `test_matrix_refused_or_equal_to_litert`: the weights matrix (quant_form_models.py:
  the weighted ops x activations x weight type x form) run by LiteRT's builtin kernels
  and its reference kernels and here: refused here, or equal to one of them (bit for
  bit on integers, 1e-5 relative on floats).  The unmarked tests run a sample; the full
  sweeps are marked slow (``pytest --run-slow``).
* `test_generated_table_is_current`: interpreter/litert_forms.py (what `tflite-viewer
  ops --forms` reports) says what this interpreter does today.

Control-flow kernels (WHILE, IF, CALL_ONCE, STABLEHLO_COMPOSITE/CASE/WHILE, CALL) accept
every form: they pass tensors on to the subgraphs they call, whose kernels check them.
"""
from __future__ import annotations

import zlib
import warnings

import numpy as np
import pytest

from tflite_viewer.interpreter import Interpreter, UnsupportedOpError
from tflite_viewer.model import ExecutionError
from tflite_viewer.interpreter.accepts import ANYTHING, SUB_BYTE, declaration
from tflite_viewer.interpreter.litert_forms import LITERT_FORMS
from tflite_viewer.interpreter.op_resolver import BuiltinOpResolver
from tflite_viewer.interpreter.validation import ARITY
from tflite_viewer.model import op_metadata
from tflite_viewer.model.opcodes import builtin_name

from . import quant_form_models as qf
from .llm_models import (A, Blockwise, Custom, MultiAxis, OpSpec, PerChannel, PerTensor, W,
                         litert_run, write_model)

TYPES = ("FLOAT32", "FLOAT16", "INT8", "UINT8", "INT16", "INT32", "INT4", "INT2")
FORMS = ("none", "per-tensor", "per-channel:0", "per-channel:last", "blockwise", "custom",
         "multi-axis")
#: op_metadata roles of learned constants
WEIGHT_ROLES = {"W", "b", "table", "alpha", "B", "params"}
RECURRENT = {"LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM", "RNN",
             "UNIDIRECTIONAL_SEQUENCE_RNN", "BIDIRECTIONAL_SEQUENCE_RNN", "SVDF"}
SHAPE = (4, 64)
_NUMPY = {"FLOAT32": np.float32, "FLOAT16": np.float16, "INT8": np.int8, "UINT8": np.uint8,
          "INT16": np.int16, "INT32": np.int32, "INT4": np.int8, "INT2": np.int8}

#: declared forms beyond plain tensors that the weights matrix does not build, and the
#: tests that compare them with LiteRT
COMPARED_ELSEWHERE: dict[tuple[str, str], str] = {
    ("bias", "per-channel:0"): "per-channel biases of int8 convolutions and FULLY_CONNECTED: "
        "tests/interpreter/test_quantized_models.py (corpus models against LiteRT) and "
        "test_conv_pool_types_litert.py",
    ("DEQUANTIZE", "per-channel"): "DEQUANTIZE per channel on every axis of a weight: the "
        "weights matrix (UINT4 values: test_type_paths_litert.py, 4-bit round trips)",
    ("EMBEDDING_LOOKUP", "copy"): "row copies of INT4/INT2 tables (no scale or one): "
        "test_llm_kernels_litert.py",
    ("*", "FLOAT INT32"): "float and INT32 tensors in every form (accepts.BASIC: their "
        "parameters define no value and no float or plain-integer path reads them): "
        "test_refusal_audit.py's acceptance comparisons, the simple ops' tensors in every "
        "form against LiteRT",
    ("DENSIFY", "*"): "DENSIFY of FLOAT32, FLOAT16 and INT8 in every form (the parameters "
        "pass through): test_refusal_audit.py's densify family against LiteRT",
    ("moves", "*"): "kernels that move stored values (accepts.MOVES: they copy the same "
        "bytes whatever the parameters): test_refusal_audit.py compares the data-movement "
        "ops of its activations family in every type and form with LiteRT",
}


def _registrations():
    resolver = BuiltinOpResolver()
    for code, regs in sorted(resolver._builtins.items()):
        for reg in regs:
            yield builtin_name(code), None, reg
    for name, regs in sorted(resolver._customs.items()):
        for reg in regs:
            yield name, name, reg


REGISTRATIONS = list(_registrations())


def weight_positions(name: str) -> list[int]:
    roles = op_metadata.input_roles(name)
    found = sorted(pos for pos, role in roles.items() if role in WEIGHT_ROLES)
    if found:
        return found
    return [1] if name in RECURRENT else [0]


def _arity(name: str, kernel) -> tuple[int, int]:
    """(inputs, outputs) the op takes at least (validation's table or the kernel's)."""
    declared = getattr(kernel, "arity", None)
    if declared is not None:
        return declared[0], declared[2] if declared[3] == 0 else max(1, declared[2])
    a = ARITY.get(name)
    if a is None:
        return 1, 1
    return a.min_inputs, 0 if a.max_outputs == 0 else max(1, a.min_outputs)


def _quant(form: str, index: int, shape) -> tuple:
    """(quantization, extra tensors) of a swept tensor at tensor ``index``: a blockwise
    or multi-axis form puts its scale tensor right after the op's tensors."""
    if form == "none":
        return None, []
    if form == "per-tensor":
        return PerTensor(0.05), []
    if form.startswith("per-channel"):
        axis = 0 if form.endswith(":0") else len(shape) - 1
        return PerChannel([0.05] * shape[axis], 0, axis), []
    if form == "blockwise":
        return Blockwise(index, 32), [W(np.full((shape[0], shape[1] // 32), 0.5, np.float16))]
    if form == "multi-axis":
        return MultiAxis(index), [W(np.full(shape, 0.5, np.float16))]
    return Custom(), []


def _filler(slot) -> tuple[str, object]:
    """A type and form another input's slot accepts, for a tensor that is not swept."""
    for tname in ("FLOAT32", "INT32", "INT8", "BOOL", "INT64"):
        if slot.allows(tname, "none"):
            return tname, None
        if slot.allows(tname, "per-tensor"):
            return tname, PerTensor(0.05)
    return "FLOAT32", None


_KINDS = {"FLOAT32": "float", "FLOAT16": "float", "UINT8": "uint8", "INT8": "int8",
          "INT16": "int16"}
_QUANTIZED = {"UINT8", "INT8", "INT16", "INT4", "INT2"}


def _kind(pos: int, tname: str) -> str:
    """The node kind of a generic model (registration.node_kind): float fillers, the
    swept type at ``pos``."""
    if pos == 0:
        return _KINDS.get(tname, tname.lower())
    return "hybrid" if tname in _QUANTIZED else "float"


def generic_model(name: str, custom: str | None, reg, pos: int, tname: str,
                  form: str) -> tuple[bytes, int]:
    """A one-op model whose input ``pos`` is a constant of ``tname`` in ``form`` and whose
    other inputs are runtime tensors of types the kernel accepts there; (model, index of
    the swept tensor)."""
    kernel = reg.kernel
    decl = declaration(kernel).for_kind(_kind(pos, tname))
    n_in, n_out = _arity(name, kernel)
    n = max(n_in, pos + 1)
    tensors, ins = [], []
    for k in range(n):
        if k == pos:
            values = np.zeros(SHAPE, _NUMPY[tname])
            tensors.append(None)
            ins.append(k)
            continue
        t, q = _filler(decl.slot(k))
        tensors.append(A(SHAPE, t, q))
        ins.append(k)
    outs = list(range(len(tensors), len(tensors) + n_out))
    tensors.extend(A(SHAPE, "FLOAT32") for _ in outs)
    quant, extra = _quant(form, len(tensors), SHAPE)
    tensors[pos] = W(values, tname, quant, name="swept")
    tensors.extend(extra)
    runtime = [k for k in range(n) if k != pos]
    op = OpSpec("CUSTOM" if custom else name, ins, outs, version=reg.version_min,
                custom_code=custom)
    return write_model(tensors, [op], runtime, outs), pos


def _load(model: bytes) -> None:
    """What loading does before any tensor is prepared: resolve and check every node
    (builder.build_nodes: the declaration check, then the kernel's own check)."""
    Interpreter(model, allocate=False)._build_nodes()


def _is_plain(tname: str, form: str) -> bool:
    """Forms every kernel's tests cover: no or one scale on a whole-byte type."""
    return form in ("none", "per-tensor") and tname not in SUB_BYTE


def _covered(name: str, pos: int, tname: str, form: str) -> bool:
    """Is this declared combination compared with LiteRT somewhere?"""
    if name in qf.OPS and pos == qf.OPS[name].weight_pos:
        # a float weight's per-channel parameters are read on no axis: any axis measured
        forms = ("per-channel:0", "per-channel:last") if tname == "FLOAT32" and \
            form.startswith("per-channel") else (form,)
        return any(LITERT_FORMS.get((name, act, tname, f), ("", ""))[1] == "runs"
                   for act in qf.ACTS for f in forms)
    return False


def _covered_elsewhere(name: str, pos: int, tname: str, form: str, kernel=None) -> bool:
    """COMPARED_ELSEWHERE's entries as a rule."""
    if kernel is not None and not kernel.reads_scales and tname not in SUB_BYTE:
        return True
    if op_metadata.input_roles(name).get(pos) == "b" and form == "per-channel:0":
        return True
    if tname in ("FLOAT32", "FLOAT16", "INT32") or name == "DENSIFY":
        return True
    return name == "EMBEDDING_LOOKUP" and tname in SUB_BYTE and form in ("none", "per-tensor")


def _sweep_cases():
    for name, custom, reg in REGISTRATIONS:
        arity = ARITY.get(name)
        if declaration(reg.kernel) is ANYTHING or (arity is not None and arity.max_inputs == 0):
            continue  # (control flow: see the module docstring; ops without inputs)
        for pos in weight_positions(name):
            for tname in TYPES:
                for form in FORMS:
                    yield name, custom, reg, pos, tname, form


CASES = list(_sweep_cases())


def _sample(cases, every: int):
    """A deterministic sample of ``cases``: each one whose label hashes into it."""
    return [c for c in cases if zlib.crc32(repr(c[:1] + c[3:]).encode()) % every == 0]


def _check_case(name, custom, reg, pos, tname, form):
    """None when the combination is refused by the declaration check, naming the op, the
    swept tensor and its form, or when it is declared and compared with LiteRT; else why
    not.  (A declared combination may still be refused by the kernel's own check: the
    generic model's shapes are not the op's.)"""
    model, swept = generic_model(name, custom, reg, pos, tname, form)
    try:
        _load(model)
        refusal = None
    except UnsupportedOpError as exc:
        refusal = str(exc).splitlines()[-1]
    except ExecutionError as exc:  # the kernel's own check or init: the forms passed
        refusal = f"kernel check or init: {exc}"
    except Exception as exc:  # noqa: BLE001 - anything else is a defect
        return f"{name} input {pos} {tname} {form}: {type(exc).__name__}: {exc}"[:300]
    if refusal is not None and ("is not implemented here (" in refusal
                                or "computes this form without meaning (" in refusal):
        named = f"input {pos} (tensor {swept} " in refusal and name in refusal and \
            (f"[{form.split(':')[0]}" in refusal or f"{tname} is not implemented" in refusal)
        return None if named else (f"{name} input {pos} {tname} {form}: the refusal does "
                                   f"not name the op, the tensor and the form: {refusal}")
    if _is_plain(tname, form) or _covered(name, pos, tname, form) or \
            _covered_elsewhere(name, pos, tname, form, reg.kernel):
        return None
    return (f"{name} input {pos} {tname} {form}: declared, and no LiteRT comparison covers "
            f"it ({'refused by the kernel: ' + refusal if refusal else 'loads'})")


def test_only_control_flow_kernels_accept_everything():
    loose = sorted({name for name, _, reg in REGISTRATIONS
                    if declaration(reg.kernel) is ANYTHING and not reg.kernel.calls_subgraphs})
    assert loose == []


@pytest.mark.slow
def test_undeclared_forms_are_refused_every_kernel():
    bad = [why for case in CASES if (why := _check_case(*case))]
    assert not bad, f"{len(bad)} of {len(CASES)}:\n" + "\n".join(bad[:40])


def test_undeclared_forms_are_refused_sample():
    sample = _sample(CASES, 20)
    assert len(sample) > 400
    assert {c[0] for c in sample} >= {"FULLY_CONNECTED", "EMBEDDING_LOOKUP", "ADD"}
    bad = [why for case in sample if (why := _check_case(*case))]
    assert not bad, "\n".join(bad[:40])


def test_a_refusal_names_op_tensor_and_form():
    reg = next(r for n, _, r in REGISTRATIONS if n == "ADD")
    model, swept = generic_model("ADD", None, reg, 0, "INT8", "per-channel:0")
    with pytest.raises(UnsupportedOpError, match=r"ADD v1 input 0 \(tensor 0 'swept'\): INT8 "
                       r"with per-channel on axis 0 \(4 scales\) \[per-channel:0\] is not "
                       r"implemented here"):
        Interpreter(model)


# -- the weights matrix against LiteRT --------------------------------------------------
MATRIX = list(qf.combos())


def _matrix_case(op, act, wtype, form):
    try:
        model, inputs, _, _ = qf.build(op, act, wtype, form,
                                       np.random.default_rng(zlib.crc32(f"{op}{act}{wtype}{form}".encode())))
    except qf.Skip:
        return None
    try:
        interp = Interpreter(model)
    except UnsupportedOpError:
        return None
    interp.set_inputs(inputs)
    interp.invoke()
    sg = interp.subgraphs[0]
    outs = [sg.tensors[o].data for o in sg.outputs]
    diffs = []
    warnings.filterwarnings("ignore")
    for resolver in ("BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF"):
        try:
            ref = litert_run(model, inputs, resolver)
        except Exception:  # noqa: BLE001 - LiteRT refuses with this resolver
            continue
        worst = 0.0
        for o, ours in zip(sg.outputs, outs):
            theirs = ref[o]
            if ours.dtype.kind == "f":
                scale = max(1.0, float(np.max(np.abs(theirs)))) if theirs.size else 1.0
                worst = max(worst, float(np.max(np.abs(ours.astype(np.float64) - theirs),
                                                initial=0.0)) / scale)
            elif not np.array_equal(ours, theirs):
                worst = float("inf")
        if worst <= 1e-5:
            return None
        diffs.append(f"{resolver} {worst:g}")
    return f"{op} {act} {wtype} {form}: runs here, equals no LiteRT result ({diffs})"


# FULLY_CONNECTED's INT4 hybrid paths crash LiteRT's heap in some combinations (its 4-bit
# kernel writes a filter scale per given scale into a vector of one per output row): the
# matrix runs only the combinations that load here, which LiteRT runs safely.
@pytest.mark.slow
def test_matrix_refused_or_equal_to_litert_full():
    bad = [why for c in MATRIX if (why := _matrix_case(*c))]
    assert not bad, "\n".join(bad)


def test_matrix_refused_or_equal_to_litert_sample():
    sample = [c for c in MATRIX if c[0] in ("FULLY_CONNECTED", "EMBEDDING_LOOKUP")
              and c[2] in ("INT8", "INT4", "INT2", "FLOAT32")] + \
        [c for c in MATRIX if zlib.crc32(repr(c).encode()) % 8 == 0]
    bad = [why for c in sample if (why := _matrix_case(*c))]
    assert not bad, "\n".join(bad)


def test_generated_table_is_current():
    """litert_forms.py's "here" column is what this interpreter does now (regenerate it
    with tools/sweep_quant_forms.py --write when a declaration changes)."""
    rng = np.random.default_rng(0)
    stale = []
    seen = 0
    for op, act, wtype, form in MATRIX:
        try:
            model, inputs, _, _ = qf.build(op, act, wtype, form, rng)
        except qf.Skip:
            continue
        seen += 1
        try:
            _load(model)
            here = "runs"
        except UnsupportedOpError:
            here = "refused"
        entry = LITERT_FORMS.get((op, act, wtype, form))
        if entry is None or entry[1] != here:
            stale.append(f"{op} {act} {wtype} {form}: table {entry and entry[1]}, now {here}")
    assert seen == len(LITERT_FORMS)
    assert not stale, "run tools/sweep_quant_forms.py --write:\n" + "\n".join(stale)
