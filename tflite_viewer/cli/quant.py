"""`tflite-viewer quant MODEL [--float FLOAT_MODEL] [--signature KEY]
[--inputs IN.npz | --images DIR] [--samples N] [--per-layer-fallback] [--csv OUT.csv]
[--json] [-o OUT.json] [--model-explorer OUT.json [--model-explorer-metric M ...]]
[--fail-below-sqnr DB]`

Prints the spec findings, the weight report (every form: per tensor, per channel,
blockwise, float16/bfloat16) and each signature's per-tensor table (worst first).  Exit 1
when a spec rule is violated (an error finding) or, with --fail-below-sqnr, when a
compared tensor's average SQNR is below DB, so CI can gate on it; 2 for bad input (a model
with nothing quantized in it, a float model that does not match).  A model this
interpreter cannot run has its files analysed alone (a line on stderr says why).
Progress goes to stderr.
"""
from __future__ import annotations

import argparse
import sys

from .common import (EXIT_CHECK_FAILED, EXIT_OK, CommandError, ProgressPrinter,
                     add_model_argument, add_seed_option, input_file, input_folder,
                     load_model_arg, subcommand_parser)
from ..quant.explorer import VALIDATOR_METRICS
from .output import Output, add_json_option, add_output_option, write_file

DESCRIPTION = ("Analyse a quantized model: spec checks from the file alone (scales, zero "
               "points, per-channel axes, bias scales), every weight form (per tensor, per "
               "channel, blockwise, float16; Hadamard-rotated) and the range each weight and "
               "activation uses, and with --float its float original compared tensor by "
               "tensor, per signature (SQNR, cosine, errors; worst first; each weight per "
               "channel or block) and, with --per-layer-fallback, how much computing each "
               "quantized op in float would gain. No TensorFlow needed: any pair of .tflite "
               "files.\n\n"
               "Exit 1 when a spec rule is violated or a tensor is below --fail-below-sqnr, "
               "so CI can gate on it.")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer quant small_cnn_dilated_int8.tflite --float small_cnn_dilated_float.tflite --samples 4 --per-layer-fallback --csv tensors.csv",
    "tflite-viewer quant llm/tiny_llama_q4_block32.tflite --float llm/tiny_llama_f32.tflite --signature decode --samples 2 --model-explorer decode_mse.json",
]


def add_parser(subparsers) -> None:
    p = subcommand_parser(subparsers, "quant", DESCRIPTION)
    add_model_argument(p, "the quantized .tflite file")
    p.add_argument("--float", dest="float_model", metavar="FLOAT_MODEL",
                   help="its float original: compare every paired tensor")
    p.add_argument("--signature", metavar="KEY",
                   help="analyse this signature alone (default: every signature, the "
                        "samples given feeding the first)")
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
    p.add_argument("--model-explorer", metavar="OUT.json",
                   help="write the per-tensor metrics as Model Explorer node data, the file "
                        "litert_quantizer's validator writes (needs --float)")
    p.add_argument("--model-explorer-metric", action="append", choices=VALIDATOR_METRICS,
                   metavar="METRIC",
                   help="the validator metric of the node data (default mse; repeat it "
                        "for several, each written to OUT_<metric>.json)")


def _explorer_files(args: argparse.Namespace) -> dict[str, str]:
    """metric -> the file its node data goes to (OUT.json itself for one metric, else
    OUT_<metric>.json beside it, as the validator names its files per metric)."""
    if not args.model_explorer:
        return {}
    metrics = list(dict.fromkeys(args.model_explorer_metric or ["mse"]))
    if len(metrics) == 1:
        return {metrics[0]: args.model_explorer}
    from pathlib import Path
    out = Path(args.model_explorer)
    return {m: str(out.with_name(f"{out.stem}_{m}{out.suffix or '.json'}")) for m in metrics}


def _check_args(args: argparse.Namespace) -> None:
    if args.samples < 1:
        raise CommandError(f"--samples must be at least 1, not {args.samples}")
    for flag, value in (("--per-layer-fallback", args.per_layer_fallback),
                        ("--fail-below-sqnr", args.fail_below_sqnr is not None),
                        ("--model-explorer", args.model_explorer)):
        if value and not args.float_model:
            raise CommandError(f"{flag} needs --float FLOAT_MODEL (the reference)")
    if args.model_explorer_metric and not args.model_explorer:
        raise CommandError("--model-explorer-metric needs --model-explorer OUT.json")


def main(args: argparse.Namespace) -> int:
    from ..interpreter.heap import keep_freed_memory
    keep_freed_memory()  # the runs' tensors reuse freed memory (`heap`)
    explorer = _explorer_files(args)
    out = Output(args, files={"--csv": args.csv, **{f"--model-explorer ({m})": f
                                                     for m, f in explorer.items()}})
    _check_args(args)
    model = load_model_arg(args.model)
    float_model = load_model_arg(args.float_model) if args.float_model else None
    if args.inputs is not None:
        input_file(args.inputs, "inputs file")
    if args.images is not None:
        input_folder(args.images)
    from ..quant.forms import is_quantized
    if not is_quantized(model):
        raise CommandError(f"{args.model}: nothing in it is quantized (no tensor has "
                           "quantization parameters, no weight is stored in a narrower "
                           "type); give the quantized model, and its float original with "
                           "--float")
    if args.signature is not None:
        model.signature(args.signature)  # a KeyError naming the signatures
    report = _analyze(args, model, float_model, bool(explorer))
    report.model = args.model
    report.float_model = args.float_model
    from ..quant.report import format_text, to_csv
    out.text(format_text(report))
    if args.csv:
        write_file(args.csv, to_csv(report))
    if explorer:
        import json
        from ..quant.explorer import node_data
        for metric, path in explorer.items():
            write_file(path, json.dumps(node_data(report, metric), allow_nan=False))
    if out.wants_json:
        out.json(report.to_dict())
    return _verdict(args, report)


def _analyze(args: argparse.Namespace, model, float_model, validator: bool):
    """The analysis the arguments ask for; a model the interpreter cannot run has its
    files analysed alone, saying why on stderr (exit 2 when a gate needed the run)."""
    from ..interpreter.errors import UnsupportedOpError
    from ..quant.analysis import analyze
    kwargs = dict(signature=args.signature, all_entries=args.signature is None,
                  validator_metrics=validator, float_sums=args.float_sums)
    try:
        return analyze(model, float_model, samples=args.samples, seed=args.seed,
                       inputs=args.inputs, images=args.images,
                       per_layer_fallback=args.per_layer_fallback, progress=ProgressPrinter(),
                       **kwargs)
    except UnsupportedOpError as exc:
        why = str(exc).splitlines()[0] + " (" + "; ".join(
            p["reason"] for p in getattr(exc, "problems", [])[:3]) + ")"
        if args.fail_below_sqnr is not None or args.per_layer_fallback:
            raise CommandError(why) from None
        sys.stderr.write(f"tflite-viewer quant: {why}: analysing the files alone\n")
    report = analyze(model, float_model, run_models=False, **kwargs)
    report.not_run = why
    return report


def _verdict(args: argparse.Namespace, report) -> int:
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
