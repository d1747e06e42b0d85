"""The window against hostile files: mutated models opened in turn, every tensor selected.

Every open either shows the model or reports why it cannot ("Cannot open model"); no
"Unexpected error" is ever reported, and the window still opens and shows a good model
afterwards.  An exception that does escape a slot still becomes a report plus a log
entry (`tflite_viewer.ui.errors`), never a crash.
"""
from __future__ import annotations

import logging
import random

import pytest

from tests.fuzz.corpus import model_bytes
from tests.fuzz.mutations import MUTATIONS, mutate

pytest.importorskip("PySide6")
pytestmark = pytest.mark.usefixtures("qtbot")

#: the smallest corpus models (a tensor selection refreshes two panels: ~10-30 ms each)
WINDOW_MODELS = ("sine_float.tflite", "multi_signature.tflite", "control_flow.tflite")
CASES = 200
#: cases in CI's sample (the slow tier opens all `CASES`)
SAMPLE_CASES = 60


def _cases(n: int):
    rng = random.Random(16)
    kinds = sorted(MUTATIONS)
    for i in range(n):
        steps = [(kinds[i % len(kinds)], rng.randrange(2**32))]
        if rng.random() < 0.3:
            steps.append((rng.choice(kinds), rng.randrange(2**32)))
        yield WINDOW_MODELS[i % len(WINDOW_MODELS)], steps


@pytest.fixture
def window(qtbot, settings):
    from tflite_viewer.ui.errors import ErrorReporter
    from tflite_viewer.ui.main_window import MainWindow

    errors = ErrorReporter(interactive=False)
    win = MainWindow(settings=settings, errors=errors)
    win.reported = []
    errors.reported.connect(lambda title, message: win.reported.append((title, message)))
    qtbot.addWidget(win)
    win.ask_before_discarding = False
    win.resize(1200, 800)
    win.show()
    return win


@pytest.fixture
def settings(tmp_path):
    from PySide6.QtCore import QSettings
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


@pytest.mark.parametrize("cases", [SAMPLE_CASES, pytest.param(CASES, marks=pytest.mark.slow)])
def test_mutated_models_open_and_every_tensor_selects_without_unexpected_errors(window, tmp_path,
                                                                               cases):
    opened = refused = 0
    for k, (name, steps) in enumerate(_cases(cases)):
        data, done = mutate(model_bytes(name), steps)
        path = tmp_path / f"case{k % 4}.tflite"
        path.write_bytes(data)
        before = len(window.reported)
        if window.open_path(path, wait=True):
            opened += 1
            sg = window.model.subgraphs[window.subgraph]
            for t in range(len(sg.tensors)):
                window.select_tensor(t, center=False)
        else:
            refused += 1
            assert window.reported[before:] and window.reported[-1][0] == "Cannot open model"
        unexpected = [r for r in window.reported[before:] if r[0] != "Cannot open model"]
        assert not unexpected, f"{name} {steps} {done}: {unexpected}"
    assert opened > cases // 3 and refused > 0  # both paths were exercised
    # the window is still usable: a good model opens and shows its tensors
    good = tmp_path / "good.tflite"
    good.write_bytes(model_bytes("sine_float.tflite"))
    assert window.open_path(good, wait=True)
    window.select_tensor(0)
    assert window.selection == ("tensor", 0)


@pytest.mark.qt_no_exception_capture  # the application's own hook is under test
def test_an_exception_escaping_a_slot_becomes_a_report_and_a_log_entry(window, qtbot,
                                                                       monkeypatch, caplog,
                                                                       tmp_path):
    import sys

    from PySide6.QtCore import QTimer

    from tflite_viewer.ui import errors

    path = tmp_path / "m.tflite"
    path.write_bytes(model_bytes("sine_float.tflite"))
    assert window.open_path(path, wait=True)
    monkeypatch.setattr(errors, "_reporter", window.errors)
    old = sys.excepthook
    errors.install_excepthook()
    try:
        def broken(*args, **kwargs):
            raise RuntimeError("panel exploded")
        monkeypatch.setattr(window.tensor_panel, "show_tensor", broken)
        with caplog.at_level(logging.ERROR, logger="tflite_viewer.ui"):
            QTimer.singleShot(0, lambda: window.select_tensor(1))
            qtbot.waitUntil(lambda: bool(window.reported) and
                            window.reported[-1][0] == "Unexpected error", timeout=5000)
        assert "panel exploded" in window.reported[-1][1]
        assert any("unexpected error" in r.getMessage() and "panel exploded" in r.getMessage()
                   for r in caplog.records)
    finally:
        sys.excepthook = old
    monkeypatch.undo()
    window.select_tensor(2)  # still working
    assert window.selection == ("tensor", 2)
