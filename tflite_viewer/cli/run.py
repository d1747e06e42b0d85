"""`tflite-viewer run MODEL`: run a model in the numpy interpreter, print its outputs, dump
every tensor, cross-check against LiteRT.

    tflite-viewer run MODEL [--inputs IN.npz] [--seed N] [--signature KEY]
                            [--dump-all OUT.npz] [--compare-litert] [--rounding single|double]
                            [--float-sums auto|reference|blas]
                            [--kernels auto|reference|builtin|xnnpack]
                            [--tolerance REL] [--tolerance-units N]
                            [--compare-mode auto|end-to-end|isolated]
                            [--max-iterations N] [--timeout SECONDS] [--max-memory SIZE]
                            [--progress] [--json] [-o OUT.json]

``--rounding`` is passed to `Interpreter(model, rounding=...)`; without it the interpreter's
default applies.  ``--float-sums`` is `Interpreter(model, float_sums=...)`: ``auto`` (the
default) takes BLAS products, and LiteRT's reference order for ``--compare-litert``
against its reference kernels (`tflite_viewer.interpreter.float_sums`).
``--kernels`` is `Interpreter(model, kernels=...)`: which of LiteRT's kernel sets the float
ops whose two sets differ follow (`tflite_viewer.interpreter.kernel_sets`; ``auto``: the
builtin kernels for an LLM export or blockwise weights, the reference kernels otherwise;
``xnnpack``: what LiteRT runs by default, the ops its XNNPACK delegate takes as XNNPACK
computes them); the cross-check runs LiteRT with the same set (for ``xnnpack``, its
default interpreter, whose XNNPACK partitions keep their inner tensors to themselves).

* ``--inputs IN.npz``: arrays keyed by input tensor name, signature input name (with
  ``--signature``) or ``s{subgraph}_t{tensor}``; inputs it does not give are seeded from
  ``--seed`` (valid values: `tflite_viewer.interpreter.inputs.seeded_inputs`).
* ``--dump-all OUT.npz``: every tensor of every subgraph that was computed or is constant,
  keyed ``s{subgraph}_t{tensor}``, in the tensor's own dtype (the last value for tensors of
  loop bodies; sparse constants densified; strings as bytes).
* ``--max-iterations``, ``--timeout``, ``--max-memory``: the interpreter's budgets (see
  `tflite_viewer.interpreter.budget`): iterations of one WHILE, seconds of the run, bytes
  the run holds (``512M``, ``8G``): its inputs with its tensors and scratch.  Seeded inputs
  and the arrays of ``--inputs`` are checked against ``--max-memory`` before they are
  allocated.
* ``--compare-litert``: LiteRT (in a child process, with the kernel set of ``--kernels``,
  our float sums in that set's order unless ``--float-sums blas``;
  its optimized kernels when the reference ones cannot run the model) on the same inputs;
  a table of every op output's end-to-end and op-isolated error (a composite's
  decomposition's ops too), naming the kernels compared against, then the first op whose
  own computation departs and the first whose end-to-end value leaves the tolerance
  (`tflite_viewer.interpreter.departures`); exit 1 when one is outside the tolerance
  (``--compare-mode`` says which error decides).
* Progress: on a terminal (stderr a TTY) the run's progress is one line on stderr,
  rewritten as it goes (``[ops done/ops of the plan] the op running, the time left``),
  unless stdout carries a JSON document (``--json``, ``-o -``); ``--progress`` asks for
  it anyway, as lines at every tenth when stderr is not a terminal (`ProgressPrinter`).
* The top-k of an output is printed only for a classifier's output (labels for it in the
  model's metadata, or a SOFTMAX / LOG_SOFTMAX output, or a tensor named logits), and the
  line says which (`tflite_viewer.interpreter.outputs.classifier_reason`).

Exit codes: 0 success, 1 the cross-check found a divergence, 2 bad input (model, inputs,
unsupported operators, LiteRT unable to run or crashing), one line on stderr.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import warnings

import numpy as np

from ..interpreter.outputs import (classifier_reason, finite_stats, top_k, top_k_lines,
                                   value_summary)
from ..model.errors import TFLiteViewerError
from .common import (EXIT_CHECK_FAILED, CommandError, ProgressPrinter, add_model_argument,
                     add_seed_option, input_file, load_model_arg, one_line,
                     subcommand_parser)
from .output import Output, add_json_option, add_output_option, write_file
from . import run_generate
from .run_interpreter import float_sums_said, kernels_said, new_interpreter, xnnpack_said

DESCRIPTION = ("Run a model in the interpreter on your inputs (an .npz) or on seeded inputs "
               "valid for it, and print its outputs: statistics, first values, and for a "
               "classifier the top 5 with the model's labels. --dump-all writes every tensor "
               "of every subgraph. --compare-litert runs LiteRT on the same inputs in a child "
               "process and compares every operator output, end to end and op-isolated (each "
               "of our kernels fed LiteRT's own inputs); exit 1 when one is outside the "
               "tolerance.\n\n"
               "--generate K runs an on-device LLM (prefill and decode signatures, as "
               "litert-torch exports them, in either KV-cache layout, the mask an input or "
               "not): a prefill signature on the prompt's ids (in chunks, as LiteRT-LM "
               "does, when the prompt is longer), then the decode signature K times, each "
               "call's KV-cache outputs fed to the next call's KV-cache inputs by name and "
               "each step fed the argmax of the last; it prints the K generated ids and "
               "with --json what it fed every input. --bos puts a beginning-of-sequence id "
               "first, --logits writes the decode logits. With --compare-litert the same "
               "loop runs on LiteRT's builtin kernels (with --kernels xnnpack, on LiteRT's "
               "default path: its XNNPACK delegate, as LiteRT-LM computes on a CPU) and the "
               "ids are compared (exit 1 when they differ).")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer run mobilenet_v2_float.tflite",
    "tflite-viewer run control_flow.tflite --dump-all tensors.npz --json",
    "tflite-viewer run mobilenet_v2_float.tflite --compare-litert",
    "tflite-viewer run tiny_llama_q8.tflite --generate 8 --prompt 5,17,42",
    "tflite-viewer run gemma3_f32.tflite --generate 8 --prompt 5,17,42 --bos 1 "
    "--logits logits.npy",
]


def add_parser(subparsers) -> None:
    p = subcommand_parser(subparsers, "run", DESCRIPTION)
    add_model_argument(p)
    p.add_argument("--inputs", metavar="IN.npz",
                   help="input arrays keyed by input tensor name, signature input name or "
                        "s{subgraph}_t{tensor}; missing inputs are seeded")
    add_seed_option(p)
    p.add_argument("--signature", metavar="KEY", help="run this signature (default: subgraph 0)")
    p.add_argument("--dump-all", metavar="OUT.npz",
                   help="write every computed or constant tensor, keyed s{subgraph}_t{tensor} "
                        "('-' for stdout)")
    p.add_argument("--compare-litert", action="store_true",
                   help="run LiteRT on the same inputs and compare every op output")
    p.add_argument("--rounding", choices=("single", "double"), default=None,
                   help="how quantized kernels round when multiplying by a quantized "
                        "multiplier (default double, as LiteRT's reference kernels do)")
    p.add_argument("--float-sums", choices=("auto", "reference", "blas"), default="auto",
                   help="how float32 CONV_2D and FULLY_CONNECTED add their products: "
                        "reference (one float32 addition at a time in LiteRT's reference "
                        "kernels' order, their results to the bit), blas (numpy's BLAS "
                        "product: several times faster, a rounding or so off per "
                        "output, as LiteRT's default XNNPACK path is) or auto (the "
                        "default: blas, and reference for --compare-litert)")
    p.add_argument("--kernels", choices=("auto", "reference", "builtin", "xnnpack"),
                   default="auto",
                   help="which of LiteRT's kernel sets the float ops whose sets differ "
                        "(LOGISTIC, TANH, SOFTMAX, MEAN, SUM, FULLY_CONNECTED) follow, to the "
                        "bit: reference (BUILTIN_REF), builtin (its optimized kernels, no "
                        "delegate), xnnpack (LiteRT's default: the ops its XNNPACK delegate "
                        "takes as XNNPACK computes them on an x86-64 AVX-512 CPU, the rest "
                        "as builtin) or auto (builtin for an LLM export or blockwise "
                        "weights, reference otherwise; the default); --compare-litert runs "
                        "LiteRT with the same set")
    p.add_argument("--tolerance", type=float, default=None, metavar="REL",
                   help="largest relative error of a float tensor for --compare-litert "
                        "(default 1e-5)")
    p.add_argument("--tolerance-units", type=int, default=None, metavar="N",
                   help="largest difference of an integer tensor, in units, for "
                        "--compare-litert (default 0 against LiteRT's reference kernels, "
                        "1 against its optimized kernels)")
    p.add_argument("--compare-mode", choices=("auto", "end-to-end", "isolated"),
                   default="auto",
                   help="which error decides --compare-litert: end-to-end (whole runs), "
                        "isolated (each op fed LiteRT's own inputs), or auto (end-to-end "
                        "against the reference kernels, isolated when LiteRT falls back "
                        "to its optimized kernels; the default); both are always printed")
    p.add_argument("--max-iterations", type=int, default=None, metavar="N",
                   help="iterations one WHILE op may run (default "
                        f"{_budget().DEFAULT_MAX_ITERATIONS:,})")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help=f"seconds the run may take (default {_budget().DEFAULT_TIMEOUT:g})")
    p.add_argument("--max-memory", type=_size, default=None, metavar="SIZE",
                   help="bytes the run may hold: its inputs, tensors and scratch together, "
                        "e.g. 512M or 8G (default: a quarter of physical memory, at most 4G, "
                        "within the address space ulimit -v leaves)")
    p.add_argument("--progress", action="store_true",
                   help="print the run's progress on stderr (ops done out of the plan, the "
                        "op running, the time left) even when stderr is not a terminal or "
                        "--json writes to stdout (default: on a terminal only, unless "
                        "stdout carries JSON)")
    run_generate.add_options(p)
    add_json_option(p, "the run (inputs, outputs, top-k, cross-check; with --generate the "
                       "tokens, the loop and its calls)")
    add_output_option(p, what="the run as JSON")


def _budget():
    from ..interpreter import budget
    return budget


def _size(text: str) -> int:
    """``1048576``, ``512K``, ``512M``, ``8G`` as bytes (argparse type)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    try:
        value = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 512M, 8G)") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"not a positive size: {text!r}")
    return int(value)


