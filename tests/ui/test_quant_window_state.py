"""The Qt-free state behind the Quantization dock's Fix selected and Generation view
(`ui.state.requantize`, `ui.state.generation`), against the models' own files and
hand-computed values."""
from __future__ import annotations

import math

import numpy as np

import pytest

from tests.ui.conftest import model_path
from tflite_viewer.model import load_model
from tflite_viewer.quant import analyze
from tflite_viewer.ui.state import requantize as rq
from tflite_viewer.ui.state.generation import (GREEN, HIGH_DB, LOW_DB, NOT_MEASURED, RED,
                                               YELLOW, heat_image)

NAMES = ["dynamic_wi4b32_afp32", "dynamic_wi8_afp32", "weight_only_wi8_afp32",
         "static_wi8_ai8", "static_wi8_ai16"]


class _Report:
    def __init__(self, form):
        self.forms = [form] if form else []


@pytest.mark.parametrize("form, name", [
    ({"type_name": "INT4", "usage": "dynamic", "block_size": 32}, "dynamic_wi4b32_afp32"),
    ({"type_name": "INT8", "usage": "dynamic", "block_size": None}, "dynamic_wi8_afp32"),
    ({"type_name": "INT8", "usage": "weight-only", "block_size": None}, "weight_only_wi8_afp32"),
    ({"type_name": "INT8", "usage": "static a8w8", "block_size": None}, "static_wi8_ai8"),
    ({"type_name": "INT8", "usage": "static a16w8", "block_size": None}, "static_wi8_ai16"),
    ({"type_name": "INT4", "usage": "dynamic", "block_size": 64}, None),  # not in NAMES
    ({"type_name": "FLOAT16", "usage": "float", "block_size": None}, None),
    (None, None),
])
def test_guess_base_names_the_recipe_of_the_form(form, name):
    assert rq.guess_base(_Report(form), NAMES) == name


def test_guess_base_reads_the_converter_s_models():
    """The forms the analysis reads from the fixtures' files."""
    f = model_path("llm/tiny_llama_f32.tflite")
    q4 = analyze(model_path("llm/tiny_llama_q4_block32.tflite"), float_model=f, samples=1,
                 signature="decode", all_entries=False)
    assert rq.guess_base(q4, NAMES) == "dynamic_wi4b32_afp32"


def test_float_tensors_and_selectors_name_the_producing_float_ops():
    f = model_path("llm/tiny_llama_f32.tflite")
    report = analyze(model_path("llm/tiny_llama_q4_block32.tflite"), float_model=f,
                     samples=1, signature="decode", all_entries=False)
    fm = load_model(f)
    rows = [{"subgraph": t.subgraph, "tensor": t.tensor} for t in report.ranked()[:3]]
    tensors = rq.float_tensors(report, rows)
    selectors = rq.float_selectors(fm, tensors)
    for (s, t), sel in zip(sorted(tensors), selectors):
        sub, _, op = sel.rpartition(":")
        assert t in fm.subgraphs[s].operators[int(op)].outputs and int(sub or 0) == s
    inputs = [{"subgraph": t.subgraph, "tensor": t.tensor} for t in report.tensors
              if t.op is None][:1]
    with pytest.raises(ValueError, match="none of the selected rows"):
        rq.float_tensors(report, inputs)


def test_request_refuses_what_cannot_run(tmp_path):
    f = model_path("llm/tiny_llama_f32.tflite")
    with pytest.raises(ValueError, match="needs the recipe"):
        rq.Request(f, "dynamic_wi8_afp32", rq.OVERRIDE, ((0, 1),), tmp_path / "o.tflite")
    with pytest.raises(ValueError, match="no op selected"):
        rq.Request(f, "dynamic_wi8_afp32", rq.KEEP_FLOAT, (), tmp_path / "o.tflite")


def _colour(db: float) -> tuple[int, ...]:
    return tuple(int(c) for c in heat_image(np.array([[db]]))[0, 0])


def test_heat_image_runs_red_to_green():
    """Hand values: the ends and the middle of the scale, NaN grey, clipped outside."""
    assert _colour(LOW_DB - 10) == _colour(LOW_DB) == RED == (215, 48, 39)
    assert _colour(HIGH_DB + 10) == _colour(HIGH_DB) == GREEN == (26, 152, 80)
    assert _colour((LOW_DB + HIGH_DB) / 2) == YELLOW == (215, 200, 39)
    assert _colour(10.0) == (215, 124, 39)  # a quarter: halfway red to yellow
    assert _colour(math.nan) == NOT_MEASURED
    m = np.array([[-5.0, 0.0, 7.3], [20.0, 40.0, math.nan]])
    img = heat_image(m)
    assert img.shape == (2, 3, 3) and img.dtype == np.uint8
    for (s, c), v in np.ndenumerate(m):
        assert tuple(img[s, c]) == _colour(v), (s, c)
    greens = [_colour(db)[1] for db in range(0, 21, 5)]
    assert greens == sorted(greens)  # red to yellow: green rises


def test_layers_group_ops_by_their_transformer_block():
    """Hand-made: two steps over five ops, named as litert-torch names them: the embedding
    before the blocks, two ops of block 0 (one fused with a block-1 name after ``;;``),
    one of block 1, the head after; a NaN is not measured."""
    from tflite_viewer.ui.state.generation import by_layer
    pre = "m/Qwen3_module"
    names = [f"{pre}/Embedding_tok;1",
             f"{pre}/TransformerBlock_0/attn;3;;{pre}/TransformerBlock_1/attn;4",
             f"{pre}/TransformerBlock_0/ff;7",
             f"{pre}/TransformerBlock_1/ff;9",
             f"{pre};12"]
    m = np.array([[30.0, 20.0, 25.0, np.nan, 40.0],
                  [31.0, 26.0, 12.0, 18.0, np.nan]])
    layers = by_layer(m, names, ["a", "b", "c", "d", "e"])
    assert layers.labels == ["before the blocks", "block 0", "block 1", "after the blocks"]
    np.testing.assert_array_equal(layers.matrix, [[30, 20, np.nan, 40], [31, 12, 18, np.nan]])
    np.testing.assert_array_equal(layers.worst, [[0, 1, -1, 4], [0, 2, 3, -1]])
    # a model whose names say no layer: one column per op
    plain = by_layer(m, ["x", "y", "z", "u", "v"], ["a", "b", "c", "d", "e"])
    assert plain.labels == ["a", "b", "c", "d", "e"]
    np.testing.assert_array_equal(plain.matrix, m)
