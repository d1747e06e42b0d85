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
