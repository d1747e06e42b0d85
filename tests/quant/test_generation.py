"""Quantization across a generation (quant/generation.py) against LiteRT.

Each model's tokens are LiteRT's greedy tokens for that model (`generation_litert`, its
builtin kernels running the loop in a child process); the logits' SQNR and KL are numpy,
written here, on LiteRT's logits; with teacher forcing, the quantized model's logits are
LiteRT's when its loop (written out here on LiteRT's signature runners) is fed the float
model's tokens; each op's SQNR at a step is numpy on the tensors LiteRT computes in that
step.

The pairs: the converter's int4 block-32 TinyLlama (its tokens part from the float
model's at step 5 of prompt 5,17,42), its int8 (never in 10 steps), Qwen3 in the
transposed KV layout (int4 parts at step 0, int8 at step 1 of a 12-id prompt), and
litert_quantizer's harsh ``dynamic_wi2c_afp32`` made here.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.interpreter.test_generation import _causal
from tests.litert_oracle import litert
from tflite_viewer.interpreter.generation import GenerationError, find_plan
from tflite_viewer.interpreter.generation_litert import litert_generate
from tflite_viewer.model import load_model
from tflite_viewer.quant.analysis import Cancelled
from tflite_viewer.quant.generation import analyze_generation, softmax_kl
from tflite_viewer.quant.pairing import pair_models
from tflite_viewer.quant.ranges import dequantize

from . import llm_pairs as lp

TINY_Q4 = lp.LLM / "tiny_llama_q4_block32.tflite"
TINY_Q8 = lp.LLM / "tiny_llama_q8.tflite"
QWEN_F32 = lp.LLM / "qwen3_transposed_f32.tflite"
PROMPT, STEPS = [5, 17, 42], 8
TWELVE = list(range(1, 13))


def np_sqnr(ref: np.ndarray, approx: np.ndarray) -> float:
    ref = np.asarray(ref, np.float64).ravel()
    err = ref - np.asarray(approx, np.float64).ravel()
    if not err.any():
        return np.inf
    return 10 * np.log10(np.sum(ref ** 2) / np.sum(err ** 2))


def np_kl(f_logits: np.ndarray, q_logits: np.ndarray) -> float:
    """KL(softmax(f) || softmax(q)), written out."""
    def softmax(x):
        e = np.exp(np.asarray(x, np.float64) - np.max(x))
        return e / e.sum()
    p, q = softmax(f_logits), softmax(q_logits)
    return float(np.sum(p * np.log(p / q)))


def litert_loop(path, plan, prompt, steps, forced=None, keep_step=None):
    """LiteRT's signature runners on the loop (each call's KV outputs fed back by name),
    decode step i fed ``forced[i - 2]`` when given (else the last argmax): (tokens,
    logits per step, {tensor index: value} of the decode subgraph at step ``keep_step``)."""
    li = litert(path)
    model = load_model(path)
    decode_sg = model.signature(plan.decode).subgraph_index
    runners, cache, tokens, logits, kept = {}, None, [], [], {}

    def call(key, ids, first):
        nonlocal cache
        r = runners.setdefault(key, li.get_signature_runner(key))
        d = r.get_input_details()
        feed = {plan.tokens: np.asarray(ids).astype(d[plan.tokens]["dtype"]).reshape(
                    d[plan.tokens]["shape"]),
                plan.position: np.arange(first, first + len(ids)).astype(
                    d[plan.position]["dtype"]).reshape(d[plan.position]["shape"])}
        if plan.mask:
            feed[plan.mask] = _causal(d[plan.mask]["shape"], first)
        for name in plan.kv:
            feed[name] = cache[name] if cache is not None else \
                np.zeros(d[name]["shape"], d[name]["dtype"])
        out = r(**feed)
        cache = {name: out[name] for name in plan.kv}
        return out

    for key, n, start, count in plan.chunks(len(prompt)):
        call(key, list(prompt[start:start + count]) + [0] * (n - count), start)
    for i in range(1, steps + 1):
        fed = prompt[-1] if i == 1 else (forced[i - 2] if forced else tokens[-1])
        out = call(plan.decode, [fed], len(prompt) - 2 + i)
        if i - 1 == keep_step:
            kept = _tensors(li, decode_sg)
        row = np.asarray(out[plan.logits]).reshape(-1)
        tokens.append(int(np.argmax(row)))
        logits.append(row)
    return tokens, np.array(logits), kept


def _tensors(li, subgraph: int) -> dict[int, np.ndarray]:
    """Every tensor of ``subgraph`` LiteRT holds values for (some have none allocated)."""
    out = {}
    for t in li.get_tensor_details(subgraph):
        try:
            out[t["index"]] = np.array(li.get_tensor(t["index"], subgraph))
        except ValueError:
            continue
    return out


def _check_logit_metrics(ga, f_logits, q_logits):
    for s in ga.steps:
        assert s.logits_sqnr_db == pytest.approx(np_sqnr(f_logits[s.step], q_logits[s.step]),
                                                 abs=0.01)
        assert s.kl == pytest.approx(np_kl(f_logits[s.step], q_logits[s.step]),
                                     rel=1e-3, abs=1e-7)


@pytest.mark.parametrize("qpath, fpath, prompt, divergence", [
    (TINY_Q4, lp.TINY_FLOAT, PROMPT, 5),
    (TINY_Q8, lp.TINY_FLOAT, PROMPT, None),
    (lp.LLM / "qwen3_transposed_q8.tflite", QWEN_F32, TWELVE, 1),
    (lp.LLM / "qwen3_transposed_q4_block32.tflite", QWEN_F32, PROMPT, 0),
])
def test_each_model_generates_litert_s_tokens(qpath, fpath, prompt, divergence):
    """Without teacher forcing each model generates what LiteRT's greedy loop generates
    for it; the logits' SQNR and KL are numpy's on LiteRT's logits; the first divergence
    is the first step where LiteRT's two token lists differ."""
    ga = analyze_generation(qpath, fpath, prompt, STEPS)
    plan = find_plan(load_model(fpath), len(prompt))
    f_ref = litert_generate(load_model(fpath), plan, prompt, STEPS)
    q_ref = litert_generate(load_model(qpath), plan, prompt, STEPS)
    assert ga.float_tokens == f_ref.tokens
    assert ga.quantized_tokens == q_ref.tokens
    first = next((i for i, (a, b) in enumerate(zip(f_ref.tokens, q_ref.tokens)) if a != b),
                 None)
    assert ga.first_divergence == first == divergence
    _check_logit_metrics(ga, f_ref.logits, q_ref.logits)
    assert [s.top1_agrees for s in ga.steps] == [a == b for a, b in zip(f_ref.tokens,
                                                                         q_ref.tokens)]
    # each model fed its own previous token
    assert [s.fed for s in ga.steps] == [prompt[-1], *f_ref.tokens[:-1]]
    assert [s.quantized_fed for s in ga.steps] == [prompt[-1], *q_ref.tokens[:-1]]


