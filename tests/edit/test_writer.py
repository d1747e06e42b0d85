"""The writer: lossless round trips, 16-byte alignment, layouts, appended zips, LiteRT."""
from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from tests.conftest import CORPUS, LITERT_REFUSES, corpus_ids
from tests.edit.helpers import LITERT_CRASHES, assert_same_fields, run_litert
from tests.litert_oracle import litert
from tests.micro_oracle import tflm, tflm_tensor
from tflite_viewer.edit import serialize, unpack
from tflite_viewer.edit.writer import FLATBUFFER_LIMIT, choose_layout, needs_offset_layout
from tflite_viewer.model import load_model
from tflite_viewer.schema import schema_generated as S


def _data_offsets(model) -> list[int]:
    """File offsets of every non-empty buffer's first byte."""
    base = model.data.ctypes.data
    return [int(b.data.ctypes.data - base) for b in model.buffers if b.data.size]


@pytest.fixture(scope="module")
def round_trips():
    out = {}
    for path in CORPUS:
        original = load_model(path)
        out[path.name] = (original, serialize(unpack(original)))
    return out


@pytest.mark.parametrize("path", CORPUS, ids=corpus_ids(CORPUS))
def test_unmodified_round_trip_keeps_every_field(path, round_trips):
    original, data = round_trips[path.name]
    again = load_model(data)
    assert_same_fields(original, again)
    assert S.Model.ModelBufferHasIdentifier(data, 0)
    assert again.buffers[0].data.size == 0  # the empty sentinel
    assert all(off % 16 == 0 for off in _data_offsets(again))
    assert len(data) % 16 == 0 or unpack(original).appendix is not None
    # Writing the re-read model again gives the same bytes: the writer is deterministic.
    assert serialize(unpack(again)) == data


def _tflm_every_tensor(model: bytes, x: np.ndarray) -> list[np.ndarray]:
    interp = tflm(model)
    interp.set_input(x, 0)
    interp.invoke()
    return [tflm_tensor(interp, i) for i in range(len(load_model(model).subgraphs[0].tensors))]


@pytest.mark.parametrize("path", CORPUS, ids=corpus_ids(CORPUS))
def test_round_trip_runs_bit_identically_in_litert(path, round_trips):
    original, data = round_trips[path.name]
    if path.name in LITERT_CRASHES:
        # LiteRT crashes on it; TFLite Micro runs it: every tensor of both files agrees
        sg = original.subgraphs[0]
        spec = sg.tensors[sg.inputs[0]]
        x = np.random.default_rng(0).integers(-3000, 3000, spec.shape).astype(spec.dtype)
        expected, got = (_tflm_every_tensor(blob, x) for blob in (original.data.tobytes(), data))
        assert len(expected) == len(sg.tensors) and len(got) == len(expected)
        for a, b in zip(expected, got):
            assert a.dtype == b.dtype and np.array_equal(a, b)
        return
    if path.name in LITERT_REFUSES:
        messages = []
        for blob in (original.data.tobytes(), data):
            with pytest.raises(Exception) as info:
                litert(blob).allocate_tensors()
            messages.append(str(info.value))
        assert messages[0] == messages[1]
        assert "quantized_dimension" in messages[0]
        return
    _, expected = run_litert(original.data.tobytes())
    _, got = run_litert(data)
    assert len(expected) == len(got)
    for a, b in zip(expected, got):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def test_associated_files_zip_survives_with_absolute_offsets(round_trips):
    original, data = round_trips["mobilenet_v1_0.25_224_quant.tflite"]
    assert original.associated_files() == ["labels.txt"]
    zf = zipfile.ZipFile(io.BytesIO(data))
    assert zf.read("labels.txt") == original.read_associated_file("labels.txt")
    assert zf.testzip() is None
    # Offsets are absolute, as the TFLite metadata writer makes them (no prepended-data fix-up).
    eocd = data.rfind(b"PK\x05\x06")
    cd_offset = int.from_bytes(data[eocd + 16:eocd + 20], "little")
    assert data[cd_offset:cd_offset + 4] == b"PK\x01\x02"
    local = int.from_bytes(data[cd_offset + 42:cd_offset + 46], "little")
    assert data[local:local + 4] == b"PK\x03\x04"


