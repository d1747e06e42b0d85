"""A journal cut short or damaged gives back what comes before the damage and says what
was lost; never a traceback.

The truth is the document that wrote the journal: after each of its operations the test
notes the journal's size and the document's history, position and bytes.  A journal cut at
any byte must read as the last operation that fits, and restore to its bytes.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import MODELS_DIR
from tests.edit.test_journal import crash
from tflite_viewer.edit import (Journal, JournalError, ModelDocument, RenameTensor,
                                ReplaceTensorData, SetDescription, SetMetadata, SetOption,
                                pending_recoveries)
from tflite_viewer.edit.journal_format import frame
from tflite_viewer.edit.recovery import read_journal

DILATED = MODELS_DIR / "small_cnn_dilated_float.tflite"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A journal and what its writer was after each operation: (size, history, position,
    bytes), the header's size first."""
    folder = tmp_path_factory.mktemp("journal")
    doc = ModelDocument(DILATED)
    journal = Journal(doc, folder)
    sg = doc.model.subgraphs[0]
    conv = next(o for o in sg.operators if o.name == "CONV_2D")
    bias = sg.tensors[conv.inputs[2]]
    steps = [
        lambda: doc.apply(RenameTensor(0, 0, "pixels")),
        lambda: doc.apply(ReplaceTensorData(0, bias.index, np.full(bias.shape, 0.5, np.float32))),
        lambda: doc.apply(SetMetadata("notes", b"\x00binary\xff")),
        doc.undo, doc.undo,
        lambda: doc.apply(SetDescription("a branch")),
        doc.undo, doc.redo,
        lambda: doc.apply(SetOption(0, conv.index, "stride_w", 2)),
    ]
    notes = []
    for step in steps:
        step()
        notes.append((journal.path.stat().st_size, doc.history, doc.history_index,
                      doc.to_bytes()))
    crash(journal)
    lines = journal.path.read_bytes().splitlines(keepends=True)
    header = len(lines[0])
    first = lines[1]  # the first apply: state 0 before it
    notes.insert(0, (header, [], 0, DILATED.read_bytes()))
    assert notes[1][0] == header + len(first)
    return Written((journal.home, notes))


class Written(tuple):
    """(journal folder, notes), shown short in hypothesis' reports."""

    def __repr__(self) -> str:
        return f"<journal {self[0].name}: {len(self[1])} operations>"


def _copy(home: Path, scratch: Path, data: bytes) -> Path:
    """A copy of the journal folder whose journal is ``data``."""
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(home, scratch / home.name)
    (scratch / home.name / "journal").write_bytes(data)
    return scratch / home.name


def _expected(notes, size: int):
    """The last operation whose journal fits in ``size`` bytes."""
    return max((n for n in notes if n[0] <= size), key=lambda n: n[0])


def test_a_journal_cut_at_any_byte_reads_as_the_last_whole_entry(written, tmp_path):
    home, notes = written
    data = (home / "journal").read_bytes()
    boundaries = {n[0] for n in notes}
    copy = _copy(home, tmp_path / "cut", data)
    for size in range(len(data) + 1):
        (copy / "journal").write_bytes(data[:size])
        recovery = read_journal(copy)
        if size < notes[0][0]:
            assert recovery is None, size  # the header itself is cut: nothing to restore
            continue
        _, history, at, _ = _expected(notes, size)
        assert (recovery.descriptions, recovery.index) == (history, at), size
        if size in boundaries:
            assert recovery.lost == [], size
        else:
            assert len(recovery.lost) == 1 and "was being written" in recovery.lost[0], size


