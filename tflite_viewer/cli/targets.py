"""`tflite-viewer targets MODEL [--target NAME ...] [--runtime V] [--json] [-o FILE]`: which
operators each runtime and delegate takes (LiteRT's CPU kernels, XNNPACK, the GPU delegate,
TensorFlow Lite Micro), the delegates' partitions, and what to change.

Without --json: a summary per target, then every operator that does not run everywhere with
each target's verdict and reason.  --json prints the document of docs/targets.md to stdout
(strict JSON, one line); -o FILE writes it to FILE ('-' = stdout).
"""
from __future__ import annotations

import argparse
import json
import sys

_TARGETS = ("litert", "xnnpack", "gpu", "tflm")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("targets", help="which operators each runtime/delegate takes")
    p.add_argument("model", help="a .tflite file")
    p.add_argument("--target", action="append", choices=_TARGETS, metavar="NAME",
                   help=f"one of {', '.join(_TARGETS)} (repeat for several; default all)")
    p.add_argument("--runtime", metavar="V",
                   help="check LiteRT's CPU kernels at this TFLite runtime version (2.14.0)")
    p.add_argument("--json", action="store_true", help="print the JSON document to stdout")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the JSON document to FILE ('-' = stdout)")


def main(args: argparse.Namespace) -> int:
    from ..model import load_model
    from ..targets import analyze

    model = load_model(args.model)
    report = analyze(model, args.target, runtime=args.runtime)
    doc = report.as_dict()
    doc["model"] = str(args.model)
    # The document holds only strings, ints and bools, so it is strict JSON as it is
    # (allow_nan=False would refuse it otherwise).  One line: on 20,000 operators jsonout's
    # walk over every value, or indenting, costs more than the whole analysis.
    text = json.dumps(doc, allow_nan=False, separators=(",", ":"))
    if args.output and args.output != "-":
        with open(args.output, "w") as fh:
            fh.write(text + "\n")
    if args.json or args.output == "-":
        sys.stdout.write(text + "\n")
    else:
        sys.stdout.write(report.table())
    return 0