def test_teacher_forcing_feeds_the_float_tokens():
    """The int4 TinyLlama parts at step 5: with teacher forcing its step i is fed the
    float model's token i-1, so its tokens and logits are LiteRT's on the float model's
    sequence (not LiteRT's greedy ones after step 5), and it agrees again later."""
    ga = analyze_generation(TINY_Q4, lp.TINY_FLOAT, PROMPT, STEPS, teacher_forcing=True)
    plan = find_plan(load_model(lp.TINY_FLOAT), len(PROMPT))
    f_tokens, f_logits, _ = litert_loop(lp.TINY_FLOAT, plan, PROMPT, STEPS)
    q_tokens, q_logits, _ = litert_loop(TINY_Q4, plan, PROMPT, STEPS, forced=f_tokens)
    greedy, _, _ = litert_loop(TINY_Q4, plan, PROMPT, STEPS)
    assert ga.float_tokens == f_tokens
    assert ga.quantized_tokens == q_tokens
    assert q_tokens != greedy and q_tokens[:6] == greedy[:6]  # they part after step 5
    assert ga.first_divergence == 5
    assert any(s.top1_agrees for s in ga.steps[6:])  # comparable again after it
    assert [s.quantized_fed for s in ga.steps] == [s.fed for s in ga.steps] == \
        [PROMPT[-1], *f_tokens[:-1]]
    _check_logit_metrics(ga, f_logits, q_logits)


