"""One fuzz case: a (mutated) model through every layer, with budgets and a watchdog.

`run_case` takes model bytes and drives them through what a user can do with a file:

1. `load_model`, then every view and value accessor (`walk`);
2. `info`: the summary, its text, and its JSON (which must be strict);
3. `graph.build_graph` and `graph.layout` of the first and last subgraph, their JSON;
4. seeded inputs alone (as `quant` and the window make them, before any interpreter), their
   allocation peak measured: making inputs may cost their own bytes plus a bounded scratch
   (`INPUT_SCRATCH`), never a multiple of them;
5. the interpreter with small budgets: build, prepare, seeded inputs, `invoke`;
6. the TFLite Micro and LiteRT memory plans, their `memory` JSON (strict) and text;
7. re-serialization through the editor's tree and writer, and loading the result.

Each step either succeeds or raises a documented error: a `TFLiteViewerError` subclass
(ModelFormatError, UnsupportedOpError, ExecutionError, the budget errors, InputError,
EditError).  Anything else is an *undocumented* exception; a case still running when
the watchdog fires is a *hang*.  Python warnings (numpy's RuntimeWarnings) are recorded
per step: the reader, info and layout must give none (bad scales are findings).  The outcome names the first documented error per step,
so the long mode can print outcomes by error type.  A step whose memory broke its bound
is recorded in ``Outcome.memory``.
"""
from __future__ import annotations

import json
import signal
import time
import traceback
import tracemalloc
import warnings
from dataclasses import dataclass, field

from tflite_viewer.model import ModelFormatError, load_model
from tflite_viewer.model.errors import TFLiteViewerError

#: budgets the fuzzer runs the interpreter with (small: thousands of cases must be quick)
MAX_BYTES = 64 << 20
MAX_ITERATIONS = 200
TIMEOUT = 3.0  # seconds, the interpreter's own wall-clock budget
WATCHDOG = 20.0  # seconds: a case still running then is a hang
#: what making seeded inputs may allocate beyond the inputs themselves (random draws and
#: scaling of one chunk at a time)
INPUT_SCRATCH = 48 << 20


class Hang(BaseException):
    """Raised by the watchdog (a BaseException, so no `except Exception` swallows it)."""


class Undocumented(AssertionError):
    """An exception that is not one of the documented errors."""


@dataclass
class Outcome:
    steps: dict[str, str] = field(default_factory=dict)  # step -> "ok" or error class
    seconds: float = 0.0
    undocumented: str | None = None  # traceback text
    hang: bool = False
    memory: str | None = None  # a step that allocated past its bound, and by how much
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (step, warning)

    @property
    def summary(self) -> str:
        errors = [v for v in self.steps.values() if v != "ok"]
        return errors[0] if errors else "ok"


def _strict_json(text: str) -> None:
    def refuse(name: str):
        raise AssertionError(f"non-standard JSON constant {name}")
    json.loads(text, parse_constant=refuse)


def walk(model) -> None:
    """Every view and value accessor; data-level defects may raise ModelFormatError per
    object (the rest of the model is still walked)."""
    def attempt(fn):
        try:
            fn()
        except ModelFormatError:
            pass

    for name in ("version", "description", "operator_codes", "signature_defs",
                 "metadata_buffer", "external_buffer_groups", "external_buffers",
                 "weights_nbytes", "parameter_count"):
        attempt(lambda name=name: getattr(model, name))
    for name in ("min_runtime_version", "conversion_metadata", "tflite_metadata"):
        attempt(lambda name=name: getattr(model, name))
    attempt(model.op_histogram)
    for b in model.buffers:
        _ = (b.nbytes, b.is_external_layout)
    for m in model.metadata:
        attempt(m.decoded)
    try:
        for f in model.associated_files():
            attempt(lambda f=f: model.read_associated_file(f))
    except ModelFormatError:
        pass
    for sg in model.subgraphs:
        _ = (sg.name, sg.display_name, sg.inputs, sg.outputs)
        for op in sg.operators:
            for name in ("name", "version", "opcode", "options", "custom_options",
                         "called_subgraphs", "inputs", "outputs", "intermediates",
                         "mutating_variable_inputs", "builtin_code", "category"):
                attempt(lambda name=name: getattr(op, name))
        for t in sg.tensors:
            for name in ("name", "type_name", "dtype", "shape", "shape_signature", "rank",
                         "num_elements", "quantization", "sparsity", "kind", "is_constant",
                         "buffer_nbytes", "variant_tensors"):
                attempt(lambda name=name: getattr(t, name))
            q = t.quantization
            if q is not None:
                _ = (q.is_empty, q.is_per_channel, q.problems(t.shape))
            for fn in (t.raw_bytes, t.data, t.densified, t.values, t.dequantized):
                attempt(fn)


