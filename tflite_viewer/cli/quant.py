"""`tflite-viewer quant MODEL [--float FLOAT_MODEL] [--inputs IN.npz | --images DIR]
[--samples N] [--per-layer-fallback] [--csv OUT.csv] [--json] [-o OUT.json]
[--fail-below-sqnr DB]`

Prints the spec findings, the weight report and the per-tensor table (worst first).  Exit
1 when a spec rule is violated (an error finding) or, with --fail-below-sqnr, when a
compared tensor's average SQNR is below DB, so CI can gate on it; 2 for bad input (a model
with nothing quantized in it, a float model that does not match).  Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import sys

from .common import (EXIT_CHECK_FAILED, EXIT_OK, CommandError, add_model_argument,
                     add_seed_option, input_file, input_folder, load_model_arg,
                     subcommand_parser)
from .output import Output, add_json_option, add_output_option, write_file

DESCRIPTION = ("Analyse a quantized model: spec checks from the file alone (scales, zero "
               "points, per-channel axes, bias scales), the range each weight and activation "
               "uses, and with --float its float original compared tensor by tensor (SQNR, "
               "cosine, errors; worst first) and, with --per-layer-fallback, how much "
               "computing each quantized op in float would gain. No TensorFlow needed: any "
               "pair of .tflite files.\n\n"
               "Exit 1 when a spec rule is violated or a tensor is below --fail-below-sqnr, "
               "so CI can gate on it.")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer quant small_cnn_dilated_int8.tflite --float small_cnn_dilated_float.tflite --samples 4 --per-layer-fallback --csv tensors.csv",
]


def add_parser(subparsers) -> None:
    p = subcommand_parser(subparsers, "quant", DESCRIPTION)
    add_model_argument(p, "the quantized .tflite file")
    p.add_argument("--float", dest="float_model", metavar="FLOAT_MODEL",
                   help="its float original: compare every paired tensor")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--inputs", metavar="IN.npz",
                     help="samples keyed by input name (a leading axis holds several)")
    src.add_argument("--images", metavar="DIR",
                     help="a folder of images (JPEG, PNG, ... or .npy), resized to the input and "
                          "normalized by its metadata (else onto its range)")
    p.add_argument("--samples", type=int, default=10, metavar="N",
                   help="number of samples (seeded when no --inputs or --images; default 10)")
    add_seed_option(p, "the seeded samples")
    p.add_argument("--per-layer-fallback", action="store_true",
                   help="measure the gain of computing each quantized op in float (needs --float)")
    p.add_argument("--csv", metavar="OUT.csv",
                   help="write the per-tensor table as CSV ('-' for stdout)")
    add_json_option(p, "the whole report")
    add_output_option(p, what="the whole report as JSON")
    p.add_argument("--float-sums", choices=("auto", "reference", "blas"), default="blas",
                   help="how float32 CONV_2D / FULLY_CONNECTED products are added in both "
                        "models' runs (default blas: the order moves floats by about 1e-7, "
                        "far below quantization error; reference: LiteRT's reference "
                        "kernels' bits; auto: as the run command decides)")
    p.add_argument("--fail-below-sqnr", type=float, metavar="DB",
                   help="exit 1 when a compared tensor's average SQNR is below DB (needs --float)")


def _progress(done: int, total: int, message: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r[{done}/{total}] {message[:70]:70}")
        if done >= total:
            sys.stderr.write("\n")
    elif done == 0 or done >= total or done % max(total // 10, 1) == 0:
        sys.stderr.write(f"[{done}/{total}] {message}\n")
    sys.stderr.flush()


def _quantized(model) -> bool:
    """Whether any tensor of the model carries integer quantization parameters."""
    return any(t.quantization is not None and t.quantization.scale.size
               for sg in model.subgraphs for t in sg.tensors)


def main(args: argparse.Namespace) -> int:
    from ..interpreter.heap import keep_freed_memory
    keep_freed_memory()  # the runs' tensors reuse freed memory (`heap`)
    out = Output(args, files={"--csv": args.csv})
    if args.samples < 1:
        raise CommandError(f"--samples must be at least 1, not {args.samples}")
    if args.per_layer_fallback and not args.float_model:
        raise CommandError("--per-layer-fallback needs --float FLOAT_MODEL (the reference outputs)")
    if args.fail_below_sqnr is not None and not args.float_model:
        raise CommandError("--fail-below-sqnr needs --float FLOAT_MODEL")
    model = load_model_arg(args.model)
    float_model = load_model_arg(args.float_model) if args.float_model else None
    if args.inputs is not None:
        input_file(args.inputs, "inputs file")
    if args.images is not None:
        input_folder(args.images)
    if not _quantized(model):
        raise CommandError(f"{args.model}: nothing in it is quantized (no tensor has "
                           "quantization parameters); give the quantized model, and its float "
                           "original with --float")
    from ..interpreter.errors import UnsupportedOpError
    from ..quant.analysis import analyze
    from ..quant.report import format_text, to_csv

    try:
        report = analyze(model, float_model, samples=args.samples, seed=args.seed,
                         inputs=args.inputs, images=args.images,
                         per_layer_fallback=args.per_layer_fallback,
                         float_sums=args.float_sums, progress=_progress)
    except UnsupportedOpError as exc:
        raise CommandError(str(exc).splitlines()[0] + " (" + "; ".join(
            p["reason"] for p in getattr(exc, "problems", [])[:3]) + ")") from None
    report.model = args.model
    report.float_model = args.float_model
    out.text(format_text(report))
    if args.csv:
        write_file(args.csv, to_csv(report))
    if out.wants_json:
        out.json(report.to_dict())
    failed = []
    if report.errors:
        failed.append(f"{len(report.errors)} spec violation(s)")
    if args.fail_below_sqnr is not None:
        low = [t for t in report.compared() if t.metrics.get("sqnr_db") is not None
               and t.metrics["sqnr_db"] < args.fail_below_sqnr]
        if low:
            worst = min(low, key=lambda t: t.metrics["sqnr_db"])
            failed.append(f"{len(low)} tensor(s) below {args.fail_below_sqnr:g} dB SQNR (worst: "
                          f"subgraph {worst.subgraph} tensor {worst.tensor} {worst.name!r}, "
                          f"{worst.metrics['sqnr_db']:.2f} dB)")
    if failed:
        sys.stdout.flush()
        sys.stderr.write("tflite-viewer quant: check failed: " + "; ".join(failed) + "\n")
        return EXIT_CHECK_FAILED
    return EXIT_OK
