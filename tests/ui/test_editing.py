"""Editing in the window (issue 7, "Live, in the window"): typed editors in the panels, one
QUndoCommand per core EditCommand, refresh in place, notices, Save / Save As, and the
unsaved-changes prompt.  Dialogs are monkeypatched; nothing here may block."""
from __future__ import annotations


import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox

from tflite_viewer.edit import SetOption, SetTensorShape
from tflite_viewer.model import load_model


DILATED = "small_cnn_dilated_float.tflite"
DW = 2  # DEPTHWISE_CONV_2D in small_cnn_dilated_float
SOFTMAX = 12
Yes, No = QMessageBox.StandardButton.Yes, QMessageBox.StandardButton.No


def answer(monkeypatch, button, calls=None):
    """Make QMessageBox.question answer ``button`` (recording the questions asked)."""
    def question(*args, **kwargs):
        if calls is not None:
            calls.append(args[1] if len(args) > 1 else "")
        return button
    monkeypatch.setattr(QMessageBox, "question", staticmethod(question))


def opened(window, path):
    assert window.open_path(path, wait=True)
    return window


def test_dilation_edit_through_the_properties_editor(window, private_copy):
    opened(window, private_copy())
    window.select_op(DW)
    zoom = window.view.zoom()
    spin = window.properties_panel.editor("option:dilation_w_factor")
    assert spin is not None and spin.minimum() == 1  # the schema's range: dilations >= 1
    assert window.properties_panel.editor("option:stride_w").minimum() == 1
    padding = window.properties_panel.editor("option:padding")
    assert [padding.itemText(i) for i in range(padding.count())] == ["SAME", "VALID"]
    doc = window.document
    before = doc.to_bytes()

    spin.setValue(2)  # an arrow click / Enter: commits at once

    op = window.model.subgraphs[0].operators[DW]
    assert window.model is doc.model
    assert op.builtin_options["dilation_w_factor"] == 2
    assert op.version == 2
    assert window.model.min_runtime_version == "1.12.0"
    status = window.statusBar().currentMessage()
    assert "DEPTHWISE_CONV_2D v1 -> v2" in status and "needs runtime 1.12.0" in status
    assert "re-serialized in" in status and " ms" in status and ("bytes" in status or "KB" in status)
    assert window.notice.isVisible() and "DEPTHWISE_CONV_2D v1 -> v2" in window.notice.text()
    assert window.isWindowModified() and "[*]" in window.windowTitle()
    assert window.selection == ("op", DW)  # selection and view kept
    assert window.view.zoom() == pytest.approx(zoom)
    assert window.properties_panel.operator.index == DW
    rows = {r.key: r.value for r in window.properties_panel.rows()
            if r.section.startswith("Options")}
    assert rows["dilation_w_factor"] == "2"
    label = window.graph_scene.data.labels[window.graph_scene.data.op_node[DW]]
    assert label.version == "v2"
    after = doc.to_bytes()

    stack = window.undo_stack
    assert stack.count() == 1 and stack.undoText().startswith("Set ")
    stack.undo()
    assert doc.to_bytes() == before
    assert window.model.subgraphs[0].operators[DW].version == 1
    assert not window.isWindowModified()
    stack.redo()
    assert doc.to_bytes() == after
    assert window.model.subgraphs[0].operators[DW].builtin_options["dilation_w_factor"] == 2
    window.actions.undo.trigger()  # the Edit menu's action (Ctrl+Z)
    assert doc.to_bytes() == before
    window.actions.redo.trigger()
    assert doc.to_bytes() == after and doc.history_index == 1


