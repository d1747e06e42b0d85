"""`tflite-viewer quantize FLOAT_MODEL [-o OUT.tflite] [--recipe NAME | --custom-recipe JSON]
[--override SELECTOR=RECIPE ...] [--keep-float SELECTOR ...]
[--calibration-data IN.npz|SCRIPT.py | --images DIR] [--save-recipe OUT.json] [--json]`

Quantizes a float model with LiteRT's quantizer (the optional extra ``[quantize]``), the
flags as ``litert quantize`` (litert-cli 0.2) takes them: the same recipe names and
defaults (dynamic_wi8_afp32; MODEL_quant.tflite beside the model), ``--custom-recipe``
the same JSON, ``--calibration-data`` a script with ``get_calibration_data()`` too.  On
top: per-op overrides and float ops by selector (`quant.recipes`), the recipe saved, and
the samples of ``quant``.  The model is written whole or not at all.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import logging
import sys
import warnings
from pathlib import Path

from .common import (CommandError, ProgressPrinter, add_model_argument, add_seed_option,
                     input_file, input_folder, load_model_arg, subcommand_parser)
from .output import Output, add_json_option, write_file

DEFAULT_RECIPE = "dynamic_wi8_afp32"  # litert quantize's default
DESCRIPTION = (
    "Quantize a float model with LiteRT's quantizer (litert-quantizer, the optional extra "
    "[quantize]: pip install 'tflite-viewer[quantize]'), with the flags of litert quantize: "
    "--recipe takes the quantizer's recipe names (dynamic_wi4b32_afp32, static_wi8_ai8, "
    "weight_only_wi8_afp32, ...), --custom-recipe its JSON. On top, --override and "
    "--keep-float treat the ops a selector names differently, --save-recipe writes the "
    "recipe built (litert quantize --custom-recipe takes it), and static recipes calibrate "
    "on the samples quant uses: an .npz, a folder of images, or seeded inputs.\n\n"
    "A SELECTOR is an operator (N, or S:N for subgraph S), an op type (FULLY_CONNECTED), "
    "or a name pattern: the quantizer's regex, searched in the op's output tensor names "
    "(attn, layers_1/.*/mlp). Later flags win: the recipe, then the overrides, then the "
    "float ops. The output is written only when the quantizer succeeds.")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer quantize llm/tiny_llama_f32.tflite -o tiny_llama_q4.tflite --recipe dynamic_wi4b32_afp32 --override Linear_w2=dynamic_wi8_afp32 --keep-float 0:56 --save-recipe q4.json",
    "tflite-viewer quantize small_cnn_dilated_float.tflite -o small_cnn_int8.tflite --recipe static_wi8_ai8 --samples 4",
]


def add_parser(subparsers) -> None:
    p = subcommand_parser(subparsers, "quantize", DESCRIPTION)
    add_model_argument(p, "the float .tflite file")
    p.add_argument("-o", "--output", metavar="OUT.tflite",
                   help="write the quantized model to this file ('-' for stdout; default "
                        "MODEL_quant.tflite beside the model, as litert quantize)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--recipe", metavar="NAME",
                       help=f"the quantizer's recipe (default {DEFAULT_RECIPE}, as litert "
                            "quantize; an unknown name lists them)")
    which.add_argument("--custom-recipe", metavar="JSON",
                       help="a recipe file in the quantizer's JSON format")
    p.add_argument("--override", action="append", metavar="SELECTOR=RECIPE",
                   help="quantize the ops SELECTOR names with RECIPE (a recipe name or "
                        "JSON file); repeat it for several")
    p.add_argument("--keep-float", action="append", metavar="SELECTOR",
                   help="leave the ops SELECTOR names in float; repeat it for several")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--calibration-data", metavar="IN.npz|SCRIPT.py",
                     help="calibration samples keyed by input name (a leading axis holds "
                          "several), or litert quantize's script defining "
                          "get_calibration_data()")
    src.add_argument("--images", metavar="DIR",
                     help="a folder of images (JPEG, PNG, ... or .npy), resized to the input "
                          "and normalized by its metadata (else onto its range)")
    p.add_argument("--signature", metavar="KEY",
                   help="the signature --calibration-data or --images feeds (default: "
                        "subgraph 0's); the others calibrate on seeded samples")
    p.add_argument("--samples", type=int, default=10, metavar="N",
                   help="calibration samples per signature (seeded ones when no "
                        "--calibration-data or --images; default 10)")
    add_seed_option(p, "the seeded samples")
    p.add_argument("--save-recipe", metavar="OUT.json",
                   help="write the recipe built, in the quantizer's JSON format ('-' for "
                        "stdout)")
    add_json_option(p, "what was done (the output, its size, the recipe, the ops each "
                       "selector names, the weight forms written)")


def main(args: argparse.Namespace) -> int:
    if args.samples < 1:
        raise CommandError(f"--samples must be at least 1, not {args.samples}")
    args.override, args.keep_float = args.override or [], args.keep_float or []
    if args.output is None:
        args.output = str(Path(args.model).with_name(f"{Path(args.model).stem}_quant.tflite"))
    out = Output(args, files={"--save-recipe": args.save_recipe}, product_is_json=False)
    model = load_model_arg(args.model)
    _check_tflite(args.model)
    for value in (args.custom_recipe, args.calibration_data):
        if value is not None:
            input_file(value, "file")
    if args.images is not None:
        input_folder(args.images)
    from ..quant import recipes, requantize
    from ..quant.forms import is_quantized
    recipes.quantizer()  # the install line before any work
    if is_quantized(model):
        raise CommandError(f"{args.model}: already quantized (a tensor has quantization "
                           "parameters, or a weight is stored in a narrower type); give the "
                           "float model")
    recipe = recipes.build_recipe(model, _base(args), _overrides(args), args.keep_float)
    samples = _samples(args, model, recipe)
    data = _run(args.model, recipe, samples)
    if args.save_recipe:
        import json
        write_file(args.save_recipe, json.dumps(recipe, indent=2) + "\n")
    if args.output == "-":
        out.product(data)
    else:
        requantize.write_model(args.output, data)
    doc = _summary(args, model, recipe, samples, data)
    out.text(_text(doc))
    out.json(doc)
    return 0


def _check_tflite(path: str) -> None:
    """The quantizer reads a .tflite file, not a model inside a .litertlm container."""
    with open(path, "rb") as f:
        head = f.read(8)
    if head[4:8] != b"TFL3":
        raise CommandError(f"{path}: not a .tflite file (a container?); the quantizer takes "
                           "the .tflite model itself")


def _base(args: argparse.Namespace):
    from ..quant import recipes
    if args.custom_recipe is not None:
        return recipes.load_recipe(args.custom_recipe)
    return args.recipe or DEFAULT_RECIPE


def _overrides(args: argparse.Namespace) -> list[tuple[str, object]]:
    from ..quant import recipes
    out = []
    for text in args.override:
        selector, eq, which = text.rpartition("=")
        if not eq or not selector or not which:
            raise CommandError(f"--override {text!r}: give SELECTOR=RECIPE, e.g. "
                               "FULLY_CONNECTED=dynamic_wi8_afp32")
        if which.endswith(".json"):
            input_file(which, "recipe file")
            out.append((selector, recipes.load_recipe(which)))
        else:
            out.append((selector, which))
    return out


def _samples(args: argparse.Namespace, model, recipe):
    """The calibration data a static recipe needs (None for the others), from the flags;
    a note on stderr when flags give samples a recipe does not use, or seeded ones stand
    in for data."""
    from ..quant import recipes, requantize
    if args.signature is not None:
        model.signature(args.signature)  # a KeyError naming the signatures
    given = args.calibration_data is not None or args.images is not None
    if not recipes.needs_calibration(recipe):
        if given:
            sys.stderr.write("tflite-viewer quantize: the recipe needs no calibration; the "
                             "samples given are not used\n")
        return None
    if args.calibration_data is not None and args.calibration_data.endswith(".py"):
        return _script_samples(args.calibration_data)
    npz = args.calibration_data
    if not given:
        sys.stderr.write(f"tflite-viewer quantize: calibrating on {args.samples} seeded "
                         "samples per signature (give --calibration-data or --images for "
                         "real data)\n")
    return requantize.calibration_samples(model, count=args.samples, seed=args.seed,
                                          npz=npz, images=args.images,
                                          signature=args.signature)


def _script_samples(path: str) -> dict:
    """litert quantize's calibration script: ``get_calibration_data()`` returns
    {signature key: [ {input name: array}, ... ]}."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("calibration_script", path)
    if spec is None or spec.loader is None:
        raise CommandError(f"{path}: cannot load it as a Python script")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        if not hasattr(module, "get_calibration_data"):
            raise CommandError(f"{path}: defines no get_calibration_data() (litert quantize's "
                               "calibration script)")
        data = module.get_calibration_data()
    except CommandError:
        raise
    except Exception as exc:
        raise CommandError(f"{path}: the script raised {type(exc).__name__}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise CommandError(f"{path}: get_calibration_data() returned "
                           f"{type(data).__name__}, not {{signature key: [inputs, ...]}}")
    return {k: [dict(x) for x in v] for k, v in data.items()}


