"""The window's crash recovery, end to end: the real program is started in a subprocess
(`ui.app.run_app`, offscreen, its settings in a private ``XDG_CONFIG_HOME``), edits a model
through the window's edit flow, and is killed with SIGKILL; the next start asks Restore /
Discard / Later (the real dialog, answered by clicking its button) and shows the model
restored.

The truth is computed here, independently of the journal and of the window: the same
commands applied to the same file by a plain `ModelDocument`, serialized.  The restored
window must show exactly those bytes, with the history and position the killed window had.

Run as a script, this file is the child: ``edit MODEL OUT`` (edit, write the bytes, print
"ready", wait to be killed) or ``restart MODEL OUT ANSWER`` (answer each recovery question
with ANSWER, report what the window shows, close it cleanly).
"""
from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))

from tflite_viewer.edit import (ModelDocument, RenameTensor, ReplaceTensorData,  # noqa: E402
                                SetDescription, SetOption, pending_recoveries)

MODEL = ROOT / "tests" / "data" / "models" / "small_cnn_dilated_float.tflite"
SECONDS = 240  # a child's start, on a 2-core machine shared with other jobs


def edits(model) -> list:
    """The edits the child makes, of the kinds a user makes in the panels (a tensor's
    values go to the journal's side files), all valid on MODEL in this order."""
    sg = model.subgraphs[0]
    conv = next(o for o in sg.operators if o.name == "CONV_2D")
    bias = sg.tensors[conv.inputs[2]]
    return [RenameTensor(0, 0, "restored_input"),
            ReplaceTensorData(0, bias.index, np.linspace(-1, 1, int(np.prod(bias.shape)),
                                                         dtype=np.float32).reshape(bias.shape)),
            SetOption(0, conv.index, "stride_w", 2),
            SetDescription("edited, then killed")]


# -- the child ---------------------------------------------------------------------------------

def _window():
    from PySide6.QtWidgets import QApplication

    from tflite_viewer.ui.main_window import MainWindow
    return next((w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)), None)


def _fail(out: Path, why: str) -> None:
    out.write_text(json.dumps({"error": why}))
    os._exit(3)


def child_edit(model: Path, out: Path) -> None:
    """Start the window on ``model``, make `edits` and undo the last, write the document's
    bytes to ``out``, say "ready" and wait for the kill."""
    from PySide6.QtCore import QTimer

    from tflite_viewer.ui.app import make_app, run_app
    from tflite_viewer.ui.state.launch import Launch

    make_app()

    def step() -> None:
        w = _window()
        if w is None or w.model is None:
            QTimer.singleShot(50, step)
            return
        for command in edits(w.model):
            if w.editing.apply_edit(command) is None:
                _fail(out, f"refused: {command.description}: {w.editing.last_message}")
        w.editing.undo()
        out.write_bytes(w.workspace.edit_session.document.to_bytes())
        print("ready", flush=True)
    QTimer.singleShot(0, step)
    run_app(Launch(model=model))


