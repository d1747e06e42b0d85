"""Issue 26, part 3: the cross-check where LiteRT cannot keep every tensor, and over several
invocations of a stateful model.

* A streaming model the test builds (a ring buffer of the last three frames in a resource
  variable, VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE with a CALL_ONCE initializer) is
  compared over several invocations, keeping every tensor and on an exposed copy (every op
  output a model output, made by the editor): every op output of every invocation equals
  LiteRT's reference kernels.
* A divergence that only appears once the state has been carried (the third invocation)
  is found and named.
* When LiteRT crashes keeping every tensor, the comparison falls back to the exposed copy
  and says so; without the editor's function it reports the crash.
* microWakeWord's alexa model (pymicro-wakeword 2.5.0): reading a resource handle's tensor
  is what crashed LiteRT (signal 11) in the cross-check's child; the child no longer reads
  handles, and the model compares bit-exact over four invocations, both ways.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.cli_runner import run_cli
from tests.conftest import MODELS_DIR
from tests.interpreter.singleop import Op, graph_model
from tflite_viewer.edit.expose import expose_op_outputs
from tflite_viewer.interpreter import litert_process
from tflite_viewer.interpreter.crosscheck import (LiteRTCrashError, compare_with_litert,
                                                  is_stateful)
from tflite_viewer.model import load_model

F32 = np.float32
WAKEWORD = MODELS_DIR / "microwakeword_alexa.tflite"


def streaming_model() -> bytes:
    """x [1, 1, 4] a frame; state [1, 3, 4] the last three frames (a resource variable);
    window = concat(state, x) [1, 4, 4]; new state = window[:, 1:]; output = logistic(FC
    of the window flattened) [1, 2]."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((2, 16)) / 4).astype(F32)
    b = rng.standard_normal(2).astype(F32)
    tensors = [((1, 1, 4), F32),                  # 0 x
               ((), np.int32, "resource"),        # 1 handle
               ((1, 3, 4), F32),                  # 2 state
               ((1, 4, 4), F32),                  # 3 window
               (np.array([0, 1, 0], np.int32),),  # 4 begin
               (np.array([1, 3, 4], np.int32),),  # 5 size
               ((1, 3, 4), F32),                  # 6 new state
               (np.array([1, 16], np.int32),),    # 7 flat shape
               ((1, 16), F32),                    # 8 flat
               (w,), (b,),                        # 9, 10
               ((1, 2), F32),                     # 11 logits
               ((1, 2), F32)]                     # 12 probabilities
    ops = [Op("CALL_ONCE", [], [], "CallOnceOptions", {"init_subgraph_index": 1}),
           Op("VAR_HANDLE", [], [1], "VarHandleOptions", {"shared_name": "ring"}),
           Op("READ_VARIABLE", [1], [2]),
           Op("CONCATENATION", [2, 0], [3], "ConcatenationOptions", {"axis": 1}),
           Op("SLICE", [3, 4, 5], [6]),
           Op("ASSIGN_VARIABLE", [1, 6], []),
           Op("RESHAPE", [3, 7], [8]),
           Op("FULLY_CONNECTED", [8, 9, 10], [11], "FullyConnectedOptions", {}),
           Op("LOGISTIC", [11], [12])]
    init = ([((), np.int32, "resource"), (np.zeros((1, 3, 4), F32),)],
            [Op("VAR_HANDLE", [], [0], "VarHandleOptions", {"shared_name": "ring"}),
             Op("ASSIGN_VARIABLE", [0, 1], [])], [], [])
    return graph_model(tensors, ops, [0], [12], subgraphs=[init])


@pytest.mark.parametrize("litert_mode", ["preserve", "exposed"])
def test_a_streaming_model_matches_litert_at_every_invocation(litert_mode):
    model = streaming_model()
    assert is_stateful(load_model(model))
    report = compare_with_litert(model, invocations=5, litert_mode=litert_mode,
                                 expose=expose_op_outputs)
    assert report.ok, report.format_table()
    assert report.litert_mode == litert_mode and (report.invocations, report.invocation) == (5, 5)
    compared = {r.opcode for r in report.rows if r.compared}
    assert compared >= {"READ_VARIABLE", "CONCATENATION", "SLICE", "RESHAPE",
                        "FULLY_CONNECTED", "LOGISTIC"}
    assert all(r.exact for r in report.rows if r.compared)
    text = report.format_table()
    assert "all 5 invocations compared (state carried between them)" in text
    assert ("exposed copy" in text) == (litert_mode == "exposed")


