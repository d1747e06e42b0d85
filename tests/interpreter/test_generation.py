"""The generation loop (interpreter/generation.py) against LiteRT's builtin kernels running
the same loop, on a decoder the tests write (kv_decoder_models) and on the committed
litert-torch exports (tests/data/models/llm).

The oracle's loop is written out here from the issue's definition, on LiteRT's signature
runners (BUILTIN_WITHOUT_DEFAULT_DELEGATES: the builtin kernels, no XNNPACK delegate; the
reference kernels lack blockwise INT4): prefill on the prompt padded with 0 to N at
positions 0..N-1 and a zero cache; decode step 1 on the last prompt id at position k-1,
step i > 1 on the previous argmax at position k-2+i; KV outputs fed back by name.

Measured: the ids of all 8 steps are equal on every model and form; the logits agree
within 1e-5 of their magnitude (float summation order), the smallest margin between the
two largest logits of any step being 2e-3 (so the argmax is not decided by rounding).
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tests.litert_oracle import litert
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.generation import (Generation, GenerationError, find_plan,
                                                  generate, interpreter_runner,
                                                  parse_prompt, parse_settings)
from tflite_viewer.model import load_model

from .kv_decoder_models import KV_NAMES, PREFILL, kv_decoder_model

LLM = MODELS_DIR / "llm"
FORMS = ("f32", "q8", "q8_wo", "q4_block32")
PROMPT, STEPS = [5, 17, 42], 8


def _causal(shape, first):
    """litert-torch's additive mask for queries at positions first, first+1, ... (rows)
    over the cache (columns): 0 at or before the query's position, -inf after it."""
    rows, cols = shape[-2], shape[-1]
    m = np.zeros((rows, cols), np.float32)
    for r in range(rows):
        m[r, first + r + 1:] = -np.inf
    return m.reshape(shape)


def litert_loop(data, prompt, steps, kv, prefill="prefill_8", decode="decode", chunks=None,
                mask=None):
    """(ids, logits per step) of LiteRT's runners on the loop as the issue defines it.
    ``chunks``: the prefill calls as (signature, first position), each fed the prompt's
    ids from there padded with 0 (default: ``prefill`` alone from 0); ``mask``: the name
    of a mask input, fed the causal mask of the call's positions."""
    li = litert(data, preserve=False)
    chunks = chunks or [(prefill, 0)]
    runners = {key: li.get_signature_runner(key) for key in {c[0] for c in chunks} | {decode}}
    cache = None
    for key, first in chunks:
        pin = runners[key].get_input_details()
        n = int(np.prod(pin["tokens"]["shape"]))
        ids = np.zeros(n, np.int32)
        part = prompt[first:first + n]
        ids[:len(part)] = part
        feed = {"tokens": ids.reshape(pin["tokens"]["shape"]),
                "input_pos": np.arange(first, first + n, dtype=np.int32).reshape(
                    pin["input_pos"]["shape"])}
        if mask:
            feed[mask] = _causal(pin[mask]["shape"], first)
        feed.update(cache or {name: np.zeros(pin[name]["shape"], np.float32) for name in kv})
        out = runners[key](**feed)
        cache = {name: out[name] for name in kv}
    dec = runners[decode]
    din = dec.get_input_details()
    tokens, logits = [], []
    for i in range(1, steps + 1):
        token = prompt[-1] if i == 1 else tokens[-1]
        pos = len(prompt) - 1 if i == 1 else len(prompt) - 2 + i
        feed = {"tokens": np.array([[token]], np.int32),
                "input_pos": np.array([pos], np.int32).reshape(din["input_pos"]["shape"]),
                **cache}
        if mask:
            feed[mask] = _causal(din[mask]["shape"], pos)
        out = dec(**feed)
        cache = {name: out[name] for name in kv}
        row = out["logits"].reshape(-1)
        tokens.append(int(np.argmax(row)))
        logits.append(row)
    return tokens, np.array(logits)


def _ours(data, prompt=PROMPT, steps=STEPS, **options):
    model = load_model(data)
    interp = Interpreter(model, **options)
    rows = []

    def run(signature, inputs):
        out = interp.invoke(dict(inputs), signature=signature)
        if "logits" in out and signature == "decode":
            rows.append(out["logits"].reshape(-1))
        return out
    result = generate(model, run, prompt, steps)
    return result, np.array(rows)


def _agree(ours: np.ndarray, theirs: np.ndarray) -> None:
    scale = float(np.abs(theirs).max())
    assert scale > 0.1
    diff = float(np.abs(ours - theirs).max())
    assert diff <= 1e-5 * scale
    top2 = np.sort(theirs, axis=1)[:, -2:]
    # no step is a near tie the difference could have decided
    assert (top2[:, 1] - top2[:, 0]).min() > 10 * diff


@pytest.mark.parametrize("flavour, seed, row", [("float32", 0, False),
                                                ("int4_blockwise", 2, False),
                                                ("float32", 0, True)])
