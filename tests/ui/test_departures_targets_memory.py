"""Three docks show what the layers below already know (issue 38 and 41 window parts):

* the Cross-check dock lists the report's two departures (`Departures.lines`), each op a
  link that selects it on the canvas; the departures themselves are checked against LiteRT
  in tests/interpreter/crosscheck/test_departures.py (its LOGISTIC -> hybrid
  FULLY_CONNECTED model, where LiteRT's builtin LOGISTIC rounds otherwise);
* the Targets dock's first row says why the model as a whole cannot run on a target
  (`TargetResult.failure`), on a model LiteRT's default path refuses to prepare (the
  oracle: LiteRT itself, `default_path_error`);
* the Memory dock shows LiteRT's arenas for an LLM decoder, TFLite Micro's (the remembered
  runtime) for any other model, and keeps a runtime picked for a model.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.interpreter.crosscheck.test_departures import check, logistic_then_hybrid
from tests.targets import quant_param_models as qp
from tests.targets.oracles import default_path_error
from tflite_viewer.model import load_model
from tflite_viewer.targets import analyze
from tflite_viewer.ui.debugger.crosscheck_dock import show_cross_check
from tflite_viewer.ui.state.crosscheck import CrossCheck

from .conftest import MODELS, model_path
from .test_targets_window import pick

TIMEOUT = 20_000


def test_the_cross_check_dock_lists_both_departures_and_a_click_selects_the_op(
        qtbot, window, tmp_path):
    model, x = logistic_then_hybrid(2)
    path = tmp_path / "logistic_hybrid.tflite"
    path.write_bytes(model)
    assert window.open_path(path, wait=True)
    strict = check(model, x, tolerance=0.0)  # both departures name an op: LOGISTIC, op 0
    loose = check(model, x)                  # none isolated; end to end the FC, op 1
    ctl = window.debugger
    panel = ctl.crosscheck_panel
    show_cross_check(ctl, CrossCheck(loose, {}, window.model))
    text = panel.departures.text()
    assert panel.departures.isVisibleTo(panel)
    assert "own computation departs (isolated, on LiteRT's inputs): none" in text
    assert 'href="0:1"' in text and "op 1 FULLY_CONNECTED" in text
    assert text.count("<a ") == 1  # the one op named is the one link
    window.select_op(0)
    panel.departures.linkActivated.emit("0:1")  # as a click on the link
    assert window.selected_op() == (0, 1)
    show_cross_check(ctl, CrossCheck(strict, {}, window.model))
    text = panel.departures.text()
    assert text.count('href="0:0"') == 2  # the LOGISTIC, both ways
    assert [line.split(": ")[0] for line in strict.departures.lines()] == [
        line.split(": ")[0] for line in text.split("<br>")]
    panel.departures.linkActivated.emit("0:0")
    assert window.selected_op() == (0, 0)
    # another model: no departures of the old one
    assert window.open_path(model_path("small_cnn_dilated_float.tflite"), wait=True)
    assert not panel.departures.isVisibleTo(panel) and panel.departures.text() == ""


def test_the_targets_dock_says_first_why_the_model_cannot_run_there(qtbot, window, tmp_path):
    model = qp.cases()["blockwise-zero-scale"]
    assert default_path_error(model) is not None  # LiteRT's default path refuses it
    path = tmp_path / "zero_scale.tflite"
    path.write_bytes(model)
    assert window.open_path(path, wait=True)
    result = pick(qtbot, window, "xnnpack")
    expected = analyze(load_model(model), ["xnnpack"]).results["xnnpack"].failure
    assert expected.startswith("LiteRT's default CPU path fails on this model")
    table = window.panel("targets").table
    first = table.topLevelItem(0)
    assert first.text(0) == f"Does not run here: {expected}"
    assert first.isFirstColumnSpanned() and first.toolTip(0) == expected
    assert result.failure == expected
    # whole in the line over the table too (the row is elided at a laptop's width)
    assert window.panel("targets").summary.text().endswith(f"does not run here: {expected}")
    # a model that runs there has no such row
    assert window.open_path(model_path("small_cnn_dilated_float.tflite"), wait=True)
    qtbot.waitUntil(lambda: window.panel("targets").result is not None, timeout=TIMEOUT)
    QApplication.processEvents()
    texts = [table.topLevelItem(i).text(0) for i in range(table.topLevelItemCount())]
    assert not any(t.startswith("Does not run here") for t in texts)


def _show_memory(qtbot, window, path):
    assert window.open_path(path, wait=True)
    window.dock("memory").show()
    window.dock("memory").raise_()
    panel = window.panel("memory")
    qtbot.waitUntil(lambda: panel._chart is not None, timeout=60_000)
    return panel


def test_the_memory_dock_shows_litert_for_a_decoder_and_the_remembered_runtime_else(
        qtbot, window, settings):
    from tflite_viewer.memory.decoder import llm_decoder
    decoder = MODELS / "llm" / "tiny_llama_f32.tflite"
    assert llm_decoder(load_model(decoder)) is not None
    panel = _show_memory(qtbot, window, decoder)
    assert panel.target_key == "litert" and panel.plan().target == "litert"
    assert panel.summary.text().startswith("This is an LLM decoder")
    assert "not a TFLite Micro model" in panel.summary.text()
    assert settings.value("memory/target", None) is None  # nothing was picked
    # another model: the remembered runtime (TFLite Micro by default)
    panel = _show_memory(qtbot, window, model_path("person_detect.tflite"))
    assert panel.target_key == "tflm" and panel.plan().target == "tflm"
    assert not panel.summary.text().startswith("This is")
    # TFLite Micro picked on the decoder stays its runtime, and is not remembered for others
    panel = _show_memory(qtbot, window, decoder)
    panel.target.setCurrentIndex(panel.target.findData("tflm"))
    qtbot.waitUntil(lambda: panel._chart is not None and panel.plan().target == "tflm",
                    timeout=60_000)
    window.hub.changed("memory/plan", window.hub.workspace)
    assert panel.target_key == "tflm"
    panel.target.setCurrentIndex(panel.target.findData("litert"))
    assert settings.value("memory/target", None) is None
