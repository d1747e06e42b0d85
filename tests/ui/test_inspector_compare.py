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
from tflite_viewer.ui.panels.tensor_comparison import LARGEST_FIRST, STAT_ROWS
from tflite_viewer.ui.tensor_stats import format_number

from .conftest import model_path

TIMEOUT = 10000


def reference_run(window, name: str) -> Interpreter:
    """Our interpreter on the seeded inputs the debugger and the cross-check use."""
    interp = Interpreter(model_path(name))
    arrays, _ = complete_inputs(window.model, {}, 0)
    interp.invoke(positional(window.model, arrays))
    return interp


def check_comparison(comparison, a: np.ndarray, b: np.ndarray) -> None:
    """The Compare widget's statistics, histograms and values grid against numpy."""
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    d = fa - fb
    for col, x in enumerate((fa, fb, d)):
        assert comparison.stat("count", col) == f"{x.size:,}"
        for row, value in (("min", x.min()), ("max", x.max()), ("mean", x.mean()), ("std", x.std())):
            assert comparison.stat(row, col) == format_number(float(value)), (row, col)
    assert comparison.stat("shape", 0) == "[" + ", ".join(map(str, a.shape)) + "]"
    assert comparison.stat("max |difference|", 2) == format_number(float(np.abs(d).max()))
    assert comparison.stat("elements differing", 2) == \
        f"{int(np.count_nonzero(fa != fb)):,} of {a.size:,}"
    # both histograms on shared bins over the range of both; the error's over its own
    lo, hi = min(fa.min(), fb.min()), max(fa.max(), fb.max())
    ha, hb = comparison.overlay.histograms
    np.testing.assert_array_equal(ha.counts, np.histogram(fa, 64, (lo, hi))[0])
    np.testing.assert_array_equal(hb.counts, np.histogram(fb, 64, (lo, hi))[0])
    err = comparison.error.histogram
    assert int(err.counts.sum()) == d.size
    if d.min() < d.max():
        np.testing.assert_array_equal(err.counts, np.histogram(d, 64, (d.min(), d.max()))[0])
    # the values grid, largest difference first: both values and the difference
    comparison.order.setCurrentText(LARGEST_FIRST)
    model = comparison.values
    assert model.rowCount() == a.size
    k = int(np.argmax(np.abs(d).reshape(-1)))
    index, va, vb, vd = model.row_values(0)
    assert index == tuple(int(i) for i in np.unravel_index(k, a.shape))
    assert va == a.reshape(-1)[k] and vb == b.reshape(-1)[k] and vd == d.reshape(-1)[k]
    cells = [model.data(model.index(0, c)) for c in range(4)]
    assert cells[1:] == [format_number(float(v), model.digits) for v in (va, vb, vd)]


def test_cross_check_row_shows_ours_and_litert_in_the_inspector(qtbot, window):
    name = "small_cnn_dilated_float.tflite"
    assert window.open_path(model_path(name), wait=True)
    dbg = window.debugger
    with qtbot.waitSignal(dbg.crossCheckDone, timeout=120000):
        dbg.crosscheck_action.trigger()
    report = dbg.last_cross_check.report
    ours = reference_run(window, name)
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
