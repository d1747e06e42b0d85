"""The Tensor inspector's Compare tab and context menu, in the window with the debugger.

* A Cross-check row click selects the op and shows the row's output tensor in the
  inspector with ours (an independent interpreter run) against LiteRT's (the cross-check's
  dump): every figure of the Compare tab equals numpy on those two arrays.
* "Watch" from the Tensor panel's own context menu pins the tensor: the Watch row's
  statistics equal numpy on the interpreter's tensor.
"""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.inputs import complete_inputs, positional
from tflite_viewer.ui.panels.tensor_comparison import STAT_ROWS
from tflite_viewer.ui.state.tensor_stats import format_number

from .comparison_checks import check_comparison
from .conftest import model_path

TIMEOUT = 10000


def reference_run(window, name: str, float_sums: str = "auto") -> Interpreter:
    """Our interpreter on the seeded inputs the debugger and the cross-check use: its float
    sums as the debugger adds them (``auto``) or as the cross-check against REF does
    (``reference``)."""
    interp = Interpreter(model_path(name), float_sums=float_sums)
    arrays, _ = complete_inputs(window.model, {}, 0)
    interp.invoke(positional(window.model, arrays))
    return interp


def test_cross_check_row_shows_ours_and_litert_in_the_inspector(qtbot, window):
    # a float model whose run differs from LiteRT's reference kernels in the last bits:
    # its LSTM's tanh (numpy's, where LiteRT calls C's tanhf; small_cnn_dilated_float is
    # now bit for bit)
    name = "trained_lstm.tflite"
    assert window.open_path(model_path(name), wait=True)
    dbg = window.debugger
    with qtbot.waitSignal(dbg.crossCheckDone, timeout=120000):
        dbg.crosscheck_action.trigger()
    report = dbg.last_cross_check.report
    ours = reference_run(window, name, float_sums="reference")
    # the row with the largest difference (float: accumulation order differs a little)
    row = max(range(len(report.rows)), key=lambda k: report.rows[k].max_abs or 0.0)
    r = report.rows[row]
    dbg.crosscheck_panel.table.selectRow(row)
    panel = window.tensor_panel
    assert window.selection == ("op", r.op)
    assert panel.tensor is not None and panel.tensor.index == r.tensor
    assert panel.tabs.isTabVisible(panel.compare_tab) and panel.tabs.currentIndex() == panel.compare_tab
    comparison = panel.comparison
    assert comparison.stats.horizontalHeaderItem(0).text() == "ours"
    assert comparison.stats.horizontalHeaderItem(1).text() == "LiteRT"
    a, b = ours.tensor(0, r.tensor), report.litert_tensors[r.tensor]
    np.testing.assert_array_equal(comparison.comparison.a, a)
    np.testing.assert_array_equal(comparison.comparison.b, b)
    assert np.abs(a.astype(np.float64) - b).max() > 0  # a real difference to show
    check_comparison(comparison, a, b)
    # another tensor shown: the comparison goes (it described this one)
    other = next(t for t in range(len(window.model.subgraphs[0].tensors)) if t != r.tensor)
    window.select_tensor(other)
    assert not panel.tabs.isTabVisible(panel.compare_tab) and panel.comparison.comparison is None
    assert not window.reported


def test_watch_from_the_tensor_panels_context_menu(qtbot, window):
    name = "small_cnn_dilated_float.tflite"
    assert window.open_path(model_path(name), wait=True)
    dbg = window.debugger
    sg = window.model.subgraphs[0]
    out = sg.operators[2].outputs[0]
    window.select_tensor(out)
    menu = window.tensor_panel.context_menu()
    watch = [a for a in menu.actions() if a.text().replace("&", "").startswith("Watch")]
    assert watch == [dbg.watch_action]
    watch[0].trigger()
    assert dbg.watch_panel.pinned == [(0, out)]
    assert dbg.watch_panel.row_texts()[0][1] == "not computed"
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_F5)  # to the end
    qtbot.waitUntil(lambda: dbg.last_stop is not None and dbg.last_stop.state == "finished"
                    and not dbg.busy, timeout=TIMEOUT)
    row = dbg.watch_panel.row_texts()[0]
    expect = reference_run(window, name).tensor(0, out).astype(np.float64)
    assert row[1] == "x".join(map(str, expect.shape))
    for col, value in zip((2, 3, 4, 5), (expect.min(), expect.max(), expect.mean(), expect.std())):
        assert float(row[col]) == pytest.approx(value, rel=1e-5, abs=1e-7)
    assert row[6] == "0/0"
    assert not window.reported


