"""The committed TinyLlama export (tests/data/models/llm/tiny_llama_f32.tflite) quantized by
litert-quantizer 0.11 (the test extra) with one of its recipes, once per test session
(each takes well under a second; the bytes are kept in memory, nothing is written)."""
from __future__ import annotations

import functools
import warnings

import numpy as np

from tests.conftest import MODELS_DIR

FLOAT_MODEL = MODELS_DIR / "llm" / "tiny_llama_f32.tflite"
#: the Hadamard-rotation recipes: a zero scale on the all-zero row 0 of each embedding table
HADAMARD = ("dynamic_wi8c_hr_afp32", "dynamic_wi4c_hr_afp32", "dynamic_wi2c_hr_afp32")
#: INT2 blockwise weights, which LiteRT 2.3.0 computes without meaning
INT2_BLOCKWISE = ("dynamic_wi2b32_afp32", "dynamic_wi2b64_afp32")


@functools.cache
def quantized(recipe: str) -> bytes:
    """tiny_llama_f32 quantized with litert-quantizer's recipe ``recipe``."""
    from litert_quantizer import quantizer
    from litert_quantizer import recipe as recipes

    q = quantizer.Quantizer(str(FLOAT_MODEL))
    q.load_quantization_recipe(getattr(recipes, recipe)())
    # (the Hadamard recipes divide the all-zero row by its zero scale: numpy warns)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return bytes(q.quantize().quantized_model)
