"""`tflite-viewer diff A B [--json] [-o OUT.json] [--matches] [--numeric [--inputs IN.npz |
--images DIR] [--samples N] [--seed N] [--tolerance REL]]`

A summary first (what was matched; how many model fields, signatures, subgraphs,
operators and tensors were added, removed or changed), then each difference; with
--numeric, where the two models' numbers part.  Exit 0 when the models are the same, 1
when they differ, 2 on bad input, like diff(1).
"""
from __future__ import annotations

import argparse
import sys

from .common import (EXIT_CHECK_FAILED, EXIT_OK, CommandError, add_seed_option, input_file,
                     input_folder, load_model_arg, subcommand_parser)
from .output import Output, add_json_option, add_output_option

DESCRIPTION = (
    "Compare two models: which subgraphs, operators and tensors correspond (by signature, "
    "name, graph structure, position; through QUANTIZE/DEQUANTIZE ops the converter "
    "inserted, activations split out of an op, ops added with the editor), and what "
    "differs in each pair: op type, version, every option, fused activation; tensor name, "
    "type, shape, shape signature, quantization, sparsity; constants (equal bytes, or how "
    "far apart after dequantization); signatures, metadata, min_runtime_version; and what "
    "only one model has.\n\n"
    "With --numeric both models run on the same inputs and every matched tensor pair is "
    "compared (max abs error, error relative to range, cosine, SQNR: the metrics of "
    "the quant command); the first op where they part is named.\n\n"
    "Exit 0 when the models are the same, 1 when they differ, 2 on bad input.")
EXAMPLES = [
    "tflite-viewer diff mobilenet_v2_float.tflite mobilenet_v2_int8.tflite",
    "tflite-viewer diff small_cnn_dilated_float.tflite small_cnn_dilated_int8.tflite --numeric --json",
]


def add_parser(subparsers) -> None:
    p = subcommand_parser(subparsers, "diff", DESCRIPTION)
    p.add_argument("a", metavar="A", help="the first .tflite file (the reference)")
    p.add_argument("b", metavar="B", help="the second .tflite file")
    add_json_option(p, "the comparison")
    add_output_option(p, what="the comparison as JSON")
    p.add_argument("--matches", action="store_true",
                   help="list every match with its evidence in the JSON document")
    p.add_argument("--limit", type=int, default=200, metavar="N",
                   help="differences shown in the text report (default 200; JSON lists all)")
    p.add_argument("--numeric", action="store_true",
                   help="run both models on the same inputs and compare every matched tensor")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--inputs", metavar="IN.npz",
                     help="inputs keyed by input name (a leading axis holds several samples)")
    src.add_argument("--images", metavar="DIR",
                     help="a folder of images, resized to the input and normalized")
    p.add_argument("--samples", type=int, default=1, metavar="N",
                   help="number of samples (seeded when no --inputs or --images; default 1)")
    add_seed_option(p, "the seeded samples")
    p.add_argument("--tolerance", type=float, default=None, metavar="REL",
                   help="a tensor pair parts when its error passes REL times the range of "
                        "A's values (default 1e-6)")


def main(args: argparse.Namespace) -> int:
    out = Output(args)
    numeric_only = [name for name, value in (("--inputs", args.inputs), ("--images", args.images),
                                             ("--tolerance", args.tolerance))
                    if value is not None]
    if numeric_only and not args.numeric:
        raise CommandError(f"{numeric_only[0]} needs --numeric")
    if args.samples < 1:
        raise CommandError(f"--samples must be at least 1, not {args.samples}")
    if args.limit < 0:
        raise CommandError(f"--limit must be 0 or more, not {args.limit}")
    if args.tolerance is not None and not args.tolerance >= 0:
        raise CommandError(f"--tolerance must be 0 or more, not {args.tolerance}")
    a = load_model_arg(args.a)
    b = load_model_arg(args.b)
    if args.inputs is not None:
        input_file(args.inputs, "inputs file")
    if args.images is not None:
        input_folder(args.images)
    from ..diff import diff_models

    report = diff_models(a, b)
    report.a_label, report.b_label = args.a, args.b
    if args.numeric:
        from ..diff.numeric import TOLERANCE, compare_numbers
        from ..interpreter.errors import UnsupportedOpError

        try:
            report.numeric = compare_numbers(
                report.match, samples=args.samples, seed=args.seed, inputs=args.inputs,
                images=args.images, tolerance=TOLERANCE if args.tolerance is None
                else args.tolerance)
        except UnsupportedOpError as exc:
            raise CommandError("--numeric: " + str(exc).splitlines()[0]) from None
    out.text(report.format_text(limit=args.limit))
    if out.wants_json:
        out.json(report.to_dict(matches=args.matches))
    if report.same:
        return EXIT_OK
    sys.stdout.flush()
    return EXIT_CHECK_FAILED
