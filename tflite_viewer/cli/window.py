"""`tflite-viewer [MODEL]`: the window's entry point, with the subcommands' error contract.

Everything that can be decided without Qt is decided here, before PySide6 is imported: the
usage (``--run-to`` needs ``--screenshot``), the model file (missing, a folder, empty, not
a model: the same one-line messages as every subcommand, from `common`), a mistyped
subcommand (``tflite-viewer inof``: did you mean info?) and, for the window itself, whether
a display is there to show it on (Qt would otherwise abort with SIGABRT).  Each is one line
on stderr and exit 2.  ``--check`` asks a child process whether Qt's platform plugin really
starts here.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from .common import (EXIT_OK, CommandError, add_subgraph_option, input_file, load_model_arg,
                     output_file)

DESCRIPTION = ("Open MODEL in the window (a bundled sample model when no MODEL is given), or "
               "with --screenshot draw the window to a PNG file headless and exit.\n\n"
               "Every subcommand works without a display; run tflite-viewer SUBCOMMAND -h "
               "for its options.")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
# (the window itself is not opened there: a line without --screenshot is only checked)
EXAMPLES = [
    "tflite-viewer mobilenet_v2_float.tflite",
    "tflite-viewer mobilenet_v2_float.tflite --screenshot shot.png --select op:3",
    "tflite-viewer mobilenet_v2_float.tflite --screenshot paused.png --run-to 20",
    "tflite-viewer small_cnn_dilated_float.tflite --screenshot xnnpack.png --target xnnpack",
    "tflite-viewer tiny_llama_f32.tflite --screenshot decode3.png --generate 8 --prompt 5,17,42 "
    "--subgraph decode --run-to 40 --decode-step 3 --watch kv_cache_k_0",
    "tflite-viewer --check",
]


def _usage() -> str:
    from . import SUBCOMMANDS
    return ("tflite-viewer [MODEL] [--select op:N|tensor:N] [--subgraph S]\n"
            "                     [--screenshot OUT.png [--run-to N [--inputs IN.npz]]]\n"
            "                     [--generate K [--prompt IDS] [--decode-step I]] "
            "[--watch TENSOR ...] [--expand-composites]\n"
            f"       tflite-viewer {{{','.join(SUBCOMMANDS)}}} ...\n"
            "       tflite-viewer --check | --version | -h")


def _epilog() -> str:
    from . import SUBCOMMANDS
    width = max(len(n) for n in SUBCOMMANDS)
    return "subcommands:\n" + "\n".join(f"  {name:<{width}}  {text}"
                                         for name, text in SUBCOMMANDS.items())


class _WindowHelp(argparse.RawDescriptionHelpFormatter):
    """Keeps the subcommand list's lines as written (the epilog), fills the description."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("subcommands:"):
            return super()._fill_text(text, width, indent)
        return "\n\n".join(argparse.HelpFormatter._fill_text(self, p, width, indent)
                           for p in text.split("\n\n"))


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    from . import Parser
    parser = Parser(prog="tflite-viewer", usage=_usage(), description=DESCRIPTION,
                    epilog=_epilog(), formatter_class=_WindowHelp)
    parser.add_argument("model", nargs="?", metavar="MODEL",
                        help="the .tflite file to open (default: the bundled sample model)")
    parser.add_argument("--screenshot", metavar="OUT.png",
                        help="draw the window to OUT.png without showing it, and exit")
    parser.add_argument("--select", metavar="op:N|tensor:N",
                        help="the operator or tensor to select once the model is shown")
    add_subgraph_option(parser)
    parser.add_argument("--run-to", metavar="N", type=int, default=None,
                        help="with --screenshot: run the model in the debugger and pause before "
                             "operator N of the subgraph shown, the debugger docks open")
    parser.add_argument("--inputs", metavar="IN.npz", default=None,
                        help="with --run-to: input arrays keyed by input name (default: seeded)")
    parser.add_argument("--generate", metavar="K", type=int, default=None,
                        help="with --run-to: run the model as an LLM generating K tokens "
                             "(prefill, then K decode steps, the KV cache carried by name); "
                             "with --compare-float: the Quantization dock's Generation view "
                             "of both models generating K tokens")
    parser.add_argument("--prompt", metavar="IDS", default=None,
                        help="with --generate: the prompt's token ids, e.g. 1,2,3 (default 1)")
    parser.add_argument("--decode-step", metavar="I", type=int, default=None,
                        help="with --generate: pause before --run-to's operator in decode "
                             "step I (default: the first call that runs it)")
    parser.add_argument("--watch", metavar="TENSOR", action="append", default=None,
                        help="with --run-to: pin this tensor (index or name, in the subgraph "
                             "shown) in the Watch dock; repeatable")
    parser.add_argument("--expand-composites", action="store_true",
                        help="with --screenshot: draw every STABLEHLO_COMPOSITE expanded "
                             "inline (View > Fold Composites off)")
    parser.add_argument("--cross-check", action="store_true",
                        help="with --screenshot: cross-check with LiteRT, its dock shown, "
                             "coloured by error, the largest error selected")
    parser.add_argument("--compare-float", metavar="FLOAT.tflite", default=None,
                        help="with --screenshot: compare MODEL (quantized) with its float "
                             "original in the Quantization dock, the worst tensor selected")
    parser.add_argument("--compare-with", metavar="OTHER.tflite", default=None,
                        help="with --screenshot: compare MODEL with OTHER side by side "
                             "(File > Compare With), the Differences dock in front")
    parser.add_argument("--overlay", metavar="METRIC", default=None,
                        help="with --compare-float: colour the canvas by METRIC (sqnr_db, "
                             "cosine, fallback_gain_db, ...)")
    parser.add_argument("--memory", action="store_true",
                        help="with --screenshot: the Memory dock in front (TFLite Micro's "
                             "arena), the canvas coloured by live memory, the largest tensor "
                             "live at the peak selected")
    parser.add_argument("--target", metavar="NAME", default=None,
                        help="with --screenshot: the Targets dock in front for NAME (litert, "
                             "xnnpack, gpu, tflm), the canvas coloured by its verdicts and "
                             "partitions")
    parser.add_argument("--check", action="store_true",
                        help="report whether the window can start on this machine (Qt's "
                             "libraries, the display, the platform plugin) and exit: 0 it can, "
                             "1 it cannot")
    parser.add_argument("--version", action="version", version=f"tflite-viewer {__version__}")
    return parser