def test_undo_redo_of_several_edits_is_byte_identical(window, private_copy):
    opened(window, private_copy())
    doc = window.document
    states = [doc.to_bytes()]
    window.select_op(DW)
    window.properties_panel.editor("option:dilation_h_factor").setValue(3)
    states.append(doc.to_bytes())
    window.properties_panel.editor("option:padding").setCurrentText("SAME")
    window.properties_panel.editor("option:padding").activated.emit(0)
    states.append(doc.to_bytes())
    window.select_tensor(0)
    window.tensor_panel.editor("name").setText("image")
    window.tensor_panel.editor("name").editingFinished.emit()
    states.append(doc.to_bytes())
    assert len(set(states)) == 4
    stack = window.undo_stack
    assert stack.count() == 3 and doc.history_index == 3
    for i in (2, 1, 0):
        stack.undo()
        assert doc.to_bytes() == states[i] and doc.history_index == i
    for i in (1, 2, 3):
        stack.redo()
        assert doc.to_bytes() == states[i] and doc.history_index == i
    stack.setIndex(1)
    assert doc.to_bytes() == states[1]
    assert window.history_view.stack() is stack


def test_rename_tensor_in_the_tensor_panel_updates_graph_and_panel(window, private_copy):
    opened(window, private_copy())
    window.select_tensor(0)  # the subgraph input: a labelled box on the canvas
    edit = window.tensor_panel.editor("name")
    edit.setText("camera_image")
    edit.editingFinished.emit()
    assert window.model.subgraphs[0].tensors[0].name == "camera_image"
    assert window.tensor_panel.title.text().endswith("camera_image")
    assert {r.key: r.value for r in window.tensor_panel.rows() if r.section == "Tensor"}["name"] == "camera_image"
    data = window.graph_scene.data
    rows = data.tensor_nodes[0]
    assert any(data.labels[r].title == "camera_image" for r in rows)
    assert window.selection == ("tensor", 0)
    assert any("tensors[0].name" in line for line in window.changes_panel.lines())


@pytest.mark.parametrize("how", ["stride 0", "bad enum", "bad shape text", "negative shape"])
def test_invalid_values_show_the_error_and_change_nothing(window, private_copy, how):
    opened(window, private_copy())
    doc = window.document
    before = doc.to_bytes()
    failures = []
    window.editFailed.connect(failures.append)
    if how == "stride 0":
        window.select_op(DW)
        window.properties_panel.set_option("stride_w", 0)  # past the spin box's minimum
        key = "must be at least 1"
    elif how == "bad enum":
        window.select_op(DW)
        window.properties_panel.set_option("padding", "DIAGONAL")
        key = "unknown Padding"
    else:
        window.select_tensor(13)
        shape = window.tensor_panel.editor("shape")
        shape.setText("1, x, 32, 8" if how == "bad shape text" else "1, -32, 32, 8")
        shape.textEdited.emit(shape.text())
        assert shape.styleSheet()  # flagged while typing
        shape.editingFinished.emit()
        key = "expected an integer" if how == "bad shape text" else ">= 0"
    assert failures and key in failures[0]
    assert key in window.statusBar().currentMessage()
    assert window.notice.isVisible() and window.notice.level == "error"
    assert doc.to_bytes() == before and not doc.can_undo
    assert window.undo_stack.count() == 0 and not window.isWindowModified()
    if how.endswith("shape") or how == "bad shape text":  # the editor shows the model's value again
        assert window.tensor_panel.editor("shape").text() == "1, 32, 32, 8"
    else:
        assert window.properties_panel.editor("option:stride_w").value() == 1
    assert not window.reported  # no modal error, no traceback


def test_shape_edit_warns_when_shapes_stop_agreeing(window, private_copy):
    opened(window, private_copy())
    window.select_tensor(24)
    result = window.apply_edit(SetTensorShape(0, 24, [1, 11]))
    assert result is not None and result.warnings
    assert "warning" in window.statusBar().currentMessage()
    assert window.notice.isVisible() and "Warning" in window.notice.text()
    assert window.model.subgraphs[0].tensors[24].shape == (1, 11)


