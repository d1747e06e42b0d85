"""External buffers (weights in side files): read, shown, run and saved.

Models are written with side files by the project's writer (`edit.sidefiles.externalize`,
laid out as LiteRT's externalizer lays them).  The sources of truth: the same model with
its weights inline (bit-identical values and outputs of our interpreter), and LiteRT's
CompiledModel, the part of the ai-edge-litert 2.3.0 wheel that loads side files (its
Interpreter API refuses them): its outputs on the side-file model equal its outputs on
the inline model, change when the side file's bytes change, and agree with ours.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli_runner import run_cli
from tests.conftest import MODELS_DIR
from tests.litert_oracle import compiled_model_run
from tflite_viewer.edit.commands import RenameTensor, ReplaceTensorData
from tflite_viewer.edit.document import ModelDocument
from tflite_viewer.edit.sidefiles import every_constant, externalize
from tflite_viewer.edit.tree import unpack
from tflite_viewer.edit.writer import serialize
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.model import EditError, ModelFormatError, load_model

MODELS = ["sine_float", "small_cnn_dilated_int8"]


def write_with_side_file(name: str, folder: Path, group: str = "weights.bin",
                         select=every_constant) -> Path:
    """The corpus model ``name`` written to ``folder`` with its constants in ``group``
    (every one by default; LiteRT's choice, the weights of FC and convolutions, with
    ``select=None``)."""
    tree = unpack(load_model(MODELS_DIR / f"{name}.tflite"))
    side = externalize(tree, group, select=select)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.tflite"
    path.write_bytes(serialize(tree))
    (folder / group).parent.mkdir(parents=True, exist_ok=True)
    (folder / group).write_bytes(side)
    return path


def _inputs(model, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sig = model.signature_defs[0]
    sg = model.subgraphs[sig.subgraph_index]
    out = {}
    for m in sig.inputs:
        t = sg.tensors[m.tensor_index]
        if t.dtype.kind == "f":
            out[m.name] = rng.uniform(0, 6, t.shape).astype(t.dtype)
        else:
            out[m.name] = rng.integers(-128, 128, t.shape).astype(t.dtype)
    return out


def _ours(path_or_model, inputs) -> dict[str, np.ndarray]:
    model = path_or_model if not isinstance(path_or_model, Path) else load_model(path_or_model)
    interp = Interpreter(model)
    return interp.invoke(inputs, signature=model.signature_defs[0].key)


@pytest.mark.parametrize("name", MODELS)
def test_side_file_model_reads_shows_and_runs_as_the_inline_one(tmp_path, name):
    inline = load_model(MODELS_DIR / f"{name}.tflite")
    path = write_with_side_file(name, tmp_path)
    model = load_model(path)
    assert model.findings == []
    # the weights left the model file for the side file
    moved_bytes = inline.weights_nbytes - model.weights_nbytes
    assert moved_bytes > 0 and (tmp_path / "weights.bin").stat().st_size >= moved_bytes
    moved = 0
    for a, b in zip(inline.subgraphs[0].tensors, model.subgraphs[0].tensors):
        assert a.kind == b.kind
        if not a.buffer_nbytes:
            continue
        moved += 1
        assert b.external_buffer & (1 << 31) and b.buffer == 0
        values = b.data()
        assert values.dtype == a.data().dtype and values.tobytes() == a.data().tobytes()
        assert not values.flags.writeable  # a view on the mapped side file, as inline data
        assert "weights.bin" in b.data_location and "external buffer" in b.data_location
    assert moved > 0
    inputs = _inputs(model)
    ours_inline, ours_ext = _ours(inline, inputs), _ours(model, inputs)
    for key in ours_inline:
        assert ours_ext[key].tobytes() == ours_inline[key].tobytes()


@pytest.mark.parametrize("name", MODELS)
def test_litert_compiled_model_reads_the_side_file_as_we_do(tmp_path, name):
    path = write_with_side_file(name, tmp_path / "ext", select=None)  # LiteRT's choice
    model = load_model(path)
    assert any(t.external_buffer for t in model.subgraphs[0].tensors)
    inputs = _inputs(model, seed=1)
    theirs_inline = compiled_model_run(MODELS_DIR / f"{name}.tflite", inputs)
    theirs_ext = compiled_model_run(path, inputs)
    ours = _ours(model, inputs)
    for key, value in theirs_inline.items():
        assert theirs_ext[key].tobytes() == value.tobytes()
        if value.dtype.kind == "f":
            np.testing.assert_allclose(ours[key], value, rtol=1e-5, atol=1e-5)
        else:  # XNNPACK's int8 path may round a tie the other way
            assert np.max(np.abs(ours[key].astype(int) - value.astype(int))) <= 1
    # LiteRT reads the side file: other bytes there, other outputs (for them and for us)
    side = tmp_path / "ext" / "weights.bin"
    raw = bytearray(side.read_bytes())
    raw[:] = bytes(b ^ 0x15 for b in raw)
    side.write_bytes(bytes(raw))
    changed = compiled_model_run(path, inputs)
    ours_changed = _ours(load_model(path), inputs)
    key = next(iter(theirs_inline))
    assert changed[key].tobytes() != theirs_inline[key].tobytes()
    assert ours_changed[key].tobytes() != ours[key].tobytes()


def test_missing_side_file_is_a_finding_then_a_model_format_error_naming_it(tmp_path):
    path = write_with_side_file("sine_float", tmp_path)
    (tmp_path / "weights.bin").unlink()
    model = load_model(path)  # the graph still opens
    assert model.findings and all("weights.bin" in f.message and "missing" in f.message
                                  for f in model.findings)
    weight = next(t for t in model.subgraphs[0].tensors if t.external_buffer)
    assert weight.is_constant
    with pytest.raises(ModelFormatError, match=r"tensors\[\d+\]\.external_buffer.*side file "
                       r".*weights\.bin is missing"):
        weight.data()
    with pytest.raises(ModelFormatError, match="weights.bin is missing"):
        Interpreter(model)
    run = run_cli("run", path)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "weights.bin is missing" in run.stderr


def test_short_side_file_names_the_file_and_the_bytes_needed(tmp_path):
    path = write_with_side_file("sine_float", tmp_path)
    side = tmp_path / "weights.bin"
    full = side.read_bytes()
    side.write_bytes(full[:100])
    model = load_model(path)
    assert any("holds 100 bytes" in f.message for f in model.findings)
    last = max((t for t in model.subgraphs[0].tensors if t.external_buffer),
               key=lambda t: model.external_buffers_by_id[t.external_buffer].offset)
    with pytest.raises(ModelFormatError, match=rf"{side} holds 100 bytes.*too short"):
        last.data()


def test_bytes_have_no_folder_until_given_one(tmp_path):
    path = write_with_side_file("sine_float", tmp_path)
    data = path.read_bytes()
    weight = lambda m: next(t for t in m.subgraphs[0].tensors if t.external_buffer)  # noqa: E731
    with pytest.raises(ModelFormatError, match="read from bytes.*weights_dir"):
        weight(load_model(data)).data()
    inline = load_model(MODELS_DIR / "sine_float.tflite")
    got = weight(load_model(data, weights_dir=tmp_path)).data()
    assert got.tobytes() in {t.raw_bytes().tobytes() for t in inline.subgraphs[0].tensors
                             if t.raw_bytes() is not None}


def test_unknown_id_and_bad_group_are_located(tmp_path):
    tree = unpack(load_model(MODELS_DIR / "sine_float.tflite"))
    side = externalize(tree, "w.bin", select=every_constant)
    tree.model.externalBuffers[0].group = 7
    tensors = tree.model.subgraphs[0].tensors
    victim = next(t for t in tensors if t.externalBuffer == tree.model.externalBuffers[1].id)
    victim.externalBuffer = 0x80001234
    (tmp_path / "w.bin").write_bytes(side)
    (tmp_path / "m.tflite").write_bytes(serialize(tree))
    model = load_model(tmp_path / "m.tflite")
    messages = " | ".join(f.message for f in model.findings)
    assert "group 7 out of range (0..0)" in messages and "0x80001234" in messages


def test_save_keeps_side_files_byte_identical_and_edits_keep_reading_them(tmp_path):
    path = write_with_side_file("sine_float", tmp_path / "a")
    side = (tmp_path / "a" / "weights.bin").read_bytes()
    doc = ModelDocument(path)
    inputs = _inputs(doc.model)
    before = _ours(doc.model, inputs)
    doc.apply(RenameTensor(0, 0, "x_renamed"))  # the edited model still reads the side file
    assert doc.model.subgraphs[0].tensors[0].name == "x_renamed"
    for key, value in _ours(doc.model, inputs).items():
        assert value.tobytes() == before[key].tobytes()
    (tmp_path / "b").mkdir()
    out = doc.save(tmp_path / "b" / "edited.tflite")
    assert (tmp_path / "b" / "weights.bin").read_bytes() == side
    saved = load_model(out)
    assert saved.findings == [] and saved.subgraphs[0].tensors[0].name == "x_renamed"
    for key, value in _ours(saved, inputs).items():
        assert value.tobytes() == before[key].tobytes()
    # saved beside the original: the side file is shared, not rewritten
    mtime = (tmp_path / "a" / "weights.bin").stat().st_mtime_ns
    doc.save(tmp_path / "a" / "second.tflite")
    assert (tmp_path / "a" / "weights.bin").stat().st_mtime_ns == mtime
    # another model's side file of the same name is never overwritten
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "weights.bin").write_bytes(b"someone else's weights")
    with pytest.raises(EditError, match="already exists with other bytes"):
        doc.save(tmp_path / "c" / "edited.tflite")
    assert (tmp_path / "c" / "weights.bin").read_bytes() == b"someone else's weights"
    assert not (tmp_path / "c" / "edited.tflite").exists()


def test_unchanged_document_saved_elsewhere_copies_the_side_file(tmp_path):
    path = write_with_side_file("small_cnn_dilated_int8", tmp_path / "a", group="sub/w.data")
    doc = ModelDocument(path)
    (tmp_path / "b").mkdir()
    doc.save(tmp_path / "b" / "m.tflite")
    assert (tmp_path / "b" / "sub" / "w.data").read_bytes() == \
        (tmp_path / "a" / "sub" / "w.data").read_bytes()
    assert (tmp_path / "b" / "m.tflite").read_bytes() == path.read_bytes()


def test_replacing_external_data_is_refused(tmp_path):
    doc = ModelDocument(write_with_side_file("sine_float", tmp_path))
    t = next(t for t in doc.model.subgraphs[0].tensors if t.external_buffer)
    with pytest.raises(EditError, match="side file"):
        doc.apply(ReplaceTensorData(0, t.index, np.zeros(t.shape, t.dtype)))
    assert not doc.is_modified


def test_cli_info_says_where_the_data_lives(tmp_path):
    path = write_with_side_file("sine_float", tmp_path)
    out = run_cli("info", path, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["external_buffer_groups"] == [{
        "index": 0, "name": "weights.bin", "location": f"side file {tmp_path / 'weights.bin'}",
        "exists": True, "bytes": (tmp_path / "weights.bin").stat().st_size}]
    tensors = doc["subgraphs"][0]["tensors"]
    ext = [t for t in tensors if t.get("external_buffer")]
    assert ext and all(t["data_location"].startswith(f"side file {tmp_path / 'weights.bin'}")
                       for t in ext)


def test_side_files_outside_the_folder_are_flagged_and_only_regular_files_are_read(tmp_path):
    import os
    tree = unpack(load_model(MODELS_DIR / "sine_float.tflite"))
    externalize(tree, "/dev/zero", select=every_constant)  # a device: never opened
    (tmp_path / "m.tflite").write_bytes(serialize(tree))
    model = load_model(tmp_path / "m.tflite")
    assert any(f.severity == "warning" and "outside the model's folder" in f.message
               for f in model.findings)
    weight = next(t for t in model.subgraphs[0].tensors if t.external_buffer)
    with pytest.raises(ModelFormatError, match="/dev/zero is not a regular file"):
        weight.data()
    fifo = tmp_path / "fifo.bin"
    os.mkfifo(fifo)
    tree = unpack(load_model(MODELS_DIR / "sine_float.tflite"))
    externalize(tree, "fifo.bin", select=every_constant)
    (tmp_path / "f.tflite").write_bytes(serialize(tree))
    weight = next(t for t in load_model(tmp_path / "f.tflite").subgraphs[0].tensors
                  if t.external_buffer)
    with pytest.raises(ModelFormatError, match="fifo.bin is not a regular file"):
        weight.data()  # would block forever if it were opened


def test_litert_cross_check_says_litert_interpreter_does_not_read_side_files(tmp_path):
    """LiteRT's Interpreter API, the cross-check's reference, refuses external buffers
    ("Input tensor N lacks data"): the command line says why, in one line."""
    path = write_with_side_file("sine_float", tmp_path, select=None)
    run = run_cli("run", path, "--compare-litert")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "does not read external buffers" in run.stderr and "weights.bin" in run.stderr
