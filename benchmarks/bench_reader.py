"""Opening models: our verified, lazy reader against a flatbuffers object-API unpack.

    python benchmarks/bench_reader.py

For each model: the median time of `load_model` (map + verify every table + semantic
checks, ready to show) and of `ModelT.InitFromPackedBuf` on the same bytes (the anchor),
their ratio, and the resident memory each adds (the reader maps the file and touches
only the flatbuffer's tables, never the weights).
"""
from __future__ import annotations

import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic_models import large_weights_model, residual_model  # noqa: E402
from tflite_viewer.model import load_model  # noqa: E402
from tflite_viewer.schema import schema_generated as S  # noqa: E402

MODELS = ROOT / "tests" / "data" / "models"


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def mapped_rss(path: Path) -> int:
    """Resident bytes of this process's mappings of `path` (the weights we touched)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            if "-" in line.split(" ", 1)[0]:
                inside = line.rstrip().endswith(str(path))
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1]) * 1024
    return total


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(label: str, path: Path, repeat: int) -> None:
    data = path.read_bytes()
    ours = median_time(lambda: load_model(path), repeat)
    anchor = median_time(lambda: S.ModelT.InitFromPackedBuf(data, 0), max(1, repeat // 3))
    gc.collect()
    before, mapped_before = rss_bytes(), mapped_rss(path)
    model = load_model(path)
    ours_mem = rss_bytes() - before
    touched = mapped_rss(path) - mapped_before
    before = rss_bytes()
    obj = S.ModelT.InitFromPackedBuf(data, 0)
    anchor_mem = rss_bytes() - before
    ops = sum(len(sg.operators) for sg in model.subgraphs)
    print(f"{label:44s} {path.stat().st_size / 1e6:8.1f} {ops:7d} {ours * 1e3:9.1f} "
          f"{anchor * 1e3:10.1f} {anchor / ours:7.1f}x {ours_mem / 1e6:8.1f} "
          f"{touched / 1e6:8.2f} {anchor_mem / 1e6:9.1f}")
    del model, obj


def main(argv=None) -> None:
    import argparse
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                            epilog="Takes no options; prints one row per model.").parse_args(argv)
    print(f"{'model':44s} {'MB':>8s} {'ops':>7s} {'open ms':>9s} {'unpack ms':>10s} "
          f"{'speedup':>8s} {'+RSS MB':>8s} {'mapped':>8s} {'unpackMB':>9s}")
    corpus = sorted(MODELS.glob("*.tflite"), key=lambda p: p.stat().st_size, reverse=True)
    for path in corpus[:6]:
        bench(path.name, path, 9)
    with tempfile.TemporaryDirectory() as tmp:
        for n in (5_000, 20_000):
            path = Path(tmp) / f"residual_{n}.tflite"
            path.write_bytes(residual_model(n))
            bench(f"synthetic residual, {n} ops", path, 5)
        path = Path(tmp) / "weights_60mb.tflite"
        path.write_bytes(large_weights_model(60))
        bench("synthetic 60 MB of weights", path, 5)


if __name__ == "__main__":
    main()
