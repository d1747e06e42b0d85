"""The drawings the layout makes, recorded so a refactoring can prove it changed none.

`cases()` lays out every subgraph of every model under tests/data (through both entry
points, `layout_arrays` on `graph_arrays` and `layout` on `build_graph`, and the
`naive_layout` baseline), the synthetic residual graphs of `benchmarks/synthetic_graphs.py`,
the hand-made graphs of tests/graph/test_layout.py, a synthetic 5,000-operator model and a
few option variants.  `snapshot` keeps every number of a result: boxes, layers, edge ends,
polylines, reversed flags, crossings, width and height.

tests/data/layout_reference.npz holds the snapshots the layout made before
graph/layout.py became the graph/layout/ package (written by
``python -m tests.graph.layout_reference --write`` at that commit); the test in
test_layout_reference.py compares the current code with it array for array, bit for bit.
Large cases are stored as a SHA-256 of their bytes to keep the file small.
"""
from __future__ import annotations

import argparse
import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "data"
REFERENCE = DATA / "layout_reference.npz"
MODEL_DIRS = ("models", "mediapipe", "signal")
FIELDS = ("x", "y", "w", "h", "layer", "edge_src", "edge_dst", "reversed", "px", "py", "pstart")
# above this many polyline points a case is stored as a digest, not as arrays
DIGEST_ABOVE = 8_000


def snapshot(lay) -> dict[str, np.ndarray]:
    """Every number of a `Layout`, as arrays (the scalars as 0-d arrays)."""
    if lay.arrays is not None:
        a = lay.arrays
        out = {f: np.asarray(getattr(a, f)) for f in FIELDS}
    else:  # layouts built from objects (none today): the same fields from the objects
        ids = list(lay.nodes)
        row = {n: i for i, n in enumerate(ids)}
        boxes = list(lay.nodes.values())
        pts = [p for e in lay.edges for p in e.points]
        out = {"x": np.array([b.x for b in boxes]), "y": np.array([b.y for b in boxes]),
               "w": np.array([b.width for b in boxes]), "h": np.array([b.height for b in boxes]),
               "layer": np.array([b.layer for b in boxes]),
               "edge_src": np.array([row[e.source] for e in lay.edges]),
               "edge_dst": np.array([row[e.target] for e in lay.edges]),
               "reversed": np.array([e.reversed for e in lay.edges]),
               "px": np.array([p[0] for p in pts]), "py": np.array([p[1] for p in pts]),
               "pstart": np.cumsum([0] + [len(e.points) for e in lay.edges])}
    out["crossings"] = np.asarray(int(lay.crossings))
    out["width"] = np.asarray(float(lay.width))
    out["height"] = np.asarray(float(lay.height))
    return out


def digest(snap: dict[str, np.ndarray]) -> str:
    """SHA-256 over every field's dtype, shape and bytes, in a fixed order."""
    h = hashlib.sha256()
    for key in sorted(snap):
        a = np.ascontiguousarray(snap[key])
        h.update(f"{key}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _models() -> list[Path]:
    return sorted(p for d in MODEL_DIRS for p in (DATA / d).glob("*.tflite"))


def cases() -> Iterator[tuple[str, object]]:
    """(name, Layout) of every recorded case, in a fixed order."""
    from benchmarks.synthetic_graphs import residual_dag
    from benchmarks.synthetic_models import residual_model
    from tests.graph.test_layout import HAND_MADE
    from tflite_viewer.graph.arrays import graph_arrays
    from tflite_viewer.graph.build import build_graph
    from tflite_viewer.graph.layout import layout, layout_arrays, naive_layout
    from tflite_viewer.model import load_model

    for path in _models():
        model = load_model(path)
        for s in range(len(model.subgraphs)):
            name = f"{path.parent.name}/{path.stem}/s{s}"
            yield f"{name}/arrays", layout_arrays(graph_arrays(model, s))
            g = build_graph(model, s)
            yield f"{name}/graph", layout(g)
            yield f"{name}/naive", naive_layout(g)
    for n in (40, 300, 1500):
        for seed in (0, 1, 2):
            g = residual_dag(n, seed=seed)
            yield f"residual_dag/{n}/{seed}/layout", layout(g)
            yield f"residual_dag/{n}/{seed}/naive", naive_layout(g)
    g = residual_dag(5000, seed=3)
    yield "residual_dag/5000/3/layout", layout(g)
    big = load_model(residual_model(5000, seed=0))
    yield "residual_model/5000/0/arrays", layout_arrays(graph_arrays(big, 0))
    for name in sorted(HAND_MADE):
        yield f"hand_made/{name}/layout", layout(HAND_MADE[name])
        yield f"hand_made/{name}/naive", naive_layout(HAND_MADE[name])
    g = residual_dag(300, seed=5)
    yield "options/sweeps0", layout(g, sweeps=0)
    yield "options/gaps", layout(g, layer_gap=30.0, node_gap=7.5)
    yield "options/unpinned", layout(g, pin_inputs=False)
    yield "options/no_rounds", layout(g, coord_rounds=0)
    yield "options/sizes", layout(g, size=lambda n, a: (40.0 + 7 * len(str(n)),
                                                        20.0 + len(str(n)) % 3 * 9))
    model = load_model(DATA / "models" / "palm_detection_lite.tflite")
    ga = graph_arrays(model, 0)
    widths = 60.0 + (np.arange(ga.n_nodes) % 5) * 17.0
    yield "options/arrays_widths", layout_arrays(ga, widths=widths, heights=np.full(ga.n_nodes, 33.0))


def record() -> dict[str, np.ndarray]:
    """The npz contents: ``name|field`` arrays, or ``name|sha256`` for large cases."""
    out: dict[str, np.ndarray] = {}
    for name, lay in cases():
        snap = snapshot(lay)
        if snap["px"].size > DIGEST_ABOVE:
            out[f"{name}|sha256"] = np.asarray(digest(snap))
        else:
            out.update({f"{name}|{k}": v for k, v in snap.items()})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write {REFERENCE}")
    args = parser.parse_args()
    data = record()
    names = sorted({k.split("|")[0] for k in data})
    print(f"{len(names)} cases, {sum(k.endswith('|sha256') for k in data)} as digests")
    if args.write:
        np.savez_compressed(REFERENCE, **data)
        print(f"wrote {REFERENCE} ({REFERENCE.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