# ------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------
def _check_npz_sizes(path: str, max_bytes: int) -> None:
    """Refuse arrays of an .npz larger than the allocation limit, from their headers, before
    numpy reads (and allocates) them."""
    import zipfile
    from ..interpreter.budget import check_bytes
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            with zf.open(info) as f:
                version = np.lib.format.read_magic(f)
                read = {(1, 0): np.lib.format.read_array_header_1_0,
                        (2, 0): np.lib.format.read_array_header_2_0}.get(version)
                if read is None:
                    continue  # a newer header: np.load checks it
                shape, _, dtype = read(f)
            nbytes = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
            check_bytes(nbytes, max_bytes, f"array {info.filename.removesuffix('.npy')!r} of "
                        f"{path!r} ({dtype}{list(shape)})")


def _load_inputs(path: str, max_bytes: int | None = None) -> dict[str, np.ndarray]:
    input_file(path, "inputs file")
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as exc:
        raise CommandError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if magic == b"\x93NUMPY":
        raise ValueError(f"inputs file {path!r} holds a single array (.npy), not an .npz "
                         "archive of arrays keyed by input name")
    if not magic.startswith(b"PK"):
        raise ValueError(f"inputs file {path!r} is not an .npz archive (expected arrays "
                         "keyed by input name, as numpy.savez writes them)")
    if max_bytes is not None:
        try:
            _check_npz_sizes(path, max_bytes)
        except TFLiteViewerError:
            raise
        except Exception:  # noqa: BLE001 - np.load says what is wrong below
            pass
    try:
        data = np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is one message
        raise ValueError(f"cannot read inputs file {path!r}: {one_line(exc)} "
                         "(expected an .npz archive of arrays keyed by input name)") from exc
    if isinstance(data, np.ndarray):
        raise ValueError(f"inputs file {path!r} holds a single array, not an .npz archive "
                         "of arrays keyed by input name")
    try:
        with data:
            return {k: data[k] for k in data.files}  # (each read is a new array)
    except Exception as exc:  # noqa: BLE001
        raise ValueError(f"cannot read inputs file {path!r}: {one_line(exc)}") from exc


