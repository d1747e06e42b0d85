"""The recovery journal: every command kind, every history position, saves and closes.

The source of truth is the document that made the edits: a journal left behind (its
writer "crashed": the files stay, its lock is released, as when a process dies) must give
back, through `pending_recoveries` and `Recovery.restore`, a document with the same
history, the same position and the same bytes at every state of that history.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks.synthetic_models import residual_model
from tests.conftest import MODELS_DIR
from tests.memory.models import BUILT
from tflite_viewer.edit import (EditCommand, ExposeTensor, Journal, JournalError, ModelDocument,
                                RemoveCustomOption, RemoveMetadata, RemoveOperator,
                                RenameSignature, RenameSignatureTensor, RenameTensor,
                                ReorderOperators, ReplaceTensorData, SetCustomOption,
                                SetDescription, SetMetadata, SetOfflineMemoryPlan,
                                SetOpVersion, SetOption, SetQuantization, SetTensorShape,
                                SplitFusedActivation, UpdateStoredShapes, default_folder,
                                pending_recoveries)
from tflite_viewer.edit.journal_format import KINDS
from tflite_viewer.memory import read_offline

DILATED = MODELS_DIR / "small_cnn_dilated_float.tflite"
INT8 = MODELS_DIR / "mobilenet_v2_int8.tflite"


def crash(journal: Journal) -> None:
    """What a killed process leaves: the journal's files as they are, its lock released."""
    for fd in (journal._fd, journal._lock):
        if fd >= 0:
            os.close(fd)
    journal._fd = journal._lock = -1
    journal.document.journal = None


def pending_recoveries_of_copy(journal: Journal, scratch: Path) -> list:
    """`pending_recoveries` of a copy of a live journal, as the next start would see it."""
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(journal.home, scratch / journal.home.name)
    return pending_recoveries(scratch)


def restored_copy(journal: Journal, scratch: Path) -> ModelDocument | None:
    """Restore a copy of a live journal as the next start would (None: nothing pending)."""
    found = pending_recoveries_of_copy(journal, scratch)
    assert len(found) <= 1
    return found[0].restore(journal=False) if found else None


def states(doc: ModelDocument) -> list[bytes]:
    """The bytes of every state of the document's history (its position is kept)."""
    at = doc.history_index
    while doc.can_undo:
        doc.undo()
    out = [doc.to_bytes()]
    while doc.can_redo:
        doc.redo()
        out.append(doc.to_bytes())
    while doc.history_index > at:
        doc.undo()
    return out


# -- scenarios: every command kind, each valid in order on its model -------------------------

def _tensors(doc):
    sg = doc.model.subgraphs[0]
    ops = {o.name: o for o in reversed(sg.operators)}
    conv, dw, soft = ops["CONV_2D"], ops["DEPTHWISE_CONV_2D"], ops["SOFTMAX"]
    x = sg.inputs[0]
    shape = list(sg.tensors[x].shape)
    bias = sg.tensors[conv.inputs[2]]
    yield RenameTensor(0, x, "pixels")
    yield SetTensorShape(0, x, shape + [1])
    yield SetTensorShape(0, x, tuple(shape), shape_signature=None)
    yield SetQuantization(0, x, np.array([0.5, 0.25, 0.125], np.float32),
                          np.array([0, 1, 2]), quantized_dimension=3)
    yield SetQuantization(0, x, None)
    yield ReplaceTensorData(0, bias.index, np.linspace(-1, 1, bias.shape[0], dtype=np.float32))
    yield SetOption(0, conv.index, "padding", "VALID")
    yield SetOption(0, dw.index, "dilation_w_factor", np.int64(2))
    yield ExposeTensor(0, dw.outputs[0], name="exposed", signatures=False)
    yield SetOpVersion(0, conv.index, 7)
    yield RemoveOperator(0, soft.index)
    yield SplitFusedActivation(0, 0)
    yield RenameTensor(0, len(doc.model.subgraphs[0].tensors) - 1, "pre_activation_renamed")


