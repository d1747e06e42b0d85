"""A Quantization table row in the Tensor inspector: float vs dequantized side by side,
both histograms overlaid and the error histogram, equal to the API's values and numpy."""
from __future__ import annotations

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"

import numpy as np  # noqa: E402

from tflite_viewer.quant import analyze  # noqa: E402

from ..ui.comparison_checks import check_comparison  # noqa: E402
from .helpers import SMALL_FLOAT, SMALL_INT8  # noqa: E402


def test_row_click_shows_float_vs_dequantized_in_the_inspector(window, qtbot):
    dock = window.panel("quantization")
    assert window.open_path(SMALL_INT8, wait=True)
    with qtbot.waitSignal(dock.reportReady, timeout=60_000, check_params_cb=lambda r: r is not None):
        dock.compare(SMALL_FLOAT, samples=1, fallback=False)
    api = analyze(SMALL_INT8, SMALL_FLOAT, samples=1, per_layer_fallback=False, keep_values=True)
    worst = api.ranked()[0]
    row = next(k for k in range(dock.proxy.rowCount())
               if dock.row_at(dock.proxy.index(k, 0))["tensor"] == worst.tensor)
    dock._row_clicked(dock.proxy.index(row, 0))
    panel = window.tensor_panel
    assert window.selection == ("tensor", worst.tensor) and panel.tensor.index == worst.tensor
    assert panel.tabs.currentIndex() == panel.compare_tab
    c = panel.comparison
    assert (c.stats.horizontalHeaderItem(0).text(), c.stats.horizontalHeaderItem(1).text()) == \
        ("dequantized", "float")
    flt, deq = api.tensor(worst.tensor).sample_values
    np.testing.assert_array_equal(c.comparison.a, deq)
    np.testing.assert_array_equal(c.comparison.b, flt)
    assert np.abs(deq.astype(np.float64) - flt).max() > 0  # a real error to show
    check_comparison(c, deq, flt)
    assert not window.reported