def test_a_divergence_that_needs_the_carried_state_is_found_at_its_invocation():
    """Our SLICE (the state it writes is read by the next invocation) is perturbed from
    the third invocation on: one invocation compares clean, five find it at the third."""
    calls = {"n": 0}

    def perturb(interp, event):
        if event.name == "CALL_ONCE" and event.subgraph == 0:
            calls["n"] += 1
        if event.name == "SLICE" and calls["n"] >= 3:
            t = interp.subgraphs[0].tensors[6]
            t.data = t.data + F32(1e-3)

    model = streaming_model()
    one = compare_with_litert(model, invocations=1, hook=perturb)
    assert one.ok
    calls["n"] = 0
    report = compare_with_litert(model, invocations=5, hook=perturb)
    assert not report.ok and report.invocation == 3
    assert "invocation 3 of 5 diverges" in report.format_table()
    assert report.first_divergence.opcode == "SLICE"


_CRASH_WHEN_KEEPING = ('import json, os, signal, sys\n'
                       'if json.loads(sys.argv[1])["preserve"]:\n'
                       '    os.kill(os.getpid(), signal.SIGSEGV)\n')


def test_a_crash_keeping_every_tensor_falls_back_to_the_exposed_copy(monkeypatch):
    """LiteRT dying with experimental_preserve_all_tensors (made to, here: the child kills
    itself then) sends the comparison to the exposed copy, which it reports."""
    monkeypatch.setattr(litert_process, "_WORKER",
                        _CRASH_WHEN_KEEPING + litert_process._WORKER)
    report = compare_with_litert(streaming_model(), invocations=3, expose=expose_op_outputs)
    assert report.ok and report.litert_mode == "exposed"
    assert report.resolver == "BUILTIN_REF"  # the reference kernels, on the copy
    assert "crashed (SIGSEGV)" in report.fallback_reason
    text = report.format_table()
    assert "LiteRT could not keep every tensor: LiteRT BUILTIN_REF crashed (SIGSEGV)" in text
    assert "an exposed copy of the model (every op output made a model output" in text
    with pytest.raises(LiteRTCrashError, match="LiteRT crashed on this model"):
        compare_with_litert(streaming_model(), expose=None)  # no editor: no fallback


def test_the_exposed_copy_keeps_every_index_and_exposes_each_op_output():
    data = expose_op_outputs(streaming_model())
    original, exposed = load_model(streaming_model()), load_model(data)
    sg0, sg1 = original.subgraphs[0], exposed.subgraphs[0]
    assert [t.name for t in sg0.tensors] == [t.name for t in sg1.tensors]
    produced = {o for op in sg0.operators for o in op.outputs}
    handles = {t.index for t in sg0.tensors if t.type_name == "RESOURCE"}
    assert set(sg1.outputs) == produced - handles | set(sg0.outputs)
    assert list(sg1.outputs[:len(sg0.outputs)]) == list(sg0.outputs)


def test_reading_a_resource_handle_is_what_crashed_litert():
    """The cross-check's child read every tensor; LiteRT 2.3.0 dies (signal 11) reading a
    resource variable's handle of microWakeWord's model, whatever the kernels."""
    code = ("import numpy as np\n"
            "from ai_edge_litert.interpreter import Interpreter, OpResolverType\n"
            f"li = Interpreter(model_path={str(WAKEWORD)!r}, experimental_preserve_all_"
            "tensors=True, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)\n"
            "li.allocate_tensors()\n"
            "d = li.get_input_details()[0]\n"
            "li.set_tensor(d['index'], np.zeros(d['shape'], np.int8)); li.invoke()\n"
            "h = [t['index'] for t in li.get_tensor_details() if t['dtype'] is np.object_]\n"
            "li.get_tensor(h[-1])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.returncode == -11


@pytest.mark.parametrize("litert_mode", ["preserve", "exposed"])
def test_microwakeword_matches_litert_over_several_invocations(litert_mode):
    report = compare_with_litert(WAKEWORD, None, invocations=4, litert_mode=litert_mode,
                                 expose=expose_op_outputs)  # a seeded frame per invocation
    assert report.ok, report.format_table()
    assert report.litert_mode == litert_mode and report.invocation == 4
    assert sum(r.compared for r in report.rows) >= 30
    assert all(r.exact for r in report.rows if r.compared)


def test_run_compare_litert_on_microwakeword_compares_four_invocations():
    proc = run_cli("run", WAKEWORD, "--compare-litert")
    assert proc.returncode == 0, proc.stderr
    assert "all 4 invocations compared (state carried between them)" in proc.stdout
    assert "every tensor kept (experimental_preserve_all_tensors)" in proc.stdout