def test_set_quantization_per_tensor(window, private_copy):
    opened(window, private_copy("small_cnn_dilated_int8.tflite"))
    sg = window.model.subgraphs[0]
    t = next(t for t in sg.tensors if not t.is_constant and t.quantization is not None
             and not t.quantization.is_per_channel and t.type_name == "INT8")
    window.select_tensor(t.index)
    scale = window.tensor_panel.editor("scale")
    scale.setText("0.05")
    scale.editingFinished.emit()
    q = window.model.subgraphs[0].tensors[t.index].quantization
    assert q.scale.tolist() == pytest.approx([0.05])
    window.tensor_panel.editor("zero point").setValue(-3)
    q = window.model.subgraphs[0].tensors[t.index].quantization
    assert q.scale.tolist() == pytest.approx([0.05]) and q.zero_point.tolist() == [-3]
    assert window.tensor_panel.editor("zero point").maximum() == 127
    assert window.undo_stack.count() == 2
    info = {r.key: r.value for r in window.tensor_panel.rows() if r.section == "Quantization"}
    assert info["zero point"] == "-3"


def test_per_channel_table_editing(window, private_copy):
    opened(window, private_copy("small_cnn_dilated_int8.tflite"))
    sg = window.model.subgraphs[0]
    t = next(t for t in sg.tensors if t.quantization is not None and t.quantization.is_per_channel)
    old = t.quantization.scale.copy()
    window.select_tensor(t.index)
    channels = window.tensor_panel.channels
    index = channels.index(1, 1)
    assert channels.flags(index) & channels.flags(index).ItemIsEditable
    assert channels.setData(index, "0.125")
    q = window.model.subgraphs[0].tensors[t.index].quantization
    assert float(q.scale[1]) == pytest.approx(0.125)
    assert np.allclose(np.delete(q.scale, 1), np.delete(old, 1))
    assert window.tensor_panel.channels.rows[1].scale == pytest.approx(0.125)


def test_expose_tensor_and_remove_operator(window, private_copy):
    opened(window, private_copy())
    doc = window.document
    before = doc.to_bytes()
    window.select_tensor(17)
    window.tensor_panel.expose()
    assert 17 in window.model.subgraphs[0].outputs
    assert 17 in window.graph_scene.data.tensor_nodes  # an output box on the canvas now
    assert window.selection == ("tensor", 17)
    window.select_op(SOFTMAX)
    window.actions.remove_op.setEnabled(True)
    window.actions.remove_op.trigger()
    ops = window.model.subgraphs[0].operators
    assert len(ops) == 12 and all(o.name != "SOFTMAX" for o in ops)
    assert window.selection is None  # the selected operator is gone
    assert window.properties_panel.operator is None
    window.select_op(11)  # FULLY_CONNECTED now writes the output
    window.undo_stack.undo()
    assert window.model.subgraphs[0].operators[SOFTMAX].name == "SOFTMAX"
    assert window.selection == ("op", 11)
    window.undo_stack.undo()
    assert doc.to_bytes() == before


def test_remove_operator_that_changes_shapes_is_refused(window, private_copy):
    opened(window, private_copy())
    before = window.document.to_bytes()
    window.select_op(0)
    window.properties_panel.remove_operator()
    assert "would break the graph" in window.statusBar().currentMessage()
    assert window.document.to_bytes() == before


def test_op_version_and_custom_options(window, private_copy):
    opened(window, private_copy("ssd_mobilenet_v1.tflite"))
    sg = window.model.subgraphs[0]
    k = next(o.index for o in sg.operators if o.name == "TFLite_Detection_PostProcess")
    window.select_op(k)
    panel = window.properties_panel
    panel.editor("custom:max_detections").setValue(20)
    assert window.model.subgraphs[0].operators[k].custom_options["max_detections"] == 20
    panel.editor("custom+key").setText("extra_flag")
    panel.editor("custom+value").setText("true")
    panel.editor("custom+value").returnPressed.emit()
    assert window.model.subgraphs[0].operators[k].custom_options["extra_flag"] is True
    panel.remove_custom_option("extra_flag")
    assert "extra_flag" not in window.model.subgraphs[0].operators[k].custom_options
    window.select_op(0)
    panel.editor("version").setValue(3)
    assert window.model.subgraphs[0].operators[0].version == 3
    assert window.undo_stack.count() == 4


