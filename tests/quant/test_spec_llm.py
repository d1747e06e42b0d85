"""Spec checks on the quantization LLM exports use: a per-row INT8 embedding table is not
a spec error (LiteRT's lookup reads one scale per row), and `BlockwiseQuantization`
details are checked against the tensor (block size, scale tensor type and shape, zero
points), each defect on a model written with it on purpose."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.model import load_model
from tflite_viewer.quant import check_spec

from tests.interpreter.llm_models import (A, Blockwise, OpSpec, PerChannel, W, decoder_model,
                                          write_model)


def _findings(model_bytes, rule=None, severity=None):
    return [f for f in check_spec(load_model(model_bytes))
            if (rule is None or f.rule == rule) and (severity is None or f.severity == severity)]


def _lookup(table: W, extra=()) -> bytes:
    return write_model([A((3,), "INT32"), table, A((3,) + table.values.shape[1:]), *extra],
                       [OpSpec("EMBEDDING_LOOKUP", [0, 1], [2])], [0], [2])


def test_per_row_int8_embedding_is_not_a_spec_error():
    table = W(np.ones((4, 6), np.int8), "INT8", PerChannel([0.1, 0.2, 0.3, 0.4]))
    assert _findings(_lookup(table), severity="error") == []


def test_per_column_int8_embedding_is():
    table = W(np.ones((4, 6), np.int8), "INT8", PerChannel([0.1] * 6, 0, 1))
    hit = _findings(_lookup(table), "per-channel-dimension")
    assert [(f.tensor, f.values["dimension"], f.values["allowed"]) for f in hit] == [(1, 1, 0)]


@pytest.mark.parametrize("flavour", ["int4_blockwise", "dynamic_int8", "weight_only_int8"])
def test_decoder_exports_have_no_spec_error(flavour):
    model, _ = decoder_model(flavour, np.random.default_rng(0))
    assert _findings(model, severity="error") == []


def _blockwise_table(values=None, scales=None, block=32, ttype="INT4", zero_points=None):
    values = np.ones((4, 64), np.int8) if values is None else values
    scales = np.full((4, 2), 0.5, np.float16) if scales is None else scales
    extra = [W(scales)]
    zp = -1
    if zero_points is not None:
        extra.append(W(zero_points))
        zp = 4
    return _lookup(W(values, ttype, Blockwise(3, block, zp)), extra)


def test_good_blockwise_table_has_no_finding():
    assert _findings(_blockwise_table()) == []


@pytest.mark.parametrize("kwargs, severity, words", [
    ({"block": 48}, "error", "block size 48 does not divide"),
    ({"scales": np.ones((4, 2), np.float32)}, "error", "need FLOAT16[4, 2]"),
    ({"scales": np.ones((2, 4), np.float16)}, "error", "need FLOAT16[4, 2]"),
    ({"scales": np.array([[1, -1]] * 4, np.float16)}, "error", "not finite and >= 0"),
    ({"scales": np.array([[1, 0]] * 4, np.float16)}, "warning", "4 block scale(s) of 0"),
    ({"zero_points": np.zeros((4, 3), np.int8)}, "error", "an integer constant [4, 2]"),
    ({"ttype": "INT8"}, "warning", "INT8 blockwise values"),
])
def test_blockwise_defects(kwargs, severity, words):
    hit = _findings(_blockwise_table(**kwargs), "blockwise")
    assert len(hit) == 1 and hit[0].severity == severity and hit[0].tensor == 1, hit
    assert words in hit[0].message


def test_blockwise_scale_index_out_of_range():
    model = write_model([A((3,), "INT32"), W(np.ones((4, 64), np.int8), "INT4", Blockwise(9, 32)),
                         A((3, 64))], [OpSpec("EMBEDDING_LOOKUP", [0, 1], [2])], [0], [2])
    hit = _findings(model, "blockwise")
    assert len(hit) == 1 and "index 9" in hit[0].message


def test_blockwise_dequantized_by_the_reader():
    """The reader's dequantization of a blockwise tensor: value x its block's scale,
    computed by hand."""
    values = np.arange(-8, 8, dtype=np.int8).reshape(1, 16).repeat(2, axis=0)
    scales = np.array([[0.5, 2.0], [1.0, 0.25]], np.float16)
    model = write_model([A((1, 16)), W(values, "INT4", Blockwise(2, 8)), W(scales), A((1, 2))],
                        [OpSpec("FULLY_CONNECTED", [0, 1, -1], [3], "FullyConnectedOptions")],
                        [0], [3])
    t = load_model(model).subgraphs[0].tensors[1]
    expect = values.astype(np.float32) * np.repeat(scales.astype(np.float32), 8, axis=1)
    assert np.array_equal(t.dequantized(), expect)
    assert t.quantization.form == "blockwise"
    assert t.quantization.describe() == "blockwise (block 8, scales in tensor 2)"
