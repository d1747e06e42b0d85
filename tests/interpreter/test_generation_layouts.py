"""Generation on litert-torch's Gemma3-, Qwen3- and Phi-2-shaped exports in every layout it
writes (tests/data/models/llm, made by tools/export_decoders.py): the loop's plan read from
the signatures' tensors, and the greedy ids against LiteRT's builtin kernels running the
same loop (`test_generation.litert_loop`: the issue's definition transcribed on LiteRT's
signature runners, the causal mask built there by its own loop).

The fixtures cover: the default KV layout (qwen3_f32, phi2_f32) and the transposed one
(gemma3_f32, qwen3_transposed_*: k [1, heads, positions, head_dim], v [1, heads, head_dim,
positions]); the mask as an input (gemma3_f32 with the transposed layout, phi2_f32 with the
default one); two prefill lengths in every file (prefill_8, prefill_16); prefills without
logits (all but phi2_f32) and with them (phi2_f32); float32, dynamic int8 and int4
blockwise weights.  The chunks a prompt is prefilled in are written out by hand here from
LiteRT-LM's rule (the longest prefill while the rest fills it, then the shortest that holds
what remains).

Measured (shared 2-core machine): the ids of every step equal LiteRT's on every fixture and
prompt; the logits agree within 1e-5 of their magnitude, the smallest margin between the two
largest logits of a step being far larger than the difference.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tflite_viewer.edit.tree import unpack
from tflite_viewer.edit.writer import serialize
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.generation import (Generation, GenerationError, find_plan,
                                                  generate, interpreter_runner)
from tflite_viewer.interpreter.generation_plan import prefill_chunks
from tflite_viewer.model import load_model

from .test_generation import _agree, litert_loop

LLM = MODELS_DIR / "llm"
KV = [f"kv_cache_{a}_{layer}" for a in "kv" for layer in range(2)]
#: fixture -> (positions axis of k, of v; KV heads; the mask input; the prefills give logits)
FIXTURES = {
    "gemma3_f32": (2, 3, 1, "mask", False),
    "qwen3_f32": (1, 1, 2, None, False),
    "qwen3_transposed_f32": (2, 3, 2, None, False),
    "qwen3_transposed_q8": (2, 3, 2, None, False),
    "qwen3_transposed_q4_block32": (2, 3, 2, None, False),
    "phi2_f32": (1, 1, 4, "mask", True),
}
#: prompt length -> the prefill calls, (signature, tokens, first position, ids), by hand
CHUNKS = {
    3: [("prefill_8", 8, 0, 3)],
    12: [("prefill_16", 16, 0, 12)],
    20: [("prefill_16", 16, 0, 16), ("prefill_8", 8, 16, 4)],
    27: [("prefill_16", 16, 0, 16), ("prefill_16", 16, 16, 11)],
}
STEPS = 5


def _prompt(length: int) -> list[int]:
    return [int(v) for v in (np.arange(length) * 37 + 5) % 251]


def _kv_shape(heads: int, axis: int, k: bool) -> tuple[int, ...]:
    if axis == 1:
        return (1, 32, heads, 16)
    return (1, heads, 32, 16) if k else (1, heads, 16, 32)


@pytest.mark.parametrize("name", FIXTURES)
def test_the_plan_is_read_from_the_signatures(name):
    k_axis, v_axis, heads, mask, prefill_logits = FIXTURES[name]
    model = load_model(LLM / f"{name}.tflite")
    plan = find_plan(model, 3)
    assert plan.prefills == (("prefill_8", 8), ("prefill_16", 16))
    assert plan.kv == ("kv_cache_k_0", "kv_cache_k_1", "kv_cache_v_0", "kv_cache_v_1")
    assert plan.kv_axes == (k_axis, k_axis, v_axis, v_axis)
    assert plan.context == 32 and plan.mask == mask
    sig = model.signature("prefill_8")
    assert ("logits" in [o.name for o in sig.outputs]) == prefill_logits
    # every input of every signature is fed, and says with what
    inputs = {(s.key, m.name) for s in model.signature_defs for m in s.inputs}
    assert {(f.signature, f.input) for f in plan.feeds} == inputs
    for f in plan.feeds:
        if f.role == "kv":
            is_k = "_k_" in f.input
            assert f.shape == _kv_shape(heads, k_axis if is_k else v_axis, is_k)
            assert f"positions on axis {k_axis if is_k else v_axis}" in f.fed
        if f.role == "mask":
            rows = 1 if f.signature == "decode" else int(f.signature.split("_")[1])
            assert f.shape == (1, 1, rows, 32) and f.dtype == "FLOAT32"


@pytest.mark.parametrize("length", CHUNKS)
def test_prompts_are_split_as_litert_lm_splits_them(length):
    model = load_model(LLM / "qwen3_f32.tflite")
    assert find_plan(model, length).chunks(length) == CHUNKS[length]
    assert find_plan(model, length).prefill == CHUNKS[length][0][0]
    # one prefill signature: chunks of it, the last one padded
    assert prefill_chunks([("p", 8)], 20) == [("p", 8, 0, 8), ("p", 8, 8, 8), ("p", 8, 16, 4)]


def _ours(model, prompt, steps):
    interp = Interpreter(model)
    rows = []
    plan = find_plan(model, len(prompt))

    def run(signature, inputs):
        out = interp.invoke(dict(inputs), signature=signature)
        if signature == plan.decode:
            rows.append(np.asarray(out["logits"]).reshape(-1))
        return out
    return generate(model, run, prompt, steps, plan), np.array(rows)


@pytest.mark.parametrize("length", CHUNKS)
@pytest.mark.parametrize("name", FIXTURES)
def test_greedy_ids_equal_litert(name, length):
    mask = FIXTURES[name][3]
    path = LLM / f"{name}.tflite"
    prompt = _prompt(length)
    result, logits = _ours(load_model(path), prompt, STEPS)
    chunks = [(key, first) for key, _, first, _ in CHUNKS[length]]
    ref, ref_logits = litert_loop(path, prompt, STEPS, KV, chunks=chunks, mask=mask)
    assert result.tokens == ref
    assert [c.signature for c in result.calls[:len(chunks)]] == [c[0] for c in chunks]
    assert [c.position for c in result.calls[len(chunks):]] == \
        list(range(length - 1, length - 1 + STEPS))
    _agree(logits, ref_logits)


@pytest.mark.parametrize("name", ["gemma3_f32", "qwen3_transposed_f32"])
def test_the_ids_vary(name):
    """The fixtures' greedy ids are no one id repeated, so comparing them can fail."""
    result, _ = _ours(load_model(LLM / f"{name}.tflite"), _prompt(3), 8)
    assert len(set(result.tokens)) >= 4


