"""How the generation analysis adds float32 products (`GENERATION_FLOAT_SUMS`), against
LiteRT's builtin kernels (`generation_litert`: BUILTIN_WITHOUT_DEFAULT_DELEGATES running
the greedy loop in a child process).

By default the quantized model adds in its kernel set's exact order, so its tokens and
logits are LiteRT's to the bit; the float model adds with BLAS, its tokens LiteRT's and its
logits within float32 roundings of them.  ``reference`` makes both bit-exact.  With
``blas`` the quantized Qwen3s' logits are no longer LiteRT's bits (a dynamically quantized
FULLY_CONNECTED turns a rounding upstream into another int8 value): the anchor tells the
two orders apart on these fixtures.
"""
from __future__ import annotations

import numpy as np
import pytest

from tflite_viewer.interpreter.generation import find_plan
from tflite_viewer.interpreter.generation_litert import litert_generate
from tflite_viewer.model import load_model
from tflite_viewer.quant.generation import analyze_generation

from . import llm_pairs as lp

QWEN_F32 = lp.LLM / "qwen3_transposed_f32.tflite"
STEPS = 8


def _litert(path, prompt):
    """LiteRT builtin's greedy tokens and float32 logits [steps, vocab] for one model."""
    model = load_model(path)
    ref = litert_generate(model, find_plan(model, len(prompt)), prompt, STEPS)
    return ref.tokens, np.asarray(ref.logits, np.float32)


@pytest.mark.parametrize("qpath, prompt", [
    (lp.LLM / "qwen3_transposed_q8.tflite", [5, 17, 42]),
    (lp.LLM / "qwen3_transposed_q4_block32.tflite", list(range(1, 13))),
])
def test_quantized_tokens_and_logits_are_litert_s_bits(qpath, prompt):
    q_tokens, q_logits = _litert(qpath, prompt)
    f_tokens, f_logits = _litert(QWEN_F32, prompt)
    ga = analyze_generation(qpath, QWEN_F32, prompt, STEPS)
    assert ga.quantized_tokens == q_tokens
    assert ga.quantized_logits.shape == q_logits.shape
    assert np.array_equal(ga.quantized_logits, q_logits)
    # the float model with BLAS: LiteRT's tokens, its logits a few roundings away
    assert ga.float_tokens == f_tokens
    np.testing.assert_allclose(ga.float_logits, f_logits, rtol=0, atol=1e-5)
    blas = analyze_generation(qpath, QWEN_F32, prompt, STEPS, float_sums="blas")
    assert not np.array_equal(blas.quantized_logits, q_logits)
    np.testing.assert_allclose(blas.quantized_logits, q_logits, rtol=0, atol=1e-3)


def test_reference_makes_both_models_litert_s_bits():
    prompt = [5, 17, 42]
    qpath = lp.LLM / "qwen3_transposed_q8.tflite"
    q_tokens, q_logits = _litert(qpath, prompt)
    f_tokens, f_logits = _litert(QWEN_F32, prompt)
    ga = analyze_generation(qpath, QWEN_F32, prompt, STEPS, float_sums="reference")
    assert (ga.quantized_tokens, ga.float_tokens) == (q_tokens, f_tokens)
    assert np.array_equal(ga.quantized_logits, q_logits)
    assert np.array_equal(ga.float_logits, f_logits)


def test_unknown_float_sums_are_refused():
    with pytest.raises(ValueError, match="float sums must be one of auto, reference, blas"):
        analyze_generation(lp.LLM / "qwen3_transposed_q8.tflite", QWEN_F32, [1], 1,
                           float_sums="fast")
