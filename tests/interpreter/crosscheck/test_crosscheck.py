"""The LiteRT cross-check library: agreement on float models, a perturbed run naming the
first diverging op, integer units, crash containment, fallback, LiteRT missing."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tests.interpreter.singleop import Input, Op, graph_model, single_op_model
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter import crosscheck as cc
from tflite_viewer.interpreter.crosscheck import (FALLBACK_RESOLVER, LiteRTCrashError,
                                                  LiteRTError, LiteRTUnavailableError,
                                                  compare_with_litert, litert_available,
                                                  run_litert)
from tflite_viewer.interpreter.inputs import seeded_inputs
from tflite_viewer.model import load_model


def _p(name: str):
    return MODELS_DIR / f"{name}.tflite"


def test_nothing_imports_litert_at_import_time():
    code = ("import sys, tflite_viewer.interpreter, tflite_viewer.interpreter.crosscheck, "
            "tflite_viewer.interpreter.inputs, tflite_viewer.cli.run\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('ai_edge_litert', 'tensorflow', "
            "'tflite_runtime')]\n"
            "assert not bad, bad")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr


def test_float_model_agrees_and_report_is_complete():
    report = compare_with_litert(_p("control_flow"), signature="serving_default", seed=1)
    assert report.ok and report.first_divergence is None
    assert report.resolver == "BUILTIN_REF" and report.fallback_reason is None
    assert report.subgraph == 0 and report.signature == "serving_default"
    model = load_model(_p("control_flow"))
    # every op has a row (the WHILE's unread pass-through outputs are left out)
    assert {r.op for r in report.rows} == set(range(len(model.subgraphs[0].operators)))
    assert all(r.compared for r in report.rows)
    assert {r.kind for r in report.rows} == {"float", "bool"}
    assert set(report.our_outputs) == set(report.litert_outputs) == {"output_0"}
    np.testing.assert_allclose(report.our_outputs["output_0"],
                               report.litert_outputs["output_0"], rtol=1e-5, atol=1e-6)
    text = report.format_table()
    assert "WHILE" in text and "IF" in text and "within tolerance" in text


def test_second_signature_compares_its_own_subgraph():
    report = compare_with_litert(_p("multi_signature"), signature="encode")
    assert report.ok and report.subgraph == 1
    assert [r.opcode for r in report.rows] == \
        [op.name for op in load_model(_p("multi_signature")).subgraphs[1].operators]


def test_injected_error_names_the_first_diverging_op():
    """An after-hook corrupts op 10's output: op 10 is the first divergence; ops before it
    still agree; the error propagates to later ops."""
    model = load_model(_p("mobilenet_v2_float"))
    target = 10

    def corrupt(interp, ev):
        if ev.subgraph == 0 and ev.op == target:
            out = ev.node.outputs[0]
            interp.set_tensor(0, out, interp.tensor(0, out) + 0.25)

    report = compare_with_litert(model, hook=corrupt)
    assert not report.ok
    first = report.first_divergence
    assert (first.subgraph, first.op, first.output) == (0, target, 0)
    assert first.opcode == model.subgraphs[0].operators[target].name
    assert first.tensor == model.subgraphs[0].operators[target].outputs[0]
    assert first.kind == "float" and first.max_abs == pytest.approx(0.25, rel=1e-3)
    assert first.relative > 1e-5
    assert all(r.ok for r in report.rows if r.op < target)
    assert f"first divergence: subgraph 0 op {target} ({first.opcode})" in report.summary()
    assert "DIVERGES" in report.format_table()


def test_tolerance_decides():
    model = load_model(_p("sine_float"))

    def nudge(interp, ev):
        if ev.op == 0:
            out = ev.node.outputs[0]
            v = interp.tensor(0, out)
            interp.set_tensor(0, out, v + 1e-3 * (np.abs(v).max() + 1))

    assert not compare_with_litert(model, hook=nudge).ok
    assert compare_with_litert(model, hook=nudge, tolerance=10.0).ok


def _int8_reshape() -> bytes:
    return single_op_model("RESHAPE", [Input((2, 3), np.int8, quant=(0.5, 1)),
                                       np.array([3, 2], np.int32)],
                           [(np.int8, (0.5, 1))], "ReshapeOptions", {"new_shape": [3, 2]},
                           output_shapes=[(3, 2)])


def test_quantized_tensors_are_compared_in_units():
    data = _int8_reshape()
    x = np.array([[-128, -1, 0], [1, 100, 127]], np.int8)
    assert compare_with_litert(data, {"in0": x}).ok

    def plus2(interp, ev):
        out = ev.node.outputs[0]
        interp.set_tensor(0, out, np.clip(interp.tensor(0, out).astype(np.int16) + 2,
                                          -128, 127))

    report = compare_with_litert(data, {"in0": x}, hook=plus2)
    row = report.first_divergence
    assert row.kind == "quantized" and row.units == 2 and row.relative is None
    assert row.max_abs == pytest.approx(1.0)  # 2 units of scale 0.5
    assert "2 units > 0" in report.divergence_text()
    assert compare_with_litert(data, {"in0": x}, hook=plus2, units=2).ok


def test_integer_and_bool_outputs_must_match_exactly():
    def flip(interp, ev):
        if ev.name == "GREATER":
            out = ev.node.outputs[0]
            interp.set_tensor(0, out, ~interp.tensor(0, out))

    report = compare_with_litert(_p("control_flow"), hook=flip)
    first = report.first_divergence
    assert first.opcode == "GREATER" and first.kind == "bool" and first.units == 1


def test_seeded_ids_are_valid_for_litert_too():
    """LiteRT's reference GATHER / EMBEDDING_LOOKUP refuse out-of-range ids: seeded ids,
    followed through a RESHAPE, are accepted (and both runs agree)."""
    gather = graph_model(
        [((2, 3), np.int32), (np.array([6], np.int32),), ((6,), np.int32),
         (np.arange(36, dtype=np.float32).reshape(4, 9),), ((4, 6), np.float32)],
        [Op("RESHAPE", [0, 1], [2]),
         Op("GATHER", [3, 2], [4], "GatherOptions", {"axis": 1})],
        inputs=[0], outputs=[4])
    lookup = single_op_model("EMBEDDING_LOOKUP", [Input((5,), np.int32),
                                                  np.arange(14, dtype=np.float32).reshape(7, 2)],
                             [np.float32], output_shapes=[(5, 2)])
    for data in (gather, lookup):
        report = compare_with_litert(data, seed=4)
        assert report.ok, report.format_table()


def test_an_interpreter_that_already_ran_is_compared_as_is():
    model = load_model(_p("movie_review"))
    inputs = seeded_inputs(model, 9)
    interp = Interpreter(model)
    interp.invoke(list(inputs.values()))
    report = compare_with_litert(model, inputs, interpreter=interp)
    assert report.ok and len(report.rows) == len(model.subgraphs[0].operators)
    with pytest.raises(ValueError, match="not both"):
        compare_with_litert(model, inputs, interpreter=interp, hook=lambda i, e: None)


# ------------------------------------------------------------------------------------------
# LiteRT failing: crash containment, fallback, refusal, absence
# ------------------------------------------------------------------------------------------
def test_litert_crash_is_contained():
    """keyword_scrambled_8bit crashes LiteRT in every resolver: the child dies, we do not."""
    model = load_model(_p("keyword_scrambled_8bit"))
    with pytest.raises(LiteRTCrashError) as info:
        run_litert(_p("keyword_scrambled_8bit"), seeded_inputs(model, 0))
    assert isinstance(info.value.signal, int) and info.value.signal > 0
    assert str(info.value) == (f"LiteRT crashed on this model (signal {info.value.signal}): "
                               "cannot cross-check")


def test_reference_kernels_abort_falls_back():
    """mobilenet_v2_int8 aborts in BUILTIN_REF's allocate_tensors: the optimized kernels
    (without delegates) run it, and the run says why."""
    model = load_model(_p("mobilenet_v2_int8"))
    run = run_litert(_p("mobilenet_v2_int8"), seeded_inputs(model, 0))
    assert run.resolver == FALLBACK_RESOLVER
    assert "BUILTIN_REF crashed" in run.fallback_reason
    out = model.subgraphs[0].outputs[0]
    assert out in run.tensors and len(run.tensors) > 100
    with pytest.raises(LiteRTCrashError):
        run_litert(_p("mobilenet_v2_int8"), seeded_inputs(model, 0), fallback=False)


def test_litert_refusing_a_model_is_an_error_not_a_crash():
    model = load_model(_p("person_detect"))
    with pytest.raises(LiteRTError) as info:
        run_litert(_p("person_detect"), seeded_inputs(model, 0))
    assert not isinstance(info.value, LiteRTCrashError)
    assert "cannot run this model" in str(info.value) and "quantized_dimension" in str(info.value)
    assert len(str(info.value)) < 400


def test_litert_missing_gives_a_clear_error(monkeypatch):
    assert litert_available()
    monkeypatch.setattr(cc.importlib.util, "find_spec", lambda name: None)
    assert not litert_available()
    with pytest.raises(LiteRTUnavailableError, match="ai-edge-litert"):
        compare_with_litert(_p("sine_float"))
    with pytest.raises(LiteRTUnavailableError):
        run_litert(_p("sine_float"), {})


def test_bad_resolver_name():
    with pytest.raises(ValueError, match="resolver must be one of"):
        run_litert(_p("sine_float"), {}, resolver="FAST")


def test_blockwise_decoder_is_checked_against_litert_builtin_kernels():
    """LiteRT's reference FULLY_CONNECTED returns the bias for blockwise INT4 weights: the
    cross-check of such a model runs LiteRT's builtin kernels instead, says so, and finds
    this interpreter in agreement (a check against the reference would call right values
    wrong, and a zero output right)."""
    from tests.interpreter.llm_models import decoder_model

    model, ids = decoder_model("int4_blockwise", np.random.default_rng(3))
    report = cc.compare_with_litert(model, {"ids": ids})
    assert report.resolver == FALLBACK_RESOLVER
    assert "no blockwise path" in (report.fallback_reason or "")
    assert report.ok, report.format_table()