def child_restart(model: Path, out: Path, answer: str) -> None:
    """Start the window (with ``model`` as the one to open), answer every recovery question
    with ``answer``, then report the questions and what the window shows."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from tflite_viewer.ui.app import make_app, run_app
    from tflite_viewer.ui.recovery import RecoveryDialog
    from tflite_viewer.ui.state.launch import Launch

    make_app()
    asked: list[str] = []

    def poll() -> None:
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, RecoveryDialog):
            asked.append(f"{dialog.text()}\n{dialog.informativeText()}")
            {"Restore": dialog.restore_button, "Discard": dialog.discard_button,
             "Later": dialog.later_button}[answer].click()
        elif dialog is not None:
            _fail(out, f"an unexpected dialog: {dialog.windowTitle()}: "
                       f"{getattr(dialog, 'text', lambda: '')()}")
        w = _window()
        if w is None or w.model is None:
            QTimer.singleShot(50, poll)
            return
        report(w)

    def report(w) -> None:
        session = w.workspace.edit_session
        state = {"asked": asked, "path": str(w.path), "title": w.windowTitle(),
                 "modified": w.isWindowModified(), "notice": w.notice.text()
                 if hasattr(w.notice, "text") else ""}
        if session is not None:
            doc = session.document
            state.update(history=doc.history, index=doc.history_index,
                         stack=[session.stack.count(), session.stack.index()],
                         undo_group_can_redo=w.undo_group.canRedo())
            out.with_suffix(".bin").write_bytes(doc.to_bytes())
            if w.undo_group.canRedo():
                w.editing.redo()  # through the window, as Edit > Redo
                out.with_suffix(".redo.bin").write_bytes(doc.to_bytes())
                state["after_redo"] = [session.stack.index(), doc.history_index]
        out.write_text(json.dumps(state))
        w.ask_before_discarding = False  # Discard at the close prompt
        w.close()
    QTimer.singleShot(0, poll)
    run_app(Launch(model=model))


# -- the tests ---------------------------------------------------------------------------------

def _env(config: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY",
                                                            "TFLITE_VIEWER_DEBUG")}
    env.update(QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(config),
               PYTHONPATH=str(ROOT))
    return env


def _start(*args, config: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, *map(str, args)], cwd=ROOT,
                            env=_env(config), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _edited_then_killed(model: Path, tmp: Path, config: Path, kill: bool = True):
    """Run the edit child until it is ready; SIGKILL it unless ``kill`` is False (then the
    live process is returned).  Returns (bytes it had, process)."""
    out = tmp / f"edit-{time.monotonic_ns()}.bin"
    proc = _start("edit", model, out, config=config)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    line = ""
    if sel.select(timeout=SECONDS):
        line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        _out, err = proc.communicate()
        pytest.fail(f"the editing window did not get ready: {line!r} "
                    f"{out.read_text() if out.exists() and out.suffix != '.bin' else ''} "
                    f"{err[-3000:]}")
    if kill:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert proc.returncode == -signal.SIGKILL
    return out.read_bytes(), proc


def _restart(model: Path, tmp: Path, config: Path, answer: str = "Restore") -> dict:
    out = tmp / f"restart-{time.monotonic_ns()}.json"
    proc = _start("restart", model, out, answer, config=config)
    try:
        _stdout, err = proc.communicate(timeout=SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        _stdout, err = proc.communicate()
    assert proc.returncode == 0 and out.exists(), f"exit {proc.returncode}: {err[-3000:]}"
    state = json.loads(out.read_text())
    assert "error" not in state, state["error"]
    state["bytes"] = out.with_suffix(".bin").read_bytes() if "index" in state else None
    redo = out.with_suffix(".redo.bin")
    state["redo_bytes"] = redo.read_bytes() if redo.exists() else None
    return state


def _independent(model: Path, n: int, commands_from: Path | None = None) -> bytes:
    """The bytes of ``model`` with the first ``n`` `edits` applied by a plain document
    (the edits chosen on ``commands_from``'s model, MODEL by default)."""
    return _document(model, n, commands_from).to_bytes()


def _document(model: Path, n: int, commands_from: Path | None = None) -> ModelDocument:
    doc = ModelDocument(model)
    chosen = edits(ModelDocument(commands_from or model).model)
    for command in chosen[:n]:
        doc.apply(command)
    return doc


def _copy(tmp: Path) -> Path:
    model = tmp / "model.tflite"
    shutil.copyfile(MODEL, model)
    return model


def test_killed_window_restarts_with_the_same_model_bytes_and_history(tmp_path):
    model, config = _copy(tmp_path), tmp_path / "config"
    before_kill, _ = _edited_then_killed(model, tmp_path, config)
    journals = config / "tflite-viewer" / "recovery"
    assert len(pending_recoveries(journals)) == 1  # beside the settings, left by the kill

    state = _restart(model, tmp_path, config)
    expected = _independent(model, 3)
    assert expected != MODEL.read_bytes()
    assert state["bytes"] == before_kill == expected
    assert len(state["asked"]) == 1 and "4 unsaved edits" not in state["asked"][0]
    assert "3 unsaved edits to model.tflite" in state["asked"][0]
    assert "1 undone edit to redo" in state["asked"][0]
    assert "Warning" not in state["asked"][0] and "Lost" not in state["asked"][0]
    assert state["path"] == str(model) and state["modified"] and "model.tflite" in state["title"]
    assert state["index"] == 3 and state["stack"] == [4, 3]
    assert state["history"] == _document(model, 4).history
    assert state["redo_bytes"] == _independent(model, 4)  # Edit > Redo: the 4th edit back
    assert state["after_redo"] == [4, 4]
    assert model.read_bytes() == MODEL.read_bytes()  # nothing written to the file
    # the restored window closed cleanly (its edits given up): nothing is left to restore
    assert pending_recoveries(journals) == []


def test_a_changed_file_is_named_and_the_edits_replayed_on_it(tmp_path):
    model, config = _copy(tmp_path), tmp_path / "config"
    _edited_then_killed(model, tmp_path, config)
    other = ModelDocument(MODEL)  # the file changes while the program is not running
    other.apply(SetDescription("changed by someone else"))
    model.write_bytes(other.to_bytes())

    state = _restart(model, tmp_path, config)
    assert "Warning:" in state["asked"][0] and "may not apply" in state["asked"][0]
    assert state["bytes"] == _independent(model, 3, commands_from=MODEL)
    assert state["bytes"] != _independent(MODEL, 3)


def test_a_damaged_journal_restores_the_edits_before_the_damage_and_says_what_is_lost(tmp_path):
    model, config = _copy(tmp_path), tmp_path / "config"
    _edited_then_killed(model, tmp_path, config)
    (journal,) = (config / "tflite-viewer" / "recovery").glob("*/journal")
    lines = journal.read_bytes().splitlines(keepends=True)
    assert len(lines) == 6  # the header, 4 edits, the undo
    lines[3] = lines[3].replace(b"stride_w", b"stride_x")  # edit 3's line: its CRC fails
    journal.write_bytes(b"".join(lines))

    state = _restart(model, tmp_path, config)
    assert "Lost: line 4 of 6 of the journal is damaged" in state["asked"][0]
    assert state["bytes"] == _independent(model, 2)
    assert state["index"] == 2 and state["stack"] == [2, 2] and state["modified"]


def test_a_running_instance_journal_is_not_offered_to_another(tmp_path):
    model, config = _copy(tmp_path), tmp_path / "config"
    before, alive = _edited_then_killed(model, tmp_path, config, kill=False)
    try:
        second = _restart(model, tmp_path, config)
        assert second["asked"] == [] and "index" not in second  # the file opened, unedited
        assert second["path"] == str(model) and not second["modified"]
    finally:
        alive.send_signal(signal.SIGKILL)
        alive.wait(30)
    third = _restart(model, tmp_path, config, answer="Later")
    assert len(third["asked"]) == 1 and "index" not in third  # kept for the next start
    fourth = _restart(model, tmp_path, config)
    assert fourth["bytes"] == before == _independent(model, 3)


if __name__ == "__main__":
    mode, model_arg, out_arg = sys.argv[1:4]
    if mode == "edit":
        child_edit(Path(model_arg), Path(out_arg))
    else:
        child_restart(Path(model_arg), Path(out_arg), sys.argv[4])
