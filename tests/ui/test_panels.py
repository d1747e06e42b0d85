"""The panels against the reader: properties of every operator, tensor figures against numpy,
the model panel's metadata and associated files."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.ui.state import tensor_stats as ts
from tflite_viewer.ui.panels.common import format_value

from .conftest import CORPUS, model_path


def _section(rows, name):
    return [r for r in rows if r.section == name or r.section.startswith(name + " (")]


#: corpus models of many operators whose kinds the rest of the corpus also has: their
#: check is the slow tier's (each takes 4-12 s of selecting every operator)
_LONG_PANELS = {"palm_detection_lite.tflite", "mobilenet_v2_fp16.tflite",
                "ssd_mobilenet_v1.tflite", "mobilenet_v2_dynamic.tflite",
                "mobilenet_v2_float.tflite", "hand_landmark_lite.tflite",
                "face_detection_short_range.tflite",
                "yamnet_audio_classifier_with_metadata.tflite",
                "mobilenet_v1_0.25_224_quant.tflite"}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow)
                                  if p.name in _LONG_PANELS else p for p in CORPUS],
                         ids=[p.name for p in CORPUS])
def test_properties_of_every_operator_match_the_reader(window, path):
    window.open_path(path, wait=True)
    model = window.model
    for sg in model.subgraphs:
        window.show_subgraph(sg.index, wait=True)
        for op in sg.operators:
            window.select_op(op.index, center=False)
            rows = window.properties_panel.rows()
            info = {r.key: r.value for r in _section(rows, "Operator")}
            assert info["name"] == op.name
            assert info["index"] == str(op.index)
            assert info["version"] == str(op.version)
            assert info["builtin code"].startswith(str(op.builtin_code))
            if op.builtin_options:
                opts = {r.key: r.value for r in rows if r.section == f"Options ({op.builtin_options_type})"}
                assert opts == {k: format_value(v) for k, v in op.builtin_options.items()}
            inputs = [r for r in rows if r.section == "Inputs"]
            assert len(inputs) == len(op.inputs)
            for r, t in zip(inputs, op.inputs):
                assert r.link == (f"tensor:{t}" if t >= 0 else None)
            outputs = [r for r in rows if r.section == "Outputs"]
            assert [r.link for r in outputs] == [f"tensor:{t}" for t in op.outputs]
            calls = [r for r in rows if r.section == "Calls"]
            assert {r.key: r.link for r in calls} == {k: f"subgraph:{v}" for k, v in op.called_subgraphs.items()}


def test_custom_options_are_decoded(window):
    window.open_path(model_path("ssd_mobilenet_v1.tflite"), wait=True)
    sg = window.model.subgraphs[0]
    op = next(o for o in sg.operators if o.name == "TFLite_Detection_PostProcess")
    window.select_op(op.index)
    rows = [r for r in window.properties_panel.rows() if r.section.startswith("Custom options")]
    values = {r.key: r.value for r in rows}
    assert values["num_classes"] == "90"
    assert values["max_detections"] == "10"


def test_clicking_an_input_link_selects_the_tensor(window):
    window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    window.select_op(0)
    tree = window.properties_panel.tree
    for i in range(tree.topLevelItemCount()):
        sec = tree.topLevelItem(i)
        if sec.text(0) == "Inputs":
            tree._clicked(sec.child(1))
            break
    t = window.model.subgraphs[0].operators[0].inputs[1]
    assert window.selection == ("tensor", t)
    assert window.tensor_panel.tensor.index == t


def _stats_rows(rows, label):
    return {r.key: r.value for r in rows if r.section == label}


@pytest.mark.parametrize("name", ["mobilenet_v2_int8.tflite", "ssd_mobilenet_v1.tflite",
                                  "mobilenet_v2_fp16.tflite", "sparse_conv_float.tflite"])
def test_tensor_statistics_and_histogram_match_numpy(window, name):
    window.open_path(model_path(name), wait=True)
    sg = window.model.subgraphs[0]
    tensors = [t for t in sg.tensors if t.is_constant and t.num_elements > 1][:6]
    assert tensors
    for t in tensors:
        window.select_tensor(t.index, center=False)
        panel = window.tensor_panel
        values = t.values()
        stats = _stats_rows(panel.rows(), "Statistics (stored values)")
        v = values.astype(np.float64)
        assert stats["count"] == f"{values.size:,}"
        assert stats["min"] == ts.format_number(float(v.min()))
        assert stats["max"] == ts.format_number(float(v.max()))
        assert stats["mean"] == ts.format_number(float(v.mean()))
        assert stats["std"] == ts.format_number(float(v.std()))
        assert stats["distinct"] == f"{np.unique(values).size:,}"
        assert stats["zeros"] == f"{np.count_nonzero(values == 0) * 100 / values.size:.2f} %"
        hist = panel.histogram.histogram
        assert hist.counts.sum() == values.size
        if hist.integer_bins:
            expect = np.bincount(values.reshape(-1).astype(np.int64) - int(values.min()))
            assert np.array_equal(hist.counts, expect)
        else:
            expect, edges = np.histogram(v, bins=hist.counts.size, range=(v.min(), v.max()))
            assert np.array_equal(hist.counts, expect)
        q = t.quantization
        if q is not None and q.has_scale:
            real = _stats_rows(panel.rows(), "Statistics (real values)")
            d = t.dequantized().astype(np.float64)
            assert real["max"] == ts.format_number(float(d.max()))
            panel.source_combo.setCurrentText("Real values")
            assert panel.histogram.histogram.counts.sum() == d.size
            panel.source_combo.setCurrentText("Stored values")


def test_per_channel_table_and_channel_histogram(window):
    window.open_path(model_path("mobilenet_v2_int8.tflite"), wait=True)
    sg = window.model.subgraphs[0]
    t = next(t for t in sg.tensors if t.quantization is not None and t.quantization.is_per_channel
             and t.is_constant and t.rank == 4)
    window.select_tensor(t.index)
    panel = window.tensor_panel
    q = t.quantization
    model = panel.channels
    assert model.rowCount() == q.scale.size
    real = t.dequantized()
    for c in (0, q.scale.size // 2, q.scale.size - 1):
        row = model.rows[c]
        assert row.scale == pytest.approx(float(q.scale[c]))
        assert row.zero_point == int(q.zero_point[c])
        ch = np.take(real, c, axis=q.quantized_dimension)
        assert row.value_min == pytest.approx(float(ch.min()))
        assert row.value_max == pytest.approx(float(ch.max()))
        assert model.data(model.index(c, 1)) == ts.format_number(float(q.scale[c]), 6)
    info = {r.key: r.value for r in panel.rows() if r.section == "Quantization"}
    assert info["per-channel"] == f"{q.scale.size} channels along dimension {q.quantized_dimension}"
    # one channel's histogram
    panel.channel_combo.setCurrentIndex(3)  # channel 2
    raw = np.take(t.values(), 2, axis=q.quantized_dimension)
    assert panel.histogram.histogram.counts.sum() == raw.size
    assert np.array_equal(panel.histogram.histogram.counts,
                          np.bincount(raw.reshape(-1).astype(np.int64) - int(raw.min())))
    assert panel.histogram.marker == (float(q.zero_point[2]), f"zero point {int(q.zero_point[2])}")
    panel.scale_combo.setCurrentText("Log")
    assert panel.histogram.log_scale
    # Properties shows the operator that reads the selected weights.
    reader = window.properties_panel.operator
    assert reader is not None and t.index in reader.inputs


def test_sparsity_rows(window):
    window.open_path(model_path("sparse_conv_float.tflite"), wait=True)
    sg = window.model.subgraphs[0]
    t = next(t for t in sg.tensors if t.sparsity is not None)
    window.select_tensor(t.index)
    rows = {r.key: r.value for r in window.tensor_panel.rows() if r.section.startswith("Sparsity")}
    assert rows["traversal order"] == format_value(list(t.sparsity.traversal_order))
    dims = t.sparsity.dim_metadata
    for i, d in enumerate(dims):
        assert rows[f"dim {i}"].startswith(d.format_name)
    assert rows["density"].startswith(f"{t.data().size / t.num_elements * 100:.2f} %")
    # the values grid shows the densified tensor
    assert np.array_equal(window.tensor_panel.values.array, t.densified())


def test_values_grid_slices_any_axes(window, tmp_path):
    window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    sg = window.model.subgraphs[0]
    t = sg.tensors[sg.operators[0].inputs[1]]  # 16x3x3x3 weights
    window.select_tensor(t.index)
    panel = window.tensor_panel
    values = t.values()
    vm = panel.values
    assert (vm.rowCount(), vm.columnCount()) == values.shape[-2:]
    panel.row_axis.setCurrentIndex(0)
    panel.col_axis.setCurrentIndex(3)
    assert (vm.row_axis, vm.col_axis) == (0, 3)
    assert (vm.rowCount(), vm.columnCount()) == (values.shape[0], values.shape[3])
    spins = panel._index_spins
    assert len(spins) == 2
    spins[0].setValue(2)
    spins[1].setValue(1)
    assert vm.value(5, 2) == values[5, 2, 1, 2]
    assert vm.data(vm.index(5, 2)) == ts.format_number(float(values[5, 2, 1, 2]), 7)
    out = panel.save_npy(tmp_path / "w.npy")
    assert np.array_equal(np.load(out), values)


def test_activation_tensor_has_no_values(window):
    window.open_path(model_path("mobilenet_v2_float.tflite"), wait=True)
    sg = window.model.subgraphs[0]
    t = sg.operators[0].outputs[0]
    window.select_tensor(t)
    panel = window.tensor_panel
    assert panel.histogram.histogram is None
    assert "only when the model runs" in panel.histogram.message
    assert not panel.save_button.isEnabled()
    info = {r.key: r.value for r in panel.rows() if r.section == "Tensor"}
    assert info["kind"] == "activation"
    assert info["shape"] == "[" + ", ".join(map(str, sg.tensors[t].shape)) + "]"


def test_zero_element_constant_shows_as_a_constant(window, tmp_path):
    """An INT32 shape-[0] constant (rightly empty buffer) is a constant in both panels:
    the tensor panel shows its (empty) value, not the activation's "no values" message."""
    from tests.model.test_zero_element_constant import SHAPE_TENSOR, reshape_to_scalar
    path = tmp_path / "reshape_to_scalar.tflite"
    path.write_bytes(reshape_to_scalar())
    window.open_path(path, wait=True)
    window.select_op(0)
    inputs = [r for r in window.properties_panel.rows() if r.section == "Inputs"]
    assert inputs[SHAPE_TENSOR].value.endswith("(constant)")
    assert not inputs[0].value.endswith(")")  # the model input: an activation
    window.select_tensor(SHAPE_TENSOR)
    panel = window.tensor_panel
    info = {r.key: r.value for r in panel.rows() if r.section == "Tensor"}
    assert info["kind"] == "constant"
    assert panel.no_values_message() is None
    assert "only when the model runs" not in (panel.histogram.message or "")
    assert panel.values.array is not None and panel.values.array.shape == (0,)
    assert panel.values_pane.message.text() == ""  # not the "no values in the file" note


