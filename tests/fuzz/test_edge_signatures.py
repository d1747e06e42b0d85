"""Issue 26, part 1: the last four fuzz signatures, each with its documented error.

* a damaged associated-files zip (BadZipFile, zlib.error, ... escaped `read_associated_file`);
* sparsity metadata that disagrees with the tensor's shape (IndexError, or a 16 GiB index
  array from negative segments, inside the traversal);
* an optional flatbuffer vector left absent (TypeError in `Subgraph.columns`);
* a huge declared input (numpy's MemoryError, or gigabytes resident, while seeded inputs
  were made, before any budget applied).

The models are corpus models changed through the project's object tree and writer, as the
structural fuzzer (tests/fuzz/mutations.py) changes them; the fuzzer has a mutation kind
for each (associated_files, sparsity_shape, absent_vector, huge_input).
"""
from __future__ import annotations

import io
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tests.fuzz.test_regressions import cli, edited, one_error_line, write
from tflite_viewer.edit.tree import Appendix, unpack
from tflite_viewer.edit.writer import serialize
from tflite_viewer.interpreter import AllocationError, Interpreter
from tflite_viewer.interpreter.inputs import complete_inputs, seeded_inputs
from tflite_viewer.model import ModelFormatError, load_model
from tflite_viewer.model.operator import load_flexbuffer
from tflite_viewer.model.sparsity import DENSE, SPARSE_CSR, DimensionMetadata, Sparsity
from tflite_viewer.schema import schema_generated as S

LABELLED = MODELS_DIR / "mobilenet_v1_0.25_224_quant.tflite"  # TFLITE_METADATA + labels.txt


# -- 1. associated files ---------------------------------------------------------------------
def _damaged(offset_in_member: int, value: int | None = None, xor: int = 0xFF) -> bytes:
    """The labelled corpus model with one byte of its zip's first member changed."""
    raw = bytearray(LABELLED.read_bytes())
    info = zipfile.ZipFile(io.BytesIO(bytes(raw))).infolist()[0]
    at = info.header_offset + offset_in_member
    raw[at] = value if value is not None else raw[at] ^ xor
    return bytes(raw)


@pytest.mark.parametrize("offset, value, expect", [
    (0, None, "Bad magic number for file header"),      # the local header's signature
    (60, None, "Bad CRC-32 for file 'labels.txt'"),       # a byte of the stored data
])
def test_a_damaged_associated_file_is_a_model_format_error_naming_the_metadata(
        offset, value, expect):
    model = load_model(_damaged(offset, value))
    assert model.associated_files() == ["labels.txt"]  # the directory still reads
    with pytest.raises(ModelFormatError) as info:
        model.read_associated_file("labels.txt")
    entry = model.metadata_entry("TFLITE_METADATA")
    message = str(info.value)
    assert message.startswith(f"metadata[{entry.index}] (TFLITE_METADATA, buffer "
                              f"{entry.buffer}).associated files (the zip appended to the "
                              "model at byte 498,184): associated file 'labels.txt' cannot "
                              "be read: ")
    assert expect in message
    with pytest.raises(KeyError):  # a name the archive does not hold stays a KeyError
        model.read_associated_file("nope.txt")


