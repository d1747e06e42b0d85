"""The Quantization dock's sample sources and subgraphs in the window (pytest-qt): the
inputs of a debugger session, a folder of JPEG images, and a model whose loop bodies are
analysed (rows select in the body, the overlay colours the body's ops)."""
from __future__ import annotations

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"

import math  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from tflite_viewer.quant import analyze  # noqa: E402
from tflite_viewer.quant.report import rows as report_rows  # noqa: E402
from tflite_viewer.ui.panels.quant_source import DEBUGGER, IMAGES, NO_SESSION, SEEDED  # noqa: E402

from .helpers import MODELS, SMALL_FLOAT, SMALL_INT8  # noqa: E402

KEYS = ("sqnr_db", "cosine", "rmse_scale", "max_abs_error", "mean_error", "median_diff_ratio",
        "at_min_fraction", "at_max_fraction", "fallback_gain_db", "layer_sqnr_db")


def _run(qtbot, dock, float_path=SMALL_FLOAT, samples=3, fallback=True):
    with qtbot.waitSignal(dock.reportReady, timeout=60_000, check_params_cb=lambda r: r is not None):
        dock.compare(float_path, samples=samples, fallback=fallback)
    return dock.report


def _same_rows(dock, api):
    want = report_rows(api)
    got = dock.table_model.rows
    assert [(r["subgraph"], r["tensor"]) for r in got] == [(r["subgraph"], r["tensor"]) for r in want]
    for g, w in zip(got, want):
        for k in KEYS:
            if w[k] is None:
                assert g[k] is None, k
            elif math.isinf(w[k]):
                assert g[k] == w[k], k
            else:
                assert g[k] == pytest.approx(w[k], rel=1e-12, abs=1e-15), k


def _debugger_item(dock):
    combo = dock.source.combo
    row = combo.findData(DEBUGGER)
    return combo.model().item(row), combo.itemData(row, Qt.ItemDataRole.ToolTipRole)


def test_inputs_of_the_debugger_session(window, qtbot):
    """Without a session the option is disabled and says why; with one, the analysis runs
    on exactly the session's inputs: the dock's numbers equal the API's with them."""
    assert window.open_path(SMALL_INT8, wait=True)
    dock, dbg = window.panel("quantization"), window.debugger
    item, tip = _debugger_item(dock)
    assert not item.isEnabled() and tip == NO_SESSION
    assert not dock.source.choose(DEBUGGER) and dock.source.kind != DEBUGGER
    sg = window.model.subgraphs[0]
    name = sg.tensors[sg.inputs[0]].name
    x = np.random.default_rng(5).integers(-128, 128, (1, 32, 32, 3)).astype(np.int8)
    dbg.set_inputs({name: x})
    before = dbg.last_stop.serial if dbg.last_stop is not None else 0
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_F10)  # the session starts, paused at op 0
    qtbot.waitUntil(lambda: dbg.last_stop is not None and dbg.last_stop.serial > before
                    and not dbg.busy, timeout=20_000)
    item, tip = _debugger_item(dock)
    assert item.isEnabled() and not tip
    assert dock.source.choose(DEBUGGER) and not dock.samples.isEnabled()
    report = _run(qtbot, dock)
    assert report.samples == 1
    api = analyze(SMALL_INT8, SMALL_FLOAT, given=[{name: x}], per_layer_fallback=True)
    assert api.samples == 1
    _same_rows(dock, api)
    # the session's own values: its input is x, so the analysed quantized input is x too
    t_in = next(t for t in report.tensors if t.tensor == sg.inputs[0] and t.subgraph == 0)
    assert t_in.activation.q_low == int(x.min()) and t_in.activation.q_high == int(x.max())
    # the session ends: the option is disabled again and the choice falls back
    dbg.end_session()
    item, tip = _debugger_item(dock)
    assert not item.isEnabled() and tip == NO_SESSION and dock.source.kind == SEEDED
    assert dock.samples.isEnabled()


