"""The Quantization dock's "Keep selected ops in float" and "Quantize selected with...":
the float model quantized again with LiteRT's quantizer from the worst-first table, in a
worker with progress and Cancel, opened beside the float model with the new analysis.

Sources of truth: litert_quantizer's own ``Quantizer`` given the recipe the dock saved
(the same bytes), and the weights of the model written (the op kept in float reads a
FLOAT32 weight, the op overridden an INT8 one, the others INT4 blocks).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.ui.conftest import model_path

pytest.importorskip("litert_quantizer")

Q = model_path("llm/tiny_llama_q4_block32.tflite")
F = model_path("llm/tiny_llama_f32.tflite")


def _compared_dock(qtbot, window):
    from tflite_viewer.ui.state.quant import quant_state
    assert window.open_path(Q, wait=True)
    dock = window.panel("quantization")
    dock.compare(F, samples=1, fallback=False)
    qtbot.waitUntil(lambda: quant_state(window.workspace).report is not None, timeout=120_000)
    return dock


def _select_fc_rows(dock, count: int) -> list[dict]:
    """Select the ``count`` worst FULLY_CONNECTED rows of the table (its own order)."""
    from PySide6.QtCore import QItemSelectionModel
    rows = [r for r in range(dock.proxy.rowCount())
            if dock.row_at(dock.proxy.index(r, 0))["opcode"] == "FULLY_CONNECTED"][:count]
    sm = dock.table.selectionModel()
    sm.clearSelection()
    for r in rows:
        sm.select(dock.proxy.index(r, 0), QItemSelectionModel.SelectionFlag.Select
                  | QItemSelectionModel.SelectionFlag.Rows)
    return dock.selected_rows()


def _weight_types(path: Path, float_names: list[str]) -> dict[str, str]:
    """The type of the weight (input 1) of the op producing each named tensor."""
    from tflite_viewer.model import load_model
    m = load_model(path)
    out = {}
    for sg in m.subgraphs:
        for op in sg.operators:
            for o in op.outputs:
                if o >= 0 and sg.tensors[o].name in float_names:
                    out[sg.tensors[o].name] = sg.tensors[op.inputs[1]].type_name
    return out


def _float_names(dock, rows) -> list[str]:
    from tflite_viewer.model import load_model
    fm = load_model(F)
    names = []
    for r in rows:
        t = dock.report.tensor(int(r["tensor"]), int(r["subgraph"]))
        names.append(fm.subgraphs[t.float_subgraph or 0].tensors[t.float_tensor].name)
    return names


def _quantizer_bytes(recipe_path: Path) -> bytes:
    from litert_quantizer import quantizer
    qt = quantizer.Quantizer(str(F), str(recipe_path))
    return bytes(qt.quantize(enable_progress_bar=False,
                             enable_progress_report=False).quantized_model)


def test_keep_selected_in_float_opens_the_result_beside_the_float_model(qtbot, window, tmp_path):
    from tflite_viewer.ui.state import requantize as rq
    from tflite_viewer.ui.state.diff import diff_state
    from tflite_viewer.ui.state.quant import quant_state
    dock = _compared_dock(qtbot, window)
    rows = _select_fc_rows(dock, 2)
    assert len(rows) == 2
    names = _float_names(dock, rows)
    out, saved = tmp_path / "fixed.tflite", tmp_path / "fixed.json"
    asked = {}

    def ask(action, tensors, recipe_names, base, output):
        asked.update(action=action, base=base, names=recipe_names)
        return rq.Request(F, base, action, tensors, out, recipe_path=saved, samples=1)
    progress = []
    dock._progress.changed.connect(lambda d, t, m: progress.append((d, t)))
    assert dock.fix_selected(rq.KEEP_FLOAT, ask)
    # the model's form guessed the recipe that wrote it: INT4 blocks of 32, dynamic
    assert asked["base"] == "dynamic_wi4b32_afp32" and "static_wi8_ai8" in asked["names"]
    qtbot.waitUntil(lambda: window.path == out and quant_state(window.workspace).report
                    is not None, timeout=180_000)
    assert progress and progress[-1][0] == progress[-1][1]  # ran to its end, reported
    # the same bytes as the quantizer's own Quantizer given the recipe saved
    assert out.read_bytes() == _quantizer_bytes(saved)
    recipe = json.loads(saved.read_text())
    assert sum(e["algorithm_key"] == "no_quantize" for e in recipe) == 2
    # the two ops read float weights now; an FC not selected still an INT4 block weight
    types = _weight_types(out, names)
    assert types == {n: "FLOAT32" for n in names}
    # opened as A, the float model as B, and analysed against it
    assert diff_state(window.workspace).other_path == F
    report = quant_state(window.workspace).report
    assert Path(report.float_model).name == F.name
    assert dock.report is report


def test_quantize_selected_with_another_recipe(qtbot, window, tmp_path):
    from tflite_viewer.ui.state import requantize as rq
    dock = _compared_dock(qtbot, window)
    rows = _select_fc_rows(dock, 1)
    names = _float_names(dock, rows)
    out, saved = tmp_path / "w8.tflite", tmp_path / "w8.json"
    assert dock.fix_selected(rq.OVERRIDE, lambda a, t, n, b, o: rq.Request(
        F, "dynamic_wi4b32_afp32", a, t, out, "dynamic_wi8_afp32", saved, 1))
    qtbot.waitUntil(lambda: window.path == out, timeout=180_000)
    assert out.read_bytes() == _quantizer_bytes(saved)
    from tflite_viewer.model import load_model
    qm = load_model(out)
    types = _weight_types(out, names)
    assert types == {names[0]: "INT8"}
    fcs = [sg.tensors[op.inputs[1]] for sg in qm.subgraphs for op in sg.operators
           if op.name == "FULLY_CONNECTED"]
    assert sum(t.type_name == "INT4" for t in fcs) >= len(fcs) - 2  # the rest INT4 blocks


def test_cancel_writes_nothing(qtbot, window, tmp_path):
    from tflite_viewer.ui.state import requantize as rq
    from tflite_viewer.ui.state.quant import quant_state
    dock = _compared_dock(qtbot, window)
    _select_fc_rows(dock, 1)
    out = tmp_path / "never.tflite"
    # a static recipe calibrates sample by sample: time to cancel in between
    assert dock.fix_selected(rq.KEEP_FLOAT, lambda a, t, n, b, o: rq.Request(
        F, "static_wi8_ai8", a, t, out, samples=50))
    assert dock.cancel_button.isVisibleTo(dock) and dock.progress.isVisibleTo(dock)
    # one run at a time: the actions are off, and a second request is refused
    assert not dock.keep_float_action.isEnabled() and not dock.fix_button.isEnabled()
    assert not dock.fix_selected(rq.OVERRIDE, lambda *a: pytest.fail("asked"))
    dock.cancel_button.click()
    assert quant_state(window.workspace).status == "Cancelled."
    from PySide6.QtCore import QThreadPool
    QThreadPool.globalInstance().waitForDone(120_000)
    qtbot.wait(50)
    assert not out.exists() and not list(tmp_path.glob(".never*"))
    assert window.path == Q


def test_refusals_say_why(qtbot, window, monkeypatch, tmp_path):
    from tflite_viewer.quant import recipes
    from tflite_viewer.ui.state import requantize as rq
    from tflite_viewer.ui.state.quant import quant_state
    failures = []
    dock = window.panel("quantization")
    dock.failed.connect(failures.append)
    assert window.open_path(Q, wait=True)
    # no comparison yet: nothing to select from
    assert not dock.fix_selected(rq.KEEP_FLOAT, lambda *a: pytest.fail("asked"))
    assert "Compare with the float model first" in failures[-1]
    dock = _compared_dock(qtbot, window)
    dock.table.selectionModel().clearSelection()
    assert not dock.fix_selected(rq.KEEP_FLOAT, lambda *a: pytest.fail("asked"))
    assert "Select op outputs" in failures[-1]
    # the quantizer refusing the recipe: its reason, and the open model stays
    _select_fc_rows(dock, 1)
    bad = tmp_path / "bad.tflite"
    assert dock.fix_selected(rq.KEEP_FLOAT, lambda a, t, n, b, o: rq.Request(
        F, "no_such_recipe", a, t, bad))
    qtbot.waitUntil(lambda: not quant_state(window.workspace).running, timeout=60_000)
    assert "unknown recipe 'no_such_recipe'" in failures[-1] and not bad.exists()
    assert window.path == Q
    # without the [quantize] extra: the install line, nothing asked
    def missing():
        raise recipes.QuantizerMissing(f"quantizing needs LiteRT's quantizer: {recipes.INSTALL}")
    monkeypatch.setattr(recipes, "quantizer", missing)
    assert not dock.fix_selected(rq.OVERRIDE, lambda *a: pytest.fail("asked"))
    assert recipes.INSTALL in failures[-1] and recipes.INSTALL in dock.status.toolTip() + \
        dock.status.text()
