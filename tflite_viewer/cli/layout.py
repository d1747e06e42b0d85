"""`tflite-viewer layout MODEL [--subgraph S] [--json OUT]`: node boxes, edge polylines, crossings."""
from __future__ import annotations

import argparse
import sys

from ..graph.arrays import OP, graph_arrays, cycle_defects
from ..graph.layout import layout_arrays
from ..model import load_model
from . import jsonout


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("layout", help="lay out a subgraph's graph (positions, edges)")
    p.add_argument("model", help="a .tflite file")
    p.add_argument("--subgraph", default=None, help="index, name or signature key (default 0)")
    p.add_argument("--json", metavar="OUT", help="write the layout as JSON to OUT ('-' = stdout)")


def main(args: argparse.Namespace) -> int:
    model = load_model(args.model)
    index = model.subgraph_index(args.subgraph)
    graph = graph_arrays(model, index)  # arrays, not networkx: see graph/arrays.py
    result = layout_arrays(graph)
    defects = graph.defects + (cycle_defects(model, index) if result.arrays.reversed.any() else [])
    if args.json:
        doc = result.to_json()
        doc["subgraph"] = index
        doc["defects"] = defects
        text = jsonout.dumps(doc)  # strict: non-finite numbers as null
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            with open(args.json, "w") as f:
                f.write(text + "\n")
    ops = int((graph.kind == OP).sum())
    summary = (f"subgraph {index}: {ops} operators, {graph.n_nodes} nodes, "
               f"{graph.n_edges} edges, {result.crossings} crossings, "
               f"{result.width:.0f} x {result.height:.0f}")
    (sys.stderr if args.json == "-" else sys.stdout).write(summary + "\n")
    for defect in defects:
        sys.stderr.write(f"warning: {defect}\n")
    return 0

