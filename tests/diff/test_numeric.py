"""The numeric comparison: a model against itself is all zero; a float model against its
int8 twin gives, per tensor, the metrics `tflite-viewer quant` computes on the same
inputs; an edited constant makes the models part exactly at the op that reads it."""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tflite_viewer.diff import diff_models
from tflite_viewer.diff.numeric import compare_numbers
from tflite_viewer.edit import ModelDocument, ReplaceTensorData
from tflite_viewer.match import match_models
from tflite_viewer.model import load_model
from tflite_viewer.quant.analysis import analyze

FLOAT = MODELS_DIR / "small_cnn_dilated_float.tflite"
INT8 = MODELS_DIR / "small_cnn_dilated_int8.tflite"


@pytest.mark.parametrize("name", ["small_cnn_dilated_float", "small_cnn_dilated_int8",
                                  "control_flow", "sine_float", "trained_lstm_int8"])
def test_a_model_against_itself_is_all_zero(name):
    m = load_model(MODELS_DIR / f"{name}.tflite")
    result = compare_numbers(match_models(m, m), samples=2, seed=3)
    assert result.tensors, name
    for t in result.tensors:
        assert t.metrics["max_abs_error"] == 0.0, (name, t.name)
        assert t.metrics["mean_squared_error"] == 0.0
        assert t.metrics["relative_error"] == 0.0
        assert not t.parted
    assert result.same and result.first_parting is None


def test_float_vs_int8_metrics_equal_quant_on_the_same_inputs(tmp_path):
    fm, qm = load_model(FLOAT), load_model(INT8)
    shape = tuple(fm.subgraphs[0].tensors[fm.subgraphs[0].inputs[0]].shape)
    name = fm.subgraphs[0].tensors[fm.subgraphs[0].inputs[0]].name
    rng = np.random.default_rng(7)
    npz = tmp_path / "in.npz"
    np.savez(npz, **{name: rng.uniform(-1, 1, (3,) + shape).astype(np.float32)})
    report = analyze(qm, fm, samples=3, inputs=npz)
    numbers = compare_numbers(match_models(fm, qm), samples=3, inputs=npz)
    compared = 0
    for rep in report.compared():
        row = numbers.for_b((rep.subgraph, rep.tensor))
        assert row is not None, rep.name
        assert row.a == (rep.float_subgraph, rep.float_tensor)
        for key, value in rep.metrics.items():
            got = row.metrics[key]
            assert got == pytest.approx(value, rel=1e-12, abs=1e-15) or \
                (value is None and got is None), (rep.name, key, got, value)
        compared += 1
    assert compared >= 10
    # the int8 model differs from the first op on: quantization error everywhere
    assert numbers.first_parting is not None and numbers.first_parting.op_a == 0


def test_an_edited_constant_parts_the_models_at_the_op_that_reads_it():
    fm = load_model(FLOAT)
    sg = fm.subgraphs[0]
    conv = [op for op in sg.operators if op.name == "CONV_2D"][1]   # the second conv
    w = sg.tensors[conv.inputs[1]]
    doc = ModelDocument(fm)
    values = np.array(w.data(), copy=True)
    values.reshape(-1)[0] += 0.5
    doc.apply(ReplaceTensorData(0, w.index, values))
    d = diff_models(fm, doc.model)
    d.numeric = compare_numbers(d.match, samples=1)
    first = d.numeric.first_parting
    assert first is not None and first.op_a == conv.index
    # every tensor computed before that op is equal
    for t in d.numeric.tensors:
        if t.op_a is not None and t.op_a < conv.index:
            assert t.metrics["max_abs_error"] == 0.0, t.name
    assert not d.same


def test_the_numbers_use_the_same_seeded_inputs_on_both_sides():
    """Self-diff with an edit that changes no value (a tensor renamed): the numbers stay
    equal although the names differ (inputs are fed by position of the match)."""
    fm = load_model(FLOAT)
    from tflite_viewer.edit import RenameTensor
    doc = ModelDocument(fm)
    doc.apply(RenameTensor(0, fm.subgraphs[0].inputs[0], "renamed_input"))
    result = compare_numbers(match_models(fm, doc.model), samples=2, seed=11)
    assert result.same and len(result.tensors) >= 10