def _info(model) -> None:
    from tflite_viewer.cli import jsonout
    from tflite_viewer.cli.info import render_text, summarize
    _strict_json(jsonout.dumps(summarize(model)))
    render_text(model)


def _layout(model) -> None:
    from tflite_viewer.cli import jsonout
    from tflite_viewer.graph.build import build_graph
    from tflite_viewer.graph.layout import layout
    for index in sorted({0, len(model.subgraphs) - 1}):  # the main one and a callee
        doc = layout(build_graph(model, index)).to_json()
        _strict_json(jsonout.dumps(doc))


def _inputs(model, out: "Outcome") -> None:
    """Seeded inputs of subgraph 0 under the fuzzer's limit, with no interpreter: refused
    past the limit before allocating, else made for their own bytes plus `INPUT_SCRATCH`
    (checked with tracemalloc unless a caller is tracing already)."""
    from tflite_viewer.interpreter.inputs import seeded_inputs
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        made = seeded_inputs(model, 0, max_bytes=MAX_BYTES)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if not tracing:
            tracemalloc.stop()
    nbytes = sum(a.nbytes for a in made.values())
    if not tracing and peak > nbytes + INPUT_SCRATCH:
        out.memory = (f"seeded inputs of {nbytes:,} bytes peaked at {peak:,} bytes "
                      f"(bound: their bytes + {INPUT_SCRATCH:,})")


def _interpret(model) -> None:
    from tflite_viewer.interpreter import Interpreter
    from tflite_viewer.interpreter.inputs import complete_inputs, positional
    interp = Interpreter(model, max_allocation_bytes=MAX_BYTES, max_iterations=MAX_ITERATIONS,
                         timeout=TIMEOUT)
    arrays, _ = complete_inputs(model, {}, 0, None, max_bytes=MAX_BYTES)
    interp.invoke(positional(model, arrays))
    interp.outputs()


def _memory(model) -> None:
    from tflite_viewer.cli.memory import document, render_text
    from tflite_viewer.memory import plan_litert, plan_tflm
    for plan in (plan_tflm(model), plan_litert(model)):
        _strict_json(json.dumps(document(model, plan), allow_nan=False))
        render_text(model, plan)


def _reserialize(model) -> None:
    from tflite_viewer.edit.tree import unpack
    from tflite_viewer.edit.writer import serialize
    again = load_model(serialize(unpack(model)))
    assert [len(sg.operators) for sg in again.subgraphs] == \
        [len(sg.operators) for sg in model.subgraphs], "re-serialization lost operators"


STEPS = (("walk", walk), ("info", _info), ("layout", _layout), ("inputs", _inputs),
         ("interpreter", _interpret), ("memory", _memory), ("reserialize", _reserialize))
#: steps that also report into the outcome (memory bounds)
_WITH_OUTCOME = {"inputs"}


def _alarm(signum, frame):
    raise Hang()


def run_case(data: bytes, watchdog: float = WATCHDOG) -> Outcome:
    """Run every step on ``data`` (see the module docstring); never raises."""
    out = Outcome()
    start = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, watchdog)
    caught_all = warnings.catch_warnings(record=True)
    try:
        caught = caught_all.__enter__()
        warnings.simplefilter("always")
        try:
            model = load_model(data)
            out.steps["load"] = "ok"
        except TFLiteViewerError as exc:
            out.steps["load"] = type(exc).__name__
            return out
        finally:
            out.warnings.extend(("load", f"{w.category.__name__}: {w.message}") for w in caught)
        for name, step in STEPS:
            seen = len(caught)
            try:
                step(model, out) if name in _WITH_OUTCOME else step(model)
                out.steps[name] = "ok"
            except TFLiteViewerError as exc:
                out.steps[name] = type(exc).__name__
            finally:
                out.warnings.extend((name, f"{w.category.__name__}: {w.message}")
                                    for w in caught[seen:])
    except Hang:
        out.hang = True
    except Exception:  # noqa: BLE001 - exactly what the fuzzer looks for
        out.undocumented = traceback.format_exc()
    finally:
        caught_all.__exit__(None, None, None)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        out.seconds = time.perf_counter() - start
    return out