def _requantize(doc):
    sg = doc.model.subgraphs[0]
    w = next(t for t in sg.tensors if t.type_name == "INT8" and t.buffer_nbytes > 64
             and t.quantization is not None and len(t.quantization.scale) > 1)
    values = np.random.default_rng(0).standard_normal(w.shape).astype(np.float32) * 0.01
    yield ReplaceTensorData(0, w.index, values, requantize=True)
    yield SetQuantization(0, w.index, list(w.quantization.scale * 2),
                          list(w.quantization.zero_point), w.quantization.quantized_dimension)


def _custom(doc):
    post = next(o for o in doc.model.subgraphs[0].operators
                if o.name == "TFLite_Detection_PostProcess")
    yield SetCustomOption(0, post.index, "max_detections", "3")
    yield SetCustomOption(0, post.index, "blob", b"\x00\x01\xff")
    yield SetCustomOption(0, post.index, "nested", {"a": [1, 2.5, True], "b": "text"})
    yield RemoveCustomOption(0, post.index, "blob")


def _header(doc):
    yield RenameSignature("encode", "enc")
    yield RenameSignatureTensor("enc", "inputs", "x", "pixels")
    yield RenameSignatureTensor("enc", "outputs", "code", "latent")
    yield SetDescription("restored after a crash \u2713")
    yield SetMetadata("notes", "calibrated on 2024 data")
    yield SetMetadata("blob", bytes(range(256)) * 40)
    yield RemoveMetadata("CONVERSION_METADATA")


def _memory(doc):
    yield ReorderOperators(0, "memory")
    yield ReorderOperators(0, list(range(len(doc.model.subgraphs[0].operators))))
    yield SetOfflineMemoryPlan()
    offsets, _errors = read_offline(doc.model)
    yield SetOfflineMemoryPlan([o + 64 if o >= 0 else o for o in offsets], pointer_bytes=8)


def _shapes(doc):
    yield UpdateStoredShapes({(0, 5): [1, 16, 16, 8], (0, 6): [1, 16, 16, 8, 1]})
    add = next(o for o in doc.model.subgraphs[0].operators if o.name == "ADD")
    yield SetOption(0, add.index, "fused_activation_function", "RELU")


def _section(doc):
    yield RenameTensor(0, 0, "tokens")
    yield SetDescription("a section of a container")


SCENARIOS = {  # name: (source, splice every edit, commands)
    "tensors": (DILATED, False, _tensors),
    "tensors-spliced": (DILATED, True, _tensors),
    "requantize": (INT8, False, _requantize),
    "custom-options": (MODELS_DIR / "ssd_mobilenet_v1.tflite", True, _custom),
    "signatures-metadata": (MODELS_DIR / "multi_signature.tflite", False, _header),
    "memory (model from bytes)": (BUILT["branches"], False, _memory),
    "stored-shapes (model from bytes)": (lambda: residual_model(60), True, _shapes),
    "container section": (MODELS_DIR / "llm" / "tiny_llama.litertlm", False, _section),
}


def _open(source, splice: bool) -> ModelDocument:
    doc = ModelDocument(source() if callable(source) else source)
    if splice:
        doc.splice_min_objects = 0
    return doc


