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
from tflite_viewer.ui.state.overlays import DIFF_COLOURS

FLOAT = model_path("mobilenet_v2_float.tflite")
INT8 = model_path("mobilenet_v2_int8.tflite")
SMALL = model_path("small_cnn_dilated_float.tflite")


def _compare(window, qtbot, path):
    with qtbot.waitSignal(window.compare.computed, timeout=120_000):
        window.compare.compare_with(path)
    assert window.compare.state.diff is not None, window.compare.state.status


def test_compare_with_shows_both_canvases_the_dock_and_colours(window, qtbot):
    assert window.open_path(FLOAT, wait=True)
    assert not window.compare.pane.widget.isVisible()
    _compare(window, qtbot, INT8)
    ctl = window.compare
    assert ctl.pane.widget.isVisible() and ctl.pane.scene.data is not None
    assert len(ctl.pane.scene.data.op_node) == 65
    # the canvases show the differences first: every op of mobilenet_v2 changed (versions
    # and quantization), none added or removed, on A and on B, each with its legend strip
    assert window.overlay_selector.currentData() == "diff"
    a_marks, b_marks = window.overlays.marks.colours, ctl.b_overlays.marks.colours
    assert set(a_marks.values()) == {DIFF_COLOURS[cmp.CHANGED]}
    assert len(a_marks) == 65 and len(b_marks) == 65
    assert window.overlays.item is not None and ctl.b_overlays.item is not None
    assert window.canvas.strip.isVisible() and ctl.pane.strip.isVisible()
    assert "changed: 65 ops" in window.canvas.strip.text()
    panel = window.panel("differences")
    assert window.dock("differences").isVisible()
    assert panel.row_count() == len(window.compare.state.diff.differences) > 100
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
    ctl, panel = window.compare, window.panel("differences")
    rows = cmp.rows(window.compare.state.diff)
    removed = next(i for i, r in enumerate(rows) if r.difference.change == "removed")
    panel.table.selectRow(removed)
    assert window.selection == ("op", soft)
    assert window.overlays.marks.colours[soft] == DIFF_COLOURS[cmp.REMOVED]
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
    assert window.compare.state.diff.same
    assert window.panel("differences").row_count() == 0
    # edit A: compared again, the renamed tensor shows up
    from tflite_viewer.edit import RenameTensor
    with qtbot.waitSignal(window.compare.computed, timeout=120_000):
        window.apply_edit(RenameTensor(0, 0, "renamed_in_a"))
    diff = window.compare.state.diff
    assert [d.field for d in diff.differences] == ["name"]
    # B changes on disk: read again
    doc = ModelDocument(load_model(SMALL))
    doc.apply(RenameTensor(0, 1, "renamed_in_b"))
    with qtbot.waitSignal(window.compare.computed, timeout=120_000):
        b.write_bytes(doc.to_bytes())
    diff = window.compare.state.diff
    assert sorted(d.a.index for d in diff.differences) == [0, 1]


def test_opening_another_model_ends_the_comparison_and_reload_keeps_it(window, qtbot):
    assert not window.actions.stop_compare.isEnabled()  # nothing to stop yet
    assert window.open_path(SMALL, wait=True)
    assert not window.actions.stop_compare.isEnabled()
    _compare(window, qtbot, SMALL)
    assert window.actions.stop_compare.isEnabled()
    with qtbot.waitSignal(window.compare.computed, timeout=120_000):
        window.reload()
    assert window.compare.state.active and window.compare.pane.widget.isVisible()
    assert window.open_path(FLOAT, wait=True)
    assert not window.compare.state.active
    assert not window.compare.pane.widget.isVisible() and not window.actions.stop_compare.isEnabled()
    assert window.panel("differences").row_count() == 0


def test_run_both_names_where_the_numbers_part(window, qtbot):
    assert window.open_path(model_path("small_cnn_dilated_float.tflite"), wait=True)
    _compare(window, qtbot, model_path("small_cnn_dilated_int8.tflite"))
    with qtbot.waitSignal(window.compare.computed, timeout=120_000):
        window.panel("differences").numbers_button.click()
    numeric = window.compare.state.numeric
    assert numeric is not None and numeric.first_parting is not None
    assert "first op where they part" in window.panel("differences").summary.text()
    # an activation pair now has values for the Compare tab
    out = numeric.first_parting.a
    window.select_tensor(out[1])
    tp = window.tensor_panel
    assert tp.tabs.isTabVisible(tp.compare_tab)
