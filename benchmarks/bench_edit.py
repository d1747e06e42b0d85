"""Editing against a flatbuffers object-API round trip.

The targets (docs/ARCHITECTURE.md, "Performance targets"): one option edit re-serialized
and re-read within 50 ms for models up to 10 MB, and faster than ``ModelT.InitFromPackedBuf``
+ ``Pack`` on large ones; every edit command, applied and undone, within 50 ms on a
20,000-operator model and within 100 ms on a model over 2 GB; saving a model over 2 GB
within 3x a file copy and under 300 MB above the interpreter's baseline.  Run::

    python benchmarks/bench_edit.py [--repeat 7] [--no-synthetic] [--no-corpus]
    python benchmarks/bench_edit.py --commands-only [--big [PATH]]
    python benchmarks/bench_edit.py --journal [--big [PATH]]

``--commands-only`` times every command kind (apply, then undo; medians) on
`synthetic_models.residual_model` (20,000 operators); ``--big`` adds the > 2 GB decoder of
`big_decoder.py` (written to a temporary directory unless PATH names one) with the save
figures: `ModelDocument.save` after no edit and after a description edit, each against
``shutil.copyfile`` of the same file in the same run, and the peak resident memory of a
child process doing ``tflite-viewer edit MODEL -o OUT --description x`` against a child
that only imports the package (the baseline).  There is no insert command in the editor;
the rows list what exists.

``--journal`` times the recovery journal (`edit.journal`): every command kind applied and
undone on two documents of the same 20,000-operator file (opened from a file, as the
window opens it), one journaling and one not, alternating in one loop, medians, with the
time spent inside the journal's hook (its exact cost: the difference of two noisy totals
is not) and, as the anchor, two bare synced appends in the same loop.  It also times the
first change (the journal written whole) and the source's SHA-256 (computed in a thread:
no edit waits for it); with ``--big``, both on the > 2 GB file.

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
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import flatbuffers
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic_models import residual_model  # noqa: E402
from tflite_viewer.edit import (Journal, ModelDocument, RenameTensor, SetOption,  # noqa: E402
                                serialize, unpack)
from tflite_viewer.model.durable import sync  # noqa: E402
from tflite_viewer.edit.journal_format import hash_file  # noqa: E402
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


def command_kinds(doc: ModelDocument) -> list[tuple[str, Callable[[], object]]]:
    """(kind, make command) for every command kind, on operators and tensors of subgraph 0
    picked from the model: an intermediate tensor, a removable operator, a constant, an
    option stored and one left at its default."""
    from tflite_viewer.edit import (ExposeTensor, RemoveOperator, ReplaceTensorData,
                                    SetDescription, SetOpVersion, SetQuantization,
                                    SetTensorShape, SplitFusedActivation)
    sg = doc.model.subgraphs[0]
    cols = sg.columns
    outs = set(sg.outputs)
    ops = len(cols.opcode_index)
    k = ops // 2
    mid = next(int(cols.op_outputs(j)[0]) for j in range(k, ops) if len(cols.op_outputs(j)) == 1
               and int(cols.op_outputs(j)[0]) not in outs)
    t = sg.tensors[mid]
    removable = None
    for j in range(k, ops):
        op = sg.operators[j]
        ins, o = op.inputs, op.outputs
        if len(o) == 1 and ins and ins[0] >= 0:
            a, b = sg.tensors[ins[0]], sg.tensors[o[0]]
            if a.shape == b.shape and a.type == b.type and all(
                    i < 0 or sg.tensors[i].buffer_nbytes for i in ins[1:]):
                removable = j
                break
    const = next(x for x in sg.tensors if x.buffer_nbytes and x.type_name == "FLOAT32"
                 and 0 < x.buffer_nbytes <= 1 << 16)
    opt_op = next(op for op in (sg.operators[j] for j in range(k, ops))
                  if "fused_activation_function" in op.builtin_options)
    act = opt_op.builtin_options["fused_activation_function"]
    shape = list(t.shape)
    flip = [0]

    def flipped(a, b):
        flip[0] += 1
        return a if flip[0] % 2 else b

    kinds = [
        ("rename", lambda: RenameTensor(0, mid, flipped("renamed_a", "renamed_b"))),
        ("expose", lambda: ExposeTensor(0, mid)),
        ("set-shape", lambda: SetTensorShape(0, mid, shape + [1])),
        ("set-quant", lambda: SetQuantization(0, mid, [0.5], [0])),
        ("replace-values", lambda: ReplaceTensorData(
            0, const.index, np.full(const.shape, flipped(1.0, 2.0), np.float32))),
        ("option (stored)", lambda: SetOption(0, opt_op.index, "fused_activation_function",
                                              "RELU6" if act != "RELU6" else "NONE")),
        ("option (default)", lambda: _default_option(doc, opt_op)),
        ("op-version", lambda: SetOpVersion(0, opt_op.index, 9)),
        ("description", lambda: SetDescription(flipped("edited a", "edited b"))),
    ]
    if removable is not None:
        kinds.insert(2, ("remove-op", lambda: RemoveOperator(0, removable)))
    fused = next((op.index for op in (sg.operators[j] for j in range(k, ops))
                  if op.builtin_options.get("fused_activation_function") in
                  ("RELU", "RELU6", "RELU_N1_TO_1", "TANH") and len(op.outputs) == 1
                  and sg.tensors[op.outputs[0]].type_name == "FLOAT32"), None)
    if fused is not None:  # the command that inserts an operator (and a tensor)
        kinds.insert(3, ("insert-op", lambda: SplitFusedActivation(0, fused)))
    return kinds


def _default_option(doc, op):
    for field, value in op.builtin_options.items():
        if field == "padding" and value == "SAME":
            return SetOption(0, op.index, "padding", "VALID")
    for field, value in op.builtin_options.items():
        if isinstance(value, bool) and not value:
            return SetOption(0, op.index, field, True)
    return SetOption(0, op.index, "fused_activation_function", "RELU_N1_TO_1")


def bench_commands(source, repeat: int) -> list[dict]:
    """Apply then undo each command kind ``repeat`` times: medians, and how it was written."""
    doc = ModelDocument(source)
    rows = []
    for kind, make in command_kinds(doc):
        doc.apply(make())  # warm up (imports, first columns of the model)
        doc.undo()
        applies, undos = [], []
        how = ""
        for _ in range(repeat):
            cmd = make()
            t0 = time.perf_counter()
            doc.apply(cmd)
            t1 = time.perf_counter()
            r = doc._history[doc.history_index - 1]
            how = "patch" if r.patches is not None else (
                "splice" if r.splice is not None else "serialize")
            doc.undo()
            t2 = time.perf_counter()
            applies.append(t1 - t0)
            undos.append(t2 - t1)
        a, u = 1e3 * statistics.median(applies), 1e3 * statistics.median(undos)
        rows.append({"kind": kind, "apply": a, "undo": u, "total": a + u, "how": how})
    return rows


def _print_commands(title: str, rows: list[dict], budget: float) -> None:
    print(f"\n{title}: apply + undo per command kind (medians, ms); target {budget:.0f} ms")
    print(f"{'command':18s} {'apply':>8s} {'undo':>8s} {'total':>8s} {'written as':>10s} ok")
    for r in rows:
        ok = "yes" if r["total"] <= budget else "NO"
        print(f"{r['kind']:18s} {r['apply']:8.1f} {r['undo']:8.1f} {r['total']:8.1f} "
              f"{r['how']:>10s} {ok}")


def bench_journal(path: Path, folder: Path, repeat: int) -> list[dict]:
    """Apply + undo of every command kind without and with the journal, alternating."""
    plain, journaled = ModelDocument(path), ModelDocument(path)
    journal = Journal(journaled, folder)
    spent = [0.0]  # seconds inside the journal's hook: its exact cost, free of the edit's noise
    changed = journal.changed

    def timed_changed() -> None:
        t = time.perf_counter()
        changed()
        spent[0] += time.perf_counter() - t
    journal.changed = timed_changed
    folder.mkdir(parents=True, exist_ok=True)
    anchor = os.open(folder / "anchor", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    rows = []
    for (kind, make_plain), (_, make_journaled) in zip(command_kinds(plain),
                                                       command_kinds(journaled)):
        pairs = ((plain, make_plain, []), (journaled, make_journaled, []))
        for doc, make, _times in pairs:  # warm up (and write the journal's first snapshot)
            doc.apply(make())
            doc.undo()
        syncs, inside = [], []
        for _ in range(repeat):
            for doc, make, times in pairs:
                spent[0] = 0.0
                t = time.perf_counter()
                doc.apply(make())
                doc.undo()
                times.append(time.perf_counter() - t)
            inside.append(spent[0])
            t = time.perf_counter()
            for _ in range(2):  # the anchor: two synced appends of a line, bare
                os.write(anchor, b"x" * 200 + b"\n")
                sync(anchor)
            syncs.append(time.perf_counter() - t)
        off, on = (1e3 * statistics.median(p[2]) for p in pairs)
        rows.append({"kind": kind, "off": off, "on": on,
                     "cost": 1e3 * statistics.median(inside),
                     "syncs": 1e3 * statistics.median(syncs)})
    assert journal.error is None, journal.error
    journal.close()
    os.close(anchor)
    return rows


def bench_journal_start(path: Path, folder: Path, repeat: int) -> tuple[float, float, float]:
    """(the source's SHA-256, the first change of a fresh document without and with a new
    journal, which writes it whole), ms; medians, alternating."""
    hashes, plain, journaled = [], [], []
    for _ in range(repeat):
        t = time.perf_counter()
        hash_file(path)
        hashes.append(time.perf_counter() - t)
        for with_journal, times in ((False, plain), (True, journaled)):
            doc = ModelDocument(path)
            journal = Journal(doc, folder) if with_journal else None
            t = time.perf_counter()
            doc.apply(RenameTensor(0, 0, "first"))
            times.append(time.perf_counter() - t)
            if journal is not None:
                journal.close()
    return tuple(1e3 * statistics.median(x) for x in (hashes, plain, journaled))


def _print_journal(title: str, rows: list[dict], start: tuple[float, float, float],
                   budget: float) -> None:
    print(f"\n{title}: apply + undo per command kind without / with the journal "
          f"(alternating, medians, ms); target {budget:.0f} ms with it")
    print("journal: time inside the journal's hook (apply + undo); 2 syncs: two bare synced "
          "200-byte appends in the same loop")
    print(f"{'command':18s} {'off':>8s} {'on':>8s} {'journal':>8s} {'2 syncs':>8s} ok")
    for r in rows:
        ok = "yes" if r["on"] <= budget else "NO"
        print(f"{r['kind']:18s} {r['off']:8.1f} {r['on']:8.1f} {r['cost']:8.1f} "
              f"{r['syncs']:8.1f} {ok}")
    print(f"source SHA-256 {start[0]:.1f} ms (in a thread); first change of a fresh document "
          f"{start[1]:.1f} ms without, {start[2]:.1f} ms with a new journal (written whole)")


def _child_peak(code: str) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of a fresh Python running ``code``."""
    import subprocess
    wrapped = (code + "\nimport resource,sys;"
               "sys.stdout.write('PEAK %d' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", wrapped], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    wall = time.perf_counter() - t
    return wall, int(out.rsplit("PEAK ", 1)[1]) / 1024