# ------------------------------------------------------------------------------------------
# dumping
# ------------------------------------------------------------------------------------------
def dump_arrays(interp) -> dict[str, np.ndarray]:
    """Every tensor of every subgraph with a value (computed, constant, variable), keyed
    s{subgraph}_t{tensor}, in its own dtype (strings as bytes, sparse constants dense)."""
    out: dict[str, np.ndarray] = {}
    for sg in interp.subgraphs:
        for t in sg.tensors:
            data = t.data
            if data is None:
                continue
            if t.is_constant and t.sparsity is not None:
                dense = t.model_tensor.densified()
                data = dense if dense is not None else data
            if data.dtype == object:
                try:
                    data = np.asarray(data, dtype=np.bytes_)
                except (TypeError, ValueError, UnicodeError):
                    continue
            out[f"s{sg.index}_t{t.index}"] = np.asarray(data)
    return out


# ------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------
def main(args: argparse.Namespace) -> int:
    from ..interpreter.heap import keep_freed_memory
    keep_freed_memory()  # the run's tensors reuse freed memory (`heap`)
    with warnings.catch_warnings():
        # one readable line on stderr, never a stray numpy RuntimeWarning (a kernel's
        # overflow, a complex-to-real cast) before it: bad scales are load findings
        warnings.simplefilter("ignore", RuntimeWarning)
        return _main(args)


