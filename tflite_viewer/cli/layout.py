"""`tflite-viewer layout MODEL [--subgraph S] [--json] [-o OUT.json]`: node boxes, edge
polylines and crossings of one subgraph's layered layout (docs/ARCHITECTURE.md's contract).

Imports neither networkx nor Qt: the graph comes from `graph.arrays`, the layout works on
arrays, so the whole process of a 20,000-op model takes about a second."""
from __future__ import annotations

import argparse
import sys

from ..graph.arrays import OP, cycle_defects, graph_arrays
from ..graph.layout import layout_arrays
from .common import add_model_argument, add_subgraph_option, load_model_arg, subcommand_parser
from .output import Output, add_json_option, add_output_option

DESCRIPTION = ("Lay out one subgraph as the window draws it (layered, top to bottom) and print "
               "its size and edge crossings; with --json or -o the node boxes (x, y, width, "
               "height; y grows downward) and every edge's polyline. Defects of the graph "
               "(cycles, tensors with several producers) are warnings on stderr; the graph is "
               "drawn anyway.")
# shown in docs/cli.md, and run by tests/test_docs.py in a folder holding the corpus models
EXAMPLES = [
    "tflite-viewer layout control_flow.tflite --subgraph 4 -o layout.json",
]


def add_parser(subparsers) -> None:
    p = subcommand_parser(subparsers, "layout", DESCRIPTION)
    add_model_argument(p)
    add_subgraph_option(p)
    add_json_option(p, "the layout")
    add_output_option(p, what="the layout as JSON")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def main(args: argparse.Namespace) -> int:
    out = Output(args)
    model = load_model_arg(args.model)
    index = model.subgraph_index(args.subgraph)
    graph = graph_arrays(model, index)  # arrays, not networkx: see graph/arrays.py
    result = layout_arrays(graph)
    defects = graph.defects + (cycle_defects(model, index) if result.arrays.reversed.any() else [])
    if out.wants_json:
        doc = result.to_json()
        doc["subgraph"] = index
        doc["defects"] = defects
        out.json(doc)  # strict: non-finite numbers as null
    ops = int((graph.kind == OP).sum())
    out.text(f"subgraph {index}: {_plural(ops, 'operator')}, {_plural(graph.n_nodes, 'node')}, "
             f"{_plural(graph.n_edges, 'edge')}, {_plural(result.crossings, 'crossing')}, "
             f"{result.width:.0f} x {result.height:.0f}")
    for defect in defects:
        sys.stderr.write(f"warning: {defect}\n")
    return 0
