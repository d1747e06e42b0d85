"""The debugger's Inputs dialog runs a signature by input name (tests/signature_model.py:
its signatures list their inputs out of subgraph order, all float32 of one shape, so a
positional mix-up computes other numbers without an error)."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from tests.litert_oracle import litert
from tests.signature_model import two_signature_model
from tflite_viewer.interpreter.session import FINISHED

TIMEOUT = 10000


def test_inputs_dialog_feeds_the_signature_by_name(qtbot, window, settings, tmp_path):
    from tflite_viewer.ui.debugger.inputs_dialog import InputsDialog
    path = tmp_path / "two_signatures.tflite"
    path.write_bytes(two_signature_model())
    assert window.open_path(path, wait=True)
    dialog = InputsDialog(window.model, window.path, settings, window)
    qtbot.addWidget(dialog)
    dialog.signature_combo.setCurrentIndex(dialog.signature_combo.findData("second"))
    assert [r.spec.name for r in dialog.rows] == ["r_in", "p_in", "q_in"]  # its own order
    values = {"r_in": "0.25", "p_in": "1.5", "q_in": "-2"}
    for row in dialog.rows:
        row.source.setCurrentText("constant")
        row.value.setText(values[row.spec.name])
    dialog.accept()
    dbg = window.debugger
    dbg.set_inputs(dialog.arrays(), dialog.signature)
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_F5)
    qtbot.waitUntil(lambda: dbg.last_stop is not None and not dbg.busy, timeout=TIMEOUT)
    stop = dbg.last_stop
    assert stop.state == FINISHED, stop.message
    named = {k: np.full((1, 4), float(v), np.float32) for k, v in values.items()}
    ref = litert(path).get_signature_runner("second")(**named)["result"]
    np.testing.assert_allclose(stop.outputs["result"], ref, rtol=1e-6, atol=1e-6)
    # the Outputs dock names the signature's outputs with their own tensors (the signature
    # lists them in another order than the subgraph: by position each would get the other's)
    qtbot.waitUntil(lambda: bool(dbg.outputs_panel.texts), timeout=TIMEOUT)
    heads = [w.text() for w in dbg.outputs_panel.body.findChildren(type(dialog.error))
             if "<b>" in w.text()]
    assert heads == ["<b>fc_out</b> (t5) float32[1, 4]", "<b>result</b> (t7) float32[1, 4]"]
