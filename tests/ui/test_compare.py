"""File > Compare With: B's canvas beside A's, colours, the Differences dock, synchronized
selection, the Compare tab of a matched tensor pair, and the comparison following A's
edits, A's reload and B's file changing."""
from __future__ import annotations

import shutil

import numpy as np

from tests.ui.conftest import model_path
from tflite_viewer.edit import ModelDocument, RemoveOperator, ReplaceTensorData
from tflite_viewer.model import load_model
from tflite_viewer.ui.state import diff as cmp

FLOAT = model_path("mobilenet_v2_float.tflite")
INT8 = model_path("mobilenet_v2_int8.tflite")
SMALL = model_path("small_cnn_dilated_float.tflite")


def _compare(window, qtbot, path):
    with qtbot.waitSignal(window.compare.computed, timeout=120_000):
        window.compare.compare_with(path)
    assert window.workspace.comparison.diff is not None, window.workspace.comparison.status


def test_compare_with_shows_both_canvases_the_dock_and_colours(window, qtbot):
    assert window.open_path(FLOAT, wait=True)
    assert not window.compare.pane.isVisible()
    _compare(window, qtbot, INT8)
    ctl = window.compare
    assert ctl.pane.isVisible() and ctl.pane.scene.data is not None
    assert len(ctl.pane.scene.data.op_node) == 65
    # every op of mobilenet_v2 changed (versions and quantization), none added or removed
    assert ctl.a_item is not None and set(ctl.a_item.marks.values()) == {cmp.CHANGED}
    assert len(ctl.a_item.marks) == 65 and len(ctl.b_item.marks) == 65
    assert ctl.a_legend.isVisible() and ctl.pane.legend.isVisible()
    panel = window.differences_panel
    assert window.differences_dock.isVisible()
    assert panel.row_count() == len(window.workspace.comparison.diff.differences) > 100
    assert "mobilenet_v2_int8" in panel.summary.text()


def test_selection_follows_on_both_sides(window, qtbot):
    assert window.open_path(FLOAT, wait=True)
    _compare(window, qtbot, INT8)
    ctl = window.compare
    window.select_op(10)
    hl = ctl.pane.scene.highlight
    b_data = ctl.pane.scene.data
    assert hl._selected_nodes == [b_data.op_node[10]]   # op 10 is op 10 in the int8 twin
    # a click on B's op 20 selects A's op 20
    ctl._b_node_clicked(b_data.op_node[20])
    assert window.selection == ("op", 20)
    assert hl._selected_nodes == [b_data.op_node[20]]


def test_a_click_in_the_dock_goes_to_the_item(window, qtbot, tmp_path):
    a = tmp_path / "a.tflite"
    shutil.copyfile(SMALL, a)
    doc = ModelDocument(load_model(SMALL))
    sg = doc.model.subgraphs[0]
    soft = next(o.index for o in sg.operators if o.name == "SOFTMAX")
    conv = next(o for o in sg.operators if o.name == "CONV_2D")
    values = np.array(sg.tensors[conv.inputs[1]].data(), copy=True)
    values.reshape(-1)[3] += 1.0
    doc.apply(ReplaceTensorData(0, conv.inputs[1], values))
    doc.apply(RemoveOperator(0, soft))
    b = tmp_path / "b.tflite"
    b.write_bytes(doc.to_bytes())
    assert window.open_path(a, wait=True)
    _compare(window, qtbot, b)
    ctl, panel = window.compare, window.differences_panel
    rows = cmp.rows(window.workspace.comparison.diff)
    removed = next(i for i, r in enumerate(rows) if r.difference.change == "removed")
    panel.table.selectRow(removed)
    assert window.selection == ("op", soft)
    assert ctl.a_item.marks[window.graph_scene.data.op_node[soft]] == cmp.REMOVED
    values_row = next(i for i, r in enumerate(rows) if r.difference.field == "values")
    panel.table.selectRow(values_row)
    assert window.selection == ("tensor", conv.inputs[1])
    # the matched constant pair in the Compare tab: A's values, B's, their difference
    tp = window.tensor_panel
    assert tp.tabs.isTabVisible(tp.compare_tab)
    assert tp.tabs.currentIndex() == tp.compare_tab


def test_an_edit_of_a_and_bs_file_changing_compare_again(window, qtbot, tmp_path):
    a = tmp_path / "a.tflite"
    b = tmp_path / "b.tflite"
    shutil.copyfile(SMALL, a)
    shutil.copyfile(SMALL, b)
    assert window.open_path(a, wait=True)
    _compare(window, qtbot, b)
    assert window.workspace.comparison.diff.same
    assert window.differences_panel.row_count() == 0
    # edit A: compared again, the renamed tensor shows up
    from tflite_viewer.edit import RenameTensor
    with qtbot.waitSignal(window.compare.computed, timeout=120_000):
        window.apply_edit(RenameTensor(0, 0, "renamed_in_a"))
    diff = window.workspace.comparison.diff
    assert [d.field for d in diff.differences] == ["name"]
    # B changes on disk: read again
    doc = ModelDocument(load_model(SMALL))
    doc.apply(RenameTensor(0, 1, "renamed_in_b"))
    with qtbot.waitSignal(window.compare.computed, timeout=120_000):
        b.write_bytes(doc.to_bytes())
    diff = window.workspace.comparison.diff
    assert sorted(d.a.index for d in diff.differences) == [0, 1]


def test_opening_another_model_ends_the_comparison_and_reload_keeps_it(window, qtbot):
    assert not window.stop_compare_action.isEnabled()  # nothing to stop yet
    assert window.open_path(SMALL, wait=True)
    assert not window.stop_compare_action.isEnabled()
    _compare(window, qtbot, SMALL)
    assert window.stop_compare_action.isEnabled()
    with qtbot.waitSignal(window.compare.computed, timeout=120_000):
        window.reload()
    assert window.workspace.comparison.active and window.compare.pane.isVisible()
    assert window.open_path(FLOAT, wait=True)
    assert not window.workspace.comparison.active
    assert not window.compare.pane.isVisible() and not window.stop_compare_action.isEnabled()
    assert window.differences_panel.row_count() == 0


def test_run_both_names_where_the_numbers_part(window, qtbot):
    assert window.open_path(model_path("small_cnn_dilated_float.tflite"), wait=True)
    _compare(window, qtbot, model_path("small_cnn_dilated_int8.tflite"))
    with qtbot.waitSignal(window.compare.computed, timeout=120_000):
        window.differences_panel.numbers_button.click()
    numeric = window.workspace.comparison.numeric
    assert numeric is not None and numeric.first_parting is not None
    assert "first op where they part" in window.differences_panel.summary.text()
    # an activation pair now has values for the Compare tab
    out = numeric.first_parting.a
    window.select_tensor(out[1])
    tp = window.tensor_panel
    assert tp.tabs.isTabVisible(tp.compare_tab)
