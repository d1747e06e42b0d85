"""The Quantization dock's Generation view: an LLM pair (the open quantized decoder, the
float model the dock compares with) generating K tokens on a worker, with progress and
Cancel; per step both tokens, logits SQNR, KL, top-1 and the worst ops; the chart, the
heat map and the worst list choose a step or select an op on the canvas.

Sources of truth: LiteRT's greedy loop for each model (`litert_generate`, in a child
process) for the tokens, numpy on LiteRT's logits for the SQNR and KL.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.ui.conftest import model_path

Q = model_path("llm/qwen3_transposed_q8.tflite")
F = model_path("llm/qwen3_transposed_f32.tflite")
PROMPT, STEPS = [5, 17, 42], 6


def _np_sqnr(ref, approx) -> float:
    ref = np.asarray(ref, np.float64).ravel()
    err = ref - np.asarray(approx, np.float64).ravel()
    return 10 * np.log10(np.sum(ref ** 2) / np.sum(err ** 2))


def _np_kl(f, q) -> float:
    def softmax(x):
        e = np.exp(np.asarray(x, np.float64) - np.max(x))
        return e / e.sum()
    p, r = softmax(f), softmax(q)
    return float(np.sum(p * np.log(p / r)))


def _view(window):
    from tflite_viewer.ui.state.quant import quant_state
    assert window.open_path(Q, wait=True)
    dock = window.panel("quantization")
    quant_state(window.workspace).float_path = F  # as "Compare with float model..." chose it
    dock.lists.setCurrentIndex(dock.generation_tab)
    dock.generation.render(window.workspace)
    return dock, dock.generation


def test_generation_view_shows_litert_s_tokens_and_selects_ops(qtbot, window):
    from tflite_viewer.interpreter.generation import find_plan
    from tflite_viewer.interpreter.generation_litert import litert_generate
    from tflite_viewer.model import load_model
    from tflite_viewer.ui.state.generation import generation_state
    dock, view = _view(window)
    assert view.run_button.isEnabled()
    progress = []
    view.progress.valueChanged.connect(progress.append)
    from PySide6.QtCore import Qt
    view.prompt.setText(" ".join(map(str, PROMPT)))  # as typed, then Generate clicked
    view.steps.setValue(STEPS)
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert view.cancel_button.isVisibleTo(view)
    g = generation_state(window.workspace)
    qtbot.waitUntil(lambda: g.analysis is not None, timeout=120_000)
    assert progress  # the bar moved while it ran
    plan = find_plan(load_model(F), len(PROMPT))
    f_ref = litert_generate(load_model(F), plan, PROMPT, STEPS)
    q_ref = litert_generate(load_model(Q), plan, PROMPT, STEPS)
    table = [[view.table.item(r, c).text() for c in range(view.table.columnCount())]
             for r in range(view.table.rowCount())]
    assert [int(r[1]) for r in table] == f_ref.tokens
    assert [int(r[2]) for r in table] == q_ref.tokens
    assert [r[3] == "yes" for r in table] == [a == b for a, b in zip(f_ref.tokens, q_ref.tokens)]
    for k, row in enumerate(table):
        assert float(row[4]) == pytest.approx(_np_sqnr(f_ref.logits[k], q_ref.logits[k]),
                                              rel=1e-3, abs=0.05)
        assert float(row[5]) == pytest.approx(_np_kl(f_ref.logits[k], q_ref.logits[k]),
                                              rel=2e-2, abs=1e-4)
    # the chart and heat map hold the analysis; the slider chooses the step
    assert view.chart.values.tolist() == pytest.approx(g.analysis.logits_sqnr.tolist())
    # columns: the decoder's layers, as the quantized model's tensor names say (ops before
    # the blocks, each TransformerBlock_N, ops after), each cell its layer's worst op
    import re
    names = (window.model.subgraphs[s].tensors[window.model.subgraphs[s].operators[o]
                                               .outputs[0]].name.split(";;")[0]
             for s, o in g.analysis.ops)
    blocks = sorted({int(m.group(1)) for m in map(re.compile(r"TransformerBlock_(\d+)").search,
                                                  names) if m})
    assert view.layers.labels == ["before the blocks", *(f"block {b}" for b in blocks),
                                  "after the blocks"]
    assert view.heat.matrix.shape == (STEPS, len(view.layers.labels))
    measured = ~np.isnan(g.analysis.sqnr)
    assert np.nanmin(view.heat.matrix, axis=1) == pytest.approx(
        [row[ok].min() for row, ok in zip(g.analysis.sqnr, measured)])
    view.slider.setValue(3)
    assert g.step == 3 and view.table.currentRow() == 3 and view.heat.step == 3
    worst = g.analysis.steps[3].worst_ops
    assert view.worst.count() == len(worst)
    assert view.worst.item(0).text().startswith(f"{worst[0].subgraph}/{worst[0].op} ")
    # a worst op selects that op on the canvas (in its subgraph)
    view._worst_clicked(view.worst.item(0))
    qtbot.waitUntil(lambda: window.selected_op() == (worst[0].subgraph, worst[0].op),
                    timeout=30_000)
    # a heat-map cell: its step chosen, its op selected
    r = view.heat.plot_rect()
    rows, cols = view.heat.matrix.shape
    column = cols - 1
    from PySide6.QtCore import QPoint
    point = QPoint(int(r.left() + (column + 0.5) * r.width() / cols),
                   int(r.top() + 1.5 * r.height() / rows))
    qtbot.mouseClick(view.heat, Qt.MouseButton.LeftButton, pos=point)
    assert g.step == 1
    op = int(view.layers.worst[1, column])
    assert g.analysis.sqnr[1, op] == view.layers.matrix[1, column]
    qtbot.waitUntil(lambda: window.selected_op() == g.analysis.ops[op], timeout=30_000)


def test_generation_cancel_and_refusals(qtbot, window):
    from tflite_viewer.ui.panels.quant_generation import NO_FLOAT
    from tflite_viewer.ui.state.generation import generation_state
    from tflite_viewer.ui.state.quant import quant_state
    failures = []
    dock, view = _view(window)
    dock.failed.connect(failures.append)
    g = generation_state(window.workspace)
    view.start("5 17 42", 400)
    view.cancel_button.click()
    assert g.status == "Cancelled." and not g.running and g.analysis is None
    assert not view.cancel_button.isVisibleTo(view)
    from PySide6.QtCore import QThreadPool
    QThreadPool.globalInstance().waitForDone(120_000)
    qtbot.wait(50)
    assert g.analysis is None and g.status == "Cancelled."  # the late result dropped
    # a token id outside the vocabulary: the reason, in the status and a failure
    view.start("5 99999", 2)
    qtbot.waitUntil(lambda: not g.running, timeout=60_000)
    assert "outside the model's vocabulary" in g.status and failures
    # no float model chosen: Generate is off and says why
    quant_state(window.workspace).float_path = None
    view.render(window.workspace)
    assert not view.run_button.isEnabled()
    assert view.status.toolTip() == NO_FLOAT or view.status.text() == NO_FLOAT


def test_screenshot_of_the_generation_view(tmp_path, capsys):
    """``--compare-float F --generate K`` (how the README's picture is made): the heat
    map is in the picture; a prompt the model has no token for is one line, exit 2."""
    from tflite_viewer import cli
    from tflite_viewer.ui.state.generation import heat_image
    from .test_screenshot_render import _has_color, _pixels
    q4 = model_path("llm/tiny_llama_q4_block32.tflite")
    f32 = model_path("llm/tiny_llama_f32.tflite")
    out = tmp_path / "generation.png"
    assert cli.main([str(q4), "--screenshot", str(out), "--compare-float", str(f32),
                     "--generate", "8", "--prompt", "5,17,42"]) == 0
    px = _pixels(out)
    # the heat map's cells: the colours of the two widest-spread layer values of the same
    # analysis, made again here, are in the picture (a cell is tens of pixels)
    from tflite_viewer.model import load_model
    from tflite_viewer.quant.generation import analyze_generation
    from tflite_viewer.ui.state.generation import by_layer
    qm = load_model(q4)
    ga = analyze_generation(qm, load_model(f32), [5, 17, 42], 8)
    names = [qm.subgraphs[s].tensors[qm.subgraphs[s].operators[o].outputs[0]].name
             for s, o in ga.ops]
    cells = by_layer(ga.sqnr, names, [str(o) for o in ga.ops]).matrix
    for db in (np.nanmin(cells), np.nanmax(cells)):
        rgb = heat_image(np.array([[db]]))[0, 0]
        assert _has_color(px, "#{:02x}{:02x}{:02x}".format(*rgb), tolerance=2,
                          at_least=30), db
    assert cli.main([str(q4), "--screenshot", str(out), "--compare-float", str(f32),
                     "--generate", "2", "--prompt", "5,99999"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "outside the model's vocabulary" in err
    assert cli.main([str(q4), "--screenshot", str(out), "--generate", "2"]) == 2
    assert "--generate goes with --run-to N or --compare-float" in capsys.readouterr().err


def test_teacher_forcing_feeds_both_the_float_tokens(qtbot, window):
    """The checkbox reaches the analysis: the quantized model is fed the float model's
    tokens at every step, and the float model's own tokens are LiteRT's greedy ones."""
    from PySide6.QtCore import Qt
    from tflite_viewer.interpreter.generation import find_plan
    from tflite_viewer.interpreter.generation_litert import litert_generate
    from tflite_viewer.model import load_model
    from tflite_viewer.ui.state.generation import generation_state
    _dock, view = _view(window)
    view.prompt.setText("5,17,42")
    view.steps.setValue(4)
    view.teacher.setChecked(True)
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    g = generation_state(window.workspace)
    qtbot.waitUntil(lambda: g.analysis is not None, timeout=120_000)
    ga = g.analysis
    assert ga.teacher_forcing and "teacher-forced" in view.status.toolTip()
    assert [s.quantized_fed for s in ga.steps] == [s.fed for s in ga.steps]
    f_ref = litert_generate(load_model(F), find_plan(load_model(F), 3), PROMPT, 4)
    assert ga.float_tokens == f_ref.tokens
    assert [s.fed for s in ga.steps] == [PROMPT[-1], *f_ref.tokens[:-1]]
