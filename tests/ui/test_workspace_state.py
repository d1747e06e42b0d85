"""The workspace without a window: the hub's lifecycle and topics, what an edit keeps and
drops, and the stable identities of watches and breakpoints through real edits (the
project's edit commands) and reloads of another file."""
from __future__ import annotations

import threading
from pathlib import Path

import subprocess
import sys

import pytest

from tflite_viewer.edit import ModelDocument, RemoveOperator, RenameTensor
from tflite_viewer.interpreter import NonFiniteBreakpoint, OpBreakpoint
from tflite_viewer.model import load_model
from tflite_viewer.ui.state.identity import (BreakpointList, OpRef, TensorRef, WatchList,
                                       resolve_op, resolve_tensor)
from tflite_viewer.ui.state.crosscheck import crosscheck_state
from tflite_viewer.ui.state.quant import TOPIC as QUANT_TOPIC, quant_state
from tflite_viewer.ui.state.workspace import (DEBUG, MODEL, REPLACED, RunOutputs, Hub,
                                        Workspace)

from .conftest import model_path

MNV2 = model_path("mobilenet_v2_float.tflite")


def test_the_workspace_modules_import_no_qt():
    code = ("import sys, tflite_viewer.ui.state.workspace, tflite_viewer.ui.state.identity; "
            "print(sorted(m for m in sys.modules if m.startswith('PySide6')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_replacing_closes_the_old_workspace_and_every_view_renders_the_new_one():
    hub = Hub()
    seen = []
    hub.subscribe(lambda ws: seen.append(("debug view", ws)), DEBUG)
    hub.subscribe(lambda ws: seen.append(("quant view", ws)), QUANT_TOPIC, MODEL)
    old = hub.workspace
    closed = []
    old.on_close(lambda: closed.append(old))
    released = []
    old.debug.active, old.debug.release = True, lambda: released.append(True)
    new = Workspace(load_model(MNV2))
    assert hub.replace(new) is old
    assert closed == [old] and released == [True] and not old.debug.active
    # REPLACED reaches every view; a topic only those that asked for it
    assert seen == [("debug view", new), ("quant view", new)]
    seen.clear()
    assert hub.changed(QUANT_TOPIC, new) and seen == [("quant view", new)]
    seen.clear()
    assert not hub.changed(DEBUG, old) and seen == []  # the late news of a closed workspace


def test_every_view_renders_even_when_one_fails_and_the_first_error_is_raised():
    hub = Hub()
    rendered = []

    def broken(_ws):
        raise RuntimeError("a broken view")
    hub.subscribe(broken)
    hub.subscribe(lambda ws: rendered.append(ws))
    with pytest.raises(RuntimeError, match="a broken view"):
        hub.replace(Workspace())
    assert rendered == [hub.workspace]


def test_unknown_topics_are_refused_and_features_name_their_own():
    hub = Hub()
    with pytest.raises(ValueError, match="unknown topics"):
        hub.subscribe(lambda ws: None, "debgu")
    got = []
    hub.subscribe(lambda ws: got.append(ws), "memory/plan")
    hub.changed("memory/plan")
    assert got == [hub.workspace]
    assert REPLACED in ("replaced",)


def test_an_edit_drops_what_was_computed_on_the_old_model_and_keeps_the_pins():
    doc = ModelDocument(MNV2)
    ws = Workspace(doc.model)
    plan = ws.part("memory", dict)
    plan["arena"] = 123
    ws.debug.active, ws.debug.inputs = True, {"x": 1}
    ws.debug.outputs, ws.debug.profile = RunOutputs(0, ()), {(0, 1): 0.5}
    crosscheck_state(ws).result = object()
    q = quant_state(ws)
    q.report, q.float_path, q.cancel = object(), Path("float.tflite"), threading.Event()
    cancel = q.cancel
    ws.watches.pin(TensorRef.of(doc.model, 0, 76))
    ws.breakpoints.add(OpBreakpoint(20, 0), doc.model)
    result = doc.apply(RenameTensor(0, 76, "residual"))
    notes = ws.replace_model(doc.model, result.scope)
    assert ws.model is doc.model and ws.version == 1
    assert not ws.debug.active and ws.debug.inputs == {} and ws.debug.outputs is None
    assert ws.debug.profile == {} and crosscheck_state(ws).result is None
    assert "run the cross-check again" in crosscheck_state(ws).message
    # the quantization analysis goes (a comparison under way is cancelled), the float
    # model chosen stays: the parts say what follows them (`after_edit`)
    assert quant_state(ws).report is None and cancel.is_set()
    assert quant_state(ws).float_path == Path("float.tflite")
    assert ws.part("memory", dict) == {}  # made again for the new model
    assert ws.watches.pins == [TensorRef(0, 76, "residual")]
    assert [(e.op.index, e.op.opcode) for e in ws.breakpoints] == [(20, "ADD")]
    assert notes[0].startswith("The debug session ended")
    assert "follows its tensor, now named 'residual'" in notes[1]


def test_removing_an_operator_moves_the_breakpoints_after_it_and_drops_its_own():
    doc = ModelDocument(MNV2)
    model = doc.model
    bps = BreakpointList()
    on_add = bps.add(OpBreakpoint(9, 0), model)       # the ADD removed below
    after = bps.add(OpBreakpoint(20, 0), model)       # an ADD after it: becomes op 19
    before = bps.add(OpBreakpoint(5, 0), model)       # before it: stays op 5
    anywhere = bps.add(NonFiniteBreakpoint(), model)  # on no op: stays as it is
    watches = WatchList()
    watches.pin(TensorRef.of(model, 0, 76))           # the removed ADD's output
    result = doc.apply(RemoveOperator(0, 9))
    notes = bps.resolve(doc.model, result.scope) + watches.resolve(doc.model, result.scope)
    assert [e.id for e in bps] == [after.id, before.id, anywhere.id]
    assert (after.op.index, after.op.opcode) == (19, "ADD")
    assert doc.model.subgraphs[0].operators[19].outputs == model.subgraphs[0].operators[20].outputs
    assert before.op.index == 5 and after.make().op == 19
    assert any("op 9 ADD: dropped" in n for n in notes)
    assert any("op 20 ADD follows its operator to op 19" in n for n in notes)
    assert on_add not in bps.entries
    # tensor indices do not move: the ADD's output tensor still exists, unread, same name
    assert watches.pins == [TensorRef.of(doc.model, 0, 76)]


def test_a_reload_of_another_file_keeps_only_what_has_the_same_name():
    a = load_model(model_path("small_cnn_dilated_int8.tflite"))
    b = load_model(model_path("small_cnn_dilated_float.tflite"))  # same graph, other order
    names_b = [t.name for t in b.subgraphs[0].tensors]
    moved = next(i for i, t in enumerate(a.subgraphs[0].tensors)
                 if t.name in names_b and names_b.index(t.name) != i)
    name = a.subgraphs[0].tensors[moved].name
    r = resolve_tensor(TensorRef.of(a, 0, moved), b)
    assert r.ref == TensorRef(0, names_b.index(name), name)
    assert f"follows its tensor to t{names_b.index(name)}" in r.note
    mine = next(i for i, t in enumerate(a.subgraphs[0].tensors) if t.name not in names_b)
    gone = resolve_tensor(TensorRef.of(a, 0, mine), b)
    assert gone.ref is None and "dropped" in gone.note
    # the index of another tensor is never taken for the pinned one
    assert resolve_tensor(TensorRef(0, moved, "a name no tensor has"), b).ref is None
    # operators: the same type and output names; another model's op is dropped
    sine = load_model(model_path("sine_float.tflite"))
    assert resolve_op(OpRef.of(sine, 0, 1), sine).ref == OpRef.of(sine, 0, 1)
    assert resolve_op(OpRef.of(a, 0, 4), b).ref == OpRef.of(b, 0, 4)
    assert resolve_op(OpRef.of(sine, 0, 1), b).ref is None


def test_carry_over_on_reload_moves_the_lists_to_the_new_workspace():
    a = load_model(model_path("sine_float.tflite"))
    old = Workspace(a)
    old.watches.pin(TensorRef.of(a, 0, 1))
    entry = old.breakpoints.add(OpBreakpoint(2, 0), a)
    entry.hits = 3
    new = Workspace(load_model(model_path("sine_float.tflite")))
    assert new.carry_over(old) == []
    assert new.watches.keys() == [(0, 1)] and [e.op.index for e in new.breakpoints] == [2]
    assert next(iter(new.breakpoints)).hits == 0 and len(old.breakpoints) == 0