@pytest.fixture(scope="module")
def harsh(tmp_path_factory):
    """TinyLlama quantized with litert_quantizer's 2-bit per-channel recipe."""
    path = tmp_path_factory.mktemp("harsh") / "tiny_llama_wi2c.tflite"
    path.write_bytes(lp.quantize("dynamic_wi2c_afp32"))
    return path


def test_harsh_recipe_parts_at_once_and_is_forced(harsh):
    """2-bit weights part from step 0; teacher forcing still feeds the float tokens and
    the logits' SQNR and KL stay numpy's on LiteRT's logits."""
    plan = find_plan(load_model(lp.TINY_FLOAT), len(PROMPT))
    f_tokens, f_logits, _ = litert_loop(lp.TINY_FLOAT, plan, PROMPT, STEPS)
    q_tokens, q_logits, _ = litert_loop(harsh, plan, PROMPT, STEPS, forced=f_tokens)
    ga = analyze_generation(harsh, lp.TINY_FLOAT, PROMPT, STEPS, teacher_forcing=True)
    assert ga.float_tokens == f_tokens and ga.quantized_tokens == q_tokens
    first = next(i for i, (a, b) in enumerate(zip(f_tokens, q_tokens)) if a != b)
    assert ga.first_divergence == first
    assert first <= 2
    _check_logit_metrics(ga, f_logits, q_logits)
    free = analyze_generation(harsh, lp.TINY_FLOAT, PROMPT, STEPS)
    assert free.quantized_tokens == litert_generate(load_model(harsh), plan, PROMPT,
                                                    STEPS).tokens


def test_op_sqnr_at_a_step_is_numpy_on_litert_s_tensors():
    """Step 3 of the int4 TinyLlama: each op of the decode subgraph has, in the steps x
    ops matrix and the step's worst-first list, the SQNR numpy gives on the tensors
    LiteRT computes in that step for both models (its worst real output paired with a
    float tensor)."""
    step = 3
    ga = analyze_generation(TINY_Q4, lp.TINY_FLOAT, PROMPT, STEPS)
    qm, fm = load_model(TINY_Q4), load_model(lp.TINY_FLOAT)
    plan = find_plan(fm, len(PROMPT))
    _, _, f_vals = litert_loop(lp.TINY_FLOAT, plan, PROMPT, STEPS, keep_step=step)
    _, _, q_vals = litert_loop(TINY_Q4, plan, PROMPT, STEPS, keep_step=step)
    pairing = pair_models(qm, fm)
    sg = qm.signature(plan.decode).subgraph_index
    checked = 0
    for op in qm.subgraphs[sg].operators:
        want = []
        for o in op.outputs:
            partner = pairing.tensors.get((sg, o))
            t = qm.subgraphs[sg].tensors[o]
            if partner is None or t.type_name not in ("FLOAT32", "INT8", "INT16"):
                continue
            q = q_vals[o]
            if q.dtype.kind == "i":
                q = dequantize(q, t.quantization)
            want.append(np_sqnr(f_vals[partner[0][1]], q))
        if not want or (sg, op.index) not in ga.ops:
            continue
        got = ga.sqnr[step, ga.ops.index((sg, op.index))]
        if np.isinf(min(want)):
            assert got == min(want)
        else:
            assert got == pytest.approx(min(want), abs=0.05), (op.index, op.opcode.name)
        checked += 1
    assert checked > 50
    worst = ga.steps[step].worst_ops
    assert [o.sqnr_db for o in worst] == sorted(o.sqnr_db for o in worst)
    for o in worst:
        assert ga.sqnr[step, ga.ops.index((o.subgraph, o.op))] == o.sqnr_db


