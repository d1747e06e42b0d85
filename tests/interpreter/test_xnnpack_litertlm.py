"""LiteRT-LM, the runtime that ships decoders, generates the ids of the ``xnnpack`` kernel
set on the dynamic-int8 Qwen3-shaped export, where LiteRT's builtin kernels part from it:
LiteRT-LM computes on the CPU through XNNPACK, and so does this set.

The .litertlm is built and run as in test_generation_litertlm.py (LiteRT-LM's own
builder, a word-level tokenizer whose word ``tN`` is id N, greedy sampling, its start
token first); ours is ``run --generate`` with ``--bos``. 24 decode steps fill most of the
32 positions.  (The prompts avoid ids 11, 12 and 100: LiteRT-LM answers the prompts
``t11``, ``t12`` and ``t100`` with the same ids, so it does not read those words as those
ids, and no loop fed the ids could agree with it there.)

It needs litert-lm-api and litert-lm-builder (not project dependencies): like
test_generation_litertlm.py, whose builder, runner and slow/skip marks it takes, it runs
with --run-slow where both are importable (/work/venvs/llm/bin/python here).
"""
from __future__ import annotations

from tests.conftest import MODELS_DIR
from tflite_viewer.interpreter import Interpreter
from tflite_viewer.interpreter.generation import find_plan, generate, interpreter_runner
from tflite_viewer.model import load_model

from .test_generation_litertlm import BOS, _litert_lm_ids, _litertlm
from .test_generation_litertlm import pytestmark  # noqa: F401  (slow; skipped without them)

NAME = "qwen3_transposed_q8"
STEPS = 24
PROMPTS = [[5, 17, 42], [7], [3, 9, 60, 22, 41], [64, 2, 33]]


def test_litert_lm_generates_the_xnnpack_sets_ids(tmp_path):
    model = load_model(MODELS_DIR / "llm" / f"{NAME}.tflite")
    path = _litertlm(tmp_path, NAME)

    def ours(ids, kernels):
        interp = Interpreter(model, kernels=kernels, float_sums="reference")
        return generate(model, interpreter_runner(interp), ids, STEPS,
                        find_plan(model, len(ids))).tokens
    parted = []
    for prompt in PROMPTS:
        theirs = _litert_lm_ids(path, prompt, STEPS)
        assert ours([BOS, *prompt], "xnnpack") == theirs, prompt
        builtin = ours([BOS, *prompt], "builtin")
        parted.append(next((i + 1 for i, (a, b) in enumerate(zip(builtin, theirs)) if a != b),
                           None))
    # the builtin kernels' ids part from LiteRT-LM's on every prompt (at steps 18, 4, 4
    # and 16 when this was written)
    assert all(step is not None for step in parted), parted