def _zip(**members: tuple[bytes, int]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, (data, how) in members.items():
            zf.writestr(name, data, compress_type=how)
    return out.getvalue()


def _with_appendix(blob: bytes) -> bytes:
    """sine_float with ``blob`` appended as its associated-files zip (no metadata entry)."""
    def change(tree):
        tree.appendix = Appendix(np.frombuffer(blob, np.uint8), 0)
    return edited("sine_float.tflite", change)


def test_a_broken_deflate_stream_and_an_unknown_method_are_model_format_errors():
    blob = bytearray(_zip(**{"labels.txt": (b"cat\ndog\n" * 50, zipfile.ZIP_DEFLATED)}))
    blob[35] ^= 0x55  # inside the deflate stream (30-byte header + 10-byte name = 40)
    blob[36] ^= 0xAA
    model = load_model(_with_appendix(bytes(blob)))
    with pytest.raises(ModelFormatError, match=r"^associated files \(the zip appended to the "
                                               r"model at byte [\d,]+\): associated file "
                                               r"'labels.txt' cannot be read: "):
        model.read_associated_file("labels.txt")
    blob = bytearray(_zip(**{"labels.txt": (b"cat\n", zipfile.ZIP_STORED)}))
    cd = blob.rfind(b"PK\x01\x02")
    blob[8:10] = blob[cd + 10:cd + 12] = (99).to_bytes(2, "little")  # method 99 (AES)
    model = load_model(_with_appendix(bytes(blob)))
    with pytest.raises(ModelFormatError, match="NotImplementedError"):
        model.read_associated_file("labels.txt")
    blob = bytearray(_zip(**{"labels.txt": (b"cat\n", zipfile.ZIP_STORED)}))
    cd = blob.rfind(b"PK\x01\x02")
    blob[6:8] = blob[cd + 8:cd + 10] = (1).to_bytes(2, "little")  # the encryption flag
    model = load_model(_with_appendix(bytes(blob)))
    with pytest.raises(ModelFormatError, match="is encrypted"):
        model.read_associated_file("labels.txt")


def test_a_member_declaring_gigabytes_is_refused_before_it_is_inflated():
    blob = bytearray(_zip(**{"labels.txt": (b"\0" * 4096, zipfile.ZIP_DEFLATED)}))
    cd = blob.rfind(b"PK\x01\x02")
    blob[22:26] = blob[cd + 24:cd + 28] = (2**32 - 1).to_bytes(4, "little")  # file size
    model = load_model(_with_appendix(bytes(blob)))
    with pytest.raises(ModelFormatError, match="declares 4,294,967,295 bytes, more than"):
        model.read_associated_file("labels.txt")


def test_editing_a_model_with_a_damaged_zip_keeps_it_and_reading_reports_it():
    """The writer moves the archive (its directory offsets) when the flatbuffer grows; a
    damaged member is carried as it was, and reading the edited model reports it."""
    tree = unpack(load_model(_damaged(60)))
    tree.model.description = b"a longer description than before, so the archive moves"
    again = load_model(serialize(tree))
    assert again.associated_files() == ["labels.txt"]
    with pytest.raises(ModelFormatError, match="Bad CRC-32"):
        again.read_associated_file("labels.txt")


def _flexbuffer_bomb(n: int = 40, levels: int = 5) -> bytes:
    """A 200-byte FlexBuffer of ``levels`` nested untyped vectors of ``n`` elements, every
    element of a level pointing at the one vector below: n**levels values."""
    buf = bytearray([n])
    prev = len(buf)
    buf += bytes([1]) * n + bytes([1 << 2]) * n  # n 8-bit ints, their type bytes (INT)
    for _ in range(levels - 1):
        buf.append(n)
        start = len(buf)
        buf += bytes(start + i - prev for i in range(n)) + bytes([10 << 2]) * n  # VECTOR
        prev = start
    root = len(buf)
    buf += bytes([root - prev, 10 << 2, 1])
    return bytes(buf)


def test_a_flexbuffer_of_shared_vectors_is_refused_not_expanded():
    small = _flexbuffer_bomb(3, 3)
    assert load_flexbuffer(small) == [[[1, 1, 1]] * 3] * 3  # the format is what LiteRT reads
    start = time.perf_counter()
    with pytest.raises(ValueError, match="its vectors share children"):
        load_flexbuffer(_flexbuffer_bomb())  # 40**5 = 1e8 values
    assert time.perf_counter() - start < 5

    def change(tree):
        op = tree.model.subgraphs[0].operators[0]
        op.customOptions = np.frombuffer(_flexbuffer_bomb(), np.uint8)
        op.customOptionsFormat = 0
    model = load_model(edited("sine_float.tflite", change))
    assert model.subgraphs[0].operators[0].custom_options == _flexbuffer_bomb()  # raw bytes


# -- 2. sparsity against the shape -------------------------------------------------------------
def _csr(segments, indices) -> DimensionMetadata:
    return DimensionMetadata(SPARSE_CSR, 0, np.array(segments, np.int32),
                             np.array(indices, np.int32))


@pytest.mark.parametrize("sparsity, shape, where, message", [
    # positions before index 0 (the campaign's IndexError inside the traversal)
    (Sparsity((0,), (), (_csr([-5, -3], [0]),)), (2,), ".dim_metadata[0].array_segments",
     "segments must start at 0, never decrease and end at the 1 indices (they run -5..-3)"),
    # a negative first segment: a 2**31-element index array before (16 GiB, a hang)
    (Sparsity((0, 1), (), (DimensionMetadata(DENSE, 2, None, None),
                           _csr([-2**31, 1, 2], [0, 1]))), (2, 4),
     ".dim_metadata[1].array_segments", "segments must start at 0"),
    (Sparsity((0, 1), (), (DimensionMetadata(DENSE, 3, None, None),
                           _csr([0, 1, 2], [0, 1]))), (2, 4),
     ".dim_metadata[0].dense_size", "3, but dimension 0 of the sparse tensor has 2 entries"),
    (Sparsity((0, 1), (), (DimensionMetadata(DENSE, 2, None, None),
                           _csr([0, 1, 2], [0, 9]))), (2, 4),
     ".dim_metadata[1].array_indices", "indices 0..9 outside dimension 1's 4 entries"),
    (Sparsity((0, 1), (), (DimensionMetadata(DENSE, 2, None, None), _csr([0, 1], [0]))),
     (2, 4), ".dim_metadata[1].array_segments", "2 entries; the level above has 2 positions"),
    (Sparsity((0, 2, 1), (1,), (DimensionMetadata(DENSE, 2, None, None),
                                DimensionMetadata(DENSE, 4, None, None),
                                DimensionMetadata(DENSE, 1, None, None))), (2, 4),
     ".traversal_order", "is not a permutation of the dimensions 0..1 followed by"),
    (Sparsity((0, 1, 2), (1,), (DimensionMetadata(DENSE, 2, None, None),
                                DimensionMetadata(DENSE, 1, None, None),
                                DimensionMetadata(DENSE, 3, None, None))), (2, 4),
     ".dim_metadata[2]", "block size 3 of dimension 1 (block_map[0]) must be a DENSE level"),
    (Sparsity((0,), (), ()), (2,), ".dim_metadata", "0 entries for 1 traversal levels"),
])
def test_sparsity_is_validated_against_the_shape_before_any_read(sparsity, shape, where,
                                                                  message):
    with pytest.raises(ModelFormatError) as info:
        sparsity.densify(np.zeros(2, np.float32), shape, "subgraphs[0].tensors[3].sparsity")
    assert str(info.value).startswith(f"subgraphs[0].tensors[3].sparsity{where}: ")
    assert message in str(info.value)


def test_valid_sparsity_with_blocks_still_densifies():
    """A 2x4 matrix in 1x2 blocks, CSR over block columns: [[1 2 0 0], [0 0 3 4]]."""
    sp = Sparsity((0, 1, 2), (1,), (DimensionMetadata(DENSE, 2, None, None),
                                    _csr([0, 1, 2], [0, 1]),
                                    DimensionMetadata(DENSE, 2, None, None)))
    dense = sp.densify(np.array([1, 2, 3, 4], np.float32), (2, 4))
    np.testing.assert_array_equal(dense, [[1, 2, 0, 0], [0, 0, 3, 4]])


def test_a_model_whose_segments_run_negative_is_refused_at_its_tensor():
    def change(tree):
        for t in tree.model.subgraphs[0].tensors:
            sp = t.sparsity
            if sp is not None:
                for dm in sp.dimMetadata:
                    if dm.format == 1:
                        v = S.Int32VectorT()
                        v.values = np.array([-5 - i for i in range(len(dm.arraySegments.values))][::-1],
                                            np.int32)
                        dm.arraySegmentsType, dm.arraySegments = 1, v
                return
    model = load_model(edited("sparse_conv_float.tflite", change))
    sparse = [t for t in model.subgraphs[0].tensors if t.sparsity is not None][0]
    start = time.perf_counter()
    with pytest.raises(ModelFormatError, match=rf"^subgraphs\[0\]\.tensors\[{sparse.index}\]"
                                               r"\.sparsity\.dim_metadata\[\d\]\.array_segments: "):
        sparse.densified()
    assert time.perf_counter() - start < 1


# -- 3. absent vectors ---------------------------------------------------------------------
def test_absent_operator_vectors_read_as_empty_in_every_column_reader(tmp_path):
    def change(tree):
        for sg in tree.model.subgraphs:
            sg.operators = None
    data = edited("control_flow.tflite", change)
    model = load_model(data)
    for sg in model.subgraphs:
        assert sg.columns.opcode_index.size == 0 and sg.columns.inputs.size == 0
        assert len(sg.operators) == 0
    assert cli("layout", write(tmp_path, data), "--json").returncode == 0
    assert cli("info", write(tmp_path, data), "--json").returncode == 0


def test_absent_tensors_are_refused_with_a_located_message():
    def change(tree):
        tree.model.subgraphs[0].tensors = None
    with pytest.raises(ModelFormatError, match=r"^subgraphs\[0\]\.inputs\[0\]: tensor index 0 "
                                               r"out of range \(there are none\)$"):
        load_model(edited("sine_float.tflite", change))


# -- 4. the memory of inputs ------------------------------------------------------------------
def _with_input(shape, dtype=S.TensorType.FLOAT32, name="sine_float.tflite", extra=None) -> bytes:
    def change(tree):
        t = tree.model.subgraphs[0].tensors[tree.model.subgraphs[0].inputs[0]]
        t.shape, t.shapeSignature, t.type = np.array(shape, np.int32), None, dtype
        if extra:
            extra(tree)
    return edited(name, change)


def test_making_a_large_input_costs_its_own_bytes_not_a_multiple():
    """8M float32 elements (32 MiB): once a float64 draw, its scaling and the cast (about
    five times the input); now the input and a bounded scratch."""
    model = load_model(_with_input([1, 2, 4096, 1024]))
    tracemalloc.start()
    try:
        made = seeded_inputs(model, 0, max_bytes=1 << 30)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    (value,) = made.values()
    assert value.dtype == np.float32 and value.shape == (1, 2, 4096, 1024)
    assert -1 <= value.min() < -0.99 and 0.99 < value.max() <= 1  # uniform in [-1, 1]
    assert peak < value.nbytes + (32 << 20), peak


def test_inputs_together_count_against_the_limit_before_any_is_made():
    from tests.interpreter.singleop import Input, single_op_model
    model = load_model(single_op_model("ADD", [Input((1, 1 << 20)), Input((1, 1 << 20))],
                                       [np.float32]))
    limit = 6 << 20  # each input is 4 MiB: one fits, the two do not
    tracemalloc.start()
    try:
        with pytest.raises(AllocationError) as info:
            seeded_inputs(model, 0, max_bytes=limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # refused before anything was made
    assert str(info.value).startswith("the run's inputs (2, the largest 'in0' (FLOAT32[1, "
                                      "1048576]) of 4,194,304 bytes) would need 8,388,608 "
                                      "bytes, more than the allocation limit of 6,291,456")
    given = {"in0": np.zeros((1, 1 << 20), np.float32)}  # given and seeded count together
    with pytest.raises(AllocationError, match="would need 8,388,608 bytes"):
        complete_inputs(model, given, 0, max_bytes=limit)
    arrays, generated = complete_inputs(model, given, 0, max_bytes=8 << 20)
    assert generated == ["in1"] and arrays["in0"] is not None


def test_run_refuses_a_huge_input_with_the_budget_error_not_numpys(tmp_path):
    """The campaign's model had an input of [1, 2, 160, 1048576] float16 (640 MiB); its
    FULLY_CONNECTED takes FLOAT32 alone, so that file is now refused for its type, as
    LiteRT refuses it (fully_connected.cc:301; type_rules.py).  The same input in FLOAT32
    (1.25 GiB) meets the budget."""
    data = _with_input([1, 2, 160, 1048576], S.TensorType.FLOAT16)
    line = one_error_line(cli("run", write(tmp_path, data), "--max-memory", "256M"))
    assert "Unable to allocate" not in line
    assert "FULLY_CONNECTED v1: FLOAT32 weights with a FLOAT16 input" in line
    data = _with_input([1, 2, 160, 1048576], S.TensorType.FLOAT32)
    line = one_error_line(cli("run", write(tmp_path, data), "--max-memory", "256M"))
    assert "Unable to allocate" not in line
    assert "allocation limit of 268,435,456 bytes" in line and "--max-memory" in line


def test_the_interpreter_refuses_a_huge_input_set_directly():
    interp = Interpreter(load_model(MODELS_DIR / "sine_float.tflite"), max_allocation_bytes=1 << 20)
    with pytest.raises(AllocationError, match="allocation limit of 1,048,576 bytes"):
        interp.set_input(0, np.zeros((1 << 20, 1), np.float32))  # a resize past the limit