def test_model_panel_metadata_and_labels(window):
    window.open_path(model_path("mobilenet_v1_0.25_224_quant.tflite"), wait=True)
    rows = window.model_panel.rows()
    model = window.model
    summary = {r.key: r.value for r in rows if r.section == "Model"}
    assert summary["schema version"] == str(model.version)
    assert summary["parameters"] == f"{model.parameter_count:,}"
    meta = [r for r in rows if r.section.startswith("TFLite metadata")]
    assert any(r.key == "mean" and r.value == "[127.5]" for r in meta), "normalization is shown"
    files = [r for r in rows if r.section == "Associated files"]
    assert [r.key for r in files] == ["labels.txt"]
    first = model.read_associated_file("labels.txt").decode().splitlines()[:3]
    text = window.model_panel.preview.toPlainText()
    assert text.splitlines()[:3] == first
    hist = {r.key: r.value for r in rows if r.section.startswith("Operators")}
    assert hist == {k: str(v) for k, v in model.op_histogram().items()}


def test_signatures_and_conversion_metadata(window):
    window.open_path(model_path("multi_signature.tflite"), wait=True)
    rows = window.model_panel.rows()
    sigs = {r.key: r.link for r in rows if r.section == "Signatures"}
    for sig in window.model.signature_defs:
        assert sigs[sig.key] == f"subgraph:{sig.subgraph_index}"
