"""LiteRT-LM, the runtime that ships these models, generates our ids on the float fixtures it
runs (tests/data/models/llm): qwen3_transposed_f32 (the transposed KV layout), gemma3_f32
(transposed, the mask as an input) and phi2_f32 (the default layout with the mask as an
input), its start token (BOS) included: the check that the loop `generation` defines is
the one LiteRT-LM runs.  (LiteRT-LM 0.18 refuses qwen3_f32, the default layout with the
mask inside the model: its prefill fails, as it cannot size that cache.)

The .litertlm is written here with LiteRT-LM's own builder (litert-lm-builder): the
decoder as the ``prefill_decode`` model, LlmMetadata naming the start token, and a
word-level Hugging Face tokenizer whose word ``tN`` is id N, so that a prompt of words is
exactly a prompt of ids and the generated text gives the ids back.  LiteRT-LM
(litert-lm-api, CPU backend, top-k 1 sampling: greedy) prefills the prompt, with the
start token put first, and decodes; we run our loop on ``[BOS, *prompt]``
(``run --generate K --prompt IDS --bos ID``).  LiteRT-LM computes with XNNPACK; these ids
have margins far above the float rounding between the two.

It needs litert-lm-api and litert-lm-builder, which the project does not depend on (their
own dependencies: protobuf, absl, jinja), so it is in the slow tier and runs only where
both are importable::

    /work/venvs/llm/bin/python -m pytest --run-slow tests/interpreter/test_generation_litertlm.py
"""
from __future__ import annotations

import importlib.util
import json

import pytest

from tests.conftest import MODELS_DIR
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.generation import find_plan, generate, interpreter_runner
from tflite_viewer.model import load_model

_MISSING = [m for m in ("litert_lm", "litert_lm_builder") if importlib.util.find_spec(m) is None]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(bool(_MISSING), reason=(
        f"{' and '.join(_MISSING)} not importable here: this check runs LiteRT-LM "
        "(litert-lm-api 0.18 and litert-lm-builder, not project dependencies); run it with "
        "a Python that has them, e.g. /work/venvs/llm/bin/python -m pytest --run-slow "
        "tests/interpreter/test_generation_litertlm.py")),
]

LLM = MODELS_DIR / "llm"
MODELS = ["qwen3_transposed_f32", "gemma3_f32", "phi2_f32"]
VOCAB = 256
BOS, STOP = 1, 0  # the stop id: one no greedy step below generates
STEPS = 8
PROMPTS = [[5, 17, 42], list(range(200, 220))]  # the second longer than prefill_16: chunks
TOKENIZER = {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
    "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
    "decoder": None,
    "model": {"type": "WordLevel", "unk_token": "t0",
              "vocab": {f"t{i}": i for i in range(VOCAB)}},
}


def _litertlm(tmp_path, name: str) -> str:
    from litert_lm_builder import litertlm_builder as b
    (tmp_path / "tokenizer.json").write_text(json.dumps(TOKENIZER))
    (tmp_path / "llm_metadata.pbtext").write_text(
        f"start_token {{ token_ids {{ ids: {BOS} }} }}\n"
        f"stop_tokens {{ token_ids {{ ids: {STOP} }} }}\n"
        "max_num_tokens: 32\n")
    builder = b.LitertLmFileBuilder()
    builder.add_llm_metadata(str(tmp_path / "llm_metadata.pbtext"))
    builder.add_hf_tokenizer(str(tmp_path / "tokenizer.json"))
    builder.add_tflite_model(str(LLM / f"{name}.tflite"), b.TfLiteModelType.PREFILL_DECODE)
    out = tmp_path / "decoder.litertlm"
    with open(out, "wb") as f:
        builder.build(f)
    return str(out)


def _litert_lm_ids(path: str, prompt: list[int], steps: int) -> list[int]:
    import litert_lm
    with litert_lm.Engine(path, max_num_tokens=32) as engine:
        assert engine.bos_token_id == BOS
        session = engine.create_session(apply_prompt_template=False,
                                        sampler_config=litert_lm.SamplerConfig(top_k=1),
                                        max_output_tokens=steps)
        with session:
            session.run_prefill([" ".join(f"t{i}" for i in prompt)])
            text = session.run_decode().texts[0]
    return [int(word[1:]) for word in text.split()]


@pytest.mark.parametrize("prompt", PROMPTS, ids=["3 ids", "20 ids"])
@pytest.mark.parametrize("name", MODELS)
def test_litert_lm_generates_our_ids_with_its_bos(name, prompt, tmp_path):
    model = load_model(LLM / f"{name}.tflite")

    def ours(ids):
        return generate(model, interpreter_runner(Interpreter(model)), ids, STEPS,
                        find_plan(model, len(ids))).tokens
    with_bos = ours([BOS, *prompt])
    assert STOP not in with_bos and len(set(with_bos)) >= 4
    theirs = _litert_lm_ids(_litertlm(tmp_path, name), prompt, STEPS)
    assert theirs == with_bos
    if len(prompt) == 3:  # here the BOS changes the ids: LiteRT-LM did put it first
        assert theirs != ours(prompt)
