"""Debugging a generation run in the window: the Inputs dialog sets up prefill then decode
steps, a breakpoint in decode stops in decode #3 on the third F5 with the Call Stack naming
the call, the Watch dock shows that call's KV cache, the cross-check runs on that call's
inputs, and the run ends with LiteRT's ids in the Outputs dock."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from tests.conftest import MODELS_DIR as MODELS
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
    form.kv.setText("kv_cache_k_*")  # a piece set by hand, wrongly: the v caches unfed
    dialog.accept()
    assert "none of tokens, position or KV cache" in dialog.error.text()
    form.kv.setText("kv_cache_*")  # by hand, as globs
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
    assert rows[-1][1] == f"token {ref[1]} at position {len(PROMPT) + 1}"
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


LLM = MODELS / "llm" / "tiny_llama_f32.tflite"


def test_screenshot_steps_pause_in_decode_3_with_the_cache_watched(qtbot, window):
    """What `--screenshot --generate 8 --run-to N --decode-step 3 --watch ...` does, on
    the committed litert-torch export: paused before the attention composite of decode
    #3, the Call Stack naming it beside the Watch dock holding the KV cache."""
    from tflite_viewer.ui import screenshot_steps
    from tflite_viewer.ui.debugger.screenshot import pause_before
    assert window.open_path(LLM, subgraph="decode", wait=True)
    model = window.model
    dec = model.signature("decode").subgraph_index
    attention = next(op.index for op in model.subgraphs[dec].operators
                     if op.composite_name == "odml.scaled_dot_product_attention")
    screenshot_steps.generation(window, 8, "5,17,42")
    pause_before(window, attention, call=3)
    screenshot_steps.watch(window, ["kv_cache_k_0", "kv_cache_v_0"])
    dbg = window.debugger
    stop = dbg.last_stop
    assert stop.call.label == "decode #3" and stop.position == ((dec, attention),)
    assert dbg.callstack_panel.rows()[-1][0] == "decode #3 (signature 'decode')"
    names = [r[0] for r in dbg.watch_panel.row_texts()]
    assert len(names) == 2 and "kv_cache_k_0" in names[0] and "kv_cache_v_0" in names[1]
    assert dbg.callstack_dock.isVisible() and dbg.watch_dock.isVisible()
    assert dbg.watch_dock not in window.tabifiedDockWidgets(dbg.callstack_dock)
    for name in ("kv_cache_k_0", "kv_cache_v_0"):  # the values decode #3 reads
        t = next(m.tensor_index for m in model.signature("decode").inputs if m.name == name)
        assert np.array_equal(dbg.snapshots[(dec, t)].values, stop.call.inputs[name])


def test_screenshot_command_line(tmp_path, capsys):
    from tflite_viewer import cli
    out = tmp_path / "decode3.png"
    args = [str(LLM), "--screenshot", str(out), "--generate", "8", "--prompt", "5,17,42",
            "--subgraph", "decode", "--run-to", "51", "--decode-step", "3",
            "--watch", "kv_cache_k_0"]
    assert cli.main(args) == 0 and out.stat().st_size > 10_000
    for bad, message in (
            (["--generate", "8"], "--generate goes with --run-to N"),
            (["--run-to", "3", "--decode-step", "2"], "--decode-step goes with --generate K"),
            (["--run-to", "3", "--generate", "2", "--decode-step", "3"], "decode steps 1..2"),
            (["--run-to", "3", "--generate", "40"], "the KV cache holds 32"),
            (["--run-to", "3", "--watch", "nothing"], "--watch nothing: subgraph 0"),
            (["--expand-composites"], "--expand-composites goes with --screenshot")):
        shot = [] if bad == ["--expand-composites"] else ["--screenshot", str(tmp_path / "x.png")]
        assert cli.main([str(LLM), *shot, *bad]) == 2, bad
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, (bad, err)


def test_the_form_reads_the_mask_and_chunks_a_long_prompt(qtbot, window, settings):
    """gemma3_f32 (mask input, transposed cache, prefill_8 and prefill_16): the form finds
    the loop; a prompt of 20 ids, the prefill left as found, goes in LiteRT-LM's chunks
    (prefill_16 then prefill_8), and the Call Stack names the second chunk."""
    from tflite_viewer.ui.debugger.inputs_dialog import GENERATE, InputsDialog
    path = MODELS / "llm" / "gemma3_f32.tflite"
    assert window.open_path(path, wait=True)
    dialog = InputsDialog(window.model, window.path, settings, window)
    qtbot.addWidget(dialog)
    dialog.signature_combo.setCurrentIndex(dialog.signature_combo.findData(GENERATE))
    form = dialog.generation_form
    assert "causal mask 'mask'" in form.summary.text() and "axis 2/3" in form.summary.text()
    form.prompt.setText(", ".join(str(i) for i in range(100, 120)))
    form.steps.setValue(2)
    dialog.accept()
    setup = dialog.generation
    assert setup is not None and setup.plan.mask == "mask"
    assert [c[0] for c in setup.plan.chunks(20)] == ["prefill_16", "prefill_8"]
    dbg = window.debugger
    dbg.set_generation(setup)
    window.show_subgraph("prefill_8", wait=True)  # a breakpoint on its first op
    window.select_op(0)
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_F9)
    stop = _f5(qtbot, window)
    assert stop.state == PAUSED and stop.call.label == "prefill 2/2"
    assert stop.call.position == 16 and stop.call.ids == 4
    assert dbg.callstack_panel.rows()[-1][0] == "prefill 2/2 (signature 'prefill_8')"