def test_a_cut_journal_restores_the_bytes_before_the_cut_and_names_the_lost_edit(written,
                                                                               tmp_path):
    home, notes = written
    data = (home / "journal").read_bytes()
    for (size, history, at, want), (after, history_after, _, _) in zip(notes, notes[1:]):
        for cut in (size, (size + after) // 2, after - 1):
            copy = _copy(home, tmp_path / "cut", data[:cut])
            found = pending_recoveries(copy.parent)
            if at == 0 and cut == size:
                assert found == []  # nothing unsaved, nothing lost: cleared
                continue
            [recovery] = found
            restored = recovery.restore(journal=False)
            assert restored.history == history and restored.history_index == at
            assert restored.to_bytes() == want
            if cut == after - 1 and len(history_after) > len(history):  # an apply cut short
                assert history_after[-1] in recovery.lost[0]  # named by its description


def test_a_damaged_line_keeps_what_comes_before_and_names_what_comes_after(written, tmp_path):
    home, notes = written
    data = (home / "journal").read_bytes()
    lines = data.splitlines(keepends=True)
    assert len(lines) == len(notes)  # a line per operation after the first snapshot
    for n in range(2, len(lines) + 1):  # line n is operation n - 1
        start = sum(len(x) for x in lines[:n - 1])
        damaged = bytearray(data)
        damaged[start + len(lines[n - 1]) // 2] ^= 0x20
        recovery = read_journal(_copy(home, tmp_path / "flip", bytes(damaged)))
        _, history, at, _ = notes[n - 2]
        assert (recovery.descriptions, recovery.index) == (history, at), n
        assert len(recovery.lost) == 1
        assert f"line {n} of {len(lines)} of the journal is damaged" in recovery.lost[0]
        later = [notes[j][1][-1] for j in range(n, len(notes))
                 if notes[j][1] != notes[j - 1][1]]  # applies after it: the history changed
        for description in later[:5]:
            assert description in recovery.lost[0], (n, description)


@pytest.mark.parametrize("damage", ["missing", "changed"])
def test_a_side_file_missing_or_damaged_ends_the_replay_before_its_edit(written, tmp_path,
                                                                      damage):
    home, notes = written
    copy = _copy(home, tmp_path / "side", (home / "journal").read_bytes())
    [npy] = list((copy / "data").glob("*.npy"))
    if damage == "missing":
        npy.unlink()
    else:
        npy.write_bytes(npy.read_bytes()[:-1] + b"\x00")
    recovery = read_journal(copy)
    assert recovery.descriptions == notes[1][1]  # the rename only
    assert "data file" in recovery.lost[0]
    assert "cannot be read" in recovery.lost[0] if damage == "missing" else \
        "is damaged" in recovery.lost[0]
    assert recovery.restore(journal=False).to_bytes() == notes[1][3]


def test_entries_no_journal_writes_are_damage_not_tracebacks(written, tmp_path):
    home, notes = written
    data = (home / "journal").read_bytes()
    bad = [
        frame({"at": 99}),
        frame({"at": True}),
        frame({"what": 1}),
        frame({"description": "x", "apply": {"kind": "os.system", "args": {}}}),
        frame({"description": "x", "apply": {"kind": "SetOption", "args": {"nope": 1}}}),
        frame({"apply": {"kind": "UpdateStoredShapes", "args": {"shapes": 5}}}),
        frame({"apply": {"kind": "SetOption", "args": {"value": {"$scalar": ["bad", 1]}}}}),
        frame({"apply": {"kind": "SetOption", "args": {"value": {"$npy": "../../etc"}}}}),
        frame({"apply": {"kind": "SetOption", "args": {"value": {"$tuple": 5}}}}),
        b"00000000 {}\n", b"zz\n", b"\n",
    ]
    for line in bad:
        recovery = read_journal(_copy(home, tmp_path / "bad", data + line))
        assert recovery.descriptions == notes[-1][1] and len(recovery.lost) == 1, line


def test_unreadable_journals_and_leftovers_are_cleared_without_a_traceback(written, tmp_path):
    home, _notes = written
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "a_file").write_text("not a journal folder")
    (folder / "someone_elses").mkdir()  # not named as a journal: never touched
    (folder / "20260101-000000-1-0000000a").mkdir()  # no journal in it
    (folder / ".20260101-000000-1-0000000b.new").mkdir()  # a writer killed while making it
    for k, data in enumerate([b"", bytes(range(256)) * 3,
                              frame({"journal": "other", "version": 1}),
                              frame({"journal": "tflite-viewer", "version": 1,
                                     "source": {"path": 5}}),
                              (home / "journal").read_bytes().replace(
                                  b'"layout":"auto"', b'"layout":"zz"')]):
        bad = folder / f"20260101-000000-1-0000001{k}"
        bad.mkdir()
        (bad / "journal").write_bytes(data)
    assert pending_recoveries(folder) == []
    assert sorted(p.name for p in folder.iterdir()) == ["a_file", "someone_elses"]
    assert pending_recoveries(tmp_path / "missing") == []


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255),
                                st.sampled_from(["flip", "cut", "insert", "drop"])),
                      min_size=1, max_size=4))
def test_any_damage_reads_or_restores_or_says_why(written, tmp_path, edits):
    home, _notes = written
    data = bytearray((home / "journal").read_bytes())
    for where, byte, how in edits:
        if not data:
            break
        k = where % len(data)
        if how == "flip":
            data[k] ^= byte or 1
        elif how == "cut":
            del data[k:]
        elif how == "insert":
            data.insert(k, byte)
        else:
            del data[k:k + 1 + byte % 32]
    copy = _copy(home, tmp_path / "fuzz", bytes(data))
    recovery = read_journal(copy)
    if recovery is None:
        return
    assert recovery.message  # readable whatever the damage
    try:
        restored = recovery.restore(journal=False)
    except JournalError as exc:
        assert "cannot be" in str(exc)
        return
    assert restored.history_index == recovery.index or recovery.lost