def test_model_panel_description_signatures_and_metadata(window, private_copy, monkeypatch):
    opened(window, private_copy("multi_signature.tflite"))
    panel = window.model_panel
    desc = panel.editors["description"]
    desc.setText("an autoencoder")
    desc.editingFinished.emit()
    assert window.model.description == "an autoencoder"
    panel.rename_signature("encode", "encoder")
    assert {s.key for s in window.model.signature_defs} == {"decode", "encoder"}
    panel.rename_signature_tensor("encoder", "inputs", "x", "pixels")
    sig = window.model.signature("encoder")
    assert sig.inputs[0].name == "pixels"
    panel.rename_signature("decode", "encoder")  # a duplicate key: refused
    assert "already exists" in window.statusBar().currentMessage()
    from PySide6.QtWidgets import QInputDialog
    monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *a, **k: ("author", True)))
    monkeypatch.setattr(QInputDialog, "getMultiLineText", staticmethod(lambda *a, **k: ("tests", True)))
    panel.editors["metadata+"].click()
    assert bytes(window.model.metadata_entry("author").data) == b"tests"
    panel.remove_metadata("author")
    assert window.model.metadata_entry("author") is None
    assert window.undo_stack.count() == 5


def test_replace_data_from_npy_with_requantize(window, private_copy, tmp_path, monkeypatch):
    opened(window, private_copy("small_cnn_dilated_int8.tflite"))
    sg = window.model.subgraphs[0]
    t = next(t for t in sg.tensors if t.is_constant and t.type_name == "INT8" and t.quantization is not None
             and t.quantization.is_per_channel)
    window.select_tensor(t.index)
    assert window.tensor_panel.replace_button.isVisibleTo(window.tensor_panel)
    real = t.dequantized() * 0.5
    path = tmp_path / "w.npy"
    np.save(path, real.astype(np.float32))
    asked = []
    answer(monkeypatch, Yes, asked)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(path), "")))
    window.tensor_panel.replace_dialog()
    assert asked == ["Requantize from float?"]
    new = window.model.subgraphs[0].tensors[t.index]
    assert np.allclose(new.dequantized(), real, atol=float(new.quantization.scale.max()))
    # without requantizing, float data for an int8 tensor is refused with the edit layer's words
    before = window.document.to_bytes()
    window.tensor_panel.replace_from_npy(path, requantize=False)
    assert "requantize" in window.statusBar().currentMessage()
    assert window.document.to_bytes() == before


def test_save_as_writes_a_model_litert_loads(window, private_copy, tmp_path, monkeypatch):
    src = private_copy()
    original = src.read_bytes()
    opened(window, src)
    window.apply_edit(SetOption(0, DW, "dilation_w_factor", 2))
    out = tmp_path / "fixed.tflite"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(out), "")))
    assert window.files.save_as()
    assert src.read_bytes() == original
    saved = load_model(out)
    assert saved.subgraphs[0].operators[DW].builtin_options["dilation_w_factor"] == 2
    assert saved.subgraphs[0].operators[DW].version == 2
    from ai_edge_litert.interpreter import Interpreter
    interp = Interpreter(model_path=str(out))
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], np.zeros((1, 32, 32, 3), np.float32))
    interp.invoke()
    assert not window.isWindowModified()
    assert window.windowTitle().startswith("fixed.tflite")
    # Ctrl+S now writes the Save As target, never the original
    window.apply_edit(SetOption(0, DW, "dilation_h_factor", 2))
    calls = []
    answer(monkeypatch, No, calls)
    assert window.files.save() and not calls
    assert load_model(out).subgraphs[0].operators[DW].builtin_options["dilation_h_factor"] == 2
    assert src.read_bytes() == original


