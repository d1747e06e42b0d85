"""The Qt-free helpers under the widgets: statistics, histograms, search, scene data, values."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from benchmarks.synthetic_graphs import residual_dag
from tflite_viewer.model import load_model
from tflite_viewer.ui.state import tensor_stats as ts
from tflite_viewer.ui.state.scene_data import TextMeasure, build_scene_data, constants_text
from tflite_viewer.ui.state.search import find

from .conftest import CORPUS, model_path


def test_statistics_match_numpy():
    rng = np.random.default_rng(1)
    for values in (rng.normal(size=(7, 5)).astype(np.float32),
                   rng.integers(-128, 128, size=1000).astype(np.int8),
                   np.array([0, 0, 1, 2], dtype=np.uint8)):
        s = ts.statistics(values)
        v = values.astype(np.float64)
        assert s.count == values.size
        assert s.min == v.min() and s.max == v.max()
        assert s.mean == pytest.approx(v.mean()) and s.std == pytest.approx(v.std())
        assert s.zeros_percent == pytest.approx(np.count_nonzero(values == 0) * 100 / values.size)
        assert s.distinct == np.unique(values).size


def test_statistics_count_distinct_values_up_to_the_limit_given():
    values = np.arange(12, dtype=np.int16) % 5
    assert ts.statistics(values, distinct_limit=12).distinct == 5
    assert ts.statistics(values, distinct_limit=11).distinct is None  # past it: not sorted
    assert ts.statistics(values, distinct_limit=11).max == 4  # the rest still computed


def test_statistics_skip_nan_and_inf():
    s = ts.statistics(np.array([1.0, np.nan, np.inf, 3.0], dtype=np.float32))
    assert (s.nan, s.inf, s.min, s.max, s.mean) == (1, 1, 1.0, 3.0, 2.0)


def test_integer_histogram_has_one_bin_per_value():
    values = np.array([-3, -3, 0, 2, 2, 2], dtype=np.int8)
    h = ts.histogram(values)
    assert h.integer_bins
    assert h.counts.tolist() == [2, 0, 0, 1, 0, 3]
    assert h.edges[0] == -3.5 and h.edges[-1] == 2.5


def test_float_histogram_matches_numpy():
    values = np.random.default_rng(2).normal(size=5000)
    h = ts.histogram(values, bins=40)
    counts, edges = np.histogram(values, bins=40, range=(values.min(), values.max()))
    assert np.array_equal(h.counts, counts) and np.allclose(h.edges, edges)
    wide = np.arange(0, 100_000, 7, dtype=np.int32)
    assert not ts.histogram(wide).integer_bins and ts.histogram(wide).counts.sum() == wide.size


def test_per_channel_rows_match_the_quantization():
    model = load_model(model_path("mobilenet_v2_int8.tflite"))
    t = next(t for t in model.subgraphs[0].tensors
             if t.quantization is not None and t.quantization.is_per_channel and t.is_constant)
    rows = ts.per_channel_rows(t)
    q = t.quantization
    assert len(rows) == q.scale.size
    real = t.dequantized()
    for r in rows:
        assert r.scale == pytest.approx(float(q.scale[r.channel]))
        assert r.real_min == pytest.approx((-128 - int(q.zero_point[r.channel])) * float(q.scale[r.channel]))
        ch = np.take(real, r.channel, axis=q.quantized_dimension)
        assert (r.value_min, r.value_max) == (pytest.approx(float(ch.min())), pytest.approx(float(ch.max())))


def test_search_queries():
    model = load_model(model_path("ssd_mobilenet_v1.tflite"))
    sg = model.subgraphs[0]
    convs = [m.index for m in find(model, 0, "conv_2d") if m.kind == "op"]
    assert convs == [op.index for op in sg.operators if op.name == "CONV_2D"]  # whole names
    convs = [m.index for m in find(model, 0, "conv_2d", mode="contains") if m.kind == "op"]
    assert convs == [op.index for op in sg.operators if "CONV_2D" in op.name]
    assert [(m.kind, m.index) for m in find(model, 0, "op:3")] == [("op", 3)]
    assert [(m.kind, m.index) for m in find(model, 0, "#3")] == [("op", 3)]
    assert [(m.kind, m.index) for m in find(model, 0, "tensor:5")] == [("tensor", 5)]
    assert find(model, 0, "op:9999") == [] and find(model, 0, "  ") == []
    custom = find(model, 0, "postprocess", mode="contains")
    assert custom and custom[0].kind == "op"
    assert find(model, 0, "tflite_detection_postprocess")[0] == custom[0]


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_scene_data_covers_every_node_and_edge(path):
    model = load_model(path)
    for i in range(len(model.subgraphs)):
        sd = build_scene_data(model, i, TextMeasure())
        assert len(sd.rects) == sd.graph.number_of_nodes()
        assert len(sd.edge_points) == sd.graph.number_of_edges()
        assert all(len(p) >= 2 for p in sd.edge_points)
        for row, (x, y, w, h) in enumerate(sd.rects.tolist()):
            assert w > 0 and h > 0
        for row in range(len(sd.labels)):
            x, y, w, h = sd.rects[row].tolist()
            hit = sd.node_at(x + w / 2, y + h / 2)
            assert hit == row
        # every edge label names a tensor that is drawn
        assert {t for *_, t in sd.edge_labels} <= set(sd.tensor_edges)


def test_constants_text():
    is_const = np.array([False, True, True])
    shapes = {1: (24, 3, 3, 3), 2: (24,)}.__getitem__
    assert constants_text("CONV_2D", (0, 1, 2), is_const, shapes) == "W 24x3x3x3, b 24"
    assert constants_text("ADD", (0, 1), is_const, shapes) == "#1 24x3x3x3"


def test_synthetic_graph_scene_data_without_a_model():
    sd = build_scene_data(None, graph=residual_dag(300))
    assert len([lab for lab in sd.labels if lab.kind == "op"]) == 300
    assert sd.edge_at(*sd.edge_points[0][0], tolerance=1.0) is not None


def test_subgraph_index_by_index_name_or_signature():
    model = load_model(model_path("multi_signature.tflite"))
    for sig in model.signature_defs:
        assert model.subgraph_index(sig.key) == sig.subgraph_index
    assert model.subgraph_index("1") == 1 and model.subgraph_index(None) == 0
    with pytest.raises(KeyError):
        model.subgraph_index("nope")
    with pytest.raises(KeyError):
        model.subgraph_index(5)


def test_values_model_slices(qtbot):
    from tflite_viewer.ui.values_model import ValuesModel

    a = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    m = ValuesModel()
    m.set_array(a)
    assert (m.rowCount(), m.columnCount()) == (4, 5)
    m.set_view(1, 0, [1, 0, 2, 3])
    assert (m.rowCount(), m.columnCount()) == (3, 2)
    assert m.value(2, 1) == a[1, 2, 2, 3]
    m.set_array(np.float32(3.5))
    assert (m.rowCount(), m.columnCount()) == (1, 1) and m.value(0, 0) == 3.5
    m.set_array(np.arange(7))
    assert (m.rowCount(), m.columnCount()) == (7, 1) and m.value(6, 0) == 6


def test_many_void_qt_calls_do_not_free_none(qtbot):
    """PySide6 6.12.0 under-counts None on every void call (fatal on Python 3.11); the
    dependency pin keeps that build out, and this catches it if it comes back."""
    from PySide6.QtWidgets import QLabel

    label = QLabel()
    qtbot.addWidget(label)
    before = sys.getrefcount(None)
    for _ in range(20_000):
        label.setText("x")
    assert sys.getrefcount(None) >= before - 100


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_columnar_op_histogram_matches_the_reader(path):
    from tflite_viewer.ui.state.summary import summarize

    model = load_model(path)
    s = summarize(model)
    assert s.op_histogram == model.op_histogram()
    assert s.n_ops == sum(len(sg.operators) for sg in model.subgraphs)
    assert (s.weights_nbytes, s.parameter_count) == (model.weights_nbytes, model.parameter_count)
