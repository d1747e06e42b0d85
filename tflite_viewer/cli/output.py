"""One output convention for every subcommand (docs/cli.md, "Output"):

* the text report goes to stdout, progress and warnings to stderr;
* ``--json`` prints strict JSON on stdout instead of the text report;
* ``-o FILE`` (``--output``) writes the command's product to FILE: the JSON document for
  the report commands (info, layout, run, quant, ops), the model for edit, the image for
  render; named options (``--csv FILE``, ``--dump-all FILE``) write their own files;
* ``-`` as any of those file names means stdout.  Stdout carries one document: when a file
  option is ``-`` the text report is left out, and two documents for stdout (``edit --json
  -o -``) is a usage error, exit 2.

A subcommand declares its options with `add_json_option` / `add_output_option` and writes
through an `Output`::

    def add_parser(subparsers):
        p = subcommand_parser(subparsers, "memory", "Arena plan and tensor lifetimes.")
        add_json_option(p)
        add_output_option(p)

    def main(args):
        out = Output(args)                 # checks the paths before any work
        doc = ...
        out.text(render_text(doc))         # printed unless stdout carries a document
        out.json(doc)                      # --json to stdout, -o FILE to the file
        return 0
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from . import jsonout
from .common import CommandError, output_file


def add_json_option(parser: argparse.ArgumentParser, what: str = "the report") -> None:
    parser.add_argument("--json", action="store_true",
                        help=f"print {what} as strict JSON on stdout instead of text")


def add_output_option(parser: argparse.ArgumentParser, metavar: str = "OUT.json",
                      what: str = "the JSON report", required: bool = False) -> None:
    parser.add_argument("-o", "--output", metavar=metavar, required=required,
                        help=f"write {what} to this file ('-' for stdout)")


class Output:
    """Where a subcommand's documents go, decided once from its arguments.

    ``files`` names the command's other file options and their values (``{"--csv":
    args.csv}``); ``product_is_json`` says that ``-o`` writes the same JSON document as
    ``--json`` (False for edit's model and render's image).
    """

    def __init__(self, args: argparse.Namespace, files: dict[str, str | None] | None = None,
                 product_is_json: bool = True) -> None:
        self.as_json = bool(getattr(args, "json", False))
        self.output = getattr(args, "output", None)
        self.product_is_json = product_is_json
        self.files = {"-o": self.output, **(files or {})}
        claims = [name for name, value in self.files.items() if value == "-"]
        if self.as_json and not (product_is_json and self.output == "-"):
            claims.insert(0, "--json")
        if len(claims) > 1:
            names = ", ".join(claims[:-1]) + " and " + claims[-1]
            raise CommandError(f"{names} would each write to stdout, which carries one "
                               "document; give the others a file name")
        self.stdout_taken = bool(claims)
        for value in self.files.values():
            if value is not None:
                output_file(value)

    @property
    def wants_json(self) -> bool:
        """Whether a JSON document is asked for at all (on stdout or in ``-o``)."""
        return self.as_json or (self.product_is_json and self.output is not None)

    def text(self, text: str) -> None:
        """The text report: on stdout unless stdout carries a document."""
        if not self.stdout_taken:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")

    def json(self, doc: Any, indent: bool = True) -> None:
        """The JSON document: on stdout with ``--json``, in ``-o`` (when that is JSON)."""
        if self.wants_json:
            self.json_text(jsonout.encode(doc, indent=indent))

    def json_text(self, text: bytes | str) -> None:
        """A JSON document already serialized (strict): where `json` would put it.  For
        documents a command writes faster by itself (targets' one line)."""
        if not self.wants_json:
            return
        data = text.encode() if isinstance(text, str) else text
        data = data if data.endswith(b"\n") else data + b"\n"
        if self.as_json or (self.product_is_json and self.output == "-"):
            # bytes to stdout's byte stream; a text-only stdout (a caller's StringIO) as text
            write_file("-", data if hasattr(sys.stdout, "buffer") else data.decode())
        if self.product_is_json and self.output not in (None, "-"):
            write_file(self.output, data)

    def product(self, data: bytes | str) -> None:
        """``-o``'s content when it is not the JSON document (a model, an image)."""
        if self.output is not None:
            write_file(self.output, data)


def write_file(path: str, data: bytes | str) -> None:
    """Write ``data`` to ``path`` (``-``: stdout, binary data to its byte stream); an
    unwritable path is a `CommandError` naming it."""
    if path == "-":
        if isinstance(data, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(data)
        return
    try:
        with open(path, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
    except OSError as exc:
        raise CommandError(f"{path}: cannot write it ({exc.strerror or exc})") from None