def test_folder_of_jpeg_images(window, qtbot, tmp_path):
    from PIL import Image
    rng = np.random.default_rng(6)
    for k in range(2):
        Image.fromarray(rng.integers(0, 256, (48, 40, 3), dtype=np.uint8)).save(
            tmp_path / f"{k}.jpg", quality=92)
    assert window.open_path(SMALL_INT8, wait=True)
    dock = window.panel("quantization")
    assert dock.source.choose(IMAGES, tmp_path)
    assert tmp_path.name in dock.source.combo.currentText()
    report = _run(qtbot, dock, samples=5, fallback=False)
    assert report.samples == 2
    _same_rows(dock, analyze(SMALL_INT8, SMALL_FLOAT, images=tmp_path))
    # remembered with its folder
    from tflite_viewer.ui.panels.quant_source import SampleSource
    again = SampleSource(window.settings)
    assert again.kind == IMAGES and again.images_dir == str(tmp_path)


def test_loop_bodies_in_the_dock_and_on_the_canvas(window, qtbot):
    """lstm_dynamic vs lstm_float: rows of the WHILE bodies; clicking one shows its body
    and selects the tensor there; the overlay colours the ops of the subgraph shown."""
    q, f = MODELS / "lstm_dynamic.tflite", MODELS / "lstm_float.tflite"
    assert window.open_path(q, wait=True)
    dock = window.panel("quantization")
    report = _run(qtbot, dock, f, samples=1, fallback=True)
    _same_rows(dock, analyze(q, f, samples=1, per_layer_fallback=True))
    assert {r["subgraph"] for r in dock.table_model.rows if r["sqnr_db"] is not None} == {0, 2, 4}
    row = next(k for k, r in enumerate(dock.table_model.rows)
               if r["subgraph"] == 2 and r["tensor"] == 19)
    dock._row_clicked(dock.proxy.index(row, 0))
    assert window.subgraph == 2 and window.selection == ("tensor", 19)
    assert dock.overlay_hist.histograms is not None
    assert int(dock.overlay_hist.histograms[1].counts.sum()) == 20 * 64  # every iteration
    dock.choose_metric("sqnr_db")
    ov = window.overlays
    assert ov.item is not None and window.canvas.strip.isVisible()
    body = {r["op"] for r in report_rows(report) if r["subgraph"] == 2 and r["op"] is not None
            and r["sqnr_db"] is not None and math.isfinite(r["sqnr_db"])}
    assert set(ov.marks.colours) == body
    window.show_subgraph(0, wait=True)
    main = {r["op"] for r in report_rows(report) if r["subgraph"] == 0 and r["op"] is not None
            and r["sqnr_db"] is not None and math.isfinite(r["sqnr_db"])}
    assert set(ov.marks.colours) == main
    window.overlay_choice.choose("")


def test_a_finding_in_a_loop_body_selects_there(window, qtbot, tmp_path):
    from tflite_viewer.edit import SetQuantization
    from tflite_viewer.model import load_model

    from .helpers import edited
    path = MODELS / "lstm_dynamic.tflite"
    q = load_model(path).subgraphs[2].tensors[16].quantization
    bad = edited(path, SetQuantization(2, 16, q.scale, np.full(q.scale.size, 3), 0))
    out = tmp_path / "bad_body.tflite"
    out.write_bytes(bytes(np.asarray(bad.data, np.uint8)))
    dock = window.panel("quantization")
    with qtbot.waitSignal(dock.findingsChanged, timeout=20_000, check_params_cb=bool):
        assert window.open_path(out, wait=True)
    item = dock.findings_tree.topLevelItem(0)
    assert item.text(2) == "subgraph 2 op #2"
    assert window.subgraph == 0
    dock._finding_clicked(item)
    assert window.subgraph == 2 and window.selection == ("op", 2)