def _stats(a: np.ndarray | None) -> dict:
    """Numbers of an array for the JSON document (what `value_summary` says in words)."""
    if a is None:
        return {"computed": False}
    out: dict = {"computed": True}
    if a.dtype.kind in "biuf" and a.size:
        low, high, mean, nonfinite = finite_stats(a.reshape(-1))
        out.update(min=low, max=high, mean=mean, nonfinite=nonfinite)
    out["first"] = a.reshape(-1)[:8].tolist() if a.dtype.kind in "biufc" else \
        [repr(x) for x in a.reshape(-1)[:8].tolist()]
    return out


def _main(args: argparse.Namespace) -> int:
    from ..interpreter.budget import (DEFAULT_MAX_ITERATIONS, DEFAULT_TIMEOUT,
                                      default_max_allocation_bytes, run_reserve)
    from ..interpreter.inputs import complete_inputs, input_specs

    run_generate.check_usage(args)
    if args.generate is not None:
        if args.progress:
            raise CommandError("--progress goes with a single run, not --generate (its "
                               "report lists every call)")
        return run_generate.main(args)
    out = Output(args, files={"--dump-all": args.dump_all})
    _check_tolerances(args)
    model = load_model_arg(args.model)
    signature = args.signature
    if signature is not None:
        model.signature(signature)  # KeyError naming the signature keys
    max_bytes = args.max_memory or default_max_allocation_bytes()  # (under ulimit -v now)
    given = _load_inputs(args.inputs, max_bytes) if args.inputs else {}
    if args.compare_litert:
        from ..interpreter.crosscheck import require_litert
        require_litert()  # say so before the run, not after it

    budgets = {"max_allocation_bytes": max_bytes,
               "max_iterations": args.max_iterations or DEFAULT_MAX_ITERATIONS,
               "timeout": args.timeout or DEFAULT_TIMEOUT}
    # the interpreter first: its allocation check (inputs included) refuses a model whose
    # tensors do not fit before any seeded input is made
    interp = new_interpreter(model, args, budgets)
    # the budget bounds the run in the process: its inputs with the interpreter's tensors
    arrays, generated = complete_inputs(model, given, args.seed, signature, max_bytes=max_bytes,
                                        reserved=run_reserve(interp.arena_bytes))
    specs = input_specs(model, signature)
    seconds = _invoke(interp, arrays, signature, args.progress or (
        sys.stderr.isatty() and not out.stdout_taken))

    sgi = specs[0].subgraph if specs else (
        model.signature(signature).subgraph_index if signature else 0)
    where = f"signature {signature!r} (subgraph {sgi})" if signature else f"subgraph {sgi}"
    doc: dict = {"model": str(args.model), "subgraph": sgi, "signature": signature,
                 "rounding": interp.rounding, "float_sums": interp.float_sums,
                 "float_sums_asked": args.float_sums, "kernels": interp.kernels,
                 "inputs": [], "outputs": []}
    lines = [f"Model {args.model}: {where}, rounding {interp.rounding}, float sums "
             f"{float_sums_said(interp.float_sums, args.float_sums)}, "
             f"{kernels_said(model, interp.kernels, args.kernels)}"]
    if interp.xnnpack is not None:
        lines.append(xnnpack_said(interp, doc))
    lines.append("Inputs:")
    for spec in specs:
        a = arrays[spec.name]
        dtype = model.subgraphs[spec.subgraph].tensors[spec.tensor].type_name
        src = f"seeded (seed {args.seed})" if spec.name in generated else f"from {args.inputs}"
        lines.append(f"  {spec.name} (T#{spec.tensor}) {dtype}{list(a.shape)} {src}: "
                     f"{value_summary(a)}")
        doc["inputs"].append({"name": spec.name, "tensor": spec.tensor, "dtype": dtype,
                              "shape": list(a.shape), "seeded": spec.name in generated,
                              **_stats(a)})
    _describe_outputs(model, interp, sgi, signature, lines, doc)
    n_ops = sum(interp.op_calls.values())
    lines.append(f"Ran {n_ops:,} op{'s' if n_ops != 1 else ''} in {seconds * 1000:.1f} ms")
    doc.update(ops=n_ops, milliseconds=seconds * 1000)
    if args.dump_all:
        _dump_all(interp, args.dump_all, lines, doc)

    report = None
    if args.compare_litert:
        out.text("\n".join(lines))
        lines = []
        sys.stdout.flush()
        report = _cross_check(args, model, interp, arrays, signature)
        lines.append("\n" + report.format_table())
        doc["crosscheck"] = _cross_check_doc(report)
    if lines:
        out.text("\n".join(lines))
    out.json(doc)
    if report is not None and not report.ok:
        sys.stdout.flush()
        sys.stderr.write(f"tflite-viewer run: cross-check failed: {report.divergence_text()}\n")
        return EXIT_CHECK_FAILED
    return 0