def bench_save(path: Path, tmp: Path, repeat: int) -> None:
    """Save against shutil.copyfile, alternating; peak memory of `edit` against a baseline."""
    import shutil

    from tflite_viewer.edit import SetDescription
    out = tmp / "saved.tflite"
    doc = ModelDocument(path)
    edited = ModelDocument(path)
    edited.apply(SetDescription("saved by bench_edit"))
    copies, noop, desc = [], [], []
    for _ in range(repeat):
        for fn, sink in ((lambda: shutil.copyfile(path, out), copies),
                         (lambda: doc.save(out), noop), (lambda: edited.save(out), desc)):
            if out.exists():
                out.unlink()
            t = time.perf_counter()
            fn()
            sink.append(time.perf_counter() - t)
    out.unlink()
    c = statistics.median(copies)
    print(f"\nsave of {path.name} ({path.stat().st_size / 1e9:.2f} GB), medians of {repeat}: "
          f"copyfile {c:.2f} s; no-op save {statistics.median(noop):.2f} s "
          f"({statistics.median(noop) / c:.2f}x); description edit + save "
          f"{statistics.median(desc):.2f} s ({statistics.median(desc) / c:.2f}x); target <= 3x")
    base_wall, base = _child_peak("import tflite_viewer.edit, tflite_viewer.cli")
    for label, args in (("no-op edit", []), ("--description", ["--description", "x"])):
        code = ("from tflite_viewer.cli import main\n"
                f"main(['edit', {str(path)!r}, '-o', {str(out)!r}] + {args!r})")
        wall, peak = _child_peak(code)
        out.unlink()
        print(f"  tflite-viewer edit ({label}): whole process {wall:.2f} s, peak RSS "
              f"{peak:.0f} MB = baseline {base:.0f} MB + {peak - base:.0f} MB "
              f"(target < 300 MB above)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--no-synthetic", action="store_true")
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--commands-only", action="store_true",
                    help="only the per-command figures (and --big)")
    ap.add_argument("--journal", action="store_true",
                    help="the recovery journal's cost per edit (and --big: its hash)")
    ap.add_argument("--big", nargs="?", const="", default=None,
                    help="add the > 2 GB decoder (PATH, or generated to a temporary directory)")
    args = ap.parse_args(argv)
    if args.journal:
        return _main_journal(args)
    if args.commands_only or args.big is not None:
        if not args.no_synthetic:
            _print_commands("residual_model(20000)",
                            bench_commands(residual_model(20_000), args.repeat), 50)
        if args.big is not None:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(args.big) if args.big else None
                if path is None:
                    from benchmarks.big_decoder import write
                    path = write(Path(tmp) / "big_decoder.tflite")
                _print_commands(f"{path.name} ({path.stat().st_size / 1e9:.2f} GB)",
                                bench_commands(path, args.repeat), 100)
                bench_save(path, Path(tmp), max(3, args.repeat // 2))
        return 0
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


def _main_journal(args) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "residual_20000.tflite"
        path.write_bytes(residual_model(20_000))
        folder = Path(tmp) / "recovery"
        _print_journal(f"residual_model(20000), {path.stat().st_size / 1e6:.1f} MB",
                       bench_journal(path, folder, args.repeat),
                       bench_journal_start(path, folder, max(3, args.repeat // 2)), 50)
        if args.big is not None:
            big = Path(args.big) if args.big else None
            if big is None:
                from benchmarks.big_decoder import write
                big = write(Path(tmp) / "big_decoder.tflite")
            hashed, plain, journaled = bench_journal_start(big, folder, 3)
            print(f"\n{big.name} ({big.stat().st_size / 1e9:.2f} GB): source SHA-256 "
                  f"{hashed / 1e3:.2f} s (in a thread); first change right after opening "
                  f"{plain:.0f} ms without, {journaled:.0f} ms with a new journal")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