def test_every_command_kind_is_journaled_and_tested():
    """A new command must be known to the journal and replayed by a scenario here."""
    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)
    commands = {c for c in subclasses(EditCommand)
                if c.__module__.startswith("tflite_viewer.") and not c.__name__.startswith("_")}
    assert commands == set(KINDS.values())
    made = set()
    for source, splice, scenario in SCENARIOS.values():
        doc = _open(source, splice)
        for command in scenario(doc):
            made.add(type(command))
            doc.apply(command)
    assert made == commands


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_replaying_the_journal_gives_the_same_history_and_bytes(tmp_path, name):
    source, splice, scenario = SCENARIOS[name]
    doc = _open(source, splice)
    journal = Journal(doc, tmp_path)
    for command in scenario(doc):
        doc.apply(command)
    doc.undo()  # one undone edit: the restored history can redo it
    assert journal.error is None
    want, at, history = states(doc), doc.history_index, doc.history
    crash(journal)
    [recovery] = pending_recoveries(tmp_path)
    assert recovery.index == at and recovery.descriptions == history
    assert not recovery.source_changed and recovery.lost == []
    restored = recovery.restore()
    assert restored.history == history and restored.history_index == at
    assert restored.to_bytes() == want[at]
    assert states(restored) == want  # every state of the history, undo and redo
    assert restored.journal is not None and restored.journal.path.exists()
    assert [p.name for p in tmp_path.iterdir()] == [restored.journal.home.name]


@pytest.mark.parametrize("splice", [False, True], ids=["serialized", "spliced"])
def test_every_position_of_a_branching_history_is_restored(tmp_path, splice):
    doc = _open(DILATED, splice)
    journal = Journal(doc, tmp_path / "live")
    sg = doc.model.subgraphs[0]
    conv = next(o for o in sg.operators if o.name == "CONV_2D")
    steps = [
        lambda: doc.apply(RenameTensor(0, 0, "a")),
        lambda: doc.apply(SetOption(0, conv.index, "stride_w", 2)),
        lambda: doc.apply(SetDescription("b")),
        doc.undo, doc.undo,
        lambda: doc.apply(SetMetadata("branch", b"\x01\x02")),  # drops the two undone edits
        doc.undo, doc.redo, doc.undo, doc.undo,  # back to the opened file: nothing pending
        doc.redo, doc.redo,
        lambda: doc.apply(ExposeTensor(0, conv.outputs[0])),
    ]
    for k, step in enumerate(steps):
        step()
        restored = restored_copy(journal, tmp_path / "copy")
        if doc.history_index == 0:
            assert restored is None, k
            continue
        assert restored.history == doc.history and restored.history_index == doc.history_index
        assert restored.to_bytes() == doc.to_bytes(), k
    assert states(restored) == states(doc)


def test_no_file_until_a_change_and_nothing_left_after_close(tmp_path):
    doc = ModelDocument(DILATED)
    journal = Journal(doc, tmp_path)
    assert list(tmp_path.iterdir()) == []  # a model only looked at leaves nothing
    doc.apply(RenameTensor(0, 0, "x"))
    assert journal.path.exists()
    assert pending_recoveries(tmp_path) == []  # alive: never offered
    assert journal.home.exists()
    journal.close()
    assert list(tmp_path.iterdir()) == [] and doc.journal is None
    doc.apply(RenameTensor(0, 0, "y"))  # no journal follows the document any more
    assert list(tmp_path.iterdir()) == []


def test_save_removes_the_journal_and_the_next_change_writes_it_whole(tmp_path):
    doc = ModelDocument(DILATED)
    journal = Journal(doc, tmp_path / "rec")
    doc.apply(RenameTensor(0, 0, "a"))
    doc.apply(SetDescription("saved"))
    out = doc.save(tmp_path / "out.tflite")
    assert not journal.path.exists()
    doc.apply(SetMetadata("after", "the save"))
    doc.undo()
    doc.undo()  # before the saved state
    want = doc.to_bytes()
    crash(journal)
    [recovery] = pending_recoveries(tmp_path / "rec")
    assert recovery.saved_to == str(out.absolute()) and str(out.absolute()) in recovery.message
    restored = recovery.restore()
    assert restored.to_bytes() == want and restored.history == doc.history
    assert restored.history_index == 1