def _run(path: str, recipe, samples) -> bytes:
    """The quantizer's run, its own chatter (progress bars, warnings, log lines) kept off
    stderr, where the progress goes as `quant` writes it."""
    from ..quant import requantize
    progress = ProgressPrinter(sys.stderr)  # the real stderr, while the quantizer's is muted

    logging.disable(logging.WARNING)
    try:
        with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return requantize.quantize(path, recipe, samples, progress)
    finally:
        logging.disable(logging.NOTSET)


def _summary(args: argparse.Namespace, model, recipe, samples, data: bytes) -> dict:
    from ..model import load_model
    from ..quant import recipes
    from ..quant.forms import model_weights, summary
    settings = recipes.op_settings(model, recipe)
    selectors = []
    for flag, texts in (("--override", [t.rpartition("=")[0] for t in args.override]),
                        ("--keep-float", args.keep_float)):
        for text in texts:
            sel = recipes.select(model, text)
            selectors.append({"flag": flag, **sel.to_dict(),
                              "settings": _count(settings[k] for k in sel.ops)})
    return {"model": args.model, "output": args.output, "bytes": len(data),
            "float_bytes": Path(args.model).stat().st_size,
            "recipe_name": None if args.custom_recipe else (args.recipe or DEFAULT_RECIPE),
            "custom_recipe": args.custom_recipe, "recipe": recipe,
            "calibration": None if samples is None else {k: len(v) for k, v in samples.items()},
            "selectors": selectors,
            "weights": summary([f for _, _, f in model_weights(load_model(data))])}


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _text(doc: dict) -> str:
    from ..quant.forms import WEIGHT_FIELDS, WeightForm
    where = "stdout" if doc["output"] == "-" else doc["output"]
    lines = [f"{doc['model']} -> {where}: {doc['bytes']:,} bytes ("
             f"{doc['float_bytes'] / max(doc['bytes'], 1):.1f}x smaller), recipe "
             f"{doc['recipe_name'] or doc['custom_recipe']}"]
    if doc["calibration"]:
        lines.append("calibrated on " + ", ".join(f"{n} sample(s) of {k}"
                                                   for k, n in doc["calibration"].items()))
    for s in doc["selectors"]:
        got = "; ".join(f"{n} {what}" for what, n in s["settings"].items())
        lines.append(f"{s['flag']} {s['selector']}: {len(s['ops'])} op(s) ({got})")
    lines.append("weights written:")
    lines += [f"  {f['count']:>4} x {WeightForm(**{k: f[k] for k in WEIGHT_FIELDS}).describe()}"
              for f in doc["weights"]] or ["  none quantized"]
    return "\n".join(lines)
