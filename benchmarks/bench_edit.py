"""Editing against a flatbuffers object-API round trip.

The target (docs/ARCHITECTURE.md, "Performance targets"): one option edit re-serialized and
re-read within 50 ms for models up to 10 MB, and faster than ``ModelT.InitFromPackedBuf`` + ``Pack`` on large ones.  Run::

    python benchmarks/bench_edit.py [--repeat 7] [--no-synthetic] [--no-corpus]

For every corpus model, for `synthetic_models.residual_model` with 5,000 and 20,000
operators, and for a synthetic ~60 MB model (mobilenet_v2_float with its classifier
widened to 12,000 classes; written to a temporary directory, never committed) it prints
the median time of: an option edit (the fast path when the field is stored), its undo,
``changes()`` after it, a structural edit (RenameTensor: always re-serialized) and its
undo, a full serialize, the re-read, the object-API round trip, and the ratio of the
round trip to the option edit (> 1: we are faster).  Figures, not assertions.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import flatbuffers
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic_models import residual_model  # noqa: E402
from tflite_viewer.edit import (ModelDocument, RenameTensor, SetOption, serialize,  # noqa: E402
                                unpack)
from tflite_viewer.edit.tree import union_member  # noqa: E402
from tflite_viewer.model import load_model  # noqa: E402
from tflite_viewer.schema import schema_generated as S  # noqa: E402

MODELS = ROOT / "tests" / "data" / "models"


def _pick_edit(doc: ModelDocument) -> list[SetOption]:
    """Two option edits that flip a field back and forth (so every run is a real change)."""
    for sg in doc.model.subgraphs:
        for op in sg.operators:
            opts = op.builtin_options
            if "fused_activation_function" in opts:
                cur = opts["fused_activation_function"]
                other = "RELU" if cur != "RELU" else "NONE"
                return [SetOption(sg.index, op.index, "fused_activation_function", other),
                        SetOption(sg.index, op.index, "fused_activation_function", cur)]
    for sg in doc.model.subgraphs:
        for op in sg.operators:
            for field, value in op.builtin_options.items():
                if isinstance(value, bool):
                    return [SetOption(sg.index, op.index, field, not value),
                            SetOption(sg.index, op.index, field, value)]
    return []


def _median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def object_api_round_trip(data) -> bytes:
    model = S.ModelT.InitFromPackedBuf(data, 0)
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def _fast(doc: ModelDocument) -> bool:
    """Whether the document's last edit overwrote bytes in place (the fast path)."""
    return getattr(doc._history[doc.history_index - 1], "patches", None) is not None


