"""The debug session over a generation loop (interpreter/generation_session.py): a
breakpoint in decode stops in each decode call in turn, the stop names its call, Watch
reads the KV cache of the call paused in, stepping and Run To cross calls, and the ids a
debugged run ends with are LiteRT's (the loop as test_generation defines it)."""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tflite_viewer.interpreter.generation import find_plan
from tflite_viewer.interpreter.generation_session import GenerationSession
from tflite_viewer.interpreter.session import FINISHED, PAUSED
from tflite_viewer.model import load_model

from .kv_decoder_models import KV_NAMES, PREFILL, kv_decoder_model
from .test_generation import PROMPT, litert_loop

LLM = MODELS_DIR / "llm"


@pytest.fixture(scope="module")
def written():
    data = kv_decoder_model(0)
    return load_model(data), litert_loop(data, PROMPT, 8, KV_NAMES,
                                         prefill=f"prefill_{PREFILL}")[0]


def _session(model, steps=8):
    return GenerationSession(model, find_plan(model, len(PROMPT)), PROMPT, steps)


def test_a_breakpoint_in_decode_stops_in_decode_3_on_the_third_continue(written):
    model, ref = written
    dec = model.signature("decode").subgraph_index
    attention = next(op.index for op in model.subgraphs[dec].operators
                     if op.name == "SOFTMAX")
    s = _session(model)
    s.toggle_breakpoint(dec, attention)
    labels = []
    for _ in range(3):
        stop = s.continue_()
        assert stop.state == PAUSED and stop.reason == "breakpoint"
        assert stop.position == ((dec, attention),)
        labels.append(stop.call.label)
    assert labels == ["decode #1", "decode #2", "decode #3"]
    assert stop.tokens == tuple(ref[:2])  # two steps done: their argmaxes
    assert stop.call.signature == "decode" and stop.call.position == len(PROMPT) + 1
    assert stop.call.token == ref[1]  # decode #3 is fed decode #2's id
    names = [sg.name for sg in model.subgraphs]
    assert stop.describe(names) == f"decode #3: paused at decode/op {attention} SOFTMAX"
    # the KV cache decode #3 reads is what decode #2 gave: watched by (subgraph, tensor)
    sig = model.signature("decode")
    k0 = next(m.tensor_index for m in sig.inputs if m.name == "kv_cache_k_0")
    snap = s.snapshot(dec, k0)
    assert np.array_equal(snap.values, stop.call.inputs["kv_cache_k_0"])
    filled = np.abs(snap.values[0, :, 0, :]).max(axis=1) > 0
    assert filled[:len(PROMPT) + 1].all() and not filled[PREFILL:].any()
    # on to the end: the breakpoint fires in the remaining five steps, then the ids
    for i in range(4, 9):
        assert s.continue_().call.label == f"decode #{i}"
    end = s.continue_()
    assert end.state == FINISHED and list(end.tokens) == ref
    assert end.describe() == "finished: generated " + " ".join(map(str, ref))
    assert set(end.outputs) == {"logits", *KV_NAMES}


def test_steps_cross_calls_and_run_to_stops_in_the_call_asked_for(written):
    model, ref = written
    dec = model.signature("decode").subgraph_index
    s = _session(model, steps=4)
    first = s.step_over()
    assert first.call.label == "prefill" and first.position == ((0, 0),)
    end = s.step_out()  # the prefill's end: the next call begins, paused before its op 0
    assert end.state == PAUSED and end.reason == "call" and end.call.label == "decode #1"
    assert end.position == ((dec, 0),) and "token 42 at position 2" in end.message
    stop = s.run_to(dec, 5, call=3)
    assert (stop.reason, stop.call.label, stop.position) == ("run_to", "decode #3", ((dec, 5),))
    stop = s.run_to(dec, 5)  # the next call that reaches it
    assert stop.call.label == "decode #4"
    done = s.continue_()
    assert done.state == FINISHED and list(done.tokens) == ref[:4]
    again = s.continue_()  # a finished loop starts over from the prefill
    assert again.state == FINISHED and again.tokens == done.tokens


def test_step_into_a_composite_and_step_over_it(written):
    """An odml.rms_norm composite: Step Over runs it whole; Step Into enters its
    decomposition; with composites drawn inline Step Over enters it and leaves it without
    pausing at its end."""
    model, _ = written
    s = _session(model, steps=1)
    s.step_over()
    norm = next(op.index for op in model.subgraphs[0].operators
                if op.name == "STABLEHLO_COMPOSITE")
    body = model.subgraphs[0].operators[norm].builtin_options_2["decomposition_subgraph_index"]
    at = s.run_to(0, norm)
    assert at.position == ((0, norm),)
    over = s.step_over()
    assert over.position == ((0, norm + 1),)
    s.stop()
    s.run_to(0, norm)  # a new run, from the prefill
    inside = s.step_into()
    assert inside.position == ((0, norm), (body, 0))
    s.stop()
    s.set_inline_composites(True)
    s.run_to(0, norm)
    stop = s.step_over()
    assert stop.position == ((0, norm), (body, 0))
    n = len(model.subgraphs[body].operators)
    for _ in range(n - 1):
        stop = s.step_over()
    assert stop.position == ((0, norm), (body, n - 1))
    stop = s.step_over()  # the last op of the decomposition: on past its end
    assert stop.position == ((0, norm + 1),)


def test_litert_torch_export_debugged_to_the_end_gives_litert_ids():
    model = load_model(LLM / "tiny_llama_q4_block32.tflite")
    kv = [f"kv_cache_{a}_{layer}" for a in "kv" for layer in range(2)]
    ref, _ = litert_loop(LLM / "tiny_llama_q4_block32.tflite", PROMPT, 8, kv)
    s = _session(model)
    dec = model.signature("decode").subgraph_index
    s.toggle_breakpoint(dec, 3)
    stops = [s.continue_() for _ in range(3)]
    assert [st.call.label for st in stops] == ["decode #1", "decode #2", "decode #3"]
    s.toggle_breakpoint(dec, 3)
    end = s.continue_()
    assert list(end.tokens) == ref


def test_a_generation_session_refuses_inputs_of_its_own():
    model = load_model(LLM / "tiny_llama_f32.tflite")
    s = _session(model)
    with pytest.raises(ValueError, match="makes its own inputs"):
        s.set_inputs({"tokens": np.zeros((1, 8), np.int32)})