def test_the_window_s_matrix_and_the_json():
    """The matrix has a row per step and a column per op (every op of the decode subgraph
    and of the composites it calls that has a paired real output); NaN only where an op
    was not measured; the document is strict JSON of the shape the issue gives."""
    import json
    ga = analyze_generation(TINY_Q4, lp.TINY_FLOAT, PROMPT, 3)
    assert ga.sqnr.shape == (3, len(ga.ops)) == (3, len(ga.opcodes))
    assert len({s for s, _ in ga.ops}) > 1  # composites' decompositions too
    assert not np.isnan(ga.sqnr).any()
    assert [len(s.worst_ops) for s in ga.steps] == [len(ga.ops)] * 3
    np.testing.assert_array_equal(ga.logits_sqnr, [s.logits_sqnr_db for s in ga.steps])
    doc = json.loads(json.dumps(ga.to_dict(), allow_nan=False))
    assert doc["float_tokens"] == ga.float_tokens
    assert doc["quantized_tokens"] == ga.quantized_tokens
    assert doc["first_divergence"] is None
    step = doc["steps"][1]
    assert {"step", "float_token", "quantized_token", "logits_sqnr_db", "kl",
            "worst_ops"} <= set(step)
    assert step["step"] == 1 and step["worst_ops"][0]["sqnr_db"] == \
        ga.steps[1].worst_ops[0].sqnr_db
    assert [p["call"] for p in doc["prefill"]] == ["prefill"]


def test_chunked_prompt_with_mask_and_bos(tmp_path):
    """Gemma3 (the mask an input, transposed KV) against itself quantized here: a 20-id
    prompt and a BOS (21 ids: prefill_16, then prefill_8 on the last 5) each model's tokens
    are LiteRT's, the logits' metrics numpy's on LiteRT's logits."""
    gemma = lp.LLM / "gemma3_f32.tflite"
    q = tmp_path / "gemma3_wi4b32.tflite"
    q.write_bytes(lp.quantize("dynamic_wi4b32_afp32", gemma))
    prompt = list(range(3, 23))
    ga = analyze_generation(q, gemma, prompt, STEPS, bos=1)
    assert ga.prompt == [1, *prompt]
    plan = find_plan(load_model(gemma), 21)
    assert plan.mask and [c[0] for c in plan.chunks(21)] == ["prefill_16", "prefill_8"]
    assert [p.signature for p in ga.prefill] == ["prefill_16", "prefill_8"]
    f_ref = litert_generate(load_model(gemma), plan, ga.prompt, STEPS)
    q_ref = litert_generate(load_model(q), plan, ga.prompt, STEPS)
    assert (ga.float_tokens, ga.quantized_tokens) == (f_ref.tokens, q_ref.tokens)
    _check_logit_metrics(ga, f_ref.logits, q_ref.logits)


def test_progress_and_cancel():
    seen = []
    analyze_generation(TINY_Q8, lp.TINY_FLOAT, PROMPT, 2,
                       progress=lambda d, t, m: seen.append((d, t, m)))
    assert [(d, t) for d, t, _ in seen] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert seen[1][2] == "decode #1: token 42 at position 2"
    with pytest.raises(Cancelled):
        analyze_generation(TINY_Q8, lp.TINY_FLOAT, PROMPT, 8,
                           cancel=lambda: len(seen) > 5,
                           progress=lambda d, t, m: seen.append(d))
    assert len(seen) == 6
    calls = []   # cancelled inside a call: polled before the loop's first call, then
    # before every op; the 13th poll (before the prefill's 12th op) stops the run there

    def cancel():
        calls.append(1)
        return len(calls) > 2 + 10
    with pytest.raises(Cancelled):
        analyze_generation(TINY_Q8, lp.TINY_FLOAT, PROMPT, 8, cancel=cancel)
    assert len(calls) == 13