def test_written_decoder_generates_what_litert_generates(flavour, seed, row):
    """``row``: input_pos of shape [1, N] (and [1, 1] in decode), not [N]."""
    data = kv_decoder_model(seed, flavour, row_positions=row)
    plan = find_plan(load_model(data), 3)
    fed = {(f.signature, f.input): f.shape for f in plan.feeds}
    assert fed[(f"prefill_{PREFILL}", "input_pos")] == ((1, PREFILL) if row else (PREFILL,))
    assert fed[("decode", "input_pos")] == ((1, 1) if row else (1,))
    result, logits = _ours(data)
    ref, ref_logits = litert_loop(data, PROMPT, STEPS, KV_NAMES, prefill=f"prefill_{PREFILL}")
    assert result.tokens == ref and len(ref) == STEPS
    assert len(set(ref)) >= 4  # a varied sequence, not one id repeated
    _agree(logits, ref_logits)
    assert [c.label for c in result.calls] == ["prefill"] + [f"decode #{i}" for i in range(1, 9)]
    assert [c.position for c in result.calls[1:]] == list(range(2, 10))
    assert [c.token for c in result.calls[1:]] == [PROMPT[-1]] + ref[:-1]


def test_the_carried_cache_is_what_makes_the_ids():
    """Decoding each step on a zero cache (the KV outputs not carried) gives other ids:
    the comparison above can see a loop that drops the cache."""
    data = kv_decoder_model(0)
    model = load_model(data)
    interp = Interpreter(model)
    carried = generate(model, interpreter_runner(interp), PROMPT, STEPS).tokens

    def forgetful(signature, inputs):
        inputs = dict(inputs)
        if signature == "decode":
            inputs.update({n: np.zeros_like(inputs[n]) for n in KV_NAMES})
        return interp.invoke(inputs, signature=signature)
    assert generate(model, forgetful, PROMPT, STEPS).tokens != carried


@pytest.mark.parametrize("form", FORMS)
def test_litert_torch_export_generates_what_litert_generates(form):
    data = (LLM / f"tiny_llama_{form}.tflite").read_bytes()
    result, logits = _ours(data)
    kv = [f"kv_cache_{a}_{layer}" for a in "kv" for layer in range(2)]
    ref, ref_logits = litert_loop(data, PROMPT, STEPS, kv)
    assert result.tokens == ref
    assert len(set(ref)) >= 4
    _agree(logits, ref_logits)
    assert result.plan.prefill == "prefill_8" and result.plan.context == 32
    assert set(result.plan.kv) == set(kv)


def test_the_pieces_are_found_by_litert_torch_names():
    model = load_model(LLM / "tiny_llama_f32.tflite")
    plan = find_plan(model, 3)
    assert (plan.prefill, plan.decode, plan.tokens, plan.position, plan.logits) == \
        ("prefill_8", "decode", "tokens", "input_pos", "logits")
    assert plan.kv == ("kv_cache_k_0", "kv_cache_k_1", "kv_cache_v_0", "kv_cache_v_1")
    assert plan.prefill_length == 8
    # set by hand: a glob for the KV names, every other piece as found
    assert find_plan(model, 3, kv="kv_cache_*").kv == plan.kv
    assert find_plan(model, **parse_settings(["decode=decode", "context=16"])).context == 16


@pytest.mark.parametrize("settings, message", [
    ({"decode": "prefill_8"}, "no 'logits' output"),
    ({"kv": "kv_cache_k_*"}, "also takes 'kv_cache_v_0'"),
    ({"kv": "nothing*"}, "names no input"),
    ({"prefill": "missing"}, "no signature 'missing'"),
    ({"tokens": "kv_cache_k_0"}, "is FLOAT32, not integer ids"),
    ({"logits": "kv_cache_k_0"}, "no output 'kv_cache_k_0' other than the KV cache"),
    ({"kv": "kv_cache_*", "prefill": "missing"}, "no signature 'missing'"),
])
def test_a_plan_the_loop_cannot_run_is_refused(settings, message):
    model = load_model(LLM / "tiny_llama_f32.tflite")
    with pytest.raises(GenerationError, match=message):
        find_plan(model, 3, **settings)


def test_prompt_and_length_limits():
    model = load_model(LLM / "tiny_llama_f32.tflite")
    plan = find_plan(model)
    # a prompt longer than prefill_8 goes in chunks of it; 32 ids fill the cache, and the
    # first decode step rewrites position 31; a second would write past it
    assert Generation(model, plan, list(range(9)), 1).next_call().label == "prefill 1/2"
    Generation(model, plan, list(range(32)), 1)
    with pytest.raises(GenerationError, match="2 decode steps after 32 prompt ids reach "
                                              "position 32"):
        Generation(model, plan, list(range(32)), 2)
    with pytest.raises(GenerationError, match=r"prefilled by 'prefill_8' at positions "
                                              r"32\.\.39: the KV cache holds 32"):
        Generation(model, plan, list(range(33)), 1)
    # 3 prompt ids + 30 steps reach position 31, the cache's last; one more is refused
    Generation(model, plan, [1, 2, 3], 30)
    with pytest.raises(GenerationError, match="reach position 32: the KV cache holds 32"):
        Generation(model, plan, [1, 2, 3], 31)
    with pytest.raises(GenerationError, match="at least one token"):
        Generation(model, plan, [1], 0)
    assert parse_prompt("1, 2 3") == [1, 2, 3]
    for bad in ("", "1,x", "-1"):
        with pytest.raises(GenerationError):
            parse_prompt(bad)
    with pytest.raises(GenerationError, match="FIELD=VALUE"):
        parse_settings(["colour=red"])


def test_a_model_without_signatures_names_what_is_missing():
    model = load_model(MODELS_DIR / "mobilenet_v2_float.tflite")
    with pytest.raises(GenerationError, match=r"no signature named 'decode' \(signatures: "
                                              r"serving_default\)"):
        find_plan(model)
