"""`tflite-viewer quant MODEL [--float FLOAT_MODEL] [--signature KEY]
[--inputs IN.npz | --images DIR] [--samples N] [--per-layer-fallback] [--csv OUT.csv]
[--json] [-o OUT.json] [--model-explorer OUT.json [--model-explorer-metric M ...]]
[--fail-below-sqnr DB]`, and across a generation: `tflite-viewer quant MODEL --float
FLOAT_MODEL --generate K [--prompt IDS] [--teacher-forcing] [--bos ID] [--loop FIELD=VALUE ...] [--json]`

Prints the spec findings, the weight report (every form: per tensor, per channel,
blockwise, float16/bfloat16) and each signature's per-tensor table (worst first).  Exit 1
when a spec rule is violated (an error finding) or, with --fail-below-sqnr, when a
compared tensor's average SQNR is below DB, so CI can gate on it; 2 for bad input (a model
with nothing quantized in it, a float model that does not match).  A model this
interpreter cannot run has its files analysed alone (a line on stderr says why).
Progress goes to stderr.

With --generate, both models run an LLM's generation loop (prefill, then K decode steps,
each model its own KV cache; with --teacher-forcing both fed the float model's tokens) and
each step's tokens, logits SQNR and KL, top-1 and ops worst first are printed, then the
first divergence (`quant.generation`).
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
               "With --generate K, both models generate K tokens after --prompt (an LLM's "
               "prefill and decode signatures, each model its own KV cache) and each step "
               "shows both tokens, the logits' SQNR and KL, whether the top-1 agrees and "
               "the ops worst first, then the first divergence.\n\n"
               "Exit 1 when a spec rule is violated or a tensor is below --fail-below-sqnr, "
               "so CI can gate on it.")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer quant small_cnn_dilated_int8.tflite --float small_cnn_dilated_float.tflite --samples 4 --per-layer-fallback --csv tensors.csv",
    "tflite-viewer quant llm/tiny_llama_q4_block32.tflite --float llm/tiny_llama_f32.tflite --signature decode --samples 2 --model-explorer decode_mse.json",
    "tflite-viewer quant llm/tiny_llama_q4_block32.tflite --float llm/tiny_llama_f32.tflite --generate 8 --prompt 5,17,42 --teacher-forcing",
]
#: the samples of the per-tensor analysis when --samples is not given
SAMPLES = 10
#: options of the per-tensor analysis, which --generate does not take
_NOT_WITH_GENERATE = {"signature": "--signature", "inputs": "--inputs", "images": "--images",
                      "samples": "--samples", "per_layer_fallback": "--per-layer-fallback",
                      "csv": "--csv", "fail_below_sqnr": "--fail-below-sqnr",
                      "model_explorer": "--model-explorer",
                      "model_explorer_metric": "--model-explorer-metric"}


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
    p.add_argument("--samples", type=int, default=None, metavar="N",
                   help=f"number of samples (seeded when no --inputs or --images; default "
                        f"{SAMPLES})")
    add_seed_option(p, "the seeded samples")
    p.add_argument("--per-layer-fallback", action="store_true",
                   help="measure the gain of computing each quantized op in float (needs --float)")
    p.add_argument("--csv", metavar="OUT.csv",
                   help="write the per-tensor table as CSV ('-' for stdout)")
    add_json_option(p, "the whole report")
    add_output_option(p, what="the whole report as JSON")
    p.add_argument("--float-sums", choices=("auto", "reference", "blas"), default=None,
                   help="how float32 CONV_2D / FULLY_CONNECTED products are added in both "
                        "models' runs (default blas: the order moves floats by about 1e-7, "
                        "far below quantization error; reference: LiteRT's reference "
                        "kernels' bits; auto: as the run command decides). With --generate "
                        "(default auto): auto adds the quantized model's in its kernel "
                        "set's exact order, so that its tokens are LiteRT's, and the float "
                        "model's with BLAS; reference both in the exact order; blas both "
                        "with BLAS")
    p.add_argument("--fail-below-sqnr", type=float, metavar="DB",
                   help="exit 1 when a compared tensor's average SQNR is below DB (needs --float)")
    p.add_argument("--model-explorer", metavar="OUT.json",
                   help="write the per-tensor metrics as Model Explorer node data, the file "
                        "litert_quantizer's validator writes (needs --float)")
    p.add_argument("--model-explorer-metric", action="append", choices=VALIDATOR_METRICS,
                   metavar="METRIC",
                   help="the validator metric of the node data (default mse; repeat it "
                        "for several, each written to OUT_<metric>.json)")
    _add_generation_options(p)


def _add_generation_options(p: argparse.ArgumentParser) -> None:
    from ..interpreter.budget import DEFAULT_TIMEOUT
    g = p.add_argument_group("across a generation (an LLM with prefill and decode signatures)")
    g.add_argument("--generate", type=int, metavar="K",
                   help="both models generate K tokens (prefill on the prompt, then K decode "
                        "steps, each model its own KV cache; needs --float): each step's "
                        "tokens, logits SQNR and KL, top-1 and ops worst first, and the "
                        "first divergence")
    g.add_argument("--prompt", metavar="IDS",
                   help="with --generate: the prompt's token ids, e.g. 1,2,3 (default 1)")
    g.add_argument("--teacher-forcing", action="store_true",
                   help="with --generate: feed both models the float model's tokens, so "
                        "that steps stay comparable after the first divergence")
    g.add_argument("--bos", type=int, metavar="ID",
                   help="with --generate: put this id (the tokenizer's beginning of "
                        "sequence) before the prompt, as LiteRT-LM does")
    g.add_argument("--loop", metavar="FIELD=VALUE", action="append", default=None,
                   help="with --generate: set a piece of both models' loop by hand, as "
                        "run --generate takes it: prefill=KEY, decode=KEY, tokens=NAME, "
                        "position=NAME, logits=NAME, kv=NAME,... (globs allowed), "
                        "mask=NAME, context=N")
    g.add_argument("--timeout", type=float, metavar="SECONDS",
                   help=f"with --generate: seconds each call of a model may take (default "
                        f"{DEFAULT_TIMEOUT:g}; a large model's prefill can take minutes)")


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


def _check_generation_args(args: argparse.Namespace) -> None:
    if args.generate is None:
        for option in ("prompt", "teacher_forcing", "bos", "loop", "timeout"):
            if getattr(args, option) not in (None, False):
                raise CommandError(f"--{option.replace('_', '-')} goes with --generate K")
        return
    if args.generate < 1:
        raise CommandError(f"--generate {args.generate}: generate at least one token")
    if not args.float_model:
        raise CommandError("--generate needs --float FLOAT_MODEL (the reference)")
    for attr, option in _NOT_WITH_GENERATE.items():
        if getattr(args, attr) not in (None, False):
            raise CommandError(f"{option} does not go with --generate (it analyses one "
                               "call's samples; the generation makes every input itself)")


def _check_args(args: argparse.Namespace) -> None:
    _check_generation_args(args)
    if args.samples is not None and args.samples < 1:
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
    if args.generate is not None:
        return _generation(args, out, model, float_model)
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
    from ..quant.results import FLOAT_SUMS
    kwargs = dict(signature=args.signature, all_entries=args.signature is None,
                  validator_metrics=validator,
                  float_sums=args.float_sums or FLOAT_SUMS)
    try:
        return analyze(model, float_model, seed=args.seed,
                       samples=args.samples if args.samples is not None else SAMPLES,
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


def _generation(args: argparse.Namespace, out: Output, model, float_model) -> int:
    """--generate: both models' generation loops, each call measured."""
    from ..interpreter.budget import DEFAULT_TIMEOUT
    from ..interpreter.generation import parse_settings
    from ..quant.generation import GENERATION_FLOAT_SUMS, analyze_generation, format_text
    from .run_generate import DEFAULT_PROMPT
    ga = analyze_generation(model, float_model,
                            args.prompt if args.prompt is not None else DEFAULT_PROMPT,
                            args.generate, teacher_forcing=args.teacher_forcing,
                            bos=args.bos, loop=parse_settings(args.loop or ()),
                            float_sums=args.float_sums or GENERATION_FLOAT_SUMS,
                            progress=ProgressPrinter(),
                            timeout=args.timeout if args.timeout is not None else
                            DEFAULT_TIMEOUT)
    ga.model, ga.float_model = args.model, args.float_model
    out.text(format_text(ga))
    if out.wants_json:
        out.json({"model": args.model, "float_model": args.float_model,
                  "generation": ga.to_dict()})
    return EXIT_OK


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
