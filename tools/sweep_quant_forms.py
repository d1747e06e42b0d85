"""Sweep op x activation x weight type x quantization form against LiteRT 2.3.0, and
generate tflite_viewer/interpreter/litert_forms.py (what `tflite-viewer ops` reports).

    PYTHONPATH=. python tools/sweep_quant_forms.py [--write] [OP ...]

For every op with a weight-like input (tests/interpreter/quant_form_models.py: FULLY_CONNECTED,
CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV, BATCH_MATMUL, PRELU, EMBEDDING_LOOKUP,
DEQUANTIZE), every weight type and quantization form (none, per-tensor, per-channel on
the first and on the last axis, blockwise, custom), with float or int8 activations:

* LiteRT's builtin kernels (BUILTIN_WITHOUT_DEFAULT_DELEGATES) either refuse the model
  ("refuses"), or compute it: "runs" when the result agrees (within 3% of its range;
  the quantization noise of these models is below 1%) with the same op computed in float
  on the weight
  dequantized as its form says, "wrong" when it does not (ignored scales, zeros, the bias
  alone) or when the form gives no real value to compare with (custom details, an
  integer weight without a scale);
* this interpreter refuses it at load ("refused", with the reason) or runs it, and then
  must equal LiteRT's builtin or reference kernels (bit for bit on integers, 1e-5
  relative on floats), else the sweep fails.

Prints one line per combination; ``--write`` regenerates the table.
"""
from __future__ import annotations

import argparse
import re
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.interpreter import quant_form_models as qf  # noqa: E402
from tests.interpreter.llm_models import litert_run  # noqa: E402
from tflite_viewer.interpreter import Interpreter, UnsupportedOpError  # noqa: E402

OUT = ROOT / "tflite_viewer" / "interpreter" / "litert_forms.py"
#: LiteRT's result "runs" within this fraction of the float result's range (the
#: quantization noise of these models is below 1%; garbage is far above)
MEANINGFUL = 0.03


def _run_litert(model, inputs, resolver):
    """LiteRT's tensors after a run, in a forked child: some combinations corrupt LiteRT's
    heap (FULLY_CONNECTED's 4-bit path writes one filter scale per scale given into a
    vector of one per output row), which would take the sweep down with it."""
    import os
    import pickle
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, send the result or the error, leave at once
        os.close(read)
        try:
            result = ("ok", litert_run(model, inputs, resolver))
        except Exception as exc:  # noqa: BLE001
            result = ("error", str(exc))
        with os.fdopen(write, "wb") as f:
            pickle.dump(result, f)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        raise RuntimeError(f"LiteRT crashed (child status {status})")
    kind, value = pickle.loads(data)
    if kind == "error":
        raise RuntimeError(value)
    return value


def _output(model, inputs, outs, facts):
    """The op's output from a tensor dict, as float32 real values."""
    from tflite_viewer.model import load_model
    o = load_model(model).subgraphs[0].outputs[0]
    value = outs[o]
    q = facts.get("out_q")
    if q is not None:
        return (value.astype(np.float32) - q[1]) * q[0]
    return value.astype(np.float32)


def _rel(a, b) -> float:
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a64.shape != b64.shape:
        return float("inf")
    scale = max(1e-6, float(np.max(np.abs(b64)))) if b64.size else 1.0
    with np.errstate(invalid="ignore"):
        d = np.abs(a64 - b64)
    return float(np.max(np.where(np.isnan(d), np.inf, d), initial=0.0)) / scale


def _bias_alone(model, got, facts) -> str | None:
    """What a meaningless result is, when it is something simple: all zeros, or the op's
    bias alone (the weights' product left out), as the op's real output values."""
    if not np.any(got):
        return "its output is all zeros"
    from tflite_viewer.model import load_model
    sg = load_model(model).subgraphs[0]
    op = sg.operators[0]
    if op.opcode.builtin_name not in ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D") \
            or len(op.inputs) < 3 or op.inputs[2] < 0 or sg.tensors[op.inputs[2]].data() is None:
        return None
    bias_t = sg.tensors[op.inputs[2]]
    bias = bias_t.dequantized() if bias_t.quantization is not None and \
        bias_t.quantization.has_scale else bias_t.data().astype(np.float32)
    step = facts["out_q"][0] if facts.get("out_q") is not None else 1e-6
    return "its output is the bias alone: the weights' product is zero" if np.allclose(
        got, np.broadcast_to(bias, got.shape), atol=step, rtol=1e-5) else None


