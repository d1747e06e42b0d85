"""One model, one state: after model A was used in every dock and overlay (a paused and a
finished run, a watch, a breakpoint, the cross-check with LiteRT, the quantization
analysis, the inspector's Compare tab, Find, the colourings, a target's verdicts),
opening model B, editing A, or reloading A's file leaves nothing of A's state anywhere
in the window.

Each walk fails on any exception that reaches the excepthook (`failing_excepthook`) or the
error reporter, then checks every dock for B's data or its empty state, and every text of
the window (hidden docks included) for A's tensor names.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from PySide6.QtCore import Qt

from tflite_viewer.edit import RemoveOperator, RenameTensor
from tflite_viewer.model import load_model
from tflite_viewer.ui.debugger import breakpoints_dock, callstack_dock, outputs_dock, \
    profile_dock, watch_dock
from tflite_viewer.ui.debugger.crosscheck_dock import NO_ROW, NOT_RUN
from tflite_viewer.ui.state.quant import quant_state
from tflite_viewer.ui.state.targets import targets_state

from .conftest import model_path
from .workspace_checks import failing_excepthook  # noqa: F401 - a fixture
from .workspace_checks import key, naming, tensor_names, wait_stop, window_texts

A = model_path("small_cnn_dilated_int8.tflite")
A_FLOAT = model_path("small_cnn_dilated_float.tflite")
B = model_path("sine_float.tflite")
WATCHED_OP, BREAK_OP = 1, 4


def use_everything(qtbot, window) -> dict:
    """Put A's state into every dock and overlay; returns what was pinned."""
    dbg = window.debugger
    sg = window.model.subgraphs[0]
    for _ in range(2):  # a paused run: call stack, executed ops, state label
        before = dbg.last_stop.serial if dbg.last_stop else 0
        key(qtbot, window, Qt.Key.Key_F10)
        wait_stop(qtbot, dbg, before)
    watched = sg.operators[WATCHED_OP].outputs[0]
    window.select_tensor(watched)
    dbg.watch_selected()
    window.select_op(BREAK_OP)
    key(qtbot, window, Qt.Key.Key_F9)
    assert len(dbg.breakpoint_infos) == 1
    before = dbg.last_stop.serial
    key(qtbot, window, Qt.Key.Key_F5)  # to the breakpoint: hits, snapshots, profile
    stop = wait_stop(qtbot, dbg, before)
    assert stop.reason == "breakpoint" and stop.position == ((0, BREAK_OP),)
    qtbot.waitUntil(lambda: dbg.watch_panel.row_texts()[0][1] != "not computed", timeout=20_000)
    before = stop.serial
    key(qtbot, window, Qt.Key.Key_F5)  # to the end: outputs
    assert wait_stop(qtbot, dbg, before).state == "finished"
    for _ in range(2):  # and paused again after an op, so the session is live at the switch
        before = dbg.last_stop.serial
        key(qtbot, window, Qt.Key.Key_F10)
        wait_stop(qtbot, dbg, before)
    dbg.profile_dock.show()
    dbg.profile_dock.raise_()
    dbg.profile_panel.heat.setChecked(True)  # colour by time
    with qtbot.waitSignal(dbg.crossCheckDone, timeout=120_000):
        dbg.crosscheck_action.trigger()
    dbg.crosscheck_panel.table.selectRow(2)  # its detail pane and the inspector's Compare tab
    window.dock("quantization").show()
    quant = window.panel("quantization")
    with qtbot.waitSignal(quant.reportReady, timeout=60_000,
                          check_params_cb=lambda r: r is not None):
        quant.compare(A_FLOAT, samples=2, fallback=False)
    quant.choose_metric("sqnr_db")
    quant._row_clicked(quant.proxy.index(0, 0))
    window.dock("targets").show()  # XNNPACK's verdicts on the canvas and in Problems
    window.panel("targets").set_target("xnnpack")
    qtbot.waitUntil(lambda: window.panel("targets").result is not None, timeout=20_000)
    window.panel("targets").every.setChecked(True)
    window.find_bar.open_bar()
    window.find_bar.edit.setText("conv2d")
    # every part holds A's state now (so the checks below are not vacuous)
    names = tensor_names(window.model)
    assert naming(dbg.watch_panel.row_texts()[0], names)
    assert naming([dbg.crosscheck_panel.detail.text()], names)
    assert naming([quant.detail.toolTip()], names)
    assert dbg.outputs_panel.texts and dbg.profile_panel.ops.rowCount()
    # one overlay at a time: the last chosen (XNNPACK's verdicts) is the one on the canvas
    assert window.graph_scene._debug_overlay is not None
    assert window.overlay_choice.key == "targets:xnnpack" and window.overlays.item is not None
    assert window.panel("targets").rows()
    return {"watched": watched, "names": names}