def test_save_never_overwrites_the_original_without_confirmation(window, private_copy, monkeypatch):
    src = private_copy()
    original = src.read_bytes()
    opened(window, src)
    window.apply_edit(SetOption(0, DW, "dilation_w_factor", 2))
    calls = []
    answer(monkeypatch, No, calls)
    assert not window.files.save()
    assert calls == ["Replace the opened model?"]
    assert src.read_bytes() == original
    assert window.isWindowModified()
    assert "Not saved" in window.statusBar().currentMessage()
    answer(monkeypatch, Yes)
    assert window.files.save()
    assert src.read_bytes() == window.document.to_bytes() != original
    assert load_model(src).subgraphs[0].operators[DW].builtin_options["dilation_w_factor"] == 2
    assert not window.isWindowModified()


def test_unsaved_changes_prompt_on_open_and_close(window, private_copy, monkeypatch):
    src = private_copy()
    other = private_copy("sine_float.tflite")
    opened(window, src)
    window.ask_before_discarding = True
    window.apply_edit(SetOption(0, DW, "dilation_w_factor", 2))
    calls = []
    answer(monkeypatch, QMessageBox.StandardButton.Cancel, calls)
    assert not window.open_path(other, wait=True)  # Cancel: keep the edited model
    assert calls == ["Unsaved changes"] and window.path == src and window.isWindowModified()
    assert not window.close()  # Cancel also keeps the window open
    assert window.isVisible()
    answer(monkeypatch, QMessageBox.StandardButton.Discard, calls)
    assert window.open_path(other, wait=True)
    assert window.path == other and not window.isWindowModified()
    assert window.undo_stack.count() == 0
    # Save from the prompt goes through the overwrite confirmation (answered No: nothing written)
    window.open_path(src, wait=True)
    window.apply_edit(SetOption(0, DW, "dilation_w_factor", 2))
    original = src.read_bytes()
    replies = iter([QMessageBox.StandardButton.Save, No])
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *a, **k: next(replies)))
    assert not window.close()
    assert src.read_bytes() == original
    window.ask_before_discarding = False


def test_changes_dock_lists_field_changes_and_history_dock(window, private_copy):
    opened(window, private_copy())
    window.history_dock.show()
    window.changes_dock.show()
    window.apply_edit(SetOption(0, DW, "dilation_w_factor", 2))
    lines = window.changes_panel.lines()
    assert "operator_codes[2].version: 1 -> 2" in lines
    assert "subgraphs[0].operators[2].builtin_options.dilation_w_factor: 1 -> 2" in lines
    assert any("min_runtime_version" in line for line in lines)
    assert window.changes_panel.list.count() == len(lines)
    window.undo_stack.undo()
    assert window.changes_panel.lines() == []
    window.changes_dock.hide()
    window.undo_stack.redo()
    assert window.history_view.model().rowCount() == 2  # the opened file + one edit
    assert window.changes_panel.lines() == []  # closed: not recomputed ...
    window.changes_dock.show()
    assert window.changes_panel.lines() == lines  # ... until it is shown again


def test_model_replaced_signal_and_layout_reuse(window, private_copy):
    opened(window, private_copy())
    replaced = []
    window.model_replaced.connect(replaced.append)
    layout = window.graph_scene.data.layout
    window.apply_edit(SetOption(0, DW, "dilation_w_factor", 2))
    assert replaced == [window.model]
    assert window.graph_scene.data.layout is layout  # options only: the boxes stay
    window.editing.expose_tensor(17)
    assert window.graph_scene.data.layout is not layout  # a new output box: laid out again
    assert len(replaced) == 2


