"""`tflite-viewer render MODEL -o OUT.svg|OUT.png [--subgraph S]`: the canvas, headless.

The picture is the one the window draws (same scene, colours and labels), rendered by
`tflite_viewer.ui.render` on Qt's offscreen platform when there is no display.  Qt is
imported only when the command runs, so `tflite-viewer info` and friends never load it.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..model import ModelFormatError

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("render", help="draw a subgraph's graph to SVG or PNG")
    p.add_argument("model", help="a .tflite file")
    p.add_argument("-o", "--output", required=True, metavar="OUT.svg|OUT.png",
                   help="the image to write; the suffix picks the format")
    p.add_argument("--subgraph", default=None, metavar="S",
                   help="subgraph index, name or signature key (default 0)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="PNG pixels per layout unit (default 1; large graphs are scaled down)")


def _fail(message: str) -> int:
    sys.stderr.write(f"tflite-viewer render: error: {message}\n")
    return EXIT_BAD_INPUT


def main(args) -> int:
    out = Path(args.output)
    if out.suffix.lower() not in (".svg", ".png"):
        return _fail(f"{out.name}: the output must end in .svg or .png")
    if not args.scale > 0:
        return _fail("--scale must be positive")
    if not Path(args.model).is_file():
        return _fail(f"{args.model}: no such file")
    from ..ui.render import render_to_file

    try:
        written = render_to_file(args.model, out, args.subgraph, args.scale)
    except ModelFormatError as exc:
        return _fail(f"{Path(args.model).name} is not a valid TFLite model: {exc}")
    except KeyError as exc:
        return _fail(str(exc.args[0]) if exc.args else str(exc))
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    print(written)
    return EXIT_OK
