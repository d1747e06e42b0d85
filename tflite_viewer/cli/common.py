"""What every subcommand shares: the error a command raises, one-line messages, and the
checks of the files and folders it is given.

A subcommand never writes its own error line.  It raises `CommandError` (or lets a
documented error through: `ModelFormatError`, `UnsupportedOpError`, `EditError`, budget
errors, `OSError`, `ValueError`, `KeyError`), and `tflite_viewer.cli.main` prints
``tflite-viewer SUBCOMMAND: error: <one line>`` and exits 2.  The messages about files come
from here only, so every subcommand (and the window's entry point) says the same thing
about the same file:

* ``m.tflite: no such file``
* ``m.tflite: is a directory, not a file``
* ``m.tflite: empty file (0 bytes)``
* ``m.tflite: cannot read it (Permission denied)``
* ``m.tflite: not a valid TFLite model: subgraphs[0].operators[3].inputs[1]: ...``

Use `load_model_arg` for a model argument, `input_file` / `input_folder` for other inputs
(``--inputs IN.npz``, ``--images DIR``) and `output_file` before writing anything.  Long
work reports its progress on stderr through one `ProgressPrinter`.
"""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the model package (and numpy) load only when a model is read
    from ..model import Model

EXIT_OK, EXIT_CHECK_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class CommandError(ValueError):
    """Bad input or usage: the command prints the message on one line and exits 2."""


def one_line(exc: BaseException | str) -> str:
    """An error message on one line: continuation lines joined with "; ", blank lines and
    the ``<file>: `` placeholder of file-level model errors dropped."""
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    else:
        text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__ if isinstance(exc, BaseException) else ""
    head, rest = lines[0], lines[1:]
    head = head.removeprefix("<file>: ")
    if not rest:
        return head
    return head + (" " if head.endswith(":") else ": ") + "; ".join(rest)


def input_file(path: str | os.PathLike, what: str = "file") -> Path:
    """``path`` if it names a readable, non-empty regular file; else `CommandError` with the
    one message every subcommand gives for it.  ``what`` names the expected content in the
    empty-file message ("model", "inputs file")."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file") from None
    except OSError as exc:
        raise CommandError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise CommandError(f"{path}: is a directory, not a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise CommandError(f"{path}: not a regular file")
    if st.st_size == 0:
        raise CommandError(f"{path}: empty file (0 bytes), not a {what}")
    if not os.access(p, os.R_OK):
        raise CommandError(f"{path}: cannot read it (permission denied)")
    return p


def input_folder(path: str | os.PathLike) -> Path:
    """``path`` if it names a folder; else `CommandError`."""
    p = Path(path)
    if not p.exists():
        raise CommandError(f"{path}: no such folder")
    if not p.is_dir():
        raise CommandError(f"{path}: not a folder")
    return p


def model_error(path: str | os.PathLike, exc: BaseException) -> CommandError:
    """The one-line error for a model file that cannot be read (a `ModelFormatError` or an
    `OSError` raised while reading it)."""
    from ..model import ModelFormatError

    if isinstance(exc, ModelFormatError):
        if exc.where == "<file>":  # the file as a whole: its reason says what it is not
            return CommandError(f"{path}: {one_line(exc.reason)}")
        return CommandError(f"{path}: not a valid TFLite model: {one_line(exc)}")
    if isinstance(exc, OSError):
        return CommandError(f"{path}: cannot read it ({exc.strerror or exc})")
    return CommandError(f"{path}: {one_line(exc)}")


def load_model_arg(path: str | os.PathLike, section: int | None = None) -> Model:
    """`load_model` of a command-line argument: the file checks above, then the reader;
    every failure is one `CommandError` line naming the file.  A .litertlm container
    opens its TFLite section ``section`` (the first one by default)."""
    from ..model import ModelFormatError, load_model

    input_file(path, "model")
    try:
        return load_model(path, section=section)
    except (ModelFormatError, OSError) as exc:
        raise model_error(path, exc) from None
    except KeyError as exc:  # a section that is not a TFLite model
        raise CommandError(f"{path}: {exc.args[0]}") from None


def output_file(path: str | os.PathLike) -> Path:
    """``path`` if a file can be written there (``-``, stdout, always can): its folder
    exists and it is not itself a folder.  Checked before the work, so a long run does not
    end in "no such folder"."""
    if str(path) == "-":
        return Path("-")
    p = Path(path)
    if p.is_dir():
        raise CommandError(f"{path}: is a directory; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise CommandError(f"{path}: no such folder {str(parent)!r} to write into")
    return p


# ------------------------------------------------------------------------------------------
# options several subcommands take: one spelling, metavar and default text everywhere
# ------------------------------------------------------------------------------------------
def subcommand_parser(subparsers, name: str, description: str):
    """The parser of subcommand ``name``: its summary from `SUBCOMMANDS`, its description
    (plain text, paragraphs separated by blank lines) shown by ``-h`` and docs/cli.md."""
    from . import SUBCOMMANDS
    return subparsers.add_parser(name, help=SUBCOMMANDS[name], description=description)


def add_model_argument(parser, help: str = "the .tflite file") -> None:
    parser.add_argument("model", metavar="MODEL", help=help)


def add_subgraph_option(parser) -> None:
    parser.add_argument("--subgraph", metavar="S", default=None,
                        help="subgraph index, name or signature key (default 0)")


def add_seed_option(parser, what: str = "the generated inputs") -> None:
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help=f"seed of {what} (default 0)")


# ------------------------------------------------------------------------------------------
# progress on stderr: quant, quantize, run
# ------------------------------------------------------------------------------------------
class ProgressPrinter:
    """Progress as every long command writes it, ``[done/total] message``: on a terminal
    one line rewritten in place and ended when ``done`` reaches ``total`` (or at `end`);
    elsewhere (a log, a pipe) a line at the start, each time ``done`` passes another tenth
    of ``total``, and at the end.  Call it as ``printer(done, total, message)``.
    ``stream`` is stderr by default, looked up at each call."""

    #: the message's width on a terminal (the line is rewritten over itself)
    WIDTH = 70

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self._last = -1
        self._open = False  # a terminal line is being rewritten

    def __call__(self, done: int, total: int, message: str) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        if stream.isatty():
            stream.write(f"\r[{done}/{total}] {message[:self.WIDTH]:{self.WIDTH}}")
            self._open = done < total
            if not self._open:
                stream.write("\n")
        else:
            step = max(total // 10, 1)
            if done <= 0 or done >= total or done < self._last \
                    or done // step > self._last // step:
                stream.write(f"[{done}/{total}] {message}\n")
        self._last = done
        stream.flush()

    def end(self) -> None:
        """End a terminal line left open (the work stopped before its total)."""
        if self._open:
            stream = self.stream if self.stream is not None else sys.stderr
            stream.write("\n")
            stream.flush()
            self._open = False
