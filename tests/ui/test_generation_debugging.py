"""Debugging a generation run in the window: the Inputs dialog sets up prefill then decode
steps, a breakpoint in decode stops in decode #3 on the third F5 with the Call Stack naming
the call, the Watch dock shows that call's KV cache, the cross-check runs on that call's
inputs, and the run ends with LiteRT's ids in the Outputs dock."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from tests.interpreter.kv_decoder_models import KV_NAMES, PREFILL, kv_decoder_model
from tests.interpreter.test_generation import PROMPT, litert_loop
from tflite_viewer.interpreter.session import FINISHED, PAUSED

TIMEOUT = 30000


def _f5(qtbot, window):
    dbg = window.debugger
    before = dbg.last_stop.serial if dbg.last_stop is not None else 0
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_F5)
    qtbot.waitUntil(lambda: dbg.last_stop is not None and dbg.last_stop.serial > before
                    and not dbg.busy, timeout=TIMEOUT)
    return dbg.last_stop


def test_breakpoint_in_decode_3_with_the_call_named_and_the_cache_watched(
        qtbot, window, settings, tmp_path):
    from tflite_viewer.ui.debugger.inputs_dialog import GENERATE, InputsDialog
    path = tmp_path / "decoder.tflite"
    path.write_bytes(kv_decoder_model(0))
    ref, _ = litert_loop(path, PROMPT, 8, KV_NAMES, prefill=f"prefill_{PREFILL}")
    assert window.open_path(path, wait=True)
    model = window.model
    dialog = InputsDialog(model, window.path, settings, window)
    qtbot.addWidget(dialog)
    dialog.signature_combo.setCurrentIndex(dialog.signature_combo.findData(GENERATE))
    form = dialog.generation_form
    assert form.isVisibleTo(dialog) and not dialog.table.isVisibleTo(dialog)
    assert (form.prefill.currentText(), form.decode.currentText()) == (f"prefill_{PREFILL}",
                                                                       "decode")
    assert form.kv.text() == ", ".join(sorted(KV_NAMES))
    form.prompt.setText("5, 17, 999999")  # an id past the position limits is fine ...
    form.steps.setValue(40)               # ... 40 steps are not: the cache holds 16
    dialog.accept()
    assert "the KV cache holds 16 positions" in dialog.error.text()
    form.prompt.setText(", ".join(map(str, PROMPT)))
    form.steps.setValue(8)
    dialog.accept()
    assert dialog.generation is not None and dialog.generation.prompt == tuple(PROMPT)
    dbg = window.debugger
    dbg.set_generation(dialog.generation)
    # a breakpoint before decode's SOFTMAX (F9 on the selected op), the cache watched
    dec = model.signature("decode").subgraph_index
    window.show_subgraph("decode", wait=True)
    softmax = next(op.index for op in model.subgraphs[dec].operators if op.name == "SOFTMAX")
    window.select_op(softmax)
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_F9)
    k0 = next(m.tensor_index for m in model.signature("decode").inputs
              if m.name == "kv_cache_k_0")
    dbg.watch(dec, k0)
    for expected in ("decode #1", "decode #2", "decode #3"):
        stop = _f5(qtbot, window)
        assert stop.state == PAUSED and stop.call.label == expected
    assert stop.position == ((dec, softmax),)
    rows = dbg.callstack_panel.rows()
    assert rows[0] == (f"decode (subgraph {dec})", f"#{softmax} SOFTMAX")
    assert rows[-1][0] == "decode #3 (signature 'decode')"
    assert rows[-1][1] == f"call 4 of 9: token {ref[1]} at position {len(PROMPT) + 1}"
    assert "decode #3: paused at decode/op" in dbg.state_label.text()
    # the Watch dock shows decode #3's KV cache: what decode #2 gave back
    qtbot.waitUntil(lambda: (dec, k0) in dbg.snapshots, timeout=TIMEOUT)
    snap = dbg.snapshots[(dec, k0)]
    assert np.array_equal(snap.values, stop.call.inputs["kv_cache_k_0"])
    assert "kv_cache_k_0" in " ".join(" ".join(r) for r in dbg.watch_panel.row_texts())
    # the cross-check runs on the call paused in: decode's signature, decode #3's inputs
    inputs, signature = dbg.run_inputs()
    assert signature == "decode" and int(inputs["input_pos"][0]) == len(PROMPT) + 1
    assert np.array_equal(inputs["kv_cache_k_0"], snap.values)
    # F9 again removes the breakpoint; F5 runs to the end: LiteRT's ids
    window.select_op(softmax)
    qtbot.keyClick(window.view, Qt.Key.Key_F9)
    end = _f5(qtbot, window)
    assert end.state == FINISHED and list(end.tokens) == ref
    qtbot.waitUntil(lambda: bool(dbg.outputs_panel.texts), timeout=TIMEOUT)
    assert dbg.outputs_panel.texts[0].endswith(f"generated (8): {' '.join(map(str, ref))}")
    # the dialog opened again shows the loop as set up
    again = InputsDialog(model, window.path, settings, window, None, dbg.ws.debug.generation)
    qtbot.addWidget(again)
    assert again.generating and again.generation_form.prompt.text() == "5, 17, 42"