def test_edit_menu_and_shortcuts(window, private_copy):
    opened(window, private_copy())
    assert window.actions.undo.shortcut().toString() == "Ctrl+Z"
    assert window.actions.redo.shortcuts()[0].toString() == "Ctrl+Shift+Z"
    assert window.actions.save.shortcut().toString() == "Ctrl+S"
    assert window.actions.save_as.shortcut().toString() == "Ctrl+Shift+S"
    assert not window.actions.undo.isEnabled()
    window.apply_edit(SetOption(0, DW, "dilation_w_factor", 2))
    assert window.actions.undo.isEnabled()


def test_editing_screenshot_script(tmp_path):
    from PySide6.QtGui import QImage

    from .editing_screenshot import take
    out = take(tmp_path / "editing.png", size=(1200, 800))
    image = QImage(str(out))
    assert image.width() == 1200 and image.height() == 800


def test_signature_rename_in_place_through_the_delegate(window, private_copy, qtbot):
    from PySide6.QtWidgets import QStyleOptionViewItem

    from tflite_viewer.ui.panels.model_panel import RENAME_ROLE
    opened(window, private_copy("multi_signature.tflite"))
    tree = window.model_panel.tree
    items = [it for it in tree.findItems("*", Qt.MatchFlag.MatchWildcard | Qt.MatchFlag.MatchRecursive)
             if it.data(0, RENAME_ROLE) == ["outputs", "decode", "recon"]]
    assert items
    delegate = tree.itemDelegate()
    index = tree.indexFromItem(items[0], 0)
    assert delegate.createEditor(tree.viewport(), QStyleOptionViewItem(), tree.indexFromItem(items[0], 1)) is None
    editor = delegate.createEditor(tree.viewport(), QStyleOptionViewItem(), index)
    delegate.setEditorData(editor, index)
    assert editor.text() == "recon"
    editor.setText("z")  # "z" is an input name: outputs may reuse it
    editor.textEdited.emit("z")
    assert not editor.styleSheet()
    delegate.setModelData(editor, tree.model(), index)
    qtbot.waitUntil(lambda: window.model.signature("decode").outputs[0].name == "z", timeout=2000)


def test_canvas_context_menu_actions(window, private_copy, monkeypatch):
    from PySide6.QtCore import QPoint

    from tflite_viewer.ui.panels import common
    menus = []
    monkeypatch.setattr(common, "exec_menu", lambda menu, pos: menus.append(
        [a.text() for a in menu.actions() if a.text()]))
    opened(window, private_copy())
    data = window.graph_scene.data
    window.editing.canvas_menu("node", data.op_node[SOFTMAX], QPoint())
    assert window.selection == ("op", SOFTMAX)
    # the editor's action, then the debugger's for the same operator
    assert menus[-1] == ["Remove operator #12 SOFTMAX", "Toggle &Breakpoint", "&Run to Selected Operator"]
    edge = data.tensor_edges[17][0]
    window.editing.canvas_menu("edge", edge, QPoint())
    assert window.selection == ("tensor", 17)
    assert menus[-1] == ["Expose as subgraph output", "&Watch Selected Tensor"]
    window.properties_panel._context_menu(QPoint(5, 5))
    assert menus[-1][-1].startswith("Remove operator #")
    window.tensor_panel._context_menu(QPoint(5, 5))
    assert menus[-1][0] == "Expose as subgraph output"


def test_a_failing_undo_keeps_stack_and_document_in_step(window, private_copy, qtbot, monkeypatch):
    from tflite_viewer.model import EditError
    opened(window, private_copy())
    window.apply_edit(SetOption(0, DW, "dilation_w_factor", 2))
    doc = window.document
    after = doc.to_bytes()

    def broken():
        raise EditError("disk on fire")
    monkeypatch.setattr(doc, "undo", broken)
    window.undo_stack.undo()
    assert "disk on fire" in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: window.undo_stack.index() == doc.history_index == 1, timeout=2000)
    assert doc.to_bytes() == after