def bench(source, repeat: int, name: str | None = None) -> dict | None:
    """Time, on one model: an option edit, a structural edit, undo, and changes()."""
    doc = ModelDocument(source)
    edits = _pick_edit(doc)
    if not edits:
        return None
    flip = [0]

    def one_edit():
        e = edits[flip[0] % 2]
        doc.apply(SetOption(e.subgraph, e.operator, e.field, e.value))
        flip[0] += 1

    one_edit()  # warm up caches (schema maps, imports)
    ours = _median_ms(one_edit, repeat)
    fast = _fast(doc)
    changes = _median_ms(lambda: doc.changes(), repeat)
    def undo_redo():
        doc.undo()
        doc.redo()
    undo = _median_ms(undo_redo, repeat) / 2
    names = [f"renamed_{k}" for k in range(2)]
    flip2 = [0]

    def rename():
        doc.apply(RenameTensor(0, 0, names[flip2[0] % 2]))
        flip2[0] += 1
    slow = _median_ms(rename, max(3, repeat // 2))
    slow_undo = _median_ms(undo_redo, max(3, repeat // 2)) / 2
    tree = doc.tree
    ser = _median_ms(lambda: serialize(tree), max(3, repeat // 2))
    data = doc.to_bytes()
    reread = _median_ms(lambda: load_model(data), repeat)
    raw = memoryview(doc.original.data)
    objapi = _median_ms(lambda: object_api_round_trip(raw), max(3, repeat // 2))
    n_ops = sum(len(sg.operators) for sg in doc.original.subgraphs)
    return {"model": name or Path(source).name, "mb": doc.original.file_size / 1e6,
            "ops": n_ops, "ours": ours, "fast": fast, "changes": changes, "undo": undo,
            "slow": slow, "slow_undo": slow_undo, "serialize": ser, "reread": reread,
            "objapi": objapi}


def synthetic_large(directory: Path, classes: int = 12_000) -> Path:
    """mobilenet_v2_float with a classifier of ``classes`` units: ~60 MB of weights."""
    src = load_model(MODELS / "mobilenet_v2_float.tflite")
    tree = unpack(src)
    m = tree.model
    sg = m.subgraphs[0]
    fc = next(op for op in sg.operators
              if union_member("BuiltinOptions", op.builtinOptionsType) == "FullyConnectedOptions")
    w, b = sg.tensors[fc.inputs[1]], sg.tensors[fc.inputs[2]]
    depth = int(w.shape[1])
    rng = np.random.default_rng(0)
    m.buffers[w.buffer].data = (rng.standard_normal((classes, depth), np.float32) * 0.01).view(np.uint8).reshape(-1)
    m.buffers[b.buffer].data = np.zeros(classes, np.float32).view(np.uint8)
    w.shape = np.array([classes, depth], np.int32)
    b.shape = np.array([classes], np.int32)
    for op in sg.operators[sg.operators.index(fc):]:
        for t in op.outputs:
            sg.tensors[t].shape = np.array([1, classes], np.int32)
            if sg.tensors[t].shapeSignature is not None:
                sg.tensors[t].shapeSignature = np.array([-1, classes], np.int32)
    path = directory / "mobilenet_v2_float_wide.tflite"
    path.write_bytes(serialize(tree))
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-synthetic", action="store_true")
    ap.add_argument("--no-corpus", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    if not args.no_corpus:
        for path in sorted(MODELS.glob("*.tflite")):
            row = bench(path, args.repeat)
            if row:
                rows.append(row)
    if not args.no_synthetic:
        for n in (5_000, 20_000):
            rows.append(bench(residual_model(n), max(3, args.repeat // 2),
                              f"synthetic residual_model({n})"))
        with tempfile.TemporaryDirectory() as tmp:
            row = bench(synthetic_large(Path(tmp)), max(3, args.repeat // 2))
            if row:
                row["model"] = "synthetic " + row["model"]
                rows.append(row)
    print("edit: one option edit (apply + write + re-read); path: fast = bytes patched in "
          "place, slow = re-serialized;\nundo: one undo of it; changes: changes() after it; "
          "rename/r-undo: a structural edit (RenameTensor) and its undo;\nser: a full "
          "serialize; objAPI: flatbuffers object-API unpack + pack; ratio = objAPI / edit.")
    print(f"{'model':45s} {'MB':>6s} {'ops':>6s} {'edit':>6s} {'path':>4s} {'undo':>6s} "
          f"{'changes':>7s} {'rename':>7s} {'r-undo':>7s} {'ser':>7s} {'reread':>6s} "
          f"{'objAPI':>7s} {'ratio':>6s} {'<50ms':>5s}")
    for r in rows:
        ok = "yes" if r["ours"] < 50 else ("n/a" if r["mb"] > 10 else "NO")
        print(f"{r['model'][:45]:45s} {r['mb']:6.2f} {r['ops']:6d} {r['ours']:6.1f} "
              f"{'fast' if r['fast'] else 'slow':>4s} {r['undo']:6.1f} {r['changes']:7.1f} "
              f"{r['slow']:7.1f} {r['slow_undo']:7.1f} {r['serialize']:7.1f} "
              f"{r['reread']:6.1f} {r['objapi']:7.1f} {r['objapi'] / r['ours']:6.1f} {ok:>5s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