def litert_status(model, inputs, float_model, facts) -> tuple[str, str]:
    try:
        outs = _run_litert(model, inputs, "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
    except Exception as exc:  # noqa: BLE001 - LiteRT refusing is a result
        return "refuses", str(exc).splitlines()[0][:120]
    got = _output(model, inputs, outs, facts)
    if facts.get("real_output") is not None:
        ref = facts["real_output"]
    elif float_model is not None:
        fouts = _run_litert(float_model, facts["float_inputs"], "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
        ref = _output(float_model, facts["float_inputs"], fouts, {})
    else:
        return "wrong", "no real values to compare with (no scale, or custom details)"
    err = _rel(got, ref)
    if err <= MEANINGFUL:
        return "runs", f"{err:.2g} of the float result"
    simple = _bias_alone(model, got, facts)
    return "wrong", (f"{simple}; " if simple else "") + \
        f"{err:.2g} of the float result's range away from it"


def here_status(model, inputs) -> tuple[str, str, dict | None]:
    try:
        interp = Interpreter(model)
    except UnsupportedOpError as exc:
        return "refused", str(exc).splitlines()[-1].strip(), None
    interp.set_inputs(inputs)
    try:
        interp.invoke()
    except Exception as exc:  # noqa: BLE001 - loaded but failed: a defect, reported
        return "FAILS", f"{type(exc).__name__}: {exc}"[:160], None
    sg = interp.subgraphs[0]
    return "runs", "", {t.index: t.data for t in sg.tensors if t.data is not None}


def agrees(ours: dict, model, inputs) -> str | None:
    """None when our outputs equal LiteRT's builtin or reference ones, else the worst
    difference."""
    from tflite_viewer.model import load_model
    outs = load_model(model).subgraphs[0].outputs
    worst = []
    for resolver in ("BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN_REF"):
        try:
            ref = _run_litert(model, inputs, resolver)
        except Exception:  # noqa: BLE001
            continue
        diffs = []
        for o in outs:
            a, b = ours[o], ref[o]
            if a.dtype.kind == "f":
                diffs.append(_rel(a, b))
            else:
                diffs.append(0.0 if np.array_equal(a, b) else float("inf"))
        if max(diffs) <= 1e-5:
            return None
        worst.append(f"{resolver}: {max(diffs):.3g}")
    return "; ".join(worst) or "LiteRT ran it once but not again"


def sweep(ops=None, seed: int = 0):
    """Yield (op, act, wtype, form, litert status, litert note, here status, here note)."""
    rng = np.random.default_rng(seed)
    for op, act, wtype, form in qf.combos(ops):
        try:
            model, inputs, float_model, facts = qf.build(op, act, wtype, form, rng)
        except qf.Skip:
            continue
        lit, lnote = litert_status(model, inputs, float_model, facts)
        here, hnote, ours = here_status(model, inputs)
        if here == "runs":
            bad = agrees(ours, model, inputs)
            if bad is not None:
                here, hnote = "DIFFERS", bad
        yield op, act, wtype, form, lit, lnote, here, hnote


HEADER = '''# GENERATED FILE - DO NOT EDIT.
"""GENERATED by tools/sweep_quant_forms.py: weights in every type and quantization form,
LiteRT {version}'s builtin kernels against this interpreter.

(op, activations, weight type, form) -> (LiteRT, this interpreter, LiteRT's note, note
here).  LiteRT: "runs" (agrees with the op computed in float on the dequantized weight),
"wrong" (runs but does not: ignored scales, zeros, the bias alone; or no real value to
compare with; its note says how far off, or what it computes) or "refuses" (its note
says why).  Here: "runs" (equal to LiteRT's builtin or reference kernels: checked by the
sweep and by tests/interpreter/test_quant_forms_sweep.py) or "refused" (at load, with the
reason in the note).
"""

LITERT_FORMS: dict[tuple[str, str, str, str], tuple[str, str, str, str]] = {{
'''


def _short(message: str, op: str) -> str:
    """A refusal without the op's name and version in front and the place behind."""
    message = re.sub(r" \[subgraph \d+ op \d+\]$", "", message)
    return re.sub(rf"^{op} v\d+:? ", "", message)


def write(rows) -> None:
    import ai_edge_litert
    version = getattr(ai_edge_litert, "__version__", "2.3.0")
    lines = [HEADER.format(version=version)]
    for op, act, wtype, form, lit, lnote, here, hnote in rows:
        note = _short(hnote, op) if here == "refused" else ""
        lines.append(f"    ({op!r}, {act!r}, {wtype!r}, {form!r}): ({lit!r}, {here!r}, "
                     f"{'' if lit == 'runs' else lnote!r}, {note!r}),\n")
    lines.append("}\n\n#: the weight's input position of each op of the sweep\n"
                 "WEIGHT_POSITIONS: dict[str, int] = {\n")
    lines.extend(f"    {op!r}: {spec.weight_pos},\n" for op, spec in qf.OPS.items())
    lines.append("}\n")
    OUT.write_text("".join(lines))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--write", action="store_true")
    p.add_argument("ops", nargs="*")
    args = p.parse_args(argv[1:])
    warnings.filterwarnings("ignore")
    rows = list(sweep(args.ops or None))
    failed = False
    for op, act, wtype, form, lit, lnote, here, hnote in rows:
        print(f"{op:18} {act:5} {wtype:7} {form:16} LiteRT {lit:8} here {here:8} "
              f"{hnote or lnote}")
        failed |= here in ("DIFFERS", "FAILS")
    if failed:
        print("some combinations run here but differ from LiteRT", file=sys.stderr)
        return 1
    if args.write:
        write(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