def test_a_journal_at_its_saved_state_is_not_offered(tmp_path):
    doc = ModelDocument(DILATED)
    journal = Journal(doc, tmp_path)
    doc.apply(RenameTensor(0, 0, "a"))
    doc.save(tmp_path / "out.tflite")
    doc.undo()
    doc.redo()  # the saved state again: nothing is unsaved
    assert journal.path.exists()
    crash(journal)
    assert pending_recoveries(tmp_path) == []
    assert not any(p.is_dir() for p in tmp_path.iterdir())  # and it is cleared


def _copy_opened(tmp_path: Path) -> tuple[Path, ModelDocument, Journal]:
    """A copy of the model, opened and journaled to ``tmp_path / "rec"``."""
    model = tmp_path / "model.tflite"
    shutil.copyfile(DILATED, model)
    doc = ModelDocument(model)
    return model, doc, Journal(doc, tmp_path / "rec")


def test_a_save_over_the_opened_file_becomes_the_base_of_later_edits(tmp_path):
    model, doc, journal = _copy_opened(tmp_path)
    doc.apply(RenameTensor(0, 0, "a"))
    doc.save(model, overwrite_original=True)
    doc.apply(SetDescription("after the save"))
    want = doc.to_bytes()
    crash(journal)
    [recovery] = pending_recoveries(tmp_path / "rec")
    assert recovery.source.sha256 == hashlib.sha256(model.read_bytes()).hexdigest()
    assert not recovery.source_changed
    assert recovery.descriptions == [doc.history[1]]  # the first edit is in the file now
    restored = recovery.restore()
    assert restored.to_bytes() == want


@pytest.mark.parametrize("then_edit", [False, True], ids=["undone", "undone-then-edited"])
def test_undone_past_a_save_over_the_opened_file_says_what_is_lost(tmp_path, then_edit):
    model, doc, journal = _copy_opened(tmp_path)
    doc.apply(RenameTensor(0, 0, "a"))
    doc.apply(SetDescription("saved"))
    doc.save(model, overwrite_original=True)
    doc.undo()
    if then_edit:  # the history no longer passes through the saved state
        doc.apply(SetDescription("another branch"))
        doc.apply(SetDescription("and on"))
    crash(journal)
    [recovery] = pending_recoveries(tmp_path / "rec")
    assert "undone past the save that replaced model.tflite" in recovery.lost[0]
    assert recovery.descriptions == []
    assert recovery.restore().to_bytes() == model.read_bytes()


def test_a_changed_source_file_is_named_and_what_no_longer_applies_is_lost(tmp_path):
    model, doc, journal = _copy_opened(tmp_path)
    dw = next(o for o in doc.model.subgraphs[0].operators if o.name == "DEPTHWISE_CONV_2D")
    doc.apply(RenameTensor(0, 0, "a"))
    doc.apply(SetOption(0, dw.index, "dilation_w_factor", 2))
    crash(journal)
    stat = model.stat()
    data = bytearray(model.read_bytes())
    data[-1] ^= 0xFF  # same size, same time: only the hash can tell
    model.write_bytes(bytes(data))
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    [recovery] = pending_recoveries(tmp_path / "rec")
    assert recovery.source_changed and "its contents differ" in recovery.message
    shutil.copyfile(MODELS_DIR / "sine_float.tflite", model)  # another model altogether
    [recovery] = pending_recoveries(tmp_path / "rec")
    assert "its size changed" in recovery.source_change
    restored = recovery.restore()
    assert restored.history == ["Rename tensor 'serving_default_dense_input:0' to 'a'"]
    assert recovery.lost and "no longer applies" in recovery.lost[0]
    assert "dilation_w_factor" in recovery.lost[0]


def test_a_missing_source_file_is_a_readable_refusal_and_the_journal_stays(tmp_path):
    model, doc, journal = _copy_opened(tmp_path)
    doc.apply(RenameTensor(0, 0, "a"))
    crash(journal)
    model.unlink()
    [recovery] = pending_recoveries(tmp_path / "rec")
    assert recovery.source_changed and "cannot be read" in recovery.message
    with pytest.raises(JournalError, match="cannot be opened"):
        recovery.restore()
    assert len(pending_recoveries(tmp_path / "rec")) == 1
    recovery.discard()
    assert pending_recoveries(tmp_path / "rec") == []