def test_empty_zip_of_face_detection_is_kept(round_trips):
    original, data = round_trips["face_detection_short_range.tflite"]
    assert original.data[-22:-18].tobytes() == b"PK\x05\x06"
    zf = zipfile.ZipFile(io.BytesIO(data))  # still a (valid, empty) archive at the end
    assert zf.namelist() == [] and data[-22:-18] == b"PK\x05\x06"
    assert int.from_bytes(data[-6:-2], "little") == len(data) - 22  # directory offset moved


def test_forced_offset_layout_is_aligned_loadable_and_sticky():
    path = next(p for p in CORPUS if p.name == "mobilenet_v1_0.25_224_quant.tflite")
    original = load_model(path)
    data = serialize(unpack(original), layout="offset")
    m = load_model(data)
    external = [b for b in m.buffers if b.is_external_layout]
    assert len(external) > 20
    assert all(b.offset % 16 == 0 and b.size == b.data.size for b in external)
    assert all(not b.is_external_layout for b in m.buffers if b.index in
               {e.buffer for e in m.metadata})  # metadata stays inline
    assert_same_fields(original, m)
    # A model that came in the offset layout goes out in it.
    assert choose_layout(unpack(m)) == "offset"
    assert serialize(unpack(m)) == data
    _, expected = run_litert(original.data.tobytes())
    _, got = run_litert(data)
    assert all(np.array_equal(a, b) for a, b in zip(expected, got))


def test_inline_round_trip_of_an_offset_layout_model():
    path = next(p for p in CORPUS if p.name == "sine_float.tflite")
    offset = load_model(serialize(unpack(load_model(path)), layout="offset"))
    inline = load_model(serialize(unpack(offset), layout="inline"))
    assert not any(b.is_external_layout for b in inline.buffers)
    assert_same_fields(offset, inline)


def test_two_gigabyte_decision_without_writing_two_gigabytes():
    assert not needs_offset_layout(10_000, 2**30, 100)
    assert needs_offset_layout(10_000, FLATBUFFER_LIMIT - 5_000, 100)
    assert needs_offset_layout(0, 2**31, 1)
    tree = unpack(load_model(next(p for p in CORPUS if p.name == "sine_float.tflite")))
    assert choose_layout(tree) == "inline"
    # A zero-stride view reports 2 GiB without allocating it.
    tree.model.buffers[2].data = np.broadcast_to(np.zeros(1, np.uint8), (2**31,))
    assert choose_layout(tree) == "offset"
    assert choose_layout(tree, "inline") == "inline"
    with pytest.raises(ValueError):
        choose_layout(tree, "sideways")


def test_large_custom_options_round_trip_in_offset_layout():
    path = next(p for p in CORPUS if p.name == "ssd_mobilenet_v1.tflite")
    tree = unpack(load_model(path))
    op = next(o for sg in tree.model.subgraphs for o in sg.operators if o.customOptions is not None)
    tree.large_custom_ops.add(op)
    data = serialize(tree, layout="offset")
    m = load_model(data)
    custom = next(o for o in m.subgraphs[0].operators if o.large_custom_options_offset > 1)
    assert custom.large_custom_options_offset % 16 == 0
    assert custom.custom_options_bytes == bytes(np.asarray(op.customOptions))
    again = unpack(m)
    assert len(again.large_custom_ops) == 1 and again.offset_layout
    assert serialize(again) == data


def _zip_after(prefix: bytes) -> bytes:
    out = io.BytesIO()
    out.write(prefix)
    with zipfile.ZipFile(out, "a") as zf:  # the TFLite metadata writer appends this way
        zf.writestr("labels.txt", "cat\ndog\n")
        zf.writestr("vocab.txt", "a b c", compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


@pytest.mark.parametrize("rebuild", [False, True], ids=["shift", "rebuild"])
def test_zip_relocation_keeps_members_readable(rebuild):
    from tflite_viewer.edit.tree import _rebuild_zip, relocate_zip
    original = _zip_after(b"x" * 100)
    raw = np.frombuffer(original, np.uint8)[100:]
    moved = (_rebuild_zip(raw, 37) if rebuild else relocate_zip(raw, 100, 37))
    blob = b"y" * 37 + bytes(moved)
    zf = zipfile.ZipFile(io.BytesIO(blob))
    assert zf.read("labels.txt") == b"cat\ndog\n" and zf.read("vocab.txt") == b"a b c"
    assert all(info.header_offset >= 37 for info in zf.infolist())
    eocd = blob.rfind(b"PK\x05\x06")
    cd = int.from_bytes(blob[eocd + 16:eocd + 20], "little")
    assert blob[cd:cd + 4] == b"PK\x01\x02"  # absolute, no prepended-data correction needed
