"""`tflite-viewer targets MODEL [--target NAME ...] [--runtime V] [--json] [-o OUT.json]`:
which operators each runtime and delegate takes (LiteRT's CPU kernels, XNNPACK, the GPU
delegate, TensorFlow Lite Micro), the delegates' partitions, and what to change
(docs/targets.md)."""
from __future__ import annotations

import argparse
import gc

from .common import add_model_argument, load_model_arg, subcommand_parser
from .output import Output, add_json_option, add_output_option

TARGETS = ("litert", "xnnpack", "gpu", "tflm")
DESCRIPTION = (
    "For every operator, what each target does with it: runs, falls back (a delegate leaves "
    "it to LiteRT's CPU kernels) or refused (the target cannot run it and nothing takes "
    "over), with the reason and, where a well-known rewrite helps, what to change.\n\n"
    "Targets: litert (LiteRT's builtin kernels; with --runtime, an older TensorFlow Lite "
    "runtime), xnnpack (LiteRT 2.3.0's default delegate and its partitions), gpu (LiteRT's "
    "GPU delegate, default options; not checked against a running delegate) and tflm "
    "(TensorFlow Lite Micro).\n\n"
    "The text report: a summary per target (operators that run, fall back, are refused; "
    "partitions; tensors crossing between a partition and the CPU), each delegate's "
    "partitions, then every operator that does not run on every target. The JSON document "
    "is one line: {\"targets\": {NAME: {\"partitions\": [...], \"ops\": [...]}}}.")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer targets small_cnn_dilated_int8.tflite",
    "tflite-viewer targets mobilenet_v2_dynamic.tflite --target xnnpack --json",
    "tflite-viewer targets mobilenet_v2_int8.tflite --target litert --runtime 2.3.0",
]


def add_parser(subparsers) -> None:
    p = subcommand_parser(subparsers, "targets", DESCRIPTION)
    add_model_argument(p)
    p.add_argument("--target", action="append", choices=TARGETS, metavar="NAME",
                   help=f"one of {', '.join(TARGETS)}; repeat for several (default all)")
    p.add_argument("--runtime", metavar="V",
                   help="check LiteRT's CPU kernels at this TensorFlow Lite runtime version, "
                        "as min_runtime_version counts them (e.g. 2.14.0)")
    add_json_option(p)
    add_output_option(p)


def main(args: argparse.Namespace) -> int:
    from ..targets import analyze

    out = Output(args)
    # Loading and the analysis make some 100,000 small objects per 20,000 operators and
    # free few: the cyclic collector's passes over them would cost a tenth of the run.
    gc.disable()
    try:
        model = load_model_arg(args.model)
        report = analyze(model, args.target, runtime=args.runtime)
        if not out.stdout_taken:  # (with --json the text report is not printed: not built)
            out.text(report.table())
        if out.wants_json:
            # Only strings, ints and bools: strict JSON as it is.  One line, written by
            # the report itself without a dict per operator: on a 20,000-op model as fast
            # as the operators' dicts encoded by jsonout (0.08 s against 0.09 s).
            out.json_text(report.as_json(model=str(args.model)))
    finally:
        gc.enable()
    return 0
