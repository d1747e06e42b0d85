"""Debug > Kernels: the LiteRT kernel set a run follows (`interpreter.kernel_sets`),
remembered, named in the status bar, and XNNPACK offered only where this CPU's XNNPACK
computes as the set reproduces.

The model is LOGISTIC then a hybrid FULLY_CONNECTED (tests/interpreter/crosscheck/
test_departures.py), whose LOGISTIC LiteRT's reference and builtin kernels round
differently: the debugger's output under each choice is compared with an `Interpreter` of
that kernel set run apart (itself checked against LiteRT in tests/interpreter).
"""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from tests.interpreter.crosscheck.test_departures import logistic_then_hybrid
from tflite_viewer.interpreter import Interpreter, kernel_sets
from tflite_viewer.interpreter.session import FINISHED

from .test_debugger import press


def _open(window, tmp_path):
    model, x = logistic_then_hybrid(2)
    path = tmp_path / "logistic_hybrid.tflite"
    path.write_bytes(model)
    assert window.open_path(path, wait=True)
    window.debugger.set_inputs({"t0": x})
    return model, x


def _expected(model: bytes, x: np.ndarray, kernels: str) -> np.ndarray:
    interp = Interpreter(model, kernels=kernels)
    interp.invoke([x])
    return interp.tensor(0, 3)


def test_kernels_menu_runs_the_chosen_set_names_it_and_is_remembered(
        qtbot, window, settings, tmp_path):
    from tflite_viewer.ui.main_window import MainWindow
    ctl = window.debugger
    actions = ctl.kernels_actions
    assert [a.text() for a in actions.values()] == ["Auto", "Reference", "Builtin", "XNNPACK"]
    assert actions["auto"].isChecked() and ctl.kernels() == "auto"
    assert actions["xnnpack"].isEnabled() == (kernel_sets.xnnpack_host_differs() is None)
    model, x = _open(window, tmp_path)
    ref, builtin = _expected(model, x, "reference"), _expected(model, x, "builtin")
    assert not np.array_equal(ref, builtin)  # the two sets part on this model
    stop = press(qtbot, window, Qt.Key.Key_F5)
    assert stop.state == FINISHED
    assert np.array_equal(next(iter(stop.outputs.values())), ref)  # auto: the reference set
    assert "\u2014 REF kernels" in ctl.state_label.text()
    actions["builtin"].trigger()
    assert actions["builtin"].isChecked() and not window.workspace.debug.active
    assert "Kernels set to Builtin" in window.notice.text()
    stop = press(qtbot, window, Qt.Key.Key_F5)
    assert ctl.worker.session.interpreter.kernels == "builtin"
    assert np.array_equal(next(iter(stop.outputs.values())), builtin)
    assert "\u2014 builtin kernels" in ctl.state_label.text()
    other = MainWindow(settings=settings)
    qtbot.addWidget(other)
    assert other.debugger.kernels_actions["builtin"].isChecked()
    assert other.debugger.kernels() == "builtin"


def test_xnnpack_is_not_offered_where_this_cpu_computes_otherwise(
        qtbot, settings, monkeypatch):
    from tflite_viewer.ui.main_window import MainWindow
    why = "this CPU lacks AVX512VNNI: (a stand-in for another machine)"
    monkeypatch.setattr(kernel_sets, "xnnpack_host_differs", lambda: why)
    settings.setValue("debug/kernels", "xnnpack")  # remembered on another machine
    win = MainWindow(settings=settings)
    qtbot.addWidget(win)
    action = win.debugger.kernels_actions["xnnpack"]
    assert not action.isEnabled() and action.toolTip() == f"Not offered: {why}"
    assert win.debugger.kernels() == "auto"
    assert win.debugger.kernels_actions["auto"].isChecked()
    win.debugger.set_kernels("xnnpack")
    assert win.debugger.kernels() == "auto"


@pytest.mark.skipif(kernel_sets.xnnpack_host_differs() is not None,
                    reason="XNNPACK is not offered on this CPU (the test above covers that)")
def test_xnnpack_runs_in_the_debugger_where_offered(qtbot, window, tmp_path):
    model, x = _open(window, tmp_path)
    window.debugger.kernels_actions["xnnpack"].trigger()
    stop = press(qtbot, window, Qt.Key.Key_F5)
    assert window.debugger.worker.session.interpreter.kernels == "xnnpack"
    assert np.array_equal(next(iter(stop.outputs.values())), _expected(model, x, "xnnpack"))
    assert "\u2014 XNNPACK kernels" in window.debugger.state_label.text()
