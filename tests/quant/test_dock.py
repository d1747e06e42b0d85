"""The Quantization dock end to end in the window (pytest-qt) on the small pair: spec
findings in the dock and in Problems, the comparison on a worker with progress, the table
against the API, row -> canvas selection and histograms, the overlay, CSV, Cancel."""
from __future__ import annotations

import csv
import math
import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from tflite_viewer.quant import analyze  # noqa: E402
from tflite_viewer.quant.report import rows as report_rows  # noqa: E402

from .helpers import SMALL_FLOAT, SMALL_INT8, edited  # noqa: E402


def _run(qtbot, dock, samples=2, fallback=True):
    with qtbot.waitSignal(dock.reportReady, timeout=60_000, check_params_cb=lambda r: r is not None):
        dock.compare(SMALL_FLOAT, samples=samples, fallback=fallback)


def test_dock_end_to_end(window, qtbot, tmp_path):
    dock = window.panel("quantization")
    with qtbot.waitSignal(dock.findingsChanged, timeout=20_000):
        assert window.open_path(SMALL_INT8, wait=True)
    assert dock.findings == [] and dock.findings_tree.topLevelItemCount() == 1  # its empty state
    assert dock.findings_tree.topLevelItem(0).text(0) == "No spec findings"
    seen = []
    dock._progress.changed.connect(lambda d, t, m: seen.append((d, t)))
    _run(qtbot, dock)
    assert seen and seen[-1][0] == seen[-1][1]  # progress reached the end
    assert not dock.progress.isVisible() and dock.compare_button.isEnabled()
    # the table is the API's report
    api = analyze(SMALL_INT8, SMALL_FLOAT, samples=2, per_layer_fallback=True, keep_values=True)
    expect = report_rows(api)
    model = dock.table_model
    assert [r["tensor"] for r in model.rows] == [r["tensor"] for r in expect]
    for got, want in zip(model.rows, expect):
        for key in ("sqnr_db", "cosine", "rmse_scale", "max_abs_error", "median_diff_ratio",
                    "fallback_gain_db", "layer_sqnr_db"):
            if want[key] is None:
                assert got[key] is None
            else:
                assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-15)
    # shown text equals the rows; sorting by SQNR puts the worst first
    from tflite_viewer.ui.panels.quant_table import COLUMN_KEYS
    col = COLUMN_KEYS.index("sqnr_db")
    from PySide6.QtCore import Qt
    dock.table.sortByColumn(col, Qt.SortOrder.AscendingOrder)
    first = dock.row_at(dock.proxy.index(0, 0))
    assert first["tensor"] == api.ranked()[0].tensor
    # clicking a row selects the tensor on the canvas and draws the histograms
    dock._row_clicked(dock.proxy.index(0, 0))
    assert window.selection == ("tensor", first["tensor"])
    assert dock.overlay_hist.histograms is not None
    f, q = api.tensor(first["tensor"]).sample_values
    assert int(dock.overlay_hist.histograms[1].counts.sum()) == f.size == int(dock.overlay_hist.histograms[0].counts.sum())
    assert int(dock.error_hist.histogram.counts.sum()) == f.size
    # the overlay colours every measured op, worst (lowest SQNR) reddest; its legend sits
    # in the strip under the canvas
    from tflite_viewer.ui.state.overlays import QUALITY, ramp
    dock.choose_metric("sqnr_db")
    ov, strip = window.overlays, window.canvas.strip
    assert window.overlay_selector.currentData() == "quant"
    assert ov.item is not None and ov.item.scene() is window.graph_scene
    assert strip.isVisible() and "sqnr_db" in strip.legend.title
    assert not strip.grab().isNull() and not window.view.grab().isNull()  # both paint
    reddest = [k for k, c in ov.marks.colours.items() if c == ramp(1.0, QUALITY)]
    assert reddest == [api.ranked()[0].op]
    assert set(ov.marks.colours) == {r["op"] for r in expect if r["op"] is not None
                                     and r["sqnr_db"] is not None and math.isfinite(r["sqnr_db"])}
    dock.choose_metric("fallback_gain_db")
    assert api.fallback[0].op in [k for k, c in ov.marks.colours.items() if c == ramp(1.0, QUALITY)]
    window.overlay_choice.choose("")  # Colour by: None
    assert ov.item is None and not strip.isVisible()
    # CSV export
    out = tmp_path / "q.csv"
    dock.export_csv(out)
    got = list(csv.DictReader(open(out)))
    assert [int(r["tensor"]) for r in got] == [r["tensor"] for r in expect]
    assert not window.reported


def test_dock_findings_also_in_problems(window, qtbot, tmp_path):
    from tflite_viewer.edit import SetQuantization
    from tflite_viewer.model import load_model
    q = load_model(SMALL_INT8).subgraphs[0].tensors[13].quantization
    bad = edited(SMALL_INT8, SetQuantization(0, 13, q.scale, np.full(8, 3), 0))
    path = tmp_path / "bad.tflite"
    path.write_bytes(bytes(bad.data))
    dock = window.panel("quantization")
    with qtbot.waitSignal(dock.findingsChanged, timeout=20_000,
                          check_params_cb=lambda fs: bool(fs)):
        assert window.open_path(path, wait=True)
    assert [f.rule for f in dock.findings] == ["weight-zero-point"]
    problems = window.problems_panel
    mine = [f for f in problems.findings if f.where.startswith("quantization spec")]
    assert len(mine) == 1 and mine[0].operator == 0 and mine[0].tensor == 13
    assert "Problems (" in window.problems_dock.windowTitle()
    dock._finding_clicked(dock.findings_tree.topLevelItem(0))
    assert window.selection == ("op", 0)


def test_cancel_and_failure(window, qtbot, tmp_path):
    assert window.open_path(SMALL_INT8, wait=True)
    window.dock("quantization").show()  # View > Quantization (hidden in the default layout)
    dock = window.panel("quantization")
    dock.compare(SMALL_FLOAT, samples=50, fallback=True)
    assert dock.running and dock.cancel_button.isVisible()
    dock.cancel()
    assert not dock.running and dock.status.text() == "Cancelled."
    assert dock.report is None
    qtbot.wait(200)
    # a file that is not a model: a message, the window keeps working
    bad = tmp_path / "x.tflite"
    bad.write_bytes(b"nonsense")
    with qtbot.waitSignal(dock.failed, timeout=20_000):
        dock.compare(bad, samples=1, fallback=False)
    assert window.reported and "comparison failed" in window.reported[-1][1]
    assert dock.compare_button.isEnabled()


def test_dock_settings_are_remembered(tmp_path, qtbot):
    from PySide6.QtCore import QSettings
    from tflite_viewer.ui.panels.quant_dock import QuantDock
    settings = QSettings(str(tmp_path / "q.ini"), QSettings.Format.IniFormat)
    dock = QuantDock(settings)
    qtbot.addWidget(dock)
    dock.choose_metric("cosine")
    dock.samples.setValue(7)
    dock.fallback.setChecked(False)
    from tflite_viewer.model import load_model
    dock.model = load_model(SMALL_INT8)
    dock.compare(SMALL_FLOAT)  # saves samples and fallback
    dock.cancel()
    again = QuantDock(settings)
    qtbot.addWidget(again)
    assert again.overlay_metric.currentData() == "cosine"
    assert again.samples.value() == 7 and not again.fallback.isChecked()
