"""Generation under the ``xnnpack`` kernel set: the ids and every decode step's logits of
LiteRT's default interpreter (BUILTIN: its XNNPACK delegate applied, as LiteRT-LM computes
on a CPU), bit for bit, on the decoder exports.

The oracle is `litert_generate` with resolver BUILTIN: LiteRT's signature runners running
the loop in a child process, its own transcription (it imports nothing of tflite_viewer).
Ours is `generate` on ``Interpreter(model, kernels="xnnpack", float_sums="reference")``.

The forms: every committed decoder (tests/data/models/llm: TinyLlama float32, dynamic
int8, weight-only int8, int4 blockwise; Qwen3 in both KV layouts, float32 and dynamic int8;
Gemma3 and Phi-2 float32), and the float exports of TinyLlama and the transposed Qwen3
quantized here with every litert-quantizer recipe the builtin sweep uses
(test_llm_logits_litert.RECIPES; Qwen3's 96-wide layer refuses the 64-blocks).  Where
LiteRT's default path fails on a model (a block scale of 0 the delegate cannot define:
qwen3_transposed_q4_block32, and the transposed Qwen3 under dynamic_wi4b32), the xnnpack
set refuses it the same way.  A sample runs in CI, the sweep in the slow tier.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import MODELS_DIR
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.errors import ExecutionError
from tflite_viewer.interpreter.generation import find_plan, generate
from tflite_viewer.interpreter.generation_litert import LiteRTError, litert_generate
from tflite_viewer.model import load_model

from .test_llm_logits_litert import RECIPES, quantized

LLM = MODELS_DIR / "llm"
STEPS = 8
FIXTURES = ["qwen3_transposed_q8", "tiny_llama_q4_block32", "qwen3_transposed_f32",
            "qwen3_f32", "gemma3_f32", "phi2_f32", "tiny_llama_f32", "tiny_llama_q8",
            "tiny_llama_q8_wo"]
SAMPLE = FIXTURES[:2]  # dynamic int8 (the case) and int4 blockwise
PROMPTS = [[1, 5, 17, 42], [1, 7]]


def our_loop(model, prompt, kernels: str = "xnnpack") -> tuple[list[int], np.ndarray]:
    plan = find_plan(model, len(prompt))
    interp = Interpreter(model, kernels=kernels, float_sums="reference")
    rows = []

    def run(signature, inputs):
        out = interp.invoke(dict(inputs), signature=signature)
        if signature == plan.decode:
            rows.append(np.array(out[plan.logits], np.float32).reshape(-1))
        return out
    return generate(model, run, prompt, STEPS, plan).tokens, np.array(rows)


def assert_default_path_logits(model, what: str, prompt=PROMPTS[0]) -> None:
    ref = litert_generate(model, find_plan(model, len(prompt)), prompt, STEPS,
                          resolver="BUILTIN")
    ids, ours = our_loop(model, prompt)
    theirs = np.asarray(ref.logits, np.float32).reshape(ours.shape)
    differ = [int(np.sum(ours[s].view(np.int32) != theirs[s].view(np.int32)))
              for s in range(STEPS)]
    assert differ == [0] * STEPS, (
        f"{what}: logits differ at decode steps {[s + 1 for s, d in enumerate(differ) if d]}"
        f" (max |diff| {float(np.abs(ours.astype(np.float64) - theirs).max()):g})")
    assert ids == ref.tokens


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=() if n in SAMPLE else pytest.mark.slow) for n in FIXTURES])
def test_committed_decoders_have_the_default_paths_logits(name):
    model = load_model(LLM / f"{name}.tflite")
    for prompt in PROMPTS:
        assert_default_path_logits(model, f"{name} {prompt}", prompt)


def test_litert_gives_two_answers_and_each_set_gives_its_own():
    """The dynamic-int8 Qwen3: LiteRT's builtin kernels and its default XNNPACK path part
    at decode step 4 (the top two logits 6e-4 apart there); the builtin set gives the
    first's ids and logits, the xnnpack set the second's."""
    model = load_model(LLM / "qwen3_transposed_q8.tflite")
    prompt = [1, 7]
    plan = find_plan(model, len(prompt))
    default = litert_generate(model, plan, prompt, STEPS, resolver="BUILTIN")
    builtin = litert_generate(model, plan, prompt, STEPS)
    assert default.tokens[:3] == builtin.tokens[:3] and default.tokens[3] != builtin.tokens[3]
    for kernels, ref in (("xnnpack", default), ("builtin", builtin)):
        ids, logits = our_loop(model, prompt, kernels)
        assert ids == ref.tokens, kernels
        assert np.array_equal(logits.view(np.int32),
                              np.asarray(ref.logits, np.float32).reshape(logits.shape)
                              .view(np.int32)), kernels


def test_a_model_litert_s_default_path_fails_on_is_refused_the_same_way():
    """qwen3_transposed_q4_block32 holds an all-zero weight block, whose scale is 0: the
    delegate cannot define it, its partition fails to prepare and LiteRT's default
    interpreter fails; the xnnpack set refuses it naming the tensor (the builtin set runs
    it, as LiteRT without the delegate does)."""
    model = load_model(LLM / "qwen3_transposed_q4_block32.tflite")
    plan = find_plan(model, 4)
    with pytest.raises(LiteRTError, match="unsupported scale value"):
        litert_generate(model, plan, PROMPTS[0], 2, resolver="BUILTIN")
    with pytest.raises(ExecutionError, match="XNNPACK cannot define weight tensor 49 .*block "
                                             "scale at index 0 is 0"):
        our_loop(model, PROMPTS[0])
    assert len(our_loop(model, PROMPTS[0], "builtin")[0]) == STEPS


#: the transposed Qwen3's quantized forms its widths allow (96 is not a multiple of 64)
QWEN_RECIPES = [r for r in RECIPES if "b64" not in r]


@pytest.mark.slow
@pytest.mark.parametrize("recipe_name", RECIPES)
def test_tinyllama_under_every_recipe(recipe_name):
    assert_default_path_logits(load_model(quantized(recipe_name)), recipe_name)


@pytest.mark.slow
@pytest.mark.parametrize("recipe_name", QWEN_RECIPES)
def test_qwen3_transposed_under_every_recipe(recipe_name, monkeypatch):
    from . import test_llm_logits_litert as builtin_sweep
    monkeypatch.setattr(builtin_sweep, "FLOAT", LLM / "qwen3_transposed_f32.tflite")
    monkeypatch.setattr(builtin_sweep, "_QUANTIZED", {})
    model = load_model(quantized(recipe_name))
    if recipe_name == "dynamic_wi4b32_afp32":  # a zero block again: refused, as LiteRT's
        with pytest.raises(ExecutionError, match="XNNPACK cannot define"):
            our_loop(model, PROMPTS[0])
        return
    assert_default_path_logits(model, f"qwen3 {recipe_name}")