def test_a_journal_being_restored_elsewhere_is_refused(tmp_path):
    doc = ModelDocument(DILATED)
    journal = Journal(doc, tmp_path)
    doc.apply(RenameTensor(0, 0, "a"))
    crash(journal)
    [recovery] = pending_recoveries(tmp_path)
    from tflite_viewer.model.durable import lock
    fd = os.open(recovery.home / "lock", os.O_RDWR)
    try:
        assert lock(fd)
        with pytest.raises(JournalError, match="another tflite-viewer"):
            recovery.restore()
    finally:
        os.close(fd)
    assert recovery.restore().history == doc.history
    with pytest.raises(JournalError, match="restored or discarded already"):
        recovery.restore()


def test_a_journal_that_cannot_be_written_stops_and_says_why_without_refusing_edits(tmp_path,
                                                                                    monkeypatch):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    doc = ModelDocument(DILATED)
    journal = Journal(doc, blocker)
    doc.apply(RenameTensor(0, 0, "a"))
    assert doc.model.subgraphs[0].tensors[0].name == "a"
    assert journal.error and "recovery is off" in journal.error

    class Unknown(RenameTensor):  # a command the journal has no record for
        pass
    doc = ModelDocument(DILATED)
    journal = Journal(doc, tmp_path / "rec")
    doc.apply(Unknown(0, 0, "b"))
    assert "Unknown is not a command the journal knows" in journal.error

    def broken(command, put):
        raise RuntimeError("a bug in the journal")
    from tflite_viewer.edit import journal as journal_module
    monkeypatch.setattr(journal_module, "encode_command", broken)
    doc = ModelDocument(DILATED)
    journal = Journal(doc, tmp_path / "rec2")
    result = doc.apply(SetDescription("made anyway"))  # no exception reaches the edit
    assert result.description and doc.model.description == "made anyway"
    assert "a bug in the journal" in journal.error



def test_the_default_folder_is_the_platform_settings_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert default_folder() == tmp_path / "xdg" / "tflite-viewer" / "recovery"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert default_folder() == tmp_path / ".config" / "tflite-viewer" / "recovery"
    monkeypatch.setattr("sys.platform", "darwin")
    assert default_folder() == tmp_path / "Library" / "Application Support" / "tflite-viewer" / "recovery"
    monkeypatch.setattr("sys.platform", "win32")
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    assert default_folder() == tmp_path / "Roaming" / "tflite-viewer" / "recovery"


def test_a_large_source_is_hashed_in_a_thread_no_edit_waits_for(tmp_path, monkeypatch):
    import threading

    from tflite_viewer.edit import journal as journal_module
    from tflite_viewer.edit.journal_format import hash_file
    release = threading.Event()

    def slow_hash(path):
        release.wait(30)
        return hash_file(path)
    monkeypatch.setattr(journal_module, "HASH_AT_ONCE", 0)
    monkeypatch.setattr(journal_module, "hash_file", slow_hash)
    model, doc, journal = _copy_opened(tmp_path)
    doc.apply(RenameTensor(0, 0, "a"))  # the hash is not known: the header goes without it
    [unverified] = pending_recoveries_of_copy(journal, tmp_path / "copy")
    assert unverified.source.sha256 is None and not unverified.source_changed
    release.set()
    journal._hash.result(30)
    doc.apply(SetDescription("b"))  # journals the hash with this edit
    crash(journal)
    [recovery] = pending_recoveries(tmp_path / "rec")
    assert recovery.source.sha256 == hash_file(model)
    assert recovery.restore().to_bytes() == doc.to_bytes()