@pytest.mark.parametrize("name", ["gemma3_f32", "phi2_f32"])
def test_the_mask_fed_is_what_makes_the_ids(name):
    """A mask of zeros (every position seen, the padding and what follows included) gives
    other logits: the causal mask the loop feeds is doing the work."""
    model = load_model(LLM / f"{name}.tflite")
    interp = Interpreter(model)
    plan = find_plan(model, 3)
    prompt = _prompt(3)
    right = generate(model, interpreter_runner(interp), prompt, STEPS, plan)

    def unmasked(signature, inputs):
        inputs = dict(inputs)
        inputs["mask"] = np.zeros_like(inputs["mask"])
        return interp.invoke(inputs, signature=signature)
    wrong = generate(model, unmasked, prompt, STEPS, plan)
    assert wrong.tokens != right.tokens


def _renamed(name: str, names: dict[str, str]) -> bytes:
    tree = unpack(load_model(LLM / f"{name}.tflite"))
    for sig in tree.model.signatureDefs:
        for m in sig.inputs:
            m.name = names.get(m.name.decode(), m.name.decode()).encode()
    return serialize(tree)


def test_tokens_and_positions_by_role_when_named_otherwise():
    """Inputs renamed ``ids`` and ``where``: the token input is the one an embedding
    lookup reads, the position the other one-element integer input."""
    model = load_model(_renamed("qwen3_transposed_f32", {"tokens": "ids", "input_pos": "where"}))
    plan = find_plan(model, 3)
    assert (plan.tokens, plan.position) == ("ids", "where")
    ref = _ours(load_model(LLM / "qwen3_transposed_f32.tflite"), _prompt(3), 3)[0].tokens
    assert generate(model, interpreter_runner(Interpreter(model)), _prompt(3), 3,
                    plan).tokens == ref


def test_an_input_the_loop_cannot_feed_is_named_with_its_shape():
    # the mask set by hand to another input leaves "mask" to no piece of the loop
    model = load_model(LLM / "gemma3_f32.tflite")
    with pytest.raises(GenerationError, match=r"signature 'prefill_8' also takes 'mask' "
                                              r"\[1, 1, 8, 32\] FLOAT32, which is none of"):
        find_plan(model, 3, mask="tokens")
    # an input of another shape named as the mask
    qwen = load_model(LLM / "qwen3_f32.tflite")
    with pytest.raises(GenerationError, match=r"mask 'kv_cache_k_0' of 'prefill_8' is "
                                              r"\[1, 32, 2, 16\] FLOAT32: the loop feeds a "
                                              r"float causal mask \[1, 1, 8, 32\]"):
        find_plan(qwen, 3, mask="kv_cache_k_0", kv="kv_cache_k_1,kv_cache_v_*")
    # the prompt's last chunk would write past the cache
    plan = find_plan(model, 33)
    with pytest.raises(GenerationError, match=r"prefilled by 'prefill_8' at positions "
                                              r"32\.\.39: the KV cache holds 32"):
        Generation(model, plan, _prompt(33), 1)