def _check_tolerances(args: argparse.Namespace) -> None:
    if args.tolerance is not None and not args.tolerance >= 0:
        raise CommandError(f"--tolerance must be a relative error >= 0, not {args.tolerance}")
    if args.tolerance_units is not None and args.tolerance_units < 0:
        raise CommandError(f"--tolerance-units must be >= 0, not {args.tolerance_units}")


def _invoke(interp, arrays: dict, signature: str | None, progress: bool) -> float:
    """Run once (with a progress line on stderr when ``progress``); the seconds it took."""
    printer = ProgressPrinter() if progress else None
    if printer is not None:
        interp.set_progress(lambda p: printer(p.done, p.total, p.describe(printer.WIDTH)))
    t0 = time.perf_counter()
    try:
        interp.invoke(arrays, signature=signature)  # by name: a signature has no order
    finally:
        if printer is not None:
            printer.end()
    return time.perf_counter() - t0


def _describe_outputs(model, interp, sgi: int, signature: str | None, lines: list[str],
                      doc: dict) -> None:
    """Each output's summary (and top-k, for a classifier's) into the text and the JSON."""
    sg = interp.subgraphs[sgi]
    msg = model.subgraphs[sgi]
    if signature is not None:
        pairs = [(m.name, m.tensor_index) for m in model.signature(signature).outputs]
    else:
        pairs = [(sg.tensors[i].name, i) for i in sg.outputs]
    producers = {o: node.name for node in sg.nodes for o in node.outputs if o >= 0}
    lines.append("Outputs:")
    for name, ti in pairs:
        a = sg.tensors[ti].data
        shape = "?" if a is None else list(a.shape)
        dtype = msg.tensors[ti].type_name
        shown = name or f"s{sgi}_t{ti}"
        lines.append(f"  {shown} (T#{ti}) {dtype}{shape}: {value_summary(a)}")
        lines.extend(top_k_lines(model, sgi, ti, a, producers.get(ti), name))
        reason = classifier_reason(model, sgi, ti, a, producers.get(ti), name)
        doc["outputs"].append({
            "name": shown, "tensor": ti, "dtype": dtype,
            "shape": None if a is None else list(a.shape), **_stats(a),
            "top_k_reason": reason,
            "top_k": [{"index": i, "label": label, "score": score} for i, label, score in
                      (top_k(model, sgi, ti, a, producers.get(ti), name=name) if reason else [])]})


