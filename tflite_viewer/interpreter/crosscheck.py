"""The LiteRT cross-check backend: run a model in LiteRT and in this interpreter on the same
inputs and compare every operator output.

>>> from tflite_viewer.interpreter.crosscheck import compare_with_litert
>>> report = compare_with_litert("model.tflite", {"input": x})
>>> report.ok, report.first_divergence
>>> print(report.format_table())

LiteRT runs with ``experimental_preserve_all_tensors=True`` (every intermediate tensor stays
readable) and, by default, its reference kernels (``BUILTIN_REF``), falling back to its
optimized kernels without delegates when the reference kernels cannot run the model.
Against the interpreter's ``xnnpack`` kernel set it runs with its default XNNPACK delegate
(``BUILTIN``): the tensors a partition keeps to itself are then never written by LiteRT
and are left out of the comparison.
When LiteRT crashes keeping every tensor, the comparison can run on an *exposed copy*: the
model with every operator output made a model output, made in memory by the editor, which
LiteRT runs without that option (the caller passes the editor's function in: the
interpreter does not import the editor).  A stateful model (resource variables) can be
invoked several times in a row on both sides and compared at every call.
LiteRT runs in a **child process**: some models make it abort or crash (a reference kernel
aborting in ``allocate_tensors``, a segmentation fault), and that must not take the caller
(a CLI run, the window) down with it.  A crash becomes a `LiteRTCrashError`
(`litert_process` runs the child).

Nothing here imports LiteRT: `litert_available` looks for the ``ai_edge_litert`` package
without importing it (it is only in the ``litert`` and ``test`` extras), and only the
child process imports it.

LiteRT exposes the tensors of the subgraph it ran, not those of the WHILE/IF bodies it
called, so the comparison covers every operator output of the entry subgraph: end to end
and op-isolated, with the metrics and tolerances described in `.crosscheck_report`.
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
from typing import Any, Callable, Mapping

import numpy as np

from ..model import Model
from ..model.errors import TFLiteViewerError
# the comparison itself lives in .crosscheck_report; these names stay importable from here
from .crosscheck_report import (DEFAULT_TOLERANCE, DEFAULT_UNITS, KERNELS, MODES,  # noqa: F401
                         OPTIMIZED_UNITS, CrossCheckReport, Error, LiteRTRun, TensorRow,
                         compare_runs, compare_tensor, composite_bodies, isolated_run,
                         real_values, resolve_mode, similarity)
from .inputs import complete_inputs, input_specs
from .kernel_sets import RESOLVERS as RESOLVERS_BY_KERNELS, why_builtin
from .kernel_sets import reference_lacks  # noqa: F401  (importable from here too)
from .litert_process import (EXPOSED, LITERT_MODES, PRESERVE, LiteRTCrashError, LiteRTError,
                             deleted_afterwards, model_file, refuse_side_files, run_child,
                             write_temp)

DEFAULT_TIMEOUT = 600.0
RESOLVERS = ("BUILTIN_REF", "BUILTIN", "BUILTIN_WITHOUT_DEFAULT_DELEGATES")
#: what a failed BUILTIN_REF run falls back to: LiteRT's optimized kernels, without the
#: default (XNNPACK) delegate, which would hide the intermediate tensors it fuses
FALLBACK_RESOLVER = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"
#: the kernel sets whose float sums the interpreter reproduces in their order (BUILTIN:
#: LiteRT's default, XNNPACK's products under the interpreter's ``xnnpack`` set)
EXACT_ORDER_RESOLVERS = ("BUILTIN_REF", "BUILTIN_WITHOUT_DEFAULT_DELEGATES", "BUILTIN")


class LiteRTUnavailableError(TFLiteViewerError):
    """ai-edge-litert is not installed."""


def litert_available() -> bool:
    """Whether ai-edge-litert (LiteRT's Python package) is installed; does not import it."""
    try:
        return importlib.util.find_spec("ai_edge_litert") is not None
    except (ImportError, ValueError):
        return False


def require_litert() -> None:
    if not litert_available():
        raise LiteRTUnavailableError(
            "LiteRT is not installed: the cross-check needs the ai-edge-litert package "
            "(pip install 'tflite-viewer[litert]')")


def run_litert(model: Model | str | os.PathLike | bytes, inputs: Mapping[str, Any],
               signature: str | None = None, resolver: str = "BUILTIN_REF", *,
               fallback: bool = True, timeout: float = DEFAULT_TIMEOUT,
               mode: str = "auto", expose: "Callable[[bytes, int], bytes] | None" = None
               ) -> LiteRTRun:
    """Run the model in LiteRT (in a child process) on inputs keyed by input name (as
    `tflite_viewer.interpreter.inputs.complete_inputs` gives them); see `run_litert_steps`,
    of which this is one invocation."""
    return run_litert_steps(model, [inputs], signature, resolver, fallback=fallback,
                            timeout=timeout, mode=mode, expose=expose)[0]


def run_litert_steps(model: Model | str | os.PathLike | bytes,
                     steps: "list[Mapping[str, Any]]", signature: str | None = None,
                     resolver: str = "BUILTIN_REF", *, fallback: bool = True,
                     timeout: float = DEFAULT_TIMEOUT, mode: str = "auto",
                     expose: "Callable[[bytes, int], bytes] | None" = None
                     ) -> list[LiteRTRun]:
    """LiteRT invoked once per entry of ``steps`` (inputs keyed by input name) in one child
    process, so that resource variables carry from one invocation to the next; a
    `LiteRTRun` per invocation.

    ``mode`` says how LiteRT keeps the tensors to compare: ``"preserve"`` (every tensor,
    ``experimental_preserve_all_tensors``), ``"exposed"`` (a copy of the model in which
    every operator output of the subgraph is a model output: LiteRT keeps outputs valid
    after an invoke without that option), or ``"auto"``: preserve, and when LiteRT crashes
    keeping every tensor, the exposed copy.  The copy is made by ``expose(model bytes,
    subgraph) -> bytes`` -- the editor's (`tflite_viewer.edit.expose.expose_op_outputs`),
    passed in by the caller because the interpreter does not import the editor; without
    it ``"auto"`` is ``"preserve"``.

    With ``fallback`` (the default), a ``BUILTIN_REF`` run that fails or crashes is retried
    with LiteRT's optimized kernels (without delegates), and the run says why; so is a
    model the reference kernels would compute wrong (`reference_lacks`: blockwise weights),
    without trying them.  Raises
    `LiteRTCrashError` when LiteRT crashes, `LiteRTError` when it refuses the model."""
    require_litert()
    if resolver not in RESOLVERS:
        raise ValueError(f"resolver must be one of {', '.join(RESOLVERS)}, not {resolver!r}")
    if mode not in LITERT_MODES:
        raise ValueError(f"mode must be one of {', '.join(LITERT_MODES)}, not {mode!r}")
    if mode == EXPOSED and expose is None:
        raise ValueError("mode 'exposed' needs the function that exposes every op output")
    if not steps:
        raise ValueError("run_litert_steps: no invocation to run")
    with deleted_afterwards() as tmp:
        m, path = model_file(model, tmp)
        refuse_side_files(m)
        specs = input_specs(m, signature)
        arrays = []
        for inputs in steps:
            missing = [s.name for s in specs if s.name not in inputs]
            if missing:
                raise ValueError(f"run_litert: no value for input(s) {', '.join(missing)}")
            arrays.append([np.asarray(inputs[s.name]) for s in specs])
        subgraph = specs[0].subgraph if specs else (
            m.signature(signature).subgraph_index if signature is not None else 0)
        num_tensors = len(m.subgraphs[subgraph].tensors)
        inner = sorted(composite_bodies(m.subgraphs[subgraph], m).values())
        exposed_path: list[str] = []

        def attempt(kernels: str, keep: str) -> list[LiteRTRun]:
            if keep == PRESERVE:
                return run_child(path, arrays, [s.name for s in specs],
                                  [s.tensor for s in specs], signature, subgraph,
                                  num_tensors, kernels, timeout, inner=inner)
            if not exposed_path:
                data = bytes(np.asarray(m.data, dtype=np.uint8))
                exposed_path.append(write_temp(expose(data, subgraph), tmp))
            op_outputs = sorted({o for op in m.subgraphs[subgraph].operators
                                 for o in op.outputs if o >= 0})
            return run_child(exposed_path[0], arrays, [s.name for s in specs],
                              [s.tensor for s in specs], signature, subgraph, num_tensors,
                              kernels, timeout, preserve=False, exposed=op_outputs)

        keeps = [mode] if mode != "auto" else (
            [PRESERVE, EXPOSED] if expose is not None else [PRESERVE])
        why_not_ref = reference_lacks(m) if fallback and resolver == "BUILTIN_REF" else None
        reasons: list[str] = []
        if why_not_ref is not None:  # the reference kernels would compute it wrong
            plan = [(FALLBACK_RESOLVER, k) for k in keeps]
            reasons.append(why_not_ref)
        else:
            plan = [(resolver, k) for k in keeps]
            if fallback and resolver == "BUILTIN_REF":
                plan += [(FALLBACK_RESOLVER, k) for k in keeps]
            elif resolver == FALLBACK_RESOLVER and why_builtin(m) is not None:
                # why the builtin kernels are this model's oracle (`kernel_sets`)
                reasons.append(reference_lacks(m) or why_builtin(m))
        first: LiteRTError | None = None
        for kernels, keep in plan:
            if mode == "auto" and keep == EXPOSED and not any(
                    isinstance(e, LiteRTCrashError) and e.kernels == kernels
                    for e in (_failures(first) if first is not None else [])):
                continue  # only a crash keeping every tensor sends it to the exposed copy
            try:
                runs = attempt(kernels, keep)
            except LiteRTError as exc:
                exc.kernels = kernels  # type: ignore[attr-defined]
                exc.previous = first  # type: ignore[attr-defined]
                first = exc
                reasons.append(exc.reason)
                continue
            if reasons:
                for run in runs:
                    run.fallback_reason = "; ".join(reasons)
            return runs
        assert first is not None
        raise _first_crash(first)


def _failures(last: LiteRTError) -> list[LiteRTError]:
    """Every failure of one `run_litert_steps` call, first to last."""
    out: list[LiteRTError] = []
    e: LiteRTError | None = last
    while e is not None:
        out.append(e)
        e = getattr(e, "previous", None)
    return out[::-1]


def _first_crash(last: LiteRTError) -> LiteRTError:
    """What a call that found no way to run LiteRT raises: its first crash (a crash says
    more than a later refusal), else its last error."""
    failures = _failures(last)
    return next((e for e in failures if isinstance(e, LiteRTCrashError)), failures[-1])


def compare_with_litert(model_path: Model | str | os.PathLike | bytes,
                        inputs: Mapping[str, Any] | None = None, rounding: str | None = None,
                        resolver: str | None = None, *, signature: str | None = None,
                        seed: int = 0, tolerance: float = DEFAULT_TOLERANCE,
                        units: int | None = None, mode: str = "auto",
                        hook: Callable[[Any, Any], Any] | None = None,
                        interpreter=None, fallback: bool = True,
                        timeout: float = DEFAULT_TIMEOUT, invocations: int = 1,
                        litert_mode: str = "auto",
                        expose: "Callable[[bytes, int], bytes] | None" = None
                        ) -> CrossCheckReport:
    """Run the model here and in LiteRT on the same inputs and compare every op output.

    ``inputs`` are keyed by input tensor name, signature input name or ``s{sg}_t{i}``;
    missing ones are seeded from ``seed`` (`seeded_inputs`).  ``rounding`` goes to
    `Interpreter` (None: its default).  ``hook`` is added as an
    "after" hook of the interpreter (``hook(interpreter, event)`` after every op) — a way to
    inspect or perturb our run.  Pass an ``interpreter`` that already ran on the same inputs
    to compare that run instead of making a new one.

    ``resolver`` is LiteRT's op resolver type; None (the default) takes the kernel set our
    interpreter follows (`kernel_sets.RESOLVERS`: the reference kernels, or the builtin
    ones for an LLM export).

    ``invocations`` > 1 invokes both several times in a row (a streaming model's resource
    variables carry its state from one call to the next): the given inputs are used at
    every call, missing ones seeded with ``seed + k`` at call k; every call is compared,
    and the report is that of the first call that diverges (else the last one), with
    ``report.invocations`` and ``report.invocation`` saying which.  ``litert_mode`` and
    ``expose`` choose how LiteRT keeps the tensors (`run_litert_steps`); the report says
    which mode was used (``report.litert_mode``).

    Raises `UnsupportedOpError` when this interpreter cannot run the model,
    `LiteRTCrashError` / `LiteRTError` when LiteRT cannot, `LiteRTUnavailableError`
    without ai-edge-litert."""
    require_litert()
    if invocations < 1:
        raise ValueError(f"invocations must be 1 or more, not {invocations}")
    if interpreter is not None and invocations > 1:
        raise ValueError("several invocations need a fresh interpreter, not one that ran")
    with deleted_afterwards() as tmp:
        model, path = model_file(model_path, tmp)
        steps = [complete_inputs(model, inputs or {}, seed + k, signature)[0]
                 for k in range(invocations)]
        if interpreter is not None and hook is not None:
            raise ValueError("pass either an interpreter that already ran or a hook, not both")
        ran = interpreter is not None
        if interpreter is None:
            from .interpreter import Interpreter
            interpreter = Interpreter(model) if rounding is None else \
                Interpreter(model, rounding=rounding)
            if hook is not None:
                interpreter.add_hook("after", hook)
        if resolver is None:
            resolver = RESOLVERS_BY_KERNELS[interpreter.kernels]
        runs = run_litert_steps(path, steps, signature, resolver, fallback=fallback,
                                timeout=timeout, mode=litert_mode, expose=expose)
        return compare_steps(interpreter, model, steps, runs, first_ran=ran,
                             signature=signature, tolerance=tolerance, units=units,
                             model_name=str(model.path or path), mode=mode)


def is_stateful(model: Model) -> bool:
    """Whether a run leaves state for the next one: resource variables (VAR_HANDLE,
    ASSIGN_VARIABLE) or variable tensors (the TFLite Micro way of keeping an RNN's state)."""
    for sg in model.subgraphs:
        if any(op.name in ("VAR_HANDLE", "ASSIGN_VARIABLE") for op in sg.operators):
            return True
        if any(t.is_variable for t in sg.tensors):
            return True
    return False


#: how many invocations a cross-check of a stateful model compares by default
STATEFUL_INVOCATIONS = 4


@contextlib.contextmanager
def _reference_sums(interpreter, resolver: str):
    """Against LiteRT's reference kernels, or its builtin kernels without a delegate, an
    interpreter that computes with BLAS float sums because ``auto`` was asked adds in
    their order for the comparison (every compared op is then their bits; `float_sums`,
    `kernel_sets`), and goes back to BLAS afterwards.  Yields whether it switched (a run
    made before is to be made again)."""
    from .float_sums import reference_for_ref_check
    switch = resolver in EXACT_ORDER_RESOLVERS and not interpreter.reference_float_sums \
        and reference_for_ref_check(interpreter.float_sums_asked)
    if switch:
        interpreter.reference_float_sums = True
    try:
        yield switch
    finally:
        if switch:
            interpreter.reference_float_sums = False


def _hide_partition_internals(runs: list[LiteRTRun], model: Model) -> None:
    """With its default delegate (BUILTIN), LiteRT never writes the tensors an XNNPACK
    partition keeps to itself (XNNPACK holds them in its own buffers): what it hands out
    for them is not a value, so they are dropped from its runs and compared nowhere
    (`delegation.xnnpack.Delegated.internal`)."""
    if not runs or runs[0].resolver != "BUILTIN":
        return
    from ..delegation.facts import ModelFacts
    from ..delegation.xnnpack import delegated_ops
    internal = delegated_ops(ModelFacts(model)).internal
    for run in runs:
        for t in internal.get(run.subgraph, ()):
            run.tensors.pop(t, None)
        for g, tensors in run.inner.items():
            for t in internal.get(g, ()):
                tensors.pop(t, None)


def compare_steps(interpreter, model: Model, steps: "list[Mapping[str, np.ndarray]]",
                  runs: list[LiteRTRun], *, first_ran: bool = False,
                  signature: str | None = None, tolerance: float = DEFAULT_TOLERANCE,
                  units: int | None = None, model_name: str = "",
                  mode: str = "auto") -> CrossCheckReport:
    """Invoke the interpreter on each entry of ``steps`` in turn (the first already done
    when ``first_ran``) and compare each invocation with LiteRT's (``runs``, from
    `run_litert_steps`): the report of the first invocation that diverges, else of the
    last, saying how many were compared and how LiteRT kept its tensors.  Against the
    reference kernels an ``auto`` interpreter adds its float sums in their order
    (`_reference_sums`), its first run made again if it was made with BLAS sums."""
    reports = []
    _hide_partition_internals(runs, model)
    with _reference_sums(interpreter, runs[0].resolver) as switched:
        if switched and first_ran:  # that run added in BLAS's order: made again
            interpreter.reset_variables()
            first_ran = False
        for k, (arrays, run) in enumerate(zip(steps, runs)):
            if k or not first_ran:
                interpreter.invoke(arrays, signature=signature)  # by input name
            reports.append(compare_runs(interpreter, run, tolerance=tolerance, units=units,
                                        model_name=model_name, mode=mode))
            if not reports[-1].ok:
                break
    report = reports[-1]
    report.invocations = len(steps)
    report.invocation = len(reports)
    report.litert_mode = runs[0].mode
    return report
