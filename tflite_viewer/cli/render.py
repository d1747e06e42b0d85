"""`tflite-viewer render MODEL -o OUT.svg|OUT.png [--subgraph S]`: the canvas, headless.

The picture is the one the window draws (same scene, colours and labels), rendered by
`tflite_viewer.ui.render` on Qt's offscreen platform when there is no display.  Qt is
imported only when the command runs, so `tflite-viewer info` and friends never load it.
"""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from .common import (CommandError, add_model_argument, add_subgraph_option, load_model_arg,
                     subcommand_parser)
from .output import Output, add_json_option, add_output_option

FORMATS = ("svg", "png")
DESCRIPTION = ("Draw one subgraph's graph as the window shows it, to an SVG (vector, full "
               "detail) or a PNG (scaled down to at most 16,000 pixels a side). Needs no "
               "display: Qt's offscreen platform is used when there is none.")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer render control_flow.tflite --subgraph 4 -o graph.svg",
]


def add_parser(subparsers) -> None:
    p = subcommand_parser(subparsers, "render", DESCRIPTION)
    add_model_argument(p)
    add_output_option(p, metavar="OUT.svg|OUT.png", required=True,
                      what="the image (its suffix picks the format)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="the image format (default: from the suffix of -o; needed with -o -)")
    add_subgraph_option(p)
    p.add_argument("--scale", type=float, default=1.0, metavar="X",
                   help="PNG pixels per layout unit (default 1; large graphs are scaled down)")
    add_json_option(p, "what was written (file, format, size, subgraph)")


def _format(args: argparse.Namespace) -> str:
    if args.format:
        return args.format
    suffix = Path(args.output).suffix.lower().lstrip(".")
    if args.output == "-":
        raise CommandError("-o -: give the image format with --format svg|png")
    if suffix not in FORMATS:
        raise CommandError(f"{args.output}: the output must end in .svg or .png "
                           "(or give --format)")
    return suffix


def main(args: argparse.Namespace) -> int:
    out = Output(args, product_is_json=False)
    fmt = _format(args)
    if not args.scale > 0:
        raise CommandError(f"--scale must be positive, not {args.scale:g}")
    model = load_model_arg(args.model)  # the one-line file messages, before Qt starts
    index = model.subgraph_index(args.subgraph)
    from ..ui.render import render_to_file

    with tempfile.TemporaryDirectory(prefix="tflite-viewer-render-") as tmp:
        # drawn next to nothing the user owns, then moved or copied into place
        drawn = render_to_file(args.model, Path(tmp) / f"graph.{fmt}", index, args.scale)
        data = drawn.read_bytes()
    out.product(data)
    written = "-" if args.output == "-" else os.fspath(args.output)
    out.text(f"wrote {written} ({fmt}, {len(data):,} bytes, subgraph {index})")
    out.json({"output": written, "format": fmt, "bytes": len(data), "subgraph": index})
    return 0
