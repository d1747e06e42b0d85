"""The audit of `targets`' verdicts: every "refused" (and "silently wrong") verdict for TFLite
Micro and XNNPACK, checked against the runtime it names.

* **TFLM, refused** (it cannot resolve, prepare or run the operator): the operator alone
  (`extract`) must fail in TFLM's interpreter.  An operator that runs other subgraphs is
  checked on the whole model, which must fail.
* **TFLM, silently wrong** (it runs the operator and computes something else): where TFLM
  runs the whole model, the operator's output as TFLM leaves it (kPreserveAllTensors) must
  differ from LiteRT's (shape or values); elsewhere the operator alone, given the values
  the verdict was computed from, must run in both and differ.
* **XNNPACK, refused** (the delegate takes the operator, then cannot build it): LiteRT with
  its default delegate must fail to prepare the model, and the operator alone, while
  LiteRT without the delegate runs it.  A model with no such verdict must prepare there.

Operators with the same signature (`SubgraphFacts.op_keys`) and the same reason are checked
once for all (the kernel sees the same thing); each verdict is counted.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import numpy as np

from tests.targets.extract import REFERS_TO_SUBGRAPHS, extract, unpack
from tests.targets.oracles import (HARNESS_ERROR, default_path_error, litert_invoked,
                                   litert_outputs, micro_inputs, outputs_close, tflm_run_isolated,
                                   tflm_run_many)
from tflite_viewer.model import load_model
from tflite_viewer.targets import analyze
from tflite_viewer.delegation.facts import ModelFacts
from tflite_viewer.targets.shape_values import ShapeValues
from tflite_viewer.targets.tflm import SILENT
from tflite_viewer.targets.value_shapes import VALUE_INPUTS

WHOLE_MODEL_SECONDS = 10.0
CHUNK = 60  # operators run alone by one TFLM process


@dataclass
class Checked:
    """One verdict and what the runtime said."""

    model: str
    target: str
    subgraph: int
    op: int
    name: str
    verdict: str      # "refused", "silently wrong", or "runs" (a model-level check)
    how: str          # "alone", "whole model", "no oracle"
    holds: bool | None  # None: the runtime could not tell (said why in ``detail``)
    detail: str = ""


def _litert_ok(model: bytes) -> bool:
    try:
        litert_outputs(model, micro_inputs(model))
    except (RuntimeError, ValueError):
        return False
    return True


# -- TFLM ---------------------------------------------------------------------------------------
def _groups(facts: ModelFacts, ops) -> dict[tuple, list]:
    out: dict[tuple, list] = {}
    for o in ops:
        silent = o.reason.startswith(SILENT)
        key = ((o.subgraph, o.index) if silent else
               (o.subgraph, facts[o.subgraph].op_keys[o.index], o.reason))
        out.setdefault(key, []).append(o)
    return out


def _silent_values(facts: ModelFacts, s: int, k: int) -> dict[int, np.ndarray]:
    """The computed value inputs of a value-shaped operator, as the verdict saw them (an
    element only a run knows as 1), to give the operator alone."""
    f = facts[s]
    if f.builtin[k] not in VALUE_INPUTS:
        return {}
    sv = ShapeValues(f)
    out = {}
    for i in VALUE_INPUTS[f.builtin[k]]:
        t = f.inputs[k][i] if i < len(f.inputs[k]) else -1
        if t < 0 or f.static[t]:
            continue
        v = sv.value(t)
        if v is None:
            continue
        dtype = np.int64 if f.type(t) == "INT64" else np.int32
        out[t] = np.where(v.known, v.values, 1).astype(dtype)
    return out


@dataclass
class _Plan:
    """One model's TFLM verdicts to check: groups of equal verdicts, the silent ones'
    outputs, and the operators given alone (keyed ``model#group``)."""

    facts: ModelFacts
    groups: dict[tuple, list]
    silent: list
    outs: list[tuple[int, int]]
    alone: dict[str, bytes]


def _plan_tflm(name: str, model: bytes) -> _Plan | None:
    facts = ModelFacts(load_model(model))
    refused = [o for o in analyze(facts.model, ["tflm"]).results["tflm"].ops
               if o.verdict == "refused"]
    if not refused:
        return None
    groups = _groups(facts, refused)
    silent = [g[0] for g in groups.values() if g[0].reason.startswith(SILENT)]
    outs = [(o.subgraph, facts[o.subgraph].outputs[o.index][0]) for o in silent]
    alone = {}
    objects = unpack(model)
    for key, group in groups.items():
        o = group[0]
        if facts[o.subgraph].builtin[o.index] not in REFERS_TO_SUBGRAPHS:
            values = _silent_values(facts, o.subgraph, o.index) if o in silent else None
            alone[f"{name}#{key!r}"] = extract(objects, o.subgraph, o.index, values)
    return _Plan(facts, groups, silent, outs, alone)


def audit_tflm(models: dict[str, bytes]) -> list[Checked]:
    """Every TFLM refusal of these models, checked (see the module docstring): the
    operators alone run in one TFLM process, a whole model in a process of its own (with a
    time limit: TFLM loops forever on some) where a verdict needs it."""
    plans = {name: p for name, model in models.items()
             if (p := _plan_tflm(name, model)) is not None}
    alone = list((k, v) for p in plans.values() for k, v in p.alone.items())
    micro = {}
    for start in range(0, len(alone), CHUNK):  # (a child's time limit holds for a chunk)
        micro.update(tflm_run_many(dict(alone[start:start + CHUNK]), fork=True))
    checked = []
    for name, p in plans.items():
        needs_whole = p.silent or any(f"{name}#{key!r}" not in micro for key in p.groups)
        whole = _whole_tflm(models[name], p.outs) if needs_whole else None
        for key, group in p.groups.items():
            o, tag = group[0], f"{name}#{key!r}"
            if o in p.silent:
                out = (o.subgraph, p.facts[o.subgraph].outputs[o.index][0])
                how, holds, detail = _silent_holds(o, whole, p.outs.index(out), models[name],
                                                   p.alone.get(tag), micro.get(tag))
            elif tag in micro:
                how, holds, detail = "alone", _failed(micro[tag]), micro[tag].log[-200:]
            else:
                how, holds, detail = "whole model", _failed(whole), whole.log[-200:]
            checked += [Checked(name, "tflm", v.subgraph, v.index, v.op,
                                "silently wrong" if o in p.silent else "refused", how, holds,
                                detail) for v in group]
    return checked


def _failed(r) -> bool | None:
    """TFLM failed (True), ran or is still running (False), or the harness could not tell
    (None: the test's code failed, not TFLM)."""
    if r.timed_out:
        return False
    if r.log.startswith(HARNESS_ERROR):
        return None
    if not r.ok and r.log.startswith("child exited"):  # killed by a signal: TFLM aborted
        return True if r.log.startswith("child exited -") else None
    return not r.ok


def _whole_tflm(model: bytes, wanted: list[tuple[int, int]]):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.tflite")
        with open(path, "wb") as fh:
            fh.write(model)
        return tflm_run_isolated(path, micro_inputs(model), WHOLE_MODEL_SECONDS, wanted)


def _silent_holds(o, whole, i: int, model: bytes, alone: bytes | None, micro):
    """Whether TFLM computes something else for ``o`` than LiteRT."""
    if whole.ok and o.subgraph == 0:
        theirs = whole.tensors[i]
        out = load_model(model).subgraphs[o.subgraph].operators[o.index].outputs[0]
        try:
            ref = litert_tensor(model, micro_inputs(model), o.subgraph, out)
        except (RuntimeError, ValueError) as exc:  # LiteRT refuses these input values
            return "no oracle", None, f"LiteRT refuses the inputs: {exc}"
        return "whole model", not outputs_close(theirs, ref), f"{theirs.shape} vs {ref.shape}"
    if alone is None or micro is None:
        return "no oracle", None, "the operator runs other subgraphs"
    if _failed(micro) is None:
        return "no oracle", None, micro.log[-200:]
    if not micro.ok:
        return "alone", False, f"TFLM refuses the operator alone: {micro.log[-200:]}"
    try:
        ref = litert_outputs(alone, micro_inputs(alone))
    except (RuntimeError, ValueError) as exc:
        return "no oracle", None, f"LiteRT refuses the operator alone: {exc}"
    same = all(outputs_close(a, b) for a, b in zip(micro.outputs, ref))
    return "alone", not same, f"{[a.shape for a in micro.outputs]} vs {[b.shape for b in ref]}"


def litert_tensor(model: bytes, inputs: list[np.ndarray], subgraph: int, t: int) -> np.ndarray:
    """Tensor ``t`` of ``subgraph`` after LiteRT (no delegate) ran the model on ``inputs``."""
    return litert_invoked(model, inputs, preserve=True).get_tensor(t, subgraph)


# -- XNNPACK ------------------------------------------------------------------------------------
def audit_xnnpack(models: dict[str, bytes]) -> list[Checked]:
    """Every model's XNNPACK refusals (and, where there is none, that LiteRT's default
    path prepares the model), checked (see the module docstring)."""
    return [c for name, model in models.items() for c in _audit_xnnpack(name, model)]


def _audit_xnnpack(name: str, model: bytes) -> list[Checked]:
    facts = ModelFacts(load_model(model))
    result = analyze(facts.model, ["xnnpack"]).results["xnnpack"]
    refused = [o for o in result.ops if o.verdict == "refused"]
    error = default_path_error(model)
    objects = unpack(model) if refused else None
    if not refused:
        if error is not None and _litert_ok(model):
            return [Checked(name, "xnnpack", 0, -1, "", "runs", "whole model", False, error)]
        return []
    checked = []
    for group in _groups(facts, refused).values():
        o = group[0]
        alone = extract(objects, o.subgraph, o.index)
        alone_error = default_path_error(alone)
        holds = error is not None and alone_error is not None and _litert_ok(alone)
        checked += [Checked(name, "xnnpack", v.subgraph, v.index, v.op, "refused", "alone",
                            holds, alone_error or error or "LiteRT's default path runs it")
                    for v in group]
    return checked
