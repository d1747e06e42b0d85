"""`tflite-viewer quant MODEL [--float FLOAT_MODEL] [--inputs IN.npz | --images DIR]
[--samples N] [--per-layer-fallback] [--csv OUT.csv] [--json OUT.json] [--fail-below-sqnr DB]`

Prints the spec findings, the weight report and the per-tensor table (worst first).  Exit
1 when a spec rule is violated (an error finding) or, with --fail-below-sqnr, when a
compared tensor's average SQNR is below DB, so CI can gate on it; 2 for bad input.
Progress goes to stderr.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..interpreter.errors import UnsupportedOpError
from ..model import ModelFormatError, load_model
from ..model.errors import TFLiteViewerError

EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT = 0, 1, 2


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("quant", help="quantization analysis (spec, ranges, float vs "
                                            "quantized, per-layer fallback gain)")
    p.add_argument("model", help="the quantized .tflite file")
    p.add_argument("--float", dest="float_model", metavar="FLOAT_MODEL",
                   help="its float original: compare every paired tensor")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--inputs", metavar="IN.npz",
                     help="samples keyed by input name (a leading axis holds several)")
    src.add_argument("--images", metavar="DIR",
                     help="a folder of images (JPEG, PNG, ... or .npy), resized to the input and "
                          "normalized by its metadata (else onto its range)")
    p.add_argument("--samples", type=int, default=10, metavar="N",
                   help="number of samples (seeded when no --inputs/--images; default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the seeded samples")
    p.add_argument("--per-layer-fallback", action="store_true",
                   help="measure the gain of computing each quantized op in float")
    p.add_argument("--csv", metavar="OUT.csv", help="write the per-tensor table as CSV")
    p.add_argument("--json", metavar="OUT.json", help="write the whole report as strict JSON")
    p.add_argument("--fail-below-sqnr", type=float, metavar="DB",
                   help="exit 1 when a compared tensor's average SQNR is below DB")


def _fail(message: str) -> int:
    sys.stderr.write(f"tflite-viewer quant: error: {message}\n")
    return EXIT_BAD_INPUT


def _progress(done: int, total: int, message: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r[{done}/{total}] {message[:70]:70}")
        if done >= total:
            sys.stderr.write("\n")
    elif done == 0 or done >= total or done % max(total // 10, 1) == 0:
        sys.stderr.write(f"[{done}/{total}] {message}\n")
    sys.stderr.flush()


def main(args) -> int:
    if args.samples < 1:
        return _fail("--samples must be at least 1")
    if args.per_layer_fallback and not args.float_model:
        return _fail("--per-layer-fallback needs --float FLOAT_MODEL (the reference outputs)")
    if args.fail_below_sqnr is not None and not args.float_model:
        return _fail("--fail-below-sqnr needs --float FLOAT_MODEL")
    for path in (args.model, args.float_model, args.inputs):
        if path is not None and not Path(path).is_file():
            return _fail(f"{path}: no such file")
    if args.images is not None and not Path(args.images).is_dir():
        return _fail(f"{args.images}: no such folder")
    try:
        model = load_model(args.model)
        float_model = load_model(args.float_model) if args.float_model else None
    except ModelFormatError as exc:
        return _fail(f"not a valid TFLite model: {exc}")
    from ..quant.analysis import analyze
    from ..quant.report import format_text, to_csv

    try:
        report = analyze(model, float_model, samples=args.samples, seed=args.seed,
                         inputs=args.inputs, images=args.images,
                         per_layer_fallback=args.per_layer_fallback, progress=_progress)
    except UnsupportedOpError as exc:
        return _fail(str(exc).splitlines()[0] + " (" + "; ".join(
            p["reason"] for p in getattr(exc, "problems", [])[:3]) + ")")
    except (TFLiteViewerError, ValueError, KeyError, OSError) as exc:
        return _fail(str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc))
    report.model = args.model
    report.float_model = args.float_model
    sys.stdout.write(format_text(report))
    try:
        if args.csv:
            Path(args.csv).write_text(to_csv(report))
        if args.json:
            Path(args.json).write_text(report.to_json())
    except OSError as exc:
        return _fail(str(exc))
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
        sys.stderr.write("tflite-viewer quant: check failed: " + "; ".join(failed) + "\n")
        return EXIT_CHECK_FAILED
    return EXIT_OK