def test_the_compare_widget_refuses_nothing_numeric_and_says_when_shapes_differ(qtbot):
    from tflite_viewer.ui.panels.tensor_comparison import TensorComparison
    w = TensorComparison()
    qtbot.addWidget(w)
    a = np.array([1, 2, 3], np.int8)
    b = np.array([[1.5, 2.0]], np.float32)
    w.set_arrays(a, b, ("left", "right"))
    assert w.stat("shape", 2) == "(shapes differ)" and w.stat("max |difference|", 2) == ""
    assert w.error.histogram is None and "shapes" in w.error.message.lower()
    assert w.stat("min", 0) == "1" and w.stat("max", 1) == "2"
    assert w.values.rowCount() == 3 and w.values.row_values(2)[2] is None
    assert len(STAT_ROWS) == w.stats.rowCount()


def test_the_inspector_refreshes_the_selected_tensor_at_every_stop(qtbot, window):
    """The same tensor stays selected while F10 runs its producer: the panel drops "not yet
    computed", and its statistics, histogram and values grid become the interpreter's
    values (no stale rows from before the step, the description left as it was)."""
    name = "small_cnn_dilated_float.tflite"
    assert window.open_path(model_path(name), wait=True)
    dbg = window.debugger
    panel = window.tensor_panel
    out = window.model.subgraphs[0].operators[1].outputs[0]
    window.select_tensor(out)
    described = [r for r in panel.rows() if r.section in ("Tensor", "Connections")]

    def f10():
        before = dbg.last_stop.serial if dbg.last_stop is not None else 0
        window.activateWindow()
        window.view.setFocus()
        qtbot.keyClick(window.view, Qt.Key.Key_F10)
        qtbot.waitUntil(lambda: dbg.last_stop is not None and dbg.last_stop.serial > before
                        and not dbg.busy, timeout=TIMEOUT)

    f10()  # paused before op 0
    assert any(r.section == "Run" and "not yet computed" in r.value for r in panel.rows())
    assert panel.current_histogram_input() is None and panel.values.array is None
    f10()
    f10()  # op 1 has run: its output is computed
    expect = reference_run(window, name).tensor(0, out)
    rows = panel.rows()
    run = {r.key: r.value for r in rows if r.section == "Run"}
    assert "values" not in run  # "not yet computed" went
    # the file stores batch 1 where SPACE_TO_BATCH_ND computes 4: the stop's shape is shown
    stored = tuple(window.model.subgraphs[0].tensors[out].shape)
    assert stored == (1, 18, 18, 8) and expect.shape == (4, 18, 18, 8)
    assert run == {"shape at this stop": "[4, 18, 18, 8]", "elements at this stop": f"{expect.size:,}"}
    stats = {r.key: r.value for r in rows if r.section == "Statistics (stored values)"}
    e = expect.astype(np.float64)
    assert stats["count"] == f"{e.size:,}"
    for key, value in (("min", e.min()), ("max", e.max()), ("mean", e.mean()), ("std", e.std())):
        assert stats[key] == format_number(float(value)), key
    assert [r for r in rows if r.section in ("Tensor", "Connections")] == described
    np.testing.assert_array_equal(panel.current_histogram_input(), expect)
    np.testing.assert_array_equal(panel.values.array, expect)
    assert sum(1 for r in rows if r.section == "Statistics (stored values)" and r.key == "min") == 1