def assert_empty_docks(window, another_model: bool = True) -> None:
    """Every dock of the debugger and the analyses shows its empty state (and, for another
    model, nothing is selected; after an edit the selection stays, its comparison goes)."""
    dbg = window.debugger
    assert not dbg.active and dbg.state_label.text() == ""
    assert dbg.callstack_panel.frames() == []
    assert callstack_dock.EMPTY in dbg.callstack_panel.tree.topLevelItem(0).text(0)
    assert dbg.outputs_panel.texts == [] and dbg.outputs_panel.empty.text() == outputs_dock.EMPTY
    assert dbg.profile_panel.ops.rowCount() == dbg.profile_panel.types.rowCount() == 0
    assert not dbg.profile_panel.empty.isHidden()
    assert dbg.profile_panel.empty.text() == profile_dock.EMPTY
    cc = dbg.crosscheck_panel
    assert cc.table.rowCount() == 0 and cc.detail.text() == NO_ROW and cc.check is None
    assert cc.diff_histogram.histogram is None
    quant = window.panel("quantization")
    assert quant.report is None and quant.table_model.rowCount() == 0
    assert quant.overlay_hist.histograms is None and quant.error_hist.histogram is None
    assert not quant.running and not quant.progress.isVisibleTo(quant)
    # an overlay of the old model's numbers shows nothing of them
    if window.overlay_choice.key in ("quant", "time", "error"):
        assert not window.overlays.marks.colours
    overlay = window.graph_scene._debug_overlay
    assert overlay is None or (overlay.current is None and not overlay.executed.any())
    assert not window.tensor_panel.tabs.isTabVisible(window.tensor_panel.compare_tab)
    if another_model:
        assert window.tensor_panel.tensor is None and window.properties_panel.operator is None
    assert_targets_follow(window)


def assert_targets_follow(window) -> None:
    """The Targets dock and its overlay show the open model's report (made again for it)
    or none yet, never the one of the model before."""
    report = targets_state(window.workspace).report
    assert report is None or report.facts.model is window.model
    result = window.panel("targets").result
    assert result is None or result is report.results["xnnpack"]
    shown = {(r.subgraph, r.index, r.op) for r in window.panel("targets").rows()}
    marks = window.overlays.marks.colours if window.overlay_choice.target else {}
    if result is None:
        assert not shown and not marks
    else:
        assert shown == {(o.subgraph, o.index, o.op) for o in result.ops}
        assert set(marks) <= set(range(len(window.model.subgraphs[window.subgraph].operators)))


def test_opening_b_after_using_everything_on_a_leaves_nothing_of_a(qtbot, window,
                                                                   failing_excepthook):
    assert window.open_path(A, wait=True)
    used = use_everything(qtbot, window)
    dbg = window.debugger
    assert window.open_path(B, wait=True)
    qtbot.waitUntil(lambda: window.panel("quantization").findings is not None
                    and quant_state(window.workspace).findings is not None, timeout=20_000)
    qtbot.wait(200)  # late results of A's work (snapshots, progress) would arrive now
    assert window.reported == []
    assert_empty_docks(window)
    assert dbg.watch_panel.pinned == [] and dbg.watch_panel.row_texts() == []
    assert watch_dock.EMPTY in dbg.watch_panel.tree.topLevelItem(0).text(0)
    assert dbg.breakpoint_infos == () and breakpoints_dock.EMPTY in \
        dbg.breakpoints_panel.tree.topLevelItem(0).text(0)
    assert dbg.crosscheck_panel.header.text() == NOT_RUN
    b = load_model(B)
    assert window.model_panel.rows()[0].value == "sine_float.tflite"
    assert window.problems_panel.findings == list(b.findings)
    assert window.history_view.stack() is None or window.history_view.stack().count() == 0
    assert window.find_bar.edit.text() == "conv2d" and window.workspace.find_matches == []
    left = naming(window_texts(window), used["names"] - tensor_names(b))
    assert left == [], f"texts still naming A's tensors: {left[:10]}"
    # B runs: a new session of B, nothing of A's
    before = 0
    key(qtbot, window, Qt.Key.Key_F10)
    stop = wait_stop(qtbot, dbg, before)
    assert stop.position == ((0, 0),) and len(stop.executed[0]) == len(b.subgraphs[0].operators)
    # the picked target's verdicts on B, made for B
    qtbot.waitUntil(lambda: window.panel("targets").result is not None, timeout=20_000)
    assert_targets_follow(window)
    assert window.overlays.item is not None


