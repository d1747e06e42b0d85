"""The step debugger in the window, driven with the real shortcuts on corpus models."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from tflite_viewer.interpreter import Interpreter, NonFiniteBreakpoint
from tflite_viewer.interpreter.session import FINISHED, PAUSED, STOPPED

from .conftest import model_path

F32 = np.float32
TIMEOUT = 10000


def press(qtbot, window, key, modifier=Qt.KeyboardModifier.NoModifier):
    """A shortcut as a user types it, then wait for the stop it causes."""
    dbg = window.debugger
    before = dbg.last_stop.serial if dbg.last_stop is not None else 0
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, key, modifier)
    qtbot.waitUntil(lambda: dbg.last_stop is not None and dbg.last_stop.serial > before
                    and not dbg.busy, timeout=TIMEOUT)
    return dbg.last_stop


def open_model(window, name: str) -> None:
    assert window.open_path(model_path(name), wait=True)


def test_f10_steps_and_highlights_the_current_op(qtbot, window):
    open_model(window, "sine_float.tflite")
    n = len(window.model.subgraphs[0].operators)
    stop = press(qtbot, window, Qt.Key.Key_F10)
    assert stop.state == PAUSED and stop.position == ((0, 0),)
    overlay = window.graph_scene.debug_overlay(n)
    for k in range(1, n):
        stop = press(qtbot, window, Qt.Key.Key_F10)
        assert stop.position == ((0, k),) and stop.ops_run == k
        assert overlay.current == k and overlay.executed.sum() == k
        assert f"/op {k} {window.model.subgraphs[0].operators[k].name}" in window.debugger.state_label.text()
    stop = press(qtbot, window, Qt.Key.Key_F10)
    assert stop.state == FINISHED and overlay.current is None
    assert "finished" in window.debugger.state_label.text()


def test_f11_enters_the_while_body_and_shift_f11_returns(qtbot, window):
    open_model(window, "control_flow.tflite")
    window.debugger.set_inputs({"serving_default_x:0": np.linspace(-1, 1, 4).astype(F32),
                                "serving_default_n:0": np.int32(2)})
    press(qtbot, window, Qt.Key.Key_F10)  # paused before the WHILE
    stop = press(qtbot, window, Qt.Key.Key_F11)
    while stop.position[-1][0] != 4:  # through the loop condition into the body
        stop = press(qtbot, window, Qt.Key.Key_F11)
    assert window.subgraph == 4 and window.graph_scene.data.subgraph == 4
    assert [c.subgraph for c in window.trail][-1] == 4 and len(window.trail) > 1
    assert window.debugger.callstack_panel.frames()[0] == stop.position[-1]
    stop = press(qtbot, window, Qt.Key.Key_F11, Qt.KeyboardModifier.ShiftModifier)
    assert stop.position == ((0, 1),) and window.subgraph == 0
    assert window.graph_scene.debug_overlay(4).current == 1


def test_f9_breakpoint_then_f5_stops_there(qtbot, window):
    open_model(window, "mobilenet_v2_float.tflite")
    window.select_op(20)
    window.activateWindow()
    qtbot.keyClick(window.view, Qt.Key.Key_F9)
    dbg = window.debugger
    qtbot.waitUntil(lambda: len(dbg.breakpoint_infos) == 1, timeout=TIMEOUT)
    stop = press(qtbot, window, Qt.Key.Key_F5)
    assert stop.reason == "breakpoint" and stop.position == ((0, 20),)
    qtbot.waitUntil(lambda: dbg.breakpoints_panel.tree.topLevelItem(0).text(1) == "1",
                    timeout=TIMEOUT)  # the hit count
    stop = press(qtbot, window, Qt.Key.Key_F5)
    assert stop.state == FINISHED


def test_inspector_and_watch_show_the_interpreters_values(qtbot, window):
    open_model(window, "mobilenet_v2_float.tflite")
    dbg = window.debugger
    sg = window.model.subgraphs[0]
    out = sg.operators[5].outputs[0]
    window.select_tensor(out)
    dbg.watch_selected()
    press(qtbot, window, Qt.Key.Key_F10)
    panel = window.tensor_panel
    assert panel.current_histogram_input() is None  # not yet computed
    assert "not yet computed" in panel.histogram.message.lower()
    window.select_op(6)
    window.activateWindow()
    qtbot.keyClick(window.view, Qt.Key.Key_F10, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: dbg.last_stop.position == ((0, 6),) and not dbg.busy, timeout=TIMEOUT)
    window.select_tensor(out)
    qtbot.waitUntil(lambda: panel.current_histogram_input() is not None, timeout=TIMEOUT)
    # the session's inputs are seeded (seed 0): run the reference on the same inputs
    from tflite_viewer.interpreter.inputs import complete_inputs, positional
    ref = Interpreter(model_path("mobilenet_v2_float.tflite"))
    arrays, _ = complete_inputs(window.model, {}, 0)
    ref.invoke(positional(window.model, arrays))
    np.testing.assert_array_equal(panel.current_histogram_input(), ref.tensor(0, out))
    row = dbg.watch_panel.row_texts()[0]
    expect = ref.tensor(0, out).astype(np.float64)
    assert float(row[2]) == pytest.approx(expect.min(), rel=1e-5)
    assert float(row[3]) == pytest.approx(expect.max(), rel=1e-5)
    assert float(row[4]) == pytest.approx(expect.mean(), rel=1e-5)


def test_nan_breakpoint_fires_on_a_model_made_to_produce_nan(qtbot, window, tmp_path):
    from tests.interpreter.singleop import Input, single_op_model
    path = tmp_path / "log.tflite"
    path.write_bytes(single_op_model("LOG", [Input((4,), F32)], [F32], output_shapes=[(4,)]))
    open_model(window, str(path))
    dbg = window.debugger
    dbg.set_inputs({window.model.subgraphs[0].tensors[0].name: np.array([1, -1, 2, 3], F32)})
    dbg.add_breakpoint(NonFiniteBreakpoint())
    stop = press(qtbot, window, Qt.Key.Key_F5)
    assert stop.reason == "breakpoint" and "NaN" in stop.message


def test_an_edit_ends_the_session(qtbot, window):
    open_model(window, "sine_float.tflite")
    press(qtbot, window, Qt.Key.Key_F10)
    assert window.debugger.active
    from tflite_viewer.edit import RenameTensor
    window.apply_edit(RenameTensor(0, 0, "renamed"))
    assert not window.debugger.active
    assert "debug session ended" in window.notice.text()
    stop = press(qtbot, window, Qt.Key.Key_F10)  # a new session on the new model
    assert stop.position == ((0, 0),)


def test_stop_returns_control_during_a_long_run(qtbot, window, monkeypatch):
    import functools

    from tflite_viewer.ui.debugger import worker
    # 50 million iterations: far past the default iteration budget (100,000), which a fast
    # machine reaches before the Stop below; this test is about Stop, so lift the budget of
    # the interpreter the debugger's worker builds
    monkeypatch.setattr(worker, "Interpreter",
                        functools.partial(worker.Interpreter, max_iterations=10**9))
    open_model(window, "control_flow.tflite")
    dbg = window.debugger
    dbg.set_inputs({"serving_default_x:0": np.linspace(-1, 1, 4).astype(F32),
                    "serving_default_n:0": np.int32(50_000_000)})
    window.activateWindow()
    qtbot.keyClick(window.view, Qt.Key.Key_F5)
    qtbot.waitUntil(lambda: dbg.busy and dbg.worker.session is not None
                    and dbg.worker.session.ops_run > 100, timeout=TIMEOUT)
    qtbot.keyClick(window.view, Qt.Key.Key_F5, Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: dbg.last_stop is not None and dbg.last_stop.state == STOPPED
                    and not dbg.busy, timeout=TIMEOUT)
    assert dbg.worker.session.ops_run < 50_000_000


def test_cross_check_table_equals_numpy_on_the_two_dumps(qtbot, window):
    from tflite_viewer.interpreter.inputs import complete_inputs, positional
    open_model(window, "mobilenet_v2_float.tflite")
    dbg = window.debugger
    with qtbot.waitSignal(dbg.crossCheckDone, timeout=120000):
        dbg.crosscheck_action.trigger()
    panel = dbg.crosscheck_panel
    report = dbg.last_cross_check.report
    assert "reference kernels (BUILTIN_REF)" in panel.header.text()
    # our dump: a separate interpreter on the same (seeded) inputs, adding in the
    # reference order as the cross-check against REF does (`float_sums`)
    ours = Interpreter(model_path("mobilenet_v2_float.tflite"), float_sums="reference")
    arrays, _ = complete_inputs(window.model, {}, 0)
    ours.invoke(positional(window.model, arrays))
    litert = report.litert_tensors
    assert panel.table.rowCount() == len(report.rows) == 65
    for row, r in enumerate(report.rows):
        a = ours.tensor(0, r.tensor).astype(np.float64)
        b = litert[r.tensor].astype(np.float64)
        d = np.abs(a - b)
        assert panel.cell(row, "max |error|") == format(float(d.max()), ".3g")
        span = float(b.max() - b.min()) or float(np.abs(b).max())  # constant: magnitude
        assert panel.cell(row, "error / range") == format(float(d.max()) / span, ".3g")
        cos = float(a.ravel() @ b.ravel() / np.linalg.norm(a) / np.linalg.norm(b))
        assert panel.cell(row, "cosine") == format(cos, ".6f")
        noise = float(np.sum((a - b) ** 2))
        sqnr = "inf" if noise == 0 else format(10 * np.log10(np.sum(b ** 2) / noise), ".1f")
        assert panel.cell(row, "SQNR dB") == sqnr
        assert panel.cell(row, "bit-exact") == ("yes" if np.array_equal(a, b) else "no")
    panel.table.selectRow(7)
    assert window.selection == ("op", report.rows[7].op)
    assert "ours" in panel.detail.text() and "LiteRT" in panel.detail.text()
    panel.colour.setChecked(True)  # Colour by: LiteRT error
    from tflite_viewer.ui.state.crosscheck import op_errors
    from tflite_viewer.ui.state.overlays import HEAT, ramp
    errors = op_errors(window.debugger.last_cross_check, 65)
    assert window.overlay_choice.key == "error" and np.isfinite(errors).sum() == 65
    assert window.overlays.marks.colours == {k: ramp(v, HEAT) for k, v in enumerate(errors)
                                             if v > 0}


def test_image_input_through_the_dialog_matches_a_hand_computation(qtbot, window, tmp_path,
                                                                   settings):
    from PySide6.QtGui import QImage, qRgb
    from tflite_viewer.ui.debugger.inputs_dialog import InputsDialog
    open_model(window, "mobilenet_v1_0.25_224_quant.tflite")
    image = QImage(224, 224, QImage.Format.Format_RGB888)
    for y in range(224):
        for x in range(224):
            image.setPixel(x, y, qRgb(x, y, (x + y) % 256))
    path = tmp_path / "gradient.png"
    assert image.save(str(path))
    dialog = InputsDialog(window.model, window.path, settings, window)
    qtbot.addWidget(dialog)
    row = dialog.rows[0]
    assert row.norm.text() == "127.5 / 127.5"  # from the model's metadata
    row.source.setCurrentText("image")
    row.value.setText(str(path))
    dialog.accept()
    arr = dialog.arrays()[row.spec.name]
    q = window.model.subgraphs[0].tensors[row.spec.tensor].quantization
    scale, zp = float(q.scale[0]), int(q.zero_point[0])
    assert arr.shape == (1, 224, 224, 3) and arr.dtype == np.uint8
    for (x, y) in ((0, 0), (100, 30), (223, 223)):
        for c, p in enumerate((x, y, (x + y) % 256)):
            want = min(255, max(0, int(np.round((p - 127.5) / 127.5 / scale)) + zp))
            assert arr[0, y, x, c] == want
    # remembered (the path, not the values) and offered again
    again = InputsDialog(window.model, window.path, settings, window)
    qtbot.addWidget(again)
    assert again.rows[0].source.currentText() == "image"
    assert again.rows[0].value.text() == str(path)
    assert "gradient.png" in str(settings.value(next(k for k in settings.allKeys()
                                                     if k.startswith("debugger/inputs"))))
    # a refused input says which and why, and the dialog stays open
    again.rows[0].source.setCurrentText("file (.npy/.npz)")
    np.save(tmp_path / "small.npy", np.zeros((2, 2), np.uint8))
    again.rows[0].value.setText(str(tmp_path / "small.npy"))
    again.accept()
    assert row.spec.name in again.error.text() and "shape" in again.error.text()
    assert again.result() == 0
    # the inputs drive the run
    window.debugger.set_inputs(dialog.arrays())
    stop = press(qtbot, window, Qt.Key.Key_F10)
    window.select_tensor(row.spec.tensor)
    qtbot.waitUntil(lambda: window.tensor_panel.current_histogram_input() is not None,
                    timeout=TIMEOUT)
    np.testing.assert_array_equal(window.tensor_panel.current_histogram_input(), arr)
    assert stop.state == PAUSED


def test_set_tensor_while_paused_changes_what_follows(qtbot, window):
    from tflite_viewer.ui.debugger.set_tensor import tensor_values
    open_model(window, "mobilenet_v2_float.tflite")
    dbg = window.debugger
    sg = window.model.subgraphs[0]
    logits = sg.operators[64].inputs[0]
    dbg.run_to(0, 64)
    qtbot.waitUntil(lambda: dbg.last_stop is not None and not dbg.busy, timeout=TIMEOUT)
    values = tensor_values(sg.tensors[logits], "0")
    dbg.set_tensor(0, logits, values)
    stop = press(qtbot, window, Qt.Key.Key_F5)
    out = list(stop.outputs.values())[0]
    np.testing.assert_allclose(out, np.full(out.shape, 0.1), rtol=1e-6)  # softmax of zeros
    with pytest.raises(ValueError, match="not an integer|cannot read"):
        tensor_values(sg.tensors[logits], "nope.npy")


def test_condition_dialog_makes_the_interpreters_breakpoints(qtbot, window):
    from tflite_viewer.interpreter import RangeBreakpoint, SaturationBreakpoint
    from tflite_viewer.ui.debugger.condition_dialog import ConditionDialog
    open_model(window, "mobilenet_v2_float.tflite")
    d = ConditionDialog(window.model, 0, 12, window)
    qtbot.addWidget(d)
    d.kind.setCurrentIndex(1)
    d.low.setValue(-1)
    d.high.setValue(1)
    d.scope.setCurrentIndex(2)
    bp = d.breakpoint()
    assert isinstance(bp, RangeBreakpoint) and (bp.low, bp.high, bp.op, bp.subgraph) == (-1, 1, 12, 0)
    d.kind.setCurrentIndex(2)
    d.scope.setCurrentIndex(0)
    assert isinstance(d.breakpoint(), SaturationBreakpoint)
    d.kind.setCurrentIndex(3)
    d.op_type.setCurrentText("MEAN")
    window.debugger.add_breakpoint(d.breakpoint())
    stop = press(qtbot, window, Qt.Key.Key_F5)
    assert stop.op_names[-1] == "MEAN"


def test_screenshot_run_to_shows_the_paused_window(tmp_path, capsys):
    """`--screenshot OUT --run-to N`: the current-op frame (the overlay's colour) is drawn,
    and bad arguments are one line and exit 2."""
    from tflite_viewer import cli
    from tflite_viewer.ui.debug_overlay import CURRENT

    from .test_screenshot_render import _has_color, _pixels
    out = tmp_path / "paused.png"
    assert cli.main([str(model_path("mobilenet_v2_float.tflite")), "--screenshot", str(out),
                     "--run-to", "20"]) == 0
    assert _has_color(_pixels(out), CURRENT.name(), tolerance=10, at_least=100)
    assert cli.main([str(model_path("mobilenet_v2_float.tflite")), "--screenshot",
                     str(tmp_path / "x.png"), "--run-to", "999"]) == 2
    assert "--run-to 999: subgraph 0 has 65 operators" in capsys.readouterr().err
    assert cli.main([str(model_path("sine_float.tflite")), "--run-to", "1"]) == 2
    assert "--run-to goes with --screenshot" in capsys.readouterr().err


def test_run_to_screenshot_takes_inputs_and_names_bad_ones(tmp_path, capsys):
    from tflite_viewer import cli
    from tflite_viewer.model import load_model
    model = load_model(model_path("sine_float.tflite"))
    name = model.subgraphs[0].tensors[model.subgraphs[0].inputs[0]].name
    np.savez(tmp_path / "in.npz", **{name: np.full((1, 1), 0.25, F32)})
    assert cli.main([str(model_path("sine_float.tflite")), "--screenshot",
                     str(tmp_path / "a.png"), "--run-to", "2", "--inputs",
                     str(tmp_path / "in.npz")]) == 0
    np.savez(tmp_path / "bad.npz", **{name: np.zeros((3, 3), F32)})
    assert cli.main([str(model_path("sine_float.tflite")), "--screenshot",
                     str(tmp_path / "b.png"), "--run-to", "2", "--inputs",
                     str(tmp_path / "bad.npz")]) == 2
    err = capsys.readouterr().err
    assert name in err and "shape" in err


def test_canvas_menu_actions_follow_the_selection(qtbot, window):
    from PySide6.QtWidgets import QMenu
    open_model(window, "sine_float.tflite")
    dbg = window.debugger
    window.select_op(1)
    menu = QMenu(window)
    dbg.add_menu_actions(menu)
    assert dbg.toggle_action in menu.actions() and dbg.run_to_action in menu.actions()
    window.select_tensor(0)
    menu = QMenu(window)
    dbg.add_menu_actions(menu)
    assert dbg.watch_action in menu.actions()
    dbg.watch_action.trigger()
    assert dbg.watch_panel.pinned == [(0, 0)]


def test_breakpoint_checkbox_keeps_its_row(qtbot, window):
    """Unchecking a breakpoint re-renders the dock in place: the row the user clicked is not
    deleted under its own change (Qt crashed on it), and it keeps the selection."""
    import shiboken6
    open_model(window, "sine_float.tflite")
    dbg = window.debugger
    dbg.toggle_breakpoint(0, 1)
    qtbot.waitUntil(lambda: len(dbg.breakpoint_infos) == 1, timeout=TIMEOUT)
    tree = dbg.breakpoints_panel.tree
    item = tree.topLevelItem(0)
    tree.setCurrentItem(item)
    item.setCheckState(0, Qt.CheckState.Unchecked)
    qtbot.waitUntil(lambda: not dbg.breakpoint_infos[0].enabled, timeout=TIMEOUT)
    assert shiboken6.isValid(item) and tree.topLevelItem(0) is item
    assert tree.currentItem() is item
    assert item.checkState(0) == Qt.CheckState.Unchecked


def test_docks_breakpoint_checkbox_call_stack_click_outputs_labels(qtbot, window):
    open_model(window, "mobilenet_v1_0.25_224_quant.tflite")
    dbg = window.debugger
    dbg.toggle_breakpoint(0, 5)
    qtbot.waitUntil(lambda: len(dbg.breakpoint_infos) == 1, timeout=TIMEOUT)
    item = dbg.breakpoints_panel.tree.topLevelItem(0)
    item.setCheckState(0, Qt.CheckState.Unchecked)  # disable from the dock
    qtbot.waitUntil(lambda: not dbg.breakpoint_infos[0].enabled, timeout=TIMEOUT)
    stop = press(qtbot, window, Qt.Key.Key_F5)
    assert stop.state == FINISHED  # the disabled breakpoint did not stop the run
    # Outputs: the classifier's top-5 with the labels the model carries
    from tflite_viewer.interpreter.inputs import complete_inputs, positional
    ref = Interpreter(model_path("mobilenet_v1_0.25_224_quant.tflite"))
    out = list(ref.invoke(positional(window.model, complete_inputs(window.model, {}, 0)[0]))
               .values())[0]
    best = int(np.argmax(out.reshape(-1)))
    labels = window.model.read_associated_file("labels.txt").decode().splitlines()
    text = dbg.outputs_panel.texts[0]
    assert text.startswith(f"1. #{best} {labels[best].strip()}")
    # the call stack: clicking the frame shows that op
    dbg.breakpoints_panel.tree.topLevelItem(0).setCheckState(0, Qt.CheckState.Checked)
    qtbot.waitUntil(lambda: dbg.breakpoint_infos[0].enabled, timeout=TIMEOUT)
    stop = press(qtbot, window, Qt.Key.Key_F5)
    assert stop.position == ((0, 5),)
    window.clear_selection()
    panel = dbg.callstack_panel
    panel._clicked(panel.tree.topLevelItem(0), 0)
    assert window.selection == ("op", 5)


def test_a_kernel_error_is_reported_and_the_run_stays_inspectable(qtbot, window):
    open_model(window, "sine_float.tflite")
    dbg = window.debugger
    press(qtbot, window, Qt.Key.Key_F10)
    press(qtbot, window, Qt.Key.Key_F10)

    def boom(interp, ev):
        raise RuntimeError("kernel exploded")
    dbg.worker.session.interpreter.add_hook("before", boom)
    stop = press(qtbot, window, Qt.Key.Key_F10)
    assert stop.state == "error" and "kernel exploded" in stop.message
    assert window.reported and "kernel exploded" in window.reported[-1][1]
    assert "subgraph 0" in stop.message and "op 1" in stop.message
    first = window.model.subgraphs[0].operators[0].outputs[0]
    window.select_tensor(first)
    qtbot.waitUntil(lambda: window.tensor_panel.current_histogram_input() is not None,
                    timeout=TIMEOUT)


def test_signature_selector_runs_the_chosen_signature(qtbot, window, settings):
    from tflite_viewer.ui.debugger.inputs_dialog import InputsDialog
    open_model(window, "multi_signature.tflite")
    dialog = InputsDialog(window.model, window.path, settings, window)
    qtbot.addWidget(dialog)
    assert dialog.signature_combo.isVisibleTo(dialog)
    dialog.signature_combo.setCurrentIndex(dialog.signature_combo.findData("encode"))
    assert [r.spec.name for r in dialog.rows] == ["x"]
    dialog.rows[0].source.setCurrentText("constant")
    dialog.rows[0].value.setText("0.5")
    dialog.accept()
    dbg = window.debugger
    dbg.set_inputs(dialog.arrays(), dialog.signature)
    stop = press(qtbot, window, Qt.Key.Key_F10)
    assert stop.position[0][0] == 1  # encode's subgraph, shown on the canvas
    assert window.subgraph == 1
    stop = press(qtbot, window, Qt.Key.Key_F5)
    x = np.full(window.model.signature("encode").inputs and
                window.model.subgraphs[1].tensors[window.model.signature("encode").inputs[0]
                                                  .tensor_index].shape, 0.5, F32)
    ref = Interpreter(model_path("multi_signature.tflite")).signature_runner("encode")(x=x)
    np.testing.assert_array_equal(stop.outputs["code"], ref["code"])


def test_outputs_image_view_greyscale_and_segmentation():
    from tflite_viewer.ui.debugger.outputs_dock import PALETTE, image_of
    grey = np.linspace(0, 1, 64, dtype=np.float32).reshape(1, 8, 8, 1)
    img = image_of(grey)
    assert img.shape == (8, 8, 3) and img[0, 0].tolist() == [0, 0, 0]
    assert img[-1, -1].tolist() == [255, 255, 255]
    seg = np.zeros((1, 6, 6, 5), np.float32)
    seg[0, :3, :, 2] = 1.0  # top half class 2, bottom half class 0
    img = image_of(seg)
    assert img[0, 0].tolist() == PALETTE[2].tolist() and img[5, 5].tolist() == PALETTE[0].tolist()
    assert image_of(np.zeros((1, 10), np.float32)) is None


def test_the_state_says_when_float_sums_are_blas(qtbot, window):
    """Auto computes with BLAS sums (not LiteRT's reference bits, issue 40): the status bar
    says so."""
    open_model(window, "sine_float.tflite")
    stop = press(qtbot, window, Qt.Key.Key_F10)
    assert stop.float_sums == "blas"
    assert window.debugger.state_label.text().endswith("REF kernels, BLAS float sums")


def test_debug_float_sums_menu_is_remembered_and_restarts_the_run(qtbot, window, settings):
    """Debug > Float Sums: Auto checked by default; choosing REF-exact sums on a model
    Auto would run with BLAS ends the running session with a notice, and the next run adds
    in the reference order; the choice is in the settings a new window reads."""
    from tflite_viewer.ui.main_window import MainWindow
    ctl = window.debugger
    actions = ctl.float_sums_actions
    assert [a.text() for a in actions.values()] == [
        "Auto (BLAS; REF-exact in a cross-check)", "REF-exact float sums", "BLAS everywhere"]
    assert actions["auto"].isChecked()
    open_model(window, "sine_float.tflite")
    assert press(qtbot, window, Qt.Key.Key_F10).float_sums == "blas"
    actions["reference"].trigger()
    assert actions["reference"].isChecked() and not actions["auto"].isChecked()
    assert not window.workspace.debug.active  # the BLAS run ended
    assert "REF-exact float sums" in window.notice.text()
    assert press(qtbot, window, Qt.Key.Key_F10).float_sums == "reference"
    assert not window.debugger.state_label.text().endswith("BLAS float sums")
    other = MainWindow(settings=settings)
    qtbot.addWidget(other)
    assert other.debugger.float_sums_actions["reference"].isChecked()
    assert other.debugger.float_sums() == "reference"


def test_the_cross_check_computes_with_the_debugger_s_float_sums():
    """Debug > Cross-check runs our interpreter with the chosen float sums: with Reference
    Order every CONV_2D output is LiteRT's reference bits, with BLAS some are not."""
    from tflite_viewer.model import load_model
    from tflite_viewer.ui.debugger.crosscheck_dock import run_cross_check
    model = load_model(model_path("small_cnn_dilated_float.tflite"))
    convs = [op.outputs[0] for op in model.subgraphs[0].operators if op.name == "CONV_2D"]
    differ = {}
    for mode in ("reference", "blas"):
        check = run_cross_check(model, {}, None, mode)
        ref = check.report.litert_tensors
        differ[mode] = sum(int(np.sum(check.ours[t] != ref[t])) for t in convs)
    assert differ["reference"] == 0 and differ["blas"] > 0


def test_closing_during_a_command_that_does_not_return_leaves_it_to_end_alone(
        qtbot, settings, monkeypatch):
    """A window closed while its debugger builds an interpreter (a command that cannot be
    interrupted) closes at once; the thread is kept off the window, which can then be
    deleted, and ends on its own.  Deleting a window with its thread running aborted Qt."""
    import threading

    from PySide6.QtCore import QCoreApplication, QEvent

    from tflite_viewer.ui.debugger import controller, worker, worker_thread
    from tflite_viewer.ui.errors import ErrorReporter
    from tflite_viewer.ui.main_window import MainWindow

    entered, release = threading.Event(), threading.Event()

    class SlowInterpreter(Interpreter):
        def __init__(self, *args, **kwargs):
            entered.set()
            release.wait(30)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(worker, "Interpreter", SlowInterpreter)
    monkeypatch.setattr(controller, "SHUTDOWN_WAIT_MS", 200)
    win = MainWindow(settings=settings, errors=ErrorReporter(interactive=False))
    win.ask_before_discarding = False
    win.show()
    open_model(win, "sine_float.tflite")
    thread = win.debugger.thread
    assert win.debugger.ensure_session()
    assert entered.wait(10)
    win.close()
    assert thread.isRunning() and worker_thread.running() >= 1
    assert win.debugger.thread is not thread  # a fresh worker, should the close be cancelled
    win.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    release.set()
    qtbot.waitUntil(lambda: worker_thread.running() == 0, timeout=TIMEOUT)
