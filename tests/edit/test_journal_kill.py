"""A process editing a model with its journal on is killed with SIGKILL in the middle of
its run; the next start restores the model as it was when it died.

The child (this file run as a script) applies a fixed list of operations -- edits of
every sort, undos, redos -- and prints each one's number once it returned (its journal
synced).  The test reads a few numbers, kills it mid-run, and restores.  The truth is the
same operations replayed here, in this process, without a journal: the restored document
must have the history, position and bytes of the last operation the child reported, or
of the one after it (done and journaled, but killed before it could print).
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))

from tflite_viewer.edit import (Journal, ModelDocument, RenameTensor,  # noqa: E402
                                ReplaceTensorData, SetDescription, SetMetadata, SetOption,
                                pending_recoveries)

MODEL = ROOT / "tests" / "data" / "models" / "small_cnn_dilated_float.tflite"
STEPS = 400  # far more than the child does before it is killed


def operations(doc: ModelDocument):
    """The child's operations, the same every run: edits, undos and redos."""
    sg = doc.model.subgraphs[0]
    conv = next(o for o in sg.operators if o.name == "CONV_2D")
    bias = sg.tensors[conv.inputs[2]]
    rng = random.Random(7)
    for k in range(STEPS):
        roll = rng.random()
        if roll < 0.15 and doc.can_undo:
            yield doc.undo
        elif roll < 0.25 and doc.can_redo:
            yield doc.redo
        else:
            yield [lambda: RenameTensor(0, 0, f"input_{k}"),
                   lambda: SetDescription(f"edit {k}"),
                   lambda: SetMetadata("step", bytes([k % 256]) * (k + 1)),
                   lambda: ReplaceTensorData(0, bias.index,
                                             np.full(bias.shape, k / 7, np.float32)),
                   lambda: SetOption(0, conv.index, "stride_w", 1 + k % 3),
                   ][k % 5]


def _run(doc: ModelDocument, step) -> None:
    if step in (doc.undo, doc.redo):
        step()
    else:
        doc.apply(step())


def child(folder: str) -> None:
    doc = ModelDocument(MODEL)
    journal = Journal(doc, folder)
    for k, step in enumerate(operations(doc)):
        _run(doc, step)
        assert journal.error is None, journal.error
        print(k, flush=True)


def expected(last: int) -> list[tuple[list[str], int, bytes]]:
    """(history, position, bytes) after each operation up to ``last``, here."""
    doc = ModelDocument(MODEL)
    out = []
    for k, step in enumerate(operations(doc)):
        if k > last:
            break
        _run(doc, step)
        out.append((doc.history, doc.history_index, doc.to_bytes()))
    return out


def kill_after(folder: Path, lines: int, delay: float = 0.0) -> int:
    """Start the child, kill it with SIGKILL after it reported ``lines`` operations (and
    ``delay`` seconds more); the number of the last operation it reported."""
    proc = subprocess.Popen([sys.executable, __file__, str(folder)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(lines):
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(f"the child stopped: {proc.stderr.read()}")
        time.sleep(delay)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        out, _err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    reported = [int(x) for x in out.split()]
    return lines - 1 + len(reported)


def _check_restored(folder: Path, last: int) -> None:
    [recovery] = pending_recoveries(folder)
    doc = recovery.restore()
    states = expected(last + 1)
    got = (doc.history, doc.history_index, doc.to_bytes())
    assert got in states[last:last + 2], (last, recovery.message)
    assert len(states) == last + 2  # the child was killed mid-run, not after its end
    assert recovery.lost == [] or "was being written" in recovery.lost[0]


def test_a_process_killed_mid_run_is_restored_to_its_last_edit(tmp_path):
    last = kill_after(tmp_path, 12)
    _check_restored(tmp_path, last)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_kills_at_random_moments_restore_the_last_edit(tmp_path, seed):
    rng = random.Random(seed)
    last = kill_after(tmp_path, rng.randint(1, 30), rng.random() * 0.05)
    _check_restored(tmp_path, last)


if __name__ == "__main__":
    child(sys.argv[1])
