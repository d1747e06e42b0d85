"""`tflite-viewer`: the window, or a headless subcommand (info, run, layout, render, edit,
quant, ops, memory).

Exit codes are a contract scripts rely on: 0 success, 1 a check failed (e.g. a comparison
mismatch), 2 bad input or usage, always with one readable line on stderr, never a
traceback.  Each subcommand lives in its own module of this package (`tflite_viewer.cli`) with
`add_parser(subparsers)` and `main(args) -> int`; only the module of the subcommand being
run is imported (the `layout` of a 20,000-op model runs in about a second, and a third of
that would otherwise be imports it does not use).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence


SUBCOMMANDS = ("info", "run", "layout", "render", "edit", "quant", "ops", "memory")
EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line (its default prints the usage block too)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_BAD_INPUT)


def _command_module(name: str):
    return importlib.import_module(f"tflite_viewer.cli.{name}")


def build_parser(command: str) -> argparse.ArgumentParser:
    parser = _Parser(prog="tflite-viewer", description="Explore, run and edit TFLite models.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    _command_module(command).add_parser(sub)
    return parser


def _window_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tflite-viewer",
        description="Open MODEL in the window (a bundled sample when no MODEL is given). "
                    f"Subcommands: {', '.join(SUBCOMMANDS)} (tflite-viewer SUBCOMMAND -h).")
    parser.add_argument("model", nargs="?", help="a .tflite file")
    parser.add_argument("--screenshot", metavar="OUT.png",
                        help="render the window offscreen to OUT.png and exit")
    parser.add_argument("--select", metavar="op:N|tensor:N", help="select an operator or tensor")
    parser.add_argument("--subgraph", metavar="S", default=None,
                        help="subgraph index, name or signature key to show")
    parser.add_argument("--run-to", metavar="N", type=int, default=None,
                        help="with --screenshot: run the model in the debugger and pause before "
                             "operator N (of --subgraph, default 0), the debugger docks shown")
    parser.add_argument("--inputs", metavar="IN.npz", default=None,
                        help="with --run-to: input arrays keyed by input name (else seeded)")
    parser.add_argument("--check", action="store_true",
                        help="report whether this machine has what the window needs (Qt's system "
                             "libraries) and exit: 0 all present, 1 something missing")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        if args_list and args_list[0] in SUBCOMMANDS:
            args = build_parser(args_list[0]).parse_args(args_list)
            return int(_command_module(args.command).main(args) or 0)
        args = _window_parser().parse_args(args_list)
        if args.check:
            from ..ui.platform_check import check_report  # loads no Qt
            report, code = check_report()
            print(report)
            return code
        from ..ui.app import run_app  # the only place the window (and PySide6) is imported
        return int(run_app(args) or 0)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else EXIT_BAD_INPUT
    except (OSError, ValueError, KeyError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        sys.stderr.write(f"tflite-viewer: error: {message}\n")
        return EXIT_BAD_INPUT
    except Exception as exc:
        # Imported here so that `tflite-viewer --help` or a subcommand that fails early does
        # not pay for loading the model package (and numpy) just to name an exception.
        from ..model.errors import TFLiteViewerError
        if not isinstance(exc, TFLiteViewerError):
            raise
        sys.stderr.write(f"tflite-viewer: error: {exc}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("tflite-viewer: interrupted\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
