"""`Subgraph.prime_views` fills tensor and operator views from the verifier's columns (numpy
reads of the whole file) in place of a flatbuffers call per field: on every corpus model
the primed views say exactly what views read one by one through flatbuffers say."""
from __future__ import annotations

import pytest

from tests.conftest import CORPUS, corpus_ids
from tflite_viewer.model import load_model

TENSOR_FIELDS = ("name", "type", "shape", "shape_signature", "is_variable", "buffer")
OP_FIELDS = ("opcode_index", "inputs", "outputs")


@pytest.mark.parametrize("path", CORPUS, ids=corpus_ids(CORPUS))
def test_primed_views_equal_views_read_field_by_field(path):
    primed, plain = load_model(path), load_model(path)
    for psg, sg in zip(primed.subgraphs, plain.subgraphs):
        psg.prime_views()
        for pt, t in zip(psg.tensors, sg.tensors):
            assert "type" in pt.__dict__  # filled, not read on the way
            assert pt._fb._tab.Pos == t._fb._tab.Pos  # the same table
            for f in TENSOR_FIELDS:
                got, want = getattr(pt, f), getattr(t, f)
                assert got == want and type(got) is type(want), (t.where, f, got, want)
        for pop, op in zip(psg.operators, sg.operators):
            assert pop._fb._tab.Pos == op._fb._tab.Pos
            for f in OP_FIELDS:
                got, want = getattr(pop, f), getattr(op, f)
                assert got == want and type(got) is type(want), (op.where, f, got, want)
                if isinstance(got, tuple):
                    assert all(type(a) is int for a in got)


@pytest.mark.parametrize("path", CORPUS, ids=corpus_ids(CORPUS))
def test_quantization_from_the_columns_equals_the_flatbuffers_read(path):
    """`Tensor.quantization` comes from `indexed_quantizations` (one vectorized read of
    every QuantizationParameters table); each must equal the table read through the
    flatbuffers library, array types and read-only views included."""
    model = load_model(path)
    for sg in model.subgraphs:
        for t in sg.tensors:
            got, want = t.quantization, t._read_quantization()
            assert (got is None) == (want is None), t.where
            if got is None:
                continue
            for f in ("scale", "zero_point", "min", "max"):
                a, b = getattr(got, f), getattr(want, f)
                assert a.dtype == b.dtype and a.shape == b.shape, (t.where, f)
                assert a.tobytes() == b.tobytes(), (t.where, f)  # bit for bit (NaN too)
                assert not (a.size and a.flags.writeable), (t.where, f)
            assert got.quantized_dimension == want.quantized_dimension, t.where
            assert got.details == want.details, t.where


def test_quantization_tables_with_details_are_read_per_tensor():
    from tests.conftest import MODELS_DIR
    from tflite_viewer.model.tensor import indexed_quantizations

    model = load_model(MODELS_DIR / "llm" / "tiny_llama_q4_block32.tflite")
    table = indexed_quantizations(model.index)
    blockwise = [(sg.index, t.index) for sg in model.subgraphs for t in sg.tensors
                 if t.quantization is not None and t.quantization.form == "blockwise"]
    assert blockwise and not any(k in table for k in blockwise)
    assert table  # the tables without details are there (empty ones: None)