def _dump_all(interp, path: str, lines: list[str], doc: dict) -> None:
    """--dump-all: every tensor's value into one .npz."""
    import io
    dumped = dump_arrays(interp)
    buffer = io.BytesIO()
    np.savez(buffer, **dumped)
    write_file(path, buffer.getvalue())
    lines.append(f"Wrote {len(dumped)} tensors to {path}")
    doc["dumped"] = {"file": path, "tensors": len(dumped)}


def _cross_check(args: argparse.Namespace, model, interp, arrays: dict, signature: str | None):
    """--compare-litert: LiteRT run on the same inputs, compared op by op with our run."""
    from ..edit.expose import expose_op_outputs
    from ..interpreter.crosscheck import (DEFAULT_TOLERANCE, STATEFUL_INVOCATIONS,
                                          compare_steps, is_stateful, run_litert_steps)
    from ..interpreter.kernel_sets import RESOLVERS

    # a stateful model is compared over several invocations (the same inputs each time:
    # the state carried between them is what differs); when LiteRT crashes keeping every
    # tensor, on a copy with every op output exposed, made by the editor (passed in: the
    # interpreter does not import the editor)
    steps = [arrays] * (STATEFUL_INVOCATIONS if is_stateful(model) else 1)
    # LiteRT's kernel set our interpreter follows (the reference kernels, or the builtin
    # ones for an LLM export), the reference kernels falling back to the builtin ones
    runs = run_litert_steps(args.model, steps, signature, RESOLVERS[interp.kernels],
                            expose=expose_op_outputs)
    return compare_steps(interp, model, steps, runs, first_ran=True, signature=signature,
                         tolerance=DEFAULT_TOLERANCE if args.tolerance is None
                         else args.tolerance,
                         units=args.tolerance_units, model_name=str(args.model),
                         mode=getattr(args, "compare_mode", "auto"))


def _cross_check_doc(report) -> dict:
    """The cross-check report as the JSON's "crosscheck"."""
    return {
        "kernels": report.kernels, "resolver": report.resolver, "mode": report.mode,
        "litert_mode": report.litert_mode, "invocations": report.invocations,
        "invocation": report.invocation,
        "tolerance": report.tolerance, "units": report.units, "ok": report.ok,
        "fallback_reason": report.fallback_reason, "summary": report.summary(),
        "first_divergence": None if report.ok else report.divergence_text(),
        "departures": None if report.departures is None else report.departures.to_dict(),
        "rows": [dataclasses.asdict(r) for r in report.rows],
        "inner_rows": {str(op): [dataclasses.asdict(r) for r in rows]
                       for op, rows in report.inner_rows.items()}}