def parse(argv: Sequence[str]) -> argparse.Namespace:
    argv = list(argv)
    if argv and not argv[0].startswith("-"):
        _check_word(argv[0])  # `tflite-viewer inof x`: the near miss, not "unrecognized x"
    return build_parser().parse_args(argv)


def _check_word(model: str) -> None:
    """A first argument that is no file and looks like a word, not a path, was meant as
    a subcommand: say which one it is close to."""
    from . import SUBCOMMANDS, did_you_mean
    path = Path(model)
    if path.exists() or path.suffix or len(path.parts) != 1:
        return
    guess = did_you_mean(model)
    if guess:
        raise CommandError(f"{model!r} is not a subcommand (did you mean {guess}?)")
    raise CommandError(f"{model!r}: no such file, and not a subcommand "
                       f"({', '.join(SUBCOMMANDS)})")


def _check_usage(args: argparse.Namespace) -> None:
    if args.screenshot is None and args.run_to is not None:
        raise CommandError("--run-to goes with --screenshot OUT.png")
    if args.inputs is not None and args.run_to is None:
        raise CommandError("--inputs goes with --run-to N")
    if args.screenshot is None and (args.cross_check or args.compare_float is not None):
        raise CommandError(f"{'--cross-check' if args.cross_check else '--compare-float'} "
                           "goes with --screenshot OUT.png")
    for option, value, needs, needed in (
            ("--generate", args.generate, "--run-to N or --compare-float FLOAT.tflite",
             args.run_to if args.run_to is not None else args.compare_float),
            ("--prompt", args.prompt, "--generate K", args.generate),
            ("--decode-step", args.decode_step, "--generate K", args.generate),
            ("--watch", args.watch, "--run-to N", args.run_to),
            ("--expand-composites", args.expand_composites or None, "--screenshot OUT.png",
             args.screenshot)):
        if value is not None and needed is None:
            raise CommandError(f"{option} goes with {needs}")
    if args.generate is not None and args.inputs is not None:
        raise CommandError("--inputs does not go with --generate (the loop makes its inputs)")
    if args.screenshot is None and args.memory:
        raise CommandError("--memory goes with --screenshot OUT.png")
    if args.screenshot is None and args.compare_with is not None:
        raise CommandError("--compare-with goes with --screenshot OUT.png")
    if args.overlay is not None and args.compare_float is None:
        raise CommandError("--overlay goes with --compare-float FLOAT.tflite")
    if args.target is not None:
        if args.screenshot is None:
            raise CommandError("--target goes with --screenshot OUT.png")
        from ..targets.report import TARGETS
        if args.target not in TARGETS:
            raise CommandError(f"--target {args.target}: one of {', '.join(TARGETS)}")
    if args.screenshot is not None and Path(args.screenshot).suffix.lower() != ".png":
        raise CommandError(f"--screenshot {args.screenshot}: the output must end in .png")
    if args.screenshot is not None and args.check:
        raise CommandError("--check goes alone")


