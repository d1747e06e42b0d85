"""Opening models in the window: every corpus model, async loading, bad files, recent, reload."""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.ui.state.problems import shape_findings
from PySide6.QtCore import QMimeData, QPointF, Qt, QTimer, QUrl
from PySide6.QtGui import QDropEvent

from tflite_viewer.model import load_model
from tflite_viewer.ui.recent import recent_files

from .conftest import CORPUS, model_path


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_every_corpus_model_opens_and_draws_every_subgraph(window, path):
    assert window.open_path(path, wait=True)
    model = window.model
    assert window.reported == []
    assert window.model_panel.rows()
    for i, sg in enumerate(model.subgraphs):
        window.show_subgraph(i, wait=True)
        data = window.graph_scene.data
        assert data.subgraph == i
        ops = sorted(lab.op_index for lab in data.labels if lab.kind == "op")
        assert ops == list(range(len(sg.operators)))
        assert window.graph_scene.items(), "the scene has items"
        # the reader's findings, stored shapes LiteRT computes differently (small_cnn_dilated's
        # SPACE_TO_BATCH outputs: tests/interpreter/test_shape_inference.py), then the
        # quantization spec findings the reader did not make
        listed = window.problems_panel.findings
        n_model, n_shapes = len(model.findings), len(shape_findings(window.workspace))
        assert listed[:n_model] == list(model.findings)
        assert all(f.where.startswith("quantization spec") for f in listed[n_model + n_shapes:])
        assert window.problems_panel.count() == len(listed)


def test_open_runs_in_a_worker_and_the_window_keeps_processing_events(window, qtbot):
    ticks = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start(0)
    with qtbot.waitSignal(window.modelOpened, timeout=60_000):  # a wait, not a timing
        assert window.open_path(model_path("ssd_mobilenet_v1.tflite"))
        assert window.progress.isVisibleTo(window)
    timer.stop()
    assert ticks, "the event loop ran while the model was opening"
    assert window.model.path.name == "ssd_mobilenet_v1.tflite"
    assert not window.progress.isVisibleTo(window)


def test_a_newer_open_wins_over_a_slower_older_one(window, qtbot):
    window.open_path(model_path("ssd_mobilenet_v1.tflite"))
    with qtbot.waitSignal(window.modelOpened, timeout=60_000):  # a wait, not a timing
        window.open_path(model_path("sine_float.tflite"))
    qtbot.wait(300)
    assert window.model.path.name == "sine_float.tflite"


@pytest.mark.parametrize("make_bad", [
    lambda good: good[: len(good) // 2],  # truncated
    lambda good: np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes(),  # random
    lambda good: b"",  # empty
    lambda good: b"TFL3" * 3,  # too short
], ids=["truncated", "random", "empty", "tiny"])
def test_bad_file_shows_the_reason_and_keeps_the_open_model(window, tmp_path, make_bad):
    good = model_path("mobilenet_v1_0.25_224_quant.tflite")
    assert window.open_path(good, wait=True)
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(make_bad(good.read_bytes()))
    assert not window.open_path(bad, wait=True)
    assert len(window.reported) == 1
    title, message = window.reported[0]
    assert title == "Cannot open model"
    assert "bad.tflite" in message
    assert window.model.path == good
    assert window.graph_scene.data is not None and len(window.graph_scene.data.labels) > 0


def test_bad_file_async_emits_open_failed(window, qtbot, tmp_path):
    window.open_path(model_path("sine_float.tflite"), wait=True)
    bad = tmp_path / "corrupt.tflite"
    data = bytearray(model_path("sine_float.tflite").read_bytes())
    data[4:8] = b"XXXX"  # wrong file identifier
    bad.write_bytes(bytes(data))
    with qtbot.waitSignal(window.openFailed, timeout=10_000) as blocker:
        window.open_path(bad)
    assert "corrupt.tflite" in blocker.args[0]
    assert window.model.path.name == "sine_float.tflite"


def test_missing_file_is_reported(window, tmp_path):
    assert not window.open_path(tmp_path / "nope.tflite", wait=True)
    assert window.reported and "nope.tflite" in window.reported[0][1]
    assert window.model is None


def test_recent_files_and_reload(window, settings, qtbot):
    a, b = model_path("sine_float.tflite"), model_path("micro_speech_quantized.tflite")
    window.open_path(a, wait=True)
    window.open_path(b, wait=True)
    assert [p.rsplit("/", 1)[-1] for p in recent_files(settings)][:2] == [b.name, a.name]
    window.files.fill_recent()
    texts = [act.text() for act in window.actions.recent_menu.actions()]
    assert str(b.resolve()) in texts
    window.select_op(1)
    with qtbot.waitSignal(window.modelOpened, timeout=60_000):  # a wait, not a timing
        window.reload()
    assert window.model.path == b
    assert window.selection == ("op", 1), "reload keeps the selection"


def test_drop_a_file_opens_it(window, qtbot):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(model_path("sine_float.tflite")))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.modelOpened, timeout=60_000):  # a wait, not a timing
        window.dropEvent(event)
    assert window.model.path.name == "sine_float.tflite"


def test_person_detect_problems_are_listed_with_links(window):
    window.open_path(model_path("person_detect.tflite"), wait=True)
    findings = load_model(model_path("person_detect.tflite")).findings
    assert findings and window.problems_panel.count() == len(findings)
    messages = [window.problems_panel.tree.topLevelItem(i).text(3) for i in range(window.problems_panel.count())]
    assert any("quantized_dimension" in m for m in messages)
    item = window.problems_panel.tree.topLevelItem(0)
    window.problems_panel._activated(item)
    f = findings[0]
    if f.tensor is not None:
        assert window.selection == ("tensor", f.tensor)
        rows = window.tensor_panel.rows()
        assert any(r.key == "problem" and "quantized_dimension" in r.value for r in rows)


def test_unexpected_exceptions_become_a_report_not_a_traceback(window, monkeypatch):
    import sys

    from tflite_viewer.ui import errors

    monkeypatch.setattr(errors, "_reporter", window.errors)
    old = sys.excepthook
    try:
        errors.install_excepthook()
        try:
            raise RuntimeError("boom")
        except RuntimeError as exc:
            sys.excepthook(type(exc), exc, exc.__traceback__)
    finally:
        sys.excepthook = old
    assert window.reported[-1][0] == "Unexpected error"
    assert "boom" in window.reported[-1][1]
