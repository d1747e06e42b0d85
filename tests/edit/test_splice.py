"""Spliced edits: new objects appended and references re-pointed instead of a re-serialize.

What you see is what you export: after every command the document's model (re-read from
the spliced bytes) reads field for field like a full re-serialization of the object tree,
LiteRT runs both alike, and undo/redo give every state back byte for byte.  Splicing is
forced on small models here (`splice_min_objects = 0`); by default the document splices
only models where a serialize would be slow.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from benchmarks.synthetic_models import residual_model
from tests.conftest import MODELS_DIR
from tests.edit.helpers import assert_same_fields, run_litert
from tflite_viewer.edit import (ExposeTensor, ModelDocument, RemoveMetadata, RemoveOperator,
                                RenameSignature, RenameSignatureTensor, RenameTensor,
                                ReplaceTensorData, SetCustomOption, SetDescription,
                                SetOpVersion, SetOption, SetQuantization, SetTensorShape,
                                SplitFusedActivation, UpdateStoredShapes, serialize, unpack)
from tflite_viewer.edit import pieces as pieces_module
from tflite_viewer.edit.diff import diff
from tflite_viewer.edit.document import _annotate
from tflite_viewer.edit.pieces import Pieces, SourceFile
from tflite_viewer.model import load_model

DILATED = MODELS_DIR / "small_cnn_dilated_float.tflite"
INT8 = MODELS_DIR / "mobilenet_v2_int8.tflite"


def _kind(doc: ModelDocument) -> str:
    r = doc._history[doc.history_index - 1]
    return "patch" if r.patches is not None else "splice" if r.splice is not None else "serialize"


def _full_diff(doc: ModelDocument) -> list[str]:
    return [_annotate(line, doc.tree.model)
            for line in diff(unpack(doc.original).model, doc.tree.model)]


def _spliced(source, layout: str = "auto") -> ModelDocument:
    doc = ModelDocument(source, layout=layout)
    doc.splice_min_objects = 0
    return doc


def _commands(doc: ModelDocument) -> list[tuple[object, str]]:
    """(command, how it must be written) for every command kind, valid in order on
    small_cnn_dilated_float."""
    sg = doc.model.subgraphs[0]
    dw = next(o for o in sg.operators if o.name == "DEPTHWISE_CONV_2D")
    conv = next(o for o in sg.operators if o.name == "CONV_2D")
    soft = next(o for o in sg.operators if o.name == "SOFTMAX")
    x = sg.inputs[0]
    bias = sg.tensors[conv.inputs[2]]
    shape = list(sg.tensors[x].shape)
    return [
        (RenameTensor(0, x, "pixels"), "splice"),
        (RenameTensor(0, x, "pixels_again_with_a_longer_name"), "splice"),
        (SetTensorShape(0, x, shape + [1]), "splice"),  # another rank: a new vector
        (SetTensorShape(0, x, shape), "splice"),
        (SetQuantization(0, x, [0.25], [3]), "splice"),  # the tensor had no quantization
        (SetQuantization(0, x, [0.5, 0.25, 0.125], [0, 1, 2], 3), "splice"),  # more scales
        (SetQuantization(0, x, None), "splice"),  # removed: the tensor is repacked
        (SetOption(0, conv.index, "padding", "VALID"), "splice"),  # absent: options repacked
        (SetOption(0, dw.index, "dilation_w_factor", 2), "splice"),  # the default: absent
        (ReplaceTensorData(0, bias.index, np.ones(bias.shape, np.float32)), "patch"),
        (ExposeTensor(0, dw.outputs[0]), "splice"),
        (SetOpVersion(0, conv.index, 7), "splice"),
        (RemoveOperator(0, soft.index), "splice"),
        # an operator and a tensor inserted (a front block), then edits of the new state
        (SplitFusedActivation(0, conv.index), "splice"),
        (RenameTensor(0, len(sg.tensors), "pre_activation_renamed"), "splice"),
        (SetOption(0, dw.index + 1, "dilation_w_factor", 1), "patch"),  # moved by one
    ]


def _check_state(doc: ModelDocument) -> None:
    full = load_model(serialize(doc.tree))
    assert_same_fields(doc.model, full)
    assert doc.model.data.tobytes() == doc.to_bytes()
    assert doc.changes() == _full_diff(doc)


@pytest.mark.parametrize("layout", ["inline", "offset"])
def test_every_command_reads_back_like_a_full_serialize(tmp_path, layout):
    src = DILATED
    if layout == "offset":
        src = tmp_path / "offset.tflite"
        src.write_bytes(serialize(unpack(load_model(DILATED)), layout="offset"))
    doc = _spliced(src)
    states = [doc.to_bytes()]
    for cmd, how in _commands(doc):
        doc.apply(cmd)
        assert _kind(doc) == how, cmd.description
        _check_state(doc)
        states.append(doc.to_bytes())
    # LiteRT runs the spliced bytes exactly like a fresh serialize of the same tree.
    _, spliced = run_litert(doc.to_bytes())
    _, full = run_litert(serialize(doc.tree))
    for a, b in zip(spliced, full):
        np.testing.assert_array_equal(a, b)
    for k in range(len(states) - 1, 0, -1):
        doc.undo()
        assert doc.to_bytes() == states[k - 1]
        _check_state(doc) if k > 1 else None
    for k in range(1, len(states)):
        doc.redo()
        assert doc.to_bytes() == states[k]


def test_offset_layout_keeps_every_weight_byte_where_it_was_plus_the_inserted_block(tmp_path):
    src = tmp_path / "offset.tflite"
    src.write_bytes(serialize(unpack(load_model(DILATED)), layout="offset"))
    before = load_model(src)
    doc = _spliced(src)
    doc.apply(RenameTensor(0, 0, "x" * 40_000))  # too long for the gap: a block is inserted
    after = doc.model
    shift = None
    for a, b in zip(before.buffers, after.buffers):
        assert a.data.tobytes() == b.data.tobytes()
        if a.is_external_layout:
            assert b.offset - a.offset == (shift := b.offset - a.offset if shift is None else shift)
    assert shift and shift % pieces_module.INSERT_GRANULE == 0
    doc.apply(RenameTensor(0, 1, "short"))  # fits in what the block left free: no new block
    assert doc.model.file_size == after.file_size
    _check_state(doc)


def test_header_and_signature_edits_splice_on_a_model_with_signatures():
    doc = _spliced(INT8)
    m = doc.model
    if not m.signature_defs:
        pytest.skip("the corpus model has no signature")
    sig = m.signature_defs[0]
    for cmd in (RenameSignature(sig.key, "serve"),
                RenameSignatureTensor("serve", "outputs", sig.outputs[0].name, "scores"),
                RenameSignatureTensor("serve", "inputs", sig.inputs[0].name, "image")):
        doc.apply(cmd)
        assert _kind(doc) == "splice"
        _check_state(doc)
    assert doc.model.signature("serve").outputs[0].name == "scores"


def test_description_metadata_and_custom_options_splice_or_serialize_correctly():
    doc = _spliced(DILATED)
    doc.apply(SetDescription("one"))  # stored by the converter? either way it reads back
    _check_state(doc)
    doc.apply(SetDescription("two, longer than before"))
    assert _kind(doc) == "splice"
    _check_state(doc)
    names = [e.name for e in doc.model.metadata]
    if names:
        doc.apply(RemoveMetadata(names[0]))
        assert _kind(doc) == "splice"
        _check_state(doc)


def test_custom_options_are_spliced():
    doc = _spliced(MODELS_DIR / "ssd_mobilenet_v1.tflite")  # TFLite_Detection_PostProcess
    s, k = next((sg.index, op.index) for sg in doc.model.subgraphs for op in sg.operators
                if op.opcode.is_custom)
    doc.apply(SetCustomOption(s, k, "added_key", 3))
    assert _kind(doc) == "splice"
    _check_state(doc)


def test_update_stored_shapes_and_residual_graph_edits():
    doc = _spliced(residual_model(60))
    doc.apply(UpdateStoredShapes({(0, 5): [1, 16, 16, 8], (0, 6): [1, 16, 16, 8, 1]}))
    assert _kind(doc) == "splice"
    _check_state(doc)
    add = next(o for o in doc.model.subgraphs[0].operators if o.name == "ADD")
    doc.apply(SetOption(0, add.index, "fused_activation_function", "RELU"))  # absent: repack
    assert _kind(doc) == "splice"
    _check_state(doc)


def test_large_models_splice_by_default_and_small_ones_serialize():
    small = ModelDocument(DILATED)
    small.apply(RenameTensor(0, 0, "x"))
    assert _kind(small) == "serialize"
    big = ModelDocument(residual_model(1_200))  # 2,400 operators and tensors
    big.apply(RenameTensor(0, 0, "x"))
    assert _kind(big) == "splice"
    _check_state(big)


def test_save_streams_the_state_and_a_no_op_save_is_byte_identical(tmp_path):
    src = tmp_path / "in.tflite"
    src.write_bytes(DILATED.read_bytes())
    doc = _spliced(src)
    out = doc.save(tmp_path / "same.tflite")
    assert out.read_bytes() == src.read_bytes()
    doc.apply(RenameTensor(0, 0, "renamed"))
    out = doc.save(tmp_path / "renamed.tflite")
    assert out.read_bytes() == doc.to_bytes()
    assert load_model(out).subgraphs[0].tensors[0].name == "renamed"


def test_pieces_compose_the_same_bytes_as_a_join(tmp_path, monkeypatch):
    """A composed buffer maps the file's pages in place; it must equal the joined bytes,
    whatever is inserted or overwritten around and inside the mapped ranges."""
    if not pieces_module.composition_available():
        pytest.skip("mmap composition is Linux/macOS only")
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, 3 * (1 << 20) + 123, dtype=np.uint8).tobytes()
    path = tmp_path / "blob.bin"
    path.write_bytes(raw)
    import mmap
    with open(path, "rb") as f:
        mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    source = SourceFile(path, mapping, len(raw))
    base = Pieces.of_file(source)
    g = pieces_module.INSERT_GRANULE
    edited = base.replace([(0, 0, b"\x01" * g), (5, 3, b"abc"), (100_000, 0, b"\x02" * (3 * g)),
                           (len(raw) - 7, 2, b"zz"), (len(raw), 0, b"tail")])
    edited = edited.replace([(g + 4096 * 9 + 1, 10, b"0123456789")])
    monkeypatch.setattr(pieces_module, "COMPOSE_MIN_BYTES", 1)
    composed = edited.materialize()
    assert isinstance(composed, mmap.mmap)
    assert bytes(composed) == b"".join(
        bytes(p) if not isinstance(p, pieces_module.FileRange) else raw[p.start:p.stop]
        for p in edited.parts)
    fd = os.open(tmp_path / "out.bin", os.O_WRONLY | os.O_CREAT)
    try:
        edited.write_to(fd)
    finally:
        os.close(fd)
    assert (tmp_path / "out.bin").read_bytes() == bytes(composed)


@pytest.mark.parametrize("layout", ["inline", "offset"])
def test_a_root_field_the_file_does_not_store_is_written_in_a_new_root(tmp_path, layout):
    """A model saved without a description: the root has no slot to re-point, so a
    shallow root (its vtable, its offsets to the same children) goes after the header."""
    tree = unpack(load_model(DILATED))
    tree.model.description = None
    src = tmp_path / f"{layout}.tflite"
    src.write_bytes(serialize(tree, layout=layout))
    before = load_model(src)
    assert before.description == ""
    doc = _spliced(src)
    states = [doc.to_bytes()]
    for text in ("described", "and described again, at greater length"):
        doc.apply(SetDescription(text))
        assert _kind(doc) == "splice"
        _check_state(doc)
        assert doc.model.description == text
        states.append(doc.to_bytes())
    for a, b in zip(before.buffers, doc.model.buffers):  # every weight as it was
        assert a.data.tobytes() == b.data.tobytes()
    assert len(states[1]) - len(states[0]) < (pieces_module.INSERT_GRANULE + 64 if
                                              layout == "offset" else 128)
    _, spliced = run_litert(doc.to_bytes())
    _, full = run_litert(serialize(doc.tree))
    for a, b in zip(spliced, full):
        np.testing.assert_array_equal(a, b)
    doc.undo()
    doc.undo()
    assert doc.to_bytes() == states[0]
    doc.redo()
    assert doc.to_bytes() == states[1]


@pytest.mark.parametrize("layout", ["inline", "offset"])
def test_changes_never_read_the_weights_a_state_shares_with_the_file(tmp_path, layout,
                                                                      monkeypatch):
    """The change list after a spliced edit that moves every weight (a new root block at
    the front) knows from the pieces that each weight is the file's own bytes: reading
    them would page a 2.5 GB model in twice.  A weight the edit replaced is still read and
    reported."""
    from tflite_viewer.edit import ReplaceTensorData, coldiff
    tree = unpack(load_model(MODELS_DIR / "mobilenet_v2_float.tflite"))
    tree.model.description = None
    src = tmp_path / f"{layout}.tflite"
    src.write_bytes(serialize(tree, layout=layout))
    doc = _spliced(src)
    doc.apply(SetDescription("described"))
    big = [b.data.size for b in doc.model.buffers if b.data is not None]
    assert max(big) > coldiff._BIG  # the model has weights the comparison would read whole
    compared: list[int] = []
    real = np.array_equal
    monkeypatch.setattr(coldiff.np, "array_equal",
                        lambda a, b: (len(a) > coldiff._BIG and compared.append(len(a)))
                        or real(a, b))
    lines = doc.changes()
    assert compared == []
    assert lines == _full_diff(doc) == ["description: (none) -> 'described'"]
    compared.clear()
    t = next(t for t in doc.model.subgraphs[0].tensors
             if t.buffer_nbytes > coldiff._BIG and t.type_name == "FLOAT32")
    doc.apply(ReplaceTensorData(0, t.index, np.zeros(t.shape, np.float32)))
    lines = doc.changes()
    assert set(compared) == {t.buffer_nbytes}  # the replaced weight alone is read
    assert lines == _full_diff(doc) and len(lines) == 2


def test_removing_an_operator_with_consumers_splices_their_new_inputs():
    """ADD's consumers read its first input afterwards: their ``inputs`` are patched at the
    operators' indices before the removal (the later ones moved down by one)."""
    doc = _spliced(residual_model(60))
    sg = doc.model.subgraphs[0]
    add = next(op for op in sg.operators[20:] if op.name == "ADD")
    readers = [op.index for op in sg.operators if add.outputs[0] in op.inputs]
    assert readers and all(k > add.index for k in readers)
    src = add.inputs[0]
    doc.apply(RemoveOperator(0, add.index))
    assert _kind(doc) == "splice"
    _check_state(doc)
    after = doc.model.subgraphs[0].operators
    assert all(src in after[k - 1].inputs and add.outputs[0] not in after[k - 1].inputs
               for k in readers)
