"""`tflite-viewer`: the window, or a headless subcommand.

Exit codes are a contract scripts rely on: 0 success, 1 a check failed (e.g. a comparison
mismatch), 2 bad input or usage, always with one readable line on stderr, never a
traceback.  Each subcommand lives in its own module of this package with
``add_parser(subparsers)`` and ``main(args) -> int``, and is listed in `SUBCOMMANDS`; only
the module of the subcommand being run is imported (the `layout` of a 20,000-op model runs
in about a second, and a third of that would otherwise be imports it does not use).

Subcommands raise, they do not print errors: `main` turns `CommandError` and the
documented errors into ``tflite-viewer SUBCOMMAND: error: <one line>`` and exit 2.  The
shared pieces a new subcommand uses are `common` (file checks and messages, option helpers)
and `output` (``--json``, ``-o FILE``, ``-`` for stdout); docs/ARCHITECTURE.md walks
through adding one.
"""
from __future__ import annotations

import argparse
import difflib
import gc
import importlib
import os
import sys
from collections.abc import Sequence

from .common import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, EXIT_OK, CommandError, one_line

__all__ = ["SUBCOMMANDS", "main", "entry", "build_parser", "CommandError",
           "EXIT_OK", "EXIT_CHECK_FAILED", "EXIT_BAD_INPUT"]

# name -> one-line summary (shown in `tflite-viewer -h`, each subcommand's help and
# docs/cli.md).  A new subcommand adds its line here and a module named after it.
SUBCOMMANDS: dict[str, str] = {
    "info": "summarize a model: operators, tensors, metadata, findings",
    "run": "run a model in the interpreter and cross-check it against LiteRT",
    "layout": "lay out a subgraph: node boxes, edge polylines, crossings",
    "render": "draw a subgraph's graph to SVG or PNG",
    "edit": "change options, names, versions, quantization and write a new model",
    "quant": "quantization analysis: spec checks, ranges, float vs quantized, fallback gain",
    "quantize": "quantize a float model with LiteRT's quantizer: recipes, per-op overrides",
    "ops": "op coverage: versions and types here against LiteRT's builtin resolver",
    "memory": "will it fit: TFLite Micro's or LiteRT's tensor arena, its peak, what-ifs",
    "targets": "which operators LiteRT, XNNPACK, the GPU delegate and TFLite Micro take",
    "diff": "compare two models: structure, options, weights, quantization, numbers",
}
PROG = "tflite-viewer"


class ParagraphFormatter(argparse.HelpFormatter):
    """argparse's formatter, but descriptions keep their paragraphs (blank-line separated)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(super(ParagraphFormatter, self)._fill_text(p, width, indent)
                           for p in text.split("\n\n"))


class Parser(argparse.ArgumentParser):
    """argparse that raises `CommandError` (one line, exit 2) instead of printing its usage
    block and exiting."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", ParagraphFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CommandError(f"{message} (see {self.prog} -h)")


def _command_module(name: str):
    return importlib.import_module(f"tflite_viewer.cli.{name}")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of one subcommand, or with ``command`` None of every subcommand (for
    help and docs/cli.md; that imports every subcommand's module)."""
    parser = Parser(prog=PROG, description="Explore, run and edit TFLite models.")
    sub = parser.add_subparsers(dest="command", parser_class=Parser, metavar="SUBCOMMAND")
    for name in ([command] if command else SUBCOMMANDS):
        _command_module(name).add_parser(sub)
    return parser


def subcommand_parsers() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's own parser, by name (what docs/cli.md is generated from)."""
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def did_you_mean(word: str) -> str | None:
    """The subcommand ``word`` is a near miss of, if any (``inof`` -> ``info``)."""
    close = difflib.get_close_matches(word, list(SUBCOMMANDS), n=1, cutoff=0.6)
    return close[0] if close else None


def _report(prog: str, message: str) -> int:
    sys.stdout.flush()
    sys.stderr.write(f"{prog}: error: {message}\n")
    return EXIT_BAD_INPUT


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    command = args_list[0] if args_list and args_list[0] in SUBCOMMANDS else None
    prog = f"{PROG} {command}" if command else PROG
    try:
        if command:
            args = build_parser(command).parse_args(args_list)
            return int(_command_module(command).main(args) or 0)
        from . import window
        return window.main(window.parse(args_list))
    except SystemExit as exc:  # -h, --version
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        return 130
    except BrokenPipeError:
        # the reader of stdout went away (`| head`): stop quietly, and keep Python from
        # complaining when it flushes stdout at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except (CommandError, OSError, ValueError, KeyError, IndexError, MemoryError) as exc:
        return _report(prog, one_line(exc))
    except Exception as exc:
        # Imported here so that `tflite-viewer --help` or a subcommand that fails early does
        # not pay for loading the model package (and numpy) just to name an exception.
        from ..model.errors import TFLiteViewerError
        if not isinstance(exc, TFLiteViewerError):
            raise
        return _report(prog, one_line(exc))


#: the cyclic collector's first threshold while a subcommand runs (Python's default: 700)
COMMAND_GC_THRESHOLD = 20_000


def entry(argv: Sequence[str] | None = None) -> int:
    """The ``tflite-viewer`` program (its console script, ``python -m tflite_viewer``):
    `main` in a process that ends with it.

    A subcommand builds one large graph of objects (a model's views, an interpreter's
    tensors and nodes point back at their subgraph) that lives until the process ends.
    With Python's default thresholds the cyclic collector walks it again and again while
    it grows, and once more at exit to free what the process hands back whole: on the
    2.6 GB decoder's ``run``, 38 ms in 148 collections and 32 ms at exit, against a run of
    0.76 s.  A subcommand collects 30 times less often, and at exit the collector is told
    the objects are permanent (`gc.freeze`).  The window keeps Python's defaults.  Only
    the program does this: `main`, which tests and scripts call, leaves the collector as
    it is."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = bool(args) and args[0] in SUBCOMMANDS
    if command:
        gc.set_threshold(COMMAND_GC_THRESHOLD, *gc.get_threshold()[1:])
    try:
        return main(args)
    finally:
        gc.freeze()


if __name__ == "__main__":
    raise SystemExit(entry())