def test_an_edit_after_using_everything_keeps_only_what_follows_the_model(
        qtbot, window, failing_excepthook, private_copy):
    assert window.open_path(private_copy(A.name), wait=True)
    used = use_everything(qtbot, window)
    dbg = window.debugger
    sg = window.model.subgraphs[0]
    watched = used["watched"]
    old_name = sg.tensors[watched].name
    assert window.apply_edit(RenameTensor(0, watched, "renamed_by_the_test")) is not None
    qtbot.wait(200)
    assert window.reported == []
    # the run, its outputs and profile, the cross-check and the comparison were of the old
    # model: gone, each dock saying so
    assert_empty_docks(window, another_model=False)
    assert "debug session ended" in window.notice.text()
    assert "model changed" in dbg.crosscheck_panel.header.text()
    # the watch followed its tensor under its new name, the breakpoint its operator
    assert dbg.watch_panel.pinned == [(0, watched)]
    assert dbg.watch_panel.row_texts()[0][0] == f"s0 t{watched} renamed_by_the_test"
    assert "follows its tensor" in window.notice.text()
    assert [(i.subgraph, i.op) for i in dbg.breakpoint_infos] == [(0, BREAK_OP)]
    # what the rename did is told (the notice, the status bar, History and Changes); no
    # view of the model shows the old name any more
    told = (window.notice, window.statusBar(), window.history_dock, window.changes_dock)
    left = naming(window_texts(window, exclude=told), {old_name})
    assert left == [], f"texts still naming the old tensor: {left[:10]}"
    # removing the operator a breakpoint is on drops that one, and says so; the other stays
    last = len(window.model.subgraphs[0].operators) - 1  # SOFTMAX: its removal is accepted
    dbg.toggle_breakpoint(0, last)
    assert window.apply_edit(RemoveOperator(0, last)) is not None
    assert [(i.subgraph, i.op) for i in dbg.breakpoint_infos] == [(0, BREAK_OP)]
    assert "dropped" in window.notice.text() and f"op {last} SOFTMAX" in window.notice.text()
    # the edited model runs, breakpoints and all
    key(qtbot, window, Qt.Key.Key_F10)
    stop = wait_stop(qtbot, dbg, 0)
    assert stop.position == ((0, 0),)


def test_reloading_a_file_that_became_b_leaves_nothing_of_a(qtbot, window, failing_excepthook,
                                                            tmp_path):
    path = tmp_path / "model.tflite"
    shutil.copyfile(A, path)
    assert window.open_path(path, wait=True)
    used = use_everything(qtbot, window)
    shutil.copyfile(B, path)  # the file changed on disk
    assert window.reload(wait=True)
    qtbot.wait(200)
    assert window.reported == []
    assert_empty_docks(window)
    dbg = window.debugger
    # A's watch and breakpoint name tensors and operators B does not have: dropped, said
    assert dbg.watch_panel.pinned == [] and dbg.breakpoint_infos == ()
    assert "dropped" in window.notice.text()
    b = load_model(B)
    left = naming(window_texts(window, exclude=(window.notice,)), used["names"] - tensor_names(b))
    assert left == [], f"texts still naming A's tensors: {left[:10]}"


def test_reloading_an_unchanged_file_keeps_the_watches_and_breakpoints(qtbot, window,
                                                                       failing_excepthook):
    assert window.open_path(A, wait=True)
    dbg = window.debugger
    sg = window.model.subgraphs[0]
    watched = sg.operators[WATCHED_OP].outputs[0]
    dbg.watch(0, watched)
    dbg.toggle_breakpoint(0, BREAK_OP)
    key(qtbot, window, Qt.Key.Key_F5)
    wait_stop(qtbot, dbg, 0)
    assert window.reload(wait=True)
    assert not dbg.active and window.reported == []
    assert dbg.watch_panel.pinned == [(0, watched)]
    assert [(i.subgraph, i.op, i.hits) for i in dbg.breakpoint_infos] == [(0, BREAK_OP, 0)]
    stop = None
    key(qtbot, window, Qt.Key.Key_F5)
    stop = wait_stop(qtbot, dbg, 0)
    assert stop.reason == "breakpoint" and stop.position == ((0, BREAK_OP),)
    np.testing.assert_equal(dbg.watch_panel.row_texts()[0][0], f"s0 t{watched} {sg.tensors[watched].name}")


@pytest.mark.parametrize("first, second", [("control_flow.tflite", "lstm_float.tflite"),
                                           ("mobilenet_v2_int8.tflite", "yamnet_audio_classifier_with_metadata.tflite")])
def test_opening_another_model_after_a_debug_run_reports_nothing(qtbot, window, failing_excepthook,
                                                                first, second):
    """Issue 25 item 1: F10 twice then Ctrl+O used to raise "operands could not be
    broadcast together" from the old stop painted on the new scene."""
    assert window.open_path(model_path(first), wait=True)
    dbg = window.debugger
    for _ in range(2):
        before = dbg.last_stop.serial if dbg.last_stop else 0
        key(qtbot, window, Qt.Key.Key_F10)
        wait_stop(qtbot, dbg, before)
    assert window.open_path(model_path(second), wait=True)
    qtbot.wait(100)
    assert window.reported == [] and not dbg.active
    assert dbg.state_label.text() == "" and dbg.callstack_panel.frames() == []