def _check_model(args: argparse.Namespace) -> None:
    """The model and what the arguments name in it, read once before any Qt: a mistyped
    subcommand, a file that is not a model, a subgraph, operator or tensor it does not
    have are one line here, not an empty window with a dialog."""
    if args.compare_float is not None:
        try:
            load_model_arg(args.compare_float)
        except CommandError as exc:
            raise CommandError(f"--compare-float {exc}") from None
    if args.compare_with is not None:
        try:
            load_model_arg(args.compare_with)
        except CommandError as exc:
            raise CommandError(f"--compare-with {exc}") from None
    if args.model is not None:
        _check_word(args.model)
        model = load_model_arg(args.model)
    elif args.subgraph is None and args.select is None and args.run_to is None:
        return  # the bundled sample: nothing to check in it
    else:
        from ..model import load_model
        from ..samples import sample_model_path
        model = load_model(sample_model_path())
    name = Path(args.model).name if args.model else "the sample model"
    try:
        index = model.subgraph_index(args.subgraph)
    except KeyError as exc:
        raise CommandError(f"{name}: {exc.args[0]}") from None
    if args.select is not None:
        from ..ui.state.selection import parse_spec  # Qt-free
        parse_spec(model, index, args.select)
    if args.run_to is not None:
        n = len(model.subgraphs[index].operators)
        if not 0 <= args.run_to < n:
            raise CommandError(f"--run-to {args.run_to}: subgraph {index} has {n} operators "
                               f"(0..{n - 1})")
    if args.generate is not None:
        _check_generation(args, model)
    for name in args.watch or ():
        from ..ui.state.selection import find_tensor  # Qt-free
        find_tensor(model, index, name)  # a ValueError naming the subgraph's tensors


def _check_generation(args: argparse.Namespace, model) -> None:
    """The loop --generate sets up, checked as the window would (GenerationError)."""
    from ..interpreter.generation import Generation, find_plan, parse_prompt
    prompt = parse_prompt(args.prompt or "1")
    plan = find_plan(model, len(prompt))
    Generation(model, plan, prompt, args.generate)
    if args.decode_step is not None and not 1 <= args.decode_step <= args.generate:
        raise CommandError(f"--decode-step {args.decode_step}: the run has decode steps "
                           f"1..{args.generate}")


def main(args: argparse.Namespace) -> int:
    _check_usage(args)
    if args.check:
        from ..ui.platform_check import check_report  # loads no Qt in this process
        report, code = check_report()
        print(report)
        return code
    _check_model(args)
    if args.inputs is not None:
        input_file(args.inputs, "inputs file")
    if args.screenshot is not None:
        output_file(args.screenshot)
    if args.screenshot is None:
        from ..ui.platform_check import display_problem
        problem = display_problem()
        if problem:
            raise CommandError(problem)
    from ..interpreter.heap import keep_freed_memory
    keep_freed_memory()  # a debug run's tensors reuse freed memory (`heap`)
    from ..ui.app import run_app  # the only place the window (and PySide6) is imported
    from ..ui.state.launch import Launch
    return int(run_app(Launch.from_args(args)) or EXIT_OK)