def test_op_progress_counts_each_model_s_ops_per_call():
    """Within a call: the quantized model's ops of the called signature in order, then
    the float model's, out of both counts (read here from the files' subgraphs)."""
    qm, fm = load_model(TINY_Q8), load_model(lp.TINY_FLOAT)
    ticks: list[tuple[int, int, str]] = []
    calls: list[int] = []
    analyze_generation(TINY_Q8, lp.TINY_FLOAT, PROMPT, 2,
                       progress=lambda d, t, m: calls.append(len(ticks)),
                       op_progress=lambda d, t, m: ticks.append((d, t, m)))
    plan = find_plan(fm, len(PROMPT))
    per_call = []
    for (start, end), sig in zip(zip(calls, calls[1:]), [plan.chunks(3)[0][0], plan.decode,
                                                         plan.decode]):
        nq = len(qm.subgraphs[qm.signature(sig).subgraph_index].operators)
        nf = len(fm.subgraphs[fm.signature(sig).subgraph_index].operators)
        call = ticks[start:end]
        assert [d for d, _, _ in call] == list(range(1, nq + nf + 1))
        assert {t for _, t, _ in call} == {nq + nf}
        assert [m.split(":")[0] for _, _, m in call] == \
            ["quantized model"] * nq + ["float model"] * nf
        per_call.append(len(call))
    assert len(per_call) == 3 and calls[-1] == len(ticks)
    sg = qm.subgraphs[qm.signature(plan.decode).subgraph_index]
    assert ticks[-per_call[-1]][2] == f"quantized model: op 0 {sg.operators[0].opcode.name}"


def test_time_budget_per_call():
    from tflite_viewer.interpreter.errors import TimeBudgetError
    with pytest.raises(TimeBudgetError, match="time budget of 1e-06 s"):
        analyze_generation(TINY_Q8, lp.TINY_FLOAT, PROMPT, 2, timeout=1e-6)
    with pytest.raises(ValueError, match="timeout must be > 0"):
        analyze_generation(TINY_Q8, lp.TINY_FLOAT, PROMPT, 2, timeout=0)


@pytest.mark.parametrize("args, message", [
    (dict(prompt=PROMPT, steps=40), "KV cache holds 32 positions"),
    (dict(prompt="5,x", steps=2), "token ids separated by commas"),
    (dict(prompt=PROMPT, steps=0), "at least one token"),
    (dict(prompt=PROMPT, steps=2, bos=-1), "BOS id -1 is not a token id"),
    (dict(prompt=[5, 255, 256], steps=2), "token id 256 is outside the model's vocabulary"),
    (dict(prompt=PROMPT, steps=2, loop={"decode": "nope"}), "no signature .nope."),
])
def test_bad_loops_are_refused(args, message):
    with pytest.raises(GenerationError, match=message):
        analyze_generation(TINY_Q8, lp.TINY_FLOAT, **args)


def test_models_that_do_not_pair_are_refused():
    with pytest.raises(GenerationError, match="do not match|loops differ"):
        analyze_generation(TINY_Q8, QWEN_F32, PROMPT, 2)
    with pytest.raises(GenerationError, match="decode"):
        analyze_generation(lp.CONVERTER / "conv_net_int8.tflite",
                           lp.CONVERTER / "conv_net_float.tflite", PROMPT, 2)


def test_softmax_kl_by_hand():
    f, q = np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0])
    p = np.exp(f) / np.exp(f).sum()
    r = np.exp(q) / np.exp(q).sum()
    assert softmax_kl(f, q) == pytest.approx(float(np.sum(p * np.log(p / r))), rel=1e-12)
    assert softmax_kl(f, f) == 0.0
    assert softmax_kl(f, f + 7.0) == 0.0  # a shift changes no probability
